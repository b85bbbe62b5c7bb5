"""Reading stored rows back, where one damaged row must not stop the others.

A row another program wrote (or a disk that lost a page) can hold text that is
not JSON (SQLite keeps JSON as text), or JSON of the wrong shape (a PostgreSQL
`json` column takes any JSON value). Decoding such a row used to raise a bare
`JSONDecodeError` or `TypeError`, and since recovery lists every PENDING run
at start-up, one bad row stopped the whole engine.

Each store maps its columns with a table of decoders, one per field, shared
with this module. The fast path decodes the row in one go; only a row that
fails is taken apart column by column, to say which columns are damaged and
why. What callers get then:

- a listing (`list_workflows`, the runs `create_workflow(s)` found in the
  way) gets the row with `damaged` saying what is wrong, the damaged fields
  at their defaults, and `error` starting with "damaged row: ";
- `get_workflow`, which is what the runtime reads before running a run,
  raises `DamagedRow` (a `DamagedData`) naming the run and its damaged columns, so that run
  alone fails to activate;
- a record, message or event that does not decode raises `DamagedData` naming
  the run, the position (or message, or key) and what is wrong.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from replaykit import serde
from replaykit.errors import DamagedData
from replaykit.log import Outcome, Record, Status, outcome_from_json
from replaykit.stores._attributes import decoded_attributes
from replaykit.stores._sql import RECORD_COLUMNS, WORKFLOW_COLUMNS
from replaykit.stores.base import DamagedRow, ScheduleState, WorkflowRow

__all__ = [
    "RECORD_FIELDS",
    "WORKFLOW_FIELDS",
    "Decoders",
    "attributes_value",
    "claimed",
    "decoded_json",
    "decoders",
    "event_value",
    "inputs_value",
    "listed",
    "message_payload",
    "outcome_value",
    "partition_key_value",
    "record_from",
    "row_decoders",
    "schedule_states",
    "shown",
    "workflow_from",
]

_log = logging.getLogger("replaykit.stores")

# One decoder per column, in the order of the store's SELECT, which is the
# order of the fields below; None leaves the column's value as it is.
Decoders = Sequence[Callable[[Any], Any] | None]

WORKFLOW_FIELDS = tuple(
    f.name
    for f in attrs.fields(WorkflowRow)
    if f.name not in ("has_log", "damaged", "first_inputs")
)
RECORD_FIELDS = tuple(f.name for f in attrs.fields(Record))

# Rows are built from their columns' values in field order, which `decoders`
# checks each store's tables against once, at import.
_new_run: Callable[..., WorkflowRow] = WorkflowRow
_new_record: Callable[..., Record] = Record

# Columns named otherwise than their row's field: `timeout` alone would read as
# a setting of the database session in a query.
_FIELD_OF_COLUMN = {"timeout_seconds": "timeout"}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_REPAIR = "Repair the row in the database, or delete the run; other runs are not affected"


class _Unreadable(ValueError):
    """A column's value that cannot be decoded; the message says why, for humans."""


def decoders(
    columns: str, fields: Sequence[str], decoding: Mapping[str, Callable[[Any], Any]]
) -> Decoders:
    """One decoder per column of `columns` (a SELECT list): `decoding`'s, else None.

    The columns must be `fields` in order, since rows are built from them
    positionally.
    """
    names = tuple(c.strip() for c in columns.split(","))
    as_fields = tuple(_FIELD_OF_COLUMN.get(name, name) for name in names)
    if as_fields != tuple(fields) or not set(decoding) <= set(names):
        raise AssertionError(
            f"the columns {names} must be the fields {tuple(fields)} in order, and "
            f"{sorted(decoding)} among them"
        )
    return tuple(decoding.get(name) for name in names)


def _kind(data: Any) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "boolean"
    if isinstance(data, (int, float)):
        return "number"
    if isinstance(data, str):
        return "string"
    if isinstance(data, list):
        return "array"
    return "object"


def decoded_json(text: Any) -> Any:
    """A JSON column stored as text (SQLite)."""
    if not isinstance(text, str):
        raise _Unreadable(f"a {type(text).__name__} where JSON text is expected")
    try:
        return serde.loads(text)
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"not JSON ({exc})") from None


