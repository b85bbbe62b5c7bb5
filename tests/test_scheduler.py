"""The scheduler's warm runs, on every store: resumed without a log read, rebuilt by
replay when evicted, cancelled, or when the log moved on without them."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any

import pytest

import replaykit
from conftest import wait_for
from replaykit import All, Engine, Race, Recv, Sleep, Status, Step, workflow
from replaykit.log import Record, Value
from replaykit.stores import open_store
from replaykit.stores.base import Store

CALLS: dict[str, int] = {}
REPLAYING: list[bool] = []
LOCK = threading.Lock()


def bump(name: str) -> int:
    with LOCK:
        CALLS[name] = CALLS.get(name, 0) + 1
        return CALLS[name]


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    CALLS.clear()
    REPLAYING.clear()
    yield


class CountingStore:
    """Wraps a store's `load_log` and `load_runs` to count how often a run's log is read."""

    def __init__(self, store: Store) -> None:
        self.reads = 0
        self.records_read = 0
        original = store.load_log

        def load_log(workflow_id: str, *, since: int = 0) -> list[Record]:
            records = original(workflow_id, since=since)
            with LOCK:
                self.reads += 1
                self.records_read += len(records)
            return records

        store.load_log = load_log  # type: ignore[method-assign]
        # Runs woken together are read in a batch (runtime/cold.py): each run read
        # that way counts as a read of its log.
        load_runs = store.load_runs  # type: ignore[attr-defined]

        def load_runs_counted(workflow_ids: list[str]) -> list[Any]:
            runs = load_runs(workflow_ids)
            with LOCK:
                self.reads += len(runs)
                self.records_read += sum(len(run.log) for run in runs)
            return runs

        store.load_runs = load_runs_counted  # type: ignore[attr-defined]


def engine_on(url: str, **options: Any) -> tuple[Engine, CountingStore]:
    store = open_store(url)
    counter = CountingStore(store)
    return Engine(store, poll_interval=0.1, **options), counter


@workflow(name="sched.looper")
def looper(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("add", lambda i=i: bump("add") and i)
        REPLAYING.append(replaykit.context().is_replaying)
        yield Sleep(0.01)
    return total


def test_a_warm_run_wakes_without_reading_its_log(store_url: str) -> None:
    engine, counter = engine_on(store_url)
    with engine:
        assert engine.run(looper, 8, timeout=30) == sum(range(8))
    assert counter.reads == 0
    assert CALLS["add"] == 8
    assert REPLAYING == [False] * 8  # never replayed: the code between yields ran once


def test_without_a_cache_every_wake_up_replays(store_url: str) -> None:
    engine, counter = engine_on(store_url, max_cached_runs=0)
    with engine:
        assert engine.run(looper, 5, timeout=30) == sum(range(5))
    assert counter.reads == 5  # one replay per wake-up
    assert CALLS["add"] == 5  # replays ran no step body again
    assert REPLAYING.count(False) == 5


def test_evicted_runs_are_rebuilt_by_replay(store_url: str) -> None:
    engine, counter = engine_on(store_url, max_cached_runs=1)
    with engine:
        # All three wait at once (short sleeps could let each run finish before the
        # next suspends, on a loaded machine): one place, so two were evicted.
        handles = [engine.start(waiter, workflow_id=f"evict-{i}") for i in range(3)]
        wait_for(lambda: CALLS.get("first") == 3)
        assert engine.wait_idle(timeout=10)
        for i in range(3):
            engine.send(f"evict-{i}", i, topic="go")
        assert [h.result(timeout=30) for h in handles] == [f"got {i}" for i in range(3)]
    assert (CALLS["first"], CALLS["second"]) == (3, 3)  # replays ran no step body again
    assert counter.reads >= 2  # the evicted runs were rebuilt from their logs


@workflow(name="sched.waiter")
def waiter() -> Generator[Any, Any, str]:
    yield Step("first", lambda: bump("first"))
    message = yield Recv("go")
    yield Step("second", lambda: bump("second"))
    return f"got {message}"


def test_a_cancelled_warm_run_resumes_by_replay(store_url: str) -> None:
    engine, counter = engine_on(store_url)
    with engine:
        handle = engine.start(waiter, workflow_id="cancel-warm")
        wait_for(lambda: engine.scheduler.is_warm("cancel-warm"))
        engine.terminate("cancel-warm")
        assert not engine.scheduler.is_warm("cancel-warm")
        assert handle.status() is Status.CANCELLED
        engine.resume("cancel-warm")
        engine.send("cancel-warm", "now", topic="go")
        assert handle.result(timeout=30) == "got now"
    assert counter.reads >= 1
    assert CALLS == {"first": 1, "second": 1}


def test_a_warm_run_whose_log_moved_on_catches_up_from_the_store(store_url: str) -> None:
    engine, counter = engine_on(store_url)
    with engine:
        handle = engine.start(waiter, workflow_id="moved-on")
        wait_for(lambda: engine.scheduler.is_warm("moved-on"))
        # Another writer completes the Recv and the step after it behind this
        # engine's back (as a second process with the same executor id would).
        records = engine.steps("moved-on")
        pending = records[1]
        assert pending.outcome is None
        reads_before, records_before = counter.reads, counter.records_read
        now = engine.clock.now()
        store = engine.store
        store.record(
            "moved-on",
            Record(1, "recv", "go", Value("elsewhere"), pending.digest, "", now, now),
        )
        store.record("moved-on", Record(2, "step", "second", Value(7), "", "", now, now))
        engine.send("moved-on", "here", topic="go")
        assert handle.result(timeout=30) == "got elsewhere"
    # The warm run took the message, found position 1 completed by the other
    # writer, read the log from there on (not position 0 again) and replayed it: the
    # other writer's step is not run again.
    assert CALLS == {"first": 1}
    assert counter.reads == reads_before + 1
    assert counter.records_read == records_before + 2  # positions 1 and 2


@workflow(name="sched.finally")
def with_cleanup() -> Generator[Any, Any, str]:
    try:
        yield Sleep(timedelta(milliseconds=10))
        yield Sleep(timedelta(milliseconds=10))
    finally:
        bump("cleanup")
    return "done"


def test_finally_blocks_of_a_warm_run_run_once(store_url: str) -> None:
    engine, _counter = engine_on(store_url)
    with engine:
        assert engine.run(with_cleanup, timeout=30) == "done"
    assert CALLS == {"cleanup": 1}


def test_max_cached_runs_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="max_cached_runs"):
        Engine("memory://", max_cached_runs=-1)


GATE: dict[str, Any] = {}


async def gated(i: int) -> int:
    import asyncio

    gate = GATE.setdefault("event", asyncio.Event())
    GATE["waiting"] = GATE.get("waiting", 0) + 1
    await gate.wait()
    return i


async def flaky_async(key: str) -> str:
    if bump(key) < 3:
        raise ConnectionError("not yet")
    return "third time"


@workflow(name="sched.async")
def async_steps(i: int) -> Generator[Any, Any, list[Any]]:
    got = yield Step("gated", gated, i)
    again = yield Step("flaky", flaky_async, f"flaky-{i}", retry=replaykit.Retry(3, interval=0.01))
    return [got, again]


def test_async_steps_hold_no_thread_while_they_wait(store_url: str) -> None:
    GATE.clear()
    engine, _counter = engine_on(store_url)
    with engine:
        handles = [engine.start(async_steps, i, workflow_id=f"async-{i}") for i in range(40)]
        wait_for(lambda: GATE.get("waiting", 0) == 40)
        run_threads = [t for t in threading.enumerate() if t.name.startswith("replaykit-run")]
        # Forty steps are under way on the event loop; none of them holds a pool thread.
        assert len(run_threads) < 10
        loop = engine._runner.async_loop()
        loop.call_soon_threadsafe(GATE["event"].set)
        assert [h.result(timeout=30) for h in handles] == [[i, "third time"] for i in range(40)]
    assert all(CALLS[f"flaky-{i}"] == 3 for i in range(40))


@workflow(name="sched.three")
def three_steps() -> Generator[Any, Any, int]:
    total = 0
    for i in range(3):
        total += yield Step("add", lambda i=i: bump("add") and i)
    return total


def test_a_lone_runs_last_record_commits_with_its_finish(store_url: str) -> None:
    store = open_store(store_url)
    seen: list[str] = []
    record, finish = store.record, store.finish_workflow

    def counted_record(*args: Any, **kwargs: Any) -> Record:
        seen.append("record")
        return record(*args, **kwargs)

    def counted_finish(*args: Any, **kwargs: Any) -> bool:
        seen.append("finish+record" if kwargs.get("record") is not None else "finish")
        return finish(*args, **kwargs)

    store.record = counted_record  # type: ignore[method-assign]
    store.finish_workflow = counted_finish  # type: ignore[method-assign]
    with Engine(store, poll_interval=0.1) as engine:
        assert engine.run(three_steps, timeout=30) == 3
        assert [r.position for r in engine.steps(engine.list_workflows()[0].workflow_id)] == [
            0,
            1,
            2,
        ]
    # Three steps, three commits: the third record went with the finish.
    assert seen == ["record", "record", "finish+record"]


@workflow(name="sched.ten")
def ten_steps(k: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(10):
        total += yield Step("add", lambda i=i: i)
    return total + k


def test_runs_started_while_others_step_all_finish(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Starts land while the scheduler's own thread is inside a lone run's step or its
    # commit, so the scheduler is handed over mid-step again and again: every run
    # must still finish, each exactly once, with nothing left for a sweep to find
    # (the poll interval is far beyond the test's patience).
    caplog.set_level(logging.ERROR, logger="replaykit.engine")
    with Engine(store_url, poll_interval=60) as engine:
        handles = [engine.start(ten_steps, k, workflow_id=f"many-{k}") for k in range(60)]
        assert [h.result(timeout=20) for h in handles] == [45 + k for k in range(60)]
        for k in (0, 59):
            assert [r.position for r in engine.steps(f"many-{k}")] == list(range(10))
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@workflow(name="sched.nap")
def nap(seconds: float) -> Generator[Any, Any, str]:
    yield Step("before", lambda: bump("before"))
    yield Sleep(seconds)
    return "rested"


def test_runs_waiting_long_for_a_deadline_alone_are_not_kept_warm(store_url: str) -> None:
    from replaykit.runtime.warm import WARM_HORIZON

    engine, _counter = engine_on(store_url)
    with engine:
        engine.start(nap, WARM_HORIZON * 6, workflow_id="long-nap")
        engine.start(nap, 30.0, workflow_id="short-nap")
        wait_for(lambda: engine.scheduler.is_warm("short-nap"))
        wait_for(lambda: len(engine.steps("long-nap")) == 2)  # its Sleep is recorded
        engine.wait_idle(timeout=10)
        assert not engine.scheduler.is_warm("long-nap")
        assert engine.scheduler.is_warm("short-nap")


@workflow(name="sched.inbox")
def inbox(payload: str) -> Generator[Any, Any, str]:
    yield Step("read", lambda: bump("read"))
    message = yield Recv("go")
    return f"{len(payload)}:{message}"


def test_a_warm_run_keeps_no_inputs_no_times_and_one_effect(store_url: str) -> None:
    """What every warm run holds is paid 10,000 times over: its row without the
    arguments (they live in the generator) or times (nobody reads them from here),
    and the pending record of its wait beside the interpreter's own effect."""
    engine, counter = engine_on(store_url)
    with engine:
        engine.start(inbox, "x" * 5000, workflow_id="kept")
        wait_for(lambda: engine.scheduler.is_warm("kept"))
        warm = engine.scheduler.warm._runs["kept"]
        assert warm.row.inputs is None
        assert warm.row.created_at is warm.row.updated_at is warm.row.started_at is None
        assert warm.row.workflow_id == "kept" and warm.row.name == "sched.inbox"
        waiting = warm.interpreter.waiting
        assert waiting is not None and isinstance(waiting.command, Recv)
        assert warm.pending is not None and warm.pending.position == waiting.position
        effect = warm.effect()
        assert effect.pending is warm.pending and effect.position == waiting.position
        engine.send("kept", "hello", topic="go")
        assert engine.handle("kept").result(timeout=10) == "5000:hello"
    assert counter.reads == 0  # woken warm: no replay
    assert CALLS["read"] == 1


