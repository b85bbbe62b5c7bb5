"""Shard keys: a tenant's runs, and every child they start, placed together.

    python examples/shard_keys.py                  # SQLite: keys kept, nothing to shard
    REPLAYKIT_URL=postgresql://... python examples/shard_keys.py --partitions 4

A run's shard key places its rows (its log, inbox, events) on one shard of a
sharded database, or one partition of a partitioned schema; its children take it,
so a family's statements stay on one shard. Without `shard_key=` a run's key is its
own id. With `--partitions N` on PostgreSQL the example lays a new schema out in N
hash partitions (`PostgresStore(partitions=N)`) and shows which partition holds
each tenant's runs and records.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Any

from replaykit import Call, Engine, Step, workflow


def price(item: str) -> int:
    return len(item) * 100


@workflow
def quote_item(item: str) -> Generator[Any, Any, int]:
    return (yield Step("price", price, item))


@workflow
def quote(items: list[str]) -> Generator[Any, Any, int]:
    total = 0
    for item in items:
        total += yield Call(quote_item, item)  # a child run: it takes this run's key
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=None)
    args = parser.parse_args()
    url = os.environ.get("REPLAYKIT_URL")
    store: Any
    if url and url.startswith("postgresql") and args.partitions:
        from replaykit.stores.postgres import PostgresStore

        schema = f"shard_keys_{uuid.uuid4().hex[:8]}"
        store = PostgresStore(url, schema=schema, partitions=args.partitions)
    else:
        store = url or f"sqlite:///{Path(tempfile.mkdtemp()) / 'replaykit.db'}"
    with Engine(store) as engine:
        handles = {
            tenant: engine.start(quote, items, shard_key=tenant)
            for tenant, items in (("tenant-a", ["pen", "ink"]), ("tenant-b", ["desk"]))
        }
        plain = engine.start(quote, ["lamp"])
        for tenant, handle in handles.items():
            print(f"{tenant}: quote {handle.result(timeout=30)}")
        print(f"no key given: quote {plain.result(timeout=30)}")
        for row in sorted(engine.list_workflows(), key=lambda r: r.created_at or 0):
            role = "child" if row.parent_id else "run"
            print(f"  {role:5} {row.workflow_id[:8]}… shard key {row.shard_key!r}")
        families = {
            tenant: {
                row.shard_key
                for row in engine.list_workflows()
                if row.workflow_id == handle.workflow_id or row.parent_id == handle.workflow_id
            }
            for tenant, handle in handles.items()
        }
        print(f"each tenant's family under its own key: {families}")
        print(
            f"a run started without a key is its own: {plain.row().shard_key == plain.workflow_id}"
        )
        if hasattr(store, "schema"):
            _show_partitions(url or "", store.schema)
    if hasattr(store, "schema"):
        _drop(url or "", store.schema)  # the example's own schema, made above


def _show_partitions(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            sql.SQL(
                "SELECT shard_key, tableoid::regclass::text, count(*) FROM {}.records "
                "GROUP BY 1, 2 ORDER BY 1"
            ).format(sql.Identifier(schema))
        ).fetchall()
    for key, partition, count in rows:
        print(f"  records of shard key {key!r}: {count} in {partition.split('.')[-1]}")


def _drop(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


if __name__ == "__main__":
    main()
