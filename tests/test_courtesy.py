"""The engine's threads step aside for an application's event loop (runtime/courtesy.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Sequence
from typing import Any

import pytest

from replaykit import AsyncEngine, Engine, Step, workflow
from replaykit.log import Record
from replaykit.runtime import courtesy as courtesy_module
from replaykit.runtime.courtesy import Courtesy
from replaykit.runtime.group_commit import COMMIT_PART
from replaykit.stores.base import RecordWrite
from replaykit.stores.memory import MemoryStore


class CountedSleeps:
    def __init__(self) -> None:
        self.pauses: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.pauses.append(seconds)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> CountedSleeps:
    counted = CountedSleeps()
    monkeypatch.setattr(courtesy_module, "sleep", counted)
    return counted


def test_no_pause_before_the_work_is_done(sleeps: CountedSleeps) -> None:
    courtesy = Courtesy(60.0)
    for _ in range(1000):
        courtesy()
    assert sleeps.pauses == []


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_pause_after_each_stretch_of_work(
    sleeps: CountedSleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    monkeypatch.setattr(courtesy_module, "perf_counter", clock)
    courtesy = Courtesy(0.002)
    clock.now += 0.0019
    courtesy()
    assert sleeps.pauses == []  # not yet 2 ms of work
    clock.now += 0.0002
    courtesy()
    assert sleeps.pauses == [courtesy_module.PAUSE]  # 2.1 ms: a pause
    courtesy()
    assert len(sleeps.pauses) == 1  # the stretch starts again after the pause
    clock.now += 0.05
    courtesy()
    assert len(sleeps.pauses) == 2  # a long stretch costs one pause, not many


def test_a_stretch_starts_again_after_a_wait(
    sleeps: CountedSleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    monkeypatch.setattr(courtesy_module, "perf_counter", clock)
    courtesy = Courtesy(0.002)
    clock.now += 0.5  # a long wait for work, then work
    courtesy.rested()
    clock.now += 0.001
    courtesy()
    assert sleeps.pauses == []  # 1 ms of work since the wait: no pause yet
    clock.now += 0.0015
    courtesy()
    assert len(sleeps.pauses) == 1


def test_none_never_pauses(sleeps: CountedSleeps) -> None:
    courtesy = Courtesy(None)
    assert not courtesy.active
    ends = time.perf_counter() + 0.01
    while time.perf_counter() < ends:
        courtesy()
    assert sleeps.pauses == []


@pytest.mark.parametrize("work", [0, -1.0])
def test_work_must_be_positive(work: float) -> None:
    with pytest.raises(ValueError, match="positive number of seconds or None"):
        Courtesy(work)


def slow_body(i: int) -> int:
    return i + 1


@workflow
def counted_steps(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step(f"s{i}", slow_body, i)
    return total


def test_a_sync_engine_serving_no_loop_never_pauses(tmp_path: Any, sleeps: CountedSleeps) -> None:
    with Engine(f"sqlite:///{tmp_path / 'a.db'}") as engine:
        assert not engine.courtesy.active
        assert engine.run(counted_steps, 50, workflow_id="plain") == sum(range(1, 51))
    assert sleeps.pauses == []


def test_an_async_engine_has_its_threads_step_aside(
    tmp_path: Any, sleeps: CountedSleeps, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every call pauses: the scheduler's thread and the batch of starts both call it.
    monkeypatch.setattr(courtesy_module, "WORK", 1e-9)

    async def main() -> list[int]:
        async with AsyncEngine(f"sqlite:///{tmp_path / 'b.db'}") as engine:
            assert engine.engine.courtesy.active
            handles = await asyncio.gather(
                *(engine.start(counted_steps, 5, workflow_id=f"c-{i}") for i in range(20))
            )
            return list(await asyncio.gather(*(handle.result() for handle in handles)))

    assert asyncio.run(asyncio.wait_for(main(), 60)) == [sum(range(1, 6))] * 20
    # Twenty runs of five steps went through the scheduler's thread: many events.
    assert len(sleeps.pauses) >= 100


class BatchSizes(MemoryStore):
    """A memory store that notes how many step records each batch carried."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        self.sizes.append(len(writes))
        return super().record_many(writes)


def test_serving_a_loop_the_scheduler_commits_a_crowded_round_in_parts() -> None:
    store = BatchSizes()
    runs = 3 * COMMIT_PART

    async def main() -> list[int]:
        async with AsyncEngine(store) as engine:
            handles = await asyncio.gather(
                *(engine.start(counted_steps, 4, workflow_id=f"p-{i}") for i in range(runs))
            )
            return list(await asyncio.gather(*(handle.result() for handle in handles)))

    assert asyncio.run(asyncio.wait_for(main(), 60)) == [sum(range(1, 5))] * runs
    # Rounds were crowded (parts came full), and none went over.
    assert COMMIT_PART in store.sizes
    assert max(store.sizes) <= COMMIT_PART
