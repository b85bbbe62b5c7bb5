"""The options many commands share (--url, --json, --wide, --app-dir) and the duration and
time types."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from replaykit._operator_options import store_url_option
from replaykit.log import Status

__all__ = [
    "UNITS",
    "app_dir_option",
    "datetime_option",
    "duration_option",
    "json_option",
    "parse_duration",
    "parse_when",
    "status_option",
    "store_url_option",
    "timedelta_option",
    "url_option",
    "when_option",
    "wide_option",
]


_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., object])

UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)


_DURATION = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*[smhdw]\s*)+$", re.IGNORECASE)


_DURATION_FORMS = "90s, 15m, 1h30m, 2d or 1w (units w, d, h, m, s; largest first)"


def parse_duration(text: str) -> timedelta:
    """'90s', '15m', '1h30m', '2d12h', '1w', or a plain number of seconds."""
    if _DURATION.match(text):
        seconds = 0.0
        seen: list[str] = []
        for number, unit in _PART.findall(text):
            unit = unit.lower()
            # '30m1h' or '1m1m' is more likely a slip than a way to write 1h30m.
            if seen and list(UNITS).index(unit) <= list(UNITS).index(seen[-1]):
                raise ValueError(
                    f"{text!r} is not a duration: write each unit once, largest first "
                    "(1h30m, 2d12h)"
                )
            seen.append(unit)
            seconds += float(number) * UNITS[unit]
    else:
        try:
            seconds = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a duration; write e.g. {_DURATION_FORMS}") from None
        if seconds < 0:
            raise ValueError(f"{text!r}: a duration cannot be negative")
    try:
        return timedelta(seconds=seconds)
    except (OverflowError, ValueError):  # inf, nan, or past timedelta's 999999999 days
        raise ValueError(f"{text!r} is not a duration this command can use") from None


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """An ISO 8601 instant (naive means UTC) or a duration ago ('2h' = two hours ago)."""
    if _DURATION.match(text):
        try:
            return (now or datetime.now(UTC)) - parse_duration(text)
        except OverflowError:
            raise ValueError(f"{text!r} ago is before the year 1") from None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is neither an ISO 8601 time (2024-06-01T12:00) nor a duration "
            "ago (15m, 1h30m, 7d)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _parsed(
    parse: Callable[[str], _T], ctx: click.Context, param: click.Parameter, value: str | None
) -> _T | None:
    """An option's text parsed, its ValueError said as click's bad parameter."""
    if value is None:
        return None
    try:
        return parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def when_option(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    return _parsed(parse_when, ctx, param, value)


def duration_option(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> timedelta | None:
    return _parsed(parse_duration, ctx, param, value)


def timedelta_option(*names: str, help: str, **attrs: Any) -> Callable[[_F], _F]:
    """An option written as a DURATION (90s, 1h30m, 2d), given to the command as a timedelta."""
    return click.option(*names, callback=duration_option, metavar="DURATION", help=help, **attrs)


def datetime_option(*names: str, help: str, **attrs: Any) -> Callable[[_F], _F]:
    """An option written as a TIME (ISO 8601, or a duration ago), given to the command as an
    aware datetime."""
    return click.option(*names, callback=when_option, metavar="TIME", help=help, **attrs)


url_option = store_url_option(
    "The store: sqlite:///path.db, postgresql://...[?schema=name] or memory://."
)


def status_option(
    help: str = "Only runs in this status (repeat for several).",
) -> Callable[[_F], _F]:
    """--status, repeatable, into the parameter `statuses`: a tuple of Status, or None (any
    status) when none is given, as WorkflowFilter(status=...) takes it."""
    return click.option(
        "--status",
        "statuses",
        multiple=True,
        type=click.Choice([s.value for s in Status], case_sensitive=False),
        callback=_statuses,
        help=help,
    )


def _statuses(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[Status, ...] | None:
    return tuple(Status(s) for s in value) or None


def app_dir_option(imported: str) -> Callable[[_F], _F]:
    """--app-dir, the directory put first on sys.path before `imported` is imported."""
    return click.option(
        "--app-dir",
        default=".",
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
        help=f"Directory put first on sys.path before importing {imported}.",
    )


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead.")


wide_option = click.option(
    "--wide",
    is_flag=True,
    help="Show every cell and value in full (on a terminal, long ones are cut to fit it).",
)
