"""`create_workflows`: what the conformance suite cannot see from outside a store.

The suite (replaykit.testing.conformance, run on every store by test_stores.py)
checks the answers, dedup, notifications and claim order. Here: how many
statements PostgreSQL gets, concurrent batches on SQLite and PostgreSQL, a run
deleted under a batch, and the plans PostgreSQL uses for the batch statements.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import PG_URL, drop_schema, fresh_schema_name, require_postgres
from replaykit.errors import DuplicateDedupId
from replaykit.log import Status
from replaykit.stores import SqliteStore
from replaykit.stores.base import Store, WorkflowRow


def _queued(workflow_id: str, **fields: Any) -> WorkflowRow:
    fields.setdefault("queue", "q")
    return WorkflowRow(workflow_id, "wf", Status.ENQUEUED, executor_id="", **fields)


class _Counting:
    """A pooled connection that notes each statement and transaction it is given."""

    def __init__(self, conn: Any, seen: list[str], after: Callable[[str], None]) -> None:
        self._conn = conn
        self._seen = seen
        self._after = after

    def execute(self, query: str, params: Any = None, **kwargs: Any) -> Any:
        self._seen.append(query)
        result = self._conn.execute(query, params, **kwargs)
        self._after(query)
        return result

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self._seen.append("BEGIN")
        with self._conn.transaction():
            yield
        self._seen.append("COMMIT")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _count_statements(
    store: Any, monkeypatch: pytest.MonkeyPatch, after: Callable[[str], None] = lambda q: None
) -> list[str]:
    """Statements the store sends from now on, in order ("BEGIN"/"COMMIT" for transactions)."""
    seen: list[str] = []
    real = store._db.connection

    @contextlib.contextmanager
    def counted() -> Iterator[Any]:
        with real() as conn:
            yield _Counting(conn, seen, after)

    monkeypatch.setattr(store._db, "connection", counted)
    return seen


def test_postgres_creates_a_batch_with_one_statement(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_store.create_workflow(_queued("old"))
    seen = _count_statements(pg_store, monkeypatch)
    answers = pg_store.create_workflows([_queued(f"n-{i}", priority=i % 3) for i in range(200)])
    assert [created for _, created in answers] == [True] * 200
    # The ids into the directory of ids, the runs, their queue items, then the queue's
    # note, in one transaction.
    assert len(seen) == 6 and seen[0] == "BEGIN" and seen[-1] == "COMMIT", seen
    assert "run_shards" in seen[1] and ".workflows" in seen[2], seen
    assert ".queue_items" in seen[3] and "pg_notify" in seen[4], seen

    seen.clear()
    answers = pg_store.create_workflows([_queued("n-0"), _queued("new"), _queued("old")])
    assert [(r.workflow_id, c) for r, c in answers] == [
        ("n-0", False),
        ("new", True),
        ("old", False),
    ]
    # The inserts, then one read of the runs in the way.
    assert len(seen) == 7 and "INSERT INTO" in seen[2] and "queue_items" in seen[3], seen
    assert "pg_notify" in seen[4] and "INSERT" not in seen[5], seen

    seen.clear()
    pg_store.create_workflows([_queued(f"d-{i}", dedup_id=f"u-{i}") for i in range(50)])
    # With dedup_ids: the advisory locks, the check and the insert, in one transaction.
    assert seen[0] == "BEGIN" and seen[-1] == "COMMIT" and len(seen) == 8, seen
    assert sum("INSERT INTO" in q for q in seen) == 3


@pytest.mark.parametrize("dedup", [None, "u-1"])
def test_postgres_batch_creates_a_run_deleted_under_it(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch, dedup: str | None
) -> None:
    pg_store.create_workflow(WorkflowRow("victim", "old", Status.SUCCESS))
    deleted: list[bool] = []

    def delete_after_insert(query: str) -> None:
        # Between the insert, which found the victim in its way, and the read of it.
        if "INSERT INTO" in query and not deleted:
            deleted.append(pg_store.delete_workflow("victim"))

    _count_statements(pg_store, monkeypatch, delete_after_insert)
    answers = pg_store.create_workflows([_queued("other"), _queued("victim", dedup_id=dedup)])
    assert deleted == [True]
    assert [(r.workflow_id, c) for r, c in answers] == [("other", True), ("victim", True)]
    row = pg_store.get_workflow("victim")
    assert row is not None and row.name == "wf" and row.status is Status.ENQUEUED
    assert row == answers[1][0]


def _in_threads(count: int, body: Callable[[int], Any]) -> list[Any]:
    """`body(i)` on `count` threads started together; each one's result or exception."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        barrier.wait()
        try:
            results[index] = body(index)
        except BaseException as exc:
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def _stores(kind: str, tmp_path: Path, pg_schema: Callable[[], str]) -> list[Store]:
    """Three stores on one database, as three engines would have."""
    if kind == "sqlite":
        return [SqliteStore(tmp_path / "batch.db") for _ in range(3)]
    from replaykit.stores.postgres import PostgresStore

    schema = pg_schema()
    return [PostgresStore(PG_URL, schema=schema, pool_max=4) for _ in range(3)]


