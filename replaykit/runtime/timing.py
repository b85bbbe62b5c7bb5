"""When runs start, besides now: schedules and debounce, as the blocking `Engine` offers
them.

A mixin of `Engine`'s: each method hands its work to the room that owns it (the cron
loop, `runtime/schedule_loop.py`; the debouncer, `runtime/debounce.py`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from replaykit.registry import BoundWorkflow, Workflow
from replaykit.runtime import debounce
from replaykit.runtime.messaging import Messaging
from replaykit.runtime.schedule_loop import ScheduleLoop
from replaykit.runtime.schedules import Schedule, ScheduleInfo

__all__ = ["Timing"]


class Timing(Messaging):
    """The engine's methods over schedules, and its debounce (an update-with-start of
    the key's debouncer: `Messaging.update_with_start`)."""

    # Set by `Engine.__init__`.
    schedules: ScheduleLoop

    def schedule(
        self,
        cron: str,
        wf: Workflow[..., Any],
        /,
        *,
        name: str | None = None,
        backfill: bool = False,
        queue: str | None = None,
        tz: str | None = None,
        overlap: str = "allow_all",
        jitter: timedelta | float = 0.0,
    ) -> Schedule:
        """Start `wf(tick)` once per tick of `cron` (read in time zone `tz`, default UTC),
        across all engines that know it; `overlap` and `jitter` as `@schedule` takes them."""
        entry = Schedule(cron, wf, name or wf.workflow_name, backfill, queue, tz, overlap, jitter)
        self.schedules.add(entry)
        return entry

    def schedules_list(self) -> list[ScheduleInfo]:
        """Every schedule this engine defines or the store knows, with its durable state."""
        return self.schedules.list()

    def pause_schedule(self, name: str) -> bool:
        """Stop a schedule firing on every engine of the store, until resumed; True if changed."""
        return self.schedules.pause(name)

    def resume_schedule(self, name: str) -> bool:
        """Let a paused schedule fire again (missed ticks only with `backfill=True`)."""
        return self.schedules.resume(name)

    def delete_schedule(self, name: str) -> bool:
        """Forget a schedule's stored state; an engine whose code defines it brings it back."""
        return self.schedules.delete(name)

    def trigger_schedule(self, name: str) -> str:
        """Start a schedule's workflow now, once (`schedule:<name>:manual:<instant>`)."""
        return self.schedules.trigger(name)

    def backfill_schedule(self, name: str, start: datetime, end: datetime) -> list[str]:
        """Start the runs of every tick in [start, end) not run yet; their ids."""
        return self.schedules.backfill(name, start, end)

    def debounce(
        self,
        key: str,
        period: timedelta | float,
        wf: Workflow[..., Any] | BoundWorkflow[Any] | str,
        /,
        *args: Any,
        max_wait: timedelta | float | None = None,
        **kwargs: Any,
    ) -> str:
        """Start `wf(*args, **kwargs)` once `key` has had no `debounce` call for `period`,
        with the last call's workflow and arguments; with `max_wait`, no later than that
        after the window's first call. Returns the id the run will have (the same for
        every call of one window). Durable (runtime/debounce.py, docs/queues.md)."""
        self._check_open()
        call = debounce.debounce_call(key, period, wf, args, kwargs, max_wait)
        answer = self.update_with_start(
            debounce.debouncer.bind(key),
            debounce.DEBOUNCE_UPDATE,
            *call.update_args(),
            workflow_id=debounce.debouncer_id(key),
        )
        return str(answer)
