"""replaykit/runtime/clock.py: the only place the runtime learns the time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from replaykit.runtime.clock import SystemClock, VirtualClock

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def test_a_virtual_clock_moves_only_forward_when_told() -> None:
    clock = VirtualClock(T0, autojump=False)
    assert clock.now() == T0 and not clock.autojump
    clock.advance(timedelta(minutes=1))
    clock.advance(0.5)
    assert clock.now() == T0 + timedelta(seconds=60.5)
    with pytest.raises(ValueError, match="only moves forward"):
        clock.advance(-1)


def test_jump_to_never_goes_back() -> None:
    clock = VirtualClock(T0)
    clock.jump_to(T0 + timedelta(days=30))
    clock.jump_to(T0)
    assert clock.now() == T0 + timedelta(days=30)


def test_a_deadline_passes_at_its_instant() -> None:
    clock = VirtualClock(T0)
    deadline = T0 + timedelta(seconds=5)
    assert not clock.passed(deadline)
    clock.advance(5)
    assert clock.passed(deadline)


def test_sleeping_on_virtual_time_moves_the_clock_at_once() -> None:
    clock = VirtualClock(T0)
    clock.sleep(3600)
    clock.sleep(-1)  # a wait already over moves nothing
    asyncio.run(clock.sleep_async(60))
    assert clock.now() == T0 + timedelta(hours=1, minutes=1)


def test_a_virtual_clock_needs_an_aware_start_and_defaults_to_2030() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualClock(datetime(2030, 1, 1))
    assert VirtualClock().now() == T0


def test_the_system_clock_reads_the_time_and_cannot_be_moved() -> None:
    clock = SystemClock()
    before = datetime.now(UTC)
    now = clock.now()
    assert now.tzinfo is not None and before <= now <= datetime.now(UTC)
    assert clock.passed(before) and not clock.passed(now + timedelta(hours=1))
    with pytest.raises(RuntimeError, match="cannot be moved"):
        clock.jump_to(now + timedelta(hours=1))
