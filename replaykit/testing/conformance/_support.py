"""What the store checks share: their failure, their expectations, their rows and records,
and the few helpers more than one area uses (waiting for a notification, a subscriber's
notes, writers let go at once, engines claiming at once, a queued row, the names no store
takes).

`check_store`'s checks live in the modules by area beside this one; they all take
these helpers from here, so that no check module imports another. A helper only one
area uses stays in that area's module.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from replaykit.log import Record, Status, Value
from replaykit.stores.base import MAX_NAME_BYTES, Store, WorkflowRow

__all__ = [
    "_BAD_NAMES",
    "_NOTIFY_WAIT",
    "_T0",
    "_CheckFailed",
    "_Notes",
    "_all_at_once",
    "_answer_kinds",
    "_aware_utc",
    "_claimed_at_once",
    "_claimed_new",
    "_equal",
    "_expect",
    "_ids",
    "_log_of",
    "_pending",
    "_present",
    "_queued",
    "_raised",
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


def _all_at_once(calls: Sequence[Callable[[], _V]]) -> list[_V | BaseException]:
    """Each call in a thread of its own, all let go at once (a barrier), so that a store's
    writers meet; each call's answer, or what it raised, in the order of `calls`."""
    barrier = threading.Barrier(len(calls))
    answers: list[_V | BaseException] = [RuntimeError("not called")] * len(calls)

    def call(index: int) -> None:
        barrier.wait()
        try:
            answers[index] = calls[index]()
        except BaseException as exc:
            answers[index] = exc

    workers = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return answers


def _raised(answers: Sequence[object]) -> list[BaseException]:
    return [a for a in answers if isinstance(a, BaseException)]


class _Notes:
    """What one subscriber of a store hears: its `(kind, key)` notes, in order.

    `look`, if given, is called inside the callback before the note is kept: a store
    notifies after its commit, so what a note announces can be read there already, and
    reading it must not wait on the write. What `look` raises is kept in `failures`.
    Use it as a context manager, so that the subscription ends with the check.
    """

    def __init__(self, store: Store, look: Callable[[str, str], None] | None = None) -> None:
        self._store = store
        self._look = look
        self._lock = threading.Lock()
        self._seen: list[tuple[str, str]] = []
        self.failures: list[str] = []
        self.unsubscribe: Callable[[], None] = lambda: None

    def __enter__(self) -> _Notes:
        self.unsubscribe = self._store.subscribe(self._note)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unsubscribe()

    def _note(self, kind: str, key: str) -> None:
        if self._look is not None:
            try:
                self._look(kind, key)
            except Exception as exc:
                self.failures.append(f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._seen.append((kind, key))

    def seen(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._seen)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def wait_for(self, what: str, *notes: tuple[str, str]) -> None:
        """Fail with `what` unless every one of `notes` arrives in time."""
        _expect(_wait_for(lambda: set(notes) <= set(self.seen())), what, list(notes), self.seen())


def _claimed_at_once(engines: int, claim: Callable[[str], list[str]]) -> list[str]:
    """`engines` engines claiming four times each, all at once (`claim(executor_id)` is
    one claim's ids): every id taken, once none raised and none took another's run."""

    def engine(executor_id: str) -> list[str]:
        return [wid for _ in range(4) for wid in claim(executor_id)]

    answers = _all_at_once([functools.partial(engine, f"e{i}") for i in range(engines)])
    _equal("exceptions from concurrent claims", [], _raised(answers))
    taken = [wid for answer in answers if not isinstance(answer, BaseException) for wid in answer]
    _equal("runs claimed twice", [], sorted({w for w in taken if taken.count(w) > 1}))
    return taken


def _claimed_new(store: Store, row: WorkflowRow, how: str) -> None:
    """A run claimed for the first time (`how` it came): PENDING, as stored, and no log yet
    (`has_log` False, or None: "not known", and the engine then reads the log)."""
    _equal(f"status of claimed {row.workflow_id}", Status.PENDING, row.status)
    _equal(f"claimed {row.workflow_id} as stored", store.get_workflow(row.workflow_id), row)
    _expect(
        row.has_log in (False, None),
        f"has_log of {row.workflow_id}, {how}",
        "False (or None)",
        row.has_log,
    )
