"""Python values to the PostgreSQL store's parameters and back: rows, records, JSON, times."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Json

from replaykit import serde
from replaykit.log import STREAM_KINDS, Outcome, Record, outcome_to_json
from replaykit.stores._rows import record_from, row_decoders, workflow_from
from replaykit.stores.base import WorkflowRow

__all__ = [
    "batch_row",
    "claimed_from",
    "is_stream",
    "iso",
    "json_param",
    "load_json",
    "outcome_param",
    "outcome_text",
    "record_from_row",
    "record_params",
    "utc",
    "utc_now",
    "workflow_from_row",
]


def utc(value: datetime | None) -> datetime | None:
    # Sessions run in UTC; swap psycopg's ZoneInfo("UTC") for the stdlib one the
    # other stores return, so rows compare and print the same everywhere.
    return None if value is None else value.replace(tzinfo=UTC)


def load_json(data: str | bytes) -> Any:
    return serde.loads(data if isinstance(data, str) else bytes(data).decode("utf-8"))


def json_param(data: Any) -> Json:
    return Json(data, dumps=serde.dumps)


def outcome_param(outcome: Outcome | None) -> Json | None:
    return None if outcome is None else json_param(outcome_to_json(outcome))


def outcome_text(outcome: Outcome | None) -> str | None:
    """An outcome as the JSON text a batch statement's text[] carries."""
    return None if outcome is None else serde.dumps(outcome_to_json(outcome))


# A `json` column holds any JSON, so inputs and outcomes are checked for shape.
_RECORD_DECODERS, _WORKFLOW_DECODERS = row_decoders(time=utc)


def record_from_row(row: Sequence[Any], workflow_id: str) -> Record:
    return record_from(_RECORD_DECODERS, row, workflow_id)


def workflow_from_row(row: Sequence[Any], has_log: bool | None = None) -> WorkflowRow:
    """The run, or `DamagedRow` (a `StoreError`) naming it and what does not decode."""
    return workflow_from(_WORKFLOW_DECODERS, row, has_log)


def claimed_from(row: Sequence[Any]) -> WorkflowRow:
    return workflow_from_row(row, row[-1])


def record_params(workflow_id: str, record: Record, shard: str) -> dict[str, Any]:
    return {
        "shard": shard,
        "wid": workflow_id,
        "pos": record.position,
        "kind": record.kind,
        "name": record.name,
        "outcome": outcome_param(record.outcome),
        "digest": record.digest,
        "call_site": record.call_site,
        "started_at": record.started_at,
        "completed_at": record.completed_at,
        "rwake": record.wake_at,
        "attempts": record.attempts,
    }


def batch_row(
    workflow_id: str, record: Record, executor_id: str | None, wake_at: datetime | None
) -> tuple[list[Any], str | None]:
    """One write's row of a batch statement's `rows` (record_batch), and its outcome's text."""
    outcome, started, completed, rwake = (
        record.outcome,
        record.started_at,
        record.completed_at,
        record.wake_at,
    )
    row = [
        workflow_id,
        record.position,
        record.kind,
        record.name,
        record.digest,
        record.call_site,
        # Inline rather than through `iso`: four calls a record, on every batch.
        None if started is None else started.isoformat(),
        None if completed is None else completed.isoformat(),
        None if rwake is None else rwake.isoformat(),
        record.attempts,
        executor_id,
        None if wake_at is None else wake_at.isoformat(),
    ]
    return row, None if outcome is None else serde.dumps(outcome_to_json(outcome))


def is_stream(record: Record) -> bool:
    return record.kind in STREAM_KINDS and record.outcome is not None


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
