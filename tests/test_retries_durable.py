"""A step's retry back-off is a durable timer: no thread, cancellable, kept across restarts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
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
from replaykit.runtime.attempts import jitter_draw
from replaykit.runtime.backoffs import RETRY_TOPIC
from replaykit.stores import open_store

ROOT = Path(__file__).resolve().parent.parent
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
        wait_for(lambda: backing_off(engine, "cancel-me"), "the run backs off")
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
    wait_for(lambda: backing_off(engine, "closing"), "the run backs off")
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
        wait_for(lambda: backing_off(first, "restarted"), "the first back-off")
        clock.advance(timedelta(hours=1))
        wait_for(lambda: ATTEMPTS == [1, 2], "the second attempt")
        wait_for(lambda: backing_off(first, "restarted"), "the second back-off")
        due = clock.now() + timedelta(hours=1)
        # The back-off is the step's pending record itself, written over the first one.
        [record] = first.store.load_log("restarted")
        assert (record.outcome, record.attempts, record.wake_at) == (None, 2, due)
        row = first.store.get_workflow("restarted")
        assert row is not None and row.wake_at == due
        assert first.store.peek_message("restarted", f"{RETRY_TOPIC}0:2") is None
    finally:
        first.close()

    with Engine(store_url, clock=clock, poll_interval=0.05) as second:
        wait_for(lambda: backing_off(second, "restarted"), "the recovered run waits")
        time.sleep(0.2)
        assert ATTEMPTS == [1, 2]  # nothing repeated, nothing started early
        clock.advance(timedelta(minutes=59))
        time.sleep(0.3)
        assert ATTEMPTS == [1, 2]
        clock.advance(timedelta(minutes=1))
        wait_for(lambda: ATTEMPTS == [1, 2, 3], "the third attempt, when it is due")
        assert clock.now() == due
        wait_for(lambda: backing_off(second, "restarted"), "the third back-off")
        clock.advance(timedelta(hours=1))
        result = second.handle("restarted").result(timeout=10)
        assert result == "charged o-1 on attempt 4"
        [record] = second.store.load_log("restarted")
        assert record.attempts == 4
        assert ATTEMPTS == [1, 2, 3, 4]


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_run_backing_off_under_an_earlier_build_goes_on_from_its_inbox_entries(
    store_url: str,
) -> None:
    """Earlier builds kept each back-off after the first as an inbox entry; a run that
    was backing off across the upgrade must neither repeat nor skip an attempt."""
    clock = VirtualClock(autojump=False)
    first = Engine(store_url, clock=clock, poll_interval=0.05)
    try:
        first.start(hourly, "o-1", workflow_id="upgraded")
        wait_for(lambda: backing_off(first, "upgraded"), "the first back-off")
        [record] = first.store.load_log("upgraded")
        started = record.started_at
        assert started is not None and record.attempts == 1
        # What the earlier build wrote as attempts 2 and 3 failed, an hour apart.
        for attempt in (2, 3):
            first.store.send_message(
                "upgraded",
                f"{RETRY_TOPIC}0:{attempt}",
                {
                    "due": (started + timedelta(hours=attempt)).isoformat(),
                    "since": started.astimezone(UTC).isoformat(),
                },
                idempotency_key=f"{RETRY_TOPIC}upgraded:0:{attempt}",
            )
    finally:
        first.close()
    ATTEMPTS.extend([2, 3])  # made by the earlier build

    clock.advance(timedelta(hours=2, minutes=30))
    with Engine(store_url, clock=clock, poll_interval=0.05) as second:
        wait_for(lambda: backing_off(second, "upgraded"), "the recovered run waits")
        [record] = second.store.load_log("upgraded")
        # Read once: the entries' count now lives in the pending record.
        assert (record.attempts, record.wake_at) == (3, started + timedelta(hours=3))
        time.sleep(0.2)
        assert ATTEMPTS == [1, 2, 3]  # attempt 2, due long ago, is not made again
        clock.advance(timedelta(minutes=30))
        result = second.handle("upgraded").result(timeout=10)
    assert result == "charged o-1 on attempt 4"
    assert ATTEMPTS == [1, 2, 3, 4]


def test_the_kit_passes_back_offs_on_virtual_time() -> None:
    result = testing.run(hourly, "o-1", real_steps=True)
    assert result.unwrap() == "charged o-1 on attempt 4"
    assert result.elapsed == timedelta(hours=3)
    assert result.log[0].attempts == 4
    testing.check_determinism(hourly, "o-1", real_steps=True)


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
    result = testing.run(bounded, "o-2", real_steps=True)
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
        wait_for(lambda: backing_off(engine, "async-retry"), "the async step backs off")
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


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_kill_9_during_a_back_off_neither_resets_nor_repeats_attempts(
    store_url: str, tmp_path: Path
) -> None:
    from tests.apps import retry_app

    attempts_file = tmp_path / "attempts.txt"
    attempts_file.touch()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/apps/retry_app.py"), store_url, str(attempts_file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # Opened once the child's engine has made the schema and run attempt 1.
        wait_for(lambda: attempts_file.read_text() != "", "the first attempt", timeout=60)
        store = open_store(store_url)
        try:

            def second_back_off() -> bool:
                assert child.poll() is None, "the child engine ended before its back-off"
                log = store.load_log(retry_app.WORKFLOW_ID)
                return bool(log) and log[0].outcome is None and log[0].attempts == 2

            wait_for(second_back_off, "the child's second back-off is recorded", timeout=30)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
            [record] = store.load_log(retry_app.WORKFLOW_ID)
        finally:
            store.close()
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stderr is not None
        child.stderr.close()
    assert (record.outcome, record.attempts) == (None, 2) and record.wake_at is not None
    assert len(attempts_file.read_text().splitlines()) == 2  # killed while backing off

    with Engine(store_url, app_version=retry_app.APP_VERSION, poll_interval=0.05) as engine:
        result = engine.handle(retry_app.WORKFLOW_ID).result(timeout=60)
        [finished] = engine.store.load_log(retry_app.WORKFLOW_ID)
    assert result == "charged on attempt 4"
    lines = [line.split() for line in attempts_file.read_text().splitlines()]
    assert [int(number) for number, _ in lines] == [1, 2, 3, 4]  # none repeated, none lost
    # Attempt 3 waited for the due time the killed process recorded, no less.
    assert float(lines[2][1]) >= record.wake_at.timestamp()
    assert finished.attempts == 4
