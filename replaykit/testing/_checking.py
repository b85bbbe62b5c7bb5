"""What the store checks share: their failure, their expectations, their rows and records.

`check_store`'s checks live in `conformance.py` and in modules by area beside it; they
all take these helpers from here, so that no check module imports another.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from replaykit.log import Record, Status, Value
from replaykit.stores.base import Store, WorkflowRow

__all__ = [
    "_NOTIFY_WAIT",
    "_T0",
    "_CheckFailed",
    "_equal",
    "_expect",
    "_ids",
    "_log_of",
    "_pending",
    "_present",
    "_raises",
    "_run",
    "_step",
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