def inputs_value(data: Any) -> Any:
    """A run's inputs: `{"args": [...], "kwargs": {...}}`, or null."""
    if data is not None and not isinstance(data, dict):
        raise _Unreadable(
            f'a JSON {_kind(data)} where an object {{"args": [...], "kwargs": {{...}}}} or null '
            "is expected"
        )
    return data


def outcome_value(data: Any) -> Outcome | None:
    """A run's result or a record's outcome: `{"value": ...}`, `{"error": {...}}`, or null."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise _Unreadable(
            f'a JSON {_kind(data)} where an object {{"value": ...}} or {{"error": {{...}}}} '
            "is expected"
        )
    if "value" not in data and "error" not in data:
        raise _Unreadable('a JSON object with neither "value" nor "error"')
    try:
        return outcome_from_json(data)
    except Exception as exc:
        raise _Unreadable(
            f'an "error" that is not a recorded exception ({_why(exc, limit=160)})'
        ) from None


def partition_key_value(stored: Any) -> str | None:
    """A run's partition key: the SQL stores keep '' for none."""
    if not isinstance(stored, str):
        raise _Unreadable(f"a {type(stored).__name__} where a partition key is expected")
    return stored or None


def attributes_value(data: Any) -> dict[str, Any]:
    """A run's attributes: a JSON object, fixed-shape UTC text read as datetimes."""
    if not isinstance(data, dict):
        raise _Unreadable(f"a JSON {_kind(data)} where an object of attributes is expected")
    return decoded_attributes(data)


def row_decoders(
    *,
    time: Callable[[Any], datetime | None],
    outcome: Callable[[Any], Outcome | None] = outcome_value,
    inputs: Callable[[Any], Any] = inputs_value,
    attributes: Callable[[Any], dict[str, Any]] = attributes_value,
) -> tuple[Decoders, Decoders]:
    """A SQL dialect's decoders of its record rows and its run rows (`RECORD_COLUMNS`,
    `WORKFLOW_COLUMNS`), given how it reads back a time and, where its driver does not
    hand back JSON values (SQLite keeps JSON as text), an outcome, inputs and attributes."""
    record = decoders(
        RECORD_COLUMNS,
        RECORD_FIELDS,
        {"outcome": outcome, **dict.fromkeys(("started_at", "completed_at", "wake_at"), time)},
    )
    workflow = decoders(
        WORKFLOW_COLUMNS,
        WORKFLOW_FIELDS,
        {
            "status": Status,
            "inputs": inputs,
            "result": outcome,
            "partition_key": partition_key_value,
            "attributes": attributes,
            **dict.fromkeys(
                ("created_at", "updated_at", "wake_at", "started_at", "deadline"), time
            ),
        },
    )
    return record, workflow


def schedule_states(
    rows: Iterable[Sequence[Any]], time: Callable[[Any], datetime | None]
) -> dict[str, ScheduleState]:
    """`schedule_states`' answer from a SQL store's rows (`ScheduleState`'s fields in
    order), given how it reads back a time. `updated_at` is NOT NULL in every schema;
    the epoch only keeps the type honest."""
    return {
        r[0]: ScheduleState(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            bool(r[5]),
            bool(r[6]),
            time(r[7]) or _EPOCH,
            time(r[8]),
            time(r[9]),
            time(r[10]),
        )
        for r in rows
    }


def _why(exc: Exception, *, limit: int = 300) -> str:
    text = str(exc) if isinstance(exc, _Unreadable) else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _decode(decoders: Decoders, values: Sequence[Any]) -> list[Any]:
    return [v if d is None else d(v) for d, v in zip(decoders, values, strict=False)]


