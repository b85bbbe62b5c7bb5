"""Queue items: a queue's waiting runs, placed by the queue's name (migration 16).

A run going on its queue writes its item in the transaction that puts it there;
claims read and take the items (claims.py). What this room holds is how a run
becomes an item, so that every path that enqueues writes the same row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg

from replaykit import serde
from replaykit.log import Status
from replaykit.stores.base import WorkflowRow
from replaykit.stores.postgres.database import Database
from replaykit.stores.postgres.rows import iso

__all__ = ["enqueue_items", "item_of"]


def item_of(row: WorkflowRow) -> list[Any]:
    """The run's item, as the enqueue_items statement reads it."""
    return [
        row.queue,
        row.workflow_id,
        row.shard_key,
        row.partition_key or "",
        row.app_version,
        row.priority,
        iso(row.created_at),
        iso(row.wake_at),
    ]


def enqueue_items(db: Database, conn: psycopg.Connection[Any], rows: Iterable[WorkflowRow]) -> None:
    """Write the items of those of `rows` that wait on a queue (inside their transaction)."""
    items = [
        item_of(row) for row in rows if row.status is Status.ENQUEUED and row.queue is not None
    ]
    if items:
        conn.execute(db.sql["enqueue_items"], (serde.dumps(items),))
