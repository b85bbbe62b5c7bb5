"""How the SQLite store writes values into its columns and reads them back.

Datetimes are stored as integer microseconds since the Unix epoch (UTC): exact,
compact, and they sort the way the instants do. JSON values are stored as text,
which may not even parse: the decoders say which run and column is damaged
(`_rows.DamagedRow`) instead of failing a whole listing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from replaykit import serde
from replaykit.log import Outcome, Record, Status, outcome_to_json
from replaykit.stores._attributes import encoded_attributes
from replaykit.stores._rows import (
    attributes_value,
    decoded_json,
    inputs_value,
    outcome_value,
    record_from,
    row_decoders,
    workflow_from,
)
from replaykit.stores.base import WorkflowRow

__all__ = [
    "EPOCH",
    "claimed_from",
    "dump",
    "dump_outcome",
    "first",
    "from_micros",
    "load_inputs",
    "now",
    "record_from_row",
    "record_params",
    "to_micros",
    "workflow_from_row",
    "workflow_params",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def first(cursor: sqlite3.Cursor) -> Any:
    """The first row, with the statement run to its end: a half-read SELECT would
    keep its connection's read snapshot open, and later reads would see old data."""
    rows = cursor.fetchall()
    return rows[0] if rows else None


def now() -> datetime:
    return datetime.now(UTC)


def to_micros(value: datetime | None) -> int | None:
    if value is None:
        return None
    if value.tzinfo is None:  # the protocol's datetimes are UTC; be lenient with naive ones
        value = value.replace(tzinfo=UTC)
    return (value - EPOCH) // _MICROSECOND


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else EPOCH + timedelta(microseconds=value)


def dump(data: Any) -> str:
    return serde.dumps(data)


def dump_outcome(outcome: Outcome | None) -> str | None:
    return None if outcome is None else serde.dumps(outcome_to_json(outcome))


def _load_outcome(text: str | None) -> Outcome | None:
    return None if text is None else outcome_value(decoded_json(text))


def _load_attributes(text: str) -> dict[str, Any]:
    return attributes_value(decoded_json(text))


def load_inputs(text: str | None) -> Any:
    return None if text is None else inputs_value(decoded_json(text))


def record_params(workflow_id: str, record: Record) -> tuple[Any, ...]:
    """A record as the statements that write one bind it: the run's id, then its columns."""
    return (
        workflow_id,
        record.position,
        record.kind,
        record.name,
        dump_outcome(record.outcome),
        record.digest,
        record.call_site,
        to_micros(record.started_at),
        to_micros(record.completed_at),
        to_micros(record.wake_at),
        record.attempts,
    )


def record_from_row(row: Sequence[Any], workflow_id: str) -> Record:
    return record_from(_RECORD_DECODERS, row, workflow_id)


def workflow_params(row: WorkflowRow) -> tuple[Any, ...]:
    """A run as `create_workflow` binds it, in `WORKFLOW_COLUMNS` order."""
    return (
        row.workflow_id,
        row.name,
        Status(row.status).value,
        None if row.inputs is None else dump(row.inputs),
        dump_outcome(row.result),
        row.executor_id,
        row.app_version,
        to_micros(row.created_at),
        to_micros(row.updated_at),
        row.parent_id,
        row.queue,
        row.priority,
        row.dedup_id,
        row.recovery_attempts,
        to_micros(row.wake_at),
        row.error,
        to_micros(row.started_at),
        row.trace_context,
        row.forked_from,
        row.fork_position,
        to_micros(row.deadline),
        row.timeout,
        row.generation,
        row.continued_as,
        row.partition_key or "",
        dump(encoded_attributes(row.attributes)),
        row.shard_key,
    )


_RECORD_DECODERS, _WORKFLOW_DECODERS = row_decoders(
    outcome=_load_outcome, inputs=load_inputs, attributes=_load_attributes, time=from_micros
)


def workflow_from_row(row: Sequence[Any], has_log: bool | None = None) -> WorkflowRow:
    """The run, or `DamagedRow` (a `StoreError`) naming it and what does not decode."""
    return workflow_from(_WORKFLOW_DECODERS, row, has_log)


def claimed_from(row: Sequence[Any]) -> WorkflowRow:
    """A run `claim` returned: its columns, then whether it has a log."""
    return workflow_from_row(row, bool(row[-1]))
