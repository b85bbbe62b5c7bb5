"""An error nobody expected ends its run once, with the error named; nothing loops.

Such a run used to stay PENDING and be dispatched again at every sweep, with a
traceback each time (236 of them in ten minutes for four runs). Now an error from the
workflow's own command (a Sleep whose deadline overflows) ends the run in ERROR, and
any other (a fault in one of the runtime's rooms) parks it, once, saying what failed
and where. Each test injects the failure into one room, lets sweeps go by, and counts
the log records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from replaykit import Engine, Sleep, Status, Step, workflow


@workflow(name="nel-overflow")
def sleeps_for_ever():
    yield Step("first", lambda: 1)
    yield Sleep(timedelta.max)
    return "never"


@workflow(name="nel-steps")
def two_steps():
    first = yield Step("first", lambda: 1)
    second = yield Step("second", lambda: 2)
    return first + second


def _settled(engine: Engine, workflow_id: str, timeout: float = 10) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        row = engine.store.get_workflow(workflow_id)
        if row is not None and row.status in (Status.ERROR, Status.PARKED, Status.SUCCESS):
            return row
        assert time.monotonic() < deadline, row
        time.sleep(0.02)


@pytest.fixture
def said(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[str], list[str]]]:
    with caplog.at_level(logging.WARNING, logger="replaykit"):
        yield lambda workflow_id: [
            r.getMessage() for r in caplog.records if workflow_id in r.getMessage()
        ]


def test_a_command_whose_deadline_overflows_fails_its_run_once(
    store_url: str, said: Callable[[str], list[str]]
) -> None:
    with Engine(store_url, poll_interval=0.05) as engine:
        engine.start(sleeps_for_ever, workflow_id="nel-1")
        row = _settled(engine, "nel-1")
        time.sleep(0.5)  # sweeps go by
        assert row.status is Status.ERROR
        assert "position 1 (Sleep)" in row.error
        assert len(said("nel-1")) == 1, said("nel-1")


def _about(value: Any, workflow_id: str) -> bool:
    """Whether a call's argument is about `workflow_id` (an activation, a row, a batch)."""
    if getattr(value, "workflow_id", None) == workflow_id:
        return True
    if isinstance(value, (list, tuple)):
        return any(_about(item, workflow_id) for item in value)
    return False


def _break_once(target: Any, name: str, error: BaseException, workflow_id: str) -> None:
    """Make `target.name` raise `error` at its first call about `workflow_id`."""
    real = getattr(target, name)
    calls = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        if not calls and _about(list(args), workflow_id):
            calls.append(1)
            raise error
        return real(*args, **kwargs)

    setattr(target, name, broken)


def _writer(engine: Engine) -> None:
    _break_once(engine.records, "write", RuntimeError("writer bug"), "nel-room")
    _break_once(engine.records, "write_many", RuntimeError("writer bug"), "nel-room")


ROOMS: dict[str, Callable[[Engine], None]] = {
    # The effect runner's step body driver (a bug in a handler).
    "effect runner": lambda engine: _break_once(
        engine._runner, "run_attempts", RuntimeError("handler bug"), "nel-room"
    ),
    # The record writer, alone or in a group.
    "record writer": _writer,
    # The books: finishing a run.
    "books": lambda engine: _break_once(
        engine.scheduler.books, "_run_result", RuntimeError("books bug"), "nel-room"
    ),
    # The scheduler's own handling of an event.
    "scheduler": lambda engine: _break_once(
        engine.scheduler, "_decide", RuntimeError("scheduler bug"), "nel-room"
    ),
}


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_a_fault_in_a_room_parks_the_run_once(
    store_url: str, room: str, said: Callable[[str], list[str]]
) -> None:
    with Engine(store_url, poll_interval=0.05, max_workers=4) as engine:
        ROOMS[room](engine)
        # A second run keeps the scheduler from running the first alone, so the
        # batched paths are taken too.
        engine.start(sleeps_forever_quietly, workflow_id="nel-busy")
        engine.start(two_steps, workflow_id="nel-room")
        row = _settled(engine, "nel-room")
        time.sleep(0.5)  # sweeps go by: nothing runs it again
        assert row.status is Status.PARKED, row
        assert "bug" in row.error and "resume" in row.error
        lines = said("nel-room")
        assert len(lines) == 1, lines
        engine.cancel("nel-busy")


@workflow(name="nel-quiet")
def sleeps_forever_quietly():
    yield Sleep(3600)


def test_a_parked_run_resumes_after_the_fault_is_gone(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.05) as engine:
        _break_once(engine.records, "write", RuntimeError("writer bug"), "nel-again")
        _break_once(engine.records, "write_many", RuntimeError("writer bug"), "nel-again")
        engine.start(two_steps, workflow_id="nel-again")
        assert _settled(engine, "nel-again").status is Status.PARKED
        assert engine.resume("nel-again").result(timeout=10) == 3
        steps = [r.name for r in engine.store.load_log("nel-again")]
        assert steps == ["first", "second"]


@workflow(name="nel-fails")
def fails():
    yield Step("first", lambda: 1)
    raise ValueError("the order is invalid")


def test_a_run_that_ends_in_error_says_so_once_in_the_log(
    store_url: str, said: Callable[[str], list[str]]
) -> None:
    with Engine(store_url, poll_interval=0.05) as engine:
        engine.start(fails, workflow_id="nel-error")
        assert _settled(engine, "nel-error").status is Status.ERROR
        time.sleep(0.3)
        (line,) = said("nel-error")
        assert "ended in ERROR at position 1" in line
        assert "nel-fails" in line and "ValueError: the order is invalid" in line
