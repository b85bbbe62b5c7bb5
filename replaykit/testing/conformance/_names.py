"""`check_store`'s checks of the names no store takes (over-long, NUL-holding, lone
surrogates): each call that takes a name refuses them alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from replaykit.log import Status, Value
from replaykit.stores.base import (
    MAX_NAME_BYTES,
    ClaimLimits,
    EventWrite,
    OutgoingMessage,
    RecordWrite,
    Store,
    WorkflowFilter,
)
from replaykit.testing.conformance._support import (
    _BAD_NAMES,
    _T0,
    _equal,
    _expect,
    _ids,
    _log_of,
    _present,
    _queued,
    _raises,
    _run,
    _step,
)

__all__ = ["check_names_refused_alike", "check_record_many_refuses_bad_names_one_by_one"]


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
