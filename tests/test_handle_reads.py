"""`Engine.handle` answers from the runs this engine finished lately, without a store
read, only while every delete reaches it as a note; a deleted run is
never answered from what the engine kept (SUCCESS and ERROR, the only statuses it
keeps, cannot be resumed)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from typing import Any

import pytest

from conftest import wait_for
from replaykit import AsyncEngine, Engine, MemoryStore, Queue, Step, workflow
from replaykit.errors import WorkflowNotFound
from replaykit.stores import open_store
from replaykit.stores.base import Store


def _double(x: int) -> int:
    return 2 * x


@workflow(name="handle-reads.double")
def double(x: int) -> Generator[Any, Any, int]:
    return int((yield Step("double", _double, x)))


def _counting_reads(engine: Engine) -> list[str]:
    """Every `get_workflow` the engine's store answers from now on, by id."""
    reads: list[str] = []
    store = engine.store
    original = store.get_workflow

    def counted(workflow_id: str) -> Any:
        reads.append(workflow_id)
        return original(workflow_id)

    store.get_workflow = counted  # type: ignore[method-assign]
    return reads


def _raises_not_found(engine: Engine, workflow_id: str) -> bool:
    try:
        engine.handle(workflow_id)
    except WorkflowNotFound:
        return True
    return False


def test_a_run_finished_here_gets_a_handle_without_a_read(store_url: str) -> None:
    with Engine(store_url) as engine:
        assert engine.run(double, 21, workflow_id="hr-fresh") == 42
        reads = _counting_reads(engine)
        handle = engine.handle("hr-fresh")
        assert handle.result(timeout=5) == 42
        # SQLite is asked, by the handle and by the result: a delete from another
        # process would not be heard.
        sqlite = store_url.startswith("sqlite:")
        assert reads == (["hr-fresh", "hr-fresh"] if sqlite else [])
        with pytest.raises(WorkflowNotFound, match="hr-missing"):
            engine.handle("hr-missing")


def test_a_run_deleted_behind_the_engines_back_is_not_found(store_url: str) -> None:
    """Deleted through the store itself (not `engine.delete`, which forgets it too):
    only the store's "deleted" note tells the engine."""
    with Engine(store_url) as engine:
        engine.run(double, 1, workflow_id="hr-gone")
        handle = engine.handle("hr-gone")
        assert engine.store.delete_workflow("hr-gone")
        wait_for(
            lambda: _raises_not_found(engine, "hr-gone"), "hr-gone to be not found", timeout=10
        )
        with pytest.raises(WorkflowNotFound, match="hr-gone"):
            handle.result(timeout=5)


def _other_process_store(store_url: str) -> Store:
    """The same database through a store object of its own, as another process has."""
    return open_store(store_url)


def test_a_delete_from_another_process_is_seen_by_handle_and_result(store_url: str) -> None:
    if store_url.startswith("memory:"):
        pytest.skip("a memory store lives in one process")
    with Engine(store_url) as engine:
        engine.run(double, 2, workflow_id="hr-elsewhere")
        handle = engine.handle("hr-elsewhere")
        other = _other_process_store(store_url)
        try:
            assert other.delete_workflow("hr-elsewhere")
        finally:
            other.close()
        # SQLite is read at once; PostgreSQL's note arrives within moments.
        wait_for(
            lambda: _raises_not_found(engine, "hr-elsewhere"),
            "hr-elsewhere to be not found",
            timeout=10,
        )
        with pytest.raises(WorkflowNotFound):
            handle.result(timeout=5)


