"""Checkpoint cost on the durable stores, against the raw driver's floor.

    python -m bench.bench_stores [--steps 1000] [--repeat 5] [--pg URL]

For SQLite and PostgreSQL: one workflow of N trivial steps executed
sequentially (ms per step), then replayed by a fresh activation (load the log
in one query, replay every position), each as a ratio to the raw driver doing
one insert + commit per iteration in the same run (SQLite at the same
`synchronous` setting, WAL; psycopg on one autocommit connection).
Targets: executing a step <= 1.3x the floor on PostgreSQL and <= 1.5x on
SQLite; replaying 1,000 recorded steps <= 50 ms on either.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Generator
from typing import Any

from replaykit import Engine, Step, workflow
from replaykit.interpreter import Completed, Interpreter
from replaykit.log import Status
from replaykit.stores.base import WorkflowRow


def trivial(i: int) -> int:
    return i


@workflow(name="bench-stores-steps")
def steps_wf(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("trivial", trivial, i)
    return total


def median_of(repeat: int, fn: Callable[[], Any]) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def sqlite_floor(path: str, n: int) -> Callable[[], None]:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, v TEXT)")

    def run() -> None:
        for i in range(n):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO floor (v) VALUES (?)", (f'{{"value": {i}}}',))
            conn.execute("COMMIT")

    return run


def pg_floor(url: str, schema: str, n: int) -> Callable[[], None]:
    import psycopg
    from psycopg import sql

    conn = psycopg.connect(url, autocommit=True)
    # A regular table: a TEMP table skips the WAL, and so the commit's fsync.
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    table = sql.SQL("{}.floor").format(sql.Identifier(schema))
    conn.execute(sql.SQL("CREATE TABLE {} (id bigserial PRIMARY KEY, v text)").format(table))
    insert = sql.SQL("INSERT INTO {} (v) VALUES (%s)").format(table)

    def run() -> None:
        for i in range(n):
            conn.execute(insert, (f'{{"value": {i}}}',))

    return run


def measure(label: str, url: str, floor: Callable[[], None], n: int, repeat: int) -> None:
    with Engine(url, app_version="bench") as engine:
        ids = iter(f"bench-{uuid.uuid4().hex[:8]}-{i}" for i in range(10_000))
        # Alternate floor and replaykit so drift in the machine hits both alike.
        floors, executes, replays, pure = [], [], [], []
        for _ in range(repeat):
            floors.append(median_of(1, floor))
            run_id = next(ids)

            def execute(run_id: str = run_id) -> Any:
                return engine.run(steps_wf, n, workflow_id=run_id)

            executes.append(median_of(1, execute))
            records = engine.store.load_log(run_id)
            source = engine.store.get_workflow(run_id)
            assert source is not None and len(records) == n

            def replay_activation(
                source: WorkflowRow = source, records: list[Any] = records
            ) -> None:
                # A fresh run whose whole log is recorded: one load, N replayed positions.
                copy_id = next(ids)
                engine.store.create_workflow(
                    WorkflowRow(
                        copy_id,
                        source.name,
                        Status.PENDING,
                        source.inputs,
                        executor_id=engine.executor_id,
                        app_version=engine.app_version,
                    ),
                    records=records,
                )
                engine.dispatch(copy_id)
                engine.handle(copy_id).result(timeout=60)

            replays.append(median_of(1, replay_activation))

            def load_and_replay(run_id: str = run_id) -> None:
                log = engine.store.load_log(run_id)
                decision = Interpreter(
                    steps_wf.fn(n), log, workflow_name="bench", workflow_id=run_id
                ).start()
                assert isinstance(decision, Completed)

            pure.append(median_of(1, load_and_replay))
    floor_ms = statistics.median(floors) / n * 1000
    exec_ms = statistics.median(executes) / n * 1000
    replay_total = statistics.median(replays) * 1000
    pure_total = statistics.median(pure) * 1000
    print(f"{label}:")
    print(f"  floor (insert+commit)     {floor_ms:8.3f} ms/iteration")
    print(f"  step executed             {exec_ms:8.3f} ms/step   {exec_ms / floor_ms:5.2f}x floor")
    print(
        f"  replay {n} steps (engine)  {replay_total:8.1f} ms       "
        f"{replay_total / n * 1000 / 1000:5.3f} ms/step, "
        f"{replay_total / (floor_ms * n):5.2f}x the floor of {n} commits"
    )
    print(f"  load log + replay (core)  {pure_total:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--pg",
        default=os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measure(
            "SQLite (WAL, synchronous=NORMAL)",
            f"sqlite:///{os.path.join(tmp, 'bench.db')}",
            sqlite_floor(os.path.join(tmp, "floor.db"), args.steps),
            args.steps,
            args.repeat,
        )
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    try:
        measure(
            "PostgreSQL",
            f"{args.pg}?schema={schema}",
            pg_floor(args.pg, f"{schema}_floor", args.steps),
            args.steps,
            args.repeat,
        )
    finally:
        import psycopg
        from psycopg import sql

        with psycopg.connect(args.pg, autocommit=True) as conn:
            for name in (schema, f"{schema}_floor"):
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )


if __name__ == "__main__":
    main()
