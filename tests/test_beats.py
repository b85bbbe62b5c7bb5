"""replaykit/runtime/beats.py: one attempt's heartbeats, written to the store off the body.

Driven here as attempts() and the drivers drive it, over a memory store and a virtual
clock; what the faces show of heartbeats is in tests/test_heartbeats.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from replaykit import serde
from replaykit.commands import Step
from replaykit.errors import Stopped
from replaykit.log import Status
from replaykit.runtime.beats import StepBeats, elapse
from replaykit.runtime.clock import SystemClock, VirtualClock
from replaykit.runtime.host import CancelScope
from replaykit.stores.base import StepHeartbeat, WorkflowRow
from replaykit.stores.memory import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ROW = WorkflowRow("r-1", "sync", Status.PENDING, executor_id="me")
STEP = Step("upload", lambda: None, heartbeat_timeout=5)


@pytest.fixture
def store() -> MemoryStore:
    store = MemoryStore()
    store.create_workflow(ROW)
    return store


@pytest.fixture
def room(store: MemoryStore) -> Iterator[StepBeats]:
    room = StepBeats(store, VirtualClock(T0), executor_id="me", max_payload_bytes=1000)
    yield room
    room.close()


def _stored(store: MemoryStore) -> list[tuple[int, str, int, Any]]:
    return [(b.position, b.name, b.attempt, b.details) for b in store.get_step_heartbeats("r-1")]


def test_the_last_beat_of_an_attempt_is_in_the_store_once_it_ends(
    store: MemoryStore, room: StepBeats
) -> None:
    beats = room.begin(ROW, STEP, 2, 1, (), None, None)
    room.end(beats)  # it never beat: nothing to write
    assert _stored(store) == []
    for n in range(50):
        beats.beat({"uploaded": n})
    room.end(beats)
    assert _stored(store) == [(2, "upload", 1, serde.encode({"uploaded": 49}))]
    assert beats.written == beats.seq == 50


def test_a_retry_starts_from_what_an_earlier_attempt_beat(
    store: MemoryStore, room: StepBeats
) -> None:
    store.record_step_heartbeat(
        "r-1", StepHeartbeat(2, "upload", 1, T0, {"uploaded": 7}), executor_id="me"
    )
    beats = room.begin(ROW, STEP, 2, 2, (), None, None)
    assert beats.needs_earlier
    room.prepare(beats)
    assert beats.earlier == {"uploaded": 7}
    # The attempt after it in the same driver takes its details without a read.
    beats.beat({"uploaded": 9})
    following = room.begin(ROW, STEP, 2, 3, (), None, beats)
    assert following.earlier == serde.encode({"uploaded": 9}) and not following.needs_earlier


def test_an_attempt_that_stops_beating_expires_and_says_where(room: StepBeats) -> None:
    beats = room.begin(ROW, STEP, 2, 1, (), None, None)
    clock = room.clock
    assert isinstance(clock, VirtualClock)
    beats.body_started()
    clock.advance(5)
    assert not beats.expired()
    clock.advance(0.5)
    assert beats.expired()
    error = beats.timed_out()
    assert "step 'upload' of workflow 'sync' (id 'r-1') at position 2" in str(error)
    assert "went more than 5s without a heartbeat on attempt 1" in str(error)
    assert "it never beat after it started" in str(error)
    with pytest.raises(Stopped, match="abandoned after its heartbeat timeout"):
        beats.beat(None)  # the abandoned body stops at its next beat
    assert beats.stopped_body


def test_a_beat_counts_the_timeout_again(room: StepBeats) -> None:
    beats = room.begin(ROW, STEP, 2, 1, (), None, None)
    clock = room.clock
    assert isinstance(clock, VirtualClock)
    beats.body_started()
    clock.advance(4)
    beats.beat(None)
    clock.advance(4)
    assert not beats.expired()
    beats.body_ended()
    clock.advance(60)
    assert not beats.expired()  # judged at the body's end, whoever looks later


def test_a_cancelled_run_stops_the_body_at_its_next_beat(room: StepBeats) -> None:
    scope = CancelScope()
    beats = room.begin(ROW, STEP, 2, 1, (), scope, None)
    beats.beat(1)
    scope.stop_run()
    with pytest.raises(Stopped, match=r"its run was cancelled\. heartbeat\(\) raises this"):
        beats.beat(2)


def test_a_write_the_store_refuses_stops_the_attempt(store: MemoryStore, room: StepBeats) -> None:
    scope = CancelScope()
    beats = room.begin(ROW, STEP, 2, 1, (), scope, None)
    store.set_status("r-1", Status.CANCELLED)
    beats.beat(1)
    room.end(beats)
    assert scope.cancelled and scope.run_stopped
    assert "CANCELLED" in beats.refused
    with pytest.raises(Stopped, match="CANCELLED"):
        beats.beat(2)


def test_details_that_cannot_be_stored_fail_the_beat_naming_the_step(room: StepBeats) -> None:
    beats = room.begin(ROW, STEP, 2, 1, (), None, None)
    with pytest.raises(Exception, match="heartbeat details of step 'upload'"):
        beats.beat(object())


def test_elapse_needs_virtual_time(store: MemoryStore) -> None:
    room = StepBeats(store, SystemClock(), executor_id="me", max_payload_bytes=1000)
    try:
        beats = room.begin(ROW, STEP, 2, 1, (), None, None)
        with pytest.raises(RuntimeError, match="moves the testing kit's virtual clock"):
            elapse(beats, 1)
    finally:
        room.close()