@workflow(name="sched.step-then-wait")
def step_then_wait(i: int) -> Generator[Any, Any, Any]:
    # The step finishes at once; the composite still waits for the message.
    return (yield All(Race(Recv("go"), Sleep(60)), Step("s", lambda: bump(f"step-{i}") and i)))


@workflow(name="sched.one-step")
def one_step() -> Generator[Any, Any, int]:
    return (yield Step("one", lambda: bump("one")))


def test_a_composite_whose_steps_finished_waits_holding_no_thread(store_url: str) -> None:
    # Two pool threads, four composites each waiting for a message after their step
    # finished: if a waiting composite kept its thread, the one-step run would wait
    # for the messages.
    engine, _counter = engine_on(store_url, max_workers=2)
    with engine:
        handles = [engine.start(step_then_wait, i, workflow_id=f"composite-{i}") for i in range(4)]
        wait_for(lambda: all(engine.scheduler.is_warm(f"composite-{i}") for i in range(4)))
        assert engine.run(one_step, workflow_id="not-stalled", timeout=5) == 1
        for i in range(4):
            engine.send(f"composite-{i}", f"go {i}", topic="go")
        results = [h.result(timeout=30) for h in handles]
    # The Race's outcome is [winner, value]; the All's is [race, step].
    assert results == [[[0, f"go {i}"], i] for i in range(4)]
    # The warm runs kept what their steps gave: no step ran twice.
    assert all(CALLS[f"step-{i}"] == 1 for i in range(4))


