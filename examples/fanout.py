"""Parallel steps with All, and child workflows with Call.

    python examples/fanout.py

A report is built from ten regions fetched concurrently (`All`), then each of
three shards is summarised by a child workflow (`Call`), whose own log and
status can be inspected separately. Children take ids derived from the parent's
id and position, so a replay of the parent starts nothing new.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

from replaykit import All, Call, Engine, Step, workflow


def fetch_region(region: int) -> int:
    time.sleep(0.1)  # a slow API call
    return region * 100


def summarise(values: list[int]) -> int:
    return sum(values)


@workflow
def summarise_shard(values: list[int]) -> Generator[Any, Any, int]:
    return (yield Step("sum", summarise, values))


@workflow
def regional_report(regions: int) -> Generator[Any, Any, dict[str, Any]]:
    figures = yield All(*[Step(f"fetch-{r}", fetch_region, r) for r in range(regions)])
    shards = [figures[i::3] for i in range(3)]
    totals = []
    for shard in shards:
        totals.append((yield Call(summarise_shard, shard)))
    return {"figures": figures, "shard_totals": totals, "total": sum(totals)}


def main() -> None:
    with Engine("memory://") as engine:
        started = time.monotonic()
        report = engine.run(regional_report, 10, workflow_id="report-1", timeout=30)
        took = time.monotonic() - started
        print(f"report-1: total {report['total']} from {len(report['figures'])} regions")
        print(f"  ten 100 ms fetches took {took:.2f}s together (sequentially: ~1s)")
        for child in engine.list_workflows(parent_id="report-1"):
            print(f"  child {child.workflow_id}: {child.status.value}")


if __name__ == "__main__":
    main()
