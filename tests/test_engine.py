"""The engine end to end, on every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest

import replaykit
import replaykit.runtime.engine as engine_module
from conftest import wait_for
from replaykit import (
    Engine,
    Now,
    Random,
    Retry,
    Sleep,
    Status,
    Step,
    Uuid,
    context,
    workflow,
)
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    SerializationError,
    UnknownWorkflowError,
    WorkflowNotFound,
    WorkflowTimeout,
)

CALLS: dict[str, int] = {}
LOCK = threading.Lock()


def bump(name: str) -> int:
    with LOCK:
        CALLS[name] = CALLS.get(name, 0) + 1
        return CALLS[name]


@pytest.fixture(autouse=True)
def _reset_calls() -> Iterator[None]:
    CALLS.clear()
    yield


@attrs.frozen
class Receipt:
    charge_id: str
    amount: int
    at: datetime


def charge(order_id: str, amount: int) -> Receipt:
    bump(f"charge:{order_id}")
    return Receipt(f"ch-{order_id}", amount, datetime(2030, 1, 1, tzinfo=UTC))


@workflow(name="engine-checkout")
def checkout(order_id: str, amount: int) -> Generator[Any, Any, dict[str, Any]]:
    receipt = yield Step("charge", charge, order_id, amount)
    assert isinstance(receipt, Receipt), receipt  # decoded by the return annotation
    yield Sleep(0.05)
    when = yield Now()
    return {"charge": receipt.charge_id, "when": when.isoformat()}


def test_start_and_result(engine: Engine) -> None:
    handle = engine.start(checkout, "o1", 10, workflow_id="order-1")
    result = handle.result(timeout=20)
    assert result["charge"] == "ch-o1"
    assert handle.status() is Status.SUCCESS
    assert CALLS == {"charge:o1": 1}
    kinds = [(r.position, r.kind, r.name) for r in engine.steps("order-1")]
    assert kinds == [(0, "step", "charge"), (1, "sleep", "sleep"), (2, "now", "now")]


def test_start_is_idempotent_by_id(engine: Engine) -> None:
    first = engine.start(checkout, "o2", 10, workflow_id="same")
    second = engine.start(checkout, "o2", 10, workflow_id="same")
    assert first.workflow_id == second.workflow_id == "same"
    first.result(timeout=20)
    assert CALLS == {"charge:o2": 1}
    assert len(engine.list_workflows(name="engine-checkout")) == 1


def test_run_is_start_plus_result(engine: Engine) -> None:
    assert engine.run(checkout, "o3", 5, timeout=20)["charge"] == "ch-o3"


@workflow(name="engine-flaky")
def flaky_wf(fail_times: int) -> Generator[Any, Any, int]:
    def flaky() -> int:
        n = bump("flaky")
        if n <= fail_times:
            raise ConnectionError(f"attempt {n}")
        return n

    return (yield Step("flaky", flaky, retry=Retry(max_attempts=4, interval=0.01)))


def test_retries_share_one_record(engine: Engine) -> None:
    assert engine.run(flaky_wf, 2, timeout=20) == 3
    (record,) = [r for r in engine.steps(engine.list_workflows()[0].workflow_id)]
    assert record.attempts == 3


def test_exhausted_retries_record_the_failure_and_reraise_it(engine: Engine) -> None:
    handle = engine.start(flaky_wf, 10)
    with pytest.raises(ConnectionError, match="attempt 4"):
        handle.result(timeout=20)
    assert handle.status() is Status.ERROR
    assert CALLS["flaky"] == 4


def slow() -> str:
    time.sleep(2)
    return "late"


async def async_double(x: int) -> int:
    await asyncio.sleep(0.01)
    return 2 * x


async def async_slow() -> int:
    await asyncio.sleep(5)
    return 0


@workflow(name="engine-timeouts")
def timeouts_wf() -> Generator[Any, Any, list[str]]:
    out: list[str] = []
    doubled = yield Step("async-double", async_double, 21)
    out.append(str(doubled))
    for name, fn in (("sync-slow", slow), ("async-slow", async_slow)):
        try:
            yield Step(name, fn, timeout=0.2)
        except TimeoutError as exc:
            out.append(f"timeout:{exc}")
    return out


def test_async_steps_and_timeouts(engine: Engine) -> None:
    result = engine.run(timeouts_wf, timeout=20)
    assert result[0] == "42"
    assert result[1].startswith("timeout:") and "sync-slow" in result[1]
    assert result[2].startswith("timeout:") and "async-slow" in result[2]


class Unencodable:
    pass


@workflow(name="engine-bad-result")
def bad_result_wf() -> Generator[Any, Any, str]:
    try:
        yield Step("make", Unencodable)
    except SerializationError as exc:
        return str(exc)
    return "encoded?"


def test_unencodable_step_result_fails_the_step_with_a_clear_error(engine: Engine) -> None:
    message = engine.run(bad_result_wf, timeout=20)
    assert "step 'make'" in message and "Unencodable" in message and "position 0" in message


@workflow(name="engine-values")
def values_wf() -> Generator[Any, Any, list[str]]:
    when = yield Now()
    number = yield Random()
    ident = yield Uuid()
    pair = yield Step("pair", lambda: (1, 2))
    return [type(when).__name__, type(number).__name__, type(ident).__name__, type(pair).__name__]


def test_live_values_have_the_types_a_replay_gives(engine: Engine) -> None:
    # No annotation on the lambda: the tuple is a list both live and on replay.
    assert engine.run(values_wf, timeout=20) == ["datetime", "float", "UUID", "list"]


@workflow(name="engine-context")
def context_wf() -> Generator[Any, Any, list[Any]]:
    ctx = context()
    replaykit.logger.info("before sleep in %s", ctx.workflow_id)
    yield Sleep(0.05)
    replaykit.logger.info("after sleep in %s", ctx.workflow_id)
    return [ctx.workflow_id, ctx.name]


def test_context_and_logger_silent_on_replay(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="replaykit.workflow"):
        assert engine.run(context_wf, workflow_id="ctx-1", timeout=20) == [
            "ctx-1",
            "engine-context",
        ]
    messages = [r.getMessage() for r in caplog.records if r.name == "replaykit.workflow"]
    # The sleep suspends the run; it is rebuilt by replay, and the replayed
    # "before" line must not be logged a second time.
    assert messages.count("before sleep in ctx-1") == 1
    assert messages.count("after sleep in ctx-1") == 1


@workflow(name="engine-sleeper")
def sleeper_wf(seconds: float) -> Generator[Any, Any, str]:
    yield Step("before", bump, "before")
    yield Sleep(seconds)
    yield Step("after", bump, "after")
    return "woke"


def test_sleeping_workflows_hold_no_thread(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1, max_workers=2) as engine:
        handles = [engine.start(sleeper_wf, 0.5) for _ in range(20)]
        # With two worker threads, twenty runs can only all be asleep at once
        # if a sleeping run holds no thread.
        wait_for(lambda: CALLS.get("before", 0) >= 20, "twenty runs asleep", timeout=10)
        assert CALLS.get("before") == 20
        assert CALLS.get("after", 0) == 0
        assert [h.result(timeout=20) for h in handles] == ["woke"] * 20


def test_sleep_survives_engine_restart_without_repeating_steps(store_url: str) -> None:
    if store_url.startswith("memory"):
        store: Any = replaykit.MemoryStore()
        first, second = Engine(store, poll_interval=0.1), None
    else:
        store = store_url
        first = Engine(store_url, poll_interval=0.1)
    handle = first.start(sleeper_wf, 1.0, workflow_id="restart-1")
    # Wait for the sleep's start to be recorded (the step's counter moves before
    # its own record commits, so it is not enough).
    wait_for(lambda: len(first.steps("restart-1")) >= 2, "the sleep's record", timeout=10)
    wake_at = first.steps("restart-1")[1].wake_at
    assert wake_at is not None and first.steps("restart-1")[1].outcome is None
    if isinstance(store, replaykit.MemoryStore):
        store.close = lambda: None  # type: ignore[method-assign]  # keep data for the next engine
    first.close()
    with Engine(store, poll_interval=0.1) as second:
        assert second.handle("restart-1").result(timeout=20) == "woke"
        records = second.steps("restart-1")
        # The deadline recorded before the restart is the one honoured.
        assert records[1].wake_at == wake_at
        assert records[1].completed_at is not None and records[1].completed_at >= wake_at
    assert CALLS == {"before": 1, "after": 1}
    del handle


def test_unknown_id_and_timeouts_are_clear(engine: Engine) -> None:
    with pytest.raises(WorkflowNotFound, match="nope"):
        engine.handle("nope")
    handle = engine.start(sleeper_wf, 30)
    with pytest.raises(WorkflowTimeout, match="still PENDING"):
        handle.result(timeout=0.2)


def test_cancel_stops_a_sleeping_run_and_resume_continues_it(engine: Engine) -> None:
    handle = engine.start(sleeper_wf, 0.3, workflow_id="cancel-me")
    # Cancel once it sleeps: a cancel while "before" runs would (rightly) drop
    # that step's record and run it again on resume.
    wait_for(lambda: len(engine.steps("cancel-me")) >= 2, "the sleep's record", timeout=10)
    assert engine.terminate("cancel-me")
    assert handle.status() is Status.CANCELLED
    with pytest.raises(AwaitedWorkflowCancelled):
        handle.result(timeout=5)
    time.sleep(0.5)
    assert CALLS.get("after", 0) == 0  # the wake-up did not run it
    engine.resume("cancel-me")
    assert handle.result(timeout=20) == "woke"
    assert CALLS == {"before": 1, "after": 1}


@workflow(name="engine-versioned")
def versioned_wf(flag: int) -> Generator[Any, Any, str]:
    yield Step("a", bump, "a")
    yield Sleep(0.3)
    if flag == 1:
        yield Step("b", bump, "b")
    else:
        yield Step("c", bump, "c")
    return "ok"


def test_non_determinism_parks_the_run_with_an_explanation(store_url: str) -> None:
    store: Any = replaykit.MemoryStore() if store_url.startswith("memory") else store_url
    with Engine(store, poll_interval=0.1, app_version="v1") as first:
        first.start(versioned_wf, 1, workflow_id="drift").result(timeout=20)
        if isinstance(store, replaykit.MemoryStore):
            store.close = lambda: None  # type: ignore[method-assign]
    with Engine(store, poll_interval=0.1, app_version="v1") as eng:
        # Simulate a deploy that changed the code under a finished run's log:
        # fork it below its end and replay it with different inputs.
        row = eng.store.get_workflow("drift")
        assert row is not None
        records = eng.steps("drift")
        forked = attrs.evolve(
            row,
            workflow_id="drift-2",
            status=Status.PENDING,
            result=None,
            inputs={"args": [2], "kwargs": {}},
        )
        eng.store.create_workflow(forked, records=records)
        eng.dispatch("drift-2")
        wait_for(
            lambda: eng.handle("drift-2").status() is not Status.PENDING, "the drift", timeout=10
        )
        parked = eng.store.get_workflow("drift-2")
        assert parked is not None and parked.status is Status.PARKED
        assert "position 2" in parked.error and "Patch" in parked.error


CRASH_HOLD = threading.Event()


def hangs_until_released() -> str:
    CRASH_HOLD.wait(10)
    return "released"


@workflow(name="engine-crashy")
def crashy_wf() -> Generator[Any, Any, None]:
    yield Step("hangs", hangs_until_released)


@workflow(name="engine-long-sleeper")
def long_sleeper_wf() -> Generator[Any, Any, None]:
    yield Sleep(3600)


def _shared(store_url: str) -> Any:
    store: Any = replaykit.MemoryStore() if store_url.startswith("memory") else store_url
    if isinstance(store, replaykit.MemoryStore):
        store.close = lambda: None  # type: ignore[method-assign]
    return store


def test_recovery_parks_runs_that_keep_crashing(store_url: str) -> None:
    """A run that dies while executing (here: its engine stops mid-step, as a crash
    would) counts toward parking at every launch."""
    store = _shared(store_url)
    CRASH_HOLD.clear()
    try:
        for _ in range(3):
            eng = Engine(store, poll_interval=0.1, max_recovery_attempts=2, app_version="v-crash")
            if not eng.list_workflows():
                eng.start(crashy_wf, workflow_id="crashy")
            time.sleep(0.1)
            eng.close(wait=False)
        with Engine(
            store, poll_interval=0.1, max_recovery_attempts=2, app_version="v-crash"
        ) as eng:
            row = eng.store.get_workflow("crashy")
            assert row is not None and row.status is Status.PARKED
            assert "max_recovery_attempts=2" in row.error
            CRASH_HOLD.set()
            eng.resume("crashy")
            eng.handle("crashy").result(timeout=20)
    finally:
        CRASH_HOLD.set()


def test_restarts_never_park_a_run_that_waits(store_url: str) -> None:
    """Torture report, issue 13, fault 1: a run in Sleep(1h) was PARKED after 51 clean
    restarts, every launch bumping its recovery count. Waiting is not crashing."""
    store = _shared(store_url)
    for _ in range(6):
        with Engine(
            store, poll_interval=0.1, max_recovery_attempts=2, app_version="v-sleep"
        ) as eng:
            if not eng.list_workflows():
                eng.start(long_sleeper_wf, workflow_id="sleeper")
            assert eng.wait_idle(10)
    with Engine(store, poll_interval=0.1, max_recovery_attempts=2, app_version="v-sleep") as eng:
        row = eng.store.get_workflow("sleeper")
        assert row is not None and row.status is Status.PENDING, row.error


class _SlowResets(replaykit.MemoryStore):
    """A store whose reset of a recovery count takes a while: the reset runs on the
    bookkeeping pool, after the run is already idle."""

    def set_status(self, workflow_id: str, status: Status, **kw: Any) -> bool:
        if kw.get("reset_recovery"):
            time.sleep(0.3)
        return super().set_status(workflow_id, status, **kw)


def test_a_clean_close_keeps_the_reset_of_a_waiting_runs_recovery_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CI caught the restart test above parking its sleeper 1 time in 20: the engine
    closed between a run's suspension and the write that zeroes its count, and the
    close dropped that write. Here one bookkeeper is busy with the first reset while
    the second waits for it; a patient close does both."""
    monkeypatch.setattr(engine_module, "BOOKKEEPERS", 1)
    store = _SlowResets()
    store.close = lambda: None  # type: ignore[method-assign]
    with Engine(store, poll_interval=0.1, app_version="v-slow-reset") as eng:
        for workflow_id in ("sleeper-1", "sleeper-2"):
            eng.start(long_sleeper_wf, workflow_id=workflow_id)
        assert eng.wait_idle(10)
    with Engine(store, poll_interval=0.1, app_version="v-slow-reset") as eng:
        assert eng.wait_idle(10)
    for workflow_id in ("sleeper-1", "sleeper-2"):
        row = store.get_workflow(workflow_id)
        assert row is not None and row.recovery_attempts == 0, row


