"""A schema whose per-run tables are hash-partitioned by their shard key.

`PostgresStore(url, partitions=N)` lays a new schema out so: every table of runs
is split into N partitions by the key that would place its rows on a shard of a
sharded database (docs/storage.md, "Past one server"): the run's shard key for a
run's tables, the run's id for the directory of ids and for parent close
policies, the queue's name for queue items. On one server this keeps each
partition's indexes small and lets VACUUM work partition by partition; above
all it proves the statements ready to shard: a statement that names the key
touches one partition, which `EXPLAIN` shows (tests/test_shard_ready.py).

The migrations make the tables; this turns each, while the schema holds no run,
into a partitioned table of the same columns, keys and indexes. Later migrations
alter the partitioned tables as they would the plain ones.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from replaykit.errors import StoreError

__all__ = ["PARTITIONED_BY", "is_partitioned", "partition_schema"]

#: Each table of runs and the column its rows are placed by.
PARTITIONED_BY: dict[str, str] = {
    "workflows": "shard_key",
    "records": "shard_key",
    "messages": "shard_key",
    "inboxes": "shard_key",
    "events": "shard_key",
    "send_keys": "shard_key",
    "step_heartbeats": "shard_key",
    "cancel_requests": "shard_key",
    "run_shards": "workflow_id",
    "parent_close_policies": "workflow_id",
    "queue_items": "queue",
}

# The most partitions a table may be split into: far past what one server wants.
MAX_PARTITIONS = 1024


def is_partitioned(conn: psycopg.Connection[Any], schema: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = 'workflows'",
        (schema,),
    ).fetchone()
    return found is not None


def partition_schema(conn: psycopg.Connection[Any], schema: str, partitions: int) -> None:
    """Split the schema's tables of runs into `partitions` hash partitions each, in one
    transaction; refused if the schema holds a run (its rows would have to move)."""
    if not 2 <= partitions <= MAX_PARTITIONS:
        raise ValueError(
            f"partitions must be a whole number from 2 to {MAX_PARTITIONS}, got {partitions!r}"
        )
    s = sql.Identifier(schema)
    with conn.transaction():
        held = conn.execute(sql.SQL("SELECT count(*) FROM {}.run_shards").format(s)).fetchone()
        if held and held[0]:
            raise StoreError(
                f"schema {schema!r} holds {held[0]} runs: partitions= lays out a new schema. "
                "Start on a new schema, or leave partitions out for this one"
            )
        for table, column in PARTITIONED_BY.items():
            _partition_table(conn, schema, table, column, partitions)


def _partition_table(
    conn: psycopg.Connection[Any], schema: str, table: str, column: str, partitions: int
) -> None:
    s, t = sql.Identifier(schema), sql.Identifier(table)
    key = conn.execute(
        "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "WHERE c.conrelid = format('%%I.%%I', %s::text, %s::text)::regclass AND c.contype = 'p'",
        (schema, table),
    ).fetchone()
    indexes = [
        row[0]
        for row in conn.execute(
            "SELECT i.indexdef FROM pg_indexes i WHERE i.schemaname = %s AND i.tablename = %s "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname "
            "AND c.connamespace = (SELECT oid FROM pg_namespace WHERE nspname = %s))",
            (schema, table, schema),
        ).fetchall()
    ]
    staged = sql.Identifier(f"{table}__partitioned")
    conn.execute(
        sql.SQL(
            "CREATE TABLE {s}.{staged} (LIKE {s}.{t} INCLUDING DEFAULTS INCLUDING GENERATED "
            "INCLUDING STORAGE) PARTITION BY HASH ({column})"
        ).format(s=s, staged=staged, t=t, column=sql.Identifier(column))
    )
    conn.execute(sql.SQL("DROP TABLE {s}.{t}").format(s=s, t=t))
    conn.execute(sql.SQL("ALTER TABLE {s}.{staged} RENAME TO {t}").format(s=s, staged=staged, t=t))
    if key is not None:
        # The definitions come from the catalog of our own schema, never from data.
        conn.execute(sql.SQL("ALTER TABLE {s}.{t} ADD {key}").format(s=s, t=t, key=sql.SQL(key[0])))
    for definition in indexes:
        conn.execute(sql.SQL(definition))
    for remainder in range(partitions):
        conn.execute(
            sql.SQL(
                "CREATE TABLE {s}.{part} PARTITION OF {s}.{t} "
                "FOR VALUES WITH (MODULUS {modulus}, REMAINDER {remainder})"
            ).format(
                s=s,
                part=sql.Identifier(f"{table}_p{remainder}"),
                t=t,
                modulus=sql.Literal(partitions),
                remainder=sql.Literal(remainder),
            )
        )
