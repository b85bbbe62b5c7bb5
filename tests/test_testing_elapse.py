"""replaykit/testing/_elapse.py: virtual time passing inside a step body.

What it does to a heartbeat timeout under `run()` is tests/test_heartbeats.py's; here,
where it may be called and what it moves.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from replaykit.commands import Step
from replaykit.interpreter import StepContext, step_context_var
from replaykit.log import Status
from replaykit.runtime.beats import StepBeats
from replaykit.runtime.clock import VirtualClock
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore
from replaykit.testing import elapse

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def test_outside_a_step_body_it_says_where_it_may_be_called() -> None:
    with pytest.raises(RuntimeError, match="outside a step"):
        elapse(1)


def test_a_context_built_by_hand_has_no_time_to_move() -> None:
    token = step_context_var.set(StepContext("r-1", "wf", "s", 0, 1))
    try:
        with pytest.raises(RuntimeError, match="this step context has no engine behind it"):
            elapse(1)
    finally:
        step_context_var.reset(token)


def test_inside_a_body_on_virtual_time_the_clock_moves_by_the_duration() -> None:
    clock = VirtualClock(T0, autojump=False)
    room = StepBeats(MemoryStore(), clock, executor_id="me", max_payload_bytes=1000)
    row = WorkflowRow("r-1", "wf", Status.PENDING)
    beats = room.begin(row, Step("s", lambda: None), 0, 1, (), None, None)
    token = step_context_var.set(StepContext("r-1", "wf", "s", 0, 1, beats=beats))
    try:
        elapse(timedelta(minutes=2))
        elapse(0.5)
        with pytest.raises(
            ValueError, match=r"testing\.elapse\(duration\) must be zero or positive"
        ):
            elapse(-1)
    finally:
        step_context_var.reset(token)
        room.close()
    assert clock.now() == T0 + timedelta(seconds=120.5)