def test_a_close_with_a_timeout_does_not_wait_out_every_queued_reset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The drain above has a bound: `close(timeout=...)` is not held by a thousand
    queued resets on a store that answers slowly (a review found 5 s for 0.5)."""
    monkeypatch.setattr(engine_module, "BOOKKEEPERS", 1)
    store = _SlowResets()
    store.close = lambda: None  # type: ignore[method-assign]
    ids = [f"sleeper-{i}" for i in range(12)]
    with Engine(store, poll_interval=0.1, app_version="v-slow-reset") as eng:
        for workflow_id in ids:
            eng.start(long_sleeper_wf, workflow_id=workflow_id)
        assert eng.wait_idle(10)
    eng = Engine(store, poll_interval=0.1, app_version="v-slow-reset")
    assert eng.wait_idle(10)
    began = time.monotonic()
    eng.close(timeout=0.5)
    # Twelve resets of 0.3 s on one writer take 3.6 s; the close stops waiting for
    # them after its 0.5 s (plus the one under way).
    assert time.monotonic() - began < 2.5
    counts = [store.get_workflow(workflow_id).recovery_attempts for workflow_id in ids]
    assert counts.count(1) >= 6, counts  # most were dropped, each a count until next time


def test_recovery_only_takes_its_own_executor_and_version(store_url: str) -> None:
    store: Any = replaykit.MemoryStore() if store_url.startswith("memory") else store_url
    if isinstance(store, replaykit.MemoryStore):
        store.close = lambda: None  # type: ignore[method-assign]
    with Engine(store, executor_id="a", app_version="v1", poll_interval=0.1) as eng:
        eng.start(crashy_wf, workflow_id="mine")
    with Engine(store, executor_id="b", app_version="v1", poll_interval=0.1) as other:
        assert other.recover() == []
    with Engine(store, executor_id="a", app_version="v2", poll_interval=0.1) as newer:
        assert newer.recover() == []
    with Engine(store, executor_id="a", app_version="v1", poll_interval=0.1, recover=False) as same:
        assert same.recover() == ["mine"]


def test_unregistered_workflow_name_is_reported(engine: Engine) -> None:
    with pytest.raises(UnknownWorkflowError, match="no workflow named"):
        replaykit.registry.lookup("never-registered")


def test_engine_rejects_bad_targets() -> None:
    with pytest.raises(TypeError, match="URL"):
        Engine(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="@workflow"), Engine("memory://") as eng:
        eng.start(lambda: None)  # type: ignore[arg-type]


def test_close_is_clean_and_final() -> None:
    eng = Engine("memory://")
    eng.close()
    eng.close()
    with pytest.raises(RuntimeError, match="closed"):
        eng.start(checkout, "x", 1)


def test_workflow_decorator_refuses_non_generators() -> None:
    with pytest.raises(TypeError, match="generator function"):

        @workflow
        def not_a_generator() -> int:  # type: ignore[type-var]
            return 1

    with pytest.raises(TypeError, match="async def"):

        @workflow
        async def an_async_one() -> None:  # type: ignore[arg-type]
            pass


def test_duplicate_names_are_refused() -> None:
    @workflow(name="engine-dup")
    def one() -> Generator[Any, Any, None]:
        yield Now()

    with pytest.raises(replaykit.errors.DuplicateWorkflowError, match="engine-dup"):

        @workflow(name="engine-dup")
        def two() -> Generator[Any, Any, None]:
            yield Now()


def test_list_workflows_filters(engine: Engine) -> None:
    engine.run(checkout, "l1", 1, workflow_id="l1", timeout=20)
    engine.start(sleeper_wf, 60, workflow_id="l2")
    assert [r.workflow_id for r in engine.list_workflows(status=Status.SUCCESS)] == ["l1"]
    assert [r.workflow_id for r in engine.list_workflows(status="PENDING")] == ["l2"]
    assert [r.workflow_id for r in engine.list_workflows(limit=1, offset=1)] == ["l2"]
    assert engine.list_workflows(name="engine-checkout")[0].workflow_id == "l1"
    assert engine.list_workflows(since=datetime.now(UTC) + timedelta(days=1)) == []


@workflow(name="draws")
def draws() -> Generator[Any, Any, tuple[float, str]]:
    number = yield replaykit.Random()
    ident = yield replaykit.Uuid()
    return number, ident


def test_entropy_hook_decides_what_random_and_uuid_draw() -> None:
    import random
    import uuid

    asked: list[tuple[str, int, str]] = []

    def entropy(workflow_id: str, position: int, kind: str) -> random.Random:
        asked.append((workflow_id, position, kind))
        return random.Random(f"{position}:{kind}")

    results = []
    for run in ("a", "b"):
        with Engine("memory://", app_version="t", entropy=entropy) as engine:
            results.append(engine.run(draws, workflow_id=run, timeout=10))
    assert results[0] == results[1]
    number, ident = results[0]
    assert number == random.Random("0:random").random()
    assert uuid.UUID(ident).version == 4
    assert asked == [("a", 0, "random"), ("a", 1, "uuid"), ("b", 0, "random"), ("b", 1, "uuid")]

    # Without the hook: the operating system's randomness, a fresh value each run.
    with Engine("memory://", app_version="t") as engine:
        first = engine.run(draws, workflow_id="c", timeout=10)
        second = engine.run(draws, workflow_id="d", timeout=10)
    assert first != second
    assert uuid.UUID(first[1]).version == 4
