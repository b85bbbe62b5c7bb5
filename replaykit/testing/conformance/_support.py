"""What the store checks share: their failure, their expectations, their rows and records,
and the few helpers more than one area uses (waiting for a notification, a queued row,
the names no store takes).

`check_store`'s checks live in the modules by area beside this one; they all take
these helpers from here, so that no check module imports another. A helper only one
area uses stays in that area's module.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from replaykit.log import Record, Status, Value
from replaykit.stores.base import MAX_NAME_BYTES, Store, WorkflowRow

__all__ = [
    "_BAD_NAMES",
    "_NOTIFY_WAIT",
    "_T0",
    "_CheckFailed",
    "_answer_kinds",
    "_aware_utc",
    "_equal",
    "_expect",
    "_ids",
    "_log_of",
    "_pending",
    "_present",
    "_queued",
    "_raises",
    "_run",
    "_step",
    "_wait_for",
]

_T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
# How long a check waits for a notification a store may deliver from another thread.
_NOTIFY_WAIT = 5.0


class _CheckFailed(AssertionError):
    pass


def _expect(ok: bool, what: str, expected: Any, got: Any) -> None:
    if not ok:
        raise _CheckFailed(f"{what}: expected {expected!r}, got {got!r}")


def _equal(what: str, expected: Any, got: Any) -> None:
    _expect(expected == got, what, expected, got)


_V = TypeVar("_V")


def _present(what: str, value: _V | None) -> _V:
    if value is None:
        raise _CheckFailed(f"{what}: expected a value, got None")
    return value


def _raises(what: str, exc_type: type[BaseException], fn: Callable[[], Any]) -> BaseException:
    try:
        result = fn()
    except exc_type as exc:
        return exc
    except Exception as exc:
        raise _CheckFailed(
            f"{what}: expected {exc_type.__name__}, got {type(exc).__name__}: {exc}"
        ) from exc
    raise _CheckFailed(f"{what}: expected {exc_type.__name__}, got a return of {result!r}")


def _run(workflow_id: str, **fields: Any) -> WorkflowRow:
    fields.setdefault("name", "wf")
    fields.setdefault("status", Status.PENDING)
    return WorkflowRow(workflow_id=workflow_id, **fields)


def _step(position: int, data: Any = None, **fields: Any) -> Record:
    fields.setdefault("kind", "step")
    fields.setdefault("name", f"s{position}")
    return Record(position=position, outcome=Value(data), **fields)


def _pending(position: int, **fields: Any) -> Record:
    fields.setdefault("kind", "sleep")
    fields.setdefault("name", f"p{position}")
    return Record(position=position, outcome=None, **fields)


def _log_of(store: Store, workflow_id: str) -> list[Record]:
    return store.load_log(workflow_id)


def _ids(rows: list[WorkflowRow]) -> list[str]:
    return [r.workflow_id for r in rows]


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


def _queued(workflow_id: str, **fields: Any) -> WorkflowRow:
    fields.setdefault("queue", "q")
    fields.setdefault("app_version", "v1")
    fields.setdefault("executor_id", "")
    return _run(workflow_id, status=Status.ENQUEUED, **fields)


def _answer_kinds(answers: list[Record | Exception]) -> list[str]:
    """Each answer as the name of its exception class, or "record"."""
    return ["record" if isinstance(a, Record) else type(a).__name__ for a in answers]


# Each kind of name every store refuses (base.py), with why.
_BAD_NAMES = {
    "over-long": "x" * (MAX_NAME_BYTES + 1),
    "over-long in UTF-8": "😀" * (MAX_NAME_BYTES // 4) + "x",
    "NUL-holding": "a\x00b",
    "lone-surrogate": "a\ud800b",
}
