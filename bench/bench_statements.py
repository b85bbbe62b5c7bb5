"""What each PostgreSQL store call costs the client and the server, against the floor.

    python -m bench.bench_statements [--runs 1000] [--grown 4000] [--repeat 3] [--pg URL]

On a fresh schema, first warms up every kind of call on the still empty tables
(as an engine starting on a new deployment does: psycopg prepares each
statement then, and PostgreSQL keeps the plan it made for that connection),
then adds `--grown` finished runs, then times `--runs` calls of each kind one after another,
each on its own run: `create_workflow`, the first checkpoint (`record` at
position 0), a later checkpoint (position 1), `finish_workflow`. Beside them,
in the same run and alternating, the floor: psycopg doing one autocommit
INSERT of three columns. Prints wall time, client CPU (this process) and server
CPU (every local `postgres` process, from /proc; "—" for a remote server) per
call, and each as a ratio to the floor's. This is the table behind "Where the
missed targets stand" in docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from bench.measure import cpu_reading
from bench.suite import DEFAULT_PG
from replaykit.log import Record, Status, Value
from replaykit.stores.base import WorkflowRow
from replaykit.stores.postgres import PostgresStore

_KINDS = ("floor insert", "create_workflow", "record, position 0", "record, position 1", "finish")


def _local(url: str) -> bool:
    host = psycopg.conninfo.conninfo_to_dict(url).get("host") or ""
    return str(host) in ("", "localhost", "127.0.0.1", "::1") or str(host).startswith("/")


def _step(position: int, value: int) -> Record:
    started = datetime.now(UTC)
    return Record(
        position, "step", "trivial", Value(value), started_at=started, completed_at=started
    )


def _calls(
    store: PostgresStore, floor: psycopg.Connection[Any], floor_insert: str, ids: list[str]
) -> dict[str, Callable[[int], Any]]:
    """Call n of each kind, on run ids[n]."""
    return {
        "floor insert": lambda n: floor.execute(floor_insert, (ids[n], 0, '{"value": 1}')),
        "create_workflow": lambda n: store.create_workflow(
            WorkflowRow(ids[n], "wf", Status.PENDING, executor_id="e1", app_version="v1")
        ),
        "record, position 0": lambda n: store.record(ids[n], _step(0, n), executor_id="e1"),
        "record, position 1": lambda n: store.record(ids[n], _step(1, n), executor_id="e1"),
        "finish": lambda n: store.finish_workflow(
            ids[n], Status.SUCCESS, Value(n), executor_id="e1"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--grown", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args()
    local = _local(args.pg)
    schema = f"rkbench_statements_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(args.pg, schema=schema)
    floor = psycopg.connect(args.pg, autocommit=True)
    try:
        store.migrate()
        # pool_max connections may each prepare the statements; warm them all.
        warm = [f"warm-{n}" for n in range(40)]
        for kind, call in _calls(store, floor, "", warm).items():
            if kind != "floor insert":
                for n in range(len(warm)):
                    call(n)
        now = datetime.now(UTC)
        with store._db.connection() as conn:
            conn.execute(
                store._db.q(
                    "INSERT INTO {s}.workflows (shard_key, workflow_id, name, status, "
                    "executor_id, app_version, created_at, updated_at) "
                    "SELECT 'old-' || n, 'old-' || n, 'wf', 'SUCCESS', "
                    "'e1', 'v1', %(now)s, %(now)s FROM generate_series(1, %(grown)s) AS n"
                ),
                {"now": now, "grown": args.grown},
            )
        floor.execute(
            store._db.q(
                "CREATE TABLE {s}.floor (workflow_id text, position integer, outcome text, "
                "PRIMARY KEY (workflow_id, position))"
            )
        )
        floor_insert = store._db.q("INSERT INTO {s}.floor VALUES (%s, %s, %s)")

        samples: dict[str, list[tuple[float, float, float | None]]] = {k: [] for k in _KINDS}
        for rep in range(args.repeat):
            ids = [f"r{rep}-{n}" for n in range(args.runs)]
            calls = _calls(store, floor, floor_insert, ids)
            for kind in _KINDS:  # in order: each kind needs the one before it
                before = cpu_reading(local)
                start = time.perf_counter()
                for n in range(args.runs):
                    calls[kind](n)
                wall = time.perf_counter() - start
                client, server = cpu_reading(local).since(before)
                samples[kind].append((wall, client, server))
    finally:
        store.close()
        floor.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        floor.close()

    def per_call(kind: str, index: int) -> float | None:
        values = [s[index] for s in samples[kind]]
        known = [float(v) for v in values if v is not None]
        if len(known) < len(values):
            return None
        return statistics.median(known) / int(args.runs) * 1e6

    base = [per_call("floor insert", i) for i in range(3)]
    print(
        f"PostgreSQL store calls, {args.runs} each on a table of {args.grown} finished runs, "
        f"medians of {args.repeat} (us per call; ratio to the floor insert)"
    )
    print(f"{'':22s} {'wall':>16s} {'client CPU':>16s} {'server CPU':>16s}")
    for kind in _KINDS:
        cells = []
        for i in range(3):
            value, floor_value = per_call(kind, i), base[i]
            if value is None or floor_value is None:
                cells.append(f"{'—':>16s}")
            else:
                cells.append(f"{value:8.0f} ({value / floor_value:4.2f}x)")
        print(f"{kind:22s} " + " ".join(cells))


if __name__ == "__main__":
    main()
