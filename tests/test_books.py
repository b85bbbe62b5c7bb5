"""The books (runtime/books.py) alone: a memory store, a list as their outbox.

They write how runs end — finished, failed, parked, halted, finished together — and
answer with the event the scheduler acts on, never calling back into it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from replaykit.errors import StoreUnavailable
from replaykit.interpreter import Completed, Failed
from replaykit.log import Failure, Record, Status, Value
from replaykit.otel import Telemetry
from replaykit.runtime.books import Books
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.commits import RecordWriter
from replaykit.runtime.events import Activation, Carried, Ended, Event
from replaykit.runtime.host import Wake
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore


class Room:
    def __init__(self, *, max_recovery_attempts: int = 3) -> None:
        self.store = MemoryStore()
        self.outbox: list[Event] = []
        self.told: list[Wake] = []
        self.parked: list[tuple[str, str]] = []
        self.books = Books(
            self.store,
            RecordWriter(self.store, executor_id="ex", stop=lambda: False),
            VirtualClock(datetime(2026, 1, 1, tzinfo=UTC)),
            Telemetry(enabled=False),
            executor_id="ex",
            app_version="v1",
            max_payload_bytes=1024,
            max_recovery_attempts=max_recovery_attempts,
            park=self._park,
            queue_run_done=lambda queue, workflow_id: None,
            tell=self.told.append,
            post_many=self.outbox.extend,
        )

    def _park(self, workflow_id: str, why: str, cause: BaseException | None) -> None:
        self.parked.append((workflow_id, why))
        self.store.set_status(workflow_id, Status.PARKED, error=why)

    def run(self, workflow_id: str) -> Activation:
        row = WorkflowRow(workflow_id, "wf", Status.PENDING, executor_id="ex", app_version="v1")
        self.store.create_workflow(row)
        return Activation(workflow_id, row, fresh=True)

    def status(self, workflow_id: str) -> Status:
        row = self.store.get_workflow(workflow_id)
        assert row is not None
        return row.status


@pytest.fixture
def room() -> Room:
    return Room()


def test_a_finish_commits_the_last_record_with_the_result_and_keeps_the_row(room: Room) -> None:
    activation = room.run("done")
    last = Record(0, "step", "s", Value(1))
    event = room.books.finish(activation, Completed("ok"), last)
    assert isinstance(event, Ended) and event.activation is activation
    assert room.status("done") is Status.SUCCESS
    assert room.store.load_log("done") == [last]
    kept = room.books.finished_row("done")
    assert kept is not None and kept.status is Status.SUCCESS
    assert activation.outcome == "ok"


def test_a_workflow_that_raised_ends_in_error_with_its_exception(room: Room) -> None:
    activation = room.run("raised")
    room.books.finish(activation, Failed(KeyError("sku-9")), None)
    row = room.store.get_workflow("raised")
    assert row is not None and row.status is Status.ERROR
    assert isinstance(row.result, Failure) and "sku-9" in row.result.error.message


def test_finishes_together_are_answered_one_event_each_through_the_outbox(room: Room) -> None:
    batch: list[Any] = [(room.run(f"r{i}"), Completed(i), None) for i in range(3)]
    room.store.set_status("r1", Status.CANCELLED)  # cancelled meanwhile: not finished
    room.books.finish_many(batch)
    assert [type(e) for e in room.outbox] == [Ended, Ended, Ended]
    assert {e.activation.workflow_id for e in room.outbox} == {"r0", "r1", "r2"}
    assert [room.status(f"r{i}") for i in range(3)] == [
        Status.SUCCESS,
        Status.CANCELLED,
        Status.SUCCESS,
    ]


def test_a_finish_the_store_cannot_take_is_carried_back_as_its_error(room: Room) -> None:
    activation = room.run("outage")

    def unavailable(*args: Any, **kwargs: Any) -> bool:
        raise StoreUnavailable("connection refused")

    room.store.finish_workflow = unavailable  # type: ignore[method-assign]
    event = room.books.finish(activation, Completed(1), None)
    assert isinstance(event, Carried) and isinstance(event.result, StoreUnavailable)
    assert room.status("outage") is Status.PENDING  # the scheduler retries it soon


def test_a_permanent_error_fails_the_run_naming_where(room: Room) -> None:
    activation = room.run("refused")
    event = room.books.fail(activation, ValueError("a name the store refuses"), None)
    assert isinstance(event, Ended)
    row = room.store.get_workflow("refused")
    assert row is not None and row.status is Status.ERROR
    assert isinstance(row.result, Failure)
    assert row.result.error.message.startswith("workflow 'wf' (id 'refused'): ")


def test_a_halt_is_noted_and_counted_until_the_run_is_parked(room: Room) -> None:
    activation = room.run("halted")
    for _ in range(3):
        room.books.note_halt(activation, "stopped by engine 'ex': KeyboardInterrupt")
        assert room.status("halted") is Status.PENDING
    row = room.store.get_workflow("halted")
    assert row is not None and row.error == "stopped by engine 'ex': KeyboardInterrupt"
    assert room.told == [("finished", "halted")] * 3  # its waiters here hear of each
    room.books.note_halt(activation, "stopped by engine 'ex': KeyboardInterrupt")
    assert room.status("halted") is Status.PARKED
    assert "max_recovery_attempts=3" in room.parked[0][1]


def test_parking_answers_ended_even_when_the_store_fails() -> None:
    room = Room()
    activation = room.run("p")

    def broken_park(workflow_id: str, why: str, cause: BaseException | None) -> None:
        raise OSError("disk full")

    room.books._park = broken_park
    assert isinstance(room.books.park(activation, "why"), Ended)
    assert activation.outcome != "parked"
