"""`check_store`: the conformance suite every `Store` implementation must pass.

Run it against your own store the way trio's `check_one_way_stream` is run
against a stream::

    from replaykit.testing import check_store

    def test_my_store(tmp_path):
        check_store(lambda: MyStore(tmp_path / "db"))

Each check gets a fresh, empty store from `make_store()` and closes it
afterwards. Every check runs, and one `AssertionError` then names each check
that failed with what it expected and what it got. The checks follow the
guarantees written in `replaykit.stores.base`; a check failing here means the
runtime would misbehave on top of the store.
"""

from __future__ import annotations

import functools
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs

from replaykit.errors import (
    DuplicateDedupId,
    RecordConflict,
    RunNotPending,
    TransactionUnsupported,
    WorkflowNotFound,
)
from replaykit.log import (
    CLOSE_STREAM_KIND,
    WRITE_STREAM_KIND,
    ErrorInfo,
    Failure,
    Record,
    Status,
    StreamCursor,
    Value,
)
from replaykit.stores.base import (
    MAX_NAME_BYTES,
    ClaimLimits,
    EventWrite,
    FinishWrite,
    OutgoingMessage,
    RecordWrite,
    ScheduleSpec,
    Store,
    WorkflowFilter,
    WorkflowRow,
)
from replaykit.testing._checking import (
    _NOTIFY_WAIT,
    _T0,
    _CheckFailed,
    _equal,
    _expect,
    _ids,
    _log_of,
    _pending,
    _present,
    _raises,
    _run,
    _step,
)

__all__ = ["STORE_CHECKS", "check_store"]


