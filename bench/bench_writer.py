"""The record writer's hot path alone: client CPU per record, as the engine writes them.

    python -m bench.bench_writer [--store postgres|sqlite] [--runs 100] [--steps 10]
                                 [--repeat 5] [--pg URL]

Builds the store the way `Engine` does (`RetryingStore(CodecStore(store, None))`
under a `RecordWriter`) on a fresh PostgreSQL schema or SQLite file, creates
`--runs` PENDING runs, then times two shapes of writing their `--steps` records:

- *batched*: each round, one record per run through `RecordWriter.write_many`
  (the scheduler's group commit of the steps that finished together);
- *alone*: a run's records one after another through `RecordWriter.write`
  (a lone run's steps, as `engine.run` of a sequential workflow writes them).

Beside them, on the same store kind and in the same time window, the floor: one
insert + commit per row on one connection (the lone shape's bound), and the
batched ceiling, 100 rows per statement (the batched shape's bound). Client CPU
is this process's, which does nothing else; medians over `--repeat` rounds.
No scheduler, no thread hand-offs: what this measures is the writer, the retry
and codec layers, the store's bookkeeping, the encoding and the driver.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from bench.suite import DEFAULT_PG
from replaykit.log import Record, Status, Value
from replaykit.runtime.commits import RecordWriter
from replaykit.runtime.retries import RetryingStore
from replaykit.stores.base import Store, WorkflowRow
from replaykit.stores.codec import CodecStore

_OUTCOME = '{"value": 1}'
_FLOOR = (
    "CREATE TABLE floor (workflow_id TEXT, position INTEGER, outcome TEXT, "
    "PRIMARY KEY (workflow_id, position))"
)


def _step(position: int) -> Record:
    now = datetime.now(UTC)
    return Record(
        position, "step", "trivial", Value(position + 1), started_at=now, completed_at=now
    )


def _cpu(fn: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


class _Bench:
    def __init__(self, store_kind: str, pg: str) -> None:
        self.kind = store_kind
        self.schema = f"bw_{uuid.uuid4().hex[:10]}"
        self.tmp = tempfile.mkdtemp(prefix="bench-writer-")
        self.pg = pg
        if store_kind == "postgres":
            from replaykit.stores.postgres import PostgresStore

            inner: Any = PostgresStore(pg, schema=self.schema)
            self.floor: Any = psycopg.connect(pg, autocommit=True)
            self.floor.execute(
                sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema + "_floor"))
            )
            self.floor.execute(
                sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema + "_floor"))
            )
            self.floor.execute(_FLOOR)
        else:
            from replaykit.stores.sqlite import SqliteStore

            inner = SqliteStore(os.path.join(self.tmp, "store.db"))
            self.floor = sqlite3.connect(os.path.join(self.tmp, "floor.db"), isolation_level=None)
            self.floor.execute("PRAGMA journal_mode = WAL")
            self.floor.execute("PRAGMA synchronous = NORMAL")
            self.floor.execute(_FLOOR)
        self.inner = inner
        store: Store = RetryingStore(CodecStore(inner, None), stop=lambda: False)
        self.store = store
        self.writer = RecordWriter(store, executor_id="bench", stop=lambda: False)

    def close(self) -> None:
        self.inner.close()
        if self.kind == "postgres":
            self.floor.execute(
                sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(self.schema + "_floor"))
            )
            self.floor.close()
            with psycopg.connect(self.pg, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(self.schema)))
        else:
            self.floor.close()

    def rows(self, tag: str, runs: int) -> list[WorkflowRow]:
        rows = [
            WorkflowRow(f"{tag}-{i}", "bench", Status.PENDING, executor_id="bench", app_version="b")
            for i in range(runs)
        ]
        self.store.create_workflows(rows)
        return rows

    def batched(self, tag: str, runs: int, steps: int) -> tuple[float, float]:
        rows = self.rows(tag, runs)

        def go() -> None:
            for position in range(steps):
                self.writer.write_many([(row, _step(position)) for row in rows])

        return _cpu(go)

    def alone(self, tag: str, runs: int, steps: int) -> tuple[float, float]:
        rows = self.rows(tag, runs)

        def go() -> None:
            for row in rows:
                for position in range(steps):
                    self.writer.write(row, _step(position))

        return _cpu(go)

    def floor_alone(self, tag: str, count: int) -> tuple[float, float]:
        if self.kind == "postgres":
            insert = "INSERT INTO floor VALUES (%s, %s, %s)"
            return _cpu(
                lambda: [self.floor.execute(insert, (tag, i, _OUTCOME)) for i in range(count)]
            )
        insert = "INSERT INTO floor VALUES (?, ?, ?)"

        def go() -> None:
            for i in range(count):
                self.floor.execute("BEGIN IMMEDIATE")
                self.floor.execute(insert, (tag, i, _OUTCOME))
                self.floor.execute("COMMIT")

        return _cpu(go)

    def floor_batched(self, tag: str, count: int) -> tuple[float, float]:
        batches = [range(first, min(first + 100, count)) for first in range(0, count, 100)]
        if self.kind == "postgres":
            many = "INSERT INTO floor SELECT * FROM unnest(%s::text[], %s::int[], %s::text[])"
            return _cpu(
                lambda: [
                    self.floor.execute(many, ([tag] * len(b), list(b), [_OUTCOME] * len(b)))
                    for b in batches
                ]
            )
        insert = "INSERT INTO floor VALUES (?, ?, ?)"

        def go() -> None:
            for b in batches:
                self.floor.execute("BEGIN IMMEDIATE")
                self.floor.executemany(insert, [(tag, i, _OUTCOME) for i in b])
                self.floor.execute("COMMIT")

        return _cpu(go)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_writer", description=__doc__)
    parser.add_argument("--store", default="postgres", choices=("postgres", "sqlite"))
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args(argv)
    bench = _Bench(args.store, args.pg)
    count = args.runs * args.steps
    figures: dict[str, list[tuple[float, float]]] = {
        "batched": [],
        "alone": [],
        "floor alone": [],
        "floor batched": [],
    }
    try:
        bench.batched("warm", args.runs, 2)  # psycopg prepares on the fifth execution
        bench.alone("warm-alone", 5, 2)
        for rep in range(args.repeat):
            figures["batched"].append(bench.batched(f"b{rep}", args.runs, args.steps))
            figures["floor batched"].append(bench.floor_batched(f"fb{rep}", count))
            figures["alone"].append(bench.alone(f"a{rep}", args.runs, args.steps))
            figures["floor alone"].append(bench.floor_alone(f"fa{rep}", count))
    finally:
        bench.close()
    print(
        f"{args.store}: {count} records per shape, median of {args.repeat}; "
        f"load {os.getloadavg()[0]:.2f}"
    )
    for name, runs in figures.items():
        wall = statistics.median(w for w, _ in runs) / count * 1e6
        cpu = statistics.median(c for _, c in runs) / count * 1e6
        least = min(c for _, c in runs) / count * 1e6
        print(
            f"  {name:14s} {wall:8.1f} us wall/record  {cpu:7.1f} us client CPU/record "
            f"(least {least:6.1f})  {1e6 / wall:9.0f} rows/s"
        )


if __name__ == "__main__":
    main()
