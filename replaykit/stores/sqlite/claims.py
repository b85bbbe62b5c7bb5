"""Who runs what: queue claims, heartbeats, executor holds, take-over and release.

An engine holds its executor id while it runs (`stores/_holds.py`): a lock file
beside the database, so engines of other processes see it, or a lock in this
process for a database in memory or behind a URI. `take_over` moves only the
runs of engines whose hold is free: a late heartbeat alone never moves a live
engine's runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Unpack

from replaykit.stores import _beats as beats
from replaykit.stores._checks import check_names
from replaykit.stores._holds import ExecutorHold, FileHolds, LocalHolds
from replaykit.stores._partitions import partition_limits
from replaykit.stores._rows import claimed
from replaykit.stores._rules import claim_room
from replaykit.stores.base import WorkflowRow
from replaykit.stores.options import (
    ClaimTerms,
    HeartbeatOptions,
)
from replaykit.stores.sqlite.connections import Connections
from replaykit.stores.sqlite.queries import SQL, id_set
from replaykit.stores.sqlite.room import Room
from replaykit.stores.sqlite.values import claimed_from, first, from_micros, to_micros
from replaykit.stores.sqlite.values import now as utc_now
from replaykit.stores.sqlite.writer import Notify, Writer

__all__ = ["Claims"]


class Claims(Room):
    """claim, heartbeat, take_over, hold_executor, executor_holder and release."""

    def __init__(self, connections: Connections, writer: Writer, notify: Notify) -> None:
        super().__init__(connections, writer, notify)
        path = connections.path
        # A database in memory or behind a URI has no file to lock beside it:
        # its executor holds exclude engines of this process only.
        self._holds: LocalHolds | FileHolds = (
            LocalHolds()
            if connections.in_memory or path.startswith("file:")
            else FileHolds(os.path.abspath(path))
        )

    def claim(self, queue: str, **terms: Unpack[ClaimTerms]) -> list[WorkflowRow]:
        executor_id, app_version = terms["executor_id"], terms["app_version"]
        limits, now = terms["limits"], terms["now"]
        check_names(queue=queue, executor_id=executor_id, app_version=app_version)
        at = to_micros(now)
        if limits.limit <= 0:
            return []
        # Engines poll for claims; an empty queue should not take the write lock.
        with self._connections.read() as conn:
            if first(conn.execute(SQL["claimable_exists"], (queue, app_version, at))) is None:
                return []

        def take(conn: sqlite3.Connection) -> list[WorkflowRow]:
            running = 0
            if limits.concurrency is not None:
                running = first(conn.execute(SQL["count_running"], (queue,)))[0]

            def started_since(since: datetime) -> int:
                return int(first(conn.execute(SQL["count_started"], (queue, to_micros(since))))[0])

            room = claim_room(limits, running=running, started_in_period=started_since, now=now)
            if room <= 0:
                return []
            if limits.partitioned:
                concurrency, starts, since = partition_limits(limits, now)
                params = (executor_id, queue, app_version, at, room, concurrency, starts)
                weights = json.dumps(dict(limits.partition_weights))
                rows = conn.execute(
                    SQL["claim_partitioned"], (*params, to_micros(since), weights)
                ).fetchall()
            else:
                rows = conn.execute(
                    SQL["claim"], (executor_id, queue, app_version, at, room)
                ).fetchall()
            taken = claimed(claimed_from, rows)
            taken.sort(key=lambda r: (r.priority, r.created_at or now, r.workflow_id))
            return taken

        return self._writer.write(take)

    def heartbeat(
        self, executor_id: str, app_version: str, now: datetime, **options: Unpack[HeartbeatOptions]
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        names = beats.encode(beats.registered(options.get("workflows"), options.get("queues")))
        lease_seconds = options.get("lease_seconds")
        params = (executor_id, app_version, to_micros(now), names)
        self._writer.write(lambda conn: conn.execute(SQL["heartbeat"], params))
        # Two local transactions: a statement here costs no server a round trip.
        if lease_seconds is None:
            return []
        return self.take_over(
            executor_id=executor_id, app_version=app_version, lease_seconds=lease_seconds, now=now
        )

    def read_heartbeats(self, since: datetime) -> list[beats.Heartbeat]:
        with self._connections.read() as conn:
            rows = conn.execute(SQL["read_heartbeats"], (to_micros(since),)).fetchall()
        return [
            beats.Heartbeat(r[0], r[1], from_micros(r[2]) or since, beats.decode(r[3]))
            for r in rows
        ]

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        at = to_micros(now)
        cutoff = to_micros(now - timedelta(seconds=lease_seconds))

        # Each dead id stays locked until the move commits, so that an engine
        # starting under that id meanwhile waits, and then finds its runs gone.
        probes: dict[str, Callable[[], None] | None] = {}

        def move(conn: sqlite3.Connection) -> list[str]:
            stale = [r[0] for r in conn.execute(SQL["stale_executors"], (executor_id, cutoff))]
            for stale_id in stale:
                if stale_id not in probes:
                    probes[stale_id] = self._holds.probe(stale_id, app_version)
            dead = [stale_id for stale_id in stale if probes[stale_id] is not None]
            if not dead:
                return []
            rows = conn.execute(
                SQL["take_over"], (executor_id, at, app_version, id_set(dead))
            ).fetchall()
            return [r[0] for r in sorted(rows, key=lambda r: (r[1], r[0]))]

        try:
            return self._writer.write(move)
        finally:
            for unlock in probes.values():
                if unlock is not None:
                    unlock()

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        check_names(executor_id=executor_id, app_version=app_version)
        self._connections.check_open()
        return self._holds.hold(executor_id, app_version)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        return self._holds.holder(executor_id, app_version)

    def release(self, executor_id: str) -> list[str]:
        check_names(executor_id=executor_id)
        params = (to_micros(utc_now()), executor_id)

        def put_back(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(SQL["release"], params).fetchall()

        rows = sorted(self._writer.write(put_back), key=lambda r: (r[2], r[0]))
        self._notify([("enqueued", q) for q in sorted({r[1] for r in rows})])
        return [r[0] for r in rows]
