"""The application the multi-worker proof test runs in `replaykit worker` processes.

Every step body writes a row to a side table in the same database, committed on
its own connection, so the test can count how often each step really ran. The
side table is `<PROOF_SCHEMA>.ran`: the test gives every run a schema of its own,
so two suite runs on one server do not share (or drop) each other's table.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Generator
from typing import Any

import psycopg
from psycopg import sql

from replaykit import Queue, Step, workflow

K = int(os.environ.get("PROOF_CONCURRENCY", "6"))
proof = Queue("proof", concurrency=K)

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

_conn: psycopg.Connection[Any] | None = None
_insert: sql.Composed | None = None


def _insert_statement() -> sql.Composed:
    """The INSERT into `<PROOF_SCHEMA>.ran`, the schema name checked and quoted."""
    global _insert
    if _insert is None:
        schema = os.environ.get("PROOF_SCHEMA", "")
        if not _SCHEMA_NAME.fullmatch(schema):
            raise RuntimeError(f"PROOF_SCHEMA must match {_SCHEMA_NAME.pattern}, got {schema!r}")
        _insert = sql.SQL("INSERT INTO {}.ran (workflow_id, step, pid) VALUES (%s, %s, %s)").format(
            sql.Identifier(schema)
        )
    return _insert


def _side() -> psycopg.Connection[Any]:
    global _conn
    if _conn is None or _conn.closed:
        _conn = psycopg.connect(os.environ["PROOF_PG"], autocommit=True)
    return _conn


def work(workflow_id: str, step: str) -> str:
    time.sleep(0.002)  # long enough that a SIGKILL lands inside a step now and then
    _side().execute(_insert_statement(), (workflow_id, step, os.getpid()))
    return step


@workflow(name="proof-item")
def proof_item(n: int) -> Generator[Any, Any, int]:
    from replaykit import context

    wid = context().workflow_id
    yield Step("first", work, wid, "first")
    yield Step("second", work, wid, "second")
    return n
