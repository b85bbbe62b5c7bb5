"""replaykit/runtime/admin.py: what the engine, the client, the CLI and the UI do to runs
from outside, on a store alone: new rows, start conflicts, results, messages, deletes,
forks, stranded runs.

Cancels and resumes across families are tests/test_cancel_run.py's and
tests/test_cancel_resume_story.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from replaykit.errors import (
    AwaitedWorkflowCancelled,
    PayloadTooLarge,
    RunContinued,
    StepFailed,
    WorkflowDeadlineExceeded,
    WorkflowIdConflict,
    WorkflowNotFound,
)
from replaykit.log import Failure, Record, Status, Value
from replaykit.runtime import admin
from replaykit.runtime.run_filters import workflow_filter
from replaykit.serde import ErrorInfo
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)
INPUTS = {"args": ["o-1"], "kwargs": {}}


def _new(**options: object) -> WorkflowRow:
    settings: dict[str, object] = {
        "workflow_id": "r-1",
        "executor_id": "app",
        "app_version": "v1",
        "now": T0,
        "queue": None,
        "priority": 0,
        "dedup_id": None,
        "delay": None,
        "timeout": None,
        "deadline": None,
        "trace_context": None,
    }
    settings.update(options)
    return admin.new_run_row("checkout", INPUTS, **settings)  # type: ignore[arg-type]


def test_a_run_started_now_is_pending_for_its_executor_and_its_timeout_counts_now() -> None:
    row = _new(timeout=30.0, deadline=T0 + timedelta(hours=1))
    assert (row.status, row.executor_id, row.queue) == (Status.PENDING, "app", None)
    assert row.deadline == T0 + timedelta(seconds=30)  # the earlier of the two
    assert row.timeout == 30.0 and row.created_at == T0


def test_an_enqueued_run_is_anyones_and_its_timeout_counts_from_its_claim() -> None:
    row = _new(queue="mail", timeout=30.0, delay=timedelta(minutes=5))
    assert (row.status, row.executor_id, row.queue) == (Status.ENQUEUED, "", "mail")
    assert row.deadline is None and row.wake_at == T0 + timedelta(minutes=5)
    assert len(_new(workflow_id=None).workflow_id) == 36  # a uuid of its own


def test_arguments_are_encoded_as_a_workflow_encodes_them_and_bounded() -> None:
    assert admin.encode_inputs("checkout", ["o-1"], {}, max_bytes=1000) == INPUTS
    with pytest.raises(PayloadTooLarge, match=r"'checkout' are .* bytes encoded, over the limit"):
        admin.encode_inputs("checkout", ["x" * 100], {}, max_bytes=50)


def test_a_start_under_a_used_id_is_the_same_start_or_a_conflict() -> None:
    stored = WorkflowRow("r-1", "checkout", Status.PENDING, inputs={"kwargs": {}, "args": ["o-1"]})
    admin.check_start(stored, WorkflowRow("r-1", "checkout", Status.PENDING, inputs=INPUTS))
    other = WorkflowRow("r-1", "refund", Status.PENDING, inputs=INPUTS)
    with pytest.raises(WorkflowIdConflict, match="holds a run of workflow 'checkout'") as named:
        admin.check_start(stored, other)
    assert not named.value.same_workflow
    changed = WorkflowRow("r-1", "checkout", Status.PENDING, inputs={"args": ["o-2"], "kwargs": {}})
    with pytest.raises(WorkflowIdConflict, match=r'given {"args":\["o-2"\]') as args:
        admin.check_start(stored, changed)
    assert args.value.same_workflow


def test_a_continued_run_is_found_by_the_arguments_it_was_created_with() -> None:
    stored = WorkflowRow(
        "r-1",
        "checkout",
        Status.PENDING,
        inputs={"args": ["later"], "kwargs": {}},
        generation=3,
        first_inputs=INPUTS,
    )
    admin.check_start(stored, WorkflowRow("r-1", "checkout", Status.PENDING, inputs=INPUTS))
    with pytest.raises(WorkflowIdConflict, match=r"created with .*at generation 3"):
        admin.check_start(
            stored, WorkflowRow("r-1", "checkout", Status.PENDING, inputs={"args": [0]})
        )


def test_a_runs_outcome_is_its_value_or_its_failure_raised() -> None:
    assert admin.run_outcome(WorkflowRow("r", "w", Status.SUCCESS, result=Value([1, 2]))) == [1, 2]
    failed = Failure(ErrorInfo("no_such_module", "Declined", "no funds"))
    with pytest.raises(StepFailed, match=r"no_such_module.Declined: no funds"):
        admin.run_outcome(WorkflowRow("r", "w", Status.ERROR, result=failed))
    with pytest.raises(AwaitedWorkflowCancelled, match=r"'r'\) was cancelled: by ops"):
        admin.run_outcome(WorkflowRow("r", "w", Status.CANCELLED, error="by ops"))
    timed_out = WorkflowDeadlineExceeded.detail(T0, 5.0)
    with pytest.raises(WorkflowDeadlineExceeded, match="its deadline"):
        admin.run_outcome(WorkflowRow("r", "w", Status.CANCELLED, error=timed_out))
    with pytest.raises(RunContinued, match="Ask run 'r' for the result") as continued:
        admin.run_outcome(WorkflowRow("r#0", "w", Status.CONTINUED, continued_as="r"))
    assert continued.value.continued_as == "r"


def test_the_list_filter_takes_statuses_by_name() -> None:
    where = workflow_filter(status=["PENDING", Status.ERROR], version="v2", limit=5)
    assert where.statuses() == (Status.PENDING, Status.ERROR)
    assert (where.app_version, where.limit) == ("v2", 5)
    assert workflow_filter(status="SUCCESS").statuses() == (Status.SUCCESS,)


def test_a_send_is_keyed_so_a_retry_delivers_once() -> None:
    store = MemoryStore()
    store.create_workflow(WorkflowRow("r-1", "w", Status.PENDING))
    outgoing, call_id = admin.outgoing_message(
        "r-1", {"a": 1}, "paid", idempotency_key=None, max_bytes=100
    )
    assert outgoing.idempotency_key == f"replaykit-send:{call_id}"
    assert admin.send_message(store, "r-1", 1, "paid", idempotency_key="k", max_bytes=100)
    assert not admin.send_message(store, "r-1", 1, "paid", idempotency_key="k", max_bytes=100)
    with pytest.raises(ValueError, match="the topic"):
        admin.outgoing_message("r-1", 1, "replaykit.update:x", idempotency_key=None, max_bytes=100)


def test_a_child_whose_parent_is_unfinished_is_not_deleted_alone() -> None:
    store = MemoryStore()
    store.create_workflow(WorkflowRow("p", "parent", Status.PENDING))
    store.create_workflow(WorkflowRow("c", "child", Status.SUCCESS, parent_id="p"))
    with pytest.raises(ValueError, match="its parent 'parent' \\(id 'p'\\) is PENDING"):
        admin.delete_run(store, "c")
    assert admin.delete_run(store, "p", children=True)
    assert store.get_workflow("c") is None and store.get_workflow("p") is None
    assert not admin.delete_run(store, "p")
    with pytest.raises(WorkflowNotFound):
        admin.get_run(store, "p")


def test_garbage_collection_deletes_old_finished_runs_only() -> None:
    store = MemoryStore()
    old, new = T0 - timedelta(days=30), T0
    store.create_workflow(WorkflowRow("done-old", "w", Status.SUCCESS, created_at=old))
    store.create_workflow(WorkflowRow("live-old", "w", Status.PENDING, created_at=old))
    store.create_workflow(WorkflowRow("done-new", "w", Status.SUCCESS, created_at=new))
    assert admin.collect_garbage(store, T0 - timedelta(days=1)) == 1
    assert {r.workflow_id for r in store.list_workflows(workflow_filter())} == {
        "live-old",
        "done-new",
    }


def test_a_fork_keeps_the_completed_records_before_its_position() -> None:
    store = MemoryStore()
    records = [Record(0, "step", "a", Value(1)), Record(1, "sleep", "sleep", None)]
    store.create_workflow(WorkflowRow("src", "w", Status.PENDING, inputs=INPUTS), records=records)
    row, kept = admin.fork_run(store, "src", 2, workflow_id="copy", now=T0)
    assert kept == 1  # the timed sleep under way starts afresh in the fork
    assert (row.workflow_id, row.status, row.forked_from, row.fork_position) == (
        "copy",
        Status.PENDING,
        "src",
        2,  # the position asked for, though it runs live from 1
    )
    with pytest.raises(
        ValueError, match=r"its log has positions 0..1; pick a position from 0 to 2"
    ):
        admin.fork_run(store, "src", 3)
    log = admin.export_run(store, "src")
    assert (log.workflow_name, log.args, len(log)) == ("w", INPUTS, 2)


def test_stranded_runs_are_the_unfinished_ones_of_other_versions() -> None:
    store = MemoryStore()
    for wid, status, version in (
        ("a", Status.PENDING, "v1"),
        ("b", Status.PENDING, "v0"),
        ("c", Status.ENQUEUED, "v0"),
        ("d", Status.SUCCESS, "v0"),
    ):
        store.create_workflow(
            WorkflowRow(
                wid,
                "w",
                status,
                app_version=version,
                queue="q" if status is Status.ENQUEUED else None,
            )
        )
    assert [r.workflow_id for r in admin.stranded_runs(store, app_version="v1")] == ["b", "c"]


@pytest.mark.parametrize("action", [admin.rewind_run, admin.fork_run])
def test_a_restamp_with_an_unknown_keyword_is_refused_before_the_run_is_read(
    action: Callable[..., object],
) -> None:
    # A missing run would raise WorkflowNotFound: the keyword is refused first, by name.
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'executor'"):
        action(MemoryStore(), "no-such-run", 0, executor="e-1")
