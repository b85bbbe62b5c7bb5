"""replaykit/ui/_actions.py: cancel, resume and fork from the UI, on a store alone.

They leave a run as the CLI's commands do (through runtime/admin.py) and refuse, saying
why, what the run's state does not allow; the pages that call them are test_ui_http.py's.
"""

from __future__ import annotations

import pytest

from replaykit.log import Record, Status, Value
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore
from replaykit.ui._actions import ActionRefused, cancel, fork, resume


@pytest.fixture
def store() -> MemoryStore:
    store = MemoryStore()
    store.create_workflow(
        WorkflowRow("r-1", "checkout", Status.PENDING, executor_id="app", app_version="v1"),
        records=[Record(0, "step", "a", Value(1)), Record(1, "step", "b", Value(2))],
    )
    store.create_workflow(WorkflowRow("kid", "child", Status.PENDING, parent_id="r-1"))
    return store


def _status(store: MemoryStore, workflow_id: str) -> Status:
    row = store.get_workflow(workflow_id)
    assert row is not None
    return row.status


def test_cancel_stops_the_run_and_its_children_and_says_how_to_go_on(store: MemoryStore) -> None:
    done = cancel(store, "r-1")
    assert done.workflow_id == "r-1"
    assert "and its unfinished children" in done.message and "resume continues" in done.message
    assert _status(store, "r-1") is Status.CANCELLED and _status(store, "kid") is Status.CANCELLED
    with pytest.raises(ActionRefused, match="'r-1' is already CANCELLED; not cancelled"):
        cancel(store, "r-1")


def test_cancel_may_leave_the_children_running(store: MemoryStore) -> None:
    done = cancel(store, "r-1", children=False)
    assert "children" not in done.message
    assert _status(store, "kid") is Status.PENDING


def test_resume_makes_a_cancelled_run_pending_for_the_engine_named(store: MemoryStore) -> None:
    cancel(store, "r-1")
    done = resume(store, "r-1", executor_id="worker-2")
    assert _status(store, "r-1") is Status.PENDING
    assert "'worker-2' and app version 'v1'" in done.message
    assert "the UI runs no workflow code" in done.message
    row = store.get_workflow("r-1")
    assert row is not None and row.executor_id == "worker-2"


@pytest.mark.parametrize(
    ("status", "why"),
    [
        (Status.PENDING, "only CANCELLED and PARKED runs are resumed"),
        (Status.SUCCESS, "a finished run cannot be resumed. Fork it"),
        (Status.ENQUEUED, "it runs when a worker takes it"),
    ],
)
def test_resume_refuses_a_run_it_cannot_resume(
    store: MemoryStore, status: Status, why: str
) -> None:
    store.set_status("r-1", status)
    with pytest.raises(ActionRefused, match=why):
        resume(store, "r-1")


def test_fork_copies_the_records_before_the_position_into_a_new_run(store: MemoryStore) -> None:
    store.set_status("r-1", Status.SUCCESS)
    done = fork(store, "r-1", 1, new_id="r-1-again")
    assert done.workflow_id == "r-1-again"
    assert "keeping positions 0..0; it runs live from position 1" in done.message
    assert [r.name for r in store.load_log("r-1-again")] == ["a"]
    assert _status(store, "r-1-again") is Status.PENDING
    with pytest.raises(ActionRefused):
        fork(store, "r-1", 1, new_id="r-1-again")  # the id is taken now
