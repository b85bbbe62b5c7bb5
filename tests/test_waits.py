"""Waits built alone: a memory store, wake-ups that are never started, and a fake
scheduler that says what it tracks, no engine (runtime/waits.py)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from replaykit.errors import WorkflowNotFound, WorkflowTimeout
from replaykit.log import Status
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.waits import Waits
from replaykit.runtime.wakeups import Wakeups
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)


class FakeRuns:
    def __init__(self) -> None:
        self.busy = 0
        self.tracked: set[str] = set()
        self.finished: dict[str, WorkflowRow] = {}
        self.interrupts: dict[str, BaseException] = {}

    def is_tracked(self, workflow_id: str) -> bool:
        return workflow_id in self.tracked

    def peek_finished(self, workflow_id: str) -> WorkflowRow | None:
        return self.finished.get(workflow_id)

    def interruption(self, workflow_id: str) -> BaseException | None:
        return self.interrupts.get(workflow_id)

    @contextlib.contextmanager
    def counted_idle(self) -> Iterator[None]:
        yield


def _room(*, hears_every_delete: bool = True) -> tuple[MemoryStore, FakeRuns, Waits]:
    store, runs, clock = MemoryStore(), FakeRuns(), VirtualClock(T0)
    wakeups = Wakeups(
        clock, poll_interval=0.05, dispatch=lambda _id: None, busy=lambda: 0, sweep=lambda **_: None
    )
    waits = Waits(
        store, clock, wakeups, runs, poll_interval=0.05, hears_every_delete=hears_every_delete
    )
    return store, runs, waits


def _row(workflow_id: str, status: Status) -> WorkflowRow:
    return WorkflowRow(workflow_id, "wf", status, inputs={"args": []})


def test_a_run_finished_here_is_answered_without_the_store_only_if_deletes_are_heard() -> None:
    _store, runs, waits = _room()
    runs.tracked.add("kept")
    runs.finished["kept"] = _row("kept", Status.SUCCESS)
    assert waits.wait_finished("kept", 1.0).status is Status.SUCCESS  # the store has no row
    _store, runs, deaf = _room(hears_every_delete=False)
    runs.finished["kept"] = _row("kept", Status.SUCCESS)
    assert deaf.kept_finished("kept") is None
    with pytest.raises(WorkflowNotFound):
        deaf.wait_finished("kept", 1.0)


def test_a_run_that_lives_elsewhere_is_read_from_the_store() -> None:
    store, _runs, waits = _room()
    store.create_workflow(_row("there", Status.PENDING))
    with pytest.raises(WorkflowTimeout):
        waits.wait_finished("there", 0.1)
    store.set_status("there", Status.SUCCESS)
    assert waits.wait_finished("there", 1.0).status is Status.SUCCESS


def test_an_interrupt_a_step_raised_reaches_each_waiter_as_its_own() -> None:
    _store, runs, waits = _room()
    original = KeyboardInterrupt("stop")
    runs.interrupts["int"] = original
    with pytest.raises(KeyboardInterrupt) as caught:
        waits.wait_finished("int", 1.0)
    assert caught.value is not original and caught.value.__cause__ is original


def test_a_change_ends_the_wait_for_it() -> None:
    _store, _runs, waits = _room()
    changed = threading.Event()
    threading.Timer(0.01, changed.set).start()
    waits.wait_for_change(changed, None, idle=True)
    assert changed.is_set()
