"""The starts built alone: a memory store, a virtual clock, lists for the scheduler and
the deadline watch, no engine (runtime/starts.py)."""

from __future__ import annotations

from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import replaykit
from replaykit.errors import DuplicateDedupId, WorkflowIdConflict
from replaykit.log import Status
from replaykit.otel import Telemetry
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.starts import Starts
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@replaykit.workflow(name="starts-echo")
def echo(value: int) -> Generator[Any, Any, int]:
    return value
    yield


class Room:
    """A `Starts` and what it handed on: activations and watched deadlines."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.dispatched: list[tuple[str, bool]] = []
        self.watched: list[tuple[str, datetime]] = []
        self.clock = VirtualClock(T0)
        self.starts = Starts(
            self.store,
            self.clock,
            Telemetry(enabled=False),
            executor_id="starts-test",
            app_version="v1",
            max_payload_bytes=10_000,
            dispatch=self._dispatch,
            watch_deadline=lambda workflow_id, at: self.watched.append((workflow_id, at)),
            step_aside=lambda: None,
        )

    def _dispatch(
        self, workflow_id: str, *, row: WorkflowRow | None = None, fresh: bool = False
    ) -> None:
        assert row is not None and row.workflow_id == workflow_id
        self.dispatched.append((workflow_id, fresh))


def test_a_run_that_starts_now_is_dispatched_by_the_call_that_wrote_it() -> None:
    room = Room()
    row, created = room.starts.create_run(echo, (1,), {}, workflow_id="s-1", timeout=5.0)
    assert created and row.status is Status.PENDING and row.executor_id == "starts-test"
    assert row.deadline == T0 + timedelta(seconds=5)
    # Found with this call's own instant: a lost acknowledgement, still ours to run.
    again, created_again = room.starts.create_run(echo, (1,), {}, workflow_id="s-1")
    assert not created_again and again.workflow_id == "s-1"
    assert room.dispatched == [("s-1", True), ("s-1", False)]
    # Found, written at another instant (not by this call): not dispatched again.
    room.clock.advance(1.0)
    room.starts.create_run(echo, (1,), {}, workflow_id="s-1")
    assert room.dispatched == [("s-1", True), ("s-1", False)]
    with pytest.raises(WorkflowIdConflict):
        room.starts.create_run(echo, (2,), {}, workflow_id="s-1")


def test_a_queued_run_waits_for_a_claim_and_its_deadline_is_watched() -> None:
    room = Room()
    at = T0 + timedelta(minutes=1)
    row, _ = room.starts.create_run(echo, (1,), {}, queue="q", deadline=at, timeout=9.0)
    assert row.status is Status.ENQUEUED and row.executor_id == ""
    # A queued run's timeout counts from its claim: only the deadline holds now.
    assert row.deadline == at
    assert room.dispatched == [] and room.watched == [(row.workflow_id, at)]


def test_a_start_of_a_batch_that_is_wrong_fails_alone() -> None:
    room = Room()
    answers = room.starts.start_batch(
        [(echo, (1,), {}, "b-1"), (object(), (), {}, "b-2"), (echo, (3,), {}, "b-3")],  # type: ignore[list-item]
    )
    assert isinstance(answers[0], WorkflowRow) and isinstance(answers[2], WorkflowRow)
    assert isinstance(answers[1], TypeError)
    assert room.dispatched == [("b-1", True), ("b-3", True)]
    with pytest.raises(ValueError, match="deadlines"):
        room.starts.start_batch([(echo, (1,), {}, None)], deadlines=[])


def test_enqueue_many_answers_a_held_dedup_id_with_its_holder() -> None:
    room = Room()
    (holder,) = room.starts.enqueue_many("q", echo, [replaykit.QueueItem(1, dedup_id="d")])
    with pytest.raises(DuplicateDedupId):
        room.starts.enqueue_many("q", echo, [replaykit.QueueItem(2, dedup_id="d")])
    ids = room.starts.enqueue_many(
        "q", echo, [(5,), replaykit.QueueItem(2, dedup_id="d")], if_exists="return"
    )
    assert ids[1] == holder and ids[0] != holder
    assert room.dispatched == []
