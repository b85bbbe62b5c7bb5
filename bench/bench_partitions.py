"""Partitioned queues on PostgreSQL, as ratios against a baseline measured in the same run.

    python -m bench.bench_partitions [--count 20000] [--keys 1000] [--engines 2] [--room 50]
                                     [--claims 10] [--backlog 10000] [--pg URL]

- Drain rate: COUNT one-step workflows spread over KEYS partition keys, drained by
  ENGINES engines from a queue with `partition_concurrency=1`, against the same runs
  drained from a queue with no partitions (target: >= 0.7x).
- A lone key's wait: a key holding BACKLOG (10,000) waiting runs, then a key enqueueing
  one; in how many claim rounds the lone run is claimed (target: within 2), against the plain
  queue (its priority order: after the whole backlog). Also with KEYS keys waiting
  besides: the lone key then waits its turn among them, one round robin at most.
- Claim cost: the time of one claim of ROOM runs from COUNT waiting runs over KEYS keys,
  partitioned (`claim_partitioned`) against the plain claim, on the same rows.

Each figure uses a fresh schema, dropped afterwards. Performance claims live here, not
in the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.queue_app import one_step
from replaykit import Engine, Queue, QueueItem
from replaykit.log import Status
from replaykit.stores.base import ClaimLimits, WorkflowRow
from replaykit.stores.postgres import PostgresStore

VERSION = "bench-partitions"
plain = Queue("bench-plain")
keyed = Queue("bench-keyed", partition_concurrency=1)


def _drop(pg: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _succeeded(conn: Any, schema: str) -> Callable[[], int]:
    from psycopg import sql

    query = sql.SQL("SELECT count(*) FROM {}.workflows WHERE status = 'SUCCESS'").format(
        sql.Identifier(schema)
    )

    def count() -> int:
        row = conn.execute(query).fetchone()
        return int(row[0]) if row else 0

    return count


def drain_rate(pg: str, queue: Queue, count: int, keys: int, engines: int) -> float:
    """Runs per second that `engines` engines drain from `queue` (COUNT runs over KEYS keys)."""
    schema = f"bench_pd_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}"
    try:
        with Engine(url, queues=[], app_version=VERSION, executor_id="producer") as producer:
            for start in range(0, count, 1000):
                items = [
                    QueueItem(i, workflow_id=f"d{i}", partition_key=f"tenant-{i % keys}")
                    for i in range(start, min(start + 1000, count))
                ]
                producer.enqueue_many(queue, one_step, items)
        import psycopg

        with psycopg.connect(pg, autocommit=True) as conn:
            done = _succeeded(conn, schema)
            began = time.perf_counter()
            running = [
                Engine(url, queues=[queue.name], app_version=VERSION, executor_id=f"e{n}")
                for n in range(engines)
            ]
            try:
                while done() < count:
                    time.sleep(0.02)
                return count / (time.perf_counter() - began)
            finally:
                for engine in running:
                    engine.close()
    finally:
        _drop(pg, schema)


def _rows(count: int, keys: int, t0: datetime) -> list[WorkflowRow]:
    return [
        WorkflowRow(
            f"w{i}",
            "bench-one-step",
            Status.ENQUEUED,
            executor_id="",
            app_version=VERSION,
            queue="q",
            partition_key=f"tenant-{i % keys}",
            created_at=t0 + timedelta(microseconds=i),
        )
        for i in range(count)
    ]


def _store(pg: str, rows: list[WorkflowRow]) -> tuple[PostgresStore, str]:
    schema = f"bench_pc_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(pg, schema=schema)
    for start in range(0, len(rows), 2000):
        store.create_workflows(rows[start : start + 2000])
    import psycopg

    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(f'VACUUM ANALYZE "{schema}".workflows')
    return store, schema


def lone_wait(pg: str, limits: ClaimLimits, others: int, backlog: int) -> int:
    """The claim round in which a lone key's one run is claimed, behind a key holding
    `backlog` runs (and `others` keys holding one run each, enqueued before it)."""
    t0 = datetime.now(UTC) - timedelta(hours=1)
    rows = [
        WorkflowRow(
            f"big{i}", "wf", Status.ENQUEUED, executor_id="", app_version=VERSION, queue="q",
            partition_key="big", created_at=t0 + timedelta(microseconds=i),
        )
        for i in range(backlog)
    ]  # fmt: skip
    rows += _rows(others, max(others, 1), t0 + timedelta(seconds=1))
    rows.append(
        WorkflowRow(
            "lone", "wf", Status.ENQUEUED, executor_id="", app_version=VERSION, queue="q",
            partition_key="lone", created_at=t0 + timedelta(seconds=2),
        )
    )  # fmt: skip
    store, schema = _store(pg, rows)
    try:
        now = datetime.now(UTC)
        for round_ in range(1, len(rows) + 1):
            now += timedelta(milliseconds=1)
            taken = store.claim("q", executor_id="e", app_version=VERSION, limits=limits, now=now)
            if any(row.workflow_id == "lone" for row in taken):
                return round_
            if not taken:
                break
        return -1
    finally:
        store.close()
        _drop(pg, schema)


def claim_cost(pg: str, count: int, keys: int, room: int, claims: int) -> tuple[float, float]:
    """Mean ms of one claim of `room` runs: (plain, partitioned with one running per key)."""
    results = []
    for limits in (ClaimLimits(room), ClaimLimits(room, partitioned=True, partition_concurrency=1)):
        store, schema = _store(pg, _rows(count, keys, datetime.now(UTC) - timedelta(hours=1)))
        try:
            now = datetime.now(UTC)
            took = []
            for _ in range(claims):
                began = time.perf_counter()
                store.claim("q", executor_id="e", app_version=VERSION, limits=limits, now=now)
                took.append((time.perf_counter() - began) * 1000)
        finally:
            store.close()
            _drop(pg, schema)
        results.append(statistics.mean(took))
    return results[0], results[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--engines", type=int, default=2)
    parser.add_argument("--room", type=int, default=50)
    parser.add_argument("--claims", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument(
        "--pg",
        default=os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    args = parser.parse_args(argv)
    count, keys = args.count, args.keys
    print(f"Drain: {count} one-step workflows over {keys} keys, {args.engines} engine(s):")
    base = drain_rate(args.pg, plain, count, keys, args.engines)
    rate = drain_rate(args.pg, keyed, count, keys, args.engines)
    print(f"  no partitions:              {base:7.0f} workflows/s (baseline)")
    print(
        f"  partition_concurrency=1:    {rate:7.0f} workflows/s = {rate / base:.2f}x"
        " (target >= 0.7x)"
    )
    room = args.room
    backlog = args.backlog
    print(f"A lone key behind a key holding {backlog} runs, claims of {room}:")
    rounds = {
        "no partitions": lone_wait(args.pg, ClaimLimits(room), 0, backlog),
        "partitioned": lone_wait(args.pg, ClaimLimits(room, partitioned=True), 0, backlog),
        "partition_concurrency=1": lone_wait(
            args.pg, ClaimLimits(room, partitioned=True, partition_concurrency=1), 0, backlog
        ),
        f"partitioned, {keys} other keys waiting": lone_wait(
            args.pg, ClaimLimits(room, partitioned=True), keys, backlog
        ),
    }
    for what, round_ in rounds.items():
        print(f"  {what + ':':40} claimed in round {round_}")
    print(
        f"  (target: within 2 rounds; behind {keys} other keys, one turn: {-(-keys // room) + 1})"
    )
    plain_ms, keyed_ms = claim_cost(args.pg, count, keys, room, args.claims)
    print(f"Claim of {room} from {count} waiting runs over {keys} keys ({args.claims} claims):")
    print(f"  plain claim:                {plain_ms:7.2f} ms (baseline)")
    print(f"  claim_partitioned:          {keyed_ms:7.2f} ms = {keyed_ms / plain_ms:.2f}x")


if __name__ == "__main__":
    main()
