"""A step's retry back-off is a durable timer: no thread, cancellable, kept across restarts."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Generator
from datetime import timedelta
from typing import Any

import pytest

from replaykit import (
    AwaitedWorkflowCancelled,
    Engine,
    Retry,
    Status,
    Step,
    VirtualClock,
    step_context,
    testing,
    workflow,
)
from replaykit.runtime.effects import jitter_draw

HOUR = 3600.0
ATTEMPTS: list[int] = []


def fails_until_the_fourth(order: str) -> str:
    attempt = step_context().attempt
    ATTEMPTS.append(attempt)
    if attempt < 4:
        raise ConnectionError(f"the service is down (attempt {attempt})")
    return f"charged {order} on attempt {attempt}"


@workflow(name="retry.hourly")
def hourly(order: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge",
        fails_until_the_fourth,
        order,
        retry=Retry(max_attempts=5, interval=HOUR, backoff=1.0),
    )
    return value


def eventually(check: Callable[[], bool], what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


def threads_in_a_step() -> list[str]:
    """Threads whose stack is inside a step's attempts or a back-off wait."""
    held = []
    for ident, frame in sys._current_frames().items():
        f: Any = frame
        while f is not None:
            if f.f_code.co_name in ("run_attempts", "_wait_until", "fails_until_the_fourth"):
                held.append(str(ident))
                break
            f = f.f_back
    return held


def backing_off(engine: Engine, workflow_id: str) -> bool:
    return engine.scheduler.busy == 0 and engine.wakeups.is_suspended(workflow_id)


@pytest.fixture(autouse=True)
def _fresh_attempts() -> None:
    ATTEMPTS.clear()


def test_a_back_off_holds_no_thread_and_a_cancel_ends_it_at_once(store_url: str) -> None:
    clock = VirtualClock(autojump=False)
    with Engine(store_url, clock=clock, poll_interval=0.05) as engine:
        handle = engine.start(hourly, "o-1", workflow_id="cancel-me")
        eventually(lambda: backing_off(engine, "cancel-me"), "the run backs off")
        assert ATTEMPTS == [1]
        assert threads_in_a_step() == []
        [record] = engine.store.load_log("cancel-me")
        assert (record.outcome, record.attempts) == (None, 1)
        assert record.wake_at == record.started_at + timedelta(hours=1)

        assert engine.cancel("cancel-me")
        with pytest.raises(AwaitedWorkflowCancelled):
            handle.result(timeout=5)
        assert not engine.wakeups.is_suspended("cancel-me")
        clock.advance(timedelta(hours=5))
        time.sleep(0.2)
        assert ATTEMPTS == [1]  # no attempt after the cancel
        assert handle.status() is Status.CANCELLED


def test_close_ends_a_back_off_at_once(store_url: str) -> None:
    clock = VirtualClock(autojump=False)
    engine = Engine(store_url, clock=clock, poll_interval=0.05)
    engine.start(hourly, "o-1", workflow_id="closing")
    eventually(lambda: backing_off(engine, "closing"), "the run backs off")
    started = time.monotonic()
    engine.close()
    assert time.monotonic() - started < 5  # an hour's back-off is not waited out
    assert ATTEMPTS == [1]


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_restart_keeps_the_attempts_and_the_due_time(store_url: str) -> None:
    clock = VirtualClock(autojump=False)
    first = Engine(store_url, clock=clock, poll_interval=0.05)
    try:
        first.start(hourly, "o-1", workflow_id="restarted")
        eventually(lambda: backing_off(first, "restarted"), "the first back-off")
        clock.advance(timedelta(hours=1))
        eventually(lambda: ATTEMPTS == [1, 2], "the second attempt")
        eventually(lambda: backing_off(first, "restarted"), "the second back-off")
        due = clock.now() + timedelta(hours=1)
    finally:
        first.close()

    with Engine(store_url, clock=clock, poll_interval=0.05) as second:
        eventually(lambda: backing_off(second, "restarted"), "the recovered run waits")
        time.sleep(0.2)
        assert ATTEMPTS == [1, 2]  # nothing repeated, nothing started early
        clock.advance(timedelta(minutes=59))
        time.sleep(0.3)
        assert ATTEMPTS == [1, 2]
        clock.advance(timedelta(minutes=1))
        eventually(lambda: ATTEMPTS == [1, 2, 3], "the third attempt, when it is due")
        assert clock.now() == due
        eventually(lambda: backing_off(second, "restarted"), "the third back-off")
        clock.advance(timedelta(hours=1))
        result = second.handle("restarted").result(timeout=10)
        assert result == "charged o-1 on attempt 4"
        [record] = second.store.load_log("restarted")
        assert record.attempts == 4
        assert ATTEMPTS == [1, 2, 3, 4]