@pytest.fixture
def pg_target(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """A fresh schema's name, made on first use only (SQLite runs need no server)."""
    made: list[str] = []

    def make() -> str:
        if not made:
            require_postgres()
            made.append(fresh_schema_name(request.node.name))
        return made[0]

    yield make
    if made:
        drop_schema(made[0])


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_concurrent_batches_of_the_same_ids_create_each_once(
    kind: str, tmp_path: Path, pg_target: Callable[[], str]
) -> None:
    stores = _stores(kind, tmp_path, pg_target)
    try:
        for round_ in range(5):
            ids = [f"r{round_}-{n:03d}" for n in range(60)]

            def batch(index: int, ids: list[str] = ids) -> list[tuple[str, bool]]:
                # Each thread names the ids in an order of its own.
                mine = ids if index % 2 == 0 else ids[::-1]
                answers = stores[index % len(stores)].create_workflows(
                    [_queued(wid, inputs={"by": index}) for wid in mine]
                )
                return [(row.workflow_id, created) for row, created in answers]

            results = _in_threads(6, batch)
            errors = [r for r in results if isinstance(r, BaseException)]
            assert errors == []
            created = sorted(wid for answers in results for wid, new in answers if new)
            assert created == ids  # every id created by exactly one batch
            for wid in ids:
                row = stores[0].get_workflow(wid)
                assert row is not None and row.status is Status.ENQUEUED
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_concurrent_batches_on_one_dedup_id_let_one_through(
    kind: str, tmp_path: Path, pg_target: Callable[[], str]
) -> None:
    stores = _stores(kind, tmp_path, pg_target)
    try:
        for round_ in range(5):
            dedup = f"once-{round_}"

            def enqueue(index: int, dedup: str = dedup, round_: int = round_) -> str:
                store = stores[index % len(stores)]
                mine = f"{round_}-{index}"
                if index == 0:  # one contender enqueues alone
                    store.create_workflow(_queued(f"t{mine}", dedup_id=dedup))
                    return f"t{mine}"
                store.create_workflows(
                    [
                        _queued(f"a{mine}", dedup_id=f"own-{mine}"),
                        _queued(f"t{mine}", dedup_id=dedup),
                        _queued(f"b{mine}"),
                    ]
                )
                return f"t{mine}"

            results = _in_threads(6, enqueue)
            winners = [r for r in results if isinstance(r, str)]
            assert len(winners) == 1, results
            losers = [r for r in results if not isinstance(r, str)]
            assert all(isinstance(r, DuplicateDedupId) for r in losers), losers
            assert {r.existing_id for r in losers} == set(winners)
            for index, result in enumerate(results):
                if isinstance(result, DuplicateDedupId) and index != 0:
                    for wid in (f"a{round_}-{index}", f"b{round_}-{index}"):
                        assert stores[0].get_workflow(wid) is None  # nothing half-written
    finally:
        for store in stores:
            store.close()


def test_postgres_batch_statements_keep_primary_key_plans(pg_url: str, pg_schema: str) -> None:
    """Prepared on an empty schema, the batch's statements still probe by primary key.

    The same hazard as tests/test_postgres_plans.py: a generic plan made while
    the table was empty must not scan `workflows` once it has grown.
    """
    from replaykit.stores.postgres import PostgresStore

    store = PostgresStore(pg_url, schema=pg_schema, pool_max=1)
    try:
        for round_ in range(14):
            store.create_workflows([_queued(f"p{round_}-{n}") for n in range(3)])
            # Ids in the way: the read of existing runs runs too.
            store.create_workflows([_queued(f"p{round_}-0"), _queued(f"p{round_}-x")])
        with store._db.connection() as conn:
            conn.execute(
                store._db.q(
                    "INSERT INTO {s}.workflows (shard_key, workflow_id, name, status, executor_id, "
                    "app_version, created_at, updated_at, queue) "
                    "SELECT 'grown-' || n, 'grown-' || n, 'wf', 'ENQUEUED', '', 'v1', %(now)s, "
                    "%(now)s, 'q' "
                    "FROM generate_series(1, 4000) AS n"
                ),
                {"now": datetime.now(UTC)},
            )
            prepared = conn.execute(
                "SELECT name, statement, cardinality(parameter_types), generic_plans "
                "FROM pg_prepared_statements WHERE statement LIKE %s",
                (f"%{store._db.s}.workflows%",),
            ).fetchall()
            batch = ("jsonb_array_elements", "unnest(")
            prepared = [p for p in prepared if any(marker in p[1] for marker in batch)]
            assert len(prepared) == 2, [p[1][:60] for p in prepared]  # the insert, the read
            conn.execute("SET plan_cache_mode = force_generic_plan")
            # The generic plan, whether or not PostgreSQL has switched to it yet.
            for name, statement, arity, _ in prepared:
                plan = "\n".join(
                    line[0]
                    for line in conn.execute(
                        f"EXPLAIN EXECUTE {name}({', '.join(['NULL'] * arity)})"
                    ).fetchall()
                )
                assert "workflows_by_" not in plan and "Seq Scan on workflows" not in plan, (
                    f"{statement[:120]}...\n{plan}"
                )
            conn.execute("RESET plan_cache_mode")
    finally:
        store.close()


def test_postgres_batch_dedup_check_probes_by_id_and_dedup_id(pg_url: str, pg_schema: str) -> None:
    """The dedup check is planned each time; on a grown table it must still probe.

    With EXISTS, the planner hashed every run's id for a batch of a few
    hundred; with the ORDER BY next to the search, it walked the created_at
    index for each dedup_id instead of looking it up.
    """
    from replaykit.stores.postgres import PostgresStore

    store = PostgresStore(pg_url, schema=pg_schema, pool_max=1)
    try:
        with store._db.connection() as conn:
            conn.execute(
                store._db.q(
                    "INSERT INTO {s}.workflows (shard_key, workflow_id, name, status, executor_id, "
                    "app_version, created_at, updated_at, queue, dedup_id) "
                    "SELECT 'grown-' || n, 'grown-' || n, 'wf', "
                    "CASE WHEN n %% 3 = 0 THEN 'ENQUEUED' "
                    "ELSE 'SUCCESS' END, '', 'v1', %(now)s, %(now)s, 'q', 'd-' || (n %% 100) "
                    "FROM generate_series(1, 20000) AS n"
                ),
                {"now": datetime.now(UTC)},
            )
            conn.execute(store._db.q("ANALYZE {s}.workflows"))
            batch = 500
            plan = "\n".join(
                line[0]
                for line in conn.execute(
                    "EXPLAIN " + store._db.sql["dedup_holders"],
                    {
                        "wid": [f"new-{n}" for n in range(batch)],
                        "queue": ["q"] * batch,
                        "dedup": [f"d-{n}" for n in range(batch)],
                    },
                ).fetchall()
            )
        # Whether an id exists is a probe of the directory of ids by its key.
        assert "run_shards_pkey" in plan and "workflows_by_dedup" in plan, plan
        assert "Seq Scan on workflows" not in plan and "workflows_by_created" not in plan, plan
        # And the check still finds the live holder it should.
        with pytest.raises(DuplicateDedupId) as refused:
            store.create_workflows(
                [_queued("new-a", dedup_id="d-fresh"), _queued("new-b", dedup_id="d-3")]
            )
        assert refused.value.existing_id.startswith("grown-")
        assert store.get_workflow("new-a") is None
    finally:
        store.close()
