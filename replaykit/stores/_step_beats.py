"""Step heartbeats as every store keeps them: what a beat must hold, its key, and
which beat a step's row keeps.

A run keeps one row per step that beat: (run, position, child path), the child
path as text (`"1.0"`: the second child of a `Race`/`All`, its first child in
turn; `""` for a step on its own). Each beat writes over the row, unless the row
holds a beat of a later generation or a later attempt: an attempt abandoned after
its heartbeat timeout may beat once more before its thread notices, and must not
hide its successor's progress. A beat of a generation the run has left is not
written at all. The gate before that is `record()`'s, `_rules.check_recordable`:
the run PENDING, owned by the executor named.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from replaykit.errors import DamagedData, WorkflowNotFound
from replaykit.stores._checks import check_names
from replaykit.stores.base import StepHeartbeat

__all__ = [
    "check_beat",
    "heartbeat_details",
    "keeps",
    "no_run_for_heartbeats",
    "path_of",
    "path_text",
]


def _count(value: object, what: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"a step heartbeat's {what} must be an int >= {minimum}, got {value!r}")


def check_beat(workflow_id: str, beat: StepHeartbeat, executor_id: str | None) -> None:
    """Refuse a beat no store can keep, before anything is read or written."""
    if not isinstance(beat, StepHeartbeat):
        raise TypeError(f"record_step_heartbeat takes a StepHeartbeat, got {beat!r}")
    _count(beat.position, "position", 0)
    _count(beat.attempt, "attempt", 1)
    _count(beat.generation, "generation", 0)
    if not isinstance(beat.child_path, tuple):
        raise ValueError(f"a step heartbeat's child_path must be a tuple, got {beat.child_path!r}")
    for index in beat.child_path:
        _count(index, "child_path index", 0)
    if not isinstance(beat.at, datetime) or beat.at.utcoffset() is None:
        raise ValueError(f"a step heartbeat's time must be an aware datetime, got {beat.at!r}")
    check_names(workflow_id, position=beat.position, name=beat.name, executor_id=executor_id)


def path_text(path: tuple[int, ...]) -> str:
    """A child path as the stores key it: `"1.0"`, `""` for a step on its own."""
    return ".".join(str(index) for index in path)


def path_of(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")) if text else ()


def keeps(stored_generation: int, stored_attempt: int, beat: StepHeartbeat) -> bool:
    """Whether `beat` is written over a row holding a beat of that generation and attempt."""
    return (beat.generation, beat.attempt) >= (stored_generation, stored_attempt)


def no_run_for_heartbeats(workflow_id: str) -> WorkflowNotFound:
    return WorkflowNotFound(
        f"cannot read the step heartbeats of workflow id {workflow_id!r}: no such run. Check "
        "the id (replaykit workflows list); a deleted or collected run keeps no heartbeats"
    )


def heartbeat_details(
    decode: Callable[[Any], Any], value: Any, workflow_id: str, position: int, path: str
) -> Any:
    """A stored beat's details, decoded; `DamagedData` naming the step when they are not."""
    try:
        return decode(value)
    except Exception as exc:
        where = f"position {position}" + (f", child {path}" if path else "")
        raise DamagedData(
            f"workflow id {workflow_id!r}: the heartbeat details of the step at {where} cannot "
            f"be read ({type(exc).__name__}: {exc}). Delete that row of step_heartbeats; the "
            "next beat writes it again, and other runs are not affected"
        ) from None
