"""Creating runs: one at a time (with a fork's records), in batches, and the dedup check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from replaykit import serde
from replaykit.errors import StoreError
from replaykit.log import Record, Status, outcome_to_json
from replaykit.stores._attributes import encoded_attributes
from replaykit.stores._generations import with_first_inputs
from replaykit.stores._rows import inputs_value, shown
from replaykit.stores._rules import (
    batch_answers,
    batch_of,
    check_batch_dedup,
    checked_create,
    duplicate_dedup,
    first_of_each_id,
    stamped_for_batch,
)
from replaykit.stores.base import WorkflowRow
from replaykit.stores.postgres.database import PLAN_EACH_TIME, Database
from replaykit.stores.postgres.rows import (
    iso,
    json_param,
    outcome_param,
    record_params,
    workflow_from_row,
)

__all__ = ["Creates", "create_params"]


class _RacedWithDelete(Exception):
    """A run the batch found in its way was deleted before it was read: start over."""


def create_params(db: Database, stored: WorkflowRow) -> dict[str, Any]:
    """A new run as the `create_workflow` statement binds it."""
    return {
        "workflow_id": stored.workflow_id,
        "name": stored.name,
        "status": Status(stored.status).value,
        "inputs": None if stored.inputs is None else json_param(stored.inputs),
        "result": outcome_param(stored.result),
        "executor_id": stored.executor_id,
        "app_version": stored.app_version,
        "created_at": stored.created_at,
        "updated_at": stored.updated_at,
        "parent_id": stored.parent_id,
        "queue": stored.queue,
        "priority": stored.priority,
        "dedup_id": stored.dedup_id,
        "recovery_attempts": stored.recovery_attempts,
        "wake_at": stored.wake_at,
        "error": stored.error,
        "started_at": stored.started_at,
        "trace_context": stored.trace_context,
        "forked_from": stored.forked_from,
        "fork_position": stored.fork_position,
        "deadline": stored.deadline,
        "timeout_seconds": stored.timeout,
        "generation": stored.generation,
        "continued_as": stored.continued_as,
        "partition_key": stored.partition_key or "",
        "attributes": json_param(encoded_attributes(stored.attributes)),
        "channel": db.channel,
        "origin": db.origin,
    }


class Creates:
    """create_workflow and create_workflows."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._sql = db.sql

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        db = self._db
        stored = checked_create(row, records, fork_of)
        insert = self._sql["create_workflow"]
        params = create_params(db, stored)
        record_rows = [record_params(row.workflow_id, r) for r in records]
        deduplicated = row.queue is not None and row.dedup_id is not None
        for _ in range(5):
            got_events = False
            with db.connection() as conn:
                if record_rows or deduplicated:
                    with conn.transaction():
                        if deduplicated:
                            self._check_dedup(conn, stored)
                        inserted = conn.execute(insert, params).fetchone()
                        if inserted and inserted[0] and record_rows:
                            with conn.cursor() as cur:
                                cur.executemany(self._sql["create_workflow_record"], record_rows)
                            if fork_of is not None:
                                got_events = self._copy_events(conn, fork_of, row.workflow_id)
                else:
                    inserted = conn.execute(insert, params).fetchone()
            if inserted and inserted[0]:
                if stored.status is Status.ENQUEUED and stored.queue is not None:
                    db.tell([("enqueued", stored.queue)])
                if got_events:
                    db.tell([("event", row.workflow_id)])
                return stored, True
            found = db.one(self._sql["get_workflow"], (row.workflow_id,))
            if found is not None:
                return with_first_inputs(
                    [(shown(workflow_from_row, found), False)], self._first_inputs
                )[0]
            # The run that stood in the way was deleted meanwhile: try again.
        raise StoreError(
            f"workflow id {row.workflow_id!r}: create_workflow kept racing with deletes"
        )

    def _copy_events(self, conn: psycopg.Connection[Any], source_id: str, fork_id: str) -> bool:
        """Set on a fork what its copied records set in the source (inside its transaction).

        The copied records take what their originals set; then the fork gets,
        for each key, the value its last record setting that key set (and a
        notification). Whether it got any.
        """
        conn.execute(self._sql["fork_copy_event_marks"], {"fork": fork_id, "source": source_id})
        found = conn.execute(
            self._sql["fork_set_events"],
            {"wid": fork_id, "channel": self._db.channel, "origin": self._db.origin},
        ).fetchone()
        return bool(found and found[0])

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        batch = stamped_for_batch(batch_of(rows))
        if not batch:
            return []
        firsts = first_of_each_id(batch)
        deduplicated = any(r.queue is not None and r.dedup_id is not None for r in firsts)
        existing: dict[str, WorkflowRow] = {}
        todo = firsts
        for _ in range(5):
            with self._db.connection() as conn:
                if deduplicated:
                    # The dedup check, the insert and the read of the runs in
                    # the way in one transaction: a refusal writes nothing.
                    try:
                        with conn.transaction():
                            self._check_batch_dedup(conn, todo)
                            inserted, found = self._insert_many(conn, todo)
                            if len(inserted) + len(found) < len(todo):
                                raise _RacedWithDelete
                    except _RacedWithDelete:
                        continue
                else:
                    # One statement, one commit; the read only if some ids existed.
                    inserted, found = self._insert_many(conn, todo)
            existing.update(found)
            # A run in the way deleted before it was read: create that row again.
            todo = [r for r in todo if r.workflow_id not in inserted and r.workflow_id not in found]
            if not todo:
                break
        else:
            raise StoreError(
                f"create_workflows of {len(firsts)} runs kept racing with deletes "
                f"(e.g. workflow id {todo[0].workflow_id!r})"
            )
        # Every id of the batch is now inserted or found in the way, never both.
        answers, queues = batch_answers(batch, existing)
        self._db.tell([("enqueued", queue) for queue in queues])
        return with_first_inputs(answers, self._first_inputs)

    def _first_inputs(self, workflow_ids: list[str]) -> dict[str, Any]:
        """The first inputs kept for these runs (those that continued as new)."""
        rows = self._db.all(self._sql["get_first_inputs"], (workflow_ids,))
        found: dict[str, Any] = {}
        for workflow_id, data in rows:
            try:
                found[workflow_id] = inputs_value(data)
            except Exception:
                continue  # unreadable: the start is compared with the current inputs only
        return found

    def _insert_many(
        self, conn: psycopg.Connection[Any], rows: Sequence[WorkflowRow]
    ) -> tuple[set[str], dict[str, WorkflowRow]]:
        """Insert `rows` (distinct ids) in one statement; (ids created, runs found in the way)."""
        plain = [
            [
                row.workflow_id,
                row.name,
                Status(row.status).value,
                None if row.inputs is None else serde.dumps(row.inputs),
                None if row.result is None else serde.dumps(outcome_to_json(row.result)),
                row.executor_id,
                row.app_version,
                iso(row.created_at),
                iso(row.updated_at),
                row.parent_id,
                row.queue,
                row.priority,
                row.dedup_id,
                row.recovery_attempts,
                iso(row.wake_at),
                row.error,
                iso(row.started_at),
                row.trace_context,
                row.forked_from,
                row.fork_position,
                iso(row.deadline),
                row.timeout,
                row.generation,
                row.continued_as,
                row.partition_key or "",
                encoded_attributes(row.attributes),
            ]
            for row in rows
        ]
        params = {
            "rows": serde.dumps(plain),
            "channel": self._db.channel,
            "origin": self._db.origin,
        }
        inserted = {r[0] for r in conn.execute(self._sql["create_workflows"], params).fetchall()}
        in_the_way = [row.workflow_id for row in rows if row.workflow_id not in inserted]
        found: dict[str, WorkflowRow] = {}
        if in_the_way:
            for r in conn.execute(self._sql["get_workflows"], {"wid": in_the_way}).fetchall():
                found[r[0]] = shown(workflow_from_row, r)
        return inserted, found

    def _check_batch_dedup(
        self, conn: psycopg.Connection[Any], rows: Sequence[WorkflowRow]
    ) -> None:
        """`check_batch_dedup` for `rows` (inside a transaction), as `_check_dedup` for one row.

        The advisory locks of every (queue, dedup_id) of the batch are taken in
        key order, so two batches never wait for each other crosswise, and
        before the check, whose statement then sees what earlier holders
        committed.
        """
        deduplicated = [r for r in rows if r.queue is not None and r.dedup_id is not None]
        keys = sorted({self._db.key(f"dedup {r.queue}\x00{r.dedup_id}") for r in deduplicated})
        conn.execute(self._sql["lock_dedup_ids"], (keys,))
        found = conn.execute(
            self._sql["dedup_holders"],
            {
                "wid": [r.workflow_id for r in deduplicated],
                "queue": [r.queue for r in deduplicated],
                "dedup": [r.dedup_id for r in deduplicated],
            },
            prepare=PLAN_EACH_TIME,
        ).fetchall()
        exists = {r[0]: bool(r[1]) for r in found}
        holders = {r[0]: r[2] for r in found}
        check_batch_dedup(
            rows,
            is_new=lambda workflow_id: not exists.get(workflow_id, False),
            live_holder=lambda row: holders.get(row.workflow_id),
        )

    def _check_dedup(self, conn: psycopg.Connection[Any], row: WorkflowRow) -> None:
        """Refuse `row` if a live run of its queue holds its dedup_id (inside a transaction).

        Creators of one (queue, dedup_id) take turns on an advisory lock, so two
        engines enqueueing the same id at once cannot both get through.
        """
        conn.execute(
            self._sql["lock_transaction"], (self._db.key(f"dedup {row.queue}\x00{row.dedup_id}"),)
        )
        holder = conn.execute(
            self._sql["dedup_holder"],
            {"queue": row.queue, "dedup": row.dedup_id, "wid": row.workflow_id},
        ).fetchone()
        if holder is not None:
            raise duplicate_dedup(row, holder[0])
