"""A fleet of engine processes on one PostgreSQL: throughput by process count, and
many sleeping runs spread over engines.

    python -m bench.bench_fleet [--runs 2000] [--steps 10] [--engines 1,2,4,8]
                                [--sleepers 0] [--sleeper-engines 2] [--pg URL]

Throughput: for each process count N, a fresh schema, N `replaykit worker` processes,
then RUNS workflows of STEPS trivial steps each enqueued in batches by this process, all
due at one instant; the time runs from that instant until every run is SUCCESS. Printed:
steps per second in all and per engine, and the ratio against one engine measured in
the same run (issue "beyond one server": throughput should not fall when processes are
added beyond the cores; this machine has 2, shared with PostgreSQL and this process).
The workers start first and the runs come due together once they are up, so a
process's start (a third of a second of CPU each) is not counted.

Sleepers (with --sleepers S): S runs that each sleep until one instant, enqueued and
claimed by --sleeper-engines worker processes. Once every run sleeps, each process's
resident set (/proc/<pid>/status VmRSS) is read; at the instant they all wake, and each
run returns how late its first step after the sleep ran (with --spread, the due
instants are spread evenly over that many seconds: waking every sleeper at one instant
measures the engines' throughput, not their timers). Printed: RSS in all and per
sleeper, and the lateness p50/p99/max (targets: 512 MiB in all at 1,000,000 sleepers,
woken within 1 s of due).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import bench_sleepers
from bench.bench_queues import drop, stop, workers
from bench.fleet_probes import finished_runs
from bench.queue_app import fleet, steps
from replaykit import Engine, QueueItem

VERSION = "bench-fleet"
BATCH = 1000


def start_workers(url: str, queue: str, count: int) -> list[subprocess.Popen[bytes]]:
    return workers(url, count, queue=queue, version=VERSION, prefix="fleet-")


def throughput(pg: str, runs: int, step_count: int, engines: int) -> float:
    """Seconds for `engines` worker processes to finish `runs` runs of `step_count` steps,
    from the instant the runs come due: the workers are up and idle by then (their start
    is not counted), and every run is enqueued with a delay that ends at that instant."""
    schema = f"bench_fleet_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}"
    try:
        with Engine(url, queues=[], app_version=VERSION, executor_id="producer") as engine:
            procs = start_workers(url, fleet.name, engines)
            try:
                up = time.monotonic() + 60
                beats: Any = engine.store  # read_heartbeats: the SQL stores', not the protocol's
                while (
                    len(beats.read_heartbeats(datetime.now(UTC) - timedelta(minutes=1))) <= engines
                ):
                    if time.monotonic() > up:
                        raise RuntimeError(f"{engines} workers did not start within 60 s")
                    time.sleep(0.1)
                due = datetime.now(UTC) + timedelta(seconds=2 + runs / 4000)
                for first in range(0, runs, BATCH):
                    delay = (due - datetime.now(UTC)).total_seconds()
                    items = [
                        QueueItem(i, step_count, workflow_id=f"f{i}", delay=max(delay, 0.0))
                        for i in range(first, min(first + BATCH, runs))
                    ]
                    engine.enqueue_many(fleet, steps, items)
                left = (due - datetime.now(UTC)).total_seconds()
                if left <= 0:
                    raise RuntimeError("enqueueing took longer than the margin; give fewer runs")
                time.sleep(left)
                start = time.perf_counter()
                with finished_runs(pg, schema) as done:
                    while done() < runs:
                        time.sleep(0.05)
                return time.perf_counter() - start
            finally:
                stop(procs)
    finally:
        drop(pg, schema)


def sleepers_figures(pg: str, count: int, engines: int, margin: float, spread: float) -> None:
    """bench.bench_sleepers' measure, printed (that module compares two checkouts too)."""
    figures = bench_sleepers.measure(pg, count, engines, spread=spread, margin=margin)
    print(f"{count:,} sleepers on {engines} engine process(es):")
    print(bench_sleepers.table([("measured", figures)]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_fleet")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--engines", default="1,2,4,8")
    parser.add_argument("--sleepers", type=int, default=0)
    parser.add_argument("--sleeper-engines", type=int, default=2)
    parser.add_argument(
        "--spread",
        type=float,
        default=0.0,
        help="seconds over which the sleepers' due instants are spread evenly (0: one instant)",
    )
    parser.add_argument(
        "--sleep-margin",
        type=float,
        default=30.0,
        help="seconds (beyond one per thousand sleepers) before the sleepers' due instant",
    )
    parser.add_argument(
        "--pg",
        default=os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.engines.split(",")]
    print(
        f"{args.runs} runs of {args.steps} steps, drained by N worker processes on "
        f"PostgreSQL ({os.cpu_count()} cores):"
    )
    first_rate: float | None = None
    for engines in counts:
        took = throughput(args.pg, args.runs, args.steps, engines)
        rate = args.runs * args.steps / took
        first_rate = first_rate or rate
        print(
            f"  {engines} process(es): {took:6.2f} s, {rate:7.0f} steps/s "
            f"({rate / engines:6.0f} per engine), {rate / first_rate:.2f}x the first count's"
        )
    if args.sleepers:
        sleepers_figures(
            args.pg, args.sleepers, args.sleeper_engines, args.sleep_margin, args.spread
        )


if __name__ == "__main__":
    main()
