"""What retention costs on PostgreSQL: deleting many finished runs in bounded batches.

    python -m bench.bench_retention [--runs 100000] [--records 5] [--pg URL]

A fresh schema gets RUNS finished runs (created 40 days ago, RECORDS records each,
written in bulk), then `Retention.collect()` (what `Engine(retention=...)` runs in the
background) deletes those older than 30 days. Printed: the time, runs deleted per
second and the time a million would take; the longest single delete (each run goes in a
transaction of its own, so no lock is held longer than that) and the most locks the
deleting session held at once, sampled every 20 ms; the dead tuples left for
autovacuum, and what a manual VACUUM of the two tables then takes. A second
measurement in the same run, the baseline: one `DELETE ... WHERE created_at < cutoff`
statement over the same number of runs, which holds every row lock until it commits.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from replaykit import Engine
from replaykit.log import Status
from replaykit.runtime.retention import Retention
from replaykit.stores.base import WorkflowRow

DEFAULT_PG = os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
BATCH = 1000


def fill(engine: Engine, pg: str, schema: str, runs: int, records: int, at: datetime) -> None:
    """RUNS finished runs created at `at`, and their records, as fast as bulk writes go."""
    for first in range(0, runs, BATCH):
        rows = [
            WorkflowRow(f"old-{n}", "bench-retention", Status.SUCCESS, created_at=at)
            for n in range(first, min(first + BATCH, runs))
        ]
        engine.store.create_workflows(rows)
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.records (shard_key, workflow_id, position, kind, name, outcome, "
                "digest, call_site, started_at, completed_at, attempts) "
                "SELECT w.shard_key, w.workflow_id, p, 'step', 's', '{{\"value\": 1}}', '', '', "
                "%s, %s, 1 "
                "FROM {}.workflows w, generate_series(0, %s - 1) p"
            ).format(sql.Identifier(schema), sql.Identifier(schema)),
            (at, at, records),
        )


class TimedDeletes:
    """The store as the collector sees it, timing each `delete_workflow`."""

    def __init__(self, store: Any) -> None:
        self.inner = store
        self.longest = 0.0

    def delete_workflow(self, workflow_id: str) -> bool:
        started = time.perf_counter()
        try:
            return bool(self.inner.delete_workflow(workflow_id))
        finally:
            self.longest = max(self.longest, time.perf_counter() - started)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class LockSampler:
    """The most locks any session of this schema's engine held at once."""

    def __init__(self, pg: str, application_name: str) -> None:
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pg, application_name))

    def __enter__(self) -> LockSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self, pg: str, application_name: str) -> None:
        query = (
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE a.application_name LIKE %s GROUP BY l.pid ORDER BY 1 DESC LIMIT 1"
        )
        with psycopg.connect(pg, autocommit=True) as conn:
            while not self._stop.wait(0.02):
                found = conn.execute(query, (application_name + "%",)).fetchone()
                self.most = max(self.most, int(found[0]) if found else 0)


def dead_tuples(pg: str, schema: str) -> int:
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        found = conn.execute(
            "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables "
            "WHERE schemaname = %s AND relname IN ('workflows', 'records')",
            (schema,),
        ).fetchone()
        return int(found[0]) if found else 0


def vacuum_seconds(pg: str, schema: str) -> float:
    started = time.perf_counter()
    with psycopg.connect(pg, autocommit=True) as conn:
        for table in ("workflows", "records"):
            conn.execute(
                sql.SQL("VACUUM {}.{}").format(sql.Identifier(schema), sql.Identifier(table))
            )
    return time.perf_counter() - started


def delete_at_once(pg: str, schema: str, cutoff: datetime) -> int:
    """The baseline: every old run and its records in one transaction."""
    name = sql.Identifier(schema)
    with psycopg.connect(pg, application_name=f"bench-retention-{schema}") as conn:
        conn.execute(
            sql.SQL(
                "DELETE FROM {}.records WHERE workflow_id IN "
                "(SELECT workflow_id FROM {}.workflows WHERE created_at < %s)"
            ).format(name, name),
            (cutoff,),
        )
        found = conn.execute(
            sql.SQL("DELETE FROM {}.workflows WHERE created_at < %s").format(name), (cutoff,)
        )
        deleted = found.rowcount
        conn.commit()
    return deleted


def measure(pg: str, runs: int, records: int, *, one_statement: bool) -> dict[str, float]:
    schema = f"bench_ret_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}&application_name=bench-retention-{schema}"
    now = datetime.now(UTC)
    try:
        with Engine(url, queues=[], executor_id="retention", recover=False) as engine:
            fill(engine, pg, schema, runs, records, now - timedelta(days=40))
            timed = TimedDeletes(engine.store)
            collector = Retention(timed, engine.clock, timedelta(days=30))
            with LockSampler(pg, "bench-retention-") as locks:
                started = time.perf_counter()
                if one_statement:
                    deleted = delete_at_once(pg, schema, now - timedelta(days=30))
                    timed.longest = time.perf_counter() - started
                else:
                    deleted = collector.collect()
                took = time.perf_counter() - started
            dead = dead_tuples(pg, schema)
            vacuum = vacuum_seconds(pg, schema)
        return {
            "deleted": deleted,
            "took": took,
            "longest": timed.longest,
            "locks": locks.most,
            "dead": dead,
            "vacuum": vacuum,
        }
    finally:
        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_retention")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=5)
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args(argv)
    print(f"{args.runs:,} finished runs of {args.records} records each, 40 days old:")
    for label, one_statement in (("retention", False), ("one DELETE (baseline)", True)):
        m = measure(args.pg, args.runs, args.records, one_statement=one_statement)
        print(
            f"  {label}: {m['deleted']:,.0f} deleted in {m['took']:.1f} s "
            f"({m['deleted'] / m['took']:,.0f} runs/s; a million in "
            f"{1_000_000 / (m['deleted'] / m['took']) / 60:.1f} min); longest transaction "
            f"{m['longest'] * 1000:.1f} ms; most pg_locks entries at once {m['locks']:.0f}; "
            f"{m['dead']:,.0f} dead tuples after, VACUUM {m['vacuum']:.1f} s"
        )


if __name__ == "__main__":
    main()
