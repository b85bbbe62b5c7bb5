"""Finished steps leave nothing for the garbage collector: no reference cycle per step.

Each cycle left behind survives the young collections while its run is in flight and
ends up in the oldest generation, which only the collector's full pass frees; that
pass holds the GIL for tens of milliseconds with a thousand runs in flight (the event
loop's lag, docs/asyncio.md). A cancel scope lives as long as its activation, so a
callback kept in it after its step ended held that step (its task, coroutine and
effect) in such a cycle, one per step.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import threading
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from replaykit import AsyncEngine, Engine, Step, workflow
from replaykit.runtime.host import CancelScope


async def add_one_async(i: int) -> int:
    await asyncio.sleep(0)
    return i + 1


def add_one(i: int) -> int:
    return i + 1


@workflow(name="nocycle-async-steps")
def async_steps(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("add-async", add_one_async, i)
    return total


@workflow(name="nocycle-sync-steps")
def sync_steps(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("add", add_one, i)
    return total


@pytest.fixture
def saved_garbage() -> Iterator[list[Any]]:
    """What the collector finds unreachable from here on, kept for the test to look at."""
    gc.collect()
    gc.garbage.clear()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _run_of(obj: Any) -> str | None:
    """The workflow id an object of the runtime belongs to, where it says."""
    for holder in (obj, getattr(obj, "activation", None), getattr(obj, "row", None)):
        workflow_id = getattr(holder, "workflow_id", None)
        if isinstance(workflow_id, str):
            return workflow_id
    return None


def _ours(garbage: list[Any], prefix: str) -> collections.Counter[str]:
    """replaykit's objects in the garbage that belong to this test's runs, by class.

    Only this test's runs count: garbage another test's engine leaves meanwhile
    (its threads may still be winding down in this process) is not this test's.
    """
    return collections.Counter(
        type(obj).__qualname__
        for obj in garbage
        if getattr(type(obj), "__module__", "").startswith("replaykit")
        and (_run_of(obj) or "").startswith(prefix)
    )


def test_async_steps_under_async_engine_leave_no_cycle(saved_garbage: list[Any]) -> None:
    async def main() -> None:
        async with AsyncEngine("memory://") as engine:
            handles = await asyncio.gather(
                *[engine.start(async_steps, 5, workflow_id=f"ac-{n}") for n in range(20)]
            )
            results = await asyncio.gather(*[handle.result(timeout=30) for handle in handles])
            assert results == [15] * 20
            gc.collect()
            assert _ours(saved_garbage, "ac-") == collections.Counter()

    asyncio.run(main())


@pytest.mark.parametrize("wf", [async_steps, sync_steps], ids=["async-bodies", "sync-bodies"])
def test_steps_under_the_sync_engine_leave_no_cycle(wf: Any, saved_garbage: list[Any]) -> None:
    tag = "async" if wf is async_steps else "sync"
    with Engine("memory://") as engine:
        handles = [engine.start(wf, 5, workflow_id=f"sc-{tag}-{n}") for n in range(20)]
        assert [handle.result(timeout=30) for handle in handles] == [15] * 20
        assert engine.run(wf, 5, workflow_id=f"sc-{tag}-alone", timeout=30) == 15
        gc.collect()
        assert _ours(saved_garbage, f"sc-{tag}-") == collections.Counter()


def test_a_discarded_callback_is_not_called_on_cancel() -> None:
    scope = CancelScope()
    called: list[str] = []
    kept, dropped = threading.Event(), threading.Event()
    scope.on_cancel(kept.set)
    scope.on_cancel(dropped.set)
    scope.on_cancel(lambda: called.append("lambda"))
    scope.discard(dropped.set)
    scope.discard(dropped.set)  # already gone: nothing to do, no error
    scope.cancel()
    assert kept.is_set()
    assert not dropped.is_set()
    assert called == ["lambda"]


def test_a_cancelled_child_scope_leaves_its_parent() -> None:
    parent = CancelScope()
    child = CancelScope(parent)
    child_cancelled = threading.Event()
    child.on_cancel(child_cancelled.set)
    child.cancel()
    assert child_cancelled.is_set()
    assert parent._callbacks == []  # it would otherwise keep the child alive
    parent.cancel()  # and cancelling the parent still works
    assert parent.cancelled


def test_cancelling_a_parent_still_cancels_its_children() -> None:
    parent = CancelScope()
    children = [CancelScope(parent) for _ in range(3)]
    parent.cancel()
    assert all(child.cancelled for child in children)
    assert parent._callbacks == []
