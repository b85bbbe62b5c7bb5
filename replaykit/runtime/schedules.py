"""Schedules: start a workflow once per cron tick, across all engines.

Each tick's run has an id derived from the schedule and the tick instant, so
when several engines see the same tick only one of them creates the run (the
store's create is idempotent by id): a tick never runs twice. Cron expressions
are parsed by croniter (the `schedules` extra).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import attrs

from replaykit.registry import Workflow

__all__ = ["Schedule", "registered_schedules", "schedule", "ticks_between"]

W = TypeVar("W", bound=Workflow[..., Any])

_schedules: dict[str, Schedule] = {}
_lock = threading.Lock()


def _croniter() -> Any:
    try:
        from croniter import croniter
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise ImportError("schedules need croniter: pip install 'replaykit[schedules]'") from None
    return croniter


@attrs.frozen
class Schedule:
    """Start `workflow(tick)` at every tick of `cron` (UTC)."""

    cron: str
    workflow: Workflow[..., Any] = attrs.field(eq=False)
    name: str
    backfill: bool = False
    queue: str | None = None

    def __attrs_post_init__(self) -> None:
        if not _croniter().is_valid(self.cron):
            raise ValueError(
                f"schedule {self.name!r}: {self.cron!r} is not a valid cron expression "
                "(five fields: minute hour day month weekday; a sixth for seconds)"
            )

    def run_id(self, tick: datetime) -> str:
        return f"schedule:{self.name}:{tick.isoformat()}"

    def next_tick(self, after: datetime) -> datetime:
        tick: datetime = _croniter()(self.cron, after).get_next(datetime)
        return tick


def ticks_between(entry: Schedule, start: datetime, end: datetime) -> Iterator[datetime]:
    """Ticks t with start < t <= end."""
    tick = entry.next_tick(start)
    while tick <= end:
        yield tick
        tick = entry.next_tick(tick)


def schedule(
    cron: str, *, name: str | None = None, backfill: bool = False, queue: str | None = None
) -> Callable[[W], W]:
    """Register a workflow to start once per tick of `cron`; it receives the tick (a datetime).

    Put it above `@workflow`. `backfill=True` starts the ticks missed while no
    engine ran (since the latest tick that did run).
    """

    def register(wf: W) -> W:
        if not isinstance(wf, Workflow):
            raise TypeError("@schedule goes above @workflow: the function must be a workflow")
        entry = Schedule(cron, wf, name or wf.workflow_name, backfill, queue)
        with _lock:
            _schedules[entry.name] = entry
        return wf

    return register


def registered_schedules() -> list[Schedule]:
    with _lock:
        return list(_schedules.values())
