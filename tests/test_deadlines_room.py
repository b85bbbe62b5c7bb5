"""The run deadlines built alone: a memory store, a virtual clock, lists for the
wake-ups' timers and the scheduler's local cancel, no engine (runtime/deadlines.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replaykit.log import Status
from replaykit.otel import Telemetry
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.deadlines import Deadlines
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)


class Room:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.clock = VirtualClock(T0)
        self.watched: list[tuple[str, datetime]] = []
        self.stopped: list[str] = []
        self.deadlines = Deadlines(
            self.store,
            self.clock,
            Telemetry(enabled=False),
            poll_interval=1.0,
            watch_deadline=lambda workflow_id, at: self.watched.append((workflow_id, at)),
            stop_locally=self.stopped.append,
        )

    def run(self, workflow_id: str, deadline: datetime | None) -> WorkflowRow:
        row = WorkflowRow(workflow_id, "wf", Status.PENDING, inputs={"args": []}, deadline=deadline)
        stored, _created = self.store.create_workflow(row)
        return stored


def test_a_deadline_ahead_is_watched_and_a_run_without_one_is_not() -> None:
    room = Room()
    at = T0 + timedelta(seconds=30)
    assert room.deadlines.watch(room.run("ahead", at)) is False
    assert room.deadlines.watch(room.run("none", None)) is False
    assert room.watched == [("ahead", at)] and room.stopped == []


def test_a_run_found_past_its_deadline_is_cancelled_at_once() -> None:
    room = Room()
    row = room.run("late", T0 - timedelta(seconds=1))
    assert room.deadlines.watch(row) is True
    stored = room.store.get_workflow("late")
    assert stored is not None and stored.status is Status.CANCELLED
    assert room.stopped == ["late"] and room.watched == []


def test_a_deadline_moved_later_meanwhile_is_watched_again() -> None:
    room = Room()
    later = T0 + timedelta(minutes=5)
    room.run("moved", later)
    room.deadlines.expire_at("moved")  # the timer fired for an earlier deadline
    assert room.watched == [("moved", later)]
    stored = room.store.get_workflow("moved")
    assert stored is not None and stored.status is Status.PENDING
    room.clock.advance(timedelta(minutes=5))
    room.deadlines.expire_at("moved")
    stored = room.store.get_workflow("moved")
    assert stored is not None and stored.status is Status.CANCELLED
