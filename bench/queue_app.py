"""The application `bench.bench_queues` drains with `replaykit worker` processes."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from replaykit import Queue, Step, workflow

drain = Queue("bench-drain")


def one(i: int) -> int:
    return i


@workflow(name="bench-one-step")
def one_step(i: int) -> Generator[Any, Any, int]:
    value: int = yield Step("one", one, i)
    return value
