"""Recording: a record into a run's log, with what it consumes, sends and sets, alone or many.

A record is one statement in the common case (`append_record`): its gates are
in the statement, and only when it changes nothing do `refusals.py` read why.
`record_many` hands each write's body to the group commit, so writes of many
runs share one transaction, a savepoint each.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Unpack

import attrs

from replaykit.errors import RecordConflict, StoreError
from replaykit.log import STREAM_KINDS, Record
from replaykit.stores._checks import check_names, check_write, refused_writes
from replaykit.stores._late import check_late, check_late_record, late_gap
from replaykit.stores._many import Answers, answered, from_the_batch, write_one_by_one, writes_of
from replaykit.stores._rules import checked_transaction_record
from replaykit.stores.base import RecordWrite
from replaykit.stores.options import Owner, RecordOptions, TransactionBody, options_of
from replaykit.stores.sqlite.messages import deliver
from replaykit.stores.sqlite.queries import SQL, id_set
from replaykit.stores.sqlite.refusals import log_length, refusal, run_owner
from replaykit.stores.sqlite.room import Room
from replaykit.stores.sqlite.values import (
    dump,
    dump_outcome,
    first,
    record_from_row,
    record_params,
    to_micros,
)
from replaykit.stores.sqlite.writer import BodyFailed, Unchanged

__all__ = ["Records"]


def _consumed_error(workflow_id: str, message_ids: Sequence[int]) -> RecordConflict:
    return RecordConflict(
        f"workflow id {workflow_id!r}: message(s) {list(message_ids)} already consumed"
    )


class Records(Room):
    """record, record_many, record_transaction and record_late."""

    def write_record(
        self,
        conn: sqlite3.Connection,
        workflow_id: str,
        record: Record,
        executor_id: str | None,
        wake_at: datetime | None,
    ) -> None:
        """Write `record` or raise: `Unchanged(stored)` or the protocol's errors."""
        params = (*record_params(workflow_id, record), executor_id, to_micros(wake_at))
        if conn.execute(SQL["append_record"], params).rowcount:
            return
        stored = refusal(conn, workflow_id, record.position, record, executor_id)
        if stored is not None:
            raise Unchanged(stored)
        # Only the run's deadline stood in the way.
        conn.execute(SQL["set_wake_at"], (to_micros(wake_at), workflow_id))
        if not conn.execute(SQL["append_record"], params).rowcount:
            raise StoreError(
                f"workflow id {workflow_id!r}: position {record.position} could not be "
                "recorded although nothing stood in the way; is another program writing "
                "to this database?"
            )

    def record(self, workflow_id: str, record: Record, **options: Unpack[RecordOptions]) -> Record:
        check_write(
            workflow_id,
            record,
            options.get("executor_id"),
            options.get("send"),
            options.get("event"),
        )
        notes: list[tuple[str, str]] = []
        body = self._record_body(workflow_id, record, options, notes)
        stored = self._writer.write(body)
        self._notify(notes)
        return stored

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        """One transaction for the batch (a savepoint per write), shared by group commit."""
        batch = writes_of(writes)
        if not batch:
            return []
        self._writer.check_writable()
        notes: list[list[tuple[str, str]]] = [[] for _ in batch]
        answers: Answers = [None] * len(batch)
        for index, refused in refused_writes(batch).items():
            answers[index] = refused
        taken = [i for i, answer in enumerate(answers) if answer is None]
        bodies = {
            i: self._record_body(
                batch[i].workflow_id, batch[i].record, options_of(batch[i]), notes[i]
            )
            for i in taken
        }
        alone = from_the_batch(answers, taken, self._writer.submit_many(list(bodies.values())))
        write_one_by_one(batch, answers, alone, lambda i: self._writer.write_alone(bodies[i]))
        done = answered(answers)
        # Only a write that was answered with a record ran its body to the end.
        self._notify([note for i in taken if isinstance(done[i], Record) for note in notes[i]])
        return done

    def _record_body(
        self,
        workflow_id: str,
        record: Record,
        options: RecordOptions,
        notes: list[tuple[str, str]],
    ) -> Callable[[sqlite3.Connection], Record]:
        """The transaction body of one record() write; `notes` gets its notifications."""
        executor_id, consume = options.get("executor_id"), options.get("consume")
        send, event, wake_at = options.get("send"), options.get("event"), options.get("wake_at")

        def write(conn: sqlite3.Connection) -> Record:
            # A body that ran in a batch that then fell back runs again: what
            # it noted the first time was rolled back with it.
            notes.clear()
            written = record
            self.write_record(conn, workflow_id, record, executor_id, wake_at)
            if record.kind in STREAM_KINDS and record.outcome is not None:
                notes.append(("stream", workflow_id))
            if consume is not None:
                _consume(conn, workflow_id, consume)
            if send is not None:
                if deliver(conn, send):
                    notes.append(("message", send.workflow_id))
                elif send.if_duplicate is not None:
                    # Whether the key was used is known only now, inside the
                    # transaction; the record written above says so before commit.
                    conn.execute(
                        SQL["record_duplicate_send"],
                        (dump_outcome(send.if_duplicate), workflow_id, record.position),
                    )
                    written = attrs.evolve(record, outcome=send.if_duplicate)
            if event is not None:
                value = dump(event.value)
                conn.execute(SQL["set_event"], (workflow_id, event.key, value))
                conn.execute(
                    SQL["mark_record_event"], (event.key, value, workflow_id, record.position)
                )
                notes.append(("event", workflow_id))
            return written

        return write

    def record_transaction(
        self, workflow_id: str, position: int, body: TransactionBody, **owner: Unpack[Owner]
    ) -> Record:
        executor_id = owner.get("executor_id")
        check_names(workflow_id, executor_id=executor_id)
        inside_body = self._writer.inside_body

        def write(conn: sqlite3.Connection) -> Record:
            stored = refusal(conn, workflow_id, position, None, executor_id)
            if stored is not None:
                raise Unchanged(stored)
            inside_body.active = True
            try:
                record = body(conn)
            except BaseException as exc:
                raise BodyFailed(exc) from exc
            finally:
                inside_body.active = False
            if not conn.in_transaction:
                raise StoreError(
                    f"workflow id {workflow_id!r} position {position}: the Transaction body "
                    "committed or rolled back the store's transaction itself; its writes may "
                    "have committed without the record. Let replaykit commit"
                )
            record = checked_transaction_record(workflow_id, position, record)
            self.write_record(conn, workflow_id, record, executor_id, None)
            return record

        # Alone: the body is the user's code, and it holds the connection.
        return self._writer.write_alone(write)

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        check_late_record(workflow_id, record, executor_id)
        params = record_params(workflow_id, record)

        def land(conn: sqlite3.Connection) -> Record:
            # The gates are checked here on the run, under the write lock; a pending
            # record is completed, a completed one never written over.
            row = run_owner(conn, workflow_id)
            check_late(row, workflow_id, executor_id)
            assert row is not None
            stored = first(conn.execute(SQL["get_record"], (workflow_id, record.position)))
            if stored is not None and stored[3] is not None:
                return record_from_row(stored, workflow_id)
            if stored is None and record.position > 0:
                length = log_length(conn, workflow_id)
                if length != record.position:
                    raise late_gap(row.name, workflow_id, record.position, length)
            conn.execute(SQL["record_late"], params)
            return record

        return self._writer.write(land)


def _consume(conn: sqlite3.Connection, workflow_id: str, consume: int | Sequence[int]) -> None:
    ids = [consume] if isinstance(consume, int) else list(consume)
    if not ids:
        return
    taken = conn.execute(SQL["consume_messages"], (workflow_id, id_set(ids))).fetchall()
    if len(taken) != len(ids):
        gone = sorted(set(ids) - {r[0] for r in taken}) or ids
        raise _consumed_error(workflow_id, gone)
