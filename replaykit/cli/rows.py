"""How the commands show a run: its JSON form, its error in a line, its status's colour."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from replaykit._text import format_duration
from replaykit.log import Failure, Record, Status, outcome_to_json
from replaykit.stores._attributes import encoded_attributes
from replaykit.stores.base import WorkflowRow

__all__ = [
    "STATUS_STYLE",
    "fork_text",
    "iso",
    "pickup_note",
    "record_duration",
    "row_json",
    "run_error",
]


STATUS_STYLE = {
    Status.SUCCESS: "green",
    Status.ERROR: "bold red",
    Status.PARKED: "bold yellow",
    Status.CANCELLED: "magenta",
    Status.PENDING: "cyan",
    Status.ENQUEUED: "blue",
    Status.CONTINUED: "dim",
}


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def record_duration(record: Record) -> str:
    if record.started_at is None or record.completed_at is None:
        return "-"
    return format_duration(max((record.completed_at - record.started_at).total_seconds(), 0.0))


def row_json(row: WorkflowRow, *, full: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "workflow_id": row.workflow_id,
        "name": row.name,
        "status": row.status.value,
        "app_version": row.app_version,
        "executor_id": row.executor_id,
        "parent_id": row.parent_id,
        "forked_from": row.forked_from,
        "fork_position": row.fork_position,
        "generation": row.generation,
        "continued_as": row.continued_as,
        "queue": row.queue,
        "partition_key": row.partition_key,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "recovery_attempts": row.recovery_attempts,
        "wake_at": iso(row.wake_at),
        "deadline": iso(row.deadline),
        "timeout": row.timeout,
        "error": row.error,
        "attributes": encoded_attributes(row.attributes),
    }
    if full:
        data["inputs"] = row.inputs
        data["result"] = outcome_to_json(row.result)
    return data


def fork_text(row: WorkflowRow) -> str:
    return f"forked from {row.forked_from} at position {row.fork_position}"


def run_error(row: WorkflowRow) -> str:
    """What went wrong with a run, in one line; '' when nothing did."""
    if isinstance(row.result, Failure):
        return f"{row.result.error.type_name}: {row.result.error.message}"
    return row.error


def pickup_note(executor_id: str, app_version: str) -> str:
    return (
        f"The engine with executor id {executor_id!r} and app version {app_version!r} runs it "
        "(at once if it is running, else when it starts); this command runs no workflow code."
    )
