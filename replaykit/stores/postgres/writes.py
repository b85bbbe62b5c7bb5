"""The Store protocol's writes of records and finishes: through group commit where they
can be batched, one at a time where they cannot, and under the run's lock for a
Transaction's body or a late record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Unpack

import psycopg

from replaykit.errors import StoreError
from replaykit.log import Outcome, Record, Status
from replaykit.stores._checks import (
    check_names,
    check_write,
    refused_writes,
    storable_error,
)
from replaykit.stores._finish import checked_finish
from replaykit.stores._group import FALL_BACK
from replaykit.stores._late import check_late, check_late_record, late_gap
from replaykit.stores._many import (
    Answers,
    answered,
    checked_finishes,
    finishes_from_the_batch,
    finishes_of,
    from_the_batch,
    write_one_by_one,
    writes_of,
)
from replaykit.stores._rules import check_recordable, checked_transaction_record, gap_error
from replaykit.stores.base import (
    FinishWrite,
    RecordWrite,
    WorkflowRow,
)
from replaykit.stores.options import Ending, Owner, RecordOptions, TransactionBody
from replaykit.stores.postgres.batches import Batches
from replaykit.stores.postgres.database import Database
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import is_stream, record_from_row, record_params
from replaykit.stores.postgres.shapes import RecordShape
from replaykit.stores.postgres.single import Finish, PlainRecord, Single, Write

__all__ = ["Writes"]


class _BodyFailed(Exception):
    """Carries the user's exception from a Transaction body past our error mapping."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


