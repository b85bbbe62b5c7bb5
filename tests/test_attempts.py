"""replaykit/runtime/attempts.py: a step's retry policy as one generator of what to do next.

The generator is driven here by hand, as its drivers in runtime/steps.py drive it: each
`Attempt` is answered with the body's value or its exception, each `Pause` by moving
the clock. No thread, no store.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from replaykit import serde
from replaykit.commands import Retry, Step
from replaykit.errors import RetryAfter
from replaykit.log import Failure, Record, Status, Value
from replaykit.runtime.attempts import (
    Attempt,
    Attempts,
    Pause,
    attempts,
    jitter_draw,
    preemption,
    reply_to,
)
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.host import Host
from replaykit.stores.base import WorkflowRow

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ROW = WorkflowRow("r-1", "checkout", Status.PENDING)


class FakeHost:
    """What the attempts ask of their host: the time, a log, the payload limit."""

    def __init__(self) -> None:
        self.clock = VirtualClock(T0, autojump=False)
        self.logger = logging.getLogger("replaykit.test_attempts")
        self.max_payload_bytes = 1000

    def check_cancelled(self, workflow_id: str) -> None:
        pass


def _steps(host: FakeHost, command: Step[Any], pending: Record | None = None) -> Attempts:
    return attempts(cast(Host, host), ROW, 3, command, None, pending)


def _failed_with(outcome: Any) -> str:
    assert isinstance(outcome, Failure)
    return f"{outcome.error.qualname}: {outcome.error.message}"


def test_a_step_without_a_policy_gets_one_attempt() -> None:
    steps = _steps(FakeHost(), Step("charge", lambda: None))
    first = next(steps)
    assert isinstance(first, Attempt)
    assert (first.context.workflow_id, first.context.position, first.context.attempt) == (
        "r-1",
        3,
        1,
    )
    outcome, made = reply_to(steps, None, ValueError("declined"))  # type: ignore[misc]
    assert made == 1 and _failed_with(outcome) == "ValueError: declined"


def test_a_failed_attempt_pauses_for_the_back_off_then_tries_again() -> None:
    host = FakeHost()
    retry = Retry(max_attempts=3, interval=10, backoff=2)
    steps = _steps(host, Step("charge", lambda: None, retry=retry))
    next(steps)
    pause = reply_to(steps, None, ConnectionError("down"))
    assert pause == Pause(1, T0 + timedelta(seconds=10), T0)
    host.clock.advance(10)
    second = reply_to(steps, None, None)
    assert isinstance(second, Attempt) and second.context.attempt == 2
    pause = reply_to(steps, None, ConnectionError("down"))
    assert pause == Pause(2, T0 + timedelta(seconds=30), T0)  # 10 s, then 20 s
    host.clock.advance(20)
    reply_to(steps, None, None)
    assert reply_to(steps, {"id": "ch_1"}, None) == (Value({"id": "ch_1"}), 3)


def test_the_attempts_go_on_from_a_pending_record_of_earlier_ones() -> None:
    host = FakeHost()
    due = T0 + timedelta(seconds=5)
    pending = Record(3, "step", "charge", None, started_at=T0, wake_at=due, attempts=2)
    steps = _steps(host, Step("charge", lambda: None, retry=Retry(max_attempts=3)), pending)
    assert next(steps) == Pause(2, due, T0)
    host.clock.advance(5)
    last = reply_to(steps, None, None)
    assert isinstance(last, Attempt) and last.context.attempt == 3
    outcome, made = reply_to(steps, None, ConnectionError("down"))  # type: ignore[misc]
    assert made == 3 and _failed_with(outcome) == "ConnectionError: down"


def test_a_wait_the_error_asks_for_replaces_the_back_off() -> None:
    host = FakeHost()
    steps = _steps(host, Step("charge", lambda: None, retry=Retry(max_attempts=2, interval=1)))
    next(steps)
    pause = reply_to(steps, None, RetryAfter(90))
    assert isinstance(pause, Pause) and pause.due == T0 + timedelta(seconds=90)


def test_a_retry_timeout_gives_up_naming_the_step_and_the_last_error() -> None:
    host = FakeHost()
    retry = Retry(max_attempts=10, interval=60, timeout=100)
    steps = _steps(host, Step("charge", lambda: None, retry=retry))
    next(steps)
    assert isinstance(reply_to(steps, None, ConnectionError("down")), Pause)
    host.clock.advance(60)
    reply_to(steps, None, None)
    # The next wait (120 s) would end past the timeout: no third attempt.
    outcome, made = reply_to(steps, None, ConnectionError("still down"))  # type: ignore[misc]
    assert made == 2
    text = _failed_with(outcome)
    assert text.startswith("TimeoutError: step 'charge' of workflow 'checkout' (id 'r-1')")
    assert "position 3 gave up after 2 attempt(s)" in text
    assert "the last attempt failed with ConnectionError: still down" in text


def test_a_result_that_cannot_be_stored_fails_the_step_naming_where() -> None:
    steps = _steps(FakeHost(), Step("charge", lambda: None))
    next(steps)
    outcome, made = reply_to(steps, object(), None)  # type: ignore[misc]
    assert made == 1
    assert "the result of step 'charge' in workflow 'checkout'" in _failed_with(outcome)
    steps = _steps(FakeHost(), Step("charge", lambda: None))
    next(steps)
    outcome, _ = reply_to(steps, "x" * 5000, None)  # type: ignore[misc]
    assert _failed_with(outcome).startswith("PayloadTooLarge")


def test_the_jitter_draw_is_fixed_by_run_position_and_attempt() -> None:
    draws = {jitter_draw("r-1", 3, attempt) for attempt in range(2, 50)}
    assert all(0 <= draw < 1 for draw in draws) and len(draws) == 48
    assert jitter_draw("r-1", 3, 2) == jitter_draw("r-1", 3, 2)
    assert jitter_draw("r-1", 3, 2) != jitter_draw("r-2", 3, 2)


def test_a_preempted_step_records_why_and_how_to_go_on(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="replaykit.test_attempts"):
        outcome, made = preemption(cast(Host, FakeHost()), ROW, 3, Step("charge", lambda: None), 2)
    assert made == 2
    text = _failed_with(outcome)
    assert text.startswith("StepPreempted: step 'charge' of workflow 'checkout' (id 'r-1')")
    assert "catch StepPreempted" in text
    assert "was stopped on attempt 2" in caplog.text
    assert isinstance(outcome, Failure) and outcome.error.traceback == ""
    assert serde.decode_error(outcome.error).__class__.__name__ == "StepPreempted"
