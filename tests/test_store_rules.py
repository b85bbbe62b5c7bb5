"""replaykit/stores/_rules.py: the rules every store applies alike, asked without a store.

That the three stores apply them is the conformance suite's (tests/test_stores.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from replaykit.errors import DuplicateDedupId, RecordConflict, RunNotPending, WorkflowNotFound
from replaykit.log import Failure, Record, Status, Value
from replaykit.serde import ErrorInfo
from replaykit.stores._rules import (
    batch_answers,
    batch_of,
    check_batch_dedup,
    check_recordable,
    checked_create_and_send,
    claim_room,
    claimed_deadline,
    first_of_each_id,
    listed_without_payloads,
    matches_filter,
    replaces_stored,
    stamped_for_batch,
    stamped_for_create,
    stays_pending,
)
from replaykit.stores.base import ClaimLimits, OutgoingMessage, WorkflowFilter, WorkflowRow

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def row(workflow_id: str, status: Status = Status.ENQUEUED, **fields: object) -> WorkflowRow:
    return WorkflowRow(workflow_id, "wf", status, **fields)  # type: ignore[arg-type]


def test_a_batch_is_a_sequence_of_rows_and_its_first_row_of_an_id_counts() -> None:
    with pytest.raises(TypeError, match="use create_workflow"):
        batch_of(row("a"))  # type: ignore[arg-type]
    rows = [row("a", queue="q"), row("b"), row("a", queue="other")]
    assert [r.queue for r in first_of_each_id(rows)] == ["q", None]


def test_a_batch_answers_each_row_in_order_and_names_each_queue_once() -> None:
    standing = row("b", Status.SUCCESS)
    rows = [row("a", queue="q"), row("b", queue="q"), row("a"), row("c", queue="r")]
    answers, queues = batch_answers(rows, {"b": standing})
    assert [(r.workflow_id, created) for r, created in answers] == [
        ("a", True),
        ("b", False),
        ("a", False),
        ("c", True),
    ]
    assert answers[1][0] is standing and answers[2][0] is rows[0]
    assert queues == ["q", "r"]


def test_a_batch_dedup_is_refused_against_the_store_and_within_the_batch() -> None:
    first = row("a", queue="q", dedup_id="d")
    second = row("b", queue="q", dedup_id="d")
    with pytest.raises(DuplicateDedupId, match="nothing of the batch was created") as held:
        check_batch_dedup([first], is_new=lambda _: True, live_holder=lambda _: "old")
    assert held.value.existing_id == "old"
    with pytest.raises(DuplicateDedupId, match="rows 'a' and 'b' of one batch"):
        check_batch_dedup([first, second], is_new=lambda _: True, live_holder=lambda _: None)
    # An id the store already has is not created, so its dedup_id takes nothing.
    check_batch_dedup([first, second], is_new=lambda i: i != "a", live_holder=lambda _: None)
    # A finished row of the batch holds no dedup_id.
    done = row("a", Status.SUCCESS, queue="q", dedup_id="d")
    check_batch_dedup([done, second], is_new=lambda _: True, live_holder=lambda _: None)


def test_only_an_engines_own_note_on_a_pending_run_stays_pending() -> None:
    # A note on why it waits, or a reset of its recovery count: no resume, no note.
    assert stays_pending({"only_from": [Status.PENDING], "error": "waits for version v2"})
    assert stays_pending({"only_from": [Status.PENDING], "reset_recovery": True})
    # A bare re-affirm is a hand-over: the run's engine is told ("resumed").
    assert not stays_pending({"only_from": [Status.PENDING]})
    assert not stays_pending({"only_from": [Status.PENDING, Status.PARKED], "error": "x"})
    assert not stays_pending({"only_from": None, "reset_recovery": True})


def test_claim_room_is_the_least_the_limits_allow() -> None:
    def started(since: datetime) -> int:
        assert since == T0 - timedelta(seconds=60)
        return 8

    assert claim_room(ClaimLimits(5), running=100, started_in_period=started, now=T0) == 5
    limits = ClaimLimits(5, concurrency=3)
    assert claim_room(limits, running=1, started_in_period=started, now=T0) == 2
    assert claim_room(limits, running=4, started_in_period=started, now=T0) == 0
    limits = ClaimLimits(5, rate_limit=(10, 60.0))
    assert claim_room(limits, running=0, started_in_period=started, now=T0) == 2


def test_a_claimed_runs_timeout_counts_from_the_claim_and_an_earlier_deadline_holds() -> None:
    assert claimed_deadline(row("a"), T0) is None
    assert claimed_deadline(row("a", timeout=30.0), T0) == T0 + timedelta(seconds=30)
    early = T0 + timedelta(seconds=5)
    assert claimed_deadline(row("a", timeout=30.0, deadline=early), T0) == early
    assert claimed_deadline(row("a", deadline=early), T0) == early


def test_a_created_row_is_stamped_with_now_where_it_has_no_time() -> None:
    pending = stamped_for_create(row("a", Status.PENDING), T0)
    assert (pending.created_at, pending.updated_at, pending.started_at) == (T0, T0, T0)
    enqueued = stamped_for_create(row("b", created_at=T0 - timedelta(days=1)), T0)
    assert enqueued.created_at == T0 - timedelta(days=1) and enqueued.started_at is None
    with pytest.raises(ValueError):
        stamped_for_create(row("\x00bad"), T0)


def test_a_batch_is_stamped_a_microsecond_apart_in_input_order() -> None:
    stamped = stamped_for_batch([row("a"), row("b"), row("c")])
    times = [r.created_at for r in stamped]
    assert times[1] - times[0] == times[2] - times[1] == timedelta(microseconds=1)


def test_a_start_with_a_message_delivers_to_the_run_it_starts_and_has_no_dedup() -> None:
    message = OutgoingMessage("a", "go", 1)
    assert checked_create_and_send(row("a"), message).workflow_id == "a"
    with pytest.raises(ValueError, match="the message is for 'b'"):
        checked_create_and_send(row("a"), OutgoingMessage("b", "go", 1))
    with pytest.raises(ValueError, match="leave dedup_id out"):
        checked_create_and_send(row("a", queue="q", dedup_id="d"), message)


def test_only_the_owner_of_a_pending_run_records_into_it() -> None:
    with pytest.raises(WorkflowNotFound, match="'gone'"):
        check_recordable(None, "gone", "me")
    with pytest.raises(RunNotPending, match="is CANCELLED"):
        check_recordable(row("a", Status.CANCELLED, executor_id="me"), "a", "me")
    with pytest.raises(RecordConflict, match="owned by executor 'other', not 'me'"):
        check_recordable(row("a", Status.PENDING, executor_id="other"), "a", "me")
    check_recordable(row("a", Status.PENDING, executor_id="other"), "a", None)


def test_a_pending_record_is_replaced_only_by_an_outcome_or_more_attempts() -> None:
    pending = Record(1, "step", "charge", None, attempts=2)
    assert replaces_stored(pending, Record(1, "step", "charge", Value(1)))
    assert replaces_stored(pending, Record(1, "step", "charge", None, attempts=3))
    assert not replaces_stored(pending, Record(1, "step", "charge", None, attempts=2))
    assert not replaces_stored(pending, Record(1, "step", "other", None, attempts=3))
    done = Record(1, "step", "charge", Value(1))
    assert not replaces_stored(done, Record(1, "step", "charge", Value(2)))


def test_a_filter_matches_each_field_it_names_and_a_half_open_time_range() -> None:
    r = row("a", Status.PENDING, queue="q", created_at=T0, app_version="v1")
    assert matches_filter(r, WorkflowFilter())
    assert matches_filter(r, WorkflowFilter(status=[Status.PENDING, Status.ERROR], queue="q"))
    assert not matches_filter(r, WorkflowFilter(status=Status.ERROR))
    assert not matches_filter(r, WorkflowFilter(app_version="v2"))
    assert matches_filter(r, WorkflowFilter(since=T0, until=T0 + timedelta(seconds=1)))
    assert not matches_filter(r, WorkflowFilter(until=T0))
    assert not matches_filter(row("b"), WorkflowFilter(since=T0))  # no creation time


def test_a_listing_without_payloads_keeps_only_an_error_runs_failure() -> None:
    failure = Failure(ErrorInfo("builtins", "ValueError", "no"))
    failed = row("a", Status.ERROR, inputs={"args": [1]}, result=failure)
    assert listed_without_payloads(failed) == row("a", Status.ERROR, result=failure)
    done = row("b", Status.SUCCESS, inputs={"args": [1]}, result=Value(2))
    assert listed_without_payloads(done) == row("b", Status.SUCCESS)
    bare = row("c")
    assert listed_without_payloads(bare) is bare
