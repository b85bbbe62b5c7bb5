"""The SQLite store's statements (statements.sql) by name, read once at import.

Each room names a statement where it runs it (`SQL["claim"]`), as the PostgreSQL
store's rooms do: a dict's lookup. `tests/test_sqlite_statements.py` holds every
name a room uses to the file, and every statement in the file to a room that runs it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection

import attrs

from replaykit.stores._shards import new_shard_key
from replaykit.stores._statements import Statements
from replaykit.stores.values import WorkflowRow

__all__ = ["SQL", "id_set", "keyed"]

SQL = Statements("replaykit.stores.sqlite", "statements.sql")


def keyed(conn: sqlite3.Connection, row: WorkflowRow, fork_of: str | None = None) -> WorkflowRow:
    """`row` with its shard key (stores/_shards.py: a fork's is its source's), read
    inside the write that creates it."""
    if row.shard_key is not None:
        return row

    def key_of(elder: str) -> str | None:
        found = conn.execute(SQL["shard_of"], (elder,)).fetchone()
        return None if found is None else str(found[0])

    source_key = None if fork_of is None else key_of(fork_of)
    if source_key is not None and row.continued_as is None:
        return attrs.evolve(row, shard_key=source_key)
    return attrs.evolve(row, shard_key=new_shard_key(row, key_of))


def id_set(ids: Collection[object]) -> str:
    """A set of ids as the one JSON array a statement reads with `json_each(?)`."""
    return json.dumps(list(ids))