def test_the_kit_passes_back_offs_on_virtual_time() -> None:
    result = testing.run(hourly, "o-1")
    assert result.unwrap() == "charged o-1 on attempt 4"
    assert result.elapsed == timedelta(hours=3)
    assert result.log[0].attempts == 4
    testing.check_determinism(hourly, "o-1")


def flaky(order: str) -> str:
    raise ConnectionError("still down")


@workflow(name="retry.bounded")
def bounded(order: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge",
        flaky,
        order,
        retry=Retry(max_attempts=10, interval=60, backoff=1.0, timeout=timedelta(seconds=150)),
    )
    return value


def test_a_retry_timeout_starts_no_attempt_after_it() -> None:
    result = testing.run(bounded, "o-2")
    assert result.status is Status.ERROR
    assert isinstance(result.error, TimeoutError)
    message = str(result.error)
    for part in ("step 'charge'", "'retry.bounded'", "(id 'retry.bounded:test')"):
        assert part in message
    assert "position 0 gave up after 3 attempt(s)" in message
    assert "Retry(timeout=150s)" in message
    assert "ConnectionError: still down" in message
    assert len(result.calls["charge"]) == 3  # at 0 s, 60 s and 120 s; 180 s is past 150 s
    assert result.log[0].attempts == 3


@workflow(name="retry.jittered")
def jittered(order: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge",
        flaky,
        order,
        retry=Retry(max_attempts=3, interval=HOUR, backoff=1.0, jitter=0.5),
    )
    return value


def test_jitter_is_drawn_from_the_run_the_position_and_the_attempt() -> None:
    times: list[Any] = []

    def fake(order: str) -> str:
        times.append(step_context())
        raise ConnectionError("down")

    runs = [testing.run(jittered, "o", steps={"charge": fake}, workflow_id=w) for w in "ab"]
    again = testing.run(jittered, "o", steps={"charge": fake}, workflow_id="a")
    for result, workflow_id in zip([*runs, again], "aba", strict=True):
        draws = [jitter_draw(workflow_id, 0, attempt) for attempt in (2, 3)]
        assert result.elapsed == timedelta(seconds=sum(HOUR * (1 - 0.5 * d) for d in draws))
        assert timedelta(hours=1) <= result.elapsed <= timedelta(hours=2)
    assert runs[0].elapsed == again.elapsed != runs[1].elapsed


def test_retry_refuses_a_jitter_outside_zero_to_one() -> None:
    with pytest.raises(ValueError, match="jitter"):
        Retry(jitter=1.5)
    with pytest.raises(TypeError, match="jitter"):
        Retry(jitter="a lot")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Retry timeout"):
        Retry(timeout=-1)


def test_an_async_step_backs_off_without_a_task(store_url: str) -> None:
    tries: list[int] = []

    async def async_flaky() -> int:
        tries.append(step_context().attempt)
        if len(tries) < 2:
            raise ConnectionError("down")
        return len(tries)

    @workflow(name="retry.async")
    def async_retry() -> Generator[Any, Any, int]:
        value: int = yield Step("call", async_flaky, retry=Retry(max_attempts=3, interval=HOUR))
        return value

    clock = VirtualClock(autojump=False)
    with Engine(store_url, clock=clock, poll_interval=0.05) as engine:
        handle = engine.start(async_retry, workflow_id="async-retry")
        eventually(lambda: backing_off(engine, "async-retry"), "the async step backs off")
        loop = engine._runner.async_loop()
        tasks = asyncio_tasks(loop)
        assert tasks == 0
        clock.advance(timedelta(hours=1))
        assert handle.result(timeout=10) == 2
        assert tries == [1, 2]


def asyncio_tasks(loop: Any) -> int:
    import asyncio

    found: list[int] = []
    done = threading.Event()

    def count() -> None:
        found.append(len(asyncio.all_tasks(loop)))
        done.set()

    loop.call_soon_threadsafe(count)
    done.wait(5)
    return found[0]
