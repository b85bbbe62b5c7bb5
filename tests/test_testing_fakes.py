"""replaykit/testing/_fakes.py: what a test passes as `steps={...}`, turned into callables.

Asked directly here; the kit running them on virtual time is tests/test_testing_kit*.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from replaykit.interpreter import StepContext, step_context_var
from replaykit.testing._fakes import StepTap, as_fake, fresh_fakes, sequence


def test_a_value_is_returned_and_an_exception_raised_whatever_the_arguments() -> None:
    assert as_fake("charge", {"id": "ch_1"})(1, x=2) == {"id": "ch_1"}
    with pytest.raises(ConnectionError):
        as_fake("charge", ConnectionError)()
    error = ValueError("declined")
    with pytest.raises(ValueError, match="declined"):
        as_fake("charge", error)()
    assert repr(as_fake("charge", 5)) == "fake(5)"


def test_a_callable_is_called_with_the_steps_arguments() -> None:
    def double(n: int) -> int:
        return 2 * n

    assert as_fake("double", double) is double


def test_a_sequence_gives_successive_outcomes_and_refuses_a_call_past_its_end() -> None:
    fake = as_fake("charge", sequence(ConnectionError("down"), lambda n: n + 1))
    with pytest.raises(ConnectionError):
        fake(1)
    assert fake(1) == 2
    with pytest.raises(AssertionError, match="fake for step 'charge' was called 3 times"):
        fake(1)
    with pytest.raises(ValueError, match="at least one outcome"):
        sequence()


def test_each_simulated_process_starts_a_stateful_fake_over() -> None:
    stateful = sequence(1, 2)
    plain = as_fake("other", 7)
    stateful("x")
    fresh = fresh_fakes({"charge": stateful, "other": plain})
    assert fresh["charge"]("x") == 1  # from the first outcome again
    assert fresh["other"] is plain


def test_a_step_retried_across_a_restart_skips_the_outcomes_of_its_earlier_attempts() -> None:
    fake = sequence("first", "second", "third")
    token = step_context_var.set(StepContext("r-1", "wf", "charge", 4, 3))
    try:
        assert fake() == "third"  # attempts 1 and 2 ran in the process that crashed
    finally:
        step_context_var.reset(token)


def test_the_tap_reports_every_call_faked_or_real() -> None:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    tap = StepTap({"charge": as_fake("charge", 5)}, lambda n, a, k: calls.append((n, a)))
    assert "charge" in tap and len(tap) == 1 and list(tap) == ["charge"]
    assert tap["charge"](1) == 5
    assert tap.get("refund", lambda n: -n)(3) == -3  # not faked: the real body runs
    assert tap.get("refund") is None
    assert calls == [("charge", (1,)), ("refund", (3,))]


def test_the_tap_keeps_an_async_body_async() -> None:
    calls: list[str] = []

    async def fetch(url: str) -> str:
        return f"got {url}"

    tap = StepTap({"fetch": fetch}, lambda n, a, k: calls.append(n))
    assert asyncio.run(tap["fetch"]("x")) == "got x" and calls == ["fetch"]
