"""Creating runs: one at a time (with a fork's records), in batches, and the dedup check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import psycopg

from replaykit import serde
from replaykit.errors import StoreError
from replaykit.log import Record, Status, outcome_to_json
from replaykit.stores._attributes import encoded_attributes
from replaykit.stores._generations import readable_first_inputs, with_first_inputs
from replaykit.stores._rows import inputs_value, shown
from replaykit.stores._rules import (
    batch_answers,
    check_batch_dedup,
    checked_create,
    creation_batch,
    duplicate_dedup,
)
from replaykit.stores._shards import new_shard_key
from replaykit.stores.base import WorkflowRow
from replaykit.stores.postgres.database import PLAN_EACH_TIME, Database
from replaykit.stores.postgres.items import enqueue_items
from replaykit.stores.postgres.room import Room
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
        "shard_key": stored.shard_key,
    }


def keyed(
    db: Database, conn: psycopg.Connection[Any], row: WorkflowRow, fork_of: str | None = None
) -> WorkflowRow:
    """`row` with its shard key (stores/_shards.py: a fork's is its source's)."""
    if row.shard_key is not None:
        return row

    def key_of(elder: str) -> str | None:
        return db.shards.stored(conn, elder)

    source_key = None if fork_of is None else key_of(fork_of)
    if source_key is not None and row.continued_as is None:
        return attrs.evolve(row, shard_key=source_key)
    return attrs.evolve(row, shard_key=new_shard_key(row, key_of))


def insert_run(db: Database, conn: psycopg.Connection[Any], stored: WorkflowRow) -> bool:
    """Register `stored` (keyed) in the directory and insert its row, inside a transaction;
    False if its id is taken (nothing written)."""
    if conn.execute(db.sql["register_run"], (stored.workflow_id, stored.shard_key)).fetchone():
        inserted = conn.execute(db.sql["create_workflow"], create_params(db, stored)).fetchone()
        if inserted:
            enqueue_items(db, conn, [stored])
            if stored.status is Status.ENQUEUED and stored.queue is not None:
                db.notify(conn, [("enqueued", stored.queue)])
            db.shards.learn(stored.workflow_id, str(stored.shard_key))
            return True
        raise StoreError(
            f"workflow id {stored.workflow_id!r}: the directory of ids took it under shard key "
            f"{stored.shard_key!r} but a run of that key and id is stored; the schema's "
            "run_shards table is out of step with its workflows"
        )
    return False


def insert_run_at_once(db: Database, conn: psycopg.Connection[Any], stored: WorkflowRow) -> bool:
    """`insert_run` as its own transaction, its statements sent together (pipelined): one
    round trip and the commit's, where the statements one after the other took six. The
    row and its item go in before the directory's answer is read; a taken id rolls all
    of it back."""
    taken = False
    with conn.pipeline(), conn.transaction() as tx:
        registered = conn.execute(db.sql["register_run"], (stored.workflow_id, stored.shard_key))
        created = conn.execute(db.sql["create_workflow"], create_params(db, stored))
        enqueue_items(db, conn, [stored])
        if stored.status is Status.ENQUEUED and stored.queue is not None:
            db.notify(conn, [("enqueued", stored.queue)])
        if registered.fetchone() is None:
            taken = True
            raise psycopg.Rollback(tx)
        if created.fetchone() is None:
            raise StoreError(
                f"workflow id {stored.workflow_id!r}: the directory of ids took it under shard "
                f"key {stored.shard_key!r} but a run of that key and id is stored; the "
                "schema's run_shards table is out of step with its workflows"
            )
    if taken:
        return False
    db.shards.learn(stored.workflow_id, str(stored.shard_key))
    return True


class Creates(Room):
    """create_workflow and create_workflows."""

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        db = self._db
        checked = checked_create(row, records, fork_of)
        deduplicated = row.queue is not None and row.dedup_id is not None
        for _ in range(5):
            got_events = False
            with db.connection() as conn:
                stored = keyed(db, conn, checked, fork_of)
                # The id in the directory and the row in one transaction: a run is
                # in both or in neither.
                if not deduplicated and not records:
                    inserted = insert_run_at_once(db, conn, stored)
                else:
                    with conn.transaction():
                        if deduplicated:
                            self._check_dedup(conn, stored)
                        inserted = insert_run(db, conn, stored)
                        if inserted and records:
                            key = str(stored.shard_key)
                            with conn.cursor() as cur:
                                cur.executemany(
                                    self._sql["create_workflow_record"],
                                    [record_params(row.workflow_id, r, key) for r in records],
                                )
                            if fork_of is not None:
                                got_events = self._copy_events(conn, fork_of, stored)
            if inserted:
                if stored.status is Status.ENQUEUED and stored.queue is not None:
                    db.tell([("enqueued", stored.queue)])
                if got_events:
                    db.tell([("event", row.workflow_id)])
                return stored, True
            found = db.about(self._sql["get_workflow"], row.workflow_id)
            if found is not None:
                return with_first_inputs(
                    [(shown(workflow_from_row, found), False)], self._first_inputs
                )[0]
            # The run that stood in the way was deleted meanwhile: try again.
        raise StoreError(
            f"workflow id {row.workflow_id!r}: create_workflow kept racing with deletes"
        )

    def _copy_events(
        self, conn: psycopg.Connection[Any], source_id: str, fork: WorkflowRow
    ) -> bool:
        """Set on a fork what its copied records set in the source (inside its transaction).

        The copied records take what their originals set; then the fork gets,
        for each key, the value its last record setting that key set (and a
        notification). Whether it got any.
        """
        db, fork_id, key = self._db, fork.workflow_id, fork.shard_key
        conn.execute(
            self._sql["fork_copy_event_marks"],
            {
                "fork": fork_id,
                "fork_shard": key,
                "source": source_id,
                "source_shard": db.shards.of(conn, source_id),
            },
        )
        found = conn.execute(
            self._sql["fork_set_events"], {"wid": fork_id, "shard": key}
        ).fetchone()
        if found and found[0]:
            db.notify(conn, [("event", fork_id)])
            return True
        return False

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        batch, firsts = creation_batch(rows)
        if not batch:
            return []
        deduplicated = any(r.queue is not None and r.dedup_id is not None for r in firsts)
        existing: dict[str, WorkflowRow] = {}
        keys: dict[str, str | None] = {}
        todo = firsts
        for _ in range(5):
            with self._db.connection() as conn:
                todo = self._keyed_batch(conn, todo)
                keys.update((row.workflow_id, row.shard_key) for row in todo)
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
                    # The ids in the directory and the rows in one transaction.
                    with conn.transaction():
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
        answers, queues = batch_answers(batch, existing, keys)
        self._db.tell([("enqueued", queue) for queue in queues])
        return with_first_inputs(answers, self._first_inputs)

    def _keyed_batch(
        self, conn: psycopg.Connection[Any], rows: Sequence[WorkflowRow]
    ) -> list[WorkflowRow]:
        """`rows` with their shard keys, the elders' keys looked up in one statement."""
        elders = [
            elder
            for row in rows
            if row.shard_key is None
            for elder in (row.continued_as, row.forked_from, row.parent_id)
            if elder is not None
        ]
        known = self._db.shards.stored_many(conn, elders) if elders else {}
        return [
            row
            if row.shard_key is not None
            else attrs.evolve(row, shard_key=new_shard_key(row, known.get))
            for row in rows
        ]

    def _first_inputs(self, workflow_ids: list[str]) -> dict[str, Any]:
        """The first inputs kept for these runs (those that continued as new)."""
        with self._db.connection() as conn:
            keys = self._db.shards.of_many(conn, workflow_ids)
            rows = conn.execute(
                self._sql["get_first_inputs"], ([keys[i] for i in workflow_ids], workflow_ids)
            ).fetchall()
        return readable_first_inputs(rows, inputs_value)

    def _insert_many(
        self, conn: psycopg.Connection[Any], rows: Sequence[WorkflowRow]
    ) -> tuple[set[str], dict[str, WorkflowRow]]:
        """Insert `rows` (distinct ids, keyed) inside a transaction: their ids in the
        directory, then the rows of those it took; (ids created, runs found in the way)."""
        registered = {
            r[0]
            for r in conn.execute(
                self._sql["register_runs"],
                (serde.dumps([[row.workflow_id, row.shard_key] for row in rows]),),
            ).fetchall()
        }
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
                row.shard_key,
            ]
            for row in rows
            if row.workflow_id in registered
        ]
        params = {"rows": serde.dumps(plain)}
        inserted = (
            {r[0] for r in conn.execute(self._sql["create_workflows"], params).fetchall()}
            if plain
            else set()
        )
        if inserted != registered:
            raise StoreError(
                f"create_workflows: the directory of ids took {len(registered)} ids but "
                f"{len(inserted)} rows were inserted; the schema's run_shards table is out of "
                "step with its workflows"
            )
        created = [row for row in rows if row.workflow_id in inserted]
        enqueue_items(self._db, conn, created)
        queues = dict.fromkeys(
            row.queue for row in created if row.status is Status.ENQUEUED and row.queue
        )
        self._db.notify(conn, [("enqueued", queue) for queue in queues if queue])
        self._db.shards.learn_rows(created)
        in_the_way = [row.workflow_id for row in rows if row.workflow_id not in inserted]
        found: dict[str, WorkflowRow] = {}
        if in_the_way:
            keys = self._db.shards.of_many(conn, in_the_way)
            pairs = {"shard": [keys[i] for i in in_the_way], "wid": in_the_way}
            for r in conn.execute(self._sql["get_workflows"], pairs).fetchall():
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
