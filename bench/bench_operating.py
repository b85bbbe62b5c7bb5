"""An operator's reads on a large store: listing, counting and the UI's runs page on
PostgreSQL, as ratios against the same reads on a small store measured in the same run.

    python -m bench.bench_operating [--runs 1000000] [--baseline 10000] [--repeat 15]
                                    [--pg URL]

Two fresh schemas get RUNS and BASELINE runs, written in bulk by one `INSERT ... SELECT`
(20 workflow names, the five statuses in turn, created over the last 30 days, a customer
among 1,000 and a plan among three as attributes). On each,
REPEAT times, p50 and p95 of:

- a selective list: FAILED runs created in one hour, a page of 50 (`list_workflows`);
- a list by name and status, a page of 50;
- a count of the first filter (`count_workflows`);
- a count by status over every run, and as the UI's counts bar asks it (each status
  counted up to 10,001: `WorkflowFilter(count_at_most=)`); the UI's newest 50;
- a list and a count by an attribute (`where="customer = '42'"`);
- the UI's runs page (`GET /`, and `GET /?status=ERROR`) through the ASGI app in process,
  its whole render.

Targets (issue "operating"): a selective filter under 50 ms at p50 on 1,000,000 runs; the
runs page under 300 ms. Nothing is asserted; each schema is dropped afterwards.
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

import psycopg
from psycopg import sql

from replaykit.log import Status
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.stores.postgres import PostgresStore

DEFAULT_PG = os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
NAMES = 20
STATUSES = ("SUCCESS", "ERROR", "CANCELLED", "PENDING", "ENQUEUED")
DAYS = 30


def fill(pg: str, schema: str, runs: int, now: datetime) -> None:
    """RUNS runs, cloned in one statement from a template row the store wrote itself, so
    that every column the schema has gets a value the store would give it."""
    store = PostgresStore(pg, schema=schema)
    try:
        store.create_workflow(WorkflowRow("template", "bench-op-0", Status.SUCCESS, created_at=now))
    finally:
        store.close()
    with psycopg.connect(pg, autocommit=True) as conn:
        columns = [
            row[0]
            for row in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = 'workflows' ORDER BY ordinal_position",
                (schema,),
            ).fetchall()
        ]
        span = DAYS * 86400
        made: dict[str, sql.Composable] = {
            "workflow_id": sql.SQL("'op-' || lpad(n::text, 8, '0')"),
            "shard_key": sql.SQL("'op-' || lpad(n::text, 8, '0')"),
            # By n / 5, so that every name has runs of every status (n % 5).
            "name": sql.SQL("'bench-op-' || ((n / 5) % {})").format(sql.Literal(NAMES)),
            "status": sql.SQL("({}::text[])[1 + n % {}]").format(
                sql.Literal(list(STATUSES)), sql.Literal(len(STATUSES))
            ),
            "created_at": sql.SQL("{} - make_interval(secs => (n::float8 * {}) / {})").format(
                sql.Literal(now), sql.Literal(span), sql.Literal(runs)
            ),
            "updated_at": sql.SQL("{} - make_interval(secs => (n::float8 * {}) / {})").format(
                sql.Literal(now), sql.Literal(span), sql.Literal(runs)
            ),
            "attributes": sql.SQL(
                "jsonb_build_object('customer', (n % 1000)::text, "
                "'plan', (ARRAY['free', 'pro', 'team'])[1 + n % 3])"
            ),
        }
        selected = [made.get(c, sql.Identifier("t", c)) for c in columns]
        conn.execute(
            sql.SQL(
                "INSERT INTO {s}.workflows ({cols}) SELECT {vals} FROM {s}.workflows t, "
                "generate_series(1, {runs}) n WHERE t.workflow_id = 'template'"
            ).format(
                s=sql.Identifier(schema),
                cols=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
                vals=sql.SQL(", ").join(selected),
                runs=sql.Literal(runs),
            )
        )
        conn.execute(sql.SQL("ANALYZE {}.workflows").format(sql.Identifier(schema)))


def timed(call: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(p50, p95) of `call` in milliseconds, after one call that warms caches."""
    call()
    laps = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        laps.append((time.perf_counter() - started) * 1000)
    laps.sort()
    return statistics.median(laps), laps[min(len(laps) - 1, round(0.95 * (len(laps) - 1)))]


