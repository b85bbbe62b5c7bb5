"""Errors that decide their own retry: `Retry(non_retryable=...)`, the `NonRetryable`
mixin, and `RetryAfter` (or any `retry_after`) choosing the wait before the next attempt.

The policy alone (`Retry.should_retry`, `requested_delay`), then on virtual time in the
testing kit, then on the engine on every store, sync and async steps, across a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    Engine,
    NonRetryable,
    Retry,
    RetryAfter,
    Status,
    Step,
    VirtualClock,
    step_context,
    testing,
    workflow,
)
from replaykit.commands import requested_delay
from replaykit.errors import MAX_RETRY_AFTER

# -- the policy alone ----------------------------------------------------------------


class CardDeclined(NonRetryable, Exception):
    pass


class SoftDecline(CardDeclined):
    """A subclass may take the mark back."""

    non_retryable = False


class RateLimited(Exception):
    def __init__(self, retry_after: Any) -> None:
        super().__init__(f"429, retry after {retry_after!r}")
        self.retry_after = retry_after


def test_non_retryable_classes_win_over_retry_on() -> None:
    retry = Retry(max_attempts=5, retry_on=OSError, non_retryable=(FileNotFoundError,))
    assert retry.should_retry(ConnectionError(), 1)
    assert not retry.should_retry(FileNotFoundError(), 1)
    assert not retry.should_retry(ValueError(), 1)  # retry_on still decides the rest
    assert Retry(max_attempts=5, non_retryable=KeyError).non_retryable == (KeyError,)
    assert Retry().non_retryable == ()


def test_an_exception_marks_itself_non_retryable_by_class_or_instance() -> None:
    retry = Retry(max_attempts=5)
    assert not retry.should_retry(CardDeclined("no funds"), 1)
    assert not Retry(max_attempts=5, retry_on=CardDeclined).should_retry(CardDeclined(), 1)
    assert retry.should_retry(SoftDecline(), 1)
    one = ValueError("this one only")
    one.non_retryable = True  # type: ignore[attr-defined]
    assert not retry.should_retry(one, 1)
    assert retry.should_retry(ValueError("another"), 1)
    odd = ValueError()
    odd.non_retryable = "yes"  # type: ignore[attr-defined]  # only True itself counts
    assert retry.should_retry(odd, 1)


def test_retry_after_is_a_request_to_retry_within_the_policy_bounds() -> None:
    only_timeouts = Retry(max_attempts=3, retry_on=TimeoutError)
    assert only_timeouts.should_retry(RetryAfter(5), 1)
    assert not only_timeouts.should_retry(RetryAfter(5), 3)  # max_attempts holds
    assert not Retry(max_attempts=3, non_retryable=RetryAfter).should_retry(RetryAfter(5), 1)
    # Another exception with a retry_after is retried only as retry_on says.
    assert not only_timeouts.should_retry(RateLimited(5), 1)
    assert Retry(max_attempts=3).should_retry(RateLimited(5), 1)


def test_retry_after_carries_its_delay_and_round_trips_as_recorded() -> None:
    error = RetryAfter(timedelta(minutes=2), "rate limited")
    assert error.delay == 120.0 and error.retry_after == 120.0
    assert str(error) == "rate limited"
    assert str(RetryAfter(1.5)) == "retry after 1.5s"
    again = RetryAfter(*error.args)  # what a replay rebuilds from the recorded args
    assert (again.delay, str(again)) == (120.0, "rate limited")
    assert requested_delay(error) == 120.0
    assert requested_delay(RateLimited(timedelta(seconds=30))) == 30.0
    assert requested_delay(RateLimited(None)) is None
    assert requested_delay(ValueError()) is None


@pytest.mark.parametrize(
    ("delay", "error", "words"),
    [
        (-1, ValueError, "from zero seconds to a hundred years"),
        (float("nan"), ValueError, "from zero seconds"),
        (float("inf"), ValueError, "from zero seconds"),
        (MAX_RETRY_AFTER * 2, ValueError, "a hundred years"),
        (timedelta(seconds=-5), ValueError, "from zero seconds"),
        ("120", TypeError, "a timedelta or a number of seconds"),
        (True, TypeError, "a timedelta or a number of seconds"),
    ],
)
def test_retry_after_refuses_a_delay_it_cannot_wait(
    delay: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words) as raised:
        RetryAfter(delay)
    assert "RetryAfter(delay=" in str(raised.value)


def test_a_bad_retry_after_attribute_is_named() -> None:
    with pytest.raises(ValueError, match=r"RateLimited\.retry_after is -3"):
        requested_delay(RateLimited(-3))
    with pytest.raises(ValueError, match=r"RateLimited\.retry_after is 'soon'"):
        requested_delay(RateLimited("soon"))


@pytest.mark.parametrize("field", ["non_retryable", "retry_on"])
def test_retry_refuses_what_is_not_an_exception_class(field: str) -> None:
    with pytest.raises(TypeError, match=rf"Retry\({field}=\.\.\.\): {field}\[1\] is 'oops'"):
        Retry(**{field: (KeyError, "oops")})
    with pytest.raises(TypeError, match=r"an exception instance: pass its class"):
        Retry(**{field: KeyError("x")})
    with pytest.raises(TypeError, match=rf"Retry\({field}='KeyError'\)"):
        Retry(**{field: "KeyError"})
    with pytest.raises(TypeError, match=r"is <class 'int'>, not an exception class"):
        Retry(**{field: [int]})


# -- on virtual time, in the testing kit -----------------------------------------------

CALLS: list[int] = []


def rate_limited_twice(order: str) -> str:
    attempt = step_context().attempt
    CALLS.append(attempt)
    if attempt == 1:
        raise RetryAfter(90, "rate limited")
    if attempt == 2:
        raise RateLimited(timedelta(minutes=10))
    return f"charged {order} on attempt {attempt}"


@workflow(name="decide.rate-limited")
def rate_limited(order: str) -> Generator[Any, Any, str]:
    # No retry_on: every Exception is retried, and each of these asks for its own wait.
    value: str = yield Step(
        "charge", rate_limited_twice, order, retry=Retry(max_attempts=5, interval=1.0)
    )
    return value


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def test_the_kit_waits_what_the_error_asked_on_virtual_time() -> None:
    result = testing.run(rate_limited, "o-1", real_steps=True)
    assert result.unwrap() == "charged o-1 on attempt 3"
    # 90 s asked by RetryAfter, then 10 minutes by RateLimited.retry_after: not the
    # policy's 1 s and 2 s, and no max_interval cap either.
    assert result.elapsed == timedelta(seconds=90 + 600)
    assert result.log[0].attempts == 3
    testing.check_determinism(rate_limited, "o-1", real_steps=True)


def declines(order: str) -> str:
    CALLS.append(step_context().attempt)
    raise CardDeclined(f"card declined for {order}")


@workflow(name="decide.declined")
def declined(order: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge", declines, order, retry=Retry(max_attempts=5, retry_on=CardDeclined)
    )
    return value


def test_a_non_retryable_error_fails_its_step_at_the_first_attempt() -> None:
    result = testing.run(declined, "o-2", real_steps=True)
    assert result.status is Status.ERROR
    assert isinstance(result.error, CardDeclined)
    assert str(result.error) == "card declined for o-2"
    assert CALLS == [1]
    assert result.log[0].attempts == 1
    assert result.elapsed == timedelta(0)


def connection_refused(order: str) -> str:
    CALLS.append(step_context().attempt)
    raise ConnectionRefusedError(order)


@workflow(name="decide.listed")
def listed(order: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge",
        connection_refused,
        order,
        retry=Retry(
            max_attempts=5, retry_on=ConnectionError, non_retryable=(ConnectionRefusedError,)
        ),
    )
    return value


def test_retry_non_retryable_stops_a_class_retry_on_includes() -> None:
    result = testing.run(listed, "o-3", real_steps=True)
    assert result.status is Status.ERROR
    assert isinstance(result.error, ConnectionRefusedError)
    assert CALLS == [1]


def always_later(seconds: float) -> str:
    CALLS.append(step_context().attempt)
    raise RetryAfter(seconds, f"come back in {seconds:g}s")


@workflow(name="decide.bounded")
def bounded(seconds: float) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "call",
        always_later,
        seconds,
        retry=Retry(max_attempts=4, timeout=timedelta(minutes=30)),
    )
    return value


def test_a_retry_after_past_the_retry_timeout_gives_up_at_once() -> None:
    result = testing.run(bounded, 3600.0, real_steps=True)
    assert result.status is Status.ERROR
    assert isinstance(result.error, TimeoutError)
    message = str(result.error)
    assert "gave up after 1 attempt(s)" in message
    assert "Retry(timeout=1800s)" in message
    assert "RetryAfter: come back in 3600s" in message
    assert CALLS == [1]
    assert result.elapsed == timedelta(0)  # the hour was never waited


def test_max_attempts_bounds_retry_after_and_the_last_one_is_recorded_as_itself() -> None:
    result = testing.run(bounded, 60.0, real_steps=True)
    assert result.status is Status.ERROR
    assert isinstance(result.error, RetryAfter)
    assert (result.error.delay, str(result.error)) == (60.0, "come back in 60s")
    assert CALLS == [1, 2, 3, 4]
    assert result.elapsed == timedelta(minutes=3)


def odd_retry_after(order: str) -> str:
    attempt = step_context().attempt
    CALLS.append(attempt)
    if attempt == 1:
        raise RateLimited("soon")
    return "done"


@workflow(name="decide.odd")
def odd(order: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge", odd_retry_after, order, retry=Retry(max_attempts=2, interval=30)
    )
    return value


def test_a_retry_after_that_is_no_delay_falls_back_on_the_back_off_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        result = testing.run(odd, "o-4", real_steps=True)
    assert result.unwrap() == "done"
    assert result.elapsed == timedelta(seconds=30)
    warned = [r.getMessage() for r in caplog.records if "retry_after" in r.getMessage()]
    assert warned and "RateLimited.retry_after is 'soon'" in warned[0]
    assert "step 'charge' of workflow 'decide.odd'" in warned[0]
    assert "the Retry policy's back-off instead" in warned[0]


# -- on the engine, every store, sync and async ---------------------------------------


async def async_rate_limited(order: str) -> str:
    attempt = step_context().attempt
    CALLS.append(attempt)
    if attempt == 1:
        raise RetryAfter(timedelta(hours=2), "busy")
    return f"async {order} on attempt {attempt}"


@workflow(name="decide.engine")
def on_engine(order: str, use_async: bool) -> Generator[Any, Any, str]:
    fn: Any = async_rate_limited if use_async else rate_limited_twice
    # RetryAfter is retried though retry_on does not name it; RateLimited because it does.
    retry = Retry(max_attempts=4, retry_on=(KeyError, RateLimited))
    value: str = yield Step("charge", fn, order, retry=retry)
    return value


def _backing_off(engine: Engine, workflow_id: str) -> bool:
    return engine.scheduler.busy == 0 and engine.wakeups.is_suspended(workflow_id)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_the_engine_records_the_asked_delay_as_the_back_off(
    store_url: str, use_async: bool
) -> None:
    clock = VirtualClock(autojump=False)
    with Engine(store_url, clock=clock, poll_interval=0.05) as engine:
        handle = engine.start(on_engine, "o-5", use_async, workflow_id="asked")
        wait_for(lambda: _backing_off(engine, "asked"), "the first back-off")
        [record] = engine.store.load_log("asked")
        assert record.started_at is not None
        asked = timedelta(hours=2) if use_async else timedelta(seconds=90)
        assert (record.outcome, record.attempts) == (None, 1)
        assert record.wake_at == record.started_at + asked
        row = engine.store.get_workflow("asked")
        assert row is not None and row.wake_at == record.wake_at
        clock.advance(asked - timedelta(seconds=1))
        assert CALLS == [1]
        clock.advance(timedelta(seconds=1))
        if use_async:
            assert handle.result(timeout=10) == "async o-5 on attempt 2"
            return
        wait_for(lambda: CALLS == [1, 2], "the second attempt, when it is due")
        wait_for(lambda: _backing_off(engine, "asked"), "the second back-off")
        [record] = engine.store.load_log("asked")
        assert record.attempts == 2
        assert record.wake_at == clock.now() + timedelta(minutes=10)
        clock.advance(timedelta(minutes=10))
        assert handle.result(timeout=10) == "charged o-5 on attempt 3"


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_restart_keeps_the_asked_delay(store_url: str) -> None:
    clock = VirtualClock(autojump=False)
    first = Engine(store_url, clock=clock, poll_interval=0.05)
    try:
        first.start(on_engine, "o-6", False, workflow_id="kept")
        wait_for(lambda: _backing_off(first, "kept"), "the first back-off")
        due = clock.now() + timedelta(seconds=90)
    finally:
        first.close()
    with Engine(store_url, clock=clock, poll_interval=0.05) as second:
        wait_for(lambda: _backing_off(second, "kept"), "the recovered run waits")
        clock.advance(timedelta(seconds=89))
        wait_for(lambda: _backing_off(second, "kept"), "still waiting")
        assert CALLS == [1]
        clock.advance(timedelta(seconds=1))
        wait_for(lambda: CALLS == [1, 2], "the second attempt, at the recorded due time")
        assert clock.now() == due
        clock.advance(timedelta(minutes=10))
        assert second.handle("kept").result(timeout=10) == "charged o-6 on attempt 3"
