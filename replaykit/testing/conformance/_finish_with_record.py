"""`check_store`'s checks of `finish_workflow(..., record=)`: a run's last record and
its finish committed together or not at all, against the run, the log, an equal record
already there, a racing `record`, and the notification sent once."""

from __future__ import annotations

import functools
import time
from datetime import timedelta, timezone
from typing import Any

from replaykit.errors import RecordConflict
from replaykit.log import ErrorInfo, Failure, Record, Status, Value
from replaykit.stores.base import Store
from replaykit.testing.conformance._support import (
    _T0,
    _all_at_once,
    _equal,
    _expect,
    _log_of,
    _Notes,
    _pending,
    _raises,
    _run,
    _step,
)

__all__ = [
    "check_finish_with_an_equal_record_already_there",
    "check_finish_with_record_commits_both",
    "check_finish_with_record_notifies_once",
    "check_finish_with_record_racing_record",
    "check_finish_with_record_refused_by_the_log",
    "check_finish_with_record_refused_by_the_run",
]


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

    def finish_fe_1() -> bool:
        return store.finish_workflow(
            "fe-1", Status.SUCCESS, Value(2), executor_id="engine-a", record=last
        )

    finished = (Status.SUCCESS, Value(2), "", None, [_step(0), last])
    _equal("finish_workflow(record=) whose record the position holds already", True, finish_fe_1())
    _equal("run and log after a finish over its own record", finished, _finish_state(store, "fe-1"))
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
    _equal("finish_workflow(record=) retried after it committed", False, finish_fe_1())
    _equal("run and log after the retried finish", finished, _finish_state(store, "fe-1"))


def _race_finish_and_record(store: Store, wid: str) -> dict[str, Any]:
    """Start a finish of `wid` with its record and a record() of another outcome at once."""
    finish, record = _all_at_once(
        [
            lambda: store.finish_workflow(
                wid, Status.SUCCESS, Value("finisher"), record=_step(1, "finisher")
            ),
            lambda: store.record(wid, _step(1, "recorder")),
        ]
    )
    return {"finish": finish, "record": record}


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

    def finish(w: str) -> bool:
        return store.finish_workflow(
            w, Status.SUCCESS, Value(w), executor_id="engine-a", record=_step(0, w)
        )

    finishes = _all_at_once([functools.partial(finish, w) for w in wids])
    answers = {
        w: type(got).__name__ if isinstance(got, BaseException) else got
        for w, got in zip(wids, finishes, strict=True)
    }
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
    visible: list[Any] = []

    def look(kind: str, key: str) -> None:
        # After the commit: the record and the finish can both be read already.
        if kind == "finished" and key == "fn-1":
            row = store.get_workflow("fn-1")
            visible.append((row.status if row else None, len(store.load_log("fn-1"))))

    with _Notes(store, look) as notes:
        store.finish_workflow("fn-1", Status.SUCCESS, Value(1), record=_step(1))
        _raises(
            "finish_workflow(record=) over a different completed record",
            RecordConflict,
            lambda: store.finish_workflow("fn-2", Status.SUCCESS, Value(1), record=_step(0)),
        )
        store.finish_workflow("fn-3", Status.SUCCESS, Value(1), record=_step(0))
        notes.wait_for("notification for finish_workflow(record=)", ("finished", "fn-1"))
        time.sleep(0.3)  # room for a duplicate, or for the refused finishes, to arrive
        _equal(
            "notifications of one finish with a record and two refused ones",
            [("finished", "fn-1")],
            [n for n in notes.seen() if n[1] in ("fn-1", "fn-2", "fn-3")],
        )
        _equal("errors from the store called inside a subscriber", [], notes.failures)
        _equal("what the callback read", [(Status.SUCCESS, 2)], visible)
