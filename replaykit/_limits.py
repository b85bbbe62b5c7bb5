"""One rule for the durations and counts every face takes (Engine, AsyncEngine, Client,
AsyncClient, their handles, the CLI).

A value that makes no sense is refused at the call, with what was given and what to pass
instead: a NaN timeout used to block for ever, `timeout=1e300` raised a raw
`OverflowError` from deadline arithmetic, `poll_interval=0` made an idle engine burn a
core, and `max_workers=0` failed only after the engine had taken its executor hold.
"""

from __future__ import annotations

import math
from datetime import timedelta

__all__ = [
    "MAX_COUNT",
    "MAX_INTERVAL",
    "MAX_WAIT",
    "checked_count",
    "checked_interval",
    "checked_wait",
]

#: The longest a caller may wait (seconds): a hundred years. Past it a deadline computed
#: from "now" overflows what a datetime holds; pass None to wait without a limit.
MAX_WAIT = 100 * 365.25 * 86400.0
#: The longest a polling or lease interval may be (seconds): a day.
MAX_INTERVAL = 86400.0
#: The largest count or limit taken (a row limit, a number of workers): 2**62.
MAX_COUNT = 2**62


def _seconds(value: object, what: str) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{what} must be a number of seconds or a timedelta, got {value!r}")


def checked_wait(value: timedelta | float | None, what: str) -> float | None:
    """A timeout for a wait, in seconds: None (no limit), or zero to `MAX_WAIT`."""
    if value is None:
        return None
    seconds = _seconds(value, what)
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(
            f"{what} must be zero or more seconds, got {value!r}; pass None to wait without a limit"
        )
    if seconds > MAX_WAIT:
        raise ValueError(
            f"{what} of {value!r} is longer than the {MAX_WAIT:.0f} s (a hundred years) "
            "replaykit can count down; pass None to wait without a limit"
        )
    return seconds


def checked_interval(value: timedelta | float, what: str) -> float:
    """A polling or lease interval, in seconds: more than zero, at most a day."""
    seconds = _seconds(value, what)
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_INTERVAL:
        raise ValueError(
            f"{what} must be more than 0 and at most {MAX_INTERVAL:.0f} seconds, got "
            f"{value!r} (0 would make an idle engine spin)"
        )
    return seconds


def checked_count(value: int, what: str, *, minimum: int = 0) -> int:
    """A whole number from `minimum` to `MAX_COUNT`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be a whole number, got {value!r}")
    if value < minimum or value > MAX_COUNT:
        raise ValueError(f"{what} must be from {minimum} to {MAX_COUNT}, got {value!r}")
    return value