def _damage(
    fields: Sequence[str], decoders: Decoders, values: Sequence[Any]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Each field's value where it decodes, and (field, why) where it does not."""
    good: dict[str, Any] = {}
    bad: list[tuple[str, str]] = []
    for field, decode, value in zip(fields, decoders, values, strict=False):
        try:
            good[field] = value if decode is None else decode(value)
        except Exception as exc:
            bad.append((field, _why(exc)))
    return good, bad


def _described(bad: Sequence[tuple[str, str]]) -> str:
    return "; ".join(f"{field}: {why}" for field, why in bad)


def workflow_from(
    decoders: Decoders, values: Sequence[Any], has_log: bool | None = None
) -> WorkflowRow:
    """The run in `values` (a row of the store's workflow columns), or `DamagedRow`."""
    try:
        return _new_run(*_decode(decoders, values), has_log=has_log)
    except Exception as exc:
        good, bad = _damage(WORKFLOW_FIELDS, decoders, values)
        if not bad:
            raise exc from None
    what = _described(bad)
    row = None
    if "workflow_id" in good and "status" in good:
        # The error column is what every listing shows (the CLI's ERROR column).
        stored = good.get("error") or ""
        good["error"] = f"damaged row: {what}" + (f" (stored error: {stored})" if stored else "")
        good.update(has_log=has_log, damaged=what)
        row = WorkflowRow(**good)
    name = good.get("name")
    of = f"workflow {name!r}, " if isinstance(name, str) else ""
    raise DamagedRow(
        f"the stored run of {of}workflow id {values[0]!r}, cannot be read: "
        f"{'column' if len(bad) == 1 else 'columns'} {what}. {_REPAIR}",
        row,
    )


def record_from(decoders: Decoders, values: Sequence[Any], workflow_id: str) -> Record:
    """The record in `values` (a row of the store's record columns), or `DamagedData`."""
    try:
        return _new_record(*_decode(decoders, values))
    except Exception as exc:
        _, bad = _damage(RECORD_FIELDS, decoders, values)
        if not bad:
            raise exc from None
    raise DamagedData(
        f"workflow id {workflow_id!r} position {values[0]!r}: the stored record cannot be "
        f"read: {'column' if len(bad) == 1 else 'columns'} {_described(bad)}. The run "
        f"cannot replay past it. {_REPAIR}"
    )


def message_payload(
    decode: Callable[[Any], Any], value: Any, workflow_id: str, message_id: int, topic: str
) -> Any:
    try:
        return decode(value)
    except Exception as exc:
        raise DamagedData(
            f"workflow id {workflow_id!r}: message {message_id} on topic {topic!r} cannot be "
            f"read: column payload: {_why(exc)}. Delete that message's row, or the run; "
            "other runs are not affected"
        ) from None


def event_value(decode: Callable[[Any], Any], value: Any, workflow_id: str, key: str) -> Any:
    try:
        return decode(value)
    except Exception as exc:
        raise DamagedData(
            f"workflow id {workflow_id!r}: event {key!r} cannot be read: column value: "
            f"{_why(exc)}. Delete that event's row, or set it again; other runs are not affected"
        ) from None


Read = Callable[[Sequence[Any]], WorkflowRow]


def shown(read: Read, values: Sequence[Any]) -> WorkflowRow:
    """A run to describe, not to run (a listing, a run found in the way): damaged, marked so."""
    try:
        return read(values)
    except DamagedRow as exc:
        if exc.row is None:
            raise
        return exc.row


def listed(read: Read, rows: Iterable[Sequence[Any]]) -> list[WorkflowRow]:
    """`list_workflows`' rows: a damaged one marked; one with no readable id or status, left out."""
    found: list[WorkflowRow] = []
    for values in rows:
        try:
            found.append(shown(read, values))
        except DamagedRow as exc:
            _log.warning("list_workflows leaves out a run it cannot read: %s", exc)
    return found


def claimed(read: Read, rows: Iterable[Sequence[Any]]) -> list[WorkflowRow]:
    """`claim`'s rows, less the damaged ones: a claimer would run them with inputs it lacks.

    A damaged run stays PENDING for the claiming executor, where its
    activation fails on `get_workflow`, naming it, and recovery parks it
    after `max_recovery_attempts`.
    """
    taken: list[WorkflowRow] = []
    for values in rows:
        try:
            taken.append(read(values))
        except DamagedRow as exc:
            _log.error("claimed a run it cannot read; not running it: %s", exc)
    return taken
