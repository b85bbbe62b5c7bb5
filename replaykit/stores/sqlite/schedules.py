"""Schedules' durable state: definitions, pauses, and trigger and backfill requests."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Unpack

from replaykit.stores._checks import check_names, check_schedule_specs
from replaykit.stores._rows import schedule_states
from replaykit.stores.base import ScheduleSpec, ScheduleState
from replaykit.stores.options import ClearRequest
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.room import Room
from replaykit.stores.sqlite.values import EPOCH, first, from_micros, to_micros

__all__ = ["Schedules"]


class Schedules(Room):
    """schedule_states, register_schedules, and the pause and request setters.

    This process's engines hear of an operator's change at once; another process's
    read the states at each poll (SQLite sends nothing across processes)."""

    def schedule_states(self) -> dict[str, ScheduleState]:
        with self._connections.read() as conn:
            rows = conn.execute(SQL["schedule_states"]).fetchall()
        return schedule_states(rows, from_micros)

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        check_schedule_specs(specs)
        if not specs:
            return
        params = [
            (s.name, s.workflow_name, s.cron, s.tz, s.queue, int(s.backfill), to_micros(now))
            for s in specs
        ]
        self._writer.write(lambda conn: conn.executemany(SQL["register_schedule"], params))

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        check_names(schedule_name=name)
        params = (int(paused), to_micros(now), name, int(paused))

        def update(conn: sqlite3.Connection) -> bool | None:
            if conn.execute(SQL["set_schedule_paused"], params).rowcount:
                return None  # changed
            return first(conn.execute(SQL["schedule_exists"], (name,))) is not None

        unchanged = self._writer.write(update)
        if unchanged is not None:
            return unchanged
        self._notify([("schedule", name)])
        return True

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        check_names(schedule_name=name)
        micros = to_micros(at)

        def request(conn: sqlite3.Connection) -> datetime | None:
            conn.execute(SQL["request_schedule_trigger"], (micros, micros, name))
            found = first(conn.execute(SQL["schedule_trigger"], (name,)))
            return None if found is None else from_micros(found[0])

        kept = self._writer.write(request)
        if kept is not None:
            self._notify([("schedule", name)])
        return kept

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        check_names(schedule_name=name)
        params = (to_micros(start), to_micros(end), to_micros(now), name)

        def request(conn: sqlite3.Connection) -> tuple[datetime, datetime] | None:
            conn.execute(SQL["request_schedule_backfill"], params)
            found = first(conn.execute(SQL["schedule_backfill"], (name,)))
            if found is None:
                return None
            return from_micros(found[0]) or EPOCH, from_micros(found[1]) or EPOCH

        kept = self._writer.write(request)
        if kept is not None:
            self._notify([("schedule", name)])
        return kept

    def clear_schedule_request(self, name: str, **options: Unpack[ClearRequest]) -> None:
        trigger_at, backfill = options.get("trigger_at"), options.get("backfill")
        check_names(schedule_name=name)

        def clear(conn: sqlite3.Connection) -> None:
            if trigger_at is not None:
                conn.execute(SQL["clear_schedule_trigger"], (name, to_micros(trigger_at)))
            if backfill is not None:
                conn.execute(
                    SQL["clear_schedule_backfill"],
                    (name, to_micros(backfill[0]), to_micros(backfill[1])),
                )

        if trigger_at is not None or backfill is not None:
            self._writer.write(clear)

    def delete_schedule_state(self, name: str) -> bool:
        check_names(schedule_name=name)
        deleted = self._writer.write(
            lambda conn: conn.execute(SQL["delete_schedule_state"], (name,)).rowcount > 0
        )
        if deleted:
            self._notify([("schedule", name)])
        return deleted
