"""replaykit/cli/rows.py: how the commands show a run (JSON form, error line, durations)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from replaykit.cli.rows import (
    STATUS_STYLE,
    fork_text,
    iso,
    pickup_note,
    record_duration,
    row_json,
    run_error,
)
from replaykit.log import Failure, Record, Status, Value
from replaykit.serde import ErrorInfo
from replaykit.stores.base import WorkflowRow

T0 = datetime(2024, 6, 1, 12, tzinfo=UTC)


def test_every_status_has_a_style() -> None:
    assert set(STATUS_STYLE) == set(Status)


def test_iso_keeps_none() -> None:
    assert iso(T0) == "2024-06-01T12:00:00+00:00"
    assert iso(None) is None


def test_a_records_duration_needs_both_ends() -> None:
    done = Record(0, "step", "s", Value(1), started_at=T0, completed_at=T0 + timedelta(seconds=65))
    assert record_duration(done) == "1m05s"
    assert record_duration(Record(0, "step", "s", None, started_at=T0)) == "-"
    # A clock stepped back between the two ends shows no negative time.
    skewed = Record(0, "step", "s", Value(1), started_at=T0, completed_at=T0 - timedelta(seconds=1))
    assert record_duration(skewed) == "<1ms"


def test_row_json_is_json_and_holds_inputs_and_result_only_in_full() -> None:
    row = WorkflowRow(
        "r-1",
        "checkout",
        Status.SUCCESS,
        inputs={"args": ["o-1"], "kwargs": {}},
        result=Value({"paid": True}),
        created_at=T0,
        queue="mail",
    )
    short = row_json(row)
    assert short["workflow_id"] == "r-1" and short["status"] == "SUCCESS"
    assert short["created_at"] == "2024-06-01T12:00:00+00:00" and short["queue"] == "mail"
    assert "inputs" not in short and "result" not in short
    full = row_json(row, full=True)
    assert full["inputs"] == {"args": ["o-1"], "kwargs": {}}
    assert full["result"] is not None
    assert json.loads(json.dumps(full)) == full


def test_run_error_prefers_the_recorded_failure_over_the_parked_reason() -> None:
    failed = WorkflowRow(
        "r", "w", Status.ERROR, result=Failure(ErrorInfo("shop", "Declined", "no")), error="x"
    )
    assert run_error(failed) == "shop.Declined: no"
    parked = WorkflowRow("r", "w", Status.PARKED, error="drifted at position 2")
    assert run_error(parked) == "drifted at position 2"
    assert run_error(WorkflowRow("r", "w", Status.SUCCESS, result=Value(1))) == ""


def test_fork_and_pickup_texts_name_what_they_are_about() -> None:
    row = WorkflowRow("f", "w", Status.PENDING, forked_from="r-1", fork_position=3)
    assert fork_text(row) == "forked from r-1 at position 3"
    note = pickup_note("app", "v2")
    assert "'app'" in note and "'v2'" in note and "runs no workflow code" in note
