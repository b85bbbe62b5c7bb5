"""replaykit/stores/sqlite/values.py: how the SQLite store writes values and reads them back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from replaykit.log import Failure, Record, Status, Value
from replaykit.serde import ErrorInfo
from replaykit.stores.base import DamagedRow, WorkflowRow
from replaykit.stores.sqlite.values import (
    claimed_from,
    from_micros,
    record_from_row,
    record_params,
    to_micros,
    workflow_from_row,
    workflow_params,
)

T0 = datetime(2030, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_instants_are_exact_microseconds_that_sort_as_the_instants_do() -> None:
    assert to_micros(datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert from_micros(to_micros(T0)) == T0
    berlin = T0.astimezone(timezone(timedelta(hours=1)))
    assert to_micros(berlin) == to_micros(T0)
    assert to_micros(T0.replace(tzinfo=None)) == to_micros(T0)  # naive is taken as UTC
    earlier = T0 - timedelta(microseconds=1)
    assert to_micros(earlier) < to_micros(T0)  # type: ignore[operator]
    assert to_micros(None) is None and from_micros(None) is None


def test_a_run_comes_back_as_it_was_written() -> None:
    row = WorkflowRow(
        "r-1",
        "checkout",
        Status.ERROR,
        inputs={"args": ["o-1", 100], "kwargs": {"fast": True}},
        result=Failure(ErrorInfo("shop", "Declined", "no funds", ["no funds"])),
        created_at=T0,
        updated_at=T0 + timedelta(seconds=1),
        queue="mail",
        priority=3,
        wake_at=T0 + timedelta(hours=1),
        deadline=T0 + timedelta(days=1),
        timeout=30.0,
        generation=2,
        forked_from="r-0",
        fork_position=4,
    )
    assert workflow_from_row(workflow_params(row)) == row


def test_a_claimed_run_says_whether_it_has_a_log() -> None:
    row = WorkflowRow("r-1", "checkout", Status.PENDING, created_at=T0)
    assert claimed_from((*workflow_params(row), 1)).has_log is True
    assert claimed_from((*workflow_params(row), 0)).has_log is False


def test_a_record_comes_back_as_it_was_written() -> None:
    record = Record(
        3,
        "step",
        "charge",
        Value({"id": "ch_1"}),
        digest="abc",
        call_site="shop.py:12",
        started_at=T0,
        completed_at=T0 + timedelta(milliseconds=5),
        attempts=2,
    )
    params = record_params("r-1", record)
    assert params[0] == "r-1"
    assert record_from_row(params[1:], "r-1") == record
    pending = Record(4, "sleep", "sleep", None, wake_at=T0)
    assert record_from_row(record_params("r-1", pending)[1:], "r-1") == pending


def test_a_damaged_column_is_named_with_its_run() -> None:
    row = list(workflow_params(WorkflowRow("r-1", "checkout", Status.SUCCESS, created_at=T0)))
    row[4] = "{not json"  # the result column
    with pytest.raises(DamagedRow, match=r"workflow 'checkout', workflow id 'r-1'.*result") as bad:
        workflow_from_row(row)
    assert bad.value.row is not None and bad.value.row.workflow_id == "r-1"
