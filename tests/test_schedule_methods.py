"""Schedules operated at run time from the engine, the asyncio engine and a client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from replaykit import AsyncClient, AsyncEngine, Client, Engine, ScheduleNotFound, Status, workflow
from replaykit.stores import open_store
from replaykit.stores.base import Store, WorkflowFilter
from replaykit.stores.memory import MemoryStore


@workflow(name="sched-methods-tick")
def tick(at: datetime) -> Generator[Any, Any, str]:
    yield from ()
    return at.isoformat()


@pytest.fixture
def target(store_url: str) -> Iterator[str | Store]:
    if store_url == "memory://":
        shared = MemoryStore()
        yield shared
        shared.close()
    else:
        yield store_url


def _manual_runs(store: Any, name: str) -> list[Any]:
    return [
        r
        for r in store.list_workflows(WorkflowFilter())
        if r.workflow_id.startswith(f"schedule:{name}:manual:")
    ]


def test_engine_and_client_pause_trigger_and_list_one_schedule(target: str | Store) -> None:
    # Once a year, at a time the test never reaches: only triggers start runs.
    with Engine(target, executor_id="sched-engine", poll_interval=0.05) as engine:
        engine.schedule("0 3 1 1 *", tick, name="yearly", tz="Europe/Berlin")
        with Client(target, app_version=engine.app_version) as client:
            deadline = time.monotonic() + 10
            while not [s for s in client.schedules_list() if s.name == "yearly"]:
                assert time.monotonic() < deadline, "the engine never registered its schedule"
                time.sleep(0.05)
            (info,) = [s for s in client.schedules_list() if s.name == "yearly"]
            assert (info.tz, info.paused, info.defined_here) == ("Europe/Berlin", False, False)
            assert client.pause_schedule("yearly") is True
            assert [s.paused for s in engine.schedules_list() if s.name == "yearly"] == [True]
            assert engine.resume_schedule("yearly") is True
            assert [s.paused for s in client.schedules_list() if s.name == "yearly"] == [False]
            run_id = client.trigger_schedule("yearly")
            assert run_id.startswith("schedule:yearly:manual:")
            deadline = time.monotonic() + 15
            while not _manual_runs(engine.store, "yearly"):
                assert time.monotonic() < deadline, "the engine never started the triggered run"
                time.sleep(0.05)
            (started_run,) = _manual_runs(engine.store, "yearly")
            assert started_run.workflow_id == run_id
            handle = engine.handle(run_id)
            assert handle.result(timeout=15)
            assert handle.status() is Status.SUCCESS
            with pytest.raises(ScheduleNotFound, match="yearly"):
                client.pause_schedule("yearl")
        started = engine.trigger_schedule("yearly")  # defined here: started at once
        assert engine.handle(started).result(timeout=15)
        now = datetime.now(UTC)
        ids = engine.backfill_schedule("yearly", now - timedelta(days=800), now)
        assert len(ids) == 2  # two new years in the range, each run once
        assert engine.backfill_schedule("yearly", now - timedelta(days=800), now) == ids


def test_the_asyncio_faces_reach_the_same_schedules(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'sched.db'}"

    async def main() -> None:
        async with AsyncEngine(url, executor_id="sched-aio", poll_interval=0.05) as engine:
            engine.schedule("0 3 1 1 *", tick, name="aio-yearly")
            async with AsyncClient(url, app_version=engine.engine.app_version) as client:
                deadline = time.monotonic() + 10
                while not [s for s in await client.schedules_list() if s.name == "aio-yearly"]:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.05)
                assert await client.pause_schedule("aio-yearly") is True
                listed = await engine.schedules_list()
                assert [s.paused for s in listed if s.name == "aio-yearly"] == [True]
                assert await engine.resume_schedule("aio-yearly") is True
                run_id = await engine.trigger_schedule("aio-yearly")
                assert await engine.handle(run_id).result(timeout=15)

    asyncio.run(main())
    store = open_store(url)
    try:
        assert len(_manual_runs(store, "aio-yearly")) == 1
    finally:
        store.close()
