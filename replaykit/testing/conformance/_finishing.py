"""`check_store`'s checks of a run's finish: `finish_workflow` only from PENDING, and
`finish_many` finishing many runs in one call."""

from __future__ import annotations

from typing import Any

from replaykit.log import ErrorInfo, Failure, Status, Value
from replaykit.stores.base import FinishWrite, Store
from replaykit.testing.conformance._support import (
    _T0,
    _CheckFailed,
    _equal,
    _expect,
    _log_of,
    _Notes,
    _pending,
    _present,
    _run,
    _step,
)

__all__ = [
    "check_finish_many_finishes_each",
    "check_finish_many_refuses_one_run_twice",
    "check_finish_many_with_last_records",
    "check_finish_only_from_pending",
]


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
    with _Notes(store) as notes:
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
        notes.wait_for(
            "a 'finished' note for each run finish_many finished",
            *[("finished", wid) for wid in sorted(finished)],
        )
        stray = sorted(
            key for kind, key in notes.seen() if kind == "finished" and key not in finished
        )
        _equal("'finished' notes of runs finish_many did not finish", [], stray)
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
