"""The schema ready to shard, proved on plain PostgreSQL (docs/storage.md, "Past one server").

A store opened with `partitions=N` splits every table of runs into N hash
partitions by the key a sharded database would place its rows by. On it the
whole store conformance suite passes, and every statement of a run's hot path
names the key as a constant: `EXPLAIN` shows it touching one partition of each
table it reads, as a sharded database would route it to one node.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from conftest import drop_schema, require_postgres
from replaykit.errors import StoreError
from replaykit.log import Record, Status, Value
from replaykit.stores.base import (
    CancelRequest,
    ClaimLimits,
    EventWrite,
    OutgoingMessage,
    StepHeartbeat,
    WorkflowRow,
)
from replaykit.stores.postgres import PostgresStore
from replaykit.stores.postgres.layout import PARTITIONED_BY
from replaykit.testing import check_store

PARTITIONS = 4
_PARTITION = re.compile(r"\b(" + "|".join(PARTITIONED_BY) + r")_p(\d+)\b")


@pytest.fixture
def partitioned_schema(pg_url: str) -> Iterator[str]:
    require_postgres()
    schema = f"rk_shards_{uuid.uuid4().hex[:10]}"
    try:
        yield schema
    finally:
        drop_schema(schema)


def _truncate(url: str, schema: str) -> None:
    """Empty every table but the schema's version: a fresh store, without building the
    schema again (88 partitions a time) for each of the suite's checks."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND NOT c.relispartition "
                "AND c.relname <> 'schema_version'",
                (schema,),
            ).fetchall()
        ]
        conn.execute(
            sql.SQL("TRUNCATE {} RESTART IDENTITY").format(
                sql.SQL(", ").join(sql.Identifier(schema, t) for t in tables)
            )
        )


def test_the_store_conforms_on_a_partitioned_schema(pg_url: str, partitioned_schema: str) -> None:
    PostgresStore(pg_url, schema=partitioned_schema, partitions=PARTITIONS).close()

    def fresh() -> PostgresStore:
        _truncate(pg_url, partitioned_schema)
        return PostgresStore(pg_url, schema=partitioned_schema, partitions=PARTITIONS)

    check_store(fresh)
    with psycopg.connect(pg_url) as conn:
        parts = conn.execute(
            "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhparent "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'p'",
            (partitioned_schema,),
        ).fetchone()
    assert parts == (len(PARTITIONED_BY) * PARTITIONS,)