class Writes(Room):
    """record, record_many, finish_workflow, finish_many, record_transaction, record_late."""

    def __init__(self, db: Database, single: Single, batches: Batches) -> None:
        super().__init__(db)
        self._single = single
        self._batches = batches

    def record(self, workflow_id: str, record: Record, **options: Unpack[RecordOptions]) -> Record:
        executor_id, consume = options.get("executor_id"), options.get("consume")
        send, event, wake_at = options.get("send"), options.get("event"), options.get("wake_at")
        check_write(workflow_id, record, executor_id, send, event)
        # A stream's record notifies its readers, as an event's does: the one-record
        # statement does that, the batch statement notifies nothing.
        if consume is None and send is None and event is None and not is_stream(record):
            stored = self._batches.group.submit(
                PlainRecord(workflow_id, record, executor_id, wake_at)
            )
            if stored is not FALL_BACK:
                return stored  # type: ignore[no-any-return]
        return self._single.record_one(
            workflow_id, record, executor_id, consume, send, event, wake_at
        )

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        """Plain records in group commit's batch statement; the rest one at a time.

        The plain records (no `consume`, `send` or `event`) go into the batches
        concurrent `record()` callers share: written together, one statement
        and one commit per batch. What a batch did not write (a refusal, a
        completed position, a failed statement) and the records with side
        effects take `record()`'s one-record path, in input order.
        """
        batch = writes_of(writes)
        if not batch:
            return []
        self._db.check_open()
        answers: Answers = [None] * len(batch)
        for index, refusal in refused_writes(batch).items():
            answers[index] = refusal
        plain = [
            i
            for i, w in enumerate(batch)
            if answers[i] is None
            and w.consume is None
            and w.send is None
            and w.event is None
            and not is_stream(w.record)
        ]
        items: list[Write] = [
            PlainRecord(
                batch[i].workflow_id, batch[i].record, batch[i].executor_id, batch[i].wake_at
            )
            for i in plain
        ]
        from_the_batch(answers, plain, self._batches.group.submit_many(items))
        # What the batch fell back on, and what it never took, in input order.
        rest = [i for i, answer in enumerate(answers) if answer is None]

        def one(index: int) -> Record:
            w = batch[index]
            return self._single.record_one(
                w.workflow_id, w.record, w.executor_id, w.consume, w.send, w.event, w.wake_at
            )

        write_one_by_one(batch, answers, rest, one)
        return answered(answers)

    def finish_workflow(
        self, workflow_id: str, status: Status, result: Outcome | None, **options: Unpack[Ending]
    ) -> bool:
        executor_id, error = options.get("executor_id"), options.get("error", "")
        last = checked_finish(workflow_id, executor_id, options.get("record"))
        finish = Finish(workflow_id, status, result, storable_error(error), executor_id, last)
        changed = self._batches.group.submit(finish)
        fell_back = changed is FALL_BACK
        if fell_back:
            changed = self._single.finish_one(finish)
        if changed or fell_back:
            # After a failed batch the run may have been finished by it, and
            # then the one-finish path says "not changed"; a needless wake-up
            # costs a read, a missing one a poll interval. Outside the batch:
            # a subscriber may call the store.
            self._db.tell([("finished", workflow_id)])
        return bool(changed)

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        """The finishes in group commit's batch statements, handed over from one thread."""
        batch = finishes_of(finishes)
        if not batch:
            return []
        self._db.check_open()
        answers: dict[int, bool | Exception] = {}
        items = checked_finishes(
            batch,
            answers,
            lambda f, last: Finish(
                f.workflow_id, f.status, f.result, storable_error(f.error), f.executor_id, last
            ),
        )
        taken = list(items)
        fell_back: set[int] = set()

        def alone(index: int) -> bool:
            fell_back.add(index)
            return self._single.finish_one(items[index])

        submitted = self._batches.group.submit_many(list(items.values()))
        answers.update(finishes_from_the_batch(taken, submitted, alone))
        done = [answers[index] for index in range(len(batch))]
        # As in finish_workflow: after a failed batch, the one-finish path may say
        # "not changed" of a run the batch did finish; a needless wake-up is cheap.
        self._db.tell(
            [
                ("finished", batch[i].workflow_id)
                for i in taken
                if done[i] is True or (i in fell_back and not isinstance(done[i], Exception))
            ]
        )
        return done

    def record_transaction(
        self, workflow_id: str, position: int, body: TransactionBody, **owner: Unpack[Owner]
    ) -> Record:
        executor_id = owner.get("executor_id")
        check_names(workflow_id, executor_id=executor_id)
        try:
            with self._db.connection() as conn, conn.transaction():
                stored = self._lock_for_transaction(conn, workflow_id, position, executor_id)
                if stored is not None:
                    return stored
                try:
                    record = body(conn)
                except BaseException as exc:
                    raise _BodyFailed(exc) from exc
                record = checked_transaction_record(workflow_id, position, record)
                params = record_params(workflow_id, record, self._db.shards.of(conn, workflow_id))
                params["wake_at"] = None
                shape = RecordShape(
                    executor=False,
                    first=position == 0,
                    consume=False,
                    send=False,
                    send_key=False,
                    event=False,
                )
                try:
                    written = conn.execute(self._single.statement(shape), params).fetchone()
                except psycopg.errors.InFailedSqlTransaction as exc:
                    raise StoreError(
                        f"workflow id {workflow_id!r} position {position}: a statement in the "
                        "Transaction body failed and the body carried on, so the transaction "
                        "can only roll back. Let the exception propagate from the body"
                    ) from exc
                if not written or not written[0]:
                    raise StoreError(
                        f"workflow id {workflow_id!r}: position {position} could not be "
                        "recorded while its run was locked"
                    )
                return record
        except _BodyFailed as failed:
            raise failed.error.with_traceback(failed.error.__traceback__) from None

    def _lock_for_transaction(
        self,
        conn: psycopg.Connection[Any],
        workflow_id: str,
        position: int,
        executor_id: str | None,
    ) -> Record | None:
        """Lock the run for a Transaction; return the stored record if `position` is done."""
        params = {
            "shard": self._db.shards.of(conn, workflow_id),
            "wid": workflow_id,
            "pos": position,
        }
        name, length, stored = self._locked_at(
            conn, workflow_id, params, executor_id, check_recordable
        )
        if stored is not None:
            return stored if stored.outcome is not None else None
        if position > length:
            raise gap_error(name, workflow_id, position, length)
        return None

    def _locked_at(
        self,
        conn: psycopg.Connection[Any],
        workflow_id: str,
        params: dict[str, Any],
        executor_id: str | None,
        check: Callable[[WorkflowRow | None, str, str | None], None],
    ) -> tuple[str, int, Record | None]:
        """Lock the run at `params`' position and `check` that it may be written: the run's
        name, its log's length, and the record the position holds (None if none)."""
        found = conn.execute(self._sql["lock_run_at_position"], params).fetchone()
        row = None
        if found is not None:
            row = WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
        check(row, workflow_id, executor_id)
        assert found is not None
        stored = None if found[4] is None else record_from_row(found[4:14], workflow_id)
        return found[0], found[3], stored

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        check_late_record(workflow_id, record, executor_id)
        with self._db.connection() as conn, conn.transaction():
            params = record_params(workflow_id, record, self._db.shards.of(conn, workflow_id))
            name, length, stored = self._locked_at(
                conn, workflow_id, params, executor_id, check_late
            )
            if stored is not None:
                if stored.outcome is not None:
                    return stored
            elif record.position != length:
                raise late_gap(name, workflow_id, record.position, length)
            conn.execute(self._sql["record_late"], params)
        return record
