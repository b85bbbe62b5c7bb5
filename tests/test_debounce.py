"""Debounce: `engine.debounce(key, period, wf, *args)` starts `wf` once the key has been
quiet for `period`, with the last arguments; `max_wait` bounds a window; a restart
neither loses a debounced start nor makes it twice (runtime/debounce.py).

On every store, on both engine faces, in the testing kit on virtual time (with a
determinism check that crashes the debouncer at each of its commits), and bad input.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    AsyncClient,
    AsyncEngine,
    Client,
    Engine,
    MemoryStore,
    Status,
    Step,
    VirtualClock,
    WorkflowNotFound,
    workflow,
)
from replaykit.errors import UnknownWorkflowError
from replaykit.runtime.debounce import (
    DEBOUNCE_UPDATE,
    DEBOUNCER_NAME,
    debouncer,
    debouncer_id,
)
from replaykit.testing import Update, check_determinism, run

_calls: list[list[Any]] = []
_lock = threading.Lock()


def _note(args: list[Any]) -> list[Any]:
    with _lock:
        _calls.append(args)
    return args


@workflow(name="debounce.target")
def target(n: int, tag: str = "t") -> Generator[Any, Any, list[Any]]:
    noted: list[Any] = yield Step("note", _note, [n, tag])
    return noted


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    with _lock:
        _calls.clear()


def _calls_of(n: int) -> list[list[Any]]:
    with _lock:
        return [c for c in _calls if c[0] == n]


def _result(engine: Engine, workflow_id: str, timeout: float = 20.0) -> Any:
    """The debounced run's result: it exists once its window closed."""

    def exists() -> bool:
        try:
            engine.handle(workflow_id)
        except WorkflowNotFound:
            return False
        return True

    wait_for(exists, timeout=timeout)
    return engine.handle(workflow_id).result(timeout=timeout)


def _targets(engine: Engine) -> list[str]:
    return sorted(r.workflow_id for r in engine.list_workflows(name="debounce.target"))


def _virtual() -> VirtualClock:
    """A clock that moves only when the test says: a window closes when the test
    moves past its period, however slow the machine is."""
    return VirtualClock(datetime(2030, 1, 1, tzinfo=UTC), autojump=False)


def _quiet(
    clock: VirtualClock, seconds: float, engine: Engine | None = None, key: str = ""
) -> None:
    """Move the clock on; first, with an engine, wait until the key's debouncer waits for
    its next call (its timer counts from when it began to wait)."""
    if engine is not None:

        def waiting() -> bool:
            log = engine.store.load_log(debouncer_id(key))
            return bool(log) and log[-1].kind == "receive_update" and log[-1].outcome is None

        wait_for(waiting, f"the debouncer of {key!r} waits")
    clock.advance(timedelta(seconds=seconds))


def test_calls_within_the_period_start_one_run_with_the_last_arguments(store_url: str) -> None:
    clock = _virtual()
    with Engine(store_url, clock=clock, poll_interval=0.05) as engine:
        ids = [engine.debounce("k", 10, target, n, tag=f"call-{n}") for n in range(4)]
        assert len(set(ids)) == 1
        time.sleep(0.3)
        assert _targets(engine) == []  # the key has not been quiet for 10 s yet
        _quiet(clock, 11, engine, "k")
        assert _result(engine, ids[0]) == [3, "call-3"]
        _quiet(clock, 30)
        time.sleep(0.3)
        assert _targets(engine) == [ids[0]]  # one start for the window
        assert [c[0] for c in _calls] == [3]
        # The next call opens a new window, under a new id.
        later = engine.debounce("k", 10, target, 9)
        assert later != ids[0]
        _quiet(clock, 11, engine, "k")
        assert _result(engine, later) == [9, "t"]
        assert _targets(engine) == sorted([ids[0], later])
        # Other keys are other windows, run by their own debouncers.
        other = engine.debounce("other", 10, target, 10)
        assert other not in (ids[0], later)
        _quiet(clock, 11, engine, "other")
        assert _result(engine, other) == [10, "t"]
        assert engine.handle(debouncer_id("k")).row().name == DEBOUNCER_NAME


def test_max_wait_starts_the_run_while_calls_keep_coming(store_url: str) -> None:
    clock = _virtual()
    with Engine(store_url, clock=clock, poll_interval=0.05) as engine:
        first = engine.debounce("busy", 10, target, 0, max_wait=25)
        # A call every 4 s never leaves the key quiet for 10 s: max_wait ends the
        # window 25 s after its first call, with the last call by then (at 24 s).
        for n in range(1, 7):
            _quiet(clock, 4, engine, "busy")
            assert engine.debounce("busy", 10, target, n, max_wait=25) == first
        time.sleep(0.3)
        assert _targets(engine) == []
        _quiet(clock, 2, engine, "busy")  # 26 s after the first call
        assert _result(engine, first) == [6, "t"]
        # The next call opens the next window.
        assert engine.debounce("busy", 10, target, 7, max_wait=25) != first


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_restart_neither_loses_the_start_nor_makes_it_twice(store_url: str) -> None:
    first = Engine(store_url, poll_interval=0.1)
    try:
        debounced = [first.debounce("restart", 1.0, target, n) for n in (41, 42)]
    finally:
        first.close()
    assert _calls == []  # the window had not closed
    with Engine(store_url, poll_interval=0.1) as second:
        assert _result(second, debounced[0]) == [42, "t"]
        time.sleep(1.2)
        assert _targets(second) == [debounced[0]]
        assert _calls_of(42) == [[42, "t"]] and _calls_of(41) == []
        # The debouncer waits for the key's next window, having started one run.
        row = second.handle(debouncer_id("restart")).row()
        assert row.status is Status.PENDING


