"""One live engine per executor id, and takeovers that never move a live engine's runs.

Fault 16 of the torture runs: engines sharing an executor id each recovered
the same PENDING runs and ran them at once. An engine now holds its id for its
lifetime (a lock its process or session drops by itself), a second engine with
that id waits for it and then fails clearly, a takeover skips an id that is
held however late its heartbeat, and a producer takes nothing over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from replaykit import Engine, Queue, Sleep, Status, workflow
from replaykit.errors import ExecutorIdInUse
from replaykit.registry import lookup
from replaykit.stores import open_store
from replaykit.stores.base import Store, WorkflowRow
from replaykit.stores.memory import MemoryStore

ROOT = Path(__file__).resolve().parent.parent


@workflow(name="holds-sleeper")
def sleeper() -> Generator[Any, Any, str]:
    yield Sleep(3600)
    return "woke"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened: Store = MemoryStore() if store_url == "memory://" else open_store(store_url)
    yield opened
    opened.close()


def _target(store_url: str, store: Store) -> str | Store:
    """What an engine opens: the URL, or the shared object for the memory store."""
    return store if store_url == "memory://" else store_url


def _orphan(store: Store, workflow_id: str, executor_id: str, version: str = "v1") -> None:
    """A PENDING run of `executor_id` with no log, as a dead engine leaves one."""
    store.create_workflow(
        WorkflowRow(
            workflow_id=workflow_id,
            name="holds-sleeper",
            status=Status.PENDING,
            inputs=lookup("holds-sleeper").encode_inputs((), {}),
            executor_id=executor_id,
            app_version=version,
            created_at=datetime.now(UTC),
        )
    )


def test_an_executor_id_is_held_once_until_released(store: Store) -> None:
    hold = store.hold_executor("holder-1", "v1")
    assert hold is not None and hold.keep()
    assert store.hold_executor("holder-1", "v1") is None
    other = store.hold_executor("holder-2", "v1")  # another id is free
    assert other is not None
    assert f"pid {os.getpid()}" in store.executor_holder("holder-1", "v1")
    hold.release()
    hold.release()  # idempotent
    assert not hold.keep()
    assert store.executor_holder("holder-1", "v1") == ""  # nobody holds it now
    again = store.hold_executor("holder-1", "v1")
    assert again is not None
    again.release()
    other.release()


def test_engines_of_two_versions_share_an_id(store: Store) -> None:
    """A rolling deploy: old and new code side by side under one id recover disjoint runs."""
    old = store.hold_executor("shared", "v1")
    new = store.hold_executor("shared", "v2")
    assert old is not None and new is not None
    assert store.hold_executor("shared", "v2") is None
    old.release()
    new.release()


def test_take_over_skips_a_held_id_however_late_its_heartbeat(store: Store) -> None:
    now = datetime.now(UTC)
    _orphan(store, "late-1", "late")
    store.heartbeat("late", "v1", now - timedelta(hours=1))  # a heartbeat long overdue
    hold = store.hold_executor("late", "v1")
    assert hold is not None
    assert store.take_over(executor_id="taker", app_version="v1", lease_seconds=1, now=now) == []
    assert store.get_workflow("late-1").executor_id == "late"  # type: ignore[union-attr]
    hold.release()  # the engine is gone now
    taken = store.take_over(executor_id="taker", app_version="v1", lease_seconds=1, now=now)
    assert taken == ["late-1"]
    assert store.get_workflow("late-1").executor_id == "taker"  # type: ignore[union-attr]
    # The takeover let go of the dead id: an engine may start under it again.
    restarted = store.hold_executor("late", "v1")
    assert restarted is not None
    restarted.release()


def test_a_second_engine_with_the_id_waits_then_fails_clearly(store_url: str, store: Store) -> None:
    target = _target(store_url, store)
    with Engine(target, executor_id="web-1", poll_interval=0.05) as first:
        started = time.monotonic()
        with pytest.raises(ExecutorIdInUse) as refused:
            Engine(target, executor_id="web-1", executor_wait=0.4)
        assert time.monotonic() - started >= 0.4
        message = str(refused.value)
        assert "'web-1'" in message and "executor_id=" in message
        assert f"pid {os.getpid()}" in message  # who holds it
        # The refused engine left the first one whole.
        assert first.run(sleeper_done, timeout=10) == "done"
    # Gone: the id is free again.
    with Engine(target, executor_id="web-1", executor_wait=0) as after:
        assert after.executor_id == "web-1"


@workflow(name="holds-done")
def sleeper_done() -> Generator[Any, Any, str]:
    yield Sleep(0.01)
    return "done"


def test_a_waiting_engine_takes_over_the_id_when_its_holder_stops(
    store_url: str, store: Store
) -> None:
    """A rolling deploy: the new process waits for the old one, then recovers its runs."""
    target = _target(store_url, store)
    old = Engine(target, executor_id="deploy", poll_interval=0.05)
    old.start(sleeper, workflow_id="long-sleep")
    time.sleep(0.2)
    made: list[Engine] = []
    failed: list[BaseException] = []

    def launch() -> None:
        try:
            made.append(Engine(target, executor_id="deploy", executor_wait=20, poll_interval=0.05))
        except BaseException as exc:
            failed.append(exc)

    waiter = threading.Thread(target=launch)
    waiter.start()
    time.sleep(0.5)
    assert not made and not failed  # still waiting for the old engine
    old.close()
    waiter.join(timeout=20)
    assert not failed, failed
    (new,) = made
    try:
        row = new.store.get_workflow("long-sleep")
        assert row is not None and row.status is Status.PENDING and row.executor_id == "deploy"
        new.terminate("long-sleep")
        assert new.handle("long-sleep").status() is Status.CANCELLED
    finally:
        new.close()


def test_a_producer_takes_no_run_over(store_url: str, store: Store) -> None:
    target = _target(store_url, store)
    version = "v-producer"
    _orphan(store, "orphan-1", "dead-engine", version)
    store.heartbeat("dead-engine", version, datetime.now(UTC) - timedelta(hours=1))
    with Engine(
        target,
        executor_id="producer",
        queues=[],
        app_version=version,
        lease_seconds=0.3,
        poll_interval=0.05,
    ):
        time.sleep(1.0)  # three leases: a worker would have taken it by now
        assert store.get_workflow("orphan-1").executor_id == "dead-engine"  # type: ignore[union-attr]
    with Engine(
        target, executor_id="worker", app_version=version, lease_seconds=0.3, poll_interval=0.05
    ) as worker:
        wait_for(
            lambda: worker.store.get_workflow("orphan-1").executor_id == "worker",  # type: ignore[union-attr]
            "the worker to take the orphan over",
            timeout=10,
        )


_HOLDER = """
import sys, time
from replaykit.stores import open_store
store = open_store(sys.argv[1])
hold = store.hold_executor("crashing", "v1")
assert hold is not None
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_killed_engines_id_comes_free_at_once(store_url: str) -> None:
    """kill -9 leaves no hold behind: the restarted engine recovers without waiting a lease."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, store_url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            store = open_store(store_url)
            try:
                assert store.hold_executor("crashing", "v1") is None
                assert "pid" in store.executor_holder("crashing", "v1")
                holder.send_signal(signal.SIGKILL)
                holder.wait(timeout=10)
                # What the dead holder left behind no longer names a holder.
                wait_for(
                    lambda: not store.executor_holder("crashing", "v1"),
                    "a killed process to hold the id no more",
                    timeout=5,
                )
                deadline = time.monotonic() + 5
                while (hold := store.hold_executor("crashing", "v1")) is None:
                    assert time.monotonic() < deadline, "a killed process's hold stayed"
                    time.sleep(0.05)
                hold.release()
            finally:
                store.close()
        finally:
            if holder.poll() is None:
                holder.kill()


def test_a_negative_wait_is_refused() -> None:
    with pytest.raises(ValueError, match="executor_wait="):
        Engine("memory://", executor_wait=-1)


def test_a_postgres_hold_is_kept_without_a_statement_and_taken_again_when_its_session_ends(
    pg_store: Any, pg_url: str
) -> None:
    import psycopg

    hold = pg_store.hold_executor("pinged", "v1")
    assert hold is not None
    first_pid = hold._conn.info.backend_pid

    def last_statement(pid: int) -> str:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            found = conn.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,))
            row = found.fetchone()
            return "" if row is None else str(row[0])

    before = last_statement(first_pid)
    for _ in range(3):
        assert hold.keep()
    # An idle engine's beat asks nothing of its hold's session.
    assert last_statement(first_pid) == before
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (first_pid,))
    # The server's end of the session reaches the socket: keep() sees it and holds
    # the id again on a new session.
    wait_for(lambda: hold.keep() and hold._conn.info.backend_pid != first_pid, timeout=10)
    assert pg_store.hold_executor("pinged", "v1") is None
    hold.release()
    again = pg_store.hold_executor("pinged", "v1")
    assert again is not None
    again.release()


def test_an_idle_postgres_engine_sends_nothing_but_its_beats(pg_url: str, pg_schema: str) -> None:
    """Issue "beyond one server": a fleet of idle engines must not load the database.
    Counted, not timed: each beat is one statement, and nothing else is sent while
    no run, claim, schedule change or reconnect asks for it."""
    from bench.bench_idle import StatementCounter

    @workflow(name="holds-idle-yearly", replace=True)
    def yearly(tick: Any) -> Generator[Any, Any, None]:
        return None
        yield

    counter = StatementCounter()
    counter.install()
    try:
        Queue("holds-idle-queue")
        with Engine(
            f"{pg_url}?schema={pg_schema}",
            executor_id="idle",
            queues=["holds-idle-queue"],  # a worker's: its empty queue is claimed when told
            lease_seconds=1.5,
            poll_interval=0.05,
        ) as engine:
            from replaykit.runtime.schedules import Schedule

            engine.schedules.add(Schedule("0 0 1 1 *", yearly, "holds-idle-yearly"))
            wait_for(lambda: "holds-idle-yearly" in engine.store.schedule_states())
            time.sleep(1.0)  # past launch, recovery, the first reads and an empty claim
            with counter.window() as taken:
                time.sleep(2.0)  # four beats, forty polls
    finally:
        counter.uninstall()
    beats = sum(n for text, n in taken.items() if text.startswith("WITH seen AS (INSERT"))
    assert 1 <= beats <= 6, dict(taken)
    assert sum(taken.values()) == beats, dict(taken)