def test_a_composite_replayed_after_eviction_runs_its_finished_steps_again(
    store_url: str,
) -> None:
    # Evicted, the run is rebuilt from its log, which holds no record of the step
    # (the composite has not decided): the step runs again, as any step whose
    # record did not commit, and the result is the same.
    engine, counter = engine_on(store_url, max_cached_runs=1, max_workers=2)
    with engine:
        handles = [engine.start(step_then_wait, i, workflow_id=f"evicted-{i}") for i in range(3)]
        wait_for(lambda: all(CALLS.get(f"step-{i}") == 1 for i in range(3)))
        assert engine.wait_idle(timeout=10)
        for i in range(3):
            engine.send(f"evicted-{i}", i, topic="go")
        assert [h.result(timeout=30) for h in handles] == [[[0, i], i] for i in range(3)]
    assert counter.reads >= 2
    assert sorted(CALLS[f"step-{i}"] for i in range(3)) == [1, 2, 2]


GO = threading.Event()


def gated_step(i: int) -> int:
    bump("gated-waiting")
    GO.wait(timeout=20)
    return i


@workflow(name="sched.gated-then-two")
def gated_then_two(i: int) -> Generator[Any, Any, int]:
    first = yield Step("gated", gated_step, i)
    second = yield Step("plain", lambda: i)
    return first + second


