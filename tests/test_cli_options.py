"""replaykit/cli/options.py: what the options take, parsed before any store is opened."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import click
import pytest

from replaykit._text import format_duration
from replaykit.cli.options import duration_option, parse_duration, parse_when, when_option


def test_durations_and_times_parse_and_print() -> None:
    assert parse_duration("90s").total_seconds() == 90
    assert parse_duration("2h").total_seconds() == 7200
    assert parse_duration("1w").days == 7
    assert parse_duration("30").total_seconds() == 30
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("soon")
    when = parse_when("2024-06-01T12:00")
    assert when.tzinfo is not None and when.hour == 12  # naive means UTC
    assert parse_when("2024-06-01T12:00+02:00").utcoffset() is not None
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_when("tomorrow-ish")
    assert [format_duration(s) for s in (0.0001, 0.0123, 4.56, 125, 7300, 90000)] == [
        "<1ms",
        "12ms",
        "4.6s",
        "2m05s",
        "2h01m",
        "1d01h",
    ]


def test_a_duration_is_its_units_largest_first_or_plain_seconds() -> None:
    assert parse_duration("1h30m") == timedelta(hours=1, minutes=30)
    assert parse_duration("2D12H") == timedelta(days=2, hours=12)
    assert parse_duration("1.5m") == timedelta(seconds=90)
    assert parse_duration(" 1h 30m ") == timedelta(hours=1, minutes=30)
    for slip in ("30m1h", "1m1m"):
        with pytest.raises(ValueError, match="write each unit once, largest first"):
            parse_duration(slip)
    with pytest.raises(ValueError, match="cannot be negative"):
        parse_duration("-5")
    for huge in ("inf", "nan", "9999999999w"):
        with pytest.raises(ValueError, match="not a duration this command can use"):
            parse_duration(huge)


def test_a_time_may_be_a_duration_ago() -> None:
    now = datetime(2030, 1, 2, 12, tzinfo=UTC)
    assert parse_when("2h", now) == datetime(2030, 1, 2, 10, tzinfo=UTC)
    assert parse_when("1d", now) == datetime(2030, 1, 1, 12, tzinfo=UTC)
    with pytest.raises(ValueError, match="before the year 1"):
        parse_when("999999w", now)


def test_an_options_bad_text_is_said_as_a_bad_parameter() -> None:
    command = click.Command("list")
    ctx = click.Context(command)
    since = click.Option(["--since"])
    assert when_option(ctx, since, None) is None
    assert duration_option(ctx, since, "90s") == timedelta(seconds=90)
    with pytest.raises(click.BadParameter, match="'soon' is not a duration"):
        duration_option(ctx, since, "soon")
    with pytest.raises(click.BadParameter, match="neither an ISO 8601 time"):
        when_option(ctx, since, "tomorrow-ish")
