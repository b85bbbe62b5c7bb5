"""A long step a terminate stops at once, and the resume that goes on without rerunning it.

    python examples/preempted.py

A nightly reindex runs for minutes. Marked `preemptible=True`, it is stopped the moment
an operator terminates the run: its task is cancelled, and the step's position records
that it was (`StepPreempted`). A later `resume` does not run the body again by itself:
the workflow gets `StepPreempted` at the step's `yield` and decides — here it runs a
smaller step instead and says so.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from typing import Any

from replaykit import Engine, Step, StepPreempted, workflow
from replaykit.log import Failure

STARTED = threading.Event()
REINDEX_RUNS: list[str] = []


async def reindex(index: str) -> str:
    REINDEX_RUNS.append(index)
    STARTED.set()
    await asyncio.sleep(600)  # minutes of work, in production
    return f"{index} reindexed"


def mark_stale(index: str) -> str:
    return f"{index} marked stale for tomorrow"


@workflow
def nightly(index: str) -> Generator[Any, Any, str]:
    try:
        done: str = yield Step("reindex", reindex, index, preemptible=True)
    except StepPreempted:
        done = yield Step("mark-stale", mark_stale, index)
    return done


def main() -> None:
    with Engine("memory://", poll_interval=0.1) as engine:
        engine.start(nightly, "products", workflow_id="nightly-1")
        STARTED.wait(10)
        engine.terminate("nightly-1", reason="deploy window")
        # The step's record lands in the terminated run: wait until it is there.
        deadline = time.monotonic() + 10
        while not engine.steps("nightly-1") and time.monotonic() < deadline:
            time.sleep(0.05)
        [record] = engine.steps("nightly-1")
        assert isinstance(record.outcome, Failure)
        kind = record.outcome.error.type_name.rsplit(".", 1)[-1]
        status = engine.handle("nightly-1").status().value
        print(f"nightly-1: {status}; position 0 {record.name!r} recorded {kind}")
        result = engine.resume("nightly-1").result(timeout=30)
        print(f"nightly-1 resumed: {result}; the reindex body ran {len(REINDEX_RUNS)} time(s)")


if __name__ == "__main__":
    main()
