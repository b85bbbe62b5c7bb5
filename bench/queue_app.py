"""The application `bench.bench_queues` drains with `replaykit worker` processes."""

from __future__ import annotations

import time
from collections.abc import Generator
from datetime import datetime
from typing import Any

from replaykit import Now, Queue, Sleep, Step, workflow

drain = Queue("bench-drain")
# bench.bench_fleet: runs of several steps each, and runs that sleep until one instant.
fleet = Queue("bench-fleet")
sleepers = Queue("bench-sleepers")


def one(i: int) -> int:
    return i


@workflow(name="bench-one-step")
def one_step(i: int) -> Generator[Any, Any, int]:
    value: int = yield Step("one", one, i)
    return value


@workflow(name="bench-steps")
def steps(i: int, count: int) -> Generator[Any, Any, int]:
    total = 0
    for n in range(count):
        total += yield Step(f"s{n}", one, i)
    return total


def wall_clock() -> float:
    return time.time()


@workflow(name="bench-sleeper")
def sleeper(due: datetime) -> Generator[Any, Any, float]:
    """Sleeps until `due`; returns how late it woke, in seconds (a step reads the wall
    clock, so the figure is the engine's, not the store's)."""
    now: datetime = yield Now()
    yield Sleep(max((due - now).total_seconds(), 0.0))
    woke: float = yield Step("woke", wall_clock)
    return woke - due.timestamp()
