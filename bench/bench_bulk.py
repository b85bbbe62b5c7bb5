"""A bulk cancel on PostgreSQL, and the steps other runs commit meanwhile.

    python -m bench.bench_bulk [--runs 100000] [--window 10] [--loops 4] [--steps 20]
                               [--batch-size 500] [--pg URL]

A fresh schema gets RUNS runs held on a queue no engine listens to (ENQUEUED, written
in bulk), the runs an operator wants gone. An engine in this process runs a steady
workload meanwhile: LOOPS threads, each running workflows of STEPS steps one after
another. The figure is that workload's throughput (records committed per second,
counted in the database) in three windows: WINDOW seconds before the bulk action, for
as long as the bulk action runs, and WINDOW seconds after it; and the bulk action's
time. The bulk action is what an operator types, in a process of its own:
`replaykit workflows cancel --name bench-bulk-held --reason ... --yes`. Printed side by
side; the target (issue "operating") is a throughput during the action of at least 0.7
times the one without it. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from replaykit import Engine, Step, workflow
from replaykit.log import Status
from replaykit.stores.base import WorkflowFilter, WorkflowRow

DEFAULT_PG = os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
HELD = "bench-bulk-held"
FILL = 1000


def one(n: int) -> int:
    return n


@workflow(name="bench-bulk-steps")
def steps(count: int) -> Generator[Any, Any, int]:
    total = 0
    for n in range(count):
        total += yield Step(f"s{n}", one, n)
    return total


def fill(engine: Engine, runs: int) -> None:
    """RUNS ENQUEUED runs of HELD on a queue nobody claims, one microsecond apart."""
    start = datetime.now(UTC) - timedelta(hours=1)
    for first in range(0, runs, FILL):
        engine.store.create_workflows(
            [
                WorkflowRow(
                    f"held-{n:07}",
                    HELD,
                    Status.ENQUEUED,
                    queue="bench-bulk-nobody",
                    app_version="bench-bulk",
                    created_at=start + timedelta(microseconds=n),
                )
                for n in range(first, min(first + FILL, runs))
            ]
        )


class Workload:
    """LOOPS threads running workflows of STEPS steps back to back until stopped."""

    def __init__(self, engine: Engine, loops: int, step_count: int) -> None:
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._loop, args=(engine, step_count), daemon=True)
            for _ in range(loops)
        ]

    def _loop(self, engine: Engine, step_count: int) -> None:
        while not self._stop.is_set():
            engine.run(steps, step_count, timeout=60)

    def __enter__(self) -> Workload:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def committed(conn: psycopg.Connection[Any], schema: str) -> int:
    """Step records committed so far in the schema (the workload's only records)."""
    found = conn.execute(
        sql.SQL("SELECT count(*) FROM {}.records").format(sql.Identifier(schema))
    ).fetchone()
    return int(found[0]) if found else 0


def window(conn: psycopg.Connection[Any], schema: str, seconds: float) -> float:
    """The workload's records per second over `seconds`."""
    before, started = committed(conn, schema), time.perf_counter()
    time.sleep(seconds)
    return (committed(conn, schema) - before) / (time.perf_counter() - started)


def bulk_cancel(url: str, batch_size: int) -> tuple[float, str]:
    """The operator's command, in a process of its own: its wall time and summary line."""
    command = [
        sys.executable,
        "-m",
        "replaykit",
        "workflows",
        "cancel",
        "--url",
        url,
        "--name",
        HELD,
        "--reason",
        "bench: a bad release",
        "--batch-size",
        str(batch_size),
        "--yes",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"the bulk cancel failed: {done.stderr.strip()}")
    return took, done.stdout.strip()


def measure(
    pg: str, runs: int, seconds: float, loops: int, step_count: int, batch_size: int
) -> dict[str, Any]:
    schema = f"bench_bulk_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}"
    try:
        with (
            Engine(url, queues=[], executor_id="bench-bulk", app_version="bench-bulk") as engine,
            psycopg.connect(pg, autocommit=True) as conn,
        ):
            fill(engine, runs)
            with Workload(engine, loops, step_count):
                time.sleep(2.0)  # the workload's first runs start, its threads warm
                alone = window(conn, schema, seconds)
                before = committed(conn, schema)
                took, summary = bulk_cancel(url, batch_size)
                during = (committed(conn, schema) - before) / took
                after = window(conn, schema, seconds)
            left = engine.store.count_workflows(WorkflowFilter(name=HELD, status=Status.ENQUEUED))
        return {
            "took": took,
            "summary": summary,
            "alone": alone,
            "during": during,
            "after": after,
            "left": left,
        }
    finally:
        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_bulk")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--window", type=float, default=10.0)
    parser.add_argument("--loops", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args(argv)
    m = measure(args.pg, args.runs, args.window, args.loops, args.steps, args.batch_size)
    print(
        f"bulk cancel of {args.runs:,} queued runs (`replaykit workflows cancel --name ... "
        f"--yes`, batches of {args.batch_size}): {m['took']:.1f} s "
        f"({args.runs / m['took']:,.0f} runs/s); {m['left']} left ENQUEUED; it said: "
        f"{m['summary']}"
    )
    print(
        f"a workload of {args.loops} loops of {args.steps}-step runs, records committed per "
        f"second: {m['alone']:,.0f} before | {m['during']:,.0f} during the bulk cancel | "
        f"{m['after']:,.0f} after; during / before = {m['during'] / m['alone']:.2f} "
        "(target >= 0.70)"
    )


if __name__ == "__main__":
    main()
