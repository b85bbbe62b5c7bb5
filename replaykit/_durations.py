"""Durations and the retry policy: what `Step`, `Sleep` and the starts take as time.

Kept apart from the commands so that `replaykit.commands` stays one readable table of
what a workflow may yield; everything here is re-exported from there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from replaykit.errors import MAX_RETRY_AFTER, RetryAfter

__all__ = [
    "Retry",
    "as_seconds",
    "earliest_deadline",
    "marked_non_retryable",
    "requested_delay",
    "run_deadline",
]


def as_seconds(value: timedelta | float | int | None, what: str) -> float | None:
    """Normalise a duration given as `timedelta` or seconds; refuse nonsense early."""
    if value is None:
        return None
    seconds = _seconds_of(value)
    if seconds is None:
        raise TypeError(f"{what} must be a timedelta or a number of seconds, got {value!r}")
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"{what} must be zero or positive, got {value!r}")
    return seconds


def _seconds_of(value: object) -> float | None:
    """`value` in seconds when it is a timedelta or a number (a bool is not one), else None."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def run_deadline(
    timeout: timedelta | float | None, deadline: datetime | None, *, what: str
) -> tuple[float | None, datetime | None]:
    """A run's `timeout=` (seconds) and `deadline=` as given, checked; `what` names the call.

    The timeout must be positive (a run with no time at all could never start)
    and the deadline an aware datetime (a naive one names no instant).
    """
    seconds = None
    if timeout is not None:
        seconds = _seconds_of(timeout)
        if seconds is None:
            raise TypeError(
                f"{what}: timeout must be a timedelta or a number of seconds, got {timeout!r}"
            )
        if math.isnan(seconds) or math.isinf(seconds) or seconds <= 0:
            raise ValueError(
                f"{what}: timeout must be more than zero, got {timeout!r}; pass a positive "
                "timedelta or number of seconds, or None for no timeout"
            )
    if deadline is not None:
        if not isinstance(deadline, datetime):
            raise TypeError(
                f"{what}: deadline must be a timezone-aware datetime, got {deadline!r}; "
                "for a duration pass timeout= instead"
            )
        if deadline.tzinfo is None or deadline.utcoffset() is None:
            raise ValueError(
                f"{what}: deadline {deadline.isoformat()} is naive (no time zone), so it names "
                "no instant; pass an aware datetime such as datetime(..., tzinfo=UTC)"
            )
    return seconds, deadline


def earliest_deadline(*deadlines: datetime | None) -> datetime | None:
    """The earliest of the deadlines given (None ones ignored); None if there are none."""
    given = [d for d in deadlines if d is not None]
    return min(given) if given else None


def _interval_seconds(value: timedelta | float) -> float:
    seconds = as_seconds(value, "Retry interval")
    assert seconds is not None
    return seconds


def _exception_classes(
    value: type[BaseException] | Sequence[type[BaseException]] | None, what: str
) -> tuple[type[BaseException], ...] | None:
    if value is None:
        return None
    given = (value,) if isinstance(value, type) else value
    if isinstance(given, (str, bytes)) or not isinstance(given, (Sequence, frozenset, set)):
        hint = (
            " (an exception instance: pass its class)" if isinstance(value, BaseException) else ""
        )
        raise TypeError(
            f"Retry({what}={value!r}){hint}: pass an exception class or a tuple of them, such "
            f"as {what}=(ConnectionError, TimeoutError)"
        )
    classes = tuple(given)
    for index, cls in enumerate(classes):
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            shown = f"{what}[{index}]" if not isinstance(value, type) else what
            hint = " (an instance: pass its class)" if isinstance(cls, BaseException) else ""
            raise TypeError(
                f"Retry({what}=...): {shown} is {cls!r}, not an exception class{hint}; pass "
                f"exception classes, such as {what}=(ConnectionError, TimeoutError)"
            )
    return classes


def _retry_on(
    value: type[BaseException] | Sequence[type[BaseException]] | None,
) -> tuple[type[BaseException], ...] | None:
    return _exception_classes(value, "retry_on")


def _non_retryable(
    value: type[BaseException] | Sequence[type[BaseException]] | None,
) -> tuple[type[BaseException], ...]:
    return _exception_classes(value, "non_retryable") or ()


def marked_non_retryable(error: BaseException) -> bool:
    """Whether the exception says it must not be retried: its `non_retryable` is `True`
    (the `NonRetryable` mixin sets it on the class; an instance may set its own)."""
    try:
        return getattr(error, "non_retryable", False) is True
    except Exception:  # a property or __getattr__ of the user's that raises: not marked
        return False


