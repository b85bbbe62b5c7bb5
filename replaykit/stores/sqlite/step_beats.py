"""Step heartbeats: each step's latest beat, written over by the next
(`stores/_step_beats.py` says which beat a row keeps)."""

from __future__ import annotations

import sqlite3

from replaykit.stores._checks import check_names
from replaykit.stores._rows import decoded_json
from replaykit.stores._rules import check_recordable
from replaykit.stores._step_beats import (
    check_beat,
    heartbeat_details,
    no_run_for_heartbeats,
    path_of,
    path_text,
)
from replaykit.stores.base import StepHeartbeat
from replaykit.stores.sqlite.connections import Connections
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.refusals import run_owner
from replaykit.stores.sqlite.values import dump, from_micros, to_micros
from replaykit.stores.sqlite.writer import Writer

__all__ = ["StepBeats"]


class StepBeats:
    """record_step_heartbeat and get_step_heartbeats."""

    def __init__(self, connections: Connections, writer: Writer) -> None:
        self._connections = connections
        self._writer = writer

    def record_step_heartbeat(
        self, workflow_id: str, beat: StepHeartbeat, *, executor_id: str | None = None
    ) -> bool:
        check_beat(workflow_id, beat, executor_id)
        values = (
            workflow_id,
            beat.position,
            path_text(beat.child_path),
            beat.generation,
            beat.attempt,
            beat.name,
            None if beat.details is None else dump(beat.details),
            to_micros(beat.at),
            executor_id,
        )

        def write(conn: sqlite3.Connection) -> bool:
            if conn.execute(SQL["record_step_heartbeat"], values).rowcount:
                return True
            # Not written: refused (raises, naming why), or a stale beat (False).
            check_recordable(run_owner(conn, workflow_id), workflow_id, executor_id)
            return False

        written: bool = self._writer.write(write)
        return written

    def get_step_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        check_names(workflow_id)
        # One statement: the run's row tells "no such run" (no rows) from "none
        # beat" (one row of NULLs).
        with self._connections.read() as conn:
            rows = conn.execute(SQL["get_step_heartbeats"], (workflow_id,)).fetchall()
        if not rows:
            raise no_run_for_heartbeats(workflow_id)
        beats = []
        for position, path, attempt, name, details, at, generation in rows:
            if position is None:
                continue
            decoded = (
                None
                if details is None
                else heartbeat_details(decoded_json, details, workflow_id, position, path)
            )
            stamp = from_micros(at)
            assert stamp is not None
            beats.append(
                StepHeartbeat(position, name, attempt, stamp, decoded, path_of(path), generation)
            )
        # By position, then child path as numbers ("0.10" after "0.2").
        beats.sort(key=lambda beat: (beat.position, beat.child_path))
        return beats
