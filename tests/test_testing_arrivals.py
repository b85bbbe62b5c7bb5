"""testing/_arrivals.py: when a test's scripted items arrive (`at=`), checked alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest

from replaykit.testing._arrivals import Arrives, checked_at

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_an_offset_or_seconds_become_a_timedelta_and_an_instant_stays() -> None:
    assert checked_at(timedelta(seconds=5), "Message") == timedelta(seconds=5)
    assert checked_at(2.5, "Message") == timedelta(seconds=2.5)
    assert checked_at(0, "Update") == timedelta(0)
    assert checked_at(START, "Update") == START


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (-1, ValueError, r"Message\(at=-1\) is before the run started"),
        (timedelta(seconds=-1), ValueError, r"is before the run started"),
        (datetime(2026, 1, 1), ValueError, r"a datetime must be timezone-aware"),
        (True, TypeError, r"Message\(at=\.\.\.\) takes a timedelta .* got True"),
        ("5s", TypeError, r"got '5s'"),
    ],
)
def test_what_cannot_be_an_arrival_is_refused_naming_the_item(
    value: object, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        checked_at(value, "Message")  # type: ignore[arg-type]


@attrs.frozen
class _Item(Arrives):
    at: timedelta | datetime


def test_an_item_arrives_after_the_start_or_at_its_instant() -> None:
    assert _Item(timedelta(minutes=1)).arrival(START) == START + timedelta(minutes=1)
    later = START + timedelta(days=1)
    assert _Item(later).arrival(START) == later
