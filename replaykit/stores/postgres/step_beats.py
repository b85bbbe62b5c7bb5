"""Step heartbeats: each step's latest beat, written over by the next, in one statement
(`stores/_step_beats.py` says which beat a row keeps)."""

from __future__ import annotations

from datetime import UTC

from replaykit.log import Status
from replaykit.stores._checks import check_names
from replaykit.stores._rules import check_recordable
from replaykit.stores._step_beats import check_beat, no_run_for_heartbeats, path_of, path_text
from replaykit.stores.base import StepHeartbeat, WorkflowRow
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import json_param

__all__ = ["StepBeats"]


class StepBeats(Room):
    """record_step_heartbeat and get_step_heartbeats."""

    def record_step_heartbeat(
        self, workflow_id: str, beat: StepHeartbeat, *, executor_id: str | None = None
    ) -> bool:
        check_beat(workflow_id, beat, executor_id)
        found = self._db.one(
            self._sql["record_step_heartbeat"],
            {
                "shard": self._db.shard(workflow_id),
                "wid": workflow_id,
                "position": beat.position,
                "path": path_text(beat.child_path),
                "generation": beat.generation,
                "attempt": beat.attempt,
                "name": beat.name,
                "details": None if beat.details is None else json_param(beat.details),
                "at": beat.at,
                "executor": executor_id,
            },
        )
        if found is not None and found[3]:
            return True
        # Not written: refused (raises, naming why), or a stale beat (False).
        row = (
            None
            if found is None
            else WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
        )
        check_recordable(row, workflow_id, executor_id)
        return False

    def get_step_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        check_names(workflow_id)
        # One statement: the run's row tells "no such run" (no rows) from "none
        # beat" (one row of NULLs).
        rows = self._db.about(self._sql["get_step_heartbeats"], workflow_id, many=True)
        if not rows:
            raise no_run_for_heartbeats(workflow_id)
        beats = [
            # Sessions run in UTC: the stdlib's UTC, as the other stores return.
            StepHeartbeat(
                position, name, attempt, at.replace(tzinfo=UTC), details, path_of(path), generation
            )
            for position, path, attempt, name, details, at, generation in rows
            if position is not None
        ]
        # By position, then child path as numbers ("0.10" after "0.2").
        beats.sort(key=lambda beat: (beat.position, beat.child_path))
        return beats
