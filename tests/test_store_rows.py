"""replaykit/stores/_rows.py: rows built from a store's columns, and damaged ones named.

A damaged column names its run and column; a listing shows such a run marked, a claim
leaves it out. Both SQL stores build their rows here (tests/test_sqlite_values.py
for SQLite's columns).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from replaykit.errors import DamagedData
from replaykit.log import Record, Status, Value, outcome_to_json
from replaykit.stores._rows import (
    RECORD_FIELDS,
    WORKFLOW_FIELDS,
    claimed,
    decoded_json,
    decoders,
    event_value,
    inputs_value,
    listed,
    message_payload,
    outcome_value,
    record_from,
    workflow_from,
)
from replaykit.stores.base import DamagedRow, WorkflowRow

COLUMNS = ", ".join(WORKFLOW_FIELDS)
RUN_DECODERS = decoders(
    COLUMNS,
    WORKFLOW_FIELDS,
    {
        "status": Status,
        "inputs": lambda text: inputs_value(decoded_json(text)),
        "result": lambda text: outcome_value(decoded_json(text)),
    },
)
RECORD_DECODERS = decoders(
    ", ".join(RECORD_FIELDS),
    RECORD_FIELDS,
    {"outcome": lambda text: outcome_value(decoded_json(text))},
)


def columns(**changed: Any) -> list[Any]:
    """A run's column values as a SQL store reads them, JSON as text."""
    row = WorkflowRow("r-1", "checkout", Status.ERROR, inputs={"args": [], "kwargs": {}})
    values = {name: getattr(row, name) for name in WORKFLOW_FIELDS}
    values["inputs"] = json.dumps(row.inputs)
    values["result"] = json.dumps(outcome_to_json(Value(1)))
    values["status"] = row.status.value
    values.update(changed)
    return [values[name] for name in WORKFLOW_FIELDS]


def read(values: Any) -> WorkflowRow:
    return workflow_from(RUN_DECODERS, values)


def test_the_columns_must_be_the_fields_in_order() -> None:
    with pytest.raises(AssertionError, match="must be the fields"):
        decoders("name, workflow_id", ("workflow_id", "name"), {})
    with pytest.raises(AssertionError, match="among them"):
        decoders("workflow_id, name", ("workflow_id", "name"), {"status": Status})
    # `timeout_seconds` is the column of the `timeout` field.
    assert decoders("workflow_id, timeout_seconds", ("workflow_id", "timeout"), {}) == (None, None)


def test_a_row_of_good_columns_is_the_run() -> None:
    run = read(columns())
    assert (run.workflow_id, run.status, run.result) == ("r-1", Status.ERROR, Value(1))


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [
        ("result", "{oops", "result: not JSON"),
        ("result", "[1]", 'result: a JSON array where an object {"value": ...}'),
        ("result", "{}", 'result: a JSON object with neither "value" nor "error"'),
        ("result", '{"error": 3}', 'result: an "error" that is not a recorded exception'),
        ("inputs", "7", "inputs: a JSON number where an object"),
        ("inputs", 7, "inputs: a int where JSON text is expected"),
    ],
)
def test_a_damaged_column_is_named_with_its_run(column: str, value: Any, why: str) -> None:
    with pytest.raises(DamagedRow) as damaged:
        read(columns(**{column: value}))
    text = str(damaged.value)
    assert text.startswith("the stored run of workflow 'checkout', workflow id 'r-1'")
    assert why in text and "Repair the row" in text
    row = damaged.value.row
    assert row is not None and row.damaged.startswith(column)
    assert row.error.startswith("damaged row: " + column)


def test_a_damaged_runs_own_error_is_kept_in_its_marked_error() -> None:
    with pytest.raises(DamagedRow) as damaged:
        read(columns(result="{oops", error="card declined"))
    assert damaged.value.row is not None
    assert damaged.value.row.error.endswith("(stored error: card declined)")


def test_a_listing_marks_a_damaged_run_and_leaves_out_an_unreadable_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good, damaged, hopeless = columns(), columns(result="{oops"), columns(status="NOPE")
    with caplog.at_level(logging.WARNING, logger="replaykit.stores"):
        rows = listed(read, [good, damaged, hopeless])
    assert [bool(r.damaged) for r in rows] == [False, True]
    assert "leaves out a run it cannot read" in caplog.text


def test_a_claim_leaves_a_damaged_run_out(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="replaykit.stores"):
        rows = claimed(read, [columns(), columns(inputs="[]")])
    assert len(rows) == 1 and not rows[0].damaged
    assert "claimed a run it cannot read; not running it" in caplog.text


def test_a_damaged_record_names_its_run_and_position() -> None:
    good = [3, "step", "charge", json.dumps({"value": 1}), "", "", None, None, None, 1]
    assert record_from(RECORD_DECODERS, good, "r-1") == Record(3, "step", "charge", Value(1))
    bad = [3, "step", "charge", "{oops", "", "", None, None, None, 1]
    with pytest.raises(DamagedData, match=r"workflow id 'r-1' position 3: .*column outcome"):
        record_from(RECORD_DECODERS, bad, "r-1")


def test_a_damaged_message_or_event_names_its_row() -> None:
    with pytest.raises(DamagedData, match=r"message 12 on topic 'paid' cannot be read"):
        message_payload(decoded_json, "{oops", "r-1", 12, "paid")
    with pytest.raises(DamagedData, match=r"event 'stage' cannot be read: column value"):
        event_value(decoded_json, "{oops", "r-1", "stage")
    assert message_payload(decoded_json, "[1]", "r-1", 12, "paid") == [1]
