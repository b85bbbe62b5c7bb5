"""What every store decides alike for `continue_workflow`: who may continue a run,
when a call is the retry of one that committed, and the two rows it writes; and for
`rewind_workflow`, which archives a finished run's attempt the same way.

The memory store applies these in Python under its lock; the SQL stores read the
run's row in their transaction, ask `continue_refusal`, and write the rows these
functions build.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import attrs

from replaykit.errors import RecordConflict, WorkflowNotFound
from replaykit.log import Status
from replaykit.stores._checks import check_names
from replaykit.stores._rows import shown
from replaykit.stores.base import WorkflowRow, archive_id
from replaykit.stores.options import Rewind

__all__ = [
    "ALREADY_CONTINUED",
    "REWINDABLE",
    "archived_generation",
    "check_continue_args",
    "check_rewind",
    "check_rewind_args",
    "check_rewind_position",
    "continue_refusal",
    "id_taken",
    "next_generation",
    "readable_first_inputs",
    "rewound",
    "stored_pair",
    "with_first_inputs",
]

#: The SQL stores' assignment of `first_inputs` in the UPDATE that continues a run
#: (evaluated on the row before the update): the inputs of generation 0, kept.
#: `continue_refusal`'s answer for a retry of a continue that committed.
ALREADY_CONTINUED = "already continued"


def _same_inputs(a: Any, b: Any) -> bool:
    # PostgreSQL's jsonb gives an object's keys back in its own order.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def check_continue_args(workflow_id: str, generation: int, executor_id: str | None) -> str:
    """Refuse bad names and numbers before anything is read; the archived row's id."""
    check_names(workflow_id, executor_id=executor_id)
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise ValueError(
            f"continue_workflow({workflow_id!r}): generation must be the run's current "
            f"generation number (0 or more), got {generation!r}"
        )
    archived = archive_id(workflow_id, generation)
    try:
        check_names(archived_id=archived)
    except ValueError as exc:
        raise ValueError(
            f"workflow id {workflow_id!r} cannot continue as new: the id of its archived "
            f"generation {generation}, {archived[:60]!r}..., would be too long ({exc}). "
            "Give runs that continue as new shorter ids"
        ) from None
    return archived


def continue_refusal(
    row: WorkflowRow | None,
    workflow_id: str,
    inputs: Any,
    generation: int,
    executor_id: str | None,
    archived: WorkflowRow | None,
) -> str | None:
    """Why the run cannot continue from `generation`: raises, or `ALREADY_CONTINUED`
    for the retry of a continue that committed; None when it may continue.

    `archived` is the row stored under the archived id, if any.
    """
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
    if (
        row.generation == generation + 1
        and archived is not None
        and archived.continued_as == workflow_id
        and archived.generation == generation
        and row.status is Status.PENDING
        and (executor_id is None or row.executor_id == executor_id)
        and _same_inputs(row.inputs, inputs)
    ):
        return ALREADY_CONTINUED
    if row.status is not Status.PENDING:
        raise RecordConflict(
            f"workflow {row.name!r} (id {workflow_id!r}) is {row.status.value}; it cannot "
            "continue as new until it is resumed"
        )
    if executor_id is not None and row.executor_id != executor_id:
        raise RecordConflict(
            f"workflow {row.name!r} (id {workflow_id!r}) is owned by executor "
            f"{row.executor_id!r}, not {executor_id!r}; this engine lost it and stops"
        )
    if row.generation != generation:
        raise RecordConflict(
            f"workflow {row.name!r} (id {workflow_id!r}) is at generation {row.generation}, "
            f"not {generation}: another writer continued it already; this engine stops"
        )
    if archived is not None:
        raise id_taken(row, archived.workflow_id)
    return None


def id_taken(row: WorkflowRow, archived_id: str) -> ValueError:
    return ValueError(
        f"workflow {row.name!r} (id {row.workflow_id!r}) cannot continue as new: the id of "
        f"its archived generation {row.generation}, {archived_id!r}, is taken by another "
        "run. Delete that run, or do not start runs under ids ending in '#<number>'"
    )


def archived_generation(row: WorkflowRow, now: datetime) -> WorkflowRow:
    """The row that keeps the run's current generation (its log moves to it)."""
    began = row.created_at if row.generation == 0 else (row.started_at or row.created_at)
    return WorkflowRow(
        workflow_id=archive_id(row.workflow_id, row.generation),
        name=row.name,
        status=Status.CONTINUED,
        inputs=row.inputs,
        executor_id=row.executor_id,
        app_version=row.app_version,
        created_at=began,
        updated_at=now,
        parent_id=row.parent_id,
        started_at=row.started_at,
        trace_context=row.trace_context,
        generation=row.generation,
        continued_as=row.workflow_id,
        shard_key=row.shard_key,
    )