def requested_delay(error: BaseException) -> float | None:
    """The seconds `error` asks to wait before the next attempt, or None if it asks none.

    `RetryAfter(delay)` asks through its `retry_after`; so may any exception, with a
    `retry_after` attribute that is a timedelta or a number of seconds. Raises
    `ValueError` naming the exception when that attribute is something else (a
    negative number, a string): the caller says so and falls back on the policy's
    back-off, as a step's failure must still be retried or recorded.
    """
    try:
        value = getattr(error, "retry_after", None)
    except Exception:
        return None
    if value is None:
        return None
    seconds = _seconds_of(value)
    if seconds is None:
        raise ValueError(
            f"{type(error).__name__}.retry_after is {value!r}: a delay before the next "
            "attempt must be a timedelta or a number of seconds"
        )
    if math.isnan(seconds) or not 0 <= seconds <= MAX_RETRY_AFTER:
        raise ValueError(
            f"{type(error).__name__}.retry_after is {value!r}: a delay before the next "
            "attempt must be from zero seconds to a hundred years"
        )
    return seconds


def _jitter(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"Retry jitter must be a fraction from 0 to 1, got {value!r}")
    if math.isnan(value) or not 0 <= value <= 1:
        raise ValueError(
            f"Retry(jitter={value!r}): a fraction of the delay from 0 to 1 (0.2 shortens each "
            "wait by up to a fifth)"
        )
    return float(value)


def _overall_timeout(value: timedelta | float | None) -> float | None:
    return as_seconds(value, "Retry timeout")


@attrs.frozen
class Retry:
    """How a failing step is retried. All attempts share the step's one record.

    The wait before attempt n+1 is `interval * backoff**(n-1)`, capped at
    `max_interval`; `jitter` (a fraction from 0 to 1) shortens each wait by up
    to that share of it, so that runs failing together do not retry together.
    `retry_on` limits retries to those exception classes; `non_retryable`
    names classes never retried, even when `retry_on` includes them (and an
    exception whose `non_retryable` is True, as `replaykit.NonRetryable` sets
    it, never is either). An exception may ask for the wait before the next
    attempt (`replaykit.RetryAfter`, or a `retry_after` attribute): that wait
    replaces the computed one. `timeout` bounds all attempts together, counted
    from the first one's start: no attempt starts after it.

    The waits are durable timers: between attempts the run holds no thread,
    and the attempts made and the instant the next is due are recorded.
    """

    max_attempts: int = 1
    interval: float = attrs.field(default=1.0, converter=_interval_seconds)
    backoff: float = 2.0
    max_interval: float = attrs.field(default=3600.0, converter=_interval_seconds)
    retry_on: tuple[type[BaseException], ...] | None = attrs.field(
        default=None, converter=_retry_on
    )
    jitter: float = attrs.field(default=0.0, converter=_jitter)
    timeout: float | None = attrs.field(default=None, converter=_overall_timeout)
    non_retryable: tuple[type[BaseException], ...] = attrs.field(
        default=(), converter=_non_retryable
    )

    def __attrs_post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"Retry(max_attempts={self.max_attempts}): must be at least 1")
        if self.backoff < 1:
            raise ValueError(f"Retry(backoff={self.backoff}): must be at least 1.0")

    def delay_before(self, attempt: int, draw: float = 0.0) -> float:
        """Seconds to wait before `attempt` (2 is the first retry).

        `draw`, in [0, 1), picks the jitter: the wait is shortened by
        `jitter * draw` of itself. The runtime draws it from the run's id, the
        step's position and the attempt, so every engine computes the same wait.
        """
        raw = min(self.interval * (self.backoff ** max(attempt - 2, 0)), self.max_interval)
        return raw * (1.0 - self.jitter * min(max(draw, 0.0), 1.0))

    def should_retry(self, error: BaseException, attempts_made: int) -> bool:
        """Whether a step whose attempt `attempts_made` raised `error` gets another.

        In this order: never past `max_attempts`; never an exception that
        `non_retryable` names or that marks itself (`NonRetryable`); always a
        `RetryAfter`, a request to retry; else what `retry_on` says (every
        `Exception` when it is None).
        """
        if attempts_made >= self.max_attempts:
            return False
        if isinstance(error, self.non_retryable) or marked_non_retryable(error):
            return False
        if isinstance(error, RetryAfter):
            return True
        if self.retry_on is None:
            return isinstance(error, Exception)
        return isinstance(error, self.retry_on)
