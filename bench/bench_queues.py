"""Queue figures on PostgreSQL: drain time with 1, 2 and 4 worker processes,
enqueue rate, and claim latency (enqueue -> start).

    python -m bench.bench_queues [--count 2000] [--workers 1,2,4] [--pg URL]

Each drain: a fresh schema, COUNT one-step workflows enqueued by this process
(the enqueue rate), then W `replaykit worker` processes started together; the
drain time runs from their start until every run is SUCCESS. Claim latency is
measured separately with an idle worker and a trickle of enqueues (started_at -
created_at), so it shows the wake-up and claim path rather than a backlog.
Target: >= 1,000 one-step workflows/s drained by a single worker process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench.queue_app import drain, one_step
from replaykit import Engine

ROOT = Path(__file__).resolve().parent.parent
VERSION = "bench-queues"


def drop(pg: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def workers(
    url: str,
    count: int,
    *,
    queue: str = "bench-drain",
    version: str = VERSION,
    prefix: str = "w",
    root: Path = ROOT,
) -> list[subprocess.Popen[bytes]]:
    """`count` `replaykit worker` processes draining `queue` of bench.queue_app, running
    the replaykit of the checkout at `root` (another one: bench.bench_sleepers' before)."""
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "replaykit",
                "worker",
                "bench.queue_app",
                "--url",
                url,
                "--queue",
                queue,
                "--app-version",
                version,
                "--executor-id",
                f"{prefix}{n}",
                "--poll-interval",
                "0.2",
            ],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n in range(count)
    ]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=60)


def done_counter(pg: str, schema: str) -> Callable[[], int]:
    """A cheap progress probe: one COUNT on its own connection."""
    import psycopg
    from psycopg import sql

    conn = psycopg.connect(pg, autocommit=True)
    query = sql.SQL("SELECT count(*) FROM {}.workflows WHERE status = 'SUCCESS'").format(
        sql.Identifier(schema)
    )

    def count() -> int:
        row = conn.execute(query).fetchone()
        return int(row[0]) if row else 0

    return count


def drain_once(pg: str, count: int, n_workers: int) -> tuple[float, float]:
    schema = f"bench_q_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}"
    try:
        with Engine(url, queues=[], app_version=VERSION, executor_id="producer") as engine:
            start = time.perf_counter()
            for i in range(count):
                engine.enqueue(drain, one_step, i, workflow_id=f"q{i}")
            enqueue_rate = count / (time.perf_counter() - start)
            done = done_counter(pg, schema)
            procs = workers(url, n_workers)
            start = time.perf_counter()
            try:
                while done() < count:
                    time.sleep(0.02)
                took = time.perf_counter() - start
            finally:
                stop(procs)
        return took, enqueue_rate
    finally:
        drop(pg, schema)


def claim_latency(pg: str, count: int) -> list[float]:
    schema = f"bench_ql_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}"
    try:
        with Engine(url, queues=[], app_version=VERSION, executor_id="producer") as engine:
            done = done_counter(pg, schema)
            procs = workers(url, 1)
            try:
                time.sleep(2.0)  # the worker is up and idle
                for i in range(count):
                    engine.enqueue(drain, one_step, i, workflow_id=f"l{i}")
                    time.sleep(0.01)
                while done() < count:
                    time.sleep(0.02)
            finally:
                stop(procs)
            rows = engine.list_workflows(limit=count)
        return sorted(
            (r.started_at - r.created_at).total_seconds() * 1000
            for r in rows
            if r.started_at is not None and r.created_at is not None
        )
    finally:
        drop(pg, schema)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--latency-samples", type=int, default=300)
    parser.add_argument(
        "--pg",
        default=os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    args = parser.parse_args()
    print(f"Draining {args.count} one-step workflows on PostgreSQL:")
    for n in (int(x) for x in args.workers.split(",")):
        took, rate = drain_once(args.pg, args.count, n)
        print(
            f"  {n} worker process(es): {took:6.2f} s  = {args.count / took:7.0f} workflows/s"
            f"   (enqueue rate {rate:6.0f}/s, one producer thread)"
        )
    ms = claim_latency(args.pg, args.latency_samples)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"Claim latency, enqueue -> start, idle worker ({len(ms)} runs): "
        f"p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms"
    )
    print("Target: >= 1,000 one-step workflows/s drained by a single worker process.")


if __name__ == "__main__":
    main()
