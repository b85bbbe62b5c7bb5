"""Which engine runs what: claims from queues, heartbeats, take-overs and releases."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Unpack

import psycopg

from replaykit.log import Status
from replaykit.stores import _beats as beats
from replaykit.stores._checks import check_names
from replaykit.stores._partitions import partition_limits
from replaykit.stores._rows import claimed
from replaykit.stores._rules import claim_room
from replaykit.stores.base import ClaimLimits, WorkflowRow
from replaykit.stores.options import (
    ClaimTerms,
    HeartbeatOptions,
)
from replaykit.stores.postgres.database import PLAN_EACH_TIME, Database
from replaykit.stores.postgres.holds import executor_prefix
from replaykit.stores.postgres.items import enqueue_items
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import claimed_from, utc_now

__all__ = ["Claims"]


class Claims(Room):
    """Claiming runs from queues, and moving the runs of engines gone silent."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._prefix = executor_prefix(db.schema)

    def claim(self, queue: str, **terms: Unpack[ClaimTerms]) -> list[WorkflowRow]:
        executor_id, app_version = terms["executor_id"], terms["app_version"]
        limits, now = terms["limits"], terms["now"]
        check_names(queue=queue, executor_id=executor_id, app_version=app_version)
        if limits.limit <= 0:
            return []
        params: dict[str, Any] = {
            "queue": queue,
            "version": app_version,
            "now": now,
            "executor": executor_id,
        }
        take = self._sql["claim"]
        if limits.partitioned:
            take = self._sql["claim_partitioned"]
            concurrency, starts, since = partition_limits(limits, now)
            weights = json.dumps(dict(limits.partition_weights))
            params.update(concurrency=concurrency, starts=starts, since=since, weights=weights)
        per_key = (
            limits.partition_concurrency is not None or limits.partition_rate_limit is not None
        )
        unlimited = limits.concurrency is None and limits.rate_limit is None and not per_key
        with self._db.connection() as conn:
            if unlimited and not limits.partitioned:
                # SKIP LOCKED alone keeps two claimers off the same item; on an
                # empty queue this is one indexed read that writes nothing.
                params["room"] = limits.limit
                with conn.transaction():
                    rows = self._take(conn, take, params)
            elif (
                conn.execute(
                    self._sql["claimable_exists"], params, prepare=PLAN_EACH_TIME
                ).fetchone()
                is None
            ):
                # Engines poll for claims: an empty queue should not take the lock.
                return []
            else:
                with conn.transaction():
                    if limits.partitioned:
                        # Its plan is index probes only, whatever the statistics say
                        # of a table just filled (statements.sql, plan_by_index).
                        conn.execute(self._sql["plan_by_index"])
                    room = limits.limit
                    if not unlimited:
                        # The limits (the queue's, and each key's) count every
                        # claimer's runs, so claimers of this queue take turns;
                        # each statement after the lock sees what the previous
                        # holder committed.
                        key = self._db.key(f"claim {queue}")
                        conn.execute(self._sql["lock_transaction"], (key,))
                        room = claim_room(
                            limits,
                            running=self._count_running(conn, queue, limits),
                            started_in_period=lambda since: self._count_started(conn, queue, since),
                            now=now,
                        )
                    if room <= 0:
                        return []
                    params["room"] = room
                    rows = self._take(conn, take, params)
        taken = claimed(claimed_from, rows)
        self._db.shards.learn_rows(taken)
        taken.sort(key=lambda r: (r.priority, r.created_at or now, r.workflow_id))
        return taken

    def _take(self, conn: psycopg.Connection[Any], take: str, params: dict[str, Any]) -> list[Any]:
        """The claim's items taken out of the queue, then their runs started (inside the
        claim's transaction): each statement on one shard's rows, the starts (one per
        shard key) sent together."""
        picked = conn.execute(take, params).fetchall()
        if not picked:
            return []
        by_key: dict[str, list[str]] = {}
        for key, workflow_id in picked:
            by_key.setdefault(key, []).append(workflow_id)
        starts = [{**params, "shard": key, "wid": ids} for key, ids in by_key.items()]
        rows: list[Any] = []
        with conn.cursor() as cur:
            cur.executemany(self._sql["start_claimed"], starts, returning=True)
            while True:
                rows.extend(cur.fetchall())
                if not cur.nextset():
                    break
        return rows

    def _count_running(self, conn: psycopg.Connection[Any], queue: str, limits: ClaimLimits) -> int:
        if limits.concurrency is None:
            return 0
        found = conn.execute(
            self._sql["count_running"], (queue,), prepare=PLAN_EACH_TIME
        ).fetchone()
        return int(found[0]) if found else 0

    def _count_started(self, conn: psycopg.Connection[Any], queue: str, since: datetime) -> int:
        found = conn.execute(
            self._sql["count_started"], (queue, since), prepare=PLAN_EACH_TIME
        ).fetchone()
        return int(found[0]) if found else 0

    def heartbeat(
        self, executor_id: str, app_version: str, now: datetime, **options: Unpack[HeartbeatOptions]
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        names = beats.encode(beats.registered(options.get("workflows"), options.get("queues")))
        lease_seconds = options.get("lease_seconds")
        if lease_seconds is None:
            with self._db.connection() as conn:
                conn.execute(self._sql["heartbeat"], (executor_id, app_version, now, names))
            return []
        return self._take_over(executor_id, app_version, lease_seconds, now, beat=True, names=names)

    def read_heartbeats(self, since: datetime) -> list[beats.Heartbeat]:
        rows = self._db.all(self._sql["read_heartbeats"], (since,), prepare=False)
        return [beats.Heartbeat(r[0], r[1], r[2], beats.decode(r[3])) for r in rows]

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        return self._take_over(executor_id, app_version, lease_seconds, now)

    def _take_over(
        self,
        executor_id: str,
        app_version: str,
        lease_seconds: float,
        now: datetime,
        *,
        beat: bool = False,
        names: str | None = None,
    ) -> list[str]:
        """The take_over statement; with `beat`, it upserts the heartbeat too, with
        `names` (the registered names, as the heartbeats row keeps them)."""
        params = {
            "beat": beat,
            "names": names,
            "executor": executor_id,
            "now": now,
            "version": app_version,
            "cutoff": now - timedelta(seconds=lease_seconds),
            "key_prefix": self._prefix,
            "key_separator": b"\x00",
        }
        rows = self._db.all(self._sql["take_over"], params, prepare=PLAN_EACH_TIME)
        for workflow_id, _, key in rows:
            self._db.shards.learn(workflow_id, key)
        return [r[0] for r in sorted(rows, key=lambda r: (r[1], r[0]))]

    def release(self, executor_id: str) -> list[str]:
        check_names(executor_id=executor_id)
        db = self._db
        with db.connection() as conn, conn.transaction():
            rows = conn.execute(
                self._sql["release"],
                {"now": utc_now(), "executor": executor_id},
                prepare=PLAN_EACH_TIME,
            ).fetchall()
            enqueue_items(db, conn, (_released(row) for row in rows))
            db.notify(conn, [("enqueued", q) for q in sorted({r[1] for r in rows})])
        rows.sort(key=lambda r: (r[2], r[0]))
        db.tell([("enqueued", q) for q in sorted({r[1] for r in rows})])
        return [r[0] for r in rows]


def _released(row: Any) -> WorkflowRow:
    """A released run, from the release statement's row, as enqueue_items reads it."""
    workflow_id, queue, created_at, key, partition_key, version, priority, wake_at = row
    return WorkflowRow(
        workflow_id,
        "",
        Status.ENQUEUED,
        queue=queue,
        created_at=created_at,
        shard_key=key,
        partition_key=partition_key,
        app_version=version,
        priority=priority,
        wake_at=wake_at,
    )
