"""Schedules' durable state: definitions, pauses, and trigger and backfill requests."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Unpack

from replaykit.stores._checks import check_names, check_schedule_specs
from replaykit.stores.base import ScheduleSpec, ScheduleState
from replaykit.stores.options import (
    ClearRequest,
)
from replaykit.stores.sqlite.connections import Connections
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.values import EPOCH, first, from_micros, to_micros
from replaykit.stores.sqlite.writer import Notify, Writer

__all__ = ["Schedules"]

_SCHEDULE_STATES = SQL["schedule_states"]
_REGISTER_SCHEDULE = SQL["register_schedule"]
_SET_SCHEDULE_PAUSED = SQL["set_schedule_paused"]
_SCHEDULE_EXISTS = SQL["schedule_exists"]
_REQUEST_SCHEDULE_TRIGGER = SQL["request_schedule_trigger"]
_SCHEDULE_TRIGGER = SQL["schedule_trigger"]
_REQUEST_SCHEDULE_BACKFILL = SQL["request_schedule_backfill"]
_SCHEDULE_BACKFILL = SQL["schedule_backfill"]
_CLEAR_SCHEDULE_TRIGGER = SQL["clear_schedule_trigger"]
_CLEAR_SCHEDULE_BACKFILL = SQL["clear_schedule_backfill"]
_DELETE_SCHEDULE_STATE = SQL["delete_schedule_state"]


class Schedules:
    """schedule_states, register_schedules, and the pause and request setters."""

    def __init__(self, connections: Connections, writer: Writer, notify: Notify) -> None:
        self._connections = connections
        self._writer = writer
        # This process's engines hear of an operator's change at once; another
        # process's read the states at each poll (SQLite sends nothing across).
        self._notify = notify

    def schedule_states(self) -> dict[str, ScheduleState]:
        with self._connections.read() as conn:
            rows = conn.execute(_SCHEDULE_STATES).fetchall()
        return {
            r[0]: ScheduleState(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                bool(r[5]),
                bool(r[6]),
                from_micros(r[7]) or EPOCH,
                from_micros(r[8]),
                from_micros(r[9]),
                from_micros(r[10]),
            )
            for r in rows
        }

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        check_schedule_specs(specs)
        if not specs:
            return
        params = [
            (s.name, s.workflow_name, s.cron, s.tz, s.queue, int(s.backfill), to_micros(now))
            for s in specs
        ]
        self._writer.write(lambda conn: conn.executemany(_REGISTER_SCHEDULE, params))

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        check_names(schedule_name=name)
        params = (int(paused), to_micros(now), name, int(paused))

        def update(conn: sqlite3.Connection) -> bool | None:
            if conn.execute(_SET_SCHEDULE_PAUSED, params).rowcount:
                return None  # changed
            return first(conn.execute(_SCHEDULE_EXISTS, (name,))) is not None

        unchanged = self._writer.write(update)
        if unchanged is not None:
            return unchanged
        self._notify([("schedule", name)])
        return True

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        check_names(schedule_name=name)
        micros = to_micros(at)

        def request(conn: sqlite3.Connection) -> datetime | None:
            conn.execute(_REQUEST_SCHEDULE_TRIGGER, (micros, micros, name))
            found = first(conn.execute(_SCHEDULE_TRIGGER, (name,)))
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
            conn.execute(_REQUEST_SCHEDULE_BACKFILL, params)
            found = first(conn.execute(_SCHEDULE_BACKFILL, (name,)))
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
                conn.execute(_CLEAR_SCHEDULE_TRIGGER, (name, to_micros(trigger_at)))
            if backfill is not None:
                conn.execute(
                    _CLEAR_SCHEDULE_BACKFILL,
                    (name, to_micros(backfill[0]), to_micros(backfill[1])),
                )

        if trigger_at is not None or backfill is not None:
            self._writer.write(clear)

    def delete_schedule_state(self, name: str) -> bool:
        check_names(schedule_name=name)
        deleted = self._writer.write(
            lambda conn: conn.execute(_DELETE_SCHEDULE_STATE, (name,)).rowcount > 0
        )
        if deleted:
            self._notify([("schedule", name)])
        return deleted
