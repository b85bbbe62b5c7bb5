"""Messaging figures: Send -> Recv wake-up latency across processes, and All vs sequential.

    python -m bench.bench_messaging [--messages 1000] [--pg URL]

1. Two engines in two processes on PostgreSQL: this process sends N messages
   (one every few milliseconds) to a workflow a receiver process runs; the
   receiver notes, for each, the time from just before `engine.send` to the
   moment the workflow body has the message (after its Recv is recorded).
   p50 and p99. Target: p99 <= 50 ms.
2. `All` over 100 one-millisecond steps against the same 100 steps one after
   another, on the same engine: wall time ratio. Target: All >= 10x faster.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Generator
from typing import Any

from replaykit import All, Engine, Recv, Step, context, workflow

LATENCIES: list[float] = []


@workflow(name="bench-receiver")
def receiver(n: int) -> Generator[Any, Any, int]:
    for _ in range(n):
        message = yield Recv("ping")
        if not context().is_replaying:
            LATENCIES.append(time.time() - message["sent"])
    return n


def one_ms(i: int) -> int:
    time.sleep(0.001)
    return i


@workflow(name="bench-all-100")
def all_100() -> Generator[Any, Any, list[int]]:
    values: list[int] = yield All(*[Step(f"s{i}", one_ms, i) for i in range(100)])
    return values


@workflow(name="bench-seq-100")
def seq_100() -> Generator[Any, Any, list[int]]:
    values = []
    for i in range(100):
        values.append((yield Step(f"s{i}", one_ms, i)))
    return values


def run_receiver(url: str, n: int, workflow_id: str) -> None:
    with Engine(url, executor_id="receiver", app_version="bench-msg") as engine:
        handle = engine.start(receiver, n, workflow_id=workflow_id)
        print("ready", flush=True)
        handle.result(timeout=600)
    LATENCIES.sort()
    print(json.dumps(LATENCIES), flush=True)


def percentile(sorted_values: list[float], p: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def latency(pg: str, n: int, gap: float) -> None:
    import psycopg
    from psycopg import sql

    schema = f"bench_msg_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}"
    workflow_id = "receiver-1"
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.bench_messaging", "--receiver", url, str(n), workflow_id],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with Engine(url, executor_id="sender", app_version="bench-msg", queues=[]) as engine:
            time.sleep(0.5)  # the receiver's first Recv is suspended by now
            for i in range(n):
                engine.send(workflow_id, {"sent": time.time(), "i": i}, topic="ping")
                time.sleep(gap)
        out, _ = child.communicate(timeout=600)
        values = sorted(json.loads(out.strip().splitlines()[-1]))
    finally:
        if child.poll() is None:
            child.kill()
        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    ms = [v * 1000 for v in values]
    print(
        f"Send -> Recv across two processes on PostgreSQL "
        f"({len(ms)} messages, {gap * 1000:.0f} ms apart):"
    )
    print(
        f"  p50 {percentile(ms, 50):6.2f} ms   p99 {percentile(ms, 99):6.2f} ms   "
        f"max {ms[-1]:6.2f} ms   mean {statistics.fmean(ms):6.2f} ms   (target p99 <= 50 ms)"
    )


def fan_out() -> None:
    with Engine("memory://", app_version="bench-all") as engine:
        parallel, sequential = [], []
        for _ in range(5):
            start = time.perf_counter()
            engine.run(all_100, timeout=60)
            parallel.append(time.perf_counter() - start)
            start = time.perf_counter()
            engine.run(seq_100, timeout=60)
            sequential.append(time.perf_counter() - start)
    p, s = statistics.median(parallel), statistics.median(sequential)
    print("All over 100 one-millisecond steps (memory store, median of 5):")
    print(
        f"  All {p * 1000:7.1f} ms   sequential {s * 1000:7.1f} ms   "
        f"All is {s / p:5.1f}x faster (target >= 10x)"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--receiver":
        run_receiver(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument(
        "--pg",
        default=os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    args = parser.parse_args()
    fan_out()
    latency(args.pg, args.messages, args.gap_ms / 1000)


if __name__ == "__main__":
    main()
