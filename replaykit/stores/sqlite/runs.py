"""Creating runs: one (maybe a fork with its records) or many, deduplicated per queue."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import attrs

from replaykit.errors import StoreError
from replaykit.log import Record, Status
from replaykit.stores._generations import readable_first_inputs, with_first_inputs
from replaykit.stores._rows import shown
from replaykit.stores._rules import (
    batch_answers,
    check_batch_dedup,
    checked_create,
    creation_batch,
    duplicate_dedup,
)
from replaykit.stores.base import WorkflowRow
from replaykit.stores.sqlite.queries import SQL, id_set, keyed
from replaykit.stores.sqlite.room import Room
from replaykit.stores.sqlite.values import (
    first,
    load_inputs,
    record_params,
    workflow_from_row,
    workflow_params,
)
from replaykit.stores.sqlite.writer import Unchanged

__all__ = ["Runs"]


class Runs(Room):
    """create_workflow and create_workflows."""

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        checked = checked_create(row, records, fork_of)
        records_params = [record_params(row.workflow_id, r) for r in records]
        deduplicated = row.queue is not None and row.dedup_id is not None

        # (the row, whether created, whether the fork got events)
        def insert(conn: sqlite3.Connection) -> tuple[WorkflowRow, bool, bool]:
            stored = keyed(conn, checked, fork_of)
            if deduplicated:
                existing = first(conn.execute(SQL["get_workflow"], (row.workflow_id,)))
                if existing is not None:
                    raise Unchanged((shown(workflow_from_row, existing), False, False))
                holder = first(conn.execute(SQL["dedup_holder"], (row.queue, row.dedup_id)))
                if holder is not None:
                    raise duplicate_dedup(stored, holder[0])
            if conn.execute(SQL["create_workflow"], workflow_params(stored)).rowcount == 0:
                existing = first(conn.execute(SQL["get_workflow"], (row.workflow_id,)))
                raise Unchanged((shown(workflow_from_row, existing), False, False))
            got_events = False
            if records_params:
                conn.executemany(SQL["create_workflow_record"], records_params)
                if fork_of is not None:
                    conn.execute(SQL["fork_copy_event_marks"], (row.workflow_id, fork_of))
                    got_events = (
                        conn.execute(SQL["fork_set_events"], (row.workflow_id,)).rowcount > 0
                    )
            return stored, True, got_events

        found, created, got_events = self._writer.write(insert)
        if created and found.status is Status.ENQUEUED and found.queue is not None:
            self._notify([("enqueued", found.queue)])
        if got_events:
            self._notify([("event", row.workflow_id)])
        return with_first_inputs([(found, created)], self._first_inputs)[0]

    def _first_inputs(self, workflow_ids: list[str]) -> dict[str, Any]:
        """The first inputs kept for these runs (those that continued as new)."""
        with self._connections.read() as conn:
            rows = conn.execute(SQL["get_first_inputs"], (id_set(workflow_ids),)).fetchall()
        return readable_first_inputs(rows, load_inputs)

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        batch, firsts = creation_batch(rows)
        if not batch:
            return []

        def insert(conn: sqlite3.Connection) -> dict[str, WorkflowRow]:
            # Inside BEGIN IMMEDIATE nobody else writes: the ids found missing
            # here are the ones the insert creates.
            existing: dict[str, WorkflowRow] = {}
            for row in firsts:
                found = first(conn.execute(SQL["get_workflow"], (row.workflow_id,)))
                if found is not None:
                    existing[row.workflow_id] = shown(workflow_from_row, found)

            def live_holder(row: WorkflowRow) -> str | None:
                holder = first(conn.execute(SQL["dedup_holder"], (row.queue, row.dedup_id)))
                return None if holder is None else str(holder[0])

            check_batch_dedup(
                firsts,
                is_new=lambda workflow_id: workflow_id not in existing,
                live_holder=live_holder,
            )
            new = []
            for row in firsts:
                if row.workflow_id not in existing:
                    keys[row.workflow_id] = keyed(conn, row).shard_key
                    new.append(workflow_params(attrs.evolve(row, shard_key=keys[row.workflow_id])))
            if not new:
                raise Unchanged(existing)
            inserted = conn.executemany(SQL["create_workflow"], new).rowcount
            if inserted != len(new):
                raise StoreError(
                    f"create_workflows inserted {inserted} of {len(new)} new runs inside one "
                    "write transaction; the database changed under its write lock"
                )
            return existing

        keys: dict[str, str | None] = {}
        answers, queues = batch_answers(batch, self._writer.write(insert), keys)
        self._notify([("enqueued", queue) for queue in queues])
        return with_first_inputs(answers, self._first_inputs)
