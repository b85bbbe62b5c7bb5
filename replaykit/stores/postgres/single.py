"""One write, one statement: a record with its side effects, or a run's finish.

This is the path every write can take alone, and the one group commit falls
back on for a write its batch did not settle: when the statement writes
nothing, a second query finds out why (`explain_record`) and the caller gets
the stored record, a refusal, or a retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs
import psycopg

from replaykit.errors import RecordConflict, StoreError
from replaykit.log import Outcome, Record, Status
from replaykit.stores._finish import same_record, unlike_error
from replaykit.stores._rules import (
    check_recordable,
    gap_error,
    no_run_to_send_to,
    replaces_stored,
)
from replaykit.stores.base import EventWrite, OutgoingMessage, WorkflowRow
from replaykit.stores.postgres.database import Database
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import (
    is_stream,
    json_param,
    outcome_param,
    record_from_row,
    record_params,
    utc_now,
)
from replaykit.stores.postgres.shapes import (
    RecordShape,
    finish_record_statement,
    record_statement,
)

__all__ = ["Finish", "PlainRecord", "Single", "Write"]


@attrs.frozen
class PlainRecord:
    """A record() call without side effects: what group commit batches."""

    workflow_id: str
    record: Record
    executor_id: str | None
    wake_at: datetime | None


@attrs.frozen
class Finish:
    """A finish_workflow() call, with or without its last record: group commit batches these too."""

    workflow_id: str
    status: Status
    result: Outcome | None
    error: str
    executor_id: str | None
    record: Record | None = None


Write = PlainRecord | Finish


class Single(Room):
    """Writes one record or one finish, explaining whatever it could not write."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._statements: dict[object, str] = {}  # by RecordShape, or its fields' tuple
        self._finish_record_statements: dict[tuple[bool, bool], str] = {}

    def statement(self, shape: RecordShape) -> str:
        text = self._statements.get(shape)
        if text is None:
            text = self._statements[shape] = record_statement(self._db.s, shape)
        return text

    def record_one(
        self,
        workflow_id: str,
        record: Record,
        executor_id: str | None,
        consume: int | Sequence[int] | None,
        send: OutgoingMessage | None,
        event: EventWrite | None,
        wake_at: datetime | None,
    ) -> Record:
        db = self._db
        consumed = None
        if consume is not None:
            consumed = [consume] if isinstance(consume, int) else list(consume)
        # The shape as a plain tuple (`RecordShape`'s fields in order): an attrs
        # instance made and hashed for every record cost more than finding its statement.
        shape = (
            executor_id is not None,
            record.position == 0,
            bool(consumed),
            send is not None,
            send is not None and send.idempotency_key is not None,
            event is not None,
            is_stream(record),
        )
        statement = self._statements.get(shape)
        if statement is None:
            statement = self._statements[shape] = record_statement(db.s, RecordShape(*shape))
        stream = shape[6]
        # The run's key is almost always kept (this process created, claimed or read
        # the run); it is looked up on the write's connection otherwise.
        params = record_params(workflow_id, record, "")
        params["wake_at"] = wake_at
        if executor_id is not None:
            params["executor"] = executor_id
        if consumed:
            params["consume"] = consumed
            params["consume_count"] = len(consumed)
        if send is not None or event is not None or stream:
            params["now"] = utc_now()
        # What other processes are told if the record is written: sent in a statement
        # of its own (Database.notify), beside the write in one round trip.
        told = []
        if send is not None:
            told.append(("message", send.workflow_id))
        if event is not None:
            told.append(("event", workflow_id))
        if stream:
            told.append(("stream", workflow_id))
        if send is not None:
            params["send_to"] = send.workflow_id
            params["send_topic"] = send.topic
            params["send_payload"] = json_param(send.payload)
            params["send_trace"] = send.trace_context
            if send.idempotency_key is not None:
                params["send_key"] = send.idempotency_key
        if event is not None:
            params["event_key"] = event.key
            params["event_value"] = json_param(event.value)
        # A retry is only needed when a concurrent writer changed the log
        # between this statement's snapshot and its row lock.
        alternative = None if send is None else send.if_duplicate
        for _ in range(5):
            with db.connection() as conn:
                params["shard"] = db.shards.of(conn, workflow_id)
                if send is not None:
                    params["send_shard"] = db.shards.of(conn, send.workflow_id)
                if send is not None and params["send_shard"] != params["shard"]:
                    written, sent, events = self._record_then_send(
                        conn, shape, params, send, alternative, told
                    )
                elif alternative is None:
                    written, sent, events = self._db.telling(conn, statement, params, told) or (
                        0,
                        0,
                        0,
                    )
                else:
                    written, sent, events = self._record_keyed_send(
                        conn, statement, params, alternative, told
                    )
                if not written:
                    stored = self._explain(conn, workflow_id, record, executor_id, consumed, send)
            if written:
                # Outside the pooled connection: a subscriber may call the store.
                notes = []
                if sent and send is not None:
                    notes.append(("message", send.workflow_id))
                if events:
                    notes.append(("event", workflow_id))
                if stream:
                    notes.append(("stream", workflow_id))
                db.tell(notes)
                if alternative is not None and not sent:
                    return attrs.evolve(record, outcome=alternative)
                return record
            if stored is not None:
                return stored
        raise StoreError(
            f"workflow id {workflow_id!r}: position {record.position} could not be recorded "
            "after 5 attempts although nothing stood in the way"
        )

    def _record_then_send(
        self,
        conn: psycopg.Connection[Any],
        shape: tuple[bool, ...],
        params: dict[str, Any],
        send: OutgoingMessage,
        duplicate: Outcome | None,
        told: list[tuple[str, str]],
    ) -> tuple[int, int, int]:
        """A record with a send to a run on another shard: the record (on its run's
        shard), then the send (on the other's), in one transaction, so that each
        statement names one shard key. A send that finds no run rolls the record back;
        a keyed send that finds its key used sets the record's outcome to `duplicate`."""
        alone = (*shape[:3], False, False, *shape[5:])
        statement = self._statements.get(alone)
        if statement is None:
            statement = self._statements[alone] = record_statement(self._db.s, RecordShape(*alone))
        db = self._db
        keyed = send.idempotency_key is not None
        with conn.transaction() as tx:
            written, _, events = conn.execute(statement, params).fetchone() or (0, 0, 0)
            if not written:
                return 0, 0, 0
            found = conn.execute(
                self._sql["send_message_keyed" if keyed else "send_message"],
                {
                    "shard": params["send_shard"],
                    "wid": send.workflow_id,
                    "key": send.idempotency_key,
                    "call": None,
                    "topic": send.topic,
                    "payload": json_param(send.payload),
                    "trace": send.trace_context,
                    "now": params["now"],
                },
            ).fetchone()
            if not found or not found[0]:
                # The target is gone: nothing of the record stays; the caller's
                # explanation finds the target missing and says so.
                raise psycopg.Rollback(tx)
            sent = int(found[1])
            if duplicate is not None and not sent:
                conn.execute(
                    self._sql["record_duplicate_send"],
                    (outcome_param(duplicate), params["shard"], params["wid"], params["pos"]),
                )
            db.notify(conn, [note for note in told if sent or note[0] != "message"])
            return written, sent, events
        return 0, 0, 0  # rolled back

    def _record_keyed_send(
        self,
        conn: psycopg.Connection[Any],
        statement: str,
        params: dict[str, Any],
        duplicate: Outcome,
        told: list[tuple[str, str]],
    ) -> tuple[int, int, int]:
        """The record statement, then (if its keyed send found the key used) the record's
        outcome set to `duplicate`, in one transaction, with its notes.

        Not one statement: whether the key was used is known only once the key's
        insert has waited out a concurrent sender of it, after the statement's
        snapshot was taken, and the parts of one statement cannot change the row
        another part inserted.
        """
        with conn.transaction():
            written, sent, events = conn.execute(statement, params).fetchone() or (0, 0, 0)
            if written and not sent:
                conn.execute(
                    self._sql["record_duplicate_send"],
                    (outcome_param(duplicate), params["shard"], params["wid"], params["pos"]),
                )
            if written:
                self._db.notify(conn, [note for note in told if sent or note[0] != "message"])
        return written, sent, events

    def _explain(
        self,
        conn: psycopg.Connection[Any],
        workflow_id: str,
        record: Record,
        executor_id: str | None,
        consume: list[int] | None,
        send: OutgoingMessage | None,
    ) -> Record | None:
        """Why nothing was written: raise, return the stored record, or None to retry."""
        found = self._state(conn, workflow_id, record.position, consume, send)
        row = None
        if found[0] is not None:
            row = WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
        check_recordable(row, workflow_id, executor_id)
        assert row is not None
        length = found[3]
        if found[4] is not None:
            stored = record_from_row(found[4:14], workflow_id)
            if not replaces_stored(stored, record):
                return stored
        elif record.position > length:
            raise gap_error(row.name, workflow_id, record.position, length)
        if consume:
            present = set(found[14])
            # A repeated id cannot be taken twice either.
            gone = sorted(set(consume) - present) or consume
            if len(present) != len(consume):
                raise RecordConflict(
                    f"workflow id {workflow_id!r}: message(s) {gone} already consumed"
                )
        if send is not None and not found[15]:
            raise no_run_to_send_to(send.workflow_id)
        return None

    def _state(
        self,
        conn: psycopg.Connection[Any],
        workflow_id: str,
        position: int,
        consume: list[int] | None,
        send: OutgoingMessage | None,
    ) -> Any:
        """What stands in the way of a record at `position`, read afresh in one query."""
        shards = self._db.shards
        found = conn.execute(
            self._sql["explain_record"],
            {
                "shard": shards.of(conn, workflow_id),
                "wid": workflow_id,
                "pos": position,
                "consume": consume or [],
                "send_shard": None if send is None else shards.of(conn, send.workflow_id),
                "send_to": None if send is None else send.workflow_id,
            },
        ).fetchone()
        assert found is not None
        return found

    def finish_one(self, finish: Finish) -> bool:
        if finish.record is not None:
            return self._finish_with_record(finish, finish.record)
        db = self._db
        params = {
            "status": Status(finish.status).value,
            "result": outcome_param(finish.result),
            "error": finish.error,
            "now": utc_now(),
            "shard": db.shard(finish.workflow_id),
            "wid": finish.workflow_id,
            "executor": finish.executor_id,
        }
        with db.connection() as conn:
            found = self._db.telling(
                conn, self._sql["finish_workflow"], params, [("finished", finish.workflow_id)]
            )
        return bool(found and found[0])

    def _finish_with_record(self, finish: Finish, record: Record) -> bool:
        """One statement: the last record through record()'s gate, and the finish with it."""
        db = self._db
        shape = (finish.executor_id is not None, record.position == 0)
        statement = self._finish_record_statements.get(shape)
        if statement is None:
            statement = self._finish_record_statements[shape] = finish_record_statement(
                db.s, executor=shape[0], first=shape[1]
            )
        params = record_params(finish.workflow_id, record, db.shard(finish.workflow_id))
        params.update(
            status=Status(finish.status).value,
            result=outcome_param(finish.result),
            error=finish.error,
            now=utc_now(),
        )
        if finish.executor_id is not None:
            params["executor"] = finish.executor_id
        # A retry is only needed when a concurrent writer changed the log
        # between this statement's snapshot and its row lock.
        for _ in range(5):
            verdict: bool | None = None
            with db.connection() as conn:
                passed, finished = self._db.telling(
                    conn, statement, params, [("finished", finish.workflow_id)]
                ) or (False, 0)
                if passed and not finished:
                    verdict = self._explain_finish(conn, finish, record)
            if finished:
                return True
            if not passed or verdict is False:
                return False
            if verdict:
                # The position holds this very record already: finish without it.
                return self.finish_one(attrs.evolve(finish, record=None))
        raise StoreError(
            f"workflow id {finish.workflow_id!r}: position {record.position} could not be "
            "recorded with the run's finish after 5 attempts although nothing stood in the way"
        )

    def _explain_finish(
        self, conn: psycopg.Connection[Any], finish: Finish, record: Record
    ) -> bool | None:
        """Why a finish's last record was not written, read afresh.

        False: the run is missing, not PENDING or not owned now (the finish
        answers False). True: the position holds an equal completed record,
        which counts as written. None: nothing stands in the way any more
        (a concurrent writer moved on after the statement's snapshot): retry.
        Otherwise raises `RecordConflict`.
        """
        found = self._state(conn, finish.workflow_id, record.position, None, None)
        name, status, owner, length = found[0], found[1], found[2], found[3]
        if name is None or status != Status.PENDING.value:
            return False
        if finish.executor_id is not None and owner != finish.executor_id:
            return False
        if found[4] is not None:
            stored = record_from_row(found[4:14], finish.workflow_id)
            if same_record(stored, record):
                return True
            if stored.outcome is not None:
                raise unlike_error(name, finish.workflow_id, stored, record)
        elif record.position > length:
            raise gap_error(name, finish.workflow_id, record.position, length)
        return None
