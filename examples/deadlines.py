"""A run with a deadline: `timeout=` cancels it when the time is up, children included.

    python examples/deadlines.py

A report is built from slow regional exports. The whole run gets a (scaled-down)
timeout; each region is a child run, which inherits what remains of it. The fast
run finishes in time; the slow one is cancelled at its deadline, its children with
it, and `result()` says it timed out and when. The wait holds no thread, and the
deadline is stored with the run: a restart does not give it more time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from datetime import timedelta
from typing import Any

from replaykit import (
    All,
    AwaitedWorkflowCancelled,
    Call,
    Engine,
    Sleep,
    Step,
    WorkflowDeadlineExceeded,
    workflow,
)

# Scaled down so the example finishes quickly; in production: timedelta(hours=1).
TIMEOUT = timedelta(seconds=3)  # the fast report needs well under a second, even on a busy machine


def export_region(region: str) -> int:
    return len(region) * 100


@workflow
def region_export(region: str, seconds: float) -> Generator[Any, Any, int]:
    yield Sleep(seconds)  # waiting for the region's warehouse, holding no thread
    total: int = yield Step("export", export_region, region)
    return total


@workflow
def build_report(seconds: float) -> Generator[Any, Any, str]:
    totals = yield All(*(Call(region_export, region, seconds) for region in ("eu", "us", "apac")))
    return f"total {sum(totals)} from {len(totals)} regions"


def main() -> None:
    with Engine("memory://", poll_interval=0.1) as engine:
        fast = engine.start(build_report, 0.2, workflow_id="report-fast", timeout=TIMEOUT)
        print(f"report-fast: {fast.result(timeout=30)}")
        slow = engine.start(build_report, 60.0, workflow_id="report-slow", timeout=TIMEOUT)
        try:
            slow.result(timeout=30)
        except WorkflowDeadlineExceeded as exc:
            print(f"report-slow: {exc}")
        children = engine.list_workflows(parent_id="report-slow")
        for child in children:  # the cancel reaches them just after their parent
            with contextlib.suppress(AwaitedWorkflowCancelled):
                engine.handle(child.workflow_id).result(timeout=30)
        children = engine.list_workflows(parent_id="report-slow")
        print(
            f"report-slow: {slow.status().value}; its {len(children)} region runs: "
            + ", ".join(sorted({child.status.value for child in children}))
        )


if __name__ == "__main__":
    main()
