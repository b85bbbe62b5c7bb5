"""Which shard key each run's rows carry, so that every statement about a run can name it.

A run's key never changes once its row exists (docs/storage.md, "Past one server"),
so what this process learnt stays true: keys come with the rows it creates, claims
and reads, and a statement that names only an id looks the key up in `run_shards`
(placed by id, so that lookup touches one shard too) and keeps it. Only a run
deleted and started again under another key could make a kept key wrong; a
statement that then finds no run asks the directory again (`fresh`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from replaykit.stores.values import WorkflowRow

__all__ = ["ShardKeys"]

# Keys kept; past this the least recently used go (a lookup brings one back). An
# entry costs about 200 bytes, so the cache stays under 20 MiB.
_CAPACITY = 100_000


class ShardKeys:
    """The keys of the runs this process has met, bounded, looked up when missing."""

    def __init__(self, lookup: str, lookup_many: str) -> None:
        self._lookup = lookup
        self._lookup_many = lookup_many
        self._keys: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def learn(self, workflow_id: str, shard_key: str) -> None:
        with self._lock:
            keys = self._keys
            keys[workflow_id] = shard_key
            keys.move_to_end(workflow_id)
            if len(keys) > _CAPACITY:
                keys.popitem(last=False)

    def learn_rows(self, rows: Iterable[WorkflowRow]) -> None:
        for row in rows:
            if row.shard_key is not None:
                self.learn(row.workflow_id, row.shard_key)

    def forget(self, workflow_ids: Iterable[str]) -> None:
        with self._lock:
            for workflow_id in workflow_ids:
                self._keys.pop(workflow_id, None)

    def known(self, workflow_id: str) -> str | None:
        with self._lock:
            return self._keys.get(workflow_id)

    def stored(
        self, conn: psycopg.Connection[Any], workflow_id: str, *, fresh: bool = False
    ) -> str | None:
        """The run's key, None for a run the directory does not hold."""
        if not fresh:
            key = self.known(workflow_id)
            if key is not None:
                return key
        found = conn.execute(self._lookup, (workflow_id,)).fetchone()
        if found is None:
            return None
        self.learn(workflow_id, found[0])
        return str(found[0])

    def of(self, conn: psycopg.Connection[Any], workflow_id: str, *, fresh: bool = False) -> str:
        """The run's key; for a run the directory does not hold, its id (the key it would
        have as a root), so that a statement under it finds no run and says so."""
        key = self.stored(conn, workflow_id, fresh=fresh)
        return workflow_id if key is None else key

    def stored_many(
        self, conn: psycopg.Connection[Any], workflow_ids: Sequence[str]
    ) -> dict[str, str]:
        """The keys of those runs the directory holds, one lookup for those not kept."""
        keys: dict[str, str] = {}
        missing: list[str] = []
        with self._lock:
            for workflow_id in workflow_ids:
                key = self._keys.get(workflow_id)
                if key is None:
                    missing.append(workflow_id)
                else:
                    keys[workflow_id] = key
        if missing:
            for workflow_id, key in conn.execute(self._lookup_many, (missing,)).fetchall():
                keys[workflow_id] = key
                self.learn(workflow_id, key)
        return keys

    def of_many(self, conn: psycopg.Connection[Any], workflow_ids: Sequence[str]) -> dict[str, str]:
        """Each run's key, as `of` gives it, with one lookup for those not kept."""
        keys = self.stored_many(conn, workflow_ids)
        for workflow_id in workflow_ids:
            keys.setdefault(workflow_id, workflow_id)
        return keys