class _Recording:
    """Every statement the store sends, with its parameters, as it sends them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[tuple[str, Any]] = []
        execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

        def recorded(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            if isinstance(query, str):
                self.sent.append((query, params))
            return execute(cur, query, params, **kw)

        def recorded_many(cur: Any, query: Any, params_seq: Any, **kw: Any) -> Any:
            params_seq = list(params_seq)
            if isinstance(query, str):
                self.sent.extend((query, params) for params in params_seq)
            return executemany(cur, query, params_seq, **kw)

        monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
        monkeypatch.setattr(psycopg.Cursor, "executemany", recorded_many)


def _step(position: int, data: Any = None, **fields: Any) -> Record:
    fields.setdefault("kind", "step")
    fields.setdefault("name", f"s{position}")
    return Record(position=position, outcome=Value(data), **fields)


def _hot_path(store: PostgresStore) -> None:
    """What an engine asks of the store for runs in their common life, call by call
    (no group commit: each write is its own statement, as under light load)."""
    now = datetime.now(UTC)
    store.create_workflow(WorkflowRow("hot", "wf", Status.PENDING, executor_id="e1"))
    store.create_workflow(WorkflowRow("hot-child", "wf", Status.PENDING, parent_id="hot"))
    store.create_workflow(WorkflowRow("peer", "wf", Status.PENDING, shard_key="tenant-7"))
    store.get_workflow("hot")
    store.load_log("hot")
    store.record("hot", _step(0, 1), executor_id="e1")
    store.record("hot", _step(1, 2))
    store.record("hot", _step(2, 3), event=EventWrite("progress", 2))
    store.record("hot", _step(3, 4), send=OutgoingMessage("peer", "ping", "hi"))
    store.record(
        "hot",
        _step(4, 5),
        send=OutgoingMessage("peer", "ping", "again", idempotency_key="k1"),
    )
    store.send_message("hot", "inbox", "first")
    store.send_message("hot", "inbox", "second", idempotency_key="k2")
    message = store.peek_message("hot", "inbox")
    assert message is not None
    store.peek_message("hot", ("inbox", "other"))
    store.record("hot", _step(5, "got"), consume=message.message_id)
    store.get_event("hot", "progress")
    store.get_events("hot")
    store.record_step_heartbeat("hot", StepHeartbeat(6, "s6", 1, now, {"done": 1}))
    store.get_step_heartbeats("hot")
    store.record(
        "hot", Record(6, "sleep", "nap", None, wake_at=now + timedelta(seconds=5)), executor_id="e1"
    )
    store.record("hot-child", Record(0, "step", "slow", None))
    store.request_cancel("hot-child", CancelRequest("enough", now, now))
    store.get_cancel_request("hot-child")
    store.set_status("hot-child", Status.CANCELLED, only_from=[Status.PENDING])
    # The step that was running when the cancel came lands its result late.
    store.record_late("hot-child", Record(0, "step", "slow", Value(1)))
    store.finish_workflow("peer", Status.SUCCESS, Value("done"))
    store.finish_workflow("hot", Status.SUCCESS, Value("done"), record=_step(7, "end"))
    store.create_workflow(WorkflowRow("gen", "wf", Status.PENDING, executor_id="e1"))
    store.record("gen", _step(0, 1))
    store.continue_workflow(
        "gen", {"args": [2], "kwargs": {}}, generation=0, executor_id="e1", now=now
    )
    store.create_workflow(
        WorkflowRow("queued", "wf", Status.ENQUEUED, queue="q", executor_id="", app_version="v1")
    )
    claimed = store.claim(
        "q", executor_id="e1", app_version="v1", limits=ClaimLimits(limit=5), now=now
    )
    assert [row.workflow_id for row in claimed] == ["queued"]


def test_the_hot_path_touches_one_partition_per_statement(
    pg_url: str, partitioned_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_url, schema=partitioned_schema, partitions=PARTITIONS, pool_max=2)
    try:
        recording = _Recording(monkeypatch)
        _hot_path(store)
        monkeypatch.undo()
    finally:
        store.close()
    explained = 0
    problems = []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for query, params in recording.sent:
            head = query.lstrip().split(None, 1)[0].upper()
            if head not in ("SELECT", "WITH", "UPDATE", "DELETE", "INSERT"):
                continue
            if not any(f".{table}" in query for table in PARTITIONED_BY):
                continue  # no table of runs: a lock, a notification, the heartbeats
            plan = "\n".join(
                row[0] for row in conn.execute(f"EXPLAIN (COSTS OFF) {query}", params).fetchall()
            )
            explained += 1
            touched: dict[str, set[str]] = {}
            for table, number in _PARTITION.findall(plan):
                touched.setdefault(table, set()).add(number)
            spread = {table: parts for table, parts in touched.items() if len(parts) > 1}
            if spread:
                problems.append(f"{query[:200]}\n  touches {spread}\n{plan}")
    # Every kind of statement of the path was looked at, not a handful.
    assert explained >= 30, explained
    assert not problems, "\n\n".join(problems)


def test_a_family_and_its_records_share_a_partition(pg_url: str, partitioned_schema: str) -> None:
    store = PostgresStore(pg_url, schema=partitioned_schema, partitions=PARTITIONS)
    try:
        store.create_workflow(WorkflowRow("root", "wf", Status.PENDING))
        for n in range(6):
            store.create_workflow(WorkflowRow(f"child-{n}", "wf", Status.PENDING, parent_id="root"))
            store.record(f"child-{n}", _step(0, n))
        with psycopg.connect(pg_url) as conn:
            places = conn.execute(
                sql.SQL(
                    "SELECT DISTINCT tableoid::regclass::text FROM {}.workflows UNION "
                    "SELECT DISTINCT tableoid::regclass::text FROM {}.records"
                ).format(sql.Identifier(partitioned_schema), sql.Identifier(partitioned_schema))
            ).fetchall()
        assert len({place.split(".")[-1].split("_p")[-1] for (place,) in places}) == 1, places
    finally:
        store.close()


def test_partitions_lay_out_only_a_schema_without_runs(
    pg_url: str, partitioned_schema: str
) -> None:
    with pytest.raises(ValueError, match="partitions must be a whole number from 2"):
        PostgresStore(pg_url, schema=partitioned_schema, partitions=1)
    plain = PostgresStore(pg_url, schema=partitioned_schema)
    try:
        plain.create_workflow(WorkflowRow("kept", "wf", Status.PENDING))
    finally:
        plain.close()
    with pytest.raises(StoreError, match="holds 1 runs: partitions= lays out a new schema"):
        PostgresStore(pg_url, schema=partitioned_schema, partitions=4)
    reopened = PostgresStore(pg_url, schema=partitioned_schema)
    try:
        kept = reopened.get_workflow("kept")
        assert kept is not None and kept.shard_key == "kept"
    finally:
        reopened.close()