def test_the_step_records_of_runs_side_by_side_share_a_commit(store_url: str) -> None:
    # Twenty runs' steps end together: the scheduler writes their records in shared
    # batches (one record_many, one commit), not one commit per record.
    GO.clear()
    store = open_store(store_url)
    batches: list[int] = []
    original = store.record_many

    def record_many(writes: Any) -> Any:
        with LOCK:
            batches.append(len(writes))
        return original(writes)

    store.record_many = record_many  # type: ignore[method-assign]
    with Engine(store, poll_interval=0.1, max_workers=32) as engine:
        handles = [engine.start(gated_then_two, i, workflow_id=f"side-{i}") for i in range(20)]
        wait_for(lambda: CALLS.get("gated-waiting") == 20)
        GO.set()
        assert [h.result(timeout=30) for h in handles] == [2 * i for i in range(20)]
        assert all(len(engine.steps(f"side-{i}")) == 2 for i in (0, 19))
    # Forty records in all: the last of each run may go with its finish instead.
    assert 20 <= sum(batches) <= 40
    assert max(batches) > 1
    assert len(batches) < sum(batches)


def test_a_composite_waiting_after_its_steps_survives_a_restart(store_url: str) -> None:
    if store_url.startswith("memory"):
        pytest.skip("a memory store does not outlive its engine")
    with Engine(store_url, poll_interval=0.1) as first:
        first.start(step_then_wait, 7, workflow_id="restarted")
        wait_for(lambda: first.scheduler.is_warm("restarted"))
        # Suspended, it wrote the composite's pending record: its start stays fixed.
        (pending,) = first.steps("restarted")
        assert pending.outcome is None and pending.started_at is not None
    with Engine(store_url, poll_interval=0.1) as second:  # it recovers the run on opening
        wait_for(lambda: CALLS.get("step-7") == 2)  # replayed: the step runs again
        wait_for(lambda: second.scheduler.is_warm("restarted"))
        second.send("restarted", "after", topic="go")
        assert second.handle("restarted").result(timeout=30) == [[0, "after"], 7]
        (record,) = second.steps("restarted")
        assert record.started_at == pending.started_at
    assert CALLS["step-7"] == 2  # warm again after the replay: the message ran nothing more


def slow_loser() -> str:
    # The first call outlasts the race; a call after it would be a loser run again.
    first = bump("slow-loser") == 1
    time.sleep(0.5 if first else 0.0)
    return "slow"


@workflow(name="sched.loser-then-waits")
def loser_then_waits() -> Generator[Any, Any, Any]:
    return (yield All(Race(Sleep(0.1), Step("slow", slow_loser)), Recv("a"), Recv("b")))


@workflow(name="sched.step-loser-then-waits")
def step_loser_then_waits() -> Generator[Any, Any, Any]:
    winner = Step("fast", lambda: bump("fast") and "fast")
    return (yield All(Race(winner, Step("slow", slow_loser)), Recv("a"), Recv("b")))


@pytest.mark.parametrize("wf", [loser_then_waits, step_loser_then_waits])
def test_a_step_that_lost_an_inner_race_does_not_run_again(store_url: str, wf: Any) -> None:
    # The composite suspends after its inner race is decided, and is looked at again
    # when each message comes: every later look sees the race decided (by the timer,
    # or by the sibling step it keeps) before it would run a step.
    engine, _counter = engine_on(store_url)
    with engine:
        handle = engine.start(wf, workflow_id="loser")
        wait_for(lambda: engine.scheduler.is_warm("loser"))
        engine.send("loser", 1, topic="a")
        time.sleep(0.6)  # several poll intervals, and past the first call's end
        engine.send("loser", 2, topic="b")
        winner = [0, None] if wf is loser_then_waits else [0, "fast"]
        assert handle.result(timeout=30) == [winner, 1, 2]
    assert CALLS.get("slow-loser", 0) <= 1
