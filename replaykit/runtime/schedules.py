"""Schedules: start a workflow once per cron tick, across all engines.

Each tick's run has an id derived from the schedule and the tick instant, so
when several engines see the same tick only one of them creates the run (the
store's create is idempotent by id): a tick never runs twice. Cron expressions
are parsed by croniter (the `schedules` extra).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import attrs

from replaykit.registry import Workflow
from replaykit.runtime.clock import Clock
from replaykit.stores.base import Store, WorkflowFilter

__all__ = ["Schedule", "ScheduleLoop", "registered_schedules", "schedule", "ticks_between"]

W = TypeVar("W", bound=Workflow[..., Any])

log = logging.getLogger("replaykit.engine")

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


class ScheduleLoop:
    """The cron loop of one engine: fires each schedule's ticks as they come.

    `fire(entry, tick)` creates the tick's run (idempotent by its id, so engines
    that see the same tick start it once between them).
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        entries: Iterable[Schedule],
        *,
        poll_interval: float,
        fire: Callable[[Schedule, datetime], None],
    ) -> None:
        self.store = store
        self.clock = clock
        self.poll_interval = poll_interval
        self._fire = fire
        self._lock = threading.Lock()
        self._entries = {entry.name: entry for entry in entries}
        self._wanted = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="replaykit-schedules", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        self._wanted.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def add(self, entry: Schedule) -> None:
        with self._lock:
            self._entries[entry.name] = entry
        self._wanted.set()

    def _latest_tick(self, entry: Schedule) -> datetime | None:
        prefix = entry.run_id(self.clock.now())[: -len(self.clock.now().isoformat())]
        latest: datetime | None = None
        for row in self.store.list_workflows(WorkflowFilter(name=entry.workflow.workflow_name)):
            if row.workflow_id.startswith(prefix):
                try:
                    tick = datetime.fromisoformat(row.workflow_id[len(prefix) :])
                except ValueError:
                    continue
                latest = tick if latest is None or tick > latest else latest
        return latest

    def _loop(self) -> None:
        upcoming: dict[str, datetime] = {}
        while not self._closed:
            try:
                self._round(upcoming)
            except Exception:
                log.exception("schedule loop failed; retrying")
            wait = self.poll_interval
            if upcoming:
                wait = min(wait, (min(upcoming.values()) - self.clock.now()).total_seconds())
            self._wanted.wait(max(wait, 0.005))
            self._wanted.clear()

    def _round(self, upcoming: dict[str, datetime]) -> None:
        now = self.clock.now()
        with self._lock:
            entries = dict(self._entries)
        for name, entry in entries.items():
            if name in upcoming:
                continue
            if entry.backfill:
                latest = self._latest_tick(entry)
                if latest is not None:
                    for tick in ticks_between(entry, latest, now):
                        self._fire(entry, tick)
            upcoming[name] = entry.next_tick(now)
        for name, tick in list(upcoming.items()):
            if tick <= now and name in entries:
                self._fire(entries[name], tick)
                upcoming[name] = entries[name].next_tick(tick)
