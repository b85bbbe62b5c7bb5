"""replaykit/_durations.py: durations as the commands take them, and the retry policy's waits.

What a `Retry` decides about an exception is in tests/test_retry_decisions.py; here are
the duration checks every command shares and the back-off arithmetic.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from replaykit._durations import (
    Retry,
    as_seconds,
    earliest_deadline,
    marked_non_retryable,
    requested_delay,
    run_deadline,
)
from replaykit.errors import MAX_RETRY_AFTER, NonRetryable, RetryAfter


def test_as_seconds_takes_a_timedelta_or_a_number_and_keeps_none() -> None:
    assert as_seconds(timedelta(minutes=1, milliseconds=500), "Sleep") == 60.5
    assert as_seconds(3, "Sleep") == 3.0
    assert isinstance(as_seconds(3, "Sleep"), float)
    assert as_seconds(0, "Sleep") == 0.0
    assert as_seconds(None, "Sleep") is None


@pytest.mark.parametrize("value", [True, "5", [1]])
def test_as_seconds_refuses_what_is_no_duration_and_names_the_caller(value: object) -> None:
    with pytest.raises(TypeError, match=r"Sleep\(\) must be a timedelta or a number"):
        as_seconds(value, "Sleep()")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-1, math.nan, timedelta(seconds=-1)])
def test_as_seconds_refuses_negative_or_nan(value: object) -> None:
    with pytest.raises(ValueError, match="timeout must be zero or positive"):
        as_seconds(value, "timeout")  # type: ignore[arg-type]


def test_run_deadline_gives_back_the_timeout_in_seconds_and_the_deadline_as_given() -> None:
    when = datetime(2030, 1, 1, tzinfo=UTC)
    assert run_deadline(timedelta(seconds=90), when, what="start") == (90.0, when)
    assert run_deadline(2, None, what="start") == (2.0, None)
    assert run_deadline(None, None, what="start") == (None, None)


@pytest.mark.parametrize("timeout", [0, -3, math.inf, math.nan])
def test_run_deadline_wants_a_timeout_of_some_time(timeout: float) -> None:
    with pytest.raises(ValueError, match=r"start: timeout must be more than zero"):
        run_deadline(timeout, None, what="start")


def test_run_deadline_refuses_a_naive_or_non_datetime_deadline() -> None:
    with pytest.raises(ValueError, match="is naive"):
        run_deadline(None, datetime(2030, 1, 1), what="enqueue")
    with pytest.raises(TypeError, match="for a duration pass timeout= instead"):
        run_deadline(None, 30, what="enqueue")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="enqueue: timeout must be a timedelta"):
        run_deadline("30", None, what="enqueue")  # type: ignore[arg-type]


def test_earliest_deadline_ignores_the_missing_ones() -> None:
    early = datetime(2030, 1, 1, tzinfo=UTC)
    late = early + timedelta(hours=1)
    assert earliest_deadline(late, None, early) == early
    assert earliest_deadline(None, None) is None
    assert earliest_deadline() is None


def test_a_mark_counts_only_when_it_is_true_itself() -> None:
    class Declined(NonRetryable, Exception):
        pass

    class Truthy(Exception):
        non_retryable = 1

    class Raising(Exception):
        @property
        def non_retryable(self) -> bool:
            raise RuntimeError("a property of the user's that fails")

    assert marked_non_retryable(Declined())
    assert not marked_non_retryable(Truthy())
    assert not marked_non_retryable(Raising())
    assert not marked_non_retryable(ValueError())


def test_requested_delay_reads_retry_after_of_any_exception() -> None:
    class Limited(Exception):
        retry_after = timedelta(seconds=7)

    assert requested_delay(RetryAfter(2.5)) == 2.5
    assert requested_delay(Limited()) == 7.0
    assert requested_delay(ValueError()) is None


@pytest.mark.parametrize("value", ["soon", -1, MAX_RETRY_AFTER * 2, math.nan])
def test_requested_delay_names_the_exception_whose_delay_is_no_delay(value: object) -> None:
    class Limited(Exception):
        pass

    error = Limited()
    error.retry_after = value  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"Limited\.retry_after is"):
        requested_delay(error)


def test_the_back_off_grows_by_its_factor_up_to_the_cap() -> None:
    policy = Retry(max_attempts=10, interval=timedelta(seconds=1), backoff=3, max_interval=20)
    assert [policy.delay_before(n) for n in range(2, 7)] == [1.0, 3.0, 9.0, 20.0, 20.0]


def test_jitter_shortens_the_wait_by_its_share_of_the_draw() -> None:
    policy = Retry(max_attempts=3, interval=10, jitter=0.5)
    assert policy.delay_before(2, draw=0.0) == 10.0
    assert policy.delay_before(2, draw=0.5) == 7.5
    assert policy.delay_before(2, draw=7.0) == 5.0  # a draw past 1 counts as 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_attempts": 0}, "max_attempts=0"),
        ({"backoff": 0.5}, "backoff=0.5"),
        ({"interval": -1}, "Retry interval must be zero or positive"),
    ],
)
def test_a_policy_refuses_settings_that_cannot_work(
    options: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Retry(**options)  # type: ignore[arg-type]