def test_the_async_engine_debounces_too(store_url: str) -> None:
    clock = _virtual()

    async def main() -> Any:
        async with AsyncEngine(store_url, clock=clock, poll_interval=0.05) as engine:
            ids = [await engine.debounce("async", 10, target, n) for n in (1, 2)]
            assert ids[0] == ids[1]
            _quiet(clock, 11, engine.engine, "async")
            return await _async_result(engine, ids[0])

    assert asyncio.run(main()) == [2, "t"]


async def _async_result(engine: AsyncEngine, workflow_id: str) -> Any:
    deadline = time.monotonic() + 20
    while True:
        try:
            handle = engine.handle(workflow_id)
            return await handle.result(timeout=20)
        except WorkflowNotFound:
            assert time.monotonic() < deadline, f"{workflow_id!r} never started"
            await asyncio.sleep(0.05)


def test_clients_debounce_for_the_engine_that_runs_the_key(store_url: str) -> None:
    shared: Any = MemoryStore() if store_url.startswith("memory") else store_url
    version = "debounce-v1"
    clock = _virtual()
    engine = Engine(
        shared, app_version=version, executor_id="deb-worker", poll_interval=0.05, clock=clock
    )
    stop = threading.Event()
    server = threading.Thread(target=lambda: engine.serve(stop=stop), daemon=True)
    server.start()
    try:
        with Client(shared, app_version=version, executor_id="deb-worker") as client:
            ids = {client.debounce("client", 10, "debounce.target", n, tag="c") for n in (5, 6)}
            assert len(ids) == 1
            (debounced,) = ids
            _quiet(clock, 11, engine, "client")
            assert _result(engine, debounced) == [6, "c"]

            async def from_a_coroutine() -> str:
                async with AsyncClient(
                    shared, app_version=version, executor_id="deb-worker"
                ) as aclient:
                    return await aclient.debounce("client", 10, "debounce.target", 7)

            later = asyncio.run(from_a_coroutine())
            assert later != debounced
            _quiet(clock, 11, engine, "client")
            assert _result(engine, later) == [7, "t"]
    finally:
        stop.set()
        server.join(timeout=20)


@pytest.mark.parametrize(
    ("key", "period", "options", "error", "says"),
    [
        ("", 1.0, {}, TypeError, "non-empty str"),
        (7, 1.0, {}, TypeError, "non-empty str"),
        ("k", 0, {}, ValueError, "positive"),
        ("k", -1, {}, ValueError, "zero or positive"),
        ("k", math.nan, {}, ValueError, "zero or positive"),
        ("k", "soon", {}, TypeError, "timedelta or a number"),
        ("k", 5.0, {"max_wait": 1.0}, ValueError, "shorter than period"),
        ("k", 1.0, {"max_wait": 0}, ValueError, "positive"),
        ("k", 1.0, {"workflow_id": "mine"}, TypeError, "workflow_id would be an option"),
    ],
)
def test_bad_input_is_refused_before_anything_is_sent(
    key: Any, period: Any, options: dict[str, Any], error: type[Exception], says: str
) -> None:
    with Engine("memory://") as engine:
        with pytest.raises(error, match=says):
            engine.debounce(key, period, target, 1, **options)
        assert engine.list_workflows() == []


def test_a_workflow_that_is_not_one_is_refused() -> None:
    with Engine("memory://") as engine:
        with pytest.raises(TypeError, match="decorated with @workflow"):
            engine.debounce("k", 1.0, lambda: None)  # type: ignore[arg-type]
        with pytest.raises(UnknownWorkflowError):
            engine.debounce("k", 1.0, "no.such.workflow")  # type: ignore[arg-type]
        assert engine.list_workflows() == []


def _call(n: int, period: float, *, at: float, max_wait: float | None = None) -> Update:
    return Update(
        DEBOUNCE_UPDATE, "debounce.target", [n], {}, period, max_wait, at=timedelta(seconds=at)
    )


def _noted(result: Any) -> list[Any]:
    """What each debounced run's step was called with, in order."""
    return [call.args[0] for call in result.calls.get("note", [])]


def test_windows_on_virtual_time_in_the_testing_kit() -> None:
    calls = [_call(1, 10, at=0), _call(2, 10, at=5), _call(3, 10, at=30), _call(4, 10, at=70)]
    result = run(debouncer, "kit", updates=calls, steps={"note": lambda args: args})
    assert result.status is Status.PENDING  # waiting for the key's next window
    assert len(result.generations) == 3
    assert {update_id: reply.value for update_id, reply in result.replies.items()} == {
        "update-0": "kit:debounced:0",
        "update-1": "kit:debounced:0",
        "update-2": "kit:debounced:1",
        "update-3": "kit:debounced:2",
    }
    # Each window started one run with its last call's arguments.
    assert _noted(result) == [[2, "t"], [3, "t"], [4, "t"]]


def test_max_wait_on_virtual_time() -> None:
    calls = [_call(n, 10, at=n * 4, max_wait=25) for n in range(10)]
    result = run(debouncer, "capped", updates=calls, steps={"note": lambda args: args})
    # Calls every 4 s keep the key busy; the first window ends 25 s after its first
    # call, with the last call that came by then (at 24 s); the second holds the rest.
    assert _noted(result) == [[6, "t"], [9, "t"]]


def test_the_debouncer_is_deterministic_through_crashes_at_every_commit() -> None:
    calls = [_call(1, 10, at=0), _call(2, 10, at=5), _call(3, 10, at=30)]
    check_determinism(debouncer, "det", updates=calls, steps={"note": lambda args: args})
