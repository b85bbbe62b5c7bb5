"""The client's schedule operations: the store's schedules, as an operator acts on them
(a client defines none; `replaykit.runtime.schedules` does the work)."""

from __future__ import annotations

from datetime import datetime

from replaykit.runtime import schedules
from replaykit.runtime.schedules import ScheduleInfo
from replaykit.stores.base import Store

__all__ = ["ClientSchedules"]


class ClientSchedules:
    """A mixin of `Client`'s: list, pause, resume, delete, trigger and backfill."""

    # Set by `Client.__init__`.
    store: Store

    def _check_open(self) -> None:
        raise NotImplementedError

    def schedules_list(self) -> list[ScheduleInfo]:
        """Every schedule the store knows (an engine whose code defines it has run)."""
        self._check_open()
        return schedules.list_schedules(self.store, registered=())

    def pause_schedule(self, name: str) -> bool:
        """Stop a schedule firing on every engine of the store, until resumed."""
        self._check_open()
        return schedules.pause_schedule(self.store, name, registered=())

    def resume_schedule(self, name: str) -> bool:
        """Let a paused schedule fire again."""
        self._check_open()
        return schedules.resume_schedule(self.store, name, registered=())

    def delete_schedule(self, name: str) -> bool:
        """Forget a schedule's stored state (an engine whose code defines it brings it back)."""
        self._check_open()
        return schedules.delete_schedule(self.store, name)

    def trigger_schedule(self, name: str) -> str:
        """Ask for one run of the schedule now: the next engine that defines it starts it.
        Returns the id the run will have."""
        self._check_open()
        return schedules.trigger_schedule(self.store, name, registered=())

    def backfill_schedule(self, name: str, start: datetime, end: datetime) -> list[str]:
        """Ask for the runs of every tick in [start, end): an engine that defines the
        schedule starts those not run yet. Returns their ids."""
        self._check_open()
        return schedules.backfill_schedule(self.store, name, start, end, registered=())
