"""Step(preemptible=True): a cancel made anywhere stops the running body at once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from typing import Any

import pytest

from conftest import wait_for
from replaykit import Engine, Status, Step, workflow
from replaykit.errors import StepPreempted
from replaykit.log import Failure

STOPPED = threading.Event()
STARTED = threading.Event()
RELEASE = threading.Event()


async def sleeps_half_a_minute() -> str:
    STARTED.set()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        STOPPED.set()
        raise
    return "slept"


def blocks_half_a_minute() -> str:
    STARTED.set()
    RELEASE.wait(30)
    return "blocked"


@workflow(name="preempt.async")
def preemptible_async() -> Generator[Any, Any, str]:
    value: str = yield Step("nap", sleeps_half_a_minute, preemptible=True)
    return value


@workflow(name="preempt.sync")
def preemptible_sync() -> Generator[Any, Any, str]:
    value: str = yield Step("block", blocks_half_a_minute, preemptible=True)
    return value


@workflow(name="preempt.not")
def not_preemptible() -> Generator[Any, Any, str]:
    value: str = yield Step("nap", sleeps_half_a_minute)
    return value


@pytest.fixture(autouse=True)
def _reset() -> Generator[None, None, None]:
    for event in (STOPPED, STARTED, RELEASE):
        event.clear()
    yield
    RELEASE.set()  # let an abandoned body's thread end


def assert_preemption_recorded(engine: Engine, workflow_id: str, step: str) -> None:
    """The cut-short step's record says so: a resume will not run its body again."""
    wait_for(lambda: len(engine.store.load_log(workflow_id)) == 1, "the preemption lands")
    [record] = engine.store.load_log(workflow_id)
    assert (record.position, record.name) == (0, step)
    assert isinstance(record.outcome, Failure)
    assert record.outcome.error.type_name == "replaykit.errors.StepPreempted"
    assert "because its run was cancelled" in record.outcome.error.message


def cancel_elsewhere(store_url: str, workflow_id: str) -> float:
    """Cancel through another engine (its own store object and executor id)."""
    with Engine(store_url, executor_id="operator", recover=False, queues=[]) as other:
        assert other.terminate(workflow_id)
    return time.monotonic()


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_an_async_step_is_interrupted_by_a_cancel_made_elsewhere(store_url: str) -> None:
    with Engine(store_url) as engine:
        engine.start(preemptible_async, workflow_id="nap-1")
        assert STARTED.wait(10)
        cancelled_at = cancel_elsewhere(store_url, "nap-1")
        assert STOPPED.wait(5), "the step's task was not cancelled"
        # The watch looks at least once a second (min(poll_interval, 1 s)).
        assert time.monotonic() - cancelled_at < 3
        wait_for(lambda: not engine.scheduler.is_tracked("nap-1"), "its activation ends")
        assert engine.handle("nap-1").status() is Status.CANCELLED
        assert_preemption_recorded(engine, "nap-1", "nap")


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_sync_step_is_abandoned_by_a_cancel_made_elsewhere(store_url: str) -> None:
    with Engine(store_url) as engine:
        engine.start(preemptible_sync, workflow_id="block-1")
        assert STARTED.wait(10)
        cancelled_at = cancel_elsewhere(store_url, "block-1")
        wait_for(lambda: not engine.scheduler.is_tracked("block-1"), "the run is let go", 5)
        assert time.monotonic() - cancelled_at < 3
        assert not RELEASE.is_set()  # its body still runs, abandoned
        RELEASE.set()
        time.sleep(0.2)  # the body returns now: its outcome is dropped
        assert engine.handle("block-1").status() is Status.CANCELLED
        assert_preemption_recorded(engine, "block-1", "block")


def test_a_step_that_is_not_preemptible_runs_on_after_a_cancel_elsewhere(
    tmp_path: Any,
) -> None:
    """Today's behaviour, kept: the cancel is seen when the body ends (its record is refused)."""
    store_url = f"sqlite:///{tmp_path / 'not.db'}"
    engine = Engine(store_url)
    try:
        engine.start(not_preemptible, workflow_id="nap-2")
        assert STARTED.wait(10)
        cancel_elsewhere(store_url, "nap-2")
        time.sleep(2.5)  # longer than the preemption watch would take
        assert not STOPPED.is_set()
        assert engine.scheduler.is_tracked("nap-2")
        assert engine.handle("nap-2").status() is Status.CANCELLED
    finally:
        engine.close(timeout=0.5)  # not the body's thirty seconds


RUNS = {"count": 0}


async def counts_and_naps() -> str:
    RUNS["count"] += 1
    STARTED.set()
    await asyncio.sleep(30)
    return "slept"


@workflow(name="preempt.caught")
def catches_the_preemption() -> Generator[Any, Any, str]:
    try:
        value: str = yield Step("nap", counts_and_naps, preemptible=True)
    except StepPreempted:
        value = yield Step("instead", lambda: "ran a new step")
    return value


@pytest.mark.parametrize("store_url", ["memory", "sqlite", "postgres"], indirect=True)
def test_a_resume_finds_the_preemption_at_the_steps_yield_and_never_reruns_the_body(
    store_url: str,
) -> None:
    """A cancel made here (engine.cancel) cuts the step short; the record of that lands
    in the cancelled run, and the resume goes on from it."""
    RUNS["count"] = 0
    with Engine(store_url) as engine:
        engine.start(catches_the_preemption, workflow_id="caught-1")
        assert STARTED.wait(10)
        assert engine.terminate("caught-1")
        assert_preemption_recorded(engine, "caught-1", "nap")
        wait_for(lambda: not engine.scheduler.is_tracked("caught-1"), "its activation ends")
        assert engine.resume("caught-1").result(timeout=10) == "ran a new step"
        assert RUNS["count"] == 1
        assert engine.handle("caught-1").status() is Status.SUCCESS
