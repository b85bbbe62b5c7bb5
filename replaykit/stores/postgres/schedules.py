"""Schedules' shared state: definitions, pauses, and requests to trigger or backfill."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Unpack

import psycopg

from replaykit.stores._checks import check_names, check_schedule_specs
from replaykit.stores._rows import schedule_states
from replaykit.stores.base import ScheduleSpec, ScheduleState
from replaykit.stores.options import ClearRequest
from replaykit.stores.postgres.notes import NOTIFY_MAX_KEY
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import utc

__all__ = ["Schedules"]


class Schedules(Room):
    """The Store protocol's schedule states."""

    def schedule_states(self) -> dict[str, ScheduleState]:
        rows = self._db.all(self._sql["schedule_states"], prepare=False)
        return schedule_states(rows, utc)

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        check_schedule_specs(specs)
        if not specs:
            return
        with self._db.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                self._sql["register_schedule"],
                [(s.name, s.workflow_name, s.cron, s.tz, s.queue, s.backfill, now) for s in specs],
            )

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        check_names(schedule_name=name)
        with self._db.connection() as conn, conn.transaction():
            if conn.execute(self._sql["set_schedule_paused"], (paused, now, name, paused)).rowcount:
                self._note(conn, name)
            else:
                return conn.execute(self._sql["schedule_exists"], (name,)).fetchone() is not None
        self._db.tell([("schedule", name)])
        return True

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        check_names(schedule_name=name)
        with self._db.connection() as conn, conn.transaction():
            # Locked first: a concurrent request waits here and then sees this one's.
            found = conn.execute(self._sql["schedule_trigger"], (name,)).fetchone()
            if found is None:
                return None
            if found[0] is not None:
                return utc(found[0])
            conn.execute(self._sql["request_schedule_trigger"], (at, at, name))
            self._note(conn, name)
        self._db.tell([("schedule", name)])
        return at

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        check_names(schedule_name=name)
        with self._db.connection() as conn, conn.transaction():
            found = conn.execute(self._sql["schedule_backfill"], (name,)).fetchone()
            if found is None:
                return None
            if found[0] is not None and found[1] is not None:
                return found[0].replace(tzinfo=UTC), found[1].replace(tzinfo=UTC)
            conn.execute(self._sql["request_schedule_backfill"], (start, end, now, name))
            self._note(conn, name)
        self._db.tell([("schedule", name)])
        return start, end

    def clear_schedule_request(self, name: str, **options: Unpack[ClearRequest]) -> None:
        trigger_at, backfill = options.get("trigger_at"), options.get("backfill")
        check_names(schedule_name=name)
        if trigger_at is None and backfill is None:
            return
        with self._db.connection() as conn, conn.transaction():
            if trigger_at is not None:
                conn.execute(self._sql["clear_schedule_trigger"], (name, trigger_at))
            if backfill is not None:
                conn.execute(self._sql["clear_schedule_backfill"], (name, *backfill))

    def delete_schedule_state(self, name: str) -> bool:
        check_names(schedule_name=name)
        with self._db.connection() as conn, conn.transaction():
            if not conn.execute(self._sql["delete_schedule_state"], (name,)).rowcount:
                return False
            self._note(conn, name)
        self._db.tell([("schedule", name)])
        return True

    def _note(self, conn: psycopg.Connection[Any], name: str) -> None:
        """Tell every engine at commit that an operator changed the schedule `name`: its
        loop reads the states then, and otherwise seldom (runtime/schedule_loop.py)."""
        if len(name.encode()) < NOTIFY_MAX_KEY:
            db = self._db
            conn.execute(self._sql["notify"], (db.channel, f"{db.origin}schedule:{name}"))