def cases(store: Store, app: Any, now: datetime) -> dict[str, Callable[[], Any]]:
    hour = WorkflowFilter(
        status=Status.ERROR, since=now - timedelta(days=3, hours=1), until=now - timedelta(days=3)
    )
    found: dict[str, Callable[[], Any]] = {
        "list: FAILED in one hour, 50": lambda: store.list_workflows(
            WorkflowFilter(
                status=hour.status, since=hour.since, until=hour.until, limit=50, payloads=False
            )
        ),
        "list: name and status, 50": lambda: store.list_workflows(
            WorkflowFilter(name="bench-op-7", status=Status.ERROR, limit=50, payloads=False)
        ),
        "count: FAILED in one hour": lambda: store.count_workflows(hour),
        "counts bar: by status, all runs": lambda: store.count_workflows_by(
            WorkflowFilter(), "status"
        ),
        "counts bar as the UI asks (10,001 each)": lambda: store.count_workflows_by(
            WorkflowFilter(count_at_most=10_001), "status"
        ),
        "list: newest 50, as the UI reads": lambda: store.list_workflows(
            WorkflowFilter(newest_first=True, limit=50, payloads=False)
        ),
    }
    by_customer = WorkflowFilter(where="customer = '42'", limit=50, payloads=False)
    found["list: where customer = '42', 50"] = lambda: store.list_workflows(by_customer)
    found["count: where customer = '42'"] = lambda: store.count_workflows(
        WorkflowFilter(where="customer = '42'")
    )
    if app is not None:
        import warnings

        with warnings.catch_warnings():  # starlette's note on httpx versions, not ours
            warnings.simplefilter("ignore")
            from starlette.testclient import TestClient

        client = TestClient(app, base_url="http://127.0.0.1")

        def page(path: str) -> Callable[[], Any]:
            def get() -> Any:
                response = client.get(path)
                if response.status_code != 200:
                    raise RuntimeError(f"GET {path}: {response.status_code}")
                return response

            return get

        found["UI: runs page"] = page("/")
        found["UI: runs page, FAILED"] = page("/?status=ERROR")
        found["UI: runs page, where customer = '42'"] = page("/?where=customer+%3D+%2742%27")
    return found


def measure(pg: str, runs: int, repeat: int, now: datetime) -> dict[str, tuple[float, float]]:
    schema = f"bench_op_{uuid.uuid4().hex[:8]}"
    try:
        started = time.perf_counter()
        fill(pg, schema, runs, now)
        print(f"  {runs:,} runs written in {time.perf_counter() - started:.1f} s")
        store = PostgresStore(pg, schema=schema)
        try:
            try:
                from replaykit.ui import create_app

                app = create_app(store)
            except ImportError:  # the ui extra is not installed
                app = None
            return {name: timed(call, repeat) for name, call in cases(store, app, now).items()}
        finally:
            store.close()
    finally:
        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args(argv)
    now = datetime.now(UTC)
    print(f"baseline: {args.baseline:,} runs")
    small = measure(args.pg, args.baseline, args.repeat, now)
    print(f"measured: {args.runs:,} runs")
    large = measure(args.pg, args.runs, args.repeat, now)
    print(f"\n{'read':40} {'p50 small':>10} {'p50 large':>10} {'p95 large':>10} {'ratio':>7}")
    for name, (p50, p95) in large.items():
        base = small[name][0]
        print(f"{name:40} {base:9.1f}ms {p50:9.1f}ms {p95:9.1f}ms {p50 / base:6.1f}x")
    print("\ntargets: a selective filter < 50 ms at p50; the runs page < 300 ms")


if __name__ == "__main__":
    main()
