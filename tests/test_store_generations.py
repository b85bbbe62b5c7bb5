"""replaykit/stores/_generations.py: what every store decides alike for continue-as-new."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from replaykit.errors import RecordConflict, WorkflowNotFound
from replaykit.log import Status
from replaykit.stores._generations import (
    ALREADY_CONTINUED,
    archived_generation,
    check_continue_args,
    continue_refusal,
    next_generation,
    with_first_inputs,
)
from replaykit.stores.base import WorkflowRow

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ROW = WorkflowRow(
    "r-1",
    "counter",
    Status.PENDING,
    inputs={"args": [0], "kwargs": {}},
    executor_id="me",
    created_at=T0,
    started_at=T0,
    error="a note",
    recovery_attempts=2,
)


def test_the_archived_generation_has_its_own_id_and_checked_arguments() -> None:
    assert check_continue_args("r-1", 0, "me") == "r-1#0"
    for bad in (-1, True, "0"):
        with pytest.raises(ValueError, match="generation must be the run's current"):
            check_continue_args("r-1", bad, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Give runs that continue as new shorter ids"):
        check_continue_args("r" * 999, 12345, None)


def test_a_run_continues_from_its_own_generation_when_it_owns_it() -> None:
    assert continue_refusal(ROW, "r-1", {"args": [1]}, 0, "me", None) is None
    with pytest.raises(WorkflowNotFound):
        continue_refusal(None, "r-1", {}, 0, "me", None)
    with pytest.raises(RecordConflict, match="is CANCELLED; it cannot continue"):
        continue_refusal(WorkflowRow("r-1", "c", Status.CANCELLED), "r-1", {}, 0, None, None)
    with pytest.raises(RecordConflict, match="owned by executor 'me', not 'other'"):
        continue_refusal(ROW, "r-1", {}, 0, "other", None)
    with pytest.raises(RecordConflict, match="is at generation 0, not 3"):
        continue_refusal(ROW, "r-1", {}, 3, "me", None)
    squatter = WorkflowRow("r-1#0", "other", Status.SUCCESS)
    with pytest.raises(ValueError, match="'r-1#0', is taken by another run"):
        continue_refusal(ROW, "r-1", {}, 0, "me", squatter)


def test_the_retry_of_a_continue_that_committed_is_known_as_such() -> None:
    inputs = {"kwargs": {}, "args": [1]}  # the keys in another order, as jsonb gives them
    archived = archived_generation(ROW, T0 + timedelta(hours=1))
    continued = next_generation(ROW, {"args": [1], "kwargs": {}}, T0 + timedelta(hours=1))
    assert continue_refusal(continued, "r-1", inputs, 0, "me", archived) == ALREADY_CONTINUED


def test_the_archive_keeps_the_generation_and_the_run_goes_on_afresh() -> None:
    later = T0 + timedelta(hours=1)
    archived = archived_generation(ROW, later)
    assert (archived.workflow_id, archived.status, archived.continued_as) == (
        "r-1#0",
        Status.CONTINUED,
        "r-1",
    )
    assert archived.inputs == ROW.inputs and archived.updated_at == later
    continued = next_generation(ROW, {"args": [1], "kwargs": {}}, later)
    assert continued.generation == 1 and continued.inputs == {"args": [1], "kwargs": {}}
    assert continued.first_inputs == ROW.inputs  # generation 0's, kept for re-issued starts
    assert (continued.error, continued.recovery_attempts, continued.started_at) == ("", 0, later)
    again = next_generation(continued, {"args": [2], "kwargs": {}}, later)
    assert again.first_inputs == ROW.inputs


def test_runs_found_in_the_way_get_their_first_inputs_read_once() -> None:
    continued = WorkflowRow("a", "c", Status.PENDING, generation=2)
    fresh = WorkflowRow("b", "c", Status.PENDING)
    asked: list[list[str]] = []

    def fetch(ids: list[str]) -> dict[str, object]:
        asked.append(ids)
        return {"a": {"args": [0]}}

    answers = with_first_inputs([(continued, False), (fresh, False), (continued, True)], fetch)
    assert asked == [["a"]]
    assert answers[0][0].first_inputs == {"args": [0]}
    assert answers[1][0] is fresh and answers[2][0] is continued
    assert with_first_inputs([(fresh, False)], fetch) == [(fresh, False)] and len(asked) == 1