def _wait_for(predicate: Callable[[], bool], timeout: float = _NOTIFY_WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _aware_utc(what: str, value: datetime | None) -> None:
    _expect(
        value is not None and value.utcoffset() == timedelta(0),
        f"{what} is a timezone-aware UTC datetime",
        "an aware datetime with offset 0",
        value,
    )


# -- runs ---------------------------------------------------------------------


def check_create_returns_stored_row(store: Store) -> None:
    row = _run(
        "c-1",
        inputs={"args": [1, "two"], "kwargs": {"x": [3.5, None]}},
        executor_id="exec-a",
        app_version="v1",
        parent_id="parent",
        queue="q",
        priority=7,
        dedup_id="d",
        error="",
    )
    stored, created = store.create_workflow(row)
    _equal("create_workflow(new row) created flag", True, created)
    _aware_utc("created_at of a new run", stored.created_at)
    _aware_utc("updated_at of a new run", stored.updated_at)
    _equal("started_at of a new PENDING run", stored.created_at, stored.started_at)
    _equal(
        "create_workflow(new row) returns the row with timestamps filled in",
        row,
        _strip_times(stored),
    )
    _equal("get_workflow after create", stored, store.get_workflow("c-1"))
    _equal("get_workflow of an unknown id", None, store.get_workflow("nope"))


def _strip_times(row: WorkflowRow | None) -> WorkflowRow | None:
    if row is None:
        return None
    return attrs.evolve(row, created_at=None, updated_at=None, started_at=None)


def check_create_is_idempotent(store: Store) -> None:
    first, _ = store.create_workflow(_run("c-2", inputs={"args": [1]}, executor_id="a"))
    store.record("c-2", _step(0, "kept"))
    again, created = store.create_workflow(
        _run("c-2", name="other", inputs={"args": [2]}, executor_id="b", status=Status.ENQUEUED),
        records=[_step(0, "replaced"), _step(1, "added")],
    )
    _equal("create_workflow(existing id) created flag", False, created)
    _equal("create_workflow(existing id) returns the existing run unmodified", first, again)
    _equal("the existing run after a second create", first, store.get_workflow("c-2"))
    _equal("the existing log after a second create", [_step(0, "kept")], _log_of(store, "c-2"))


def check_created_at_kept_when_given(store: Store) -> None:
    given = datetime(2020, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)
    stored, _ = store.create_workflow(_run("c-3", created_at=given, updated_at=given))
    _equal("created_at given to create_workflow", given, stored.created_at)
    fetched = store.get_workflow("c-3")
    _equal("created_at read back", given, fetched.created_at if fetched else None)
    _equal("updated_at read back", given, fetched.updated_at if fetched else None)


def check_fork_with_records(store: Store) -> None:
    records = [
        _step(0, {"a": 1}, digest="d0", call_site="wf.py:3"),
        Record(1, "recv", "inbox", Value(None), started_at=_T0, completed_at=_T0),
    ]
    _, created = store.create_workflow(_run("f-1"), records=records)
    _equal("create_workflow(records=...) created flag", True, created)
    _equal("the forked run's log", records, _log_of(store, "f-1"))
    _equal(
        "record() at a completed forked position returns the stored record",
        records[1],
        store.record("f-1", _step(1, "other")),
    )
    _equal("record() right after the forked records", _step(2), store.record("f-1", _step(2)))
    _equal("log after recording past the fork", [*records, _step(2)], _log_of(store, "f-1"))


def check_fork_sets_the_events_its_records_set(store: Store) -> None:
    def set_event(position: int, key: str) -> Record:
        return Record(position, "set_event", key, Value(None), digest=f"d{position}")

    store.create_workflow(_run("fe-src"))
    store.record("fe-src", set_event(0, "k"), event=EventWrite("k", {"v": 1}))
    store.record("fe-src", set_event(1, "k"), event=EventWrite("k", {"v": 2}))
    store.record("fe-src", set_event(2, "j"), event=EventWrite("j", "x"))
    store.record("fe-src", _step(3))
    log = _log_of(store, "fe-src")
    notes: list[tuple[str, str]] = []
    unsubscribe = store.subscribe(lambda kind, key: notes.append((kind, key)))
    try:
        for cut, k, j in (
            (0, (False, None), (False, None)),
            (1, (True, {"v": 1}), (False, None)),
            (2, (True, {"v": 2}), (False, None)),
            (4, (True, {"v": 2}), (True, "x")),
        ):
            fork = f"fe-fork-{cut}"
            _, created = store.create_workflow(_run(fork), records=log[:cut], fork_of="fe-src")
            _equal(f"a fork of the first {cut} records created", True, created)
            _equal(
                f"the log of the fork of the first {cut} records", log[:cut], _log_of(store, fork)
            )
            _equal(
                f"event 'k' of the fork of the first {cut} records", k, store.get_event(fork, "k")
            )
            _equal(
                f"event 'j' of the fork of the first {cut} records", j, store.get_event(fork, "j")
            )
        _expect(
            _wait_for(lambda: ("event", "fe-fork-4") in notes),
            "a fork that gets events notifies ('event', its id)",
            ("event", "fe-fork-4"),
            notes,
        )
    finally:
        unsubscribe()
    store.create_workflow(_run("fe-fork-of-fork"), records=log[:1], fork_of="fe-fork-4")
    _equal(
        "event 'k' of a fork of a fork", (True, {"v": 1}), store.get_event("fe-fork-of-fork", "k")
    )
    _equal("the source's event after its forks", (True, {"v": 2}), store.get_event("fe-src", "k"))
    store.record("fe-fork-1", set_event(1, "k"), event=EventWrite("k", {"v": 3}))
    _equal("a fork sets its own events", (True, {"v": 3}), store.get_event("fe-fork-1", "k"))
    _equal("... and not its source's", (True, {"v": 2}), store.get_event("fe-src", "k"))


def check_started_at_on_create(store: Store) -> None:
    pending, _ = store.create_workflow(_run("c-4", created_at=_T0))
    _equal("started_at of a PENDING run created without one", _T0, pending.started_at)
    queued, _ = store.create_workflow(_run("c-5", status=Status.ENQUEUED, queue="q"))
    _equal("started_at of an ENQUEUED run", None, queued.started_at)
    given = _T0 - timedelta(days=1)
    kept, _ = store.create_workflow(_run("c-6", created_at=_T0, started_at=given))
    _equal("started_at given to create_workflow", given, kept.started_at)
    for wid, expected in (("c-4", _T0), ("c-5", None), ("c-6", given)):
        row = store.get_workflow(wid)
        _equal(f"started_at of {wid} read back", expected, row.started_at if row else "missing")


def check_dedup_id(store: Store) -> None:
    first, _ = store.create_workflow(
        _run("dd-1", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
    )
    error = _raises(
        "create_workflow reusing a live dedup_id",
        DuplicateDedupId,
        lambda: store.create_workflow(
            _run("dd-2", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
        ),
    )
    _equal("DuplicateDedupId.existing_id", "dd-1", getattr(error, "existing_id", None))
    _equal("the refused run", None, store.get_workflow("dd-2"))
    _equal(
        "create_workflow of the holder's own id",
        (first, False),
        store.create_workflow(_run("dd-1", status=Status.ENQUEUED, queue="q", dedup_id="user-7")),
    )
    for wid, queue, dedup in (
        ("dd-3", "other", "user-7"),
        ("dd-4", "q", None),
        ("dd-5", None, "user-7"),
    ):
        _, created = store.create_workflow(
            _run(wid, status=Status.ENQUEUED, queue=queue, dedup_id=dedup)
        )
        _equal(f"create_workflow with queue={queue!r} dedup_id={dedup!r}", True, created)
    store.set_status("dd-1", Status.PENDING)
    _raises(
        "create_workflow reusing the dedup_id of a PENDING run",
        DuplicateDedupId,
        lambda: store.create_workflow(
            _run("dd-6", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
        ),
    )
    store.finish_workflow("dd-1", Status.SUCCESS, Value(None))
    _, created = store.create_workflow(
        _run("dd-7", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
    )
    _equal("create_workflow reusing the dedup_id of a finished run", True, created)


def _queued(workflow_id: str, **fields: Any) -> WorkflowRow:
    fields.setdefault("queue", "q")
    fields.setdefault("app_version", "v1")
    fields.setdefault("executor_id", "")
    return _run(workflow_id, status=Status.ENQUEUED, **fields)


def _answered(answers: list[tuple[WorkflowRow, bool]]) -> list[tuple[str, bool]]:
    return [(row.workflow_id, created) for row, created in answers]


def check_create_many_new_rows(store: Store) -> None:
    _equal("create_workflows([])", [], store.create_workflows([]))
    rows = [
        _run("m-3", inputs={"args": [1, "two"], "kwargs": {}}, executor_id="a", created_at=_T0),
        _queued("m-1", priority=2, parent_id="m-3", inputs={"args": [[3.5, None]]}),
        _queued("m-2", dedup_id="d-2", created_at=_T0, wake_at=_T0 + timedelta(hours=1)),
        _run("m-0", status=Status.SUCCESS, result=Value({"done": True}), error="x"),
    ]
    answers = store.create_workflows(rows)
    _equal(
        "create_workflows(new rows): ids and created flags, in input order",
        [("m-3", True), ("m-1", True), ("m-2", True), ("m-0", True)],
        _answered(answers),
    )
    for given, (stored, _) in zip(rows, answers, strict=True):
        wid = given.workflow_id
        _aware_utc(f"created_at of {wid}", stored.created_at)
        _aware_utc(f"updated_at of {wid}", stored.updated_at)
        _equal(
            f"create_workflows returns {wid} with timestamps filled in",
            _strip_times(given),
            _strip_times(stored),
        )
        _equal(f"get_workflow({wid!r}) after create_workflows", stored, store.get_workflow(wid))
        _equal(f"the log of {wid}", [], _log_of(store, wid))
    _equal("created_at given to create_workflows", _T0, answers[0][0].created_at)
    _equal("started_at of a PENDING run created in a batch", _T0, answers[0][0].started_at)
    _equal("started_at of an ENQUEUED run created in a batch", None, answers[1][0].started_at)


def check_create_many_round_trips_payloads(store: Store) -> None:
    inputs = {
        "args": ["nul \x00 inside", 'tab\tquote"\\ \u2028 😀 工作流', 2**70, 1e300, 0.1, [[]]],
        "kwargs": {"z": 1, "a": {"m": None, "b": True}},
    }
    failure = Failure(
        ErrorInfo(
            module="myapp.errors",
            qualname="Outer.Declined",
            message="nul \x00 and ✓",
            args=["x", 402, {"retry": False}],
            traceback="Traceback (most recent call last):\n  x\n",
        )
    )
    rows = [
        _run("ünï-çødé 🚀 m-p1", name="名前 ✓", inputs=inputs, error="ошибка ✓"),
        _run("m-p2", status=Status.ERROR, result=failure, queue="тема/🙂", dedup_id="ключ 🔑"),
        _run("m-p3", status=Status.SUCCESS, result=Value({"z": [1.5, None], "a": "\x00"})),
    ]
    answers = store.create_workflows(rows)
    for given, (stored, _) in zip(rows, answers, strict=True):
        fetched = store.get_workflow(given.workflow_id)
        _equal(f"{given.workflow_id} read back after create_workflows", stored, fetched)
        _equal(
            f"{given.workflow_id} as given to create_workflows",
            _strip_times(given),
            _strip_times(fetched),
        )
    fetched = store.get_workflow(rows[0].workflow_id)
    kwargs = fetched.inputs["kwargs"] if fetched else {}
    _equal("key order of inputs created in a batch", ["z", "a"], list(kwargs))
    _equal("key order of a nested object", ["m", "b"], list(kwargs.get("a", {})))


def check_create_many_with_existing(store: Store) -> None:
    first, _ = store.create_workflow(_run("mx-1", inputs={"args": [1]}, executor_id="a"))
    store.record("mx-1", _step(0, "kept"))
    answers = store.create_workflows(
        [
            _run("mx-2"),
            _queued("mx-1", name="other", inputs={"args": [2]}),
            _queued("mx-3", priority=1),
            _run("mx-2", name="again", inputs={"args": [9]}),
        ]
    )
    _equal(
        "create_workflows(new and existing ids): ids and created flags, in input order",
        [("mx-2", True), ("mx-1", False), ("mx-3", True), ("mx-2", False)],
        _answered(answers),
    )
    _equal("create_workflows answers an existing id with the run unmodified", first, answers[1][0])
    _equal("the existing run after create_workflows", first, store.get_workflow("mx-1"))
    _equal("the existing log after create_workflows", [_step(0, "kept")], _log_of(store, "mx-1"))
    _equal(
        "an id given twice in one batch: the second answers the first's row",
        answers[0][0],
        answers[3][0],
    )
    _equal("the run created once from an id given twice", answers[0][0], store.get_workflow("mx-2"))
    mx3 = store.get_workflow("mx-3")
    _equal(
        "create_workflows of existing ids only",
        [(mx3, False), (first, False)],
        store.create_workflows([_run("mx-3", name="x"), _run("mx-1", status=Status.ENQUEUED)]),
    )


def check_create_many_dedup(store: Store) -> None:
    store.create_workflow(_queued("md-1", dedup_id="u-1"))

    def refused(what: str, rows: list[WorkflowRow], holder: str, dedup: str) -> None:
        error = _raises(what, DuplicateDedupId, lambda: store.create_workflows(rows))
        _equal(f"{what}: DuplicateDedupId.existing_id", holder, getattr(error, "existing_id", None))
        _expect(repr(dedup) in str(error), f"{what}: the message names", repr(dedup), str(error))
        _equal(
            f"{what}: the rows of the refused batch (nothing written)",
            [None] * len(rows),
            [store.get_workflow(r.workflow_id) for r in rows],
        )

    refused(
        "create_workflows reusing the dedup_id of a live run",
        [_queued("md-2", dedup_id="u-2"), _queued("md-3", dedup_id="u-1"), _run("md-4")],
        "md-1",
        "u-1",
    )
    refused(
        "create_workflows with one dedup_id on two new rows",
        [_queued("md-5", dedup_id="u-5"), _run("md-6"), _queued("md-7", dedup_id="u-5")],
        "md-5",
        "u-5",
    )
    store.set_status("md-1", Status.PENDING)
    refused(
        "create_workflows reusing the dedup_id of a PENDING run",
        [_queued("md-8", dedup_id="u-1")],
        "md-1",
        "u-1",
    )
    store.finish_workflow("md-1", Status.SUCCESS, Value(None))
    store.create_workflow(_queued("md-9", dedup_id="u-9"))
    answers = store.create_workflows(
        [
            _queued("md-10", dedup_id="u-1"),  # its holder finished
            _queued("md-11", queue="other", dedup_id="u-1"),
            _queued("md-12", queue=None, dedup_id="u-1"),
            _queued("md-9", dedup_id="u-9"),  # the holder's own id
            _queued("md-9", dedup_id="u-13"),  # an existing id takes no dedup_id
            _queued("md-13", dedup_id="u-13"),
            _queued("md-14", dedup_id="u-14"),
            _queued("md-14", dedup_id="u-14"),  # the same id again: answered, not refused
            _run("md-15", status=Status.CANCELLED, queue="q", dedup_id="u-15"),  # not live
            _queued("md-16", dedup_id="u-15"),
        ]
    )
    _equal(
        "create_workflows with dedup_ids no live run holds",
        [
            ("md-10", True),
            ("md-11", True),
            ("md-12", True),
            ("md-9", False),
            ("md-9", False),
            ("md-13", True),
            ("md-14", True),
            ("md-14", False),
            ("md-15", True),
            ("md-16", True),
        ],
        _answered(answers),
    )


def check_create_many_notifies_once_per_queue(store: Store) -> None:
    store.create_workflow(_queued("mn-0", queue="c"))
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def callback(kind: str, key: str) -> None:
        with lock:
            seen.append((kind, key))

    def enqueued() -> list[str]:
        with lock:
            return sorted(key for kind, key in seen if kind == "enqueued")

    unsubscribe = store.subscribe(callback)
    try:
        store.create_workflows(
            [
                _queued("mn-1", queue="a"),
                _queued("mn-2", queue="b"),
                _queued("mn-3", queue="a"),
                _run("mn-4", queue="c"),  # PENDING: nothing to claim
                _queued("mn-0", queue="c"),  # exists already
                _queued("mn-5", queue="a"),
            ]
        )
        _expect(
            _wait_for(lambda: enqueued() == ["a", "b"]),
            "notifications of create_workflows",
            ["a", "b"],
            enqueued(),
        )
        time.sleep(0.2)
        _equal(
            "('enqueued', queue) notifications of create_workflows, once per queue",
            ["a", "b"],
            enqueued(),
        )
        with lock:
            seen.clear()
        store.create_workflow(_queued("mn-6", queue="d", dedup_id="x"))
        _expect(
            _wait_for(lambda: enqueued() == ["d"]), "notification of a create", ["d"], enqueued()
        )
        with lock:
            seen.clear()
        _raises(
            "create_workflows reusing a live dedup_id",
            DuplicateDedupId,
            lambda: store.create_workflows(
                [_queued("mn-7", queue="e"), _queued("mn-8", queue="d", dedup_id="x")]
            ),
        )
        store.create_workflows([_queued("mn-1", queue="a"), _queued("mn-6", queue="d")])
        time.sleep(0.2)
        _equal("notifications of a refused batch and of a batch of existing ids", [], enqueued())
    finally:
        unsubscribe()


def check_create_many_then_claim(store: Store) -> None:
    now = datetime.now(UTC) + timedelta(hours=1)
    store.create_workflows(
        [
            _queued("cm-late", priority=3),
            _queued("cm-z"),
            _queued("cm-m"),
            _queued("cm-delayed", priority=-5, wake_at=now + timedelta(seconds=1)),
            _queued("cm-a"),
            _queued("cm-urgent", priority=-1),
            _queued("cm-other", queue="other"),
        ]
    )

    def claim(limit: int, at: datetime = now) -> list[WorkflowRow]:
        return store.claim(
            "q", executor_id="e1", app_version="v1", limits=ClaimLimits(limit), now=at
        )

    first = claim(2)
    _equal(
        "claim of a batch: priority first, then the batch's own order",
        ["cm-urgent", "cm-z"],
        _ids(first),
    )
    rest = claim(100)
    _equal("claim of the rest of the batch", ["cm-m", "cm-a", "cm-late"], _ids(rest))
    for row in [*first, *rest]:
        _equal(f"status of claimed {row.workflow_id}", Status.PENDING, row.status)
        _equal(f"claimed {row.workflow_id} as stored", store.get_workflow(row.workflow_id), row)
        _expect(
            row.has_log in (False, None),
            f"has_log of {row.workflow_id}, created in a batch",
            "False (or None)",
            row.has_log,
        )
    _equal("claim after the delay", ["cm-delayed"], _ids(claim(100, now + timedelta(seconds=1))))


# -- recording ----------------------------------------------------------------


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
    barrier = threading.Barrier(threads)
    results: list[Any] = [None] * threads

    def write(index: int) -> None:
        barrier.wait()
        try:
            results[index] = store.record("r-8", _step(1, f"writer {index}"))
        except BaseException as exc:
            results[index] = exc

    workers = [threading.Thread(target=write, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    errors = [r for r in results if isinstance(r, BaseException)]
    _equal("exceptions from concurrent record() of one position", [], errors)
    log = _log_of(store, "r-8")
    _equal("log length after concurrent writers", 2, len(log))
    _equal("what every concurrent writer got back", [log[1]] * threads, results)


# -- record side effects --------------------------------------------------------


def check_consume_with_record(store: Store) -> None:
    store.create_workflow(_run("m-1"))
    store.send_message("m-1", "t", "first")
    store.send_message("m-1", "t", "second")
    first = _present("peek_message after two sends", store.peek_message("m-1", "t"))
    _equal("payload of the oldest message", "first", first.payload)
    store.record("m-1", Record(0, "recv", "t", Value("first")), consume=first.message_id)
    second = store.peek_message("m-1", "t")
    _equal("payload after consuming the oldest", "second", second.payload if second else None)
    _raises(
        "record() consuming an already consumed message",
        RecordConflict,
        lambda: store.record("m-1", Record(1, "recv", "t", Value("x")), consume=first.message_id),
    )
    _equal("log after consuming a gone message", 1, len(_log_of(store, "m-1")))
    _equal("inbox after the refused consume", second, store.peek_message("m-1", "t"))


def check_consume_is_atomic(store: Store) -> None:
    store.create_workflow(_run("m-2"))
    store.create_workflow(_run("m-2-other"))
    store.record("m-2", _step(0, "done"))
    store.send_message("m-2", "t", "kept")
    message = _present("peek_message after send", store.peek_message("m-2", "t"))
    _equal(
        "record() at a completed position with consume returns the stored record",
        _step(0, "done"),
        store.record("m-2", _step(0, "other"), consume=message.message_id),
    )
    _equal("message after a record() that wrote nothing", message, store.peek_message("m-2", "t"))
    _raises(
        "record() at a gap with consume",
        RecordConflict,
        lambda: store.record("m-2", _step(5), consume=message.message_id),
    )
    _equal("message after a refused gap", message, store.peek_message("m-2", "t"))
    store.send_message("m-2-other", "t", "theirs")
    theirs = _present("peek_message of the other run", store.peek_message("m-2-other", "t"))
    _raises(
        "record() consuming another run's message",
        RecordConflict,
        lambda: store.record("m-2", _step(1), consume=theirs.message_id),
    )
    _equal("the other run's message", theirs, store.peek_message("m-2-other", "t"))
    _raises(
        "record() consuming a message and sending to an unknown run",
        WorkflowNotFound,
        lambda: store.record(
            "m-2", _step(1), consume=message.message_id, send=OutgoingMessage("nope", "t", "x")
        ),
    )
    _equal("message after a send to an unknown run", message, store.peek_message("m-2", "t"))
    _equal("log after refused side effects", [_step(0, "done")], _log_of(store, "m-2"))


def check_consume_many(store: Store) -> None:
    store.create_workflow(_run("m-3"))
    for payload in ("a", "b", "c"):
        store.send_message("m-3", payload, payload)
    ids = {}
    for topic in ("a", "b", "c"):
        ids[topic] = _present(f"message on {topic}", store.peek_message("m-3", topic)).message_id
    store.record("m-3", Record(0, "all", "recv", Value(["a", "b"])), consume=[ids["a"], ids["b"]])
    _equal(
        "inbox after consuming two messages at once",
        [None, None],
        [store.peek_message("m-3", "a"), store.peek_message("m-3", "b")],
    )
    _raises(
        "record() consuming a present and a consumed message",
        RecordConflict,
        lambda: store.record("m-3", _step(1), consume=[ids["c"], ids["a"]]),
    )
    _equal(
        "the present message after the refusal",
        ids["c"],
        _present("message on c", store.peek_message("m-3", "c")).message_id,
    )
    _equal("log after the refusal", 1, len(_log_of(store, "m-3")))
    store.record("m-3", _step(1), consume=[])
    _equal("record() consuming an empty list", 2, len(_log_of(store, "m-3")))


def check_send_with_record(store: Store) -> None:
    store.create_workflow(_run("s-1"))
    store.create_workflow(_run("s-1-to"))
    out = OutgoingMessage("s-1-to", "greet", {"hello": ["world", 1]}, idempotency_key="s-1:0")
    store.record("s-1", Record(0, "send", "greet", Value(None)), send=out)
    received = store.peek_message("s-1-to", "greet")
    _equal("payload sent by record()", out.payload, received.payload if received else None)
    _equal("receiver of the message", "s-1-to", received.workflow_id if received else None)
    store.record("s-1", Record(1, "send", "greet", Value(None)), send=out)
    received = _present("message sent by record()", received)
    store.record(
        "s-1-to", Record(0, "recv", "greet", Value(out.payload)), consume=received.message_id
    )
    _equal("inbox after a second send with a used key", None, store.peek_message("s-1-to", "greet"))
    _equal("log of the sender", 2, len(_log_of(store, "s-1")))
    _raises(
        "record() sending to an unknown run",
        WorkflowNotFound,
        lambda: store.record(
            "s-1", Record(2, "send", "x", Value(None)), send=OutgoingMessage("nope", "t", 1)
        ),
    )
    _equal("log after a send to an unknown run", 2, len(_log_of(store, "s-1")))
    store.record(
        "s-1",
        Record(1, "send", "greet", Value(None)),
        send=OutgoingMessage("s-1-to", "greet", "again"),
    )
    _equal("inbox after a record() that wrote nothing", None, store.peek_message("s-1-to", "greet"))


def check_send_message_idempotency(store: Store) -> None:
    store.create_workflow(_run("s-2"))
    store.create_workflow(_run("s-2-b"))
    _equal(
        "send_message with a new key", True, store.send_message("s-2", "t", 1, idempotency_key="k")
    )
    _equal(
        "send_message with a used key",
        False,
        store.send_message("s-2", "t", 2, idempotency_key="k"),
    )
    _equal(
        "send_message with the same key to another run",
        True,
        store.send_message("s-2-b", "t", 3, idempotency_key="k"),
    )
    _equal("send_message without a key", True, store.send_message("s-2", "t", 4))
    _equal("send_message without a key, again", True, store.send_message("s-2", "t", 4))
    _raises(
        "send_message to an unknown run",
        WorkflowNotFound,
        lambda: store.send_message("nope", "t", 1),
    )
    payloads = _drain(store, "s-2", "t")
    _equal("messages delivered with and without keys", [1, 4, 4], payloads)


def check_send_message_names_its_call(store: Store) -> None:
    store.create_workflow(_run("s-call"))
    _equal(
        "send_message with a key and a call id",
        True,
        store.send_message("s-call", "t", 1, idempotency_key="k", call_id="c1"),
    )
    # The retry of one call after a lost answer: told it delivered, nothing more sent.
    _equal(
        "send_message with the same key and call id again",
        True,
        store.send_message("s-call", "t", 1, idempotency_key="k", call_id="c1"),
    )
    _equal(
        "send_message with the key and another call id",
        False,
        store.send_message("s-call", "t", 2, idempotency_key="k", call_id="c2"),
    )
    _equal(
        "send_message with the key and no call id",
        False,
        store.send_message("s-call", "t", 3, idempotency_key="k"),
    )
    _equal("messages delivered for one call", [1], _drain(store, "s-call", "t"))


def check_executor_holds(store: Store) -> None:
    hold = _present("hold_executor of a free id", store.hold_executor("e-hold", "v1"))
    _equal("keep() of a hold just taken", True, hold.keep())
    _equal("hold_executor of a held id", None, store.hold_executor("e-hold", "v1"))
    other_version = _present(
        "hold_executor of the id for another version", store.hold_executor("e-hold", "v2")
    )
    _expect(
        bool(store.executor_holder("e-hold", "v1")),
        "executor_holder of a held id",
        "a description",
        store.executor_holder("e-hold", "v1"),
    )
    now = datetime.now(UTC)
    store.create_workflow(_run("held-run", executor_id="e-hold", app_version="v1"))
    store.heartbeat("e-hold", "v1", now - timedelta(hours=1))
    _equal(
        "take_over of a held id with an old heartbeat",
        [],
        store.take_over(executor_id="taker", app_version="v1", lease_seconds=1, now=now),
    )
    hold.release()
    hold.release()
    _equal("keep() after release", False, hold.keep())
    _equal("executor_holder after release", "", store.executor_holder("e-hold", "v1"))
    _equal(
        "take_over once the id is free",
        ["held-run"],
        store.take_over(executor_id="taker", app_version="v1", lease_seconds=1, now=now),
    )
    again = _present("hold_executor after release", store.hold_executor("e-hold", "v1"))
    again.release()
    other_version.release()


def check_get_events(store: Store) -> None:
    store.create_workflow(_run("ev-all"))
    _equal("get_events of a run with none", {}, store.get_events("ev-all"))
    store.record("ev-all", Record(0, "set_event", "a", Value(None)), event=EventWrite("a", 1))
    store.record("ev-all", Record(1, "set_event", "b", Value(None)), event=EventWrite("b", [2]))
    store.record("ev-all", Record(2, "set_event", "a", Value(None)), event=EventWrite("a", 3))
    _equal("get_events: the latest value per key", {"a": 3, "b": [2]}, store.get_events("ev-all"))
    _raises("get_events of an unknown run", WorkflowNotFound, lambda: store.get_events("nope"))


def _drain(store: Store, workflow_id: str, topic: str) -> list[Any]:
    """Consume the inbox of `topic` through record(), as the runtime does."""
    payloads: list[Any] = []
    position = len(store.load_log(workflow_id))
    while (message := store.peek_message(workflow_id, topic)) is not None:
        store.record(
            workflow_id,
            Record(position, "recv", topic, Value(message.payload)),
            consume=message.message_id,
        )
        payloads.append(message.payload)
        position += 1
        # A store that does not consume would keep handing back the same message.
        _expect(
            len(payloads) <= 1000,
            f"consuming the inbox of {topic!r}",
            "an end",
            f"{len(payloads)} messages, the last {message!r}",
        )
    return payloads


def check_fifo_per_topic(store: Store) -> None:
    store.create_workflow(_run("q-1"))
    for topic, payload in [("a", 1), ("b", "b1"), ("a", 2), ("b", "b2"), ("a", 3)]:
        store.send_message("q-1", topic, payload)
    _equal("peek on a topic with no messages", None, store.peek_message("q-1", "c"))
    _equal("peek on another run", None, store.peek_message("nope", "a"))
    first_a = store.peek_message("q-1", "a")
    first_b = store.peek_message("q-1", "b")
    _expect(
        first_a is not None and first_b is not None and first_a.message_id < first_b.message_id,
        "message ids increase in send order",
        "first a < first b",
        (first_a, first_b),
    )
    _equal("peek does not consume", first_a, store.peek_message("q-1", "a"))
    _equal("topic a in FIFO order", [1, 2, 3], _drain(store, "q-1", "a"))
    _equal("topic b untouched by draining a", first_b, store.peek_message("q-1", "b"))
    _equal("topic b in FIFO order", ["b1", "b2"], _drain(store, "q-1", "b"))


def check_message_fields(store: Store) -> None:
    store.create_workflow(_run("q-2"))
    before = datetime.now(UTC) - timedelta(minutes=5)
    store.send_message("q-2", "topic", {"k": [None, True, 1.5]})
    message = _present("peek_message after send", store.peek_message("q-2", "topic"))
    _equal("message workflow_id", "q-2", message.workflow_id)
    _equal("message topic", "topic", message.topic)
    _equal("message payload", {"k": [None, True, 1.5]}, message.payload)
    _aware_utc("message created_at", message.created_at)
    _expect(
        message.created_at is not None and message.created_at > before,
        "message created_at is about now",
        f"after {before}",
        message.created_at,
    )


def check_event_latest_wins(store: Store) -> None:
    store.create_workflow(_run("e-1"))
    _equal("get_event before any set", (False, None), store.get_event("e-1", "k"))
    store.record("e-1", _step(0), event=EventWrite("k", {"v": 1}))
    _equal("get_event after a set", (True, {"v": 1}), store.get_event("e-1", "k"))
    store.record("e-1", _step(1), event=EventWrite("k", [2]))
    _equal("get_event after a second set", (True, [2]), store.get_event("e-1", "k"))
    store.record("e-1", _step(2), event=EventWrite("other", None))
    _equal("get_event of a None value", (True, None), store.get_event("e-1", "other"))
    _equal(
        "get_event of the first key after setting another", (True, [2]), store.get_event("e-1", "k")
    )
    store.record("e-1", _step(1, "again"), event=EventWrite("k", "ignored"))
    _equal(
        "get_event after a record() that wrote nothing", (True, [2]), store.get_event("e-1", "k")
    )
    _equal("get_event of another run", (False, None), store.get_event("nope", "k"))


# -- record_many ----------------------------------------------------------------


def _answer_kinds(answers: list[Record | Exception]) -> list[str]:
    """Each answer as the name of its exception class, or "record"."""
    return ["record" if isinstance(a, Record) else type(a).__name__ for a in answers]


def check_record_many_commits_each(store: Store) -> None:
    _equal("record_many([])", [], store.record_many([]))
    for wid in ("rm-1", "rm-2", "rm-3", "rm-4"):
        store.create_workflow(_run(wid, executor_id="engine-a"))
    store.record("rm-2", _step(0, "kept"))
    wake = _T0 + timedelta(hours=2)
    store.record("rm-3", _pending(0, wake_at=wake), wake_at=wake)
    done = Record(0, "sleep", "p0", Value(None), completed_at=wake, wake_at=wake)
    writes = [
        RecordWrite("rm-1", _step(0, {"first": [1, None]}), executor_id="engine-a"),
        RecordWrite("rm-2", _step(1, "second")),
        RecordWrite("rm-3", done),
        RecordWrite("rm-4", _pending(0, wake_at=wake), wake_at=wake),
    ]
    answers = store.record_many(writes)
    _equal("record_many answers, in input order", [w.record for w in writes], answers)
    _equal("log of rm-1 after record_many", [writes[0].record], _log_of(store, "rm-1"))
    _equal(
        "log of rm-2 after record_many",
        [_step(0, "kept"), _step(1, "second")],
        _log_of(store, "rm-2"),
    )
    _equal("log of rm-3: record_many completed the pending record", [done], _log_of(store, "rm-3"))
    _equal("log of rm-4 after record_many", [writes[3].record], _log_of(store, "rm-4"))
    wakes = [getattr(store.get_workflow(w), "wake_at", "missing") for w in ("rm-3", "rm-4")]
    _equal("wake_at of rm-3 (cleared) and rm-4 (set) after record_many", [None, wake], wakes)
    # More writes than one batch of the store may hold.
    many = [f"rm-many-{i}" for i in range(300)]
    store.create_workflows([_run(wid) for wid in many])
    answers = store.record_many([RecordWrite(wid, _step(0, wid)) for wid in many])
    _equal("record_many of 300 runs", [_step(0, wid) for wid in many], answers)
    _equal(
        "logs of 300 runs after record_many",
        [[_step(0, wid)] for wid in many],
        [_log_of(store, wid) for wid in many],
    )


def check_record_many_refusals(store: Store) -> None:
    store.create_workflow(_run("rf-ok-1"))
    store.create_workflow(_run("rf-ok-2"))
    store.create_workflow(_run("rf-ok-3"))
    store.create_workflow(_run("rf-cancelled", status=Status.CANCELLED), records=[_step(0)])
    store.create_workflow(_run("rf-enqueued", status=Status.ENQUEUED, executor_id=""))
    store.create_workflow(_run("rf-owned", executor_id="engine-a"))
    store.create_workflow(_run("rf-gap"))
    store.create_workflow(_run("rf-consumed"))
    store.create_workflow(_run("rf-send"))
    store.send_message("rf-consumed", "t", "once")
    message = _present("peek_message after send", store.peek_message("rf-consumed", "t"))
    store.record("rf-consumed", Record(0, "recv", "t", Value("once")), consume=message.message_id)
    store.send_message("rf-cancelled", "t", "kept")
    kept = _present("peek_message of the cancelled run", store.peek_message("rf-cancelled", "t"))
    writes = [
        RecordWrite("rf-ok-1", _step(0, "one")),
        RecordWrite(
            "rf-cancelled",
            _step(1),
            consume=kept.message_id,
            send=OutgoingMessage("rf-ok-2", "t", "never"),
            event=EventWrite("k", 1),
        ),
        RecordWrite("rf-enqueued", _step(0)),
        RecordWrite("rf-owned", _step(0), executor_id="engine-b"),
        RecordWrite("rf-ok-2", _step(0, "two"), event=EventWrite("k", "set")),
        RecordWrite("rf-gap", _step(3)),
        RecordWrite("rf-missing", _step(0)),
        RecordWrite(
            "rf-consumed", Record(1, "recv", "t", Value("twice")), consume=message.message_id
        ),
        RecordWrite("rf-send", _step(0), send=OutgoingMessage("nope", "t", "x")),
        RecordWrite("rf-ok-3", _step(0, "three"), executor_id=None),
    ]
    answers = store.record_many(writes)
    _equal(
        "record_many answers with refusals in between",
        [
            "record",
            # A run no longer PENDING: the conflict says so (its status, for late records).
            "RunNotPending",
            "RunNotPending",
            "RecordConflict",
            "record",
            "RecordConflict",
            "WorkflowNotFound",
            "RecordConflict",
            "WorkflowNotFound",
            "record",
        ],
        _answer_kinds(answers),
    )
    _equal(
        "records answered by record_many around the refusals",
        [_step(0, "one"), _step(0, "two"), _step(0, "three")],
        [answers[0], answers[4], answers[9]],
    )
    for index in (1, 2, 3, 5, 6, 7, 8):
        # The same exception record() raises: re-raisable, with its message.
        answer = answers[index]
        _expect(
            isinstance(answer, Exception) and bool(str(answer)),
            f"record_many answer for {writes[index].workflow_id}",
            "an exception with a message",
            answer,
        )
    _equal(
        "logs of the accepted writes",
        [[_step(0, "one")], [_step(0, "two")], [_step(0, "three")]],
        [_log_of(store, w) for w in ("rf-ok-1", "rf-ok-2", "rf-ok-3")],
    )
    _equal("event set by an accepted write", (True, "set"), store.get_event("rf-ok-2", "k"))
    _equal("log of the cancelled run", [_step(0)], _log_of(store, "rf-cancelled"))
    _equal("inbox of the cancelled run", kept, store.peek_message("rf-cancelled", "t"))
    _equal("event of the cancelled run", (False, None), store.get_event("rf-cancelled", "k"))
    _equal("message a refused write would have sent", None, store.peek_message("rf-ok-2", "t"))
    _equal(
        "logs of the other refused writes",
        [[], [], [], [], [Record(0, "recv", "t", Value("once"))], []],
        [
            _log_of(store, w)
            for w in ("rf-enqueued", "rf-owned", "rf-gap", "rf-missing", "rf-consumed", "rf-send")
        ],
    )


def check_record_many_completed_positions(store: Store) -> None:
    for wid in ("rc-1", "rc-2", "rc-3", "rc-4"):
        store.create_workflow(_run(wid))
    first = _step(0, "first writer")
    store.record("rc-1", first)
    pending = _pending(0)
    store.record("rc-2", pending)
    store.record("rc-3", _step(0))
    store.send_message("rc-3", "t", "kept")
    message = _present("peek_message after send", store.peek_message("rc-3", "t"))
    answers = store.record_many(
        [
            RecordWrite("rc-1", _step(0, "second writer", attempts=3)),
            RecordWrite("rc-2", _pending(0, name="other")),
            RecordWrite(
                "rc-3",
                _step(0, "other"),
                consume=message.message_id,
                event=EventWrite("k", 1),
                send=OutgoingMessage("rc-1", "t", "never"),
            ),
            RecordWrite("rc-4", _step(0, "new")),
        ]
    )
    _equal(
        "record_many over completed (and pending) positions answers the stored records",
        [first, pending, _step(0), _step(0, "new")],
        answers,
    )
    _equal("log after record_many over a completed position", [first], _log_of(store, "rc-1"))
    _equal("log after record_many of a pending over a pending", [pending], _log_of(store, "rc-2"))
    _equal("message after a write that wrote nothing", message, store.peek_message("rc-3", "t"))
    _equal("event after a write that wrote nothing", (False, None), store.get_event("rc-3", "k"))
    _equal(
        "inbox a write that wrote nothing would have sent to", None, store.peek_message("rc-1", "t")
    )


def check_record_many_side_effects(store: Store) -> None:
    for wid in ("rs-recv", "rs-all", "rs-send", "rs-event", "rs-plain", "rs-to"):
        store.create_workflow(_run(wid))
    store.send_message("rs-recv", "t", "for recv")
    for topic in ("a", "b"):
        store.send_message("rs-all", topic, topic)
    store.send_message("rs-recv", "t", "second")
    one = _present("message for rs-recv", store.peek_message("rs-recv", "t"))
    ids = [_present(f"message on {t}", store.peek_message("rs-all", t)).message_id for t in "ab"]
    out = OutgoingMessage("rs-to", "greet", {"hello": [1]}, idempotency_key="rs-send:0")
    writes = [
        RecordWrite("rs-recv", Record(0, "recv", "t", Value("for recv")), consume=one.message_id),
        RecordWrite("rs-all", Record(0, "all", "recv", Value(["a", "b"])), consume=ids),
        RecordWrite("rs-send", Record(0, "send", "greet", Value(None)), send=out),
        RecordWrite("rs-event", _step(0), event=EventWrite("k", {"v": [1, 2]})),
        RecordWrite("rs-plain", _step(0, "plain")),
    ]
    _equal("record_many with side effects", [w.record for w in writes], store.record_many(writes))
    second = store.peek_message("rs-recv", "t")
    _equal("inbox after a consuming write", "second", second.payload if second else None)
    _equal(
        "inbox after consuming two messages in one write",
        [None, None],
        [store.peek_message("rs-all", "a"), store.peek_message("rs-all", "b")],
    )
    received = _present("message sent by record_many", store.peek_message("rs-to", "greet"))
    _equal("payload sent by record_many", out.payload, received.payload)
    _equal("event set by record_many", (True, {"v": [1, 2]}), store.get_event("rs-event", "k"))
    # The send's idempotency key is used: sending with it again delivers nothing.
    answers = store.record_many(
        [
            RecordWrite("rs-send", Record(1, "send", "greet", Value(None)), send=out),
            RecordWrite(
                "rs-to", Record(0, "recv", "greet", Value(out.payload)), consume=received.message_id
            ),
        ]
    )
    _equal("record_many answers, second round", ["record", "record"], _answer_kinds(answers))
    _equal("inbox after a send with a used key", None, store.peek_message("rs-to", "greet"))
    _equal("log of the sender", 2, len(_log_of(store, "rs-send")))


def check_record_many_refuses_one_run_twice(store: Store) -> None:
    store.create_workflow(_run("rd-1"))
    store.create_workflow(_run("rd-2"))
    _raises(
        "record_many with two writes of one run",
        ValueError,
        lambda: store.record_many(
            [
                RecordWrite("rd-2", _step(0)),
                RecordWrite("rd-1", _step(0)),
                RecordWrite("rd-1", _step(1)),
            ]
        ),
    )
    _equal(
        "logs after a refused record_many",
        [[], []],
        [_log_of(store, "rd-1"), _log_of(store, "rd-2")],
    )


def check_record_many_alongside_record(store: Store) -> None:
    threads = 4
    positions = 6
    batch_runs = [f"ra-b{i}" for i in range(20)]
    store.create_workflows(
        [_run(f"ra-t{t}") for t in range(threads)] + [_run(w) for w in batch_runs]
    )
    store.create_workflow(_run("ra-race"))
    barrier = threading.Barrier(threads + 2)
    errors: list[BaseException] = []
    raced: list[Any] = []

    def alone(index: int) -> None:
        barrier.wait()
        try:
            for position in range(positions):
                store.record(f"ra-t{index}", _step(position, index))
        except BaseException as exc:
            errors.append(exc)

    def racer() -> None:
        barrier.wait()
        try:
            raced.append(store.record("ra-race", _step(0, "record()")))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=alone, args=(t,)) for t in range(threads)]
    workers.append(threading.Thread(target=racer))
    for worker in workers:
        worker.start()
    barrier.wait()
    answers: list[list[Record | Exception]] = []
    for position in range(positions):
        writes = [RecordWrite(w, _step(position, w)) for w in batch_runs]
        if position == 0:
            writes.append(RecordWrite("ra-race", _step(0, "record_many()")))
        answers.append(store.record_many(writes))
    for worker in workers:
        worker.join()
    _equal("exceptions from record() next to record_many", [], errors)
    _equal(
        "record_many next to record() answers every write with a record",
        [["record"] * len(a) for a in answers],
        [_answer_kinds(a) for a in answers],
    )
    for t in range(threads):
        _equal(
            f"log of ra-t{t} written by record() next to record_many",
            [_step(p, t) for p in range(positions)],
            _log_of(store, f"ra-t{t}"),
        )
    for w in batch_runs:
        _equal(
            f"log of {w} written by record_many",
            [_step(p, w) for p in range(positions)],
            _log_of(store, w),
        )
    race_log = _log_of(store, "ra-race")
    _equal("log of the position record() and record_many raced for", 1, len(race_log))
    _equal(
        "what record() and record_many got for one position",
        [race_log[0], race_log[0]],
        [raced[0] if raced else None, answers[0][-1]],
    )


def check_record_many_notifications(store: Store) -> None:
    for wid in ("rn-1", "rn-2", "rn-3", "rn-to"):
        store.create_workflow(_run(wid))
    seen: list[tuple[str, str]] = []
    visible: list[tuple[str, Any]] = []
    failures: list[str] = []
    lock = threading.Lock()

    def callback(kind: str, key: str) -> None:
        try:
            if kind == "message" and key == "rn-to":
                found = store.peek_message("rn-to", "t")
                visible.append((kind, found.payload if found else None))
            if kind == "event" and key == "rn-2":
                visible.append((kind, store.get_event("rn-2", "k")))
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
        with lock:
            seen.append((kind, key))

    unsubscribe = store.subscribe(callback)
    try:
        answers = store.record_many(
            [
                RecordWrite("rn-1", _step(0), send=OutgoingMessage("rn-to", "t", "hi")),
                RecordWrite("rn-2", _step(0), event=EventWrite("k", 7)),
                RecordWrite("rn-3", _step(0)),
            ]
        )
        _equal("record_many answers", ["record"] * 3, _answer_kinds(answers))

        def heard() -> bool:
            with lock:
                return {("message", "rn-to"), ("event", "rn-2")} <= set(seen)

        _expect(
            _wait_for(heard),
            "notifications of record_many",
            [("message", "rn-to"), ("event", "rn-2")],
            seen,
        )
        _equal("errors from the store called inside a subscriber", [], failures)
        _expect(
            ("message", "hi") in visible and ("event", (True, 7)) in visible,
            "what record_many announced is visible in the callback",
            [("message", "hi"), ("event", (True, 7))],
            visible,
        )
    finally:
        unsubscribe()


# -- status -------------------------------------------------------------------


def check_finish_only_from_pending(store: Store) -> None:
    store.create_workflow(_run("st-1"))
    store.record("st-1", _pending(0, wake_at=_T0), wake_at=_T0)
    result = Value({"total": 3})
    _equal(
        "finish_workflow of a PENDING run",
        True,
        store.finish_workflow("st-1", Status.SUCCESS, result, error="done"),
    )
    row = _present("get_workflow after finish", store.get_workflow("st-1"))
    _equal("status after finish", Status.SUCCESS, row.status)
    _equal("result after finish", result, row.result)
    _equal("error after finish", "done", row.error)
    _equal("wake_at after finish", None, row.wake_at)
    _equal(
        "finish_workflow of a finished run",
        False,
        store.finish_workflow("st-1", Status.ERROR, Value("late")),
    )
    _equal("run after a second finish", row, store.get_workflow("st-1"))
    _equal(
        "finish_workflow of an unknown run",
        False,
        store.finish_workflow("nope", Status.SUCCESS, None),
    )
    store.create_workflow(_run("st-1-q", status=Status.ENQUEUED))
    _equal(
        "finish_workflow of an ENQUEUED run",
        False,
        store.finish_workflow("st-1-q", Status.SUCCESS, None),
    )
    failure = Failure(ErrorInfo("builtins", "KeyError", "'x'", ["x"], "Traceback ..."))
    store.create_workflow(_run("st-1-e"))
    store.finish_workflow("st-1-e", Status.ERROR, failure, error="KeyError: 'x'")
    failed = store.get_workflow("st-1-e")
    _equal("failure result after finish", failure, failed.result if failed else None)


def _finish_kinds(answers: list[bool | Exception]) -> list[Any]:
    """Each answer as True/False, or the name of its exception class."""
    return [a if isinstance(a, bool) else type(a).__name__ for a in answers]


def check_finish_many_finishes_each(store: Store) -> None:
    _equal("finish_many([])", [], store.finish_many([]))
    failure = Failure(ErrorInfo("builtins", "KeyError", "'x'", ["x"], "Traceback ..."))
    for wid in ("fm-ok", "fm-failed", "fm-owned", "fm-taken", "fm-done", "fm-waits"):
        store.create_workflow(_run(wid, executor_id="engine-a"))
    store.record("fm-waits", _pending(0, wake_at=_T0), wake_at=_T0)
    store.create_workflow(_run("fm-queued", status=Status.ENQUEUED, executor_id=""))
    store.finish_workflow("fm-done", Status.SUCCESS, Value("first"))
    notes: list[tuple[str, str]] = []
    lock = threading.Lock()

    def heard(kind: str, key: str) -> None:
        with lock:
            notes.append((kind, key))

    unsubscribe = store.subscribe(heard)
    try:
        answers = store.finish_many(
            [
                FinishWrite("fm-ok", Status.SUCCESS, Value({"n": 1}), executor_id="engine-a"),
                FinishWrite("fm-failed", Status.ERROR, failure, error="KeyError: 'x'"),
                FinishWrite("fm-owned", Status.SUCCESS, Value(1), executor_id="engine-b"),
                FinishWrite("fm-missing", Status.SUCCESS, Value(1)),
                FinishWrite("fm-done", Status.ERROR, Value("late")),
                FinishWrite("fm-queued", Status.SUCCESS, None),
                FinishWrite("x\x00bad", Status.SUCCESS, None),
                FinishWrite("fm-waits", Status.CANCELLED, None, error="cancelled"),
            ]
        )
        _equal(
            "finish_many answers, in input order (a refused name answers its ValueError)",
            [True, True, False, False, False, False, "ValueError", True],
            _finish_kinds(answers),
        )
        finished = {"fm-ok", "fm-failed", "fm-waits"}

        def all_heard() -> bool:
            with lock:
                return {("finished", wid) for wid in finished} <= set(notes)

        _expect(
            _wait_for(all_heard),
            "a 'finished' note for each run finish_many finished",
            sorted(finished),
            notes,
        )
        with lock:
            stray = sorted(key for kind, key in notes if kind == "finished" and key not in finished)
        _equal("'finished' notes of runs finish_many did not finish", [], stray)
    finally:
        unsubscribe()
    ok = _present("fm-ok after finish_many", store.get_workflow("fm-ok"))
    _equal("fm-ok: status and result", (Status.SUCCESS, Value({"n": 1})), (ok.status, ok.result))
    failed = _present("fm-failed after finish_many", store.get_workflow("fm-failed"))
    _equal(
        "fm-failed: status, result and error",
        (Status.ERROR, failure, "KeyError: 'x'"),
        (failed.status, failed.result, failed.error),
    )
    waits = _present("fm-waits after finish_many", store.get_workflow("fm-waits"))
    _equal("fm-waits: status and wake_at", (Status.CANCELLED, None), (waits.status, waits.wake_at))
    for wid, status in (("fm-owned", Status.PENDING), ("fm-queued", Status.ENQUEUED)):
        row = _present(f"{wid} after finish_many", store.get_workflow(wid))
        _equal(f"{wid}: untouched by finish_many", status, row.status)
    done = _present("fm-done after finish_many", store.get_workflow("fm-done"))
    _equal("fm-done: the first finish stands", Value("first"), done.result)
    # More finishes than one batch of the store may hold.
    many = [f"fm-many-{i}" for i in range(300)]
    store.create_workflows([_run(wid) for wid in many])
    answers = store.finish_many([FinishWrite(wid, Status.SUCCESS, Value(wid)) for wid in many])
    _equal("finish_many of 300 runs", [True] * 300, answers)
    _equal(
        "results of 300 runs after finish_many",
        [Value(wid) for wid in many],
        [getattr(store.get_workflow(wid), "result", None) for wid in many],
    )


def check_finish_many_with_last_records(store: Store) -> None:
    for wid in ("fr-new", "fr-pending", "fr-equal", "fr-gap", "fr-other", "fr-plain"):
        store.create_workflow(_run(wid))
        store.record(wid, _step(0, "first"))
    # Refused by the run, before the record is looked at: nothing written.
    store.create_workflow(_run("fr-owned", executor_id="engine-a"))
    store.record("fr-owned", _step(0, "first"))
    store.create_workflow(_run("fr-cancelled"))
    store.record("fr-cancelled", _step(0, "first"))
    store.set_status("fr-cancelled", Status.CANCELLED)
    store.record("fr-pending", _pending(1, wake_at=_T0), wake_at=_T0)
    store.record("fr-equal", _step(1, "same"))
    store.record("fr-other", _step(1, "theirs"))
    answers = store.finish_many(
        [
            FinishWrite("fr-new", Status.SUCCESS, Value("new"), record=_step(1, "new")),
            FinishWrite("fr-pending", Status.SUCCESS, Value("done"), record=_step(1, "done")),
            FinishWrite("fr-equal", Status.SUCCESS, Value("same"), record=_step(1, "same")),
            FinishWrite("fr-gap", Status.SUCCESS, Value("gap"), record=_step(3, "gap")),
            FinishWrite("fr-other", Status.SUCCESS, Value("ours"), record=_step(1, "ours")),
            FinishWrite("fr-plain", Status.ERROR, Value("plain")),
            FinishWrite("fr-bad", Status.SUCCESS, None, record=_pending(0)),
            FinishWrite(
                "fr-owned", Status.SUCCESS, Value(1), executor_id="engine-b", record=_step(1)
            ),
            FinishWrite("fr-cancelled", Status.SUCCESS, Value(1), record=_step(1)),
        ]
    )
    _equal(
        "finish_many answers with last records (written, completed, equal, gap, another "
        "writer's, none, pending, another owner's run, a cancelled run)",
        [True, True, True, "RecordConflict", "RecordConflict", True, "ValueError", False, False],
        _finish_kinds(answers),
    )
    for wid, log in (
        ("fr-new", [_step(0, "first"), _step(1, "new")]),
        ("fr-pending", [_step(0, "first"), _step(1, "done")]),
        ("fr-equal", [_step(0, "first"), _step(1, "same")]),
        ("fr-gap", [_step(0, "first")]),
        ("fr-other", [_step(0, "first"), _step(1, "theirs")]),
        ("fr-owned", [_step(0, "first")]),
        ("fr-cancelled", [_step(0, "first")]),
    ):
        _equal(f"log of {wid} after finish_many", log, _log_of(store, wid))
    statuses = [
        getattr(store.get_workflow(wid), "status", None)
        for wid in ("fr-new", "fr-pending", "fr-equal", "fr-gap", "fr-other", "fr-plain")
    ]
    _equal(
        "statuses after finish_many (a refused last record leaves its run PENDING)",
        [Status.SUCCESS] * 3 + [Status.PENDING] * 2 + [Status.ERROR],
        statuses,
    )


def check_finish_many_refuses_one_run_twice(store: Store) -> None:
    store.create_workflow(_run("fm-twice"))
    try:
        store.finish_many(
            [
                FinishWrite("fm-twice", Status.SUCCESS, Value(1)),
                FinishWrite("fm-twice", Status.ERROR, Value(2)),
            ]
        )
    except ValueError as exc:
        _expect("two finishes" in str(exc), "finish_many's refusal names the fault", exc, exc)
    else:
        raise _CheckFailed("finish_many of one run twice: expected ValueError, got answers")
    row = _present("fm-twice after the refused call", store.get_workflow("fm-twice"))
    _equal("fm-twice: nothing written", Status.PENDING, row.status)


def _finish_state(store: Store, workflow_id: str) -> tuple[Any, ...]:
    """What a finish changes: the run's status, result, error and wake_at, and its log."""
    row = store.get_workflow(workflow_id)
    if row is None:
        return ("missing", _log_of(store, workflow_id))
    return (row.status, row.result, row.error, row.wake_at, _log_of(store, workflow_id))


def check_finish_with_record_commits_both(store: Store) -> None:
    result = Value({"total": 3})
    store.create_workflow(_run("fr-1", executor_id="engine-a"), records=[_step(0), _step(1)])
    last = _step(2, "last", started_at=_T0, completed_at=_T0 + timedelta(seconds=1), attempts=2)
    _equal(
        "finish_workflow(record=) of a PENDING run by its owner",
        True,
        store.finish_workflow(
            "fr-1", Status.SUCCESS, result, error="done", executor_id="engine-a", record=last
        ),
    )
    _equal(
        "run and log after finish_workflow(record=)",
        (Status.SUCCESS, result, "done", None, [_step(0), _step(1), last]),
        _finish_state(store, "fr-1"),
    )
    store.create_workflow(_run("fr-2"))
    _equal(
        "finish_workflow(record=) of position 0, without executor_id",
        True,
        store.finish_workflow("fr-2", Status.SUCCESS, Value(0), record=_step(0, "only")),
    )
    _equal(
        "run and log after finishing with the first record",
        (Status.SUCCESS, Value(0), "", None, [_step(0, "only")]),
        _finish_state(store, "fr-2"),
    )
    # The last record completes a pending one (a Sleep or a Recv with a timeout).
    wake = _T0 + timedelta(hours=1)
    store.create_workflow(_run("fr-3"), records=[_step(0)])
    store.record("fr-3", _pending(1, started_at=_T0, wake_at=wake), wake_at=wake)
    done = Record(1, "sleep", "p1", Value(None), started_at=_T0, completed_at=wake, wake_at=wake)
    failure = Failure(ErrorInfo("builtins", "KeyError", "'x'", ["x"], "Traceback ..."))
    _equal(
        "finish_workflow(record=) completing a pending position",
        True,
        store.finish_workflow("fr-3", Status.ERROR, failure, error="KeyError", record=done),
    )
    _equal(
        "run and log after a finish that completed a pending record",
        (Status.ERROR, failure, "KeyError", None, [_step(0), done]),
        _finish_state(store, "fr-3"),
    )
    store.create_workflow(_run("fr-4"))
    raised = Record(0, "step", "s0", failure, completed_at=_T0, attempts=3)
    _equal(
        "finish_workflow(record=) with a recorded failure",
        True,
        store.finish_workflow("fr-4", Status.ERROR, failure, record=raised),
    )
    _equal("log of a run finished with a failed step", [raised], _log_of(store, "fr-4"))
    _equal(
        "a second finish_workflow(record=) of a finished run",
        False,
        store.finish_workflow("fr-2", Status.ERROR, Value("late"), record=_step(1, "late")),
    )
    _equal(
        "run and log after a second finish",
        (Status.SUCCESS, Value(0), "", None, [_step(0, "only")]),
        _finish_state(store, "fr-2"),
    )


def check_finish_with_record_refused_by_the_run(store: Store) -> None:
    """A run not PENDING, or not owned: False and nothing written, as without a record."""
    for status in (Status.ENQUEUED, Status.SUCCESS, Status.ERROR, Status.CANCELLED, Status.PARKED):
        wid = f"fx-{status.value}"
        store.create_workflow(_run(wid, status=status), records=[_step(0)])
        before = _finish_state(store, wid)
        _equal(
            f"finish_workflow(record=) of a {status.value} run",
            False,
            store.finish_workflow(wid, Status.SUCCESS, Value(1), record=_step(1)),
        )
        _equal(
            f"finish_workflow(record=) of a {status.value} run over its completed position",
            False,
            store.finish_workflow(wid, Status.SUCCESS, Value(1), record=_step(0)),
        )
        _equal(
            f"{status.value} run and log after refused finishes", before, _finish_state(store, wid)
        )
    _equal(
        "finish_workflow(record=) of an unknown run",
        False,
        store.finish_workflow("fx-nope", Status.SUCCESS, None, record=_step(0)),
    )
    _equal("log of the unknown run", [], _log_of(store, "fx-nope"))
    store.create_workflow(_run("fx-owned", executor_id="engine-a"), records=[_step(0)])
    _equal(
        "finish_workflow(record=) by another executor",
        False,
        store.finish_workflow(
            "fx-owned", Status.SUCCESS, Value(1), executor_id="engine-b", record=_step(1)
        ),
    )
    _equal(
        "run and log after another executor's finish",
        (Status.PENDING, None, "", None, [_step(0)]),
        _finish_state(store, "fx-owned"),
    )
    store.set_status("fx-owned", Status.PENDING, executor_id="engine-b")
    _equal(
        "finish_workflow(record=) by the previous owner after a takeover",
        False,
        store.finish_workflow(
            "fx-owned", Status.SUCCESS, Value(1), executor_id="engine-a", record=_step(1)
        ),
    )
    _equal("log after the previous owner's finish", [_step(0)], _log_of(store, "fx-owned"))
    _equal(
        "finish_workflow(record=) by the new owner",
        True,
        store.finish_workflow(
            "fx-owned", Status.SUCCESS, Value(1), executor_id="engine-b", record=_step(1)
        ),
    )
    _equal("log after the new owner's finish", [_step(0), _step(1)], _log_of(store, "fx-owned"))


def check_finish_with_record_refused_by_the_log(store: Store) -> None:
    """A record the log refuses: RecordConflict, and neither the record nor the finish."""
    store.create_workflow(_run("fl-gap"))
    wake = _T0 + timedelta(hours=1)
    store.record("fl-gap", _step(0))
    store.record("fl-gap", _pending(1, wake_at=wake), wake_at=wake)
    before = _finish_state(store, "fl-gap")
    _raises(
        "finish_workflow(record=) two positions past the log's end",
        RecordConflict,
        lambda: store.finish_workflow("fl-gap", Status.SUCCESS, Value(1), record=_step(3)),
    )
    _equal("run and log after a refused gap", before, _finish_state(store, "fl-gap"))
    store.create_workflow(_run("fl-empty", executor_id="engine-a"))
    _raises(
        "finish_workflow(record=) at position 1 of an empty log, by the owner",
        RecordConflict,
        lambda: store.finish_workflow(
            "fl-empty", Status.SUCCESS, Value(1), executor_id="engine-a", record=_step(1)
        ),
    )
    _equal(
        "run and log of the empty run after a refused gap",
        (Status.PENDING, None, "", None, []),
        _finish_state(store, "fl-empty"),
    )
    store.create_workflow(_run("fl-other"))
    first = _step(0, "first writer")
    store.record("fl-other", first)
    for what, other in (
        ("another value", _step(0, "second writer")),
        ("another attempt count", _step(0, "first writer", attempts=2)),
        ("a failure", Record(0, "step", "s0", Failure(ErrorInfo("builtins", "ValueError", "x")))),
    ):
        error = _raises(
            f"finish_workflow(record=) over a completed position holding {what}",
            RecordConflict,
            functools.partial(
                store.finish_workflow,
                "fl-other",
                Status.SUCCESS,
                Value("from the second"),
                record=other,
            ),
        )
        _expect(bool(str(error)), "the RecordConflict's message", "a message", str(error))
        _equal(
            f"run and log after a finish over {what}",
            (Status.PENDING, None, "", None, [first]),
            _finish_state(store, "fl-other"),
        )
    _raises(
        "finish_workflow(record=) with a pending record",
        ValueError,
        lambda: store.finish_workflow("fl-gap", Status.SUCCESS, Value(1), record=_pending(2)),
    )
    _equal("run and log after a pending last record", before, _finish_state(store, "fl-gap"))
    # Nothing of the refusals stayed behind: the same runs finish afterwards.
    done = Record(1, "sleep", "p1", Value(None), completed_at=wake, wake_at=wake)
    _equal(
        "finish_workflow(record=) after the refusals",
        [True, True, True],
        [
            store.finish_workflow("fl-gap", Status.SUCCESS, Value(1), record=done),
            store.finish_workflow(
                "fl-empty", Status.SUCCESS, Value(1), executor_id="engine-a", record=_step(0)
            ),
            store.finish_workflow("fl-other", Status.SUCCESS, Value(1), record=first),
        ],
    )
    _equal(
        "logs after the refusals and the finishes",
        [[_step(0), done], [_step(0)], [first]],
        [_log_of(store, w) for w in ("fl-gap", "fl-empty", "fl-other")],
    )


def check_finish_with_an_equal_record_already_there(store: Store) -> None:
    """A retried write (a lost acknowledgement): the equal completed record counts as written."""
    last = _step(1, {"n": [1, 2.5, None]}, started_at=_T0, completed_at=_T0, attempts=2)
    store.create_workflow(_run("fe-1", executor_id="engine-a"), records=[_step(0)])
    store.record("fe-1", last, executor_id="engine-a")
    _equal(
        "finish_workflow(record=) whose record the position holds already",
        True,
        store.finish_workflow(
            "fe-1", Status.SUCCESS, Value(2), executor_id="engine-a", record=last
        ),
    )
    _equal(
        "run and log after a finish over its own record",
        (Status.SUCCESS, Value(2), "", None, [_step(0), last]),
        _finish_state(store, "fe-1"),
    )
    # Equal instants in another time zone are the same record.
    plus_two = timezone(timedelta(hours=2))
    store.create_workflow(_run("fe-2"))
    store.record("fe-2", _step(0, "x", completed_at=_T0))
    _equal(
        "finish_workflow(record=) of an equal record with its instant in another zone",
        True,
        store.finish_workflow(
            "fe-2",
            Status.SUCCESS,
            Value(0),
            record=_step(0, "x", completed_at=_T0.astimezone(plus_two)),
        ),
    )
    _equal(
        "log after the finish of fe-2", [_step(0, "x", completed_at=_T0)], _log_of(store, "fe-2")
    )
    # The retry after the finish itself committed: the run is no longer PENDING.
    _equal(
        "finish_workflow(record=) retried after it committed",
        False,
        store.finish_workflow(
            "fe-1", Status.SUCCESS, Value(2), executor_id="engine-a", record=last
        ),
    )
    _equal(
        "run and log after the retried finish",
        (Status.SUCCESS, Value(2), "", None, [_step(0), last]),
        _finish_state(store, "fe-1"),
    )


def _race_finish_and_record(store: Store, wid: str) -> dict[str, Any]:
    """Start a finish of `wid` with its record and a record() of another outcome at once."""
    barrier = threading.Barrier(2)
    got: dict[str, Any] = {}

    def finisher() -> None:
        barrier.wait()
        try:
            got["finish"] = store.finish_workflow(
                wid, Status.SUCCESS, Value("finisher"), record=_step(1, "finisher")
            )
        except Exception as exc:
            got["finish"] = exc

    def recorder() -> None:
        barrier.wait()
        try:
            got["record"] = store.record(wid, _step(1, "recorder"))
        except Exception as exc:
            got["record"] = exc

    workers = [threading.Thread(target=finisher), threading.Thread(target=recorder)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return got


def check_finish_with_record_racing_record(store: Store) -> None:
    """A finish with its record and a record() of another outcome race: one of them wins whole."""
    for n in range(12):
        wid = f"fq-{n}"
        store.create_workflow(_run(wid), records=[_step(0)])
        got = _race_finish_and_record(store, wid)
        state = _finish_state(store, wid)
        finished = got.get("finish")
        expected: tuple[Any, ...]
        if finished is True:
            expected = (
                Status.SUCCESS,
                Value("finisher"),
                "",
                None,
                [_step(0), _step(1, "finisher")],
            )
            _expect(
                isinstance(got.get("record"), RecordConflict),
                f"{wid}: record() after the finish won (the run is finished)",
                "RecordConflict",
                got.get("record"),
            )
        else:
            _expect(
                isinstance(finished, RecordConflict),
                f"{wid}: the finish that lost the race",
                "RecordConflict",
                finished,
            )
            _equal(f"{wid}: record() that won the race", _step(1, "recorder"), got.get("record"))
            expected = (Status.PENDING, None, "", None, [_step(0), _step(1, "recorder")])
        _equal(f"{wid}: run and log after the race", expected, state)
    # Many runs finishing with their records at once (group commit batches them).
    wids = [f"fq-many-{i}" for i in range(24)]
    store.create_workflows([_run(w, executor_id="engine-a") for w in wids])
    for w in wids[::3]:
        store.record(w, _step(0, w))  # an equal record already there
    for w in wids[1::3]:
        store.record(w, _step(0, "other"))  # a different one: refused
    start = threading.Barrier(len(wids))
    answers: dict[str, Any] = {}

    def finish(w: str) -> None:
        start.wait()
        try:
            answers[w] = store.finish_workflow(
                w, Status.SUCCESS, Value(w), executor_id="engine-a", record=_step(0, w)
            )
        except Exception as exc:
            answers[w] = type(exc).__name__

    threads = [threading.Thread(target=finish, args=(w,)) for w in wids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _equal(
        "concurrent finish_workflow(record=) of many runs",
        {w: (RecordConflict.__name__ if i % 3 == 1 else True) for i, w in enumerate(wids)},
        answers,
    )
    _equal(
        "runs and logs after concurrent finishes with records",
        [
            (Status.PENDING, None, "", None, [_step(0, "other")])
            if i % 3 == 1
            else (Status.SUCCESS, Value(w), "", None, [_step(0, w)])
            for i, w in enumerate(wids)
        ],
        [_finish_state(store, w) for w in wids],
    )


def check_finish_with_record_notifies_once(store: Store) -> None:
    store.create_workflow(_run("fn-1"), records=[_step(0)])
    store.create_workflow(_run("fn-2"), records=[_step(0, "first")])
    store.create_workflow(_run("fn-3", status=Status.CANCELLED))
    seen: list[tuple[str, str]] = []
    visible: list[Any] = []
    failures: list[str] = []
    lock = threading.Lock()

    def callback(kind: str, key: str) -> None:
        # After the commit: the record and the finish can both be read already.
        try:
            if kind == "finished" and key == "fn-1":
                row = store.get_workflow("fn-1")
                visible.append((row.status if row else None, len(store.load_log("fn-1"))))
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
        with lock:
            seen.append((kind, key))

    unsubscribe = store.subscribe(callback)
    try:
        store.finish_workflow("fn-1", Status.SUCCESS, Value(1), record=_step(1))
        _raises(
            "finish_workflow(record=) over a different completed record",
            RecordConflict,
            lambda: store.finish_workflow("fn-2", Status.SUCCESS, Value(1), record=_step(0)),
        )
        store.finish_workflow("fn-3", Status.SUCCESS, Value(1), record=_step(0))

        def heard() -> bool:
            with lock:
                return ("finished", "fn-1") in seen

        _expect(
            _wait_for(heard),
            "notification for finish_workflow(record=)",
            ("finished", "fn-1"),
            seen,
        )
        time.sleep(0.3)  # room for a duplicate, or for the refused finishes, to arrive
        with lock:
            mine = [n for n in seen if n[1] in ("fn-1", "fn-2", "fn-3")]
        _equal(
            "notifications of one finish with a record and two refused ones",
            [("finished", "fn-1")],
            mine,
        )
        _equal("errors from the store called inside a subscriber", [], failures)
        _equal("what the callback read", [(Status.SUCCESS, 2)], visible)
    finally:
        unsubscribe()


def check_set_status(store: Store) -> None:
    store.create_workflow(_run("st-2", executor_id="a"))
    store.bump_recovery("st-2")
    _equal(
        "set_status when only_from does not match",
        False,
        store.set_status("st-2", Status.CANCELLED, only_from=[Status.ENQUEUED]),
    )
    row = store.get_workflow("st-2")
    _equal("status after a refused set_status", Status.PENDING, row.status if row else None)
    _equal(
        "set_status with an empty only_from",
        False,
        store.set_status("st-2", Status.CANCELLED, only_from=[]),
    )
    _equal(
        "set_status when only_from matches",
        True,
        store.set_status(
            "st-2",
            Status.PARKED,
            only_from=[Status.ENQUEUED, Status.PENDING],
            error="crashed 5 times",
        ),
    )
    row = _present("get_workflow after set_status", store.get_workflow("st-2"))
    _equal("status after set_status", Status.PARKED, row.status)
    _equal("error after set_status", "crashed 5 times", row.error)
    _equal("executor kept without executor_id", "a", row.executor_id)
    _equal("recovery attempts kept without reset_recovery", 1, row.recovery_attempts)
    _equal(
        "set_status reassigning and resetting",
        True,
        store.set_status("st-2", Status.PENDING, executor_id="b", reset_recovery=True),
    )
    row = _present("get_workflow after resume", store.get_workflow("st-2"))
    _equal("status after resume", Status.PENDING, row.status)
    _equal("executor after reassignment", "b", row.executor_id)
    _equal("recovery attempts after reset", 0, row.recovery_attempts)
    _equal("error cleared by set_status without error", "", row.error)
    _equal("set_status of an unknown run", False, store.set_status("nope", Status.CANCELLED))


def check_bump_recovery(store: Store) -> None:
    store.create_workflow(_run("st-3", recovery_attempts=2))
    _equal("first bump_recovery", 3, store.bump_recovery("st-3"))
    _equal("second bump_recovery", 4, store.bump_recovery("st-3"))
    row = store.get_workflow("st-3")
    _equal("recovery_attempts stored", 4, row.recovery_attempts if row else None)
    _raises(
        "bump_recovery of an unknown run", WorkflowNotFound, lambda: store.bump_recovery("nope")
    )


def check_delete(store: Store) -> None:
    store.create_workflow(_run("d-1"))
    store.create_workflow(_run("d-1-keep"))
    store.record("d-1", _step(0), event=EventWrite("k", 1))
    store.send_message("d-1", "t", "m", idempotency_key="key")
    store.send_message("d-1-keep", "t", "m", idempotency_key="key")
    store.record("d-1-keep", _step(0), event=EventWrite("k", 2))
    _equal("delete_workflow of an existing run", True, store.delete_workflow("d-1"))
    _equal("get_workflow after delete", None, store.get_workflow("d-1"))
    _equal("load_log after delete", [], _log_of(store, "d-1"))
    _equal("peek_message after delete", None, store.peek_message("d-1", "t"))
    _equal("get_event after delete", (False, None), store.get_event("d-1", "k"))
    _equal("delete_workflow again", False, store.delete_workflow("d-1"))
    _equal(
        "list_workflows after delete", ["d-1-keep"], _ids(store.list_workflows(WorkflowFilter()))
    )
    _raises(
        "send_message to a deleted run",
        WorkflowNotFound,
        lambda: store.send_message("d-1", "t", "m"),
    )
    _, created = store.create_workflow(_run("d-1"))
    _equal("create_workflow of a deleted id", True, created)
    _equal("log of the re-created run", [], _log_of(store, "d-1"))
    _equal(
        "a deleted run's idempotency keys are gone with it",
        True,
        store.send_message("d-1", "t", "m", idempotency_key="key"),
    )
    _equal("other run's log", [_step(0)], _log_of(store, "d-1-keep"))
    _equal("other run's event", (True, 2), store.get_event("d-1-keep", "k"))
    _expect(
        store.peek_message("d-1-keep", "t") is not None,
        "other run's inbox after delete",
        "a message",
        None,
    )
    _equal(
        "other run's key still used",
        False,
        store.send_message("d-1-keep", "t", "m", idempotency_key="key"),
    )


# -- continue-as-new ------------------------------------------------------------

_CW_INPUTS = {"args": [1, "a"], "kwargs": {"k": [2]}}
_CW_NEXT = {"args": [7, "b"], "kwargs": {}}


def _continued_run(store: Store, workflow_id: str) -> WorkflowRow:
    """A PENDING run with two records, a message waiting and an event set."""
    created, _ = store.create_workflow(
        _run(
            workflow_id,
            inputs=_CW_INPUTS,
            executor_id="exec-a",
            app_version="v1",
            parent_id="cw-parent",
            trace_context="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            created_at=_T0,
        )
    )
    store.record(workflow_id, _step(0, "first"), executor_id="exec-a")
    store.record(workflow_id, _step(1, "second"), event=EventWrite("k", "v"))
    store.send_message(workflow_id, "t", "kept", idempotency_key="m1")
    return created


def check_continue_workflow(store: Store) -> None:
    _continued_run(store, "cw-1")
    seen: list[tuple[str, str]] = []
    unsubscribe = store.subscribe(lambda kind, key: seen.append((kind, key)))
    later = _T0 + timedelta(hours=1)
    try:
        live = store.continue_workflow(
            "cw-1", _CW_NEXT, generation=0, executor_id="exec-a", now=later
        )
        _expect(
            _wait_for(lambda: ("finished", "cw-1#0") in seen),
            "continue_workflow notifies ('finished', archived id)",
            ("finished", "cw-1#0"),
            seen,
        )
    finally:
        unsubscribe()
    _expect(("finished", "cw-1") not in seen, "no 'finished' for the live id", [], seen)
    stored = _present("the live run after continue_workflow", store.get_workflow("cw-1"))
    _equal("continue_workflow returns the live row as stored", stored, live)
    _equal("the live run's status", Status.PENDING, stored.status)
    _equal("the live run's generation", 1, stored.generation)
    _equal("the live run's new inputs", _CW_NEXT, stored.inputs)
    _equal("the live run's started_at", later, stored.started_at)
    _equal("the live run keeps its created_at", _T0, stored.created_at)
    _equal("the live run keeps its owner", "exec-a", stored.executor_id)
    _equal("the live run keeps its parent", "cw-parent", stored.parent_id)
    _equal("the live run's wake_at", None, stored.wake_at)
    _equal("the live run's log is empty", [], _log_of(store, "cw-1"))
    archived = _present("the archived generation", store.get_workflow("cw-1#0"))
    _equal("the archived generation's status", Status.CONTINUED, archived.status)
    _equal("the archived generation's continued_as", "cw-1", archived.continued_as)
    _equal("the archived generation's number", 0, archived.generation)
    _equal("the archived generation's inputs", _CW_INPUTS, archived.inputs)
    _equal("the archived generation's name", "wf", archived.name)
    _equal("the archived generation's owner", "exec-a", archived.executor_id)
    _equal("the archived generation's version", "v1", archived.app_version)
    _equal("the archived generation's parent", "cw-parent", archived.parent_id)
    _equal("the archived generation's trace", stored.trace_context, archived.trace_context)
    _equal("the archived generation 0 began when the run was created", _T0, archived.created_at)
    _equal("the archived generation ended then", later, archived.updated_at)
    _equal(
        "the archived generation holds the generation's log",
        [_step(0, "first"), _step(1, "second", attempts=1)],
        _log_of(store, "cw-1#0"),
    )
    message = store.peek_message("cw-1", "t")
    _equal("a message not consumed carries over", "kept", message.payload if message else None)
    _equal("events stay with the id", (True, "v"), store.get_event("cw-1", "k"))
    _equal(
        "the next generation records from position 0",
        _step(0, "new"),
        store.record("cw-1", _step(0, "new"), executor_id="exec-a"),
    )
    even_later = later + timedelta(hours=1)
    store.continue_workflow("cw-1", _CW_INPUTS, generation=1, executor_id=None, now=even_later)
    second = _present("the second archived generation", store.get_workflow("cw-1#1"))
    _equal("generation 1 began when generation 0 ended", later, second.created_at)
    _equal("generation 1's log", [_step(0, "new")], _log_of(store, "cw-1#1"))
    _equal(
        "WorkflowFilter(continued_as=...) lists a run's generations, oldest first",
        ["cw-1#0", "cw-1#1"],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-1"))),
    )
    _equal(
        "status CONTINUED is listed",
        ["cw-1#0", "cw-1#1"],
        _ids(store.list_workflows(WorkflowFilter(status=Status.CONTINUED))),
    )
    _equal("the live run's generation after two", 2, store.get_workflow("cw-1").generation)  # type: ignore[union-attr]


def check_continue_workflow_retried_after_a_lost_answer(store: Store) -> None:
    _continued_run(store, "cw-2")
    first = store.continue_workflow("cw-2", _CW_NEXT, generation=0, executor_id="exec-a", now=_T0)
    again = store.continue_workflow("cw-2", _CW_NEXT, generation=0, executor_id="exec-a", now=_T0)
    _equal("a retry of a continue that committed answers with the run's row", first, again)
    _equal("the retry wrote no generation", 1, store.get_workflow("cw-2").generation)  # type: ignore[union-attr]
    _equal("the archived log after the retry", 2, len(_log_of(store, "cw-2#0")))
    _equal(
        "the retry archived nothing more",
        ["cw-2#0"],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-2"))),
    )
    _raises(
        "a stale continue with other inputs",
        RecordConflict,
        lambda: store.continue_workflow(
            "cw-2", _CW_INPUTS, generation=0, executor_id="exec-a", now=_T0
        ),
    )


def check_continue_workflow_refusals(store: Store) -> None:
    _continued_run(store, "cw-3")
    log = _log_of(store, "cw-3")

    def attempt(generation: int = 0, executor: str | None = "exec-a") -> Callable[[], Any]:
        return lambda: store.continue_workflow(
            "cw-3", _CW_NEXT, generation=generation, executor_id=executor, now=_T0
        )

    _raises("continue by another executor", RecordConflict, attempt(executor="exec-b"))
    _raises("continue from a stale generation", RecordConflict, attempt(generation=3))
    _raises(
        "continue of a missing run",
        WorkflowNotFound,
        lambda: store.continue_workflow(
            "cw-none", _CW_NEXT, generation=0, executor_id=None, now=_T0
        ),
    )
    _raises("a negative generation", ValueError, attempt(generation=-1))
    store.create_workflow(_run("cw-3#0"))
    message = str(_raises("an archived id another run holds", ValueError, attempt()))
    _expect("'cw-3#0'" in message, "the error names the archived id", "'cw-3#0'", message)
    store.delete_workflow("cw-3#0")
    store.set_status("cw-3", Status.CANCELLED)
    _raises("continue of a CANCELLED run", RecordConflict, attempt())
    row = _present("the run after the refusals", store.get_workflow("cw-3"))
    _equal("its generation after the refusals", 0, row.generation)
    _equal("its inputs after the refusals", _CW_INPUTS, row.inputs)
    _equal("its log after the refusals", log, _log_of(store, "cw-3"))
    _equal(
        "nothing archived after the refusals",
        [],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-3"))),
    )
    at_limit = "x" * MAX_NAME_BYTES
    store.create_workflow(_run(at_limit))
    message = str(
        _raises(
            "an id whose archived id would be too long",
            ValueError,
            lambda: store.continue_workflow(
                at_limit, _CW_NEXT, generation=0, executor_id=None, now=_T0
            ),
        )
    )
    _expect(
        "too long" in message, "the error says the archived id is too long", "too long", message
    )
    _equal("the long-named run is unchanged", 0, store.get_workflow(at_limit).generation)  # type: ignore[union-attr]


def check_delete_takes_the_generations(store: Store) -> None:
    _continued_run(store, "cw-4")
    _continued_run(store, "cw-4-keep")
    store.continue_workflow("cw-4", _CW_NEXT, generation=0, executor_id=None, now=_T0)
    store.continue_workflow("cw-4", _CW_NEXT, generation=1, executor_id=None, now=_T0)
    store.continue_workflow("cw-4-keep", _CW_NEXT, generation=0, executor_id=None, now=_T0)
    _equal("delete_workflow of a continued run", True, store.delete_workflow("cw-4"))
    for gone in ("cw-4", "cw-4#0", "cw-4#1"):
        _equal(f"get_workflow({gone!r}) after the delete", None, store.get_workflow(gone))
        _equal(f"load_log({gone!r}) after the delete", [], _log_of(store, gone))
    _equal(
        "another run's generations stay",
        ["cw-4-keep#0"],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-4-keep"))),
    )
    _equal("another run's archived log stays", 2, len(_log_of(store, "cw-4-keep#0")))
    _equal("deleting an archived generation alone", True, store.delete_workflow("cw-4-keep#0"))
    _present("the live run after its generation's delete", store.get_workflow("cw-4-keep"))


# -- queues -------------------------------------------------------------------


def _enqueue(store: Store, wid: str, **fields: Any) -> None:
    fields.setdefault("queue", "q")
    fields.setdefault("app_version", "v1")
    fields.setdefault("executor_id", "")
    store.create_workflow(_run(wid, status=Status.ENQUEUED, **fields))


def check_claim_order_and_readiness(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    _enqueue(store, "cl-late", priority=5, created_at=_T0)
    _enqueue(store, "cl-b", priority=0, created_at=_T0 + timedelta(seconds=2))
    _enqueue(store, "cl-a", priority=0, created_at=_T0 + timedelta(seconds=2))
    _enqueue(store, "cl-first", priority=0, created_at=_T0 + timedelta(seconds=1))
    _enqueue(store, "cl-urgent", priority=-3, created_at=_T0 + timedelta(seconds=9))
    _enqueue(store, "cl-due", priority=9, wake_at=now)
    _enqueue(store, "cl-delayed", priority=-9, wake_at=now + timedelta(microseconds=1))
    _enqueue(store, "cl-v2", app_version="v2")
    _enqueue(store, "cl-other", queue="other")
    store.create_workflow(_run("cl-pending", queue="q", app_version="v1"))
    claimed = store.claim("q", executor_id="e1", app_version="v1", limits=ClaimLimits(100), now=now)
    _equal(
        "claim order: priority, then created_at, then id; delayed, other versions and "
        "other queues left",
        ["cl-urgent", "cl-first", "cl-a", "cl-b", "cl-late", "cl-due"],
        _ids(claimed),
    )
    for row in claimed:
        _equal(f"status of claimed {row.workflow_id}", Status.PENDING, row.status)
        _equal(f"executor of claimed {row.workflow_id}", "e1", row.executor_id)
        _equal(f"started_at of claimed {row.workflow_id}", now, row.started_at)
        _equal(f"wake_at of claimed {row.workflow_id}", None, row.wake_at)
        _equal(f"claimed {row.workflow_id} as stored", store.get_workflow(row.workflow_id), row)
        # None ("not known") is allowed: the engine then reads the log.
        _expect(
            row.has_log in (False, None),
            f"has_log of {row.workflow_id}, claimed for the first time",
            "False (or None)",
            row.has_log,
        )
    _equal(
        "a second claim",
        [],
        store.claim("q", executor_id="e2", app_version="v1", limits=ClaimLimits(100), now=now),
    )
    later = store.claim(
        "q",
        executor_id="e2",
        app_version="v1",
        limits=ClaimLimits(100),
        now=now + timedelta(seconds=1),
    )
    _equal("a claim after the delay", ["cl-delayed"], _ids(later))
    delayed = store.get_workflow("cl-v2")
    _equal("run of another version", Status.ENQUEUED, delayed.status if delayed else None)


def check_deadlines_round_trip_and_claim_starts_timeouts(store: Store) -> None:
    """A run's deadline and timeout are kept as given (alone and in a batch); a claim
    starts a queued run's timeout then, keeping an earlier deadline of its own; and
    `set_deadline` replaces or clears both, whatever the run's status."""
    deadline = _T0 + timedelta(minutes=5, microseconds=7)
    stored, _ = store.create_workflow(_run("dl-start", deadline=deadline, timeout=90.5))
    for what, row in (("as created", stored), ("as read", store.get_workflow("dl-start"))):
        _equal(f"deadline {what}", deadline, row.deadline if row else None)
        _equal(f"timeout {what}", 90.5, row.timeout if row else None)
    if row is not None:
        _aware_utc("a stored deadline", row.deadline)
    _equal("a run without one", (None, None), _deadline_of(store.create_workflow(_run("dl-no"))[0]))
    batch = store.create_workflows(
        [_run("dl-many-a", deadline=deadline), _run("dl-many-b", timeout=3.25)]
    )
    _equal(
        "deadlines of a batch",
        [(deadline, None), (None, 3.25)],
        [_deadline_of(row) for row, _ in batch],
    )
    _equal(
        "deadlines of a batch, as read",
        [(deadline, None), (None, 3.25)],
        [_deadline_of(store.get_workflow(wid)) for wid in ("dl-many-a", "dl-many-b")],
    )
    now = _T0 + timedelta(hours=1)
    _enqueue(store, "dl-q-timeout", timeout=30.0, created_at=_T0)
    _enqueue(
        store,
        "dl-q-earlier",
        timeout=3600.0,
        deadline=now + timedelta(seconds=10),
        created_at=_T0 + timedelta(seconds=1),
    )
    _enqueue(
        store,
        "dl-q-later",
        timeout=5.0,
        deadline=now + timedelta(days=1),
        created_at=_T0 + timedelta(seconds=2),
    )
    _enqueue(
        store,
        "dl-q-absolute",
        deadline=now - timedelta(seconds=1),
        created_at=_T0 + timedelta(seconds=3),
    )
    _enqueue(store, "dl-q-none", created_at=_T0 + timedelta(seconds=4))
    claimed = store.claim("q", executor_id="e1", app_version="v1", limits=ClaimLimits(10), now=now)
    expected = {
        "dl-q-timeout": (now + timedelta(seconds=30), 30.0),
        "dl-q-earlier": (now + timedelta(seconds=10), 3600.0),
        "dl-q-later": (now + timedelta(seconds=5), 5.0),
        "dl-q-absolute": (now - timedelta(seconds=1), None),
        "dl-q-none": (None, None),
    }
    _equal("runs claimed", sorted(expected), sorted(_ids(claimed)))
    for row in claimed:
        _equal(
            f"deadline of claimed {row.workflow_id} (timeout from the claim, an earlier "
            "deadline kept)",
            expected[row.workflow_id],
            _deadline_of(row),
        )
        _equal(
            f"deadline of claimed {row.workflow_id}, as read",
            expected[row.workflow_id],
            _deadline_of(store.get_workflow(row.workflow_id)),
        )
    store.release("e1")
    again = store.claim(
        "q",
        executor_id="e2",
        app_version="v1",
        limits=ClaimLimits(10),
        now=now + timedelta(minutes=1),
    )
    _equal(
        "a run released and claimed again keeps the deadline its first claim set",
        now + timedelta(seconds=30),
        {row.workflow_id: row.deadline for row in again}.get("dl-q-timeout"),
    )
    store.set_status("dl-start", Status.CANCELLED, only_from=(Status.PENDING,))
    later = now + timedelta(days=2)
    _equal("set_deadline on a cancelled run", True, store.set_deadline("dl-start", later, 60.0))
    _equal("deadline set", (later, 60.0), _deadline_of(store.get_workflow("dl-start")))
    _equal("set_deadline to clear it", True, store.set_deadline("dl-start", None, None))
    _equal("deadline cleared", (None, None), _deadline_of(store.get_workflow("dl-start")))
    _equal("set_deadline of a missing run", False, store.set_deadline("dl-nobody", later, None))


def _deadline_of(row: WorkflowRow | None) -> tuple[datetime | None, float | None] | None:
    return None if row is None else (row.deadline, row.timeout)


def check_claim_limits(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    for i in range(6):
        _enqueue(store, f"lim-{i}", created_at=_T0 + timedelta(seconds=i))
    store.create_workflow(
        _run(
            "lim-running",
            queue="q",
            executor_id="elsewhere",
            app_version="other",
            started_at=now - timedelta(seconds=90),
        )
    )

    def claim(limits: ClaimLimits) -> list[str]:
        return _ids(store.claim("q", executor_id="e", app_version="v1", limits=limits, now=now))

    _equal("claim with limit 0", [], claim(ClaimLimits(0)))
    _equal("claim with limit 2", ["lim-0", "lim-1"], claim(ClaimLimits(2)))
    # Three PENDING now (two claimed, one running elsewhere): concurrency 4 leaves one.
    _equal("claim under concurrency 4", ["lim-2"], claim(ClaimLimits(10, concurrency=4)))
    _equal("claim at the concurrency limit", [], claim(ClaimLimits(10, concurrency=4)))
    # Started within the last 60 s: lim-0..2 (at `now`); lim-running started 90 s ago.
    _equal(
        "claim under a rate limit of 4 per minute",
        ["lim-3"],
        claim(ClaimLimits(10, rate_limit=(4, 60.0))),
    )
    _equal("claim at the rate limit", [], claim(ClaimLimits(10, rate_limit=(4, 60.0))))
    _equal(
        "claim under a rate limit counting 100 s back",
        [],
        claim(ClaimLimits(10, rate_limit=(5, 100.0))),
    )
    _equal(
        "claim with every limit",
        ["lim-4"],
        claim(ClaimLimits(1, concurrency=10, rate_limit=(10, 60.0))),
    )


def check_concurrent_claims(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    for i in range(30):
        _enqueue(store, f"cc-{i:02d}", created_at=_T0 + timedelta(seconds=i))
    claimers = 6
    barrier = threading.Barrier(claimers)
    results: list[Any] = [None] * claimers

    def claim(index: int) -> None:
        barrier.wait()
        try:
            taken: list[str] = []
            for _ in range(4):
                taken += _ids(
                    store.claim(
                        "q",
                        executor_id=f"e{index}",
                        app_version="v1",
                        limits=ClaimLimits(3, concurrency=7),
                        now=now,
                    )
                )
            results[index] = taken
        except BaseException as exc:
            results[index] = exc

    workers = [threading.Thread(target=claim, args=(i,)) for i in range(claimers)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    errors = [r for r in results if isinstance(r, BaseException)]
    _equal("exceptions from concurrent claims", [], errors)
    taken = [wid for r in results for wid in r]
    _equal("runs claimed twice", [], sorted({w for w in taken if taken.count(w) > 1}))
    _equal("runs claimed under concurrency 7 by 6 engines at once", 7, len(taken))
    _equal("which runs were claimed", [f"cc-{i:02d}" for i in range(7)], sorted(taken))


def check_heartbeat_and_take_over(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    store.heartbeat("dead", "v1", now - timedelta(seconds=100))
    store.heartbeat("alive", "v1", now - timedelta(seconds=10))
    store.heartbeat("me", "v1", now)
    for wid, status, executor, version in (
        ("to-1", Status.PENDING, "dead", "v1"),
        ("to-2", Status.PENDING, "dead", "v1"),
        ("to-v2", Status.PENDING, "dead", "v2"),
        ("to-alive", Status.PENDING, "alive", "v1"),
        ("to-queued", Status.ENQUEUED, "dead", "v1"),
        ("to-done", Status.SUCCESS, "dead", "v1"),
        ("to-silent", Status.PENDING, "never-beat", "v1"),
    ):
        store.create_workflow(_run(wid, status=status, executor_id=executor, app_version=version))
    taken = store.take_over(executor_id="me", app_version="v1", lease_seconds=30, now=now)
    _equal("take_over of runs whose executor's lease ran out", ["to-1", "to-2"], sorted(taken))
    owners = {}
    for wid in ("to-1", "to-2", "to-v2", "to-alive", "to-queued", "to-done", "to-silent"):
        row = store.get_workflow(wid)
        owners[wid] = row.executor_id if row else None
    _equal(
        "owners after take_over",
        {
            "to-1": "me",
            "to-2": "me",
            "to-v2": "dead",
            "to-alive": "alive",
            "to-queued": "dead",
            "to-done": "dead",
            "to-silent": "never-beat",
        },
        owners,
    )
    _raises(
        "record() by the executor that lost its runs",
        RecordConflict,
        lambda: store.record("to-1", _step(0), executor_id="dead"),
    )
    _equal("record() by the new owner", _step(0), store.record("to-1", _step(0), executor_id="me"))
    _equal(
        "finish_workflow by the executor that lost the run",
        False,
        store.finish_workflow("to-2", Status.SUCCESS, None, executor_id="dead"),
    )
    _equal(
        "finish_workflow by the new owner",
        True,
        store.finish_workflow("to-2", Status.SUCCESS, None, executor_id="me"),
    )
    _equal(
        "a second take_over",
        [],
        store.take_over(executor_id="me", app_version="v1", lease_seconds=30, now=now),
    )
    store.heartbeat("alive", "v1", now - timedelta(seconds=60))
    _equal(
        "take_over after a heartbeat went stale",
        ["to-alive"],
        store.take_over(executor_id="me", app_version="v1", lease_seconds=30, now=now),
    )
    store.heartbeat("dead", "v2", now)
    _equal(
        "take_over of a revived executor's runs",
        [],
        store.take_over(executor_id="me", app_version="v2", lease_seconds=30, now=now),
    )


def check_release(store: Store) -> None:
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def callback(kind: str, key: str) -> None:
        with lock:
            seen.append((kind, key))

    for wid, executor, queue in (
        ("rl-1", "e", "qa"),
        ("rl-2", "e", "qb"),
        ("rl-3", "e", "qa"),
        ("rl-plain", "e", None),
        ("rl-other", "f", "qa"),
    ):
        store.create_workflow(
            _run(
                wid, executor_id=executor, queue=queue, created_at=_T0 + timedelta(seconds=len(wid))
            )
        )
    store.create_workflow(_run("rl-done", executor_id="e", queue="qa", status=Status.SUCCESS))
    store.record("rl-1", Record(0, "step", "began", Value(1)))
    unsubscribe = store.subscribe(callback)
    try:
        released = store.release("e")
        _equal("runs released", ["rl-1", "rl-2", "rl-3"], sorted(released))
        statuses = {}
        for wid in ("rl-1", "rl-2", "rl-3", "rl-plain", "rl-other", "rl-done"):
            row = store.get_workflow(wid)
            statuses[wid] = (row.status, row.executor_id) if row else None
        _equal(
            "runs after release",
            {
                "rl-1": (Status.ENQUEUED, ""),
                "rl-2": (Status.ENQUEUED, ""),
                "rl-3": (Status.ENQUEUED, ""),
                "rl-plain": (Status.PENDING, "e"),
                "rl-other": (Status.PENDING, "f"),
                "rl-done": (Status.SUCCESS, "e"),
            },
            statuses,
        )

        def heard() -> bool:
            with lock:
                return {("enqueued", "qa"), ("enqueued", "qb")} <= set(seen)

        _expect(
            _wait_for(heard),
            "notifications for released queues",
            [("enqueued", "qa"), ("enqueued", "qb")],
            seen,
        )
        _equal("a second release", [], store.release("e"))
        again = store.claim(
            "qa", executor_id="g", app_version="", limits=ClaimLimits(9), now=datetime.now(UTC)
        )
        _equal("released runs can be claimed again", ["rl-1", "rl-3"], sorted(_ids(again)))
        # Saying False for a run that has records would make it start over
        # from position 0: never allowed. None ("not known") is.
        has_log = {row.workflow_id: row.has_log for row in again}
        _expect(
            has_log.get("rl-1") in (True, None) and has_log.get("rl-3") in (False, None),
            "has_log of released runs claimed again (rl-1 had begun)",
            {"rl-1": "True (or None)", "rl-3": "False (or None)"},
            has_log,
        )
    finally:
        unsubscribe()


# -- listing ------------------------------------------------------------------


def check_list_filters(store: Store) -> None:
    specs = [
        ("l-0", Status.PENDING, "alpha", "e1", "v1", None, None),
        ("l-1", Status.SUCCESS, "alpha", "e1", "v2", "l-0", None),
        ("l-2", Status.ENQUEUED, "beta", "e2", "v1", None, "q1"),
        ("l-3", Status.ERROR, "beta", "e1", "v1", "l-0", "q1"),
        ("l-4", Status.PENDING, "gamma", "e2", "v2", None, "q2"),
        ("l-5", Status.CANCELLED, "alpha", "e2", "v1", None, None),
    ]
    # Created out of id order, so an implementation sorting by id alone fails.
    for index in (3, 0, 5, 1, 4, 2):
        wid, status, name, executor, version, parent, queue = specs[index]
        store.create_workflow(
            _run(
                wid,
                status=status,
                name=name,
                executor_id=executor,
                app_version=version,
                parent_id=parent,
                queue=queue,
                created_at=_T0 + timedelta(seconds=index),
            )
        )
    cases: list[tuple[str, WorkflowFilter, list[str]]] = [
        ("no filter", WorkflowFilter(), ["l-0", "l-1", "l-2", "l-3", "l-4", "l-5"]),
        ("status", WorkflowFilter(status=Status.PENDING), ["l-0", "l-4"]),
        ("statuses", WorkflowFilter(status=[Status.ERROR, Status.SUCCESS]), ["l-1", "l-3"]),
        ("empty status list", WorkflowFilter(status=[]), []),
        ("name", WorkflowFilter(name="alpha"), ["l-0", "l-1", "l-5"]),
        ("executor", WorkflowFilter(executor_id="e2"), ["l-2", "l-4", "l-5"]),
        ("version", WorkflowFilter(app_version="v2"), ["l-1", "l-4"]),
        ("parent", WorkflowFilter(parent_id="l-0"), ["l-1", "l-3"]),
        ("queue", WorkflowFilter(queue="q1"), ["l-2", "l-3"]),
        ("since (inclusive)", WorkflowFilter(since=_T0 + timedelta(seconds=4)), ["l-4", "l-5"]),
        ("until (exclusive)", WorkflowFilter(until=_T0 + timedelta(seconds=2)), ["l-0", "l-1"]),
        (
            "since and until",
            WorkflowFilter(since=_T0 + timedelta(seconds=1), until=_T0 + timedelta(seconds=3)),
            ["l-1", "l-2"],
        ),
        ("limit", WorkflowFilter(limit=2), ["l-0", "l-1"]),
        ("limit 0", WorkflowFilter(limit=0), []),
        ("offset", WorkflowFilter(offset=4), ["l-4", "l-5"]),
        ("limit and offset", WorkflowFilter(limit=2, offset=3), ["l-3", "l-4"]),
        ("offset past the end", WorkflowFilter(offset=10), []),
        (
            "combined",
            WorkflowFilter(
                status=[Status.PENDING, Status.CANCELLED], executor_id="e2", app_version="v1"
            ),
            ["l-5"],
        ),
        ("filter then page", WorkflowFilter(name="alpha", offset=1, limit=1), ["l-1"]),
        ("no match", WorkflowFilter(name="zeta"), []),
    ]
    for label, where, expected in cases:
        _equal(f"list_workflows by {label}", expected, _ids(store.list_workflows(where)))
    rows = store.list_workflows(WorkflowFilter(name="beta"))
    _equal(
        "rows returned by list_workflows equal get_workflow's",
        [store.get_workflow("l-2"), store.get_workflow("l-3")],
        rows,
    )


def check_list_order_ties_broken_by_id(store: Store) -> None:
    for wid in ("t-c", "t-a", "T-b", "t-b"):
        store.create_workflow(_run(wid, created_at=_T0))
    store.create_workflow(_run("t-0", created_at=_T0 - timedelta(microseconds=1)))
    _equal(
        "list_workflows order: created_at, then workflow_id (code point order)",
        ["t-0", "T-b", "t-a", "t-b", "t-c"],
        _ids(store.list_workflows(WorkflowFilter())),
    )


# -- values -------------------------------------------------------------------


def check_datetimes_round_trip(store: Store) -> None:
    instants = [
        _T0,
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2024, 3, 31, 2, 30, 0, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ]
    store.create_workflow(_run("dt-1", created_at=instants[0]))
    records = [
        Record(i, "sleep", f"s{i}", Value(None), started_at=at, completed_at=at, wake_at=at)
        for i, at in enumerate(instants)
    ]
    for record in records:
        store.record("dt-1", record, wake_at=record.wake_at)
    loaded = _log_of(store, "dt-1")
    _equal("records with datetimes from year 1 to 9999", records, loaded)
    for record in loaded:
        for field in ("started_at", "completed_at", "wake_at"):
            value = getattr(record, field)
            _expect(
                value is not None and value.tzinfo is not None,
                f"{field} of record {record.position} is timezone-aware",
                "aware",
                value,
            )
            if instants[record.position].tzinfo is UTC:
                _aware_utc(f"{field} of record {record.position}", value)
    row = store.get_workflow("dt-1")
    _equal("run wake_at set from an offset datetime", instants[-1], row.wake_at if row else None)


def check_outcomes_round_trip(store: Store) -> None:
    values = [
        None,
        True,
        False,
        0,
        -1,
        2**53 + 1,
        2**64,
        -(2**70),
        0.1,
        -2.5e-300,
        1e300,
        1.0,
        "",
        "text",
        [],
        {},
        [1, [2, [3, []]]],
        {"nested": {"list": [1, "a", None, {"deep": [True, 0.5]}]}, "b": {}, "a": []},
        {"z": 1, "a": 2, "m": 3},
    ]
    store.create_workflow(_run("o-1"))
    records: list[Record] = [Record(i, "step", "v", Value(v)) for i, v in enumerate(values)]
    records.append(
        Record(
            len(records),
            "step",
            "boom",
            Failure(
                ErrorInfo(
                    module="myapp.errors",
                    qualname="Outer.PaymentDeclined",
                    message="card 4242 declined",
                    args=["card 4242 declined", 402, {"retry": False, "codes": [1, 2]}, None],
                    traceback=(
                        "Traceback (most recent call last):\n"
                        '  File "x.py", line 1\nPaymentDeclined\n'
                    ),
                )
            ),
        )
    )
    records.append(
        Record(len(records), "step", "bare", Failure(ErrorInfo("builtins", "RuntimeError", "")))
    )
    for record in records:
        store.record("o-1", record)
    loaded = _log_of(store, "o-1")
    _equal("outcomes read back", records, loaded)
    for record, back in zip(records, loaded, strict=False):
        if isinstance(record.outcome, Value) and isinstance(back.outcome, Value):
            _equal(
                f"type of the value at position {record.position}",
                type(record.outcome.data),
                type(back.outcome.data),
            )
            if isinstance(record.outcome.data, dict) and isinstance(back.outcome.data, dict):
                _equal(
                    f"key order of the dict at position {record.position}",
                    list(record.outcome.data),
                    list(back.outcome.data),
                )


def check_inputs_and_results_round_trip(store: Store) -> None:
    inputs = {"args": [1, "a", [None]], "kwargs": {"amount": 10.25, "tags": ["x"]}}
    store.create_workflow(_run("o-2", inputs=inputs))
    fetched = store.get_workflow("o-2")
    _equal("inputs read back", inputs, fetched.inputs if fetched else None)
    store.create_workflow(_run("o-2-none"))
    fetched = store.get_workflow("o-2-none")
    _equal("inputs of None read back", None, fetched.inputs if fetched else "missing")
    result = Value({"ok": [1, 2]})
    store.finish_workflow("o-2", Status.SUCCESS, result)
    fetched = store.get_workflow("o-2")
    _equal("result read back", result, fetched.result if fetched else None)
    listed = store.list_workflows(WorkflowFilter(status=Status.SUCCESS))
    _equal("result read back by list_workflows", [result], [r.result for r in listed])


def check_unicode_and_large_payloads(store: Store) -> None:
    wid = "ünï-çødé 🚀 工作流 עברית"
    store.create_workflow(_run(wid, name="名前 ✓", inputs={"args": ["😀" * 100]}))
    store.create_workflow(_run("plain"))
    topic = "тема/🙂"
    big_text = "résumé ✓ 漢字 " * 40_000  # about 600 kB of UTF-8
    big_list = [{"i": i, "s": "x" * 10} for i in range(10_000)]
    escapes = 'tab\tnewline\nquote"backslash\\ nul-free \u2028 \U0001f600 \x7f \x01'
    store.send_message(wid, topic, big_text, idempotency_key="ключ 🔑")
    store.record(
        wid,
        Record(0, "step", "大きい 🐘", Value(big_list)),
        event=EventWrite("ключ", escapes),
        send=OutgoingMessage("plain", topic, {"ü": escapes}),
    )
    row = store.get_workflow(wid)
    _equal("unicode name read back", "名前 ✓", row.name if row else None)
    _equal("unicode inputs read back", {"args": ["😀" * 100]}, row.inputs if row else None)
    message = store.peek_message(wid, topic)
    _equal("large unicode payload read back", big_text, message.payload if message else None)
    _equal(
        "large record read back",
        [Record(0, "step", "大きい 🐘", Value(big_list))],
        _log_of(store, wid),
    )
    _equal("unicode event read back", (True, escapes), store.get_event(wid, "ключ"))
    sent = store.peek_message("plain", topic)
    _equal("escapes in a sent payload", {"ü": escapes}, sent.payload if sent else None)
    _equal(
        "unicode idempotency key reused",
        False,
        store.send_message(wid, topic, "again", idempotency_key="ключ 🔑"),
    )
    _equal(
        "list_workflows by unicode name",
        [wid],
        _ids(store.list_workflows(WorkflowFilter(name="名前 ✓"))),
    )


# -- transactions and notifications --------------------------------------------


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


def check_notifications(store: Store) -> None:
    store.create_workflow(_run("n-1"))
    store.create_workflow(_run("n-2"))
    seen: list[tuple[str, str]] = []
    visible: list[tuple[str, bool]] = []
    lock = threading.Lock()

    failures: list[str] = []

    def callback(kind: str, key: str) -> None:
        # Runs after the commit, so what it announces can already be read, and
        # reading it must not wait for anything the write still holds.
        try:
            if kind == "message" and key == "n-1":
                visible.append(("message", store.peek_message("n-1", "t") is not None))
            if kind == "finished" and key == "n-1":
                row = store.get_workflow("n-1")
                visible.append(("finished", row is not None and row.status.is_terminal))
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
        with lock:
            seen.append((kind, key))

    unsubscribe = store.subscribe(callback)

    def saw(kind: str, key: str) -> Callable[[], bool]:
        def check() -> bool:
            with lock:
                return (kind, key) in seen

        return check

    store.send_message("n-1", "t", "hi")
    _expect(
        _wait_for(saw("message", "n-1")), "notification for send_message", ("message", "n-1"), seen
    )
    store.record("n-2", _step(0), send=OutgoingMessage("n-1", "t", "again"))
    store.record("n-2", _step(1), event=EventWrite("k", 1))
    _expect(
        _wait_for(saw("event", "n-2")),
        "notification for an event set by record()",
        ("event", "n-2"),
        seen,
    )
    store.finish_workflow("n-1", Status.SUCCESS, Value(1))
    _expect(
        _wait_for(saw("finished", "n-1")),
        "notification for finish_workflow",
        ("finished", "n-1"),
        seen,
    )
    store.set_status("n-2", Status.CANCELLED)
    _expect(
        _wait_for(saw("finished", "n-2")),
        "notification for set_status(CANCELLED)",
        ("finished", "n-2"),
        seen,
    )
    # A resume says so, to the engine that owns the run; an update that only a
    # PENDING run may take (a reset of its recovery count) resumes nothing and says
    # nothing: its engine may hold the run in memory, and must keep it.
    store.create_workflow(_run("n-4"))
    store.set_status("n-4", Status.PENDING, only_from=[Status.PENDING], reset_recovery=True)
    store.set_status("n-4", Status.CANCELLED)
    store.set_status("n-4", Status.PENDING)
    _expect(
        _wait_for(saw("resumed", "n-4")),
        "notification for set_status(PENDING) of a cancelled run",
        ("resumed", "n-4"),
        seen,
    )
    with lock:  # notes arrive in commit order: one for the reset would be here by now
        resumes = [n for n in seen if n == ("resumed", "n-4")]
    _equal("notifications for resetting a PENDING run's recovery count", 1, len(resumes))
    # Engines answer handles from the finished rows they keep until this says the
    # run is gone. A delete of no run says nothing (notes arrive in commit order,
    # so one for it would come before the next delete's).
    store.delete_workflow("n-never")
    store.delete_workflow("n-2")
    _expect(
        _wait_for(saw("deleted", "n-2")),
        "notification for delete_workflow",
        ("deleted", "n-2"),
        seen,
    )
    with lock:
        _equal("notifications for deleting no run", [], [n for n in seen if n[1] == "n-never"])
    _equal("errors from the store called inside a subscriber", [], failures)
    _expect(
        all(ok for _, ok in visible),
        "the announced change is visible in the callback",
        "all True",
        visible,
    )
    unsubscribe()
    unsubscribe()
    store.create_workflow(_run("n-3"))
    with lock:
        seen.clear()
    store.send_message("n-3", "t", "unheard")
    store.finish_workflow("n-3", Status.SUCCESS, None)
    time.sleep(0.2)
    with lock:
        after = list(seen)
    _equal("notifications after unsubscribe", [], [n for n in after if n[1] == "n-3"])


def check_stream_records_notify(store: Store) -> None:
    """A stream's records are plain records (in the log, in order) that notify readers."""
    for wid in ("sn-1", "sn-2", "sn-3"):
        store.create_workflow(_run(wid))
    seen: list[tuple[str, str]] = []
    visible: list[list[Any]] = []
    failures: list[str] = []
    lock = threading.Lock()

    def callback(kind: str, key: str) -> None:
        # After the commit: a reader woken by it finds the value in the log.
        try:
            if kind == "stream" and key == "sn-1":
                visible.append(StreamCursor("tokens").take(store.load_log("sn-1")))
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
        with lock:
            seen.append((kind, key))

    def write(position: int, value: Any) -> Record:
        return Record(position, WRITE_STREAM_KIND, "tokens", Value(value))

    def close(position: int) -> Record:
        return Record(position, CLOSE_STREAM_KIND, "tokens", Value(None))

    unsubscribe = store.subscribe(callback)
    try:
        store.record("sn-1", write(0, "Hel"))
        store.record("sn-1", _step(1))
        store.record("sn-1", write(2, "lo"))
        answers = store.record_many(
            [
                RecordWrite("sn-2", write(0, {"done": 1})),
                RecordWrite("sn-3", _step(0)),
            ]
        )
        _equal("record_many answers", ["record", "record"], _answer_kinds(answers))
        store.record("sn-2", close(1))

        def heard() -> bool:
            with lock:
                return [n for n in seen if n == ("stream", "sn-1")] == [
                    ("stream", "sn-1")
                ] * 2 and (("stream", "sn-2") in seen and seen.count(("stream", "sn-2")) >= 2)

        _expect(
            _wait_for(heard),
            "a stream notification per stream record, by record() and record_many()",
            "('stream', 'sn-1') twice, ('stream', 'sn-2') twice",
            seen,
        )
        store.record("sn-1", write(2, "again"))  # a completed position: nothing written
        time.sleep(0.3)  # room for a wrong notification to arrive
        with lock:
            mine = list(seen)
        _equal(
            "stream notifications of sn-1 (none for its step, none for a rewrite)",
            2,
            mine.count(("stream", "sn-1")),
        )
        _equal(
            "notifications for a run that wrote no stream record",
            [],
            [n for n in mine if n[1] == "sn-3"],
        )
        _equal("errors from the store called inside a subscriber", [], failures)
        _expect(
            ["Hel"] in visible and ["Hel", "lo"] in visible,
            "what a stream notification announced is in the log",
            [["Hel"], ["Hel", "lo"]],
            visible,
        )
        cursor = StreamCursor("tokens")
        _equal("sn-2's stream", [{"done": 1}], cursor.take(store.load_log("sn-2")))
        _equal("sn-2's stream is closed", True, cursor.closed)
    finally:
        unsubscribe()


def check_close_is_idempotent(store: Store) -> None:
    store.create_workflow(_run("x-1"))
    store.close()
    store.close()


# -- names no store takes -----------------------------------------------------

# Each kind of name every store refuses (base.py), with why.
_BAD_NAMES = {
    "over-long": "x" * (MAX_NAME_BYTES + 1),
    "over-long in UTF-8": "😀" * (MAX_NAME_BYTES // 4) + "x",
    "NUL-holding": "a\x00b",
    "lone-surrogate": "a\ud800b",
}


def _name_attempts(store: Store, bad: str) -> dict[str, Callable[[], Any]]:
    """Every call that takes a name, each given `bad` in one place."""
    limits = ClaimLimits(limit=1)
    return {
        "create_workflow with that workflow id": lambda: store.create_workflow(_run(bad)),
        "create_workflow with that name": lambda: store.create_workflow(_run("nm-1", name=bad)),
        "create_workflow with that executor id": lambda: store.create_workflow(
            _run("nm-1", executor_id=bad)
        ),
        "create_workflow with that app version": lambda: store.create_workflow(
            _run("nm-1", app_version=bad)
        ),
        "create_workflow with that parent id": lambda: store.create_workflow(
            _run("nm-1", parent_id=bad)
        ),
        "create_workflow with that queue": lambda: store.create_workflow(
            _queued("nm-1", queue=bad)
        ),
        "create_workflow with that dedup id": lambda: store.create_workflow(
            _queued("nm-1", dedup_id=bad)
        ),
        "create_workflow of a fork whose record has that name": lambda: store.create_workflow(
            _run("nm-1"), records=[_step(0, name=bad)]
        ),
        "create_workflows with that id second": lambda: store.create_workflows(
            [_run("nm-1"), _run(bad)]
        ),
        "record with that record name": lambda: store.record("nm-ok", _step(0, name=bad)),
        "record with that executor id": lambda: store.record("nm-ok", _step(0), executor_id=bad),
        "record with that event key": lambda: store.record(
            "nm-ok", _step(0), event=EventWrite(bad, 1)
        ),
        "record sending on that topic": lambda: store.record(
            "nm-ok", _step(0), send=OutgoingMessage("nm-ok", bad, 1)
        ),
        "record sending with that idempotency key": lambda: store.record(
            "nm-ok", _step(0), send=OutgoingMessage("nm-ok", "t", 1, idempotency_key=bad)
        ),
        "finish_workflow with that record name": lambda: store.finish_workflow(
            "nm-ok", Status.SUCCESS, Value(1), record=_step(0, name=bad)
        ),
        "send_message to that id": lambda: store.send_message(bad, "t", 1),
        "send_message on that topic": lambda: store.send_message("nm-ok", bad, 1),
        "send_message with that idempotency key": lambda: store.send_message(
            "nm-ok", "t", 1, idempotency_key=bad
        ),
        "set_status with that executor id": lambda: store.set_status(
            "nm-ok", Status.PENDING, executor_id=bad
        ),
        "claim from that queue": lambda: store.claim(
            bad, executor_id="e", app_version="", limits=limits, now=_T0
        ),
        "claim for that executor": lambda: store.claim(
            "q", executor_id=bad, app_version="", limits=limits, now=_T0
        ),
        "heartbeat of that executor": lambda: store.heartbeat(bad, "", _T0),
        "get_workflow of that id": lambda: store.get_workflow(bad),
        "load_log of that id": lambda: store.load_log(bad),
        "peek_message on that topic": lambda: store.peek_message("nm-ok", bad),
        "get_event of that key": lambda: store.get_event("nm-ok", bad),
        "list_workflows of that name": lambda: store.list_workflows(WorkflowFilter(name=bad)),
        "delete_workflow of that id": lambda: store.delete_workflow(bad),
    }


def check_names_refused_alike(store: Store) -> None:
    store.create_workflow(_run("nm-ok"))
    at_limit = "x" * MAX_NAME_BYTES
    wide = "😀" * (MAX_NAME_BYTES // 4)  # four bytes each: the limit exactly
    for name in (at_limit, wide):
        _, created = store.create_workflow(_queued(name, queue=name, dedup_id=name))
        _equal(f"create_workflow of a {len(name)}-character id at the limit", True, created)
        _equal(
            "send_message with a topic and key at the limit",
            True,
            store.send_message(name, name, 1, idempotency_key=name),
        )
    for kind, bad in _BAD_NAMES.items():
        for what, attempt in _name_attempts(store, bad).items():
            _raises(f"{what} ({kind})", ValueError, attempt)
    _equal(
        "runs after the refusals",
        sorted(["nm-ok", at_limit, wide]),
        sorted(_ids(store.list_workflows(WorkflowFilter()))),
    )
    _equal("log after the refusals", [], _log_of(store, "nm-ok"))
    _equal("inbox after the refusals", None, store.peek_message("nm-ok", "t"))
    row = _present("the run after the refusals", store.get_workflow("nm-ok"))
    _equal("status after the refusals", Status.PENDING, row.status)
    _equal("executor after the refusals", "local", row.executor_id)
    message = str(
        _raises(
            "an over-long event key",
            ValueError,
            lambda: store.record("nm-ok", _step(0), event=EventWrite("k" * 1500, 1)),
        )
    )
    for part in ("event key", "'nm-ok'", "position 0", "1,500 bytes", f"{MAX_NAME_BYTES:,}"):
        _expect(part in message, "the error names the field, run, length and limit", part, message)


def check_record_many_refuses_bad_names_one_by_one(store: Store) -> None:
    store.create_workflow(_run("nmm-1"))
    store.create_workflow(_run("nmm-2"))
    answers = store.record_many(
        [
            RecordWrite("nmm-1", _step(0)),
            RecordWrite("nmm-2", _step(0), event=EventWrite("k\x00", 1)),
        ]
    )
    _equal("record_many's answer for a good write", _step(0), answers[0])
    _expect(
        isinstance(answers[1], ValueError),
        "record_many's answer for a write with a NUL in its event key",
        "a ValueError",
        answers[1],
    )
    _equal("the good write committed", [_step(0)], _log_of(store, "nmm-1"))
    _equal("the refused write wrote nothing", [], _log_of(store, "nmm-2"))


def check_error_text_with_nul_is_kept(store: Store) -> None:
    failure = Failure(ErrorInfo("builtins", "ValueError", "bad \x00 byte", ["bad \x00 byte"]))
    store.create_workflow(_run("ne-1"))
    store.create_workflow(_run("ne-2"))
    _equal(
        "finish_workflow with NUL in its error",
        True,
        store.finish_workflow("ne-1", Status.ERROR, failure, error="bad \x00 byte"),
    )
    row = _present("the run finished with NUL in its error", store.get_workflow("ne-1"))
    _equal("its error, NUL spelled out", "bad \\x00 byte", row.error)
    _equal("its result, exactly", failure, row.result)
    _equal(
        "set_status with NUL in its error",
        True,
        store.set_status("ne-2", Status.PARKED, error="why \x00"),
    )
    row = _present("the run parked with NUL in its error", store.get_workflow("ne-2"))
    _equal("its error, NUL spelled out", "why \\x00", row.error)


# -- fork lineage, schedule states, keyed sends ----------------------------------


def _lineage(row: WorkflowRow | None) -> tuple[str | None, int | None] | None:
    return None if row is None else (row.forked_from, row.fork_position)


def check_fork_lineage(store: Store) -> None:
    """A fork's `forked_from` and `fork_position` are stored by every create path,
    read back by every read, and listed by `WorkflowFilter(forked_from=)`."""
    store.create_workflow(_run("fl-src", created_at=_T0))
    for position in range(3):
        store.record("fl-src", _step(position))
    log = _log_of(store, "fl-src")
    _equal("lineage of a run not forked", (None, None), _lineage(store.get_workflow("fl-src")))
    fork, created = store.create_workflow(
        _run(
            "fl-fork-2",
            created_at=_T0 + timedelta(seconds=1),
            forked_from="fl-src",
            fork_position=2,
        ),
        records=log[:2],
        fork_of="fl-src",
    )
    _equal("create_workflow of a fork created it", True, created)
    _equal("lineage create_workflow returns for a fork", ("fl-src", 2), _lineage(fork))
    _equal("lineage of a fork read back", ("fl-src", 2), _lineage(store.get_workflow("fl-fork-2")))
    _equal("log of a fork at position 2", log[:2], _log_of(store, "fl-fork-2"))
    store.create_workflow(
        _run(
            "fl-fork-0",
            created_at=_T0 + timedelta(seconds=2),
            forked_from="fl-src",
            fork_position=0,
        ),
        fork_of="fl-src",
    )
    _equal(
        "lineage of a fork at position 0 (no records copied)",
        ("fl-src", 0),
        _lineage(store.get_workflow("fl-fork-0")),
    )
    store.create_workflow(
        _run(
            "fl-fork-of-fork",
            created_at=_T0 + timedelta(seconds=3),
            forked_from="fl-fork-2",
            fork_position=1,
        ),
        records=log[:1],
        fork_of="fl-fork-2",
    )
    store.create_workflows(
        [
            _queued(
                f"fl-queued-{position}",
                created_at=_T0 + timedelta(seconds=4 + position),
                forked_from="fl-src",
                fork_position=position,
            )
            for position in (1, 3)
        ]
    )
    again, created = store.create_workflow(
        _run("fl-fork-2", forked_from="elsewhere", fork_position=7), fork_of="elsewhere"
    )
    _equal("create_workflow of an existing id with another lineage created", False, created)
    _equal("lineage of an existing run is never modified", ("fl-src", 2), _lineage(again))

    def forks(where: WorkflowFilter) -> list[tuple[str, int | None]]:
        return [(row.workflow_id, row.fork_position) for row in store.list_workflows(where)]

    _equal(
        "list_workflows(forked_from=) lists the run's forks, oldest first",
        [("fl-fork-2", 2), ("fl-fork-0", 0), ("fl-queued-1", 1), ("fl-queued-3", 3)],
        forks(WorkflowFilter(forked_from="fl-src")),
    )
    _equal(
        "list_workflows(forked_from=) of a fork lists the forks of the fork only",
        [("fl-fork-of-fork", 1)],
        forks(WorkflowFilter(forked_from="fl-fork-2")),
    )
    _equal(
        "list_workflows(forked_from=) with a status, limit and offset",
        [("fl-queued-3", 3)],
        forks(WorkflowFilter(forked_from="fl-src", status=Status.ENQUEUED, limit=1, offset=1)),
    )
    _equal(
        "list_workflows(forked_from=) of a run with no forks",
        [],
        forks(WorkflowFilter(forked_from="fl-fork-0")),
    )
    claimed = store.claim(
        "q",
        executor_id="e",
        app_version="v1",
        limits=ClaimLimits(limit=9),
        now=_T0 + timedelta(days=1),
    )
    _equal(
        "lineage of the forks claim() returns",
        [("fl-queued-1", "fl-src", 1), ("fl-queued-3", "fl-src", 3)],
        sorted((row.workflow_id, *(_lineage(row) or ())) for row in claimed),
    )
    for kind, bad in _BAD_NAMES.items():
        _raises(
            f"create_workflow of a fork whose source id is {kind}",
            ValueError,
            functools.partial(
                store.create_workflow, _run("fl-bad", forked_from=bad, fork_position=0)
            ),
        )
    _equal("a refused fork is not created", None, store.get_workflow("fl-bad"))


def _schedule_fields(state: Any) -> tuple[Any, ...]:
    """A schedule state's fields a check compares: all but `updated_at`."""
    return (
        state.spec,
        state.paused,
        state.trigger_at,
        state.backfill_start,
        state.backfill_end,
    )


def _schedule_name_attempts(store: Store, bad: str) -> dict[str, Callable[[], Any]]:
    """Every schedule-state call, each given `bad` as the schedule's name."""
    hour = timedelta(hours=1)
    return {
        "register_schedules": lambda: store.register_schedules(
            [ScheduleSpec("sc-a", "wf", "* * * * *"), ScheduleSpec(bad, "wf", "* * * * *")], _T0
        ),
        "set_schedule_paused": lambda: store.set_schedule_paused(bad, True, _T0),
        "request_schedule_trigger": lambda: store.request_schedule_trigger(bad, _T0),
        "request_schedule_backfill": lambda: store.request_schedule_backfill(
            bad, _T0, _T0 + hour, _T0
        ),
        "clear_schedule_request": lambda: store.clear_schedule_request(bad, trigger_at=_T0),
        "delete_schedule_state": lambda: store.delete_schedule_state(bad),
    }


def check_schedule_states(store: Store) -> None:
    """Definitions are upserted, pausing is a flag every engine reads, and `updated_at`
    moves only when something changed."""
    _equal("schedule_states of an empty store", {}, store.schedule_states())
    minutely = ScheduleSpec("sc-a", "wf", "* * * * *")
    nightly = ScheduleSpec("sc-b", "wf.nightly", "0 3 * * *", "Europe/Berlin", "q", backfill=True)
    store.register_schedules([minutely, nightly], _T0)
    states = store.schedule_states()
    _equal("names of the registered schedules", {"sc-a", "sc-b"}, set(states))
    for spec in (minutely, nightly):
        state = states[spec.name]
        _equal(f"name {spec.name!r} keys its state", spec.name, state.name)
        _equal(
            f"a new schedule {spec.name!r}: its definition, unpaused, no requests",
            (spec, False, None, None, None),
            _schedule_fields(state),
        )
        _equal(f"updated_at of the new schedule {spec.name!r}", _T0, state.updated_at)
        _aware_utc(f"updated_at of {spec.name!r}", state.updated_at)
    store.register_schedules([minutely], _T0 + timedelta(days=1))
    _equal(
        "updated_at after registering the same definition again",
        _T0,
        store.schedule_states()["sc-a"].updated_at,
    )
    store.register_schedules([], _T0 + timedelta(days=1))
    _equal("states after registering no schedule", states, store.schedule_states())

    paused_at = _T0 + timedelta(days=2)
    _equal(
        "set_schedule_paused of a stored schedule",
        True,
        store.set_schedule_paused("sc-a", True, paused_at),
    )
    _equal(
        "set_schedule_paused of a paused schedule (idempotent)",
        True,
        store.set_schedule_paused("sc-a", True, _T0 + timedelta(days=3)),
    )
    state = store.schedule_states()["sc-a"]
    _equal("paused flag after pausing", True, state.paused)
    _equal("updated_at after pausing twice: the first pause's", paused_at, state.updated_at)
    _equal(
        "the other schedule after one was paused",
        states["sc-b"],
        store.schedule_states()["sc-b"],
    )
    faster = ScheduleSpec("sc-a", "wf", "*/2 * * * *", queue="fast")
    store.register_schedules([faster], _T0 + timedelta(days=4))
    state = store.schedule_states()["sc-a"]
    _equal(
        "a new definition of a paused schedule: replaced, still paused",
        (faster, True, None, None, None),
        _schedule_fields(state),
    )
    _equal("updated_at after a new definition", _T0 + timedelta(days=4), state.updated_at)
    store.set_schedule_paused("sc-a", False, _T0 + timedelta(days=5))
    _equal("paused flag after resuming", False, store.schedule_states()["sc-a"].paused)
    _equal(
        "set_schedule_paused of an unknown schedule",
        False,
        store.set_schedule_paused("sc-missing", True, _T0),
    )
    _equal(
        "names after pausing an unknown schedule", {"sc-a", "sc-b"}, set(store.schedule_states())
    )

    before = store.schedule_states()
    for kind, bad in _BAD_NAMES.items():
        for what, attempt in _schedule_name_attempts(store, bad).items():
            _raises(f"{what} of a schedule name that is {kind}", ValueError, attempt)
    _equal(
        "states after the refusals (a refused register_schedules writes none of its specs)",
        before,
        store.schedule_states(),
    )


def check_schedule_requests(store: Store) -> None:
    """A trigger or a backfill is asked for once (a second request joins the first) and
    cleared only by the engine that carried out that very request."""
    store.register_schedules([ScheduleSpec("sr-a", "wf", "* * * * *")], _T0)
    at = _T0 + timedelta(hours=5, microseconds=7)
    _equal(
        "request_schedule_trigger of a stored schedule",
        at,
        store.request_schedule_trigger("sr-a", at),
    )
    _equal(
        "a second trigger request joins the pending one",
        at,
        store.request_schedule_trigger("sr-a", at + timedelta(seconds=1)),
    )
    _equal(
        "request_schedule_trigger of an unknown schedule",
        None,
        store.request_schedule_trigger("sr-missing", at),
    )
    _equal("the pending trigger's instant", at, store.schedule_states()["sr-a"].trigger_at)
    store.clear_schedule_request("sr-a", trigger_at=at + timedelta(seconds=1))
    _equal(
        "the trigger after clearing another instant",
        at,
        store.schedule_states()["sr-a"].trigger_at,
    )
    store.clear_schedule_request("sr-a", trigger_at=at)
    _equal("the trigger after clearing it", None, store.schedule_states()["sr-a"].trigger_at)
    newer = at + timedelta(minutes=1)
    store.request_schedule_trigger("sr-a", newer)
    store.clear_schedule_request("sr-a", trigger_at=at)  # an engine done with the old one, late
    _equal(
        "a trigger asked for after the one carried out is kept",
        newer,
        store.schedule_states()["sr-a"].trigger_at,
    )

    asked = (_T0, _T0 + timedelta(hours=1))
    _equal(
        "request_schedule_backfill of a stored schedule",
        asked,
        store.request_schedule_backfill("sr-a", *asked, _T0),
    )
    _equal(
        "a second backfill request answers the pending range, which is kept",
        asked,
        store.request_schedule_backfill("sr-a", _T0, _T0 + timedelta(hours=2), _T0),
    )
    _equal(
        "request_schedule_backfill of an unknown schedule",
        None,
        store.request_schedule_backfill("sr-missing", *asked, _T0),
    )
    store.set_schedule_paused("sr-a", True, _T0 + timedelta(hours=6))
    store.register_schedules([ScheduleSpec("sr-a", "wf", "*/5 * * * *")], _T0 + timedelta(hours=6))
    state = store.schedule_states()["sr-a"]
    _equal(
        "requests after pausing and a new definition",
        (newer, *asked),
        (state.trigger_at, state.backfill_start, state.backfill_end),
    )
    store.clear_schedule_request("sr-a", backfill=(asked[0], asked[1] + timedelta(hours=1)))
    state = store.schedule_states()["sr-a"]
    _equal(
        "the backfill after clearing another range",
        asked,
        (state.backfill_start, state.backfill_end),
    )
    store.clear_schedule_request("sr-a", backfill=asked)
    state = store.schedule_states()["sr-a"]
    _equal(
        "clearing the backfill keeps the trigger",
        (newer, None, None),
        (state.trigger_at, state.backfill_start, state.backfill_end),
    )
    later = (asked[1], asked[1] + timedelta(hours=1))
    store.request_schedule_backfill("sr-a", *later, _T0)
    store.clear_schedule_request("sr-a", trigger_at=newer, backfill=asked)
    state = store.schedule_states()["sr-a"]
    _equal(
        "one clear of both: the trigger carried out goes, a newer backfill is kept",
        (None, *later),
        (state.trigger_at, state.backfill_start, state.backfill_end),
    )
    _aware_utc("a backfill's start read back", state.backfill_start)

    _equal("delete_schedule_state of a stored schedule", True, store.delete_schedule_state("sr-a"))
    _equal("delete_schedule_state again", False, store.delete_schedule_state("sr-a"))
    _equal("schedule_states after the delete", {}, store.schedule_states())
    store.clear_schedule_request("sr-a", trigger_at=newer)  # gone: nothing to do
    _equal(
        "request_schedule_trigger of a deleted schedule",
        None,
        store.request_schedule_trigger("sr-a", at),
    )
    store.register_schedules([ScheduleSpec("sr-a", "wf", "* * * * *")], _T0 + timedelta(days=1))
    state = store.schedule_states()["sr-a"]
    _equal(
        "a deleted schedule registered again starts afresh",
        (False, None, None, None),
        (state.paused, state.trigger_at, state.backfill_start, state.backfill_end),
    )


def _keyed(target: str, payload: Any, key: str) -> OutgoingMessage:
    """A `Send(..., idempotency_key=key)` as the runtime writes it: True if delivered."""
    return OutgoingMessage(
        target, "invoice", payload, idempotency_key=key, if_duplicate=Value(False)
    )


def _sent(position: int, delivered: bool = True) -> Record:
    return Record(position, "send", "invoice", Value(delivered))


def check_keyed_send_with_record(store: Store) -> None:
    """A keyed send delivers once per receiving run and key, whoever uses the key first
    (another run, the same run, `send_message`); the record says which, in its commit."""
    for wid in ("ks-a", "ks-b", "ks-to", "ks-other"):
        store.create_workflow(_run(wid))
    _equal(
        "record() of a keyed send with a new key",
        _sent(0),
        store.record("ks-a", _sent(0), send=_keyed("ks-to", "from a", "invoice-7")),
    )
    _equal(
        "record() of a keyed send whose key another run used",
        _sent(0, delivered=False),
        store.record("ks-b", _sent(0), send=_keyed("ks-to", "from b", "invoice-7")),
    )
    _equal("log of the duplicate's sender", [_sent(0, False)], _log_of(store, "ks-b"))
    _equal(
        "record() of a keyed send with the key to another run",
        _sent(1),
        store.record("ks-a", _sent(1), send=_keyed("ks-other", "from a", "invoice-7")),
    )
    _equal(
        "record() of a keyed send whose key this run used at another position",
        _sent(2, delivered=False),
        store.record("ks-a", _sent(2), send=_keyed("ks-to", "again", "invoice-7")),
    )
    _equal(
        "send_message with a key first",
        True,
        store.send_message("ks-to", "invoice", "by hand", idempotency_key="by-hand"),
    )
    _equal(
        "record() of a keyed send whose key send_message used",
        _sent(3, delivered=False),
        store.record("ks-a", _sent(3), send=_keyed("ks-to", "late", "by-hand")),
    )
    store.record("ks-a", _sent(4), send=_keyed("ks-to", "first", "in-workflow"))
    _equal(
        "send_message with a key a keyed send used",
        False,
        store.send_message("ks-to", "invoice", "by hand", idempotency_key="in-workflow"),
    )
    _equal(
        "record() of a keyed send at a completed position returns the stored record",
        _sent(0, delivered=False),
        store.record("ks-b", _sent(0), send=_keyed("ks-to", "never", "unused")),
    )
    _equal(
        "a key whose write wrote nothing is unused",
        True,
        store.send_message("ks-to", "invoice", "now", idempotency_key="unused"),
    )
    _equal(
        "messages each key delivered, once",
        ["from a", "by hand", "first", "now"],
        _drain(store, "ks-to", "invoice"),
    )
    _equal("the other run's message", ["from a"], _drain(store, "ks-other", "invoice"))

    # record_many: two runs send with one key to one run in the same call.
    answers = store.record_many(
        [
            RecordWrite("ks-a", _sent(5), send=_keyed("ks-to", "batch a", "batch-key")),
            RecordWrite("ks-b", _sent(1), send=_keyed("ks-to", "batch b", "batch-key")),
        ]
    )
    outcomes = [
        answer.outcome if isinstance(answer, Record) else repr(answer) for answer in answers
    ]
    _expect(
        sorted(map(repr, outcomes)) == sorted(map(repr, [Value(True), Value(False)])),
        "record_many of two keyed sends with one key: one delivers, one is a duplicate",
        [Value(True), Value(False)],
        outcomes,
    )
    _equal(
        "each run's log holds what record_many answered",
        answers,
        [_log_of(store, "ks-a")[5], _log_of(store, "ks-b")[1]],
    )
    delivered = _drain(store, "ks-to", "invoice")
    _expect(
        delivered in (["batch a"], ["batch b"]),
        "messages two keyed sends with one key delivered",
        "one of 'batch a', 'batch b'",
        delivered,
    )
    winner = "batch a" if outcomes[0] == Value(True) else "batch b"
    _equal("the message delivered is the sender's that recorded True", [winner], delivered)


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


# Checks kept in modules of their own; they import this module's helpers, defined above.
from replaykit.testing._conformance_families import check_move_family  # noqa: E402
from replaykit.testing._conformance_generations import (  # noqa: E402
    check_create_finds_a_continued_run_by_its_first_inputs,
)

StoreCheck = Callable[[Store], None]

STORE_CHECKS: tuple[StoreCheck, ...] = (
    check_send_message_names_its_call,
    check_executor_holds,
    check_get_events,
    check_create_returns_stored_row,
    check_create_is_idempotent,
    check_created_at_kept_when_given,
    check_started_at_on_create,
    check_dedup_id,
    check_create_many_new_rows,
    check_create_many_round_trips_payloads,
    check_create_many_with_existing,
    check_create_many_dedup,
    check_create_many_notifies_once_per_queue,
    check_create_many_then_claim,
    check_fork_with_records,
    check_fork_sets_the_events_its_records_set,
    check_record_and_load_log,
    check_record_pending_then_completed,
    check_completed_position_not_overwritten,
    check_pending_step_written_over_with_more_attempts,
    check_record_gap_refused,
    check_record_into_missing_run,
    check_record_into_non_pending_run,
    check_executor_ownership,
    check_record_sets_wake_at,
    check_concurrent_writers_adopt,
    check_consume_with_record,
    check_consume_is_atomic,
    check_consume_many,
    check_send_with_record,
    check_send_message_idempotency,
    check_fifo_per_topic,
    check_message_fields,
    check_event_latest_wins,
    check_record_many_commits_each,
    check_record_many_refusals,
    check_record_many_completed_positions,
    check_record_many_side_effects,
    check_record_many_refuses_one_run_twice,
    check_record_many_alongside_record,
    check_record_many_notifications,
    check_finish_only_from_pending,
    check_finish_many_finishes_each,
    check_finish_many_with_last_records,
    check_finish_many_refuses_one_run_twice,
    check_finish_with_record_commits_both,
    check_finish_with_record_refused_by_the_run,
    check_finish_with_record_refused_by_the_log,
    check_finish_with_an_equal_record_already_there,
    check_finish_with_record_racing_record,
    check_finish_with_record_notifies_once,
    check_set_status,
    check_bump_recovery,
    check_delete,
    check_continue_workflow,
    check_continue_workflow_retried_after_a_lost_answer,
    check_continue_workflow_refusals,
    check_delete_takes_the_generations,
    check_claim_order_and_readiness,
    check_deadlines_round_trip_and_claim_starts_timeouts,
    check_claim_limits,
    check_concurrent_claims,
    check_heartbeat_and_take_over,
    check_release,
    check_list_filters,
    check_list_order_ties_broken_by_id,
    check_datetimes_round_trip,
    check_outcomes_round_trip,
    check_inputs_and_results_round_trip,
    check_unicode_and_large_payloads,
    check_record_transaction,
    check_notifications,
    check_stream_records_notify,
    check_close_is_idempotent,
    check_names_refused_alike,
    check_record_many_refuses_bad_names_one_by_one,
    check_record_late,
    check_error_text_with_nul_is_kept,
    check_fork_lineage,
    check_schedule_states,
    check_schedule_requests,
    check_keyed_send_with_record,
    check_create_finds_a_continued_run_by_its_first_inputs,
    check_move_family,
)


def _name(check: StoreCheck) -> str:
    return check.__name__.removeprefix("check_")


def check_store(
    make_store: Callable[[], Store], *, only: Callable[[str], bool] | None = None
) -> None:
    """Run every check in `STORE_CHECKS`, each on a fresh store from `make_store()`.

    Raises one `AssertionError` naming every failed check, with what it
    expected and what it got. `only` selects checks by name (for example
    `only=lambda name: name == "delete"` while working on one guarantee).
    """
    failures: list[str] = []
    first: BaseException | None = None
    ran = 0
    described = "the store"
    for check in STORE_CHECKS:
        name = _name(check)
        if only is not None and not only(name):
            continue
        ran += 1
        store = make_store()
        described = repr(store)
        try:
            check(store)
        except _CheckFailed as exc:
            failures.append(f"[{name}] {exc}")
            first = first or exc
        except Exception as exc:
            where = "".join(traceback.format_exception(exc)[-3:]).rstrip()
            failures.append(f"[{name}] raised {type(exc).__name__}: {exc}\n{where}")
            first = first or exc
        finally:
            store.close()
    if failures:
        raise AssertionError(
            f"check_store: {len(failures)} of {ran} checks failed for {described}:\n\n"
            + "\n\n".join(failures)
        ) from first


# The checks of the reads a listing pages with (counts, listings without payloads,
# ranges of a log) live in a module of their own; they run with the others.
from replaykit.testing._conformance_reads import READ_CHECKS  # noqa: E402

STORE_CHECKS = (*STORE_CHECKS, *READ_CHECKS)

# What a heartbeat carries (the workflows and queues an engine runs), likewise.
from replaykit.testing._conformance_beats import BEAT_CHECKS  # noqa: E402

STORE_CHECKS = (*STORE_CHECKS, *BEAT_CHECKS)
