"""Statements that name a run find it by primary key, whatever plan a connection cached.

psycopg prepares a statement on its sixth execution, and PostgreSQL then keeps
a generic plan for it, chosen from the table statistics of that moment. On an
empty schema every index of `workflows` looks equally cheap, and a connection
once chose the (executor_id, app_version, status) index for the checkpoint's
row lock, then kept that plan while the table grew: every checkpoint read every
run its executor ever had, and PostgreSQL's CPU per step grew with the table
(until an ANALYZE, which a server without autovacuum never runs).

The test prepares every run-keyed statement on an empty schema, grows the
tables, and asks PostgreSQL for the plans the connection cached.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest

from replaykit.log import Record, Status, Value
from replaykit.stores._group import Slot
from replaykit.stores.base import StepHeartbeat, WorkflowRow

# More than psycopg's prepare threshold (5) plus PostgreSQL's custom-plan rounds (5).
_ROUNDS = 14


@pytest.fixture
def one_connection_store(pg_url: str, pg_schema: str) -> Iterator[Any]:
    from replaykit.stores.postgres import PostgresStore

    # One pooled connection, so every statement is prepared on the connection inspected.
    store = PostgresStore(pg_url, schema=pg_schema, pool_max=1)
    yield store
    store.close()


def _row(workflow_id: str) -> WorkflowRow:
    return WorkflowRow(
        workflow_id=workflow_id,
        name="wf",
        status=Status.PENDING,
        inputs=None,
        executor_id="e1",
        app_version="v1",
    )


def _step(position: int) -> Record:
    return Record(position, "step", f"s{position}", Value(position))


def _use_every_run_keyed_statement(store: Any, round_: int) -> None:
    from replaykit.stores.postgres import _Finish, _PlainRecord

    ids = [f"r{round_}-{n}" for n in range(12)]
    for workflow_id in ids:
        store.create_workflow(_row(workflow_id))
    # One at a time: the one-record and one-finish statements, with and without an owner.
    store.record(ids[0], _step(0), executor_id="e1")
    store.record(ids[0], _step(1), executor_id="e1")
    store.record(ids[1], _step(0))
    store.record(ids[1], _step(1))
    store.finish_workflow(ids[0], Status.SUCCESS, Value(1), executor_id="e1")
    store.finish_workflow(ids[1], Status.SUCCESS, Value(1))
    store.set_status(ids[2], Status.CANCELLED, only_from=[Status.PENDING])
    store.set_status(ids[2], Status.PENDING)
    # Batches, as group commit writes them: plain records, then finishes.
    records = [Slot(_PlainRecord(ids[n], _step(0), "e1", None)) for n in (3, 4, 5)]
    store._write_batch(records)
    finishes = [Slot(_Finish(ids[n], Status.SUCCESS, Value(2), "", "e1")) for n in (3, 4, 5)]
    store._write_batch(finishes)
    # Finishes with their last record: alone (first and later positions, with and
    # without an owner), then a batch of them.
    store.finish_workflow(ids[6], Status.SUCCESS, Value(1), executor_id="e1", record=_step(0))
    store.record(ids[7], _step(0))
    store.finish_workflow(ids[7], Status.SUCCESS, Value(1), executor_id="e1", record=_step(1))
    store.finish_workflow(ids[8], Status.SUCCESS, Value(1), record=_step(0))
    store.record(ids[9], _step(0))
    store.finish_workflow(ids[9], Status.SUCCESS, Value(1), record=_step(1))
    store.record(ids[11], _step(0))
    closing = [
        Slot(_Finish(ids[10], Status.SUCCESS, Value(3), "", "e1", _step(0))),
        Slot(_Finish(ids[11], Status.SUCCESS, Value(3), "", None, _step(1))),
    ]
    store._write_batch(closing)
    for slot in [*records, *finishes, *closing]:
        slot.outcome()  # raises if the batch refused it
    assert [slot.outcome() for slot in closing] == [True, True]
    # A step's heartbeat, with and without an owner, and read back.
    store.create_workflow(_row(f"r{round_}-beats"))
    beat = StepHeartbeat(0, "s0", 1, datetime.now(UTC), {"done": round_})
    assert store.record_step_heartbeat(f"r{round_}-beats", beat, executor_id="e1")
    assert store.record_step_heartbeat(f"r{round_}-beats", beat)
    assert store.get_step_heartbeats(f"r{round_}-beats") == [beat]


def test_run_keyed_statements_keep_primary_key_plans_as_the_tables_grow(
    one_connection_store: Any,
) -> None:
    store = one_connection_store
    for round_ in range(_ROUNDS):
        _use_every_run_keyed_statement(store, round_)

    now = datetime.now(UTC)
    with store._db.connection() as conn:
        # Thousands of runs of the same executor, most finished, some still PENDING.
        conn.execute(
            store._db.q(
                "INSERT INTO {s}.workflows (shard_key, workflow_id, name, status, executor_id, "
                "app_version, created_at, updated_at) "
                "SELECT 'grown-' || n, 'grown-' || n, 'wf', CASE WHEN n %% 10 = 0 THEN 'PENDING' "
                "ELSE 'SUCCESS' END, 'e1', 'v1', %(now)s, %(now)s "
                "FROM generate_series(1, 4000) AS n"
            ),
            {"now": now},
        )
        prepared = conn.execute(
            "SELECT name, statement, cardinality(parameter_types), generic_plans "
            "FROM pg_prepared_statements WHERE statement LIKE %s",
            (f"%{store._db.s}.workflows%",),
        ).fetchall()
        # Explain the plan each statement cached, not one made from today's statistics.
        conn.execute("SET plan_cache_mode = force_generic_plan")
        plans = {}
        for name, statement, arity, generic_plans in prepared:
            if not statement.lstrip().startswith(("WITH", "UPDATE")):
                continue  # inserts and reads by id: nothing to choose between
            closes = ".records" in statement and "wake_at = NULL" in statement
            if generic_plans == 0 and not closes:
                continue  # planned afresh on every execution: nothing cached to go stale
            # A finish with its record is checked either way: PostgreSQL may
            # switch a batch statement to its generic plan later on.
            arguments = ", ".join(["NULL"] * arity)
            lines = conn.execute(f"EXPLAIN EXECUTE {name}({arguments})").fetchall()
            plans[statement] = "\n".join(line[0] for line in lines)
        conn.execute("RESET plan_cache_mode")

    # At least the checkpoint statements (first and later positions) kept a generic plan.
    checkpoints = [s for s in plans if s.startswith("WITH run AS") and ".records" in s]
    assert len(checkpoints) >= 2, sorted(s[:60] for s in plans)
    # And the finishes with their last record: four shapes alone, and the batch.
    closing = [s for s in plans if ".records" in s and "wake_at = NULL" in s]
    assert len(closing) == 5, sorted(s[:60] for s in plans)
    # A step's heartbeat locks its run by id too.
    assert [s for s in plans if ".step_heartbeats" in s], sorted(s[:60] for s in plans)
    for statement, plan in plans.items():
        assert "workflows_by_" not in plan and "Seq Scan on workflows" not in plan, (
            f"{statement[:120]}...\ncached plan:\n{plan}"
        )


def test_queue_and_sweep_statements_are_planned_for_the_table_as_it_is(
    one_connection_store: Any,
) -> None:
    """Claims with limits, sweeps, takeovers and listings are planned on every execution.

    On an empty schema a cached plan counted a queue's PENDING runs through the
    (queue, started_at) index, reading every run the queue ever had; the claim
    itself, whose ORDER BY matches the (queue, status, priority, created_at)
    index, stays prepared and must keep using that index.
    """
    from replaykit.stores.base import ClaimLimits, WorkflowFilter

    store = one_connection_store
    for round_ in range(_ROUNDS):
        for n in range(3):
            row = attrs.evolve(
                _row(f"q{round_}-{n}"), status=Status.ENQUEUED, executor_id="", queue="q"
            )
            store.create_workflow(row)
        now = datetime.now(UTC)
        for limits in (
            ClaimLimits(limit=1),
            ClaimLimits(limit=1, concurrency=100),
            ClaimLimits(limit=1, rate_limit=(1000, 1.0)),
        ):
            assert store.claim("q", executor_id="e1", app_version="v1", limits=limits, now=now)
        store.heartbeat("e1", "v1", now)
        store.take_over(executor_id="e1", app_version="v1", lease_seconds=30, now=now)
        store.release("e-gone")
        store.list_workflows(
            WorkflowFilter(status=Status.PENDING, executor_id="e1", app_version="v1", limit=100)
        )
        store.list_workflows(WorkflowFilter(queue="q", limit=10))

    with store._db.connection() as conn:
        prepared = conn.execute(
            "SELECT name, statement, cardinality(parameter_types), generic_plans "
            "FROM pg_prepared_statements WHERE statement LIKE %s",
            (f"%{store._db.s}.workflows%",),
        ).fetchall()
        planned_each_time = (
            "SELECT count(*) FROM",  # a queue's PENDING runs, its recent starts
            "SELECT 1 FROM",  # is anything ready to claim
            "SELECT workflow_id, name, status",  # listings and sweeps
            "WITH r AS (UPDATE",  # release
        )
        for _, statement, _, _ in prepared:
            assert not statement.startswith(planned_each_time), statement
            assert "SET executor_id = $1, updated_at" not in statement, statement  # take_over
        claims = [row for row in prepared if "SET status = 'PENDING', executor_id" in row[1]]
        assert claims, [row[1][:60] for row in prepared]
        conn.execute("SET plan_cache_mode = force_generic_plan")
        # The plan each would take once generic (forced): PostgreSQL may switch to it.
        for name, _, arity, _ in claims:
            plan = "\n".join(
                line[0]
                for line in conn.execute(
                    f"EXPLAIN EXECUTE {name}({', '.join(['NULL'] * arity)})"
                ).fetchall()
            )
            # Runs are started by key, never found through an index on their status.
            assert "workflows_pkey" in plan and "workflows_by_" not in plan, plan
        items = conn.execute(
            "SELECT name, cardinality(parameter_types) FROM pg_prepared_statements "
            "WHERE statement LIKE %s",
            (f"DELETE FROM {store._db.s}.queue_items%",),
        ).fetchall()
        assert items
        for name, arity in items:
            plan = "\n".join(
                line[0]
                for line in conn.execute(
                    f"EXPLAIN EXECUTE {name}({', '.join(['NULL'] * arity)})"
                ).fetchall()
            )
            assert "queue_items_ready" in plan, plan
        conn.execute("RESET plan_cache_mode")
