"""AsyncEngine: the asyncio face of the runtime, on every store.

Each test drives its coroutine with `asyncio.run`, the way an application's
entry point does; no plugin is needed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from replaykit import (
    All,
    AsyncEngine,
    AwaitedWorkflowCancelled,
    Engine,
    Queue,
    QueueItem,
    Recv,
    SetEvent,
    Sleep,
    Status,
    Step,
    WorkflowNotFound,
    workflow,
)
from replaykit.errors import WorkflowTimeout
from replaykit.runtime import aio

T = TypeVar("T")

# What belongs to the application's loop, set by each test's coroutine.
APP: dict[str, Any] = {}


def run(main: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(main(), 60))  # type: ignore[arg-type]


async def uses_the_app_loop(value: int) -> int:
    # A future made on the application's loop can only be awaited on that loop:
    # on any other it raises "attached to a different loop".
    future = APP["loop"].create_future()
    APP["loop"].call_later(0.001, future.set_result, value * 10)
    async with APP["lock"]:
        return await future  # type: ignore[no-any-return]


def where_am_i() -> str:
    return threading.current_thread().name


@workflow
def app_loop_flow(n: int):
    a = yield Step("on-loop", uses_the_app_loop, n)
    b = yield Step("blocking", where_am_i)
    c = yield All(Step("x", uses_the_app_loop, 1), Step("y", uses_the_app_loop, 2))
    return [a, b, list(c)]


def test_async_steps_run_on_the_applications_loop_and_sync_ones_off_it(store_url: str) -> None:
    async def main() -> list[Any]:
        APP["loop"] = asyncio.get_running_loop()
        APP["lock"] = asyncio.Lock()
        loop_thread = threading.current_thread().name
        async with AsyncEngine(store_url) as engine:
            result = await engine.run(app_loop_flow, 4, timeout=30)
            assert result[1] != loop_thread  # a sync body never runs on the loop
            return result

    result = run(main)
    assert result[0] == 40
    assert result[2] == [10, 20]


@workflow
def waits_for_go(tag: str):
    yield Step("first", where_am_i)
    message = yield Recv("go")
    return f"{tag}:{message}"


def test_messages_results_and_status(store_url: str) -> None:
    async def main() -> None:
        async with AsyncEngine(store_url) as engine:
            handle = await engine.start(waits_for_go, "a", workflow_id="w1")
            assert handle.workflow_id == "w1"
            with pytest.raises(WorkflowTimeout, match="w1"):
                await handle.result(timeout=0.3)
            assert await handle.status() is Status.PENDING
            assert await engine.send("w1", "hello", "go", idempotency_key="k")
            assert not await engine.send("w1", "again", "go", idempotency_key="k")
            assert await handle.result(timeout=30) == "a:hello"
            assert await engine.handle("w1").status() is Status.SUCCESS
            records = await engine.steps("w1")
            assert [r.name for r in records] == ["first", "go"]
            listed = await engine.list_workflows(status="SUCCESS")
            assert [row.workflow_id for row in listed] == ["w1"]
            # Idempotent start by id: the same run comes back.
            again = await engine.start(waits_for_go, "a", workflow_id="w1")
            assert await again.result(timeout=5) == "a:hello"

    run(main)


def test_an_unknown_id_is_reported_on_use() -> None:
    async def main() -> None:
        async with AsyncEngine("memory://") as engine:
            handle = engine.handle("nope")
            with pytest.raises(WorkflowNotFound, match="nope"):
                await handle.status()
            with pytest.raises(WorkflowNotFound, match="nope"):
                await handle.result(timeout=1)

    run(main)


def test_cancelling_the_awaiting_task_cancels_the_wait_not_the_run(store_url: str) -> None:
    async def main() -> None:
        async with AsyncEngine(store_url) as engine:
            handle = await engine.start(waits_for_go, "c", workflow_id="c1")
            waiter = asyncio.create_task(handle.result())
            await asyncio.sleep(0.2)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            assert await handle.status() is Status.PENDING
            await engine.send("c1", "still here", "go")
            assert await handle.result(timeout=30) == "c:still here"

            # engine.cancel cancels the run itself; a waiter hears it.
            other = await engine.start(waits_for_go, "d", workflow_id="c2")
            waiter = asyncio.create_task(other.result(timeout=30))
            await asyncio.sleep(0.1)
            assert await engine.terminate("c2")
            with pytest.raises(AwaitedWorkflowCancelled, match="c2"):
                await waiter
            assert await other.status() is Status.CANCELLED
            resumed = await engine.resume("c2")
            await engine.send("c2", "back", "go")
            assert await resumed.result(timeout=30) == "d:back"

    run(main)


def test_the_loop_stays_free_while_runs_wait_and_work(store_url: str) -> None:
    """Nothing the engine does blocks the loop for long: a ticker keeps ticking."""

    async def main() -> tuple[int, int]:
        async with AsyncEngine(store_url) as engine:
            ticks = 0
            stop = asyncio.Event()

            async def ticker() -> None:
                nonlocal ticks
                while not stop.is_set():
                    await asyncio.sleep(0.005)
                    ticks += 1

            task = asyncio.create_task(ticker())
            handles = await asyncio.gather(
                *(engine.start(waits_for_go, str(i), workflow_id=f"t{i}") for i in range(20))
            )
            for i in range(20):
                await engine.send(f"t{i}", i, "go")
            results = await asyncio.gather(*(h.result(timeout=30) for h in handles))
            assert results == [f"{i}:{i}" for i in range(20)]
            started = time.monotonic()
            # While every run waits (none here), a blocking wait would starve the ticker.
            late = await engine.start(waits_for_go, "late", workflow_id="late")
            with pytest.raises(WorkflowTimeout):
                await late.result(timeout=0.5)
            waited = time.monotonic() - started
            stop.set()
            await task
            return ticks, int(waited / 0.005)

    ticks, possible = run(main)
    # Generous: only a loop blocked for most of the wait would tick this rarely.
    assert ticks >= possible // 4


def test_runs_that_finish_together_wake_every_waiter_a_few_at_a_time(store_url: str) -> None:
    """Hundreds of runs ending together: each waiter hears of its own run (its own
    look is minutes away), and no turn of the loop wakes more than a chunk of them."""
    runs = 3 * aio.WAKE_CHUNK + 5

    async def main() -> tuple[list[str], list[int]]:
        async with AsyncEngine(store_url, poll_interval=60.0) as engine:
            handles = await asyncio.gather(
                *(engine.start(waits_for_go, str(i), workflow_id=f"w{i}") for i in range(runs))
            )
            assert await engine.wait_idle(30)
            waiting = asyncio.gather(*(h.result(timeout=60) for h in handles))
            settled_per_turn: list[int] = []
            wake = engine._wake_finish_waiters

            def settled() -> int:
                rounds = engine._finish_waiters.values()
                return sum(future.done() for futures in rounds for future in futures)

            def counted_wake() -> None:
                before = settled()
                wake()
                settled_per_turn.append(settled() - before)

            engine._wake_finish_waiters = counted_wake  # type: ignore[method-assign]
            await asyncio.gather(*(engine.send(f"w{i}", i, "go") for i in range(runs)))
            return await waiting, settled_per_turn

    results, settled_per_turn = run(main)
    assert results == [f"{i}:{i}" for i in range(runs)]
    # A run's finish may be heard twice (the scheduler's note and the store's): its
    # waiter, already reading the row, is then told once more.
    assert sum(settled_per_turn) >= runs
    assert max(settled_per_turn) <= aio.WAKE_CHUNK


@workflow
def sleeps_then_finishes(n: int):
    yield Step("before", where_am_i)
    yield Sleep(3600)
    return n


def test_sleeping_runs_hold_no_task_and_no_thread() -> None:
    async def main() -> None:
        pools = {"io_workers": 4, "max_workers": 8, "step_workers": 4}
        async with AsyncEngine("memory://", **pools) as engine:
            await engine.start(sleeps_then_finishes, -1)
            assert await engine.wait_idle(30)
            tasks, threads = len(asyncio.all_tasks()), threading.active_count()
            await asyncio.gather(*(engine.start(sleeps_then_finishes, i) for i in range(300)))
            assert await engine.wait_idle(30)
            sleeping = await engine.list_workflows(status="PENDING")
            assert len(sleeping) == 301
            # Not one per run: the same tasks as with one sleeper, and no more
            # threads than the engine's bounded pools may have started meanwhile.
            assert len(asyncio.all_tasks()) <= tasks
            assert threading.active_count() <= threads + sum(pools.values())

    run(main)


def test_a_run_started_by_one_face_is_finished_by_the_other(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'faces.db'}"

    async def start_async() -> None:
        async with AsyncEngine(url) as engine:
            await engine.start(waits_for_go, "from-async", workflow_id="f1")
            await asyncio.sleep(0.2)

    run(start_async)
    with Engine(url) as sync_engine:
        sync_engine.send("f1", "sync", "go")
        assert sync_engine.handle("f1").result(timeout=30) == "from-async:sync"
        sync_engine.start(waits_for_go, "from-sync", workflow_id="f2")

    async def finish_async() -> str:
        async with AsyncEngine(url) as engine:
            await engine.send("f2", "async", "go")
            return await engine.handle("f2").result(timeout=30)  # type: ignore[no-any-return]

    assert run(finish_async) == "from-sync:async"


COMMITTED: list[str] = []


async def slow_on_the_loop(tag: str) -> str:
    await asyncio.sleep(0.4)
    COMMITTED.append(tag)
    return tag


@workflow
def slow_then_wait(tag: str):
    value = yield Step("slow", slow_on_the_loop, tag)
    yield Recv("never")
    return value


def test_closing_lets_a_running_async_step_finish_and_commit(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'close.db'}"
    COMMITTED.clear()

    async def main() -> None:
        async with AsyncEngine(url) as engine:
            await engine.start(slow_then_wait, "s", workflow_id="s1")
            await asyncio.sleep(0.1)  # the step is under way when the engine closes

    run(main)
    assert COMMITTED == ["s"]
    with Engine(url, recover=False) as engine:
        records = engine.steps("s1")
        assert [(r.name, r.outcome.data) for r in records] == [("slow", "s")]  # type: ignore[union-attr]


@workflow
def publishes(value: int):
    yield SetEvent("progress", value)
    yield Recv("done")
    return value


JOBS = Queue("aio-jobs")


def test_events_queues_and_forks(store_url: str) -> None:
    async def main() -> None:
        async with AsyncEngine(store_url, queues=[JOBS]) as engine:
            handle = await engine.start(publishes, 7, workflow_id="e1")
            assert await engine.get_event("e1", "progress", timeout=30) == 7
            assert await engine.get_event("e1", "missing", timeout=0.2) is None
            await engine.send("e1", None, "done")
            assert await handle.result(timeout=30) == 7

            queued = await engine.enqueue_many(JOBS, sleeps_then_finishes, [(1,), (2,)])
            one = await engine.enqueue(JOBS, publishes, 3)
            assert len(queued) == 2
            kept = await engine.enqueue(JOBS, sleeps_then_finishes, 4, dedup_id="aio-d")
            again = await engine.enqueue_many(
                JOBS,
                sleeps_then_finishes,
                [QueueItem(4, dedup_id="aio-d")],
                if_exists="return",
            )
            assert [h.workflow_id for h in again] == [kept.workflow_id]
            assert await engine.get_event(one.workflow_id, "progress", timeout=30) == 3

            fork = await engine.fork("e1", 1, workflow_id="e1-fork")
            await engine.send("e1-fork", None, "done")
            assert await fork.result(timeout=30) == 7
            assert [r.name for r in await engine.steps("e1-fork")] == ["progress", "done"]
            log = await engine.export_log("e1")
            assert log.workflow_id == "e1"

    run(main)


def test_misuse_says_what_to_do() -> None:
    engine = AsyncEngine("memory://")
    with pytest.raises(RuntimeError, match="async with AsyncEngine"):
        engine.handle("x")
    with pytest.raises(TypeError, match="step_loop"):
        AsyncEngine("memory://", step_loop=None)

    async def open_here() -> AsyncEngine:
        return await AsyncEngine("memory://").open()

    opened = run(open_here)

    async def use_elsewhere() -> None:
        await opened.list_workflows()

    # A loop of its own: the engine belongs to the one it was opened on (now closed).
    with pytest.raises(RuntimeError, match="another event loop"):
        run(use_elsewhere)
    opened.engine.close()


async def hangs_on_the_loop() -> str:
    await asyncio.sleep(3600)
    return "never"


@workflow
def hung_step() -> Any:
    value = yield Step("hung", hangs_on_the_loop)
    return value


def test_close_with_a_timeout_cancels_a_step_that_does_not_end(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'hung.db'}"

    async def main() -> float:
        engine = await AsyncEngine(url).open()
        await engine.start(hung_step, workflow_id="hung")
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await engine.close(timeout=0.3)
        took = time.monotonic() - started
        with pytest.raises(RuntimeError, match="closed; create a new one"):
            await engine.open()  # a closed engine does not open again
        return took

    took = run(main)
    assert took < 10  # not the hour the step would take
    with Engine(url, recover=False) as engine:
        assert engine.steps("hung") == []  # the cancelled attempt recorded nothing
        assert engine.handle("hung").status() is Status.PENDING  # recovery runs it again


def test_concurrent_starts_share_a_statement_and_fail_alone(store_url: str) -> None:
    """A gather of starts goes to the store as one batch; a start the store or the
    engine refuses fails its own caller, and the others start."""
    from replaykit.stores import open_store

    store = open_store(store_url)
    batches: list[int] = []
    create_workflows = store.create_workflows

    def counted(rows: Any) -> Any:
        batches.append(len(rows))
        return create_workflows(rows)

    store.create_workflows = counted  # type: ignore[method-assign]

    async def main() -> list[Any]:
        async with AsyncEngine(store) as engine:
            answers = await asyncio.gather(
                *(engine.start(waits_for_go, str(i), workflow_id=f"b{i}") for i in range(50)),
                engine.start(waits_for_go, "again", workflow_id="b0"),  # the same id: that run
                engine.start(waits_for_go, "long", workflow_id="x" * 5000),  # refused
                engine.start(where_am_i, workflow_id="not-a-workflow"),  # type: ignore[arg-type]
                return_exceptions=True,
            )
            for i in range(50):
                await engine.send(f"b{i}", "go", "go")
            results = await asyncio.gather(*(engine.handle(f"b{i}").result(30) for i in range(50)))
            assert results == [f"{i}:go" for i in range(50)]
            return answers

    answers = run(main)
    assert [a.workflow_id for a in answers[:51]] == [f"b{i}" for i in range(50)] + ["b0"]
    assert isinstance(answers[51], ValueError) and "5,000 bytes" in str(answers[51])
    assert isinstance(answers[52], TypeError) and "@workflow" in str(answers[52])
    assert batches[0] == 52  # one statement for the gathered starts (the refused one too)


def test_a_waiter_hears_of_a_run_cancelled_elsewhere(tmp_path: Any) -> None:
    """A run this engine tracks, cancelled through another handle on its database (the
    CLI, another process: no notification reaches this engine), is found by the
    waiter's next round, not only at its deadline."""
    from replaykit.runtime import admin
    from replaykit.stores.sqlite import SqliteStore

    path = tmp_path / "elsewhere.db"

    async def main() -> float:
        async with AsyncEngine(f"sqlite:///{path}", poll_interval=0.1) as engine:
            handle = await engine.start(waits_for_go, "x", workflow_id="elsewhere")
            assert await engine.wait_idle(10)
            other = SqliteStore(str(path))
            admin.cancel_run(other, "elsewhere")
            other.close()
            started = time.monotonic()
            with pytest.raises(AwaitedWorkflowCancelled):
                await handle.result(timeout=20)
            return time.monotonic() - started

    assert run(main) < 10  # a few rounds of 5 poll intervals, not the deadline


def sleeps_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@workflow
def one_slow_sync_step(seconds: float) -> Any:
    value = yield Step("slow", sleeps_for, seconds)
    return value


async def answers_at_once() -> int:
    return 1


@workflow
def one_quick_async_step() -> Any:
    value = yield Step("quick", answers_at_once)
    return value


def test_long_sync_steps_filling_the_pool_do_not_hold_up_other_runs() -> None:
    """The review of this session's changes: reading, finishing and posting runs shared
    one pool with step bodies, so a run of one instant async step waited seconds
    behind sync bodies that filled the pool."""

    async def main() -> float:
        async with AsyncEngine("memory://", max_workers=2, poll_interval=0.2) as engine:
            for i in range(4):
                await engine.start(one_slow_sync_step, 2.0, workflow_id=f"slow-{i}")
            await asyncio.sleep(0.3)  # both of the pool's threads are in sync bodies now
            started = time.monotonic()
            handle = await engine.start(one_quick_async_step, workflow_id="quick")
            assert await handle.result(timeout=30) == 1
            return time.monotonic() - started

    assert run(main) < 1.0