def next_generation(row: WorkflowRow, inputs: Any, now: datetime) -> WorkflowRow:
    """The run's row once continued (what the SQL stores' UPDATE writes)."""
    return attrs.evolve(
        row,
        inputs=inputs,
        first_inputs=row.inputs if row.generation == 0 else row.first_inputs,
        generation=row.generation + 1,
        wake_at=None,
        recovery_attempts=0,
        error="",
        started_at=now,
        updated_at=now,
    )


def with_first_inputs(
    answers: Sequence[tuple[WorkflowRow, bool]],
    fetch: Callable[[list[str]], dict[str, Any]],
) -> list[tuple[WorkflowRow, bool]]:
    """`create_workflow(s)`' answers, the runs found in the way given their first inputs.

    Only a run found (not created) that has continued as new needs them: a start
    re-issued after a lost acknowledgement carries the arguments of generation 0,
    not the current generation's. `fetch(ids)` reads them from the store (the SQL
    stores keep them in a column no other read names); an id it leaves out keeps
    None (a run continued before replaykit kept them, whose generation 0 was
    collected).
    """
    wanted = sorted(
        {
            row.workflow_id
            for row, created in answers
            if not created and row.generation > 0 and not row.damaged and row.first_inputs is None
        }
    )
    if not wanted:
        return list(answers)
    found = fetch(wanted)
    return [
        (
            attrs.evolve(row, first_inputs=found[row.workflow_id])
            if not created and row.workflow_id in found and row.first_inputs is None
            else row,
            created,
        )
        for row, created in answers
    ]


def readable_first_inputs(
    rows: Iterable[Sequence[Any]], decode: Callable[[Any], Any]
) -> dict[str, Any]:
    """`with_first_inputs`' fetch from the (workflow_id, stored inputs) rows a SQL store
    read, each decoded by `decode`. An unreadable one is left out: the start is then
    compared with the current inputs only."""
    found: dict[str, Any] = {}
    for workflow_id, stored in rows:
        try:
            found[workflow_id] = decode(stored)
        except Exception:
            continue
    return found


#: The statuses a run may be rewound from: it ended, or was stopped with an error.
REWINDABLE = (Status.SUCCESS, Status.ERROR, Status.CANCELLED, Status.PARKED)


def stored_pair(
    found: Sequence[Any] | None,
    other: Sequence[Any] | None,
    read: Callable[[Sequence[Any]], WorkflowRow],
) -> tuple[WorkflowRow | None, WorkflowRow | None]:
    """The run's row and the row under its archive id as a SQL store `read` them (None
    where there is none), for `continue_refusal` and `check_rewind`. The archived id's row
    is only described in a refusal, so a damaged one is still shown."""
    return (
        None if found is None else read(found),
        None if other is None else shown(read, other),
    )


def check_rewind_args(workflow_id: str, options: Rewind) -> str:
    """Refuse bad names before anything is read; the id the rewound generation is
    archived under."""
    check_names(workflow_id, executor_id=options["executor_id"], app_version=options["app_version"])
    return archive_id(workflow_id, options["generation"])


def check_rewind(
    row: WorkflowRow | None,
    workflow_id: str,
    position: int,
    generation: int,
    log_length: int | None,
    archived: WorkflowRow | None,
) -> WorkflowRow:
    """The run's row if it may be rewound to `position` from `generation`; raises why not.

    `log_length` None: the log is not counted yet (the SQL stores count it as they move
    it to the archived row, then ask `check_rewind_position`)."""
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
    where = f"workflow {row.name!r} (id {workflow_id!r})"
    if row.status not in REWINDABLE:
        raise ValueError(
            f"{where} is {row.status.value}: only a run that ended (SUCCESS, ERROR, "
            "CANCELLED) or was parked can be rewound. Cancel it first, then rewind it"
        )
    if row.generation != generation:
        raise RecordConflict(
            f"{where} is at generation {row.generation}, not {generation}: it was rewound "
            "or continued meanwhile; look at it again"
        )
    if archived is not None:
        raise id_taken(row, archived.workflow_id)
    if log_length is not None:
        check_rewind_position(row, position, log_length)
    return row


def check_rewind_position(row: WorkflowRow, position: int, log_length: int) -> None:
    if (
        isinstance(position, bool)
        or not isinstance(position, int)
        or not (0 <= position <= log_length)
    ):
        raise ValueError(
            f"workflow {row.name!r} (id {row.workflow_id!r}) cannot be rewound to position "
            f"{position!r}: its log has {log_length} record(s); give a position from 0 to "
            f"{log_length}"
        )


def rewound(
    row: WorkflowRow, *, generation: int, executor_id: str, app_version: str, now: datetime
) -> tuple[WorkflowRow, WorkflowRow]:
    """(the archived attempt, the run's row once rewound). The attempt keeps its result
    and error, so its history shows how it ended; the run starts its next generation
    PENDING for `executor_id`, with the same inputs."""
    attempt = attrs.evolve(archived_generation(row, now), result=row.result, error=row.error)
    live = attrs.evolve(
        next_generation(row, row.inputs, now),
        status=Status.PENDING,
        executor_id=executor_id,
        app_version=app_version,
        result=None,
    )
    return attempt, live
