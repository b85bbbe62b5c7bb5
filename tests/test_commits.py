"""The record writer (runtime/commits.py) alone, against each store.

It is the one place that writes a step's record and decides that the log moved on:
alone, in a group, or late into a run a cancel stopped while the step's effect ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from replaykit.errors import RecordConflict, RunNotPending
from replaykit.log import Record, Status, Value
from replaykit.runtime.commits import LogMovedOn, RecordWriter
from replaykit.stores import open_store
from replaykit.stores.base import Store, WorkflowRow


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        opened.close()


def _step(position: int, value: Any, name: str | None = None) -> Record:
    return Record(position, "step", name or f"s{position}", Value(value))


def _run(store: Store, workflow_id: str, executor_id: str = "ex") -> WorkflowRow:
    row = WorkflowRow(workflow_id, "wf", Status.PENDING, executor_id=executor_id)
    store.create_workflow(row)
    return row


def _writer(store: Store, executor_id: str = "ex") -> RecordWriter:
    return RecordWriter(store, executor_id=executor_id, stop=lambda: False)


def _outcomes(store: Store, workflow_id: str) -> list[Any]:
    return [record.outcome for record in store.load_log(workflow_id)]


def test_a_record_written_alone_is_what_its_position_holds(store: Store) -> None:
    row = _run(store, "alone")
    writer = _writer(store)
    stored = writer.write(row, _step(0, "a"))
    assert stored.outcome == Value("a")
    # A write that reached the store before (a retry after a lost answer) is adopted.
    assert writer.write(row, _step(0, "a")).outcome == Value("a")
    assert _outcomes(store, "alone") == [Value("a")]


def test_another_writers_record_at_the_position_means_the_log_moved_on(store: Store) -> None:
    row = _run(store, "moved")
    _writer(store).write(row, _step(0, "theirs"))
    with pytest.raises(LogMovedOn, match=r"id 'moved'\): position 0 was already completed"):
        _writer(store).write(row, _step(0, "ours"))
    assert _outcomes(store, "moved") == [Value("theirs")]


def test_a_group_is_answered_write_by_write_in_order(store: Store) -> None:
    good, moved, cancelled, taken = (
        _run(store, "g-good"),
        _run(store, "g-moved"),
        _run(store, "g-cancelled"),
        _run(store, "g-taken", executor_id="other"),
    )
    writer = _writer(store)
    writer.write(moved, _step(0, "theirs"))
    store.set_status("g-cancelled", Status.CANCELLED)
    answers = writer.write_many(
        [
            (good, _step(0, "g")),
            (moved, _step(1, "m")),
            (cancelled, _step(0, "c")),
            (taken, _step(0, "t")),
        ]
    )
    assert isinstance(answers[0], Record) and answers[0].outcome == Value("g")
    assert isinstance(answers[1], Record)  # position 1 was free: no conflict
    assert isinstance(answers[2], RunNotPending) and answers[2].status == "CANCELLED"
    assert isinstance(answers[3], RecordConflict) and not isinstance(answers[3], RunNotPending)
    # The cancelled run's step happened: its record landed late; the taken run's did not.
    assert _outcomes(store, "g-cancelled") == [Value("c")]
    assert _outcomes(store, "g-taken") == []


def test_a_group_write_over_another_writers_record_answers_log_moved_on(store: Store) -> None:
    row = _run(store, "g2")
    _writer(store).write(row, _step(0, "theirs"))
    [answer] = _writer(store).write_many([(row, _step(0, "ours"))])
    assert isinstance(answer, LogMovedOn)


def test_a_refused_step_record_lands_in_the_cancelled_run_and_the_refusal_still_says_so(
    store: Store,
) -> None:
    row = _run(store, "late")
    writer = _writer(store)
    writer.write(row, _step(0, "a"))
    store.set_status("late", Status.CANCELLED)
    with pytest.raises(RunNotPending):
        writer.write(row, _step(1, "b"))
    assert _outcomes(store, "late") == [Value("a"), Value("b")]
    row_after = store.get_workflow("late")
    assert row_after is not None and row_after.status is Status.CANCELLED


def test_nothing_lands_in_a_run_stopped_for_another_reason(store: Store) -> None:
    row = _run(store, "parked")
    store.set_status("parked", Status.PARKED)
    with pytest.raises(RunNotPending) as refused:
        _writer(store).write(row, _step(0, "a"))
    assert refused.value.status == "PARKED"
    assert _outcomes(store, "parked") == []


def test_a_write_with_side_effects_never_lands_late(store: Store) -> None:
    # A consumed message happens with its record or not at all: refused, it happens
    # on the resume instead, once.
    row = _run(store, "consume")
    store.send_message("consume", "t", "hello")
    message = store.peek_message("consume", "t")
    assert message is not None
    store.set_status("consume", Status.CANCELLED)
    with pytest.raises(RunNotPending):
        _writer(store).write(
            row, Record(0, "recv", "t", Value("hello")), consume=message.message_id
        )
    assert _outcomes(store, "consume") == []
    assert store.peek_message("consume", "t") is not None


def test_a_refused_finishs_last_record_lands_only_in_a_cancelled_run(store: Store) -> None:
    cancelled, parked = _run(store, "f-cancelled"), _run(store, "f-parked")
    store.set_status("f-cancelled", Status.CANCELLED)
    store.set_status("f-parked", Status.PARKED)
    writer = _writer(store)
    for row in (cancelled, parked):
        assert not store.finish_workflow(
            row.workflow_id, Status.SUCCESS, Value(1), executor_id="ex", record=_step(0, 1)
        )
        writer.finish_refused(row, _step(0, 1))
    assert _outcomes(store, "f-cancelled") == [Value(1)]
    assert _outcomes(store, "f-parked") == []
    # Landing it again changes nothing (a retry after a lost answer).
    writer.finish_refused(cancelled, _step(0, 1))
    assert _outcomes(store, "f-cancelled") == [Value(1)]
