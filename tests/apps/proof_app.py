"""The application the multi-worker proof test runs in `replaykit worker` processes.

Every step body writes a row to a side table in the same database, committed on
its own connection, so the test can count how often each step really ran.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

import psycopg

from replaykit import Queue, Step, workflow

K = int(os.environ.get("PROOF_CONCURRENCY", "6"))
proof = Queue("proof", concurrency=K)

_conn: psycopg.Connection[Any] | None = None


def _side() -> psycopg.Connection[Any]:
    global _conn
    if _conn is None or _conn.closed:
        _conn = psycopg.connect(os.environ["PROOF_PG"], autocommit=True)
    return _conn


def work(workflow_id: str, step: str) -> str:
    time.sleep(0.002)  # long enough that a SIGKILL lands inside a step now and then
    _side().execute(
        "INSERT INTO proof_side.ran (workflow_id, step, pid) VALUES (%s, %s, %s)",
        (workflow_id, step, os.getpid()),
    )
    return step


@workflow(name="proof-item")
def proof_item(n: int) -> Generator[Any, Any, int]:
    from replaykit import context

    wid = context().workflow_id
    yield Step("first", work, wid, "first")
    yield Step("second", work, wid, "second")
    return n