def test_the_async_engine_answers_a_deleted_run_from_the_store(store_url: str) -> None:
    async def main() -> None:
        async with AsyncEngine(store_url) as engine:
            handle = await engine.start(double, 5, workflow_id="hr-async")
            assert await handle.result(timeout=10) == 10
            # From another store object, as another process deletes (memory: there is
            # no other process): on SQLite the engine hears nothing, so only a waiter
            # that reads the file finds the run gone.
            other = engine.engine.store if store_url == "memory://" else open_store(store_url)
            try:
                assert other.delete_workflow("hr-async")
            finally:
                if other is not engine.engine.store:
                    other.close()
            deadline = time.monotonic() + 10
            while engine.engine.kept_finished("hr-async") is not None:
                assert time.monotonic() < deadline, "the deleted run's row is still kept"
                await asyncio.sleep(0.02)
            with pytest.raises(WorkflowNotFound, match="hr-async"):
                await engine.handle("hr-async").result(timeout=5)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_waiters_of_runs_finishing_as_they_look_are_not_left_for_a_poll(store_url: str) -> None:
    """A run can finish (and notify) after its waiter began to listen but before it
    looked, while the scheduler still counts it as running. The waiter must then read
    the store, not wait for a notification that already came: with a poll interval
    of a minute, one missed wake-up fails the timeout. (A queue drained while a caller
    takes each result in turn, as bench_runtime's drain does, hits that moment often.)"""
    queue = Queue("handle-reads-drain")
    store: Any = MemoryStore() if store_url == "memory://" else store_url
    with Engine(store, queues=[], executor_id="hr-producer", poll_interval=60) as producer:
        producer.enqueue_many(queue, double, [(i,) for i in range(500)])
        ids = [row.workflow_id for row in producer.list_workflows(name=double.workflow_name)]
        with Engine(store, queues=[queue], executor_id="hr-consumer", poll_interval=60) as consumer:
            began = time.monotonic()
            results = [consumer.handle(wid).result(timeout=30) for wid in ids]
            took = time.monotonic() - began
    assert sorted(results) == [2 * i for i in range(500)]
    assert took < 20, f"the drain's waiters took {took:.1f}s: a wake-up was missed"


def test_a_run_deleted_while_its_finish_commits_is_not_kept() -> None:
    """The delete's note can come between the finish's commit and the moment the
    scheduler keeps the finished row: the row must not be kept then."""
    store = MemoryStore()
    with Engine(store) as engine:

        def delete_on_finish(kind: str, key: str) -> None:
            # Runs on the finishing thread, right after the commit: the widest gap.
            if kind == "finished" and key == "hr-finish-race":
                store.delete_workflow(key)

        unsubscribe = store.subscribe(delete_on_finish)
        try:
            handle = engine.start(double, 21, workflow_id="hr-finish-race")
            with pytest.raises(WorkflowNotFound, match="hr-finish-race"):
                handle.result(timeout=10)
        finally:
            unsubscribe()
        assert engine.kept_finished("hr-finish-race") is None


def test_notes_lost_while_the_listener_reconnects_forget_kept_rows(pg_url: str) -> None:
    """A delete sent while PostgreSQL's listener was down is lost, and nothing polls
    for one: the listener says "relisten" when it is back, and the engine forgets the
    rows it kept."""
    import psycopg

    from conftest import drop_schema, fresh_schema_name

    schema = fresh_schema_name("hr_relisten")
    url = f"{pg_url}?schema={schema}"
    try:
        with Engine(url) as engine:
            engine.run(double, 1, workflow_id="hr-relisten")
            assert engine.kept_finished("hr-relisten") is not None
            other = open_store(url)
            try:
                with psycopg.connect(pg_url, autocommit=True) as admin:
                    killed = admin.execute(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = %s",
                        (f"replaykit-listen:{schema}"[:63],),
                    ).fetchone()
                assert killed is not None and killed[0] >= 1
                # At once, before the listener is back: its note is lost.
                assert other.delete_workflow("hr-relisten")
            finally:
                other.close()
            wait_for(
                lambda: _raises_not_found(engine, "hr-relisten"),
                "hr-relisten to be not found",
                timeout=10,
            )
    finally:
        drop_schema(schema)
