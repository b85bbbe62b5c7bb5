"""The group commit's kept connection (PostgreSQL) and its lone-write path.

A lone run's records go straight to the store's one-write path on a connection
the group commit keeps between writes: no pool checkout per record. These tests
pin what that must not change: a dropped connection is replaced and the retry
policy still lands the write, a pool of one keeps nothing back, and writes that
arrive while a lone write runs still gather into one batch.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest

from replaykit.errors import StoreUnavailable
from replaykit.log import Record, Status, Value
from replaykit.runtime.commits import RecordWriter
from replaykit.stores._group import GroupCommit, Slot
from replaykit.stores.base import WorkflowRow


def _rec(position: int) -> Record:
    return Record(position, "step", f"s{position}", Value(position))


def _count_checkouts(store: Any) -> list[int]:
    taken = [0]
    getconn = store._db.pool.getconn

    def counting(*args: Any, **kwargs: Any) -> Any:
        taken[0] += 1
        return getconn(*args, **kwargs)

    store._db.pool.getconn = counting
    return taken


def test_a_lone_writer_takes_no_pooled_connection_per_record(pg_store: Any) -> None:
    store = pg_store
    store.create_workflow(WorkflowRow("w", "wf", Status.PENDING, executor_id="e"))
    taken = _count_checkouts(store)
    for position in range(20):
        assert store.record("w", _rec(position), executor_id="e") == _rec(position)
    assert store.finish_workflow("w", Status.SUCCESS, result=Value(1), executor_id="e")
    assert taken[0] <= 1  # before: one checkout (and return) per record and per finish
    assert store.load_log("w") == [_rec(p) for p in range(20)]
    assert store.get_workflow("w").status is Status.SUCCESS


def test_a_dropped_kept_connection_is_replaced_and_the_write_retried(
    pg_store: Any, pg_url: str
) -> None:
    store = pg_store
    row = WorkflowRow("w", "wf", Status.PENDING, executor_id="e")
    store.create_workflow(row)
    store.record("w", _rec(0), executor_id="e")
    kept = store._db.held._conn
    assert kept is not None and not kept.closed
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (kept.info.backend_pid,))
    # The store call itself hears the outage, as with any pooled connection...
    with pytest.raises(StoreUnavailable):
        store.record("w", _rec(1), executor_id="e")
    assert store._db.held._conn is None  # ...and gives the broken connection back
    # ...and the writer's retry policy lands the record on a fresh one.
    writer = RecordWriter(store, executor_id="e", stop=lambda: False)
    assert writer.write(row, _rec(1)) == _rec(1)
    assert store._db.held._conn is not None and store._db.held._conn is not kept
    assert store.load_log("w") == [_rec(0), _rec(1)]


def test_a_pool_of_one_keeps_no_connection_back(pg_url: str, pg_schema: str) -> None:
    from replaykit.stores.postgres import PostgresStore

    store = PostgresStore(pg_url, schema=pg_schema, pool_max=1, connect_timeout=2)
    try:
        store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
        store.record("w", _rec(0))
        # Every other caller needs that one connection: it is back in the pool.
        conn = store._db.pool.getconn(timeout=1)
        store._db.pool.putconn(conn)
        assert store.load_log("w") == [_rec(0)]
    finally:
        store.close()


def test_writes_arriving_during_a_lone_write_gather_into_one_batch() -> None:
    alone: list[int] = []
    batches: list[list[int]] = []
    started, release = threading.Event(), threading.Event()

    def write_one(item: int) -> int:
        alone.append(item)
        if item < 0:
            raise ValueError(f"item {item} refused")
        started.set()
        assert release.wait(10)
        return item * 10

    def write_batch(slots: Sequence[Slot[int]]) -> None:
        batches.append([slot.item for slot in slots])
        for slot in slots:
            slot.set_result(slot.item * 10)

    group: GroupCommit[int] = GroupCommit(write_batch, write_one=write_one)
    results: dict[int, Any] = {}

    def submit(item: int) -> None:
        results[item] = group.submit(item)

    first = threading.Thread(target=submit, args=(1,))
    first.start()
    assert started.wait(10)
    others = [threading.Thread(target=submit, args=(item,)) for item in (2, 3, 4)]
    for thread in others:
        thread.start()
    while len(group._queue) < 3:
        threading.Event().wait(0.01)
    release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert alone == [1]
    assert batches == [[2, 3, 4]]
    assert results == {1: 10, 2: 20, 3: 30, 4: 40}
    # A lone write's failure is its caller's, and the lead is handed on.
    with pytest.raises(ValueError, match="item -1 refused"):
        group.submit(-1)
    assert group.submit(5) == 50


def test_a_kept_connection_closed_under_the_store_makes_room_in_the_pool(
    pg_url: str, pg_schema: str
) -> None:
    from replaykit.stores.postgres import PostgresStore

    store = PostgresStore(pg_url, schema=pg_schema, pool_max=2, connect_timeout=2)
    try:
        store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
        store.record("w", _rec(0))
        store._db.held._conn.close()
        store.record("w", _rec(1))  # on a fresh kept connection
        # The closed one went back to the pool: the second connection is there to take.
        conn = store._db.pool.getconn(timeout=1)
        store._db.pool.putconn(conn)
        assert store.load_log("w") == [_rec(0), _rec(1)]
    finally:
        store.close()
