"""`check_store`'s checks of a run's log written one record at a time: `record` and
`load_log`, pending records written over, refusals (gaps, missing or finished runs,
another executor), a wake time, concurrent writers, `record_transaction`, and
`record_late` into a run cancelled while its effect ran."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit.errors import RecordConflict, RunNotPending, TransactionUnsupported, WorkflowNotFound
from replaykit.log import ErrorInfo, Failure, Record, Status, Value
from replaykit.stores.base import EventWrite, OutgoingMessage, RecordWrite, Store
from replaykit.testing.conformance._support import (
    _T0,
    _all_at_once,
    _equal,
    _expect,
    _log_of,
    _pending,
    _present,
    _raised,
    _raises,
    _run,
    _step,
)

__all__ = [
    "check_completed_position_not_overwritten",
    "check_concurrent_writers_adopt",
    "check_executor_ownership",
    "check_pending_step_written_over_with_more_attempts",
    "check_record_and_load_log",
    "check_record_gap_refused",
    "check_record_into_missing_run",
    "check_record_into_non_pending_run",
    "check_record_late",
    "check_record_pending_then_completed",
    "check_record_sets_wake_at",
    "check_record_transaction",
]


def check_record_and_load_log(store: Store) -> None:
    store.create_workflow(_run("r-1"))
    _equal("load_log of a new run", [], _log_of(store, "r-1"))
    _equal("load_log of an unknown run", [], _log_of(store, "nope"))
    written = [_step(i, {"i": i}) for i in range(5)]
    for record in written:
        _equal(f"record() of new position {record.position}", record, store.record("r-1", record))
    _equal("load_log returns the records in position order", written, _log_of(store, "r-1"))
    _equal(
        "load_log(since=3) returns the records from position 3",
        written[3:],
        store.load_log("r-1", since=3),
    )
    _equal("load_log(since=) past the end is empty", [], store.load_log("r-1", since=9))


def check_record_pending_then_completed(store: Store) -> None:
    store.create_workflow(_run("r-2"))
    wake = _T0 + timedelta(days=1)
    pending = _pending(0, started_at=_T0, wake_at=wake)
    _equal("record() of a pending record", pending, store.record("r-2", pending))
    _equal(
        "record() of another pending record at a pending position returns the stored one",
        pending,
        store.record("r-2", _pending(0, name="other")),
    )
    _equal("log holding a pending record", [pending], _log_of(store, "r-2"))
    done = Record(0, "sleep", "p0", Value(None), started_at=_T0, completed_at=wake, wake_at=wake)
    _equal("record() completing a pending position", done, store.record("r-2", done))
    _equal("log after completing the pending record", [done], _log_of(store, "r-2"))
    _equal(
        "record() of a pending record at a completed position returns the completed one",
        done,
        store.record("r-2", _pending(0)),
    )


def _wake_of(store: Store, workflow_id: str) -> datetime | None:
    row = _present(f"the run {workflow_id!r}", store.get_workflow(workflow_id))
    return row.wake_at


def check_pending_step_written_over_with_more_attempts(store: Store) -> None:
    """A retried step's back-off lives in its pending record: each later back-off
    writes more attempts and a new wake instant over it (and the run's wake_at);
    a write with equal or fewer attempts, or of another command, changes nothing."""
    store.create_workflow(_run("ra-1"))
    first_due = _T0 + timedelta(minutes=1)
    first = _pending(0, kind="step", name="charge", started_at=_T0, wake_at=first_due)
    store.record("ra-1", first, wake_at=first_due)
    second_due = _T0 + timedelta(minutes=3)
    second = attrs.evolve(first, attempts=2, wake_at=second_due)
    _equal(
        "record() of a pending record with more attempts returns it",
        second,
        store.record("ra-1", second, wake_at=second_due),
    )
    _equal("log after a back-off with more attempts", [second], _log_of(store, "ra-1"))
    _equal("run's wake_at after a back-off with more attempts", second_due, _wake_of(store, "ra-1"))
    late = _T0 + timedelta(days=1)
    for what, stale in (
        ("equal attempts (a retried write)", attrs.evolve(second, wake_at=late)),
        ("fewer attempts (a stale writer)", attrs.evolve(first, wake_at=late)),
        ("more attempts of another name", attrs.evolve(second, name="refund", attempts=5)),
        ("more attempts of another kind", attrs.evolve(second, kind="sleep", attempts=5)),
    ):
        _equal(
            f"record() of a pending record with {what} returns the stored one",
            second,
            store.record("ra-1", stale, wake_at=late),
        )
        _equal(f"log after a pending record with {what}", [second], _log_of(store, "ra-1"))
        _equal(f"run's wake_at after {what}", second_due, _wake_of(store, "ra-1"))
    done = Record(
        0, "step", "charge", Value("ok"), started_at=_T0, completed_at=second_due, attempts=3
    )
    _equal("record() completing the retried step", done, store.record("ra-1", done))
    _equal(
        "record() of a pending record with more attempts over a completed one",
        done,
        store.record("ra-1", attrs.evolve(second, attempts=9), wake_at=late),
    )
    _equal("log after the retried step completed", [done], _log_of(store, "ra-1"))
    _equal("run's wake_at after the completion", None, _wake_of(store, "ra-1"))

    # record_many: a batch of back-offs (one statement on PostgreSQL), beside
    # writes it must refuse, and a later position.
    wids = ("ra-2", "ra-3", "ra-4", "ra-5")
    for wid in wids:
        store.create_workflow(_run(wid))
        store.record(wid, _step(0))
        store.record(wid, attrs.evolve(first, position=1), wake_at=first_due)
    stale = attrs.evolve(first, position=1, wake_at=late)
    newer = attrs.evolve(second, position=1)
    answers = store.record_many(
        [
            RecordWrite("ra-2", newer, wake_at=second_due),
            RecordWrite("ra-3", attrs.evolve(newer, attempts=4), wake_at=second_due),
            RecordWrite("ra-4", stale, wake_at=late),
            RecordWrite("ra-5", attrs.evolve(newer, name="other"), wake_at=late),
        ]
    )
    kept = attrs.evolve(first, position=1)
    _equal(
        "record_many of back-offs answers what each position holds",
        [newer, attrs.evolve(newer, attempts=4), kept, kept],
        answers,
    )
    for wid, record, wake in (
        ("ra-2", newer, second_due),
        ("ra-3", attrs.evolve(newer, attempts=4), second_due),
        ("ra-4", kept, first_due),
        ("ra-5", kept, first_due),
    ):
        _equal(
            f"log of {wid} after record_many of back-offs", [_step(0), record], _log_of(store, wid)
        )
        _equal(f"run's wake_at of {wid} after record_many of back-offs", wake, _wake_of(store, wid))


def check_completed_position_not_overwritten(store: Store) -> None:
    store.create_workflow(_run("r-3"))
    first = _step(0, "first writer")
    store.record("r-3", first)
    second = _step(0, "second writer", attempts=3)
    _equal(
        "record() over a completed position returns the first record",
        first,
        store.record("r-3", second),
    )
    failure = Record(0, "step", "s0", Failure(ErrorInfo("builtins", "ValueError", "x", ["x"])))
    _equal("record() of a failure over a completed position", first, store.record("r-3", failure))
    _equal("log after two writers", [first], _log_of(store, "r-3"))


def check_record_gap_refused(store: Store) -> None:
    store.create_workflow(_run("r-4"))
    _raises(
        "record() at position 1 of an empty log",
        RecordConflict,
        lambda: store.record("r-4", _step(1)),
    )
    store.record("r-4", _step(0))
    _raises(
        "record() at position 2 when the log ends at 1",
        RecordConflict,
        lambda: store.record("r-4", _pending(2)),
    )
    _equal("log after refused gaps", [_step(0)], _log_of(store, "r-4"))


def check_record_into_missing_run(store: Store) -> None:
    _raises(
        "record() into an unknown run", WorkflowNotFound, lambda: store.record("nope", _step(0))
    )
    _equal("log of the unknown run", [], _log_of(store, "nope"))


def check_record_into_non_pending_run(store: Store) -> None:
    store.create_workflow(_run("target"))
    for status in (Status.ENQUEUED, Status.SUCCESS, Status.ERROR, Status.CANCELLED, Status.PARKED):
        _check_refused_into(store, status)
    _equal("inbox of the send target", None, store.peek_message("target", "t"))


def _check_refused_into(store: Store, status: Status) -> None:
    wid = f"r-5-{status.value}"
    store.create_workflow(_run(wid, status=status), records=[_step(0)])
    store.send_message(wid, "t", "m")
    message = _present("peek_message after send", store.peek_message(wid, "t"))

    def refused() -> Record:
        return store.record(
            wid,
            _step(1),
            consume=message.message_id,
            send=OutgoingMessage("target", "t", "sent"),
            event=EventWrite("k", 1),
            wake_at=_T0,
        )

    _raises(f"record() into a {status.value} run", RecordConflict, refused)
    _raises(
        f"record() of a plain new position into a {status.value} run",
        RecordConflict,
        lambda: store.record(wid, _step(1)),
    )
    _raises(
        f"record() of a completed position into a {status.value} run",
        RecordConflict,
        lambda: store.record(wid, _step(0)),
    )
    _equal(f"log of the {status.value} run", [_step(0)], _log_of(store, wid))
    _equal(f"inbox of the {status.value} run", message, store.peek_message(wid, "t"))
    _equal(f"event of the {status.value} run", (False, None), store.get_event(wid, "k"))
    row = store.get_workflow(wid)
    _equal(f"wake_at of the {status.value} run", None, row.wake_at if row else "missing")


def check_executor_ownership(store: Store) -> None:
    store.create_workflow(_run("r-6", executor_id="engine-a"))
    _raises(
        "record() by another executor",
        RecordConflict,
        lambda: store.record("r-6", _step(0), executor_id="engine-b"),
    )
    _equal("log after a foreign executor's record", [], _log_of(store, "r-6"))
    _equal("record() by the owner", _step(0), store.record("r-6", _step(0), executor_id="engine-a"))
    _equal("record() without executor_id skips the check", _step(1), store.record("r-6", _step(1)))
    store.set_status("r-6", Status.PENDING, executor_id="engine-b")
    _raises(
        "record() by the previous owner after a takeover",
        RecordConflict,
        lambda: store.record("r-6", _step(2), executor_id="engine-a"),
    )
    _equal(
        "record() by the new owner", _step(2), store.record("r-6", _step(2), executor_id="engine-b")
    )


def check_record_sets_wake_at(store: Store) -> None:
    store.create_workflow(_run("r-7"))
    wake = _T0 + timedelta(hours=1)
    store.record("r-7", _pending(0, wake_at=wake), wake_at=wake)
    row = store.get_workflow("r-7")
    _equal("run's wake_at after record(wake_at=...)", wake, row.wake_at if row else None)
    store.record("r-7", _pending(0), wake_at=wake + timedelta(days=9))
    row = store.get_workflow("r-7")
    _equal("run's wake_at after a record() that wrote nothing", wake, row.wake_at if row else None)
    store.record("r-7", _step(0))
    row = store.get_workflow("r-7")
    _equal("run's wake_at after record() without wake_at", None, row.wake_at if row else "missing")


def check_concurrent_writers_adopt(store: Store) -> None:
    store.create_workflow(_run("r-8"))
    store.record("r-8", _step(0))
    threads = 8
    results = _all_at_once(
        [functools.partial(store.record, "r-8", _step(1, f"writer {i}")) for i in range(threads)]
    )
    _equal("exceptions from concurrent record() of one position", [], _raised(results))
    log = _log_of(store, "r-8")
    _equal("log length after concurrent writers", 2, len(log))
    _equal("what every concurrent writer got back", [log[1]] * threads, results)


def check_record_transaction(store: Store) -> None:
    store.create_workflow(_run("tx-1"))
    store.record("tx-1", _step(0))
    calls: list[Any] = []

    def body(conn: Any) -> Record:
        calls.append(conn)
        return _step(1, "from the transaction")

    try:
        result = store.record_transaction("tx-1", 1, body)
    except TransactionUnsupported:
        _equal("body calls when record_transaction is unsupported", [], calls)
        _equal("log when record_transaction is unsupported", [_step(0)], _log_of(store, "tx-1"))
        return
    _equal("record_transaction calls body once", 1, len(calls))
    _expect(calls[0] is not None, "connection given to the body", "a connection", calls[0])
    _equal("record_transaction returns the body's record", _step(1, "from the transaction"), result)
    _equal("log after record_transaction", [_step(0), result], _log_of(store, "tx-1"))
    calls.clear()
    _equal(
        "record_transaction of a completed position returns the stored record",
        _step(0),
        store.record_transaction("tx-1", 0, body),
    )
    _equal("body calls for a completed position", [], calls)

    class Boom(Exception):
        pass

    def failing(conn: Any) -> Record:
        raise Boom("body failed")

    _raises(
        "record_transaction whose body raises",
        Boom,
        lambda: store.record_transaction("tx-1", 2, failing),
    )
    _equal("log after a failing body", 2, len(_log_of(store, "tx-1")))
    _raises(
        "record_transaction at a gap",
        RecordConflict,
        lambda: store.record_transaction("tx-1", 5, body),
    )
    _equal("body calls for a gap", [], calls)
    store.set_status("tx-1", Status.CANCELLED)
    _raises(
        "record_transaction into a CANCELLED run",
        RecordConflict,
        lambda: store.record_transaction("tx-1", 2, body),
    )
    _equal("body calls for a CANCELLED run", [], calls)
    _raises(
        "record_transaction into an unknown run",
        WorkflowNotFound,
        lambda: store.record_transaction("nope", 0, body),
    )


def check_record_late(store: Store) -> None:
    """A completed record lands in a run cancelled while its effect ran (`record_late`):
    only into a CANCELLED run, by its executor, at the next position; idempotent."""
    store.create_workflow(_run("late-1", executor_id="ex-a"))
    store.record("late-1", _step(0, "first"), executor_id="ex-a")
    _raises(
        "record_late() into a PENDING run",
        RunNotPending,
        lambda: store.record_late("late-1", _step(1, "x"), executor_id="ex-a"),
    )
    store.set_status("late-1", Status.CANCELLED)
    _raises(
        "record() into the CANCELLED run",
        RunNotPending,
        lambda: store.record("late-1", _step(1, "second"), executor_id="ex-a"),
    )
    _raises(
        "record_late() by another executor",
        RecordConflict,
        lambda: store.record_late("late-1", _step(1, "second"), executor_id="ex-b"),
    )
    _raises(
        "record_late() past the log's end",
        RecordConflict,
        lambda: store.record_late("late-1", _step(2, "gap"), executor_id="ex-a"),
    )
    _raises(
        "record_late() of a pending record",
        ValueError,
        lambda: store.record_late("late-1", _pending(1), executor_id="ex-a"),
    )
    _equal(
        "record_late() of the next position",
        _step(1, "second"),
        store.record_late("late-1", _step(1, "second"), executor_id="ex-a"),
    )
    _equal(
        "record_late() again (a retry after a lost acknowledgement)",
        _step(1, "second"),
        store.record_late("late-1", _step(1, "other"), executor_id="ex-a"),
    )
    _equal(
        "the log after the late record",
        [_step(0, "first"), _step(1, "second")],
        _log_of(store, "late-1"),
    )
    _equal(
        "the run's status after the late record",
        Status.CANCELLED,
        _present("the run", store.get_workflow("late-1")).status,
    )
    # A pending record there (a sleep's start, a step's back-off) is completed.
    store.create_workflow(_run("late-2"))
    store.record("late-2", _pending(0, kind="step", name="s0"))
    store.set_status("late-2", Status.CANCELLED)
    _equal(
        "record_late() completing a pending record",
        _step(0, "done"),
        store.record_late("late-2", _step(0, "done")),
    )
    _equal("the log after completing", [_step(0, "done")], _log_of(store, "late-2"))
    _raises(
        "record_late() into a run that does not exist",
        WorkflowNotFound,
        lambda: store.record_late("late-none", _step(0)),
    )
