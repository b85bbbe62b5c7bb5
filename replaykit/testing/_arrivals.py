"""When the test's scripted items arrive: the `at=` of `Message`, `Update` and `Cancel`.

Each is given as a `timedelta` (or seconds) after the run's virtual start, or as an
aware `datetime`; the session turns it into an instant once it knows the start.
"""

from __future__ import annotations

from datetime import datetime, timedelta

__all__ = ["Arrives", "checked_at"]


def checked_at(value: timedelta | datetime | float, owner: str) -> timedelta | datetime:
    """`owner(at=value)` as the item keeps it: an aware datetime, or an offset from the
    start that is not before it (seconds become a timedelta)."""
    if isinstance(value, (timedelta, datetime)):
        if isinstance(value, datetime) and value.tzinfo is None:
            raise ValueError(f"{owner}(at={value!r}): a datetime must be timezone-aware")
        if isinstance(value, timedelta) and value < timedelta(0):
            raise ValueError(f"{owner}(at={value!r}) is before the run started")
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{owner}(at={value!r}) is before the run started")
        return timedelta(seconds=value)
    raise TypeError(
        f"{owner}(at=...) takes a timedelta after the start, a number of seconds, or an "
        f"aware datetime; got {value!r}"
    )


class Arrives:
    """A scripted item that arrives `at` an offset from the run's start or an instant."""

    __slots__ = ()

    at: timedelta | datetime

    def arrival(self, start: datetime) -> datetime:
        return self.at if isinstance(self.at, datetime) else start + self.at
