"""The memory store's schedule states: one entry per schedule, shared by every engine on
the store (a mixin of `MemoryStore`, which holds the lock and the entries)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Unpack

import attrs

from replaykit.stores._checks import check_names, check_schedule_specs
from replaykit.stores.base import ScheduleSpec, ScheduleState
from replaykit.stores.options import (
    ClearRequest,
)

__all__ = ["MemorySchedules"]


class MemorySchedules:
    """`schedule_states` and the methods after it in the `Store` protocol, in a dict."""

    _lock: threading.RLock
    _schedules: dict[str, ScheduleState]

    def _notify(self, kind: str, key: str) -> None:
        raise NotImplementedError  # the store's: it tells its subscribers

    def schedule_states(self) -> dict[str, ScheduleState]:
        with self._lock:
            return dict(self._schedules)

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        check_schedule_specs(specs)
        with self._lock:
            for spec in specs:
                old = self._schedules.get(spec.name)
                if old is None:
                    self._schedules[spec.name] = ScheduleState(
                        spec.name,
                        spec.workflow_name,
                        spec.cron,
                        spec.tz,
                        spec.queue,
                        spec.backfill,
                        paused=False,
                        updated_at=now,
                    )
                elif old.spec != spec:
                    self._schedules[spec.name] = attrs.evolve(
                        old,
                        workflow_name=spec.workflow_name,
                        cron=spec.cron,
                        tz=spec.tz,
                        queue=spec.queue,
                        backfill=spec.backfill,
                        updated_at=now,
                    )

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        check_names(schedule_name=name)
        with self._lock:
            old = self._schedules.get(name)
            if old is None:
                return False
            if old.paused == paused:
                return True
            self._schedules[name] = attrs.evolve(old, paused=paused, updated_at=now)
        self._notify("schedule", name)
        return True

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        check_names(schedule_name=name)
        with self._lock:
            old = self._schedules.get(name)
            if old is None:
                return None
            if old.trigger_at is not None:
                return old.trigger_at
            self._schedules[name] = attrs.evolve(old, trigger_at=at, updated_at=at)
        self._notify("schedule", name)
        return at

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        check_names(schedule_name=name)
        with self._lock:
            old = self._schedules.get(name)
            if old is None:
                return None
            if old.backfill_start is not None and old.backfill_end is not None:
                return old.backfill_start, old.backfill_end
            self._schedules[name] = attrs.evolve(
                old, backfill_start=start, backfill_end=end, updated_at=now
            )
        self._notify("schedule", name)
        return start, end

    def clear_schedule_request(self, name: str, **options: Unpack[ClearRequest]) -> None:
        trigger_at, backfill = options.get("trigger_at"), options.get("backfill")
        check_names(schedule_name=name)
        with self._lock:
            state = self._schedules.get(name)
            if state is None:
                return
            if trigger_at is not None and state.trigger_at == trigger_at:
                state = attrs.evolve(state, trigger_at=None)
            if backfill is not None and (state.backfill_start, state.backfill_end) == backfill:
                state = attrs.evolve(state, backfill_start=None, backfill_end=None)
            self._schedules[name] = state

    def delete_schedule_state(self, name: str) -> bool:
        check_names(schedule_name=name)
        with self._lock:
            if self._schedules.pop(name, None) is None:
                return False
        self._notify("schedule", name)
        return True
