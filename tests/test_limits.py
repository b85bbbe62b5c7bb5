"""replaykit/_limits.py: one rule for the waits, intervals and counts every face takes."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from replaykit._limits import (
    MAX_COUNT,
    MAX_INTERVAL,
    MAX_WAIT,
    checked_count,
    checked_interval,
    checked_wait,
)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (math.nan, ValueError),
        (-1, ValueError),
        (1e300, ValueError),
        (timedelta.max, ValueError),
        (math.inf, ValueError),
        (True, TypeError),
        ("5", TypeError),
    ],
)
def test_one_rule_for_waits(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="timeout"):
        checked_wait(value, "timeout")


def test_what_waits_take() -> None:
    assert checked_wait(None, "timeout") is None
    assert checked_wait(0, "timeout") == 0.0
    assert checked_wait(timedelta(minutes=2), "timeout") == 120.0
    assert checked_wait(MAX_WAIT, "timeout") == MAX_WAIT
    assert checked_interval(0.5, "poll_interval") == 0.5
    assert checked_count(10, "limit") == 10
    with pytest.raises(ValueError, match="limit"):
        checked_count(10**30, "limit")


@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, MAX_INTERVAL + 1])
def test_an_interval_is_more_than_nothing_and_at_most_a_day(value: float) -> None:
    with pytest.raises(ValueError, match=r"poll_interval must be more than 0 .* got"):
        checked_interval(value, "poll_interval")


def test_an_interval_may_be_a_timedelta_up_to_a_day() -> None:
    assert checked_interval(timedelta(milliseconds=50), "lease") == 0.05
    assert checked_interval(timedelta(days=1), "lease") == MAX_INTERVAL
    with pytest.raises(TypeError, match="lease must be a number of seconds"):
        checked_interval("1", "lease")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "minimum", "error"),
    [(True, 0, TypeError), (1.0, 0, TypeError), (0, 1, ValueError), (MAX_COUNT + 1, 0, ValueError)],
)
def test_a_count_is_a_whole_number_within_its_bounds(
    value: Any, minimum: int, error: type[Exception]
) -> None:
    with pytest.raises(error, match="max_workers"):
        checked_count(value, "max_workers", minimum=minimum)
    assert checked_count(minimum, "max_workers", minimum=minimum) == minimum
    assert checked_count(MAX_COUNT, "max_workers") == MAX_COUNT
