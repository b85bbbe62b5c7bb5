"""replaykit/errors.py: the errors replaykit raises, what they carry and what they say.

How each is raised is the test of the room that raises it; here, the classes' own
behaviour: their families, attributes, messages, and what a recorded one rebuilt
without its __init__ still reads.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from replaykit.errors import (
    LIVE_ONLY,
    AwaitedWorkflowCancelled,
    Cancelled,
    CodecError,
    ControlSignal,
    DamagedData,
    DuplicateDedupId,
    ExecutorIdInUse,
    HeartbeatTimeout,
    NonDeterminismError,
    NonRetryable,
    RecordConflict,
    ReplayKitError,
    RetryAfter,
    RunNotPending,
    ScheduleNotFound,
    StepFailed,
    Stopped,
    StoreError,
    StoreUnavailable,
    UnknownUpdate,
    WorkflowDeadlineExceeded,
    WorkflowIdConflict,
    WorkflowNotFound,
    WorkflowTimeout,
)


def test_each_error_is_caught_by_the_builtin_family_it_belongs_to() -> None:
    assert issubclass(WorkflowNotFound, LookupError)
    assert issubclass(UnknownUpdate, LookupError)
    assert issubclass(WorkflowTimeout, TimeoutError)
    assert issubclass(HeartbeatTimeout, TimeoutError)
    assert issubclass(DuplicateDedupId, ValueError)
    assert issubclass(RunNotPending, RecordConflict) and issubclass(RecordConflict, StoreError)
    assert issubclass(CodecError, DamagedData) and issubclass(StoreUnavailable, StoreError)
    assert issubclass(WorkflowDeadlineExceeded, AwaitedWorkflowCancelled)
    for cls in (WorkflowNotFound, StoreError, StepFailed, UnknownUpdate):
        assert issubclass(cls, ReplayKitError)


def test_a_hard_stop_is_no_exception_a_workflow_swallows_by_accident() -> None:
    assert issubclass(Stopped, ControlSignal) and issubclass(ControlSignal, BaseException)
    assert not issubclass(Stopped, Exception)
    with pytest.raises(Stopped):
        try:
            raise Stopped("stop")
        except Exception:  # what a careless workflow writes
            pytest.fail("a hard stop was caught as an Exception")
    assert set(LIVE_ONLY) == {ControlSignal, StoreError, NonDeterminismError}
    # The cancel a workflow handles is an ordinary recorded exception, never retried.
    assert issubclass(Cancelled, Exception) and not issubclass(Cancelled, ControlSignal)


def test_details_of_an_error_rebuilt_without_its_init_read_empty() -> None:
    assert DuplicateDedupId.__new__(DuplicateDedupId).existing_id == ""
    assert WorkflowIdConflict.__new__(WorkflowIdConflict).existing_name == ""
    assert WorkflowIdConflict.__new__(WorkflowIdConflict).workflow_id == ""
    rebuilt = HeartbeatTimeout.__new__(HeartbeatTimeout)
    assert (rebuilt.workflow_id, rebuilt.position, rebuilt.attempt) == ("", -1, 0)


def test_a_non_determinism_error_carries_where_it_happened() -> None:
    error = NonDeterminismError(
        "drifted", workflow_name="checkout", workflow_id="r-1", position=2, yielded="Sleep"
    )
    assert (error.workflow_name, error.workflow_id, error.position, error.yielded) == (
        "checkout",
        "r-1",
        2,
        "Sleep",
    )
    assert str(error) == "drifted"


def test_an_id_conflict_says_whether_only_the_arguments_differ() -> None:
    same = WorkflowIdConflict("x", workflow_id="r", existing_name="a", new_name="a")
    other = WorkflowIdConflict("x", workflow_id="r", existing_name="a", new_name="b")
    assert same.same_workflow and not other.same_workflow


def test_a_step_failed_keeps_the_type_name_and_message_of_what_it_stands_in_for() -> None:
    error = StepFailed("shop.errors.Declined", "no funds")
    assert str(error) == "shop.errors.Declined: no funds"
    assert (error.type_name, error.message) == ("shop.errors.Declined", "no funds")


def test_a_held_executor_id_says_who_holds_it_and_what_to_do() -> None:
    error = ExecutorIdInUse("worker-1", "v2", "host a, pid 7", 3.0)
    text = str(error)
    assert "'worker-1' (application version 'v2')" in text and "(host a, pid 7)" in text
    assert "waiting 3s" in text and "executor_wait=" in text
    assert "another live engine, still" in str(ExecutorIdInUse("w", "v", "", 0))


def test_an_unknown_schedule_lists_the_known_and_guesses_the_closest() -> None:
    error = ScheduleNotFound("nightly", ["hourly", "nighty", "hourly"])
    assert "(known: 'hourly', 'nighty')" in str(error)
    assert "Did you mean 'nighty'?" in str(error)
    assert "(known: none)." in str(ScheduleNotFound("x", []))


def test_a_deadline_detail_names_the_instant_in_utc_and_the_timeout() -> None:
    deadline = datetime(2030, 1, 1, 13, 0, tzinfo=timezone(timedelta(hours=1)))
    detail = WorkflowDeadlineExceeded.detail(deadline, 30.0)
    assert detail == "timed out: its deadline 2030-01-01T12:00:00Z passed (timeout 30s)"
    precise = datetime(2030, 1, 1, 12, 0, 0, 250000, tzinfo=UTC)
    assert "12:00:00.250Z passed" in WorkflowDeadlineExceeded.detail(precise, None)
    assert WorkflowDeadlineExceeded.says_timed_out(detail)
    assert not WorkflowDeadlineExceeded.says_timed_out("cancelled by an operator")


def test_retry_after_keeps_its_delay_in_seconds_and_its_message() -> None:
    error = RetryAfter(timedelta(minutes=2), "rate limited")
    assert error.delay == error.retry_after == 120.0
    assert str(error) == "rate limited" and error.args == (120.0, "rate limited")
    assert str(RetryAfter(1.5)) == "retry after 1.5s"
    with pytest.raises(TypeError, match="the delay must be a timedelta or a number"):
        RetryAfter("120")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="from zero seconds to a hundred years"):
        RetryAfter(-1)
    with pytest.raises(TypeError, match="the message must be a str"):
        RetryAfter(1, 42)  # type: ignore[arg-type]


def test_the_non_retryable_mark_is_a_class_attribute_a_subclass_may_set_back() -> None:
    class Declined(NonRetryable, Exception):
        pass

    class Retried(Declined):
        non_retryable = False

    assert Declined().non_retryable is True
    assert Retried().non_retryable is False


def test_a_codec_error_and_a_not_pending_run_carry_their_details() -> None:
    error = CodecError("no codec", codec_name="fernet", workflow_id="r-1", what="the inputs")
    assert (error.codec_name, error.workflow_id, error.what) == ("fernet", "r-1", "the inputs")
    assert RunNotPending("x", "CANCELLED").status == "CANCELLED"
