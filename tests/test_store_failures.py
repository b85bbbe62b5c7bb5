"""Store failures are not outcomes: lost acknowledgements, dropped connections."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from typing import Any

import pytest

import replaykit
from replaykit import Engine, Recv, Step, workflow
from replaykit.errors import StoreUnavailable
from replaykit.log import Record
from replaykit.stores.base import Store

RAN: dict[str, int] = {}
LOCK = threading.Lock()


def tick(name: str) -> str:
    with LOCK:
        RAN[name] = RAN.get(name, 0) + 1
    return name


class LosesAcks:
    """Wraps a store: chosen record() calls commit, then report the connection lost."""

    def __init__(self, inner: Store, fail_positions: set[int]) -> None:
        self.inner = inner
        self.fail_positions = set(fail_positions)
        self.failures = 0

    def record(self, workflow_id: str, record: Record, **kwargs: Any) -> Record:
        stored = self.inner.record(workflow_id, record, **kwargs)
        if record.outcome is not None and record.position in self.fail_positions:
            self.fail_positions.discard(record.position)
            self.failures += 1
            raise StoreUnavailable("connection lost after COMMIT (simulated)")
        return stored

    def finish_workflow(self, workflow_id: str, *args: Any, **kwargs: Any) -> bool:
        # A run's last record may commit with its finish: lose that acknowledgement too.
        finished = self.inner.finish_workflow(workflow_id, *args, **kwargs)
        last: Record | None = kwargs.get("record")
        if last is not None and last.position in self.fail_positions:
            self.fail_positions.discard(last.position)
            self.failures += 1
            raise StoreUnavailable("connection lost after COMMIT (simulated)")
        return finished

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@workflow(name="failures-steps")
def steps_wf() -> Generator[Any, Any, list[Any]]:
    first = yield Step("one", tick, "one")
    message = yield Recv("in")
    second = yield Step("two", tick, "two")
    return [first, message, second]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_lost_acknowledgement_is_resolved_by_reading_back(kind: str, tmp_path: Any) -> None:
    RAN.clear()
    inner: Store = (
        replaykit.MemoryStore()
        if kind == "memory"
        else replaykit.stores.open_store(f"sqlite:///{tmp_path / 'x.db'}")
    )
    # Position 1 is a Recv: its retried commit finds the message already
    # consumed, which only reading the log back can tell apart from a conflict.
    store = LosesAcks(inner, {0, 1, 2})
    with Engine(store, poll_interval=0.1) as engine:  # type: ignore[arg-type]
        handle = engine.start(steps_wf, workflow_id="acks")
        engine.send("acks", "hello", topic="in")
        assert handle.result(timeout=20) == ["one", "hello", "two"]
        records = engine.steps("acks")
    assert store.failures == 3
    assert [r.position for r in records] == [0, 1, 2]
    assert RAN == {"one": 1, "two": 1}  # no step re-ran because an ack was lost


@workflow(name="failures-many")
def many_wf(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("slow-inc", slow_inc, i)
    return total


def slow_inc(i: int) -> int:
    tick(f"inc-{i}")
    time.sleep(0.01)
    return 1


def test_postgres_connections_killed_mid_run(pg_url: str, pg_schema: str) -> None:
    import psycopg

    RAN.clear()
    # Tag this engine's connections so only they are killed.
    app_name = f"kill_{pg_schema}"[:60]
    url = f"{pg_url}?schema={pg_schema}&application_name={app_name}"
    killed = 0
    with Engine(url, poll_interval=0.1) as engine:
        handle = engine.start(many_wf, 60, workflow_id="killed")
        time.sleep(0.2)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for _ in range(3):
                rows = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s",
                    (app_name,),
                ).fetchall()
                killed += len(rows)
                time.sleep(0.15)
        assert handle.result(timeout=60) == 60
        records = engine.steps("killed")
    assert killed >= 3
    assert [r.position for r in records] == list(range(60))
    # A step whose checkpoint failed may run again; none may be skipped, and
    # re-runs are bounded by the number of kills.
    assert all(RAN.get(f"inc-{i}", 0) >= 1 for i in range(60))
    assert sum(RAN.values()) - 60 <= 3


@workflow(name="failures-concurrent")
def concurrent_wf(run: int, n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("tick-run", tick_run, run, i)
    return total


def tick_run(run: int, i: int) -> int:
    tick(f"run-{run}-{i}")
    time.sleep(0.02)
    return i


def test_postgres_connections_killed_under_group_commit(pg_url: str, pg_schema: str) -> None:
    # Many runs at once, so checkpoints go in shared batches; killing the
    # engine's connections makes batches fail part-way and fall back.
    import psycopg

    RAN.clear()
    app_name = f"killgc_{pg_schema}"[:60]
    url = f"{pg_url}?schema={pg_schema}&application_name={app_name}"
    runs, steps = 24, 25
    killed = 0
    with Engine(url, poll_interval=0.1) as engine:
        handles = [
            engine.start(concurrent_wf, run, steps, workflow_id=f"gc-{run}") for run in range(runs)
        ]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for _ in range(4):
                time.sleep(0.08)
                killed += len(
                    admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = %s",
                        (app_name,),
                    ).fetchall()
                )
        results = [handle.result(timeout=120) for handle in handles]
        logs = {run: engine.steps(f"gc-{run}") for run in range(runs)}
    assert killed >= 4
    assert results == [sum(range(steps))] * runs
    for run in range(runs):
        assert [r.position for r in logs[run]] == list(range(steps))
        assert [r.outcome.data for r in logs[run]] == list(range(steps))  # type: ignore[union-attr]
        # Nothing skipped; a step whose checkpoint was cut off may have run twice.
        assert all(1 <= RAN.get(f"run-{run}-{i}", 0) <= 2 for i in range(steps))


def test_postgres_exhausted_pool_fails_a_batch_once_not_once_per_writer(
    pg_url: str, pg_schema: str
) -> None:
    # While every pooled connection is taken, a batch waits connect_timeout for
    # one and fails. Its writers must get that failure, not each wait again on
    # the one-write path; a batch's finishes must not wait after its records did.
    from replaykit.log import Status, Value
    from replaykit.stores._group import Slot
    from replaykit.stores.base import WorkflowRow
    from replaykit.stores.postgres import PostgresStore, _Finish, _PlainRecord

    store = PostgresStore(pg_url, schema=pg_schema, pool_max=1, connect_timeout=1.0)
    try:
        for n in range(4):
            store.create_workflow(
                WorkflowRow(
                    workflow_id=f"w{n}",
                    name="wf",
                    status=replaykit.Status.PENDING,
                    inputs=None,
                    executor_id="e1",
                    app_version="v1",
                )
            )
        slots = [
            Slot(_PlainRecord(f"w{n}", Record(0, "step", "s", Value(n)), "e1", None))
            for n in range(3)
        ] + [Slot(_Finish("w3", Status.SUCCESS, Value(1), "", "e1"))]
        before = store._db.pool.get_stats().get("requests_errors", 0)
        with store._db.connection():  # the only connection, held for the whole batch
            store._write_batch(slots)
        waited = store._db.pool.get_stats().get("requests_errors", 0) - before
        for slot in slots:
            with pytest.raises(StoreUnavailable, match="no connection"):
                slot.outcome()
        assert waited == 1, f"{waited} connection requests timed out, expected the batch's one"
        # The writes were not made: the runs are as they were.
        assert store.load_log("w0") == []
        assert store.get_workflow("w3").status is replaykit.Status.PENDING  # type: ignore[union-attr]
    finally:
        store.close()


def test_postgres_batch_keeps_committed_records_when_its_finishes_get_no_connection(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Records and finishes of one batch are statements of their own; if the
    # pool runs dry between them, the records stand and only the finishes fail.
    from replaykit.log import Status, Value
    from replaykit.stores._group import Slot
    from replaykit.stores.base import WorkflowRow
    from replaykit.stores.postgres import PostgresStore, _Finish, _PlainRecord, _PoolExhausted

    store = PostgresStore(pg_url, schema=pg_schema)
    try:
        for n in range(4):
            store.create_workflow(
                WorkflowRow(f"w{n}", "wf", replaykit.Status.PENDING, executor_id="e1")
            )
        records = [
            Slot(_PlainRecord(f"w{n}", Record(0, "step", "s", Value(n)), "e1", None))
            for n in (0, 1)
        ]
        finishes = [Slot(_Finish(f"w{n}", Status.SUCCESS, Value(n), "", "e1")) for n in (2, 3)]
        real_connection = store._db.connection
        calls = []

        def dry_after_one() -> Any:
            calls.append(1)
            if len(calls) > 1:
                raise _PoolExhausted("no connection to PostgreSQL within 0.1s (test)")
            return real_connection()

        monkeypatch.setattr(store._db, "connection", dry_after_one)
        store._write_batch([*records, *finishes])
        monkeypatch.undo()
        assert [slot.outcome().position for slot in records] == [0, 0]
        for slot in finishes:
            with pytest.raises(StoreUnavailable, match="no connection"):
                slot.outcome()
        assert [len(store.load_log(f"w{n}")) for n in range(4)] == [1, 1, 0, 0]
        assert store.get_workflow("w2").status is replaykit.Status.PENDING  # type: ignore[union-attr]
    finally:
        store.close()
