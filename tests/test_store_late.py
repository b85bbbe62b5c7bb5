"""replaykit/stores/_late.py: which records may land after their run was cancelled."""

from __future__ import annotations

import pytest

from replaykit.errors import RecordConflict, RunNotPending, WorkflowNotFound
from replaykit.log import Record, Status, Value
from replaykit.stores._late import check_late, check_late_record, late_gap
from replaykit.stores.base import WorkflowRow


def test_only_a_completed_record_may_land_late() -> None:
    check_late_record("r-1", Record(2, "step", "charge", Value(1)), "me")
    with pytest.raises(ValueError, match=r"'r-1'.*pending record.*at position 2.*Nothing was"):
        check_late_record("r-1", Record(2, "step", "charge", None), "me")


def test_a_late_record_lands_only_in_a_cancelled_run_of_its_executor() -> None:
    cancelled = WorkflowRow("r-1", "checkout", Status.CANCELLED, executor_id="me")
    check_late(cancelled, "r-1", "me")
    check_late(cancelled, "r-1", None)
    with pytest.raises(WorkflowNotFound, match="'r-1'"):
        check_late(None, "r-1", "me")
    with pytest.raises(RunNotPending, match="'checkout' \\(id 'r-1'\\) is PENDING"):
        check_late(WorkflowRow("r-1", "checkout", Status.PENDING), "r-1", None)
    with pytest.raises(RecordConflict, match="owned by executor 'me', not 'other'"):
        check_late(cancelled, "r-1", "other")


def test_a_gap_names_the_run_the_position_and_the_logs_end() -> None:
    error = late_gap("checkout", "r-1", 5, 3)
    assert isinstance(error, RecordConflict)
    assert "'checkout' (id 'r-1')" in str(error) and "position 5" in str(error)
    assert "the log ends at 3" in str(error)
