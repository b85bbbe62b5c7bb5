"""replaykit/runtime/history.py: `rewind` runs a finished run again from a position under
its own id, keeping the attempt that ended in its history; every face and the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

from conftest import error_line, ok, rk, wait_for
from replaykit import AsyncClient, AsyncEngine, Client, Engine, Sleep, Status, Step, workflow
from replaykit.stores.base import archive_id

CALLS: dict[str, int] = {}
BROKEN = {"charge": True}


def counted(name: str) -> str:
    CALLS[name] = CALLS.get(name, 0) + 1
    if BROKEN.get(name):
        raise RuntimeError(f"{name} is broken")
    return name


@workflow(name="history.order")
def order() -> Generator[Any, Any, str]:
    a = yield Step("reserve", counted, "reserve")
    b = yield Step("invoice", counted, "invoice")
    c = yield Step("charge", counted, "charge")
    return f"{a}+{b}+{c}"


@workflow(name="history.sleeper")
def sleeper() -> Generator[Any, Any, None]:
    yield Sleep(3600)


@pytest.fixture(autouse=True)
def _reset() -> None:
    CALLS.clear()
    BROKEN["charge"] = True


def _failed_order(engine: Engine, workflow_id: str) -> None:
    handle = engine.start(order, workflow_id=workflow_id)
    with pytest.raises(RuntimeError, match="charge is broken"):
        handle.result(timeout=20)
    assert CALLS == {"reserve": 1, "invoice": 1, "charge": 1}


def test_a_failed_run_rewound_runs_only_what_follows_and_keeps_its_attempt(
    store_url: str,
) -> None:
    with Engine(store_url, poll_interval=0.05) as engine:
        _failed_order(engine, "order-1")
        BROKEN["charge"] = False  # the fix is deployed
        handle = engine.rewind("order-1", 2)
        assert handle.result(timeout=20) == "reserve+invoice+charge"
        assert CALLS == {"reserve": 1, "invoice": 1, "charge": 2}
        row = handle.row()
        assert (row.status, row.generation) == (Status.SUCCESS, 1)
        attempt = engine.store.get_workflow(archive_id("order-1", 0))
        assert attempt is not None and attempt.status is Status.CONTINUED
        assert "charge is broken" in attempt.error
        assert len(engine.store.load_log(archive_id("order-1", 0))) == 3
        # A finished run rewound again goes on from where it is asked.
        again = engine.rewind("order-1", 0)
        assert again.result(timeout=20) == "reserve+invoice+charge"
        assert CALLS == {"reserve": 2, "invoice": 2, "charge": 3}


def test_a_live_run_is_refused_until_cancelled(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.05) as engine:
        handle = engine.start(sleeper, workflow_id="sleepy")
        wait_for(lambda: engine.store.load_log("sleepy"), "the run to sleep")
        with pytest.raises(ValueError, match=r"'sleepy'\) is PENDING.*Cancel it first"):
            engine.rewind("sleepy", 0)
        engine.terminate("sleepy")
        wait_for(lambda: handle.status() is Status.CANCELLED, "the run to stop")
        assert engine.rewind("sleepy", 0).status() in (Status.PENDING, Status.SUCCESS)


def test_a_position_out_of_the_log_is_refused_naming_the_range(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.05) as engine:
        _failed_order(engine, "order-2")
        with pytest.raises(ValueError, match="give a position from 0 to 3"):
            engine.rewind("order-2", 7)
        assert engine.handle("order-2").status() is Status.ERROR


def test_a_client_rewinds_for_the_engine_that_runs_it(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        _failed_order(engine, "order-3")
        BROKEN["charge"] = False
        with Client(shared) as client:
            handle = client.rewind("order-3", 1)
            assert handle.result(timeout=20) == "reserve+invoice+charge"
        assert CALLS == {"reserve": 1, "invoice": 2, "charge": 2}


def test_the_async_faces_rewind(shared: Any) -> None:
    async def main() -> None:
        async with AsyncEngine(shared, poll_interval=0.05) as engine:
            handle = await engine.start(order, workflow_id="order-4")
            with pytest.raises(RuntimeError):
                await handle.result(timeout=20)
            BROKEN["charge"] = False
            rewound = await engine.rewind("order-4", 2)
            assert await rewound.result(timeout=20) == "reserve+invoice+charge"
            BROKEN["charge"] = True
            async with AsyncClient(shared) as client:
                again = await client.rewind("order-4", 2)
                with pytest.raises(RuntimeError):
                    await again.result(timeout=20)

    asyncio.run(main())


def test_the_command_line_rewinds_and_says_where_the_attempt_went(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Engine(url, poll_interval=0.05) as engine:
        _failed_order(engine, "order-5")
    said = ok(rk("workflows", "rewind", "order-5", "--from", "2", "--url", url))
    assert "rewound 'order-5' to position 2 (generation 1)" in said
    assert "generation 0 of its history" in said
    BROKEN["charge"] = False
    with Engine(url, poll_interval=0.05) as engine:
        assert engine.handle("order-5").result(timeout=20) == "reserve+invoice+charge"
    assert "is PENDING" not in error_line(
        rk("workflows", "rewind", "order-5", "--from", "9", "--url", url)
    )
    assert "give a position from 0 to 3" in error_line(
        rk("workflows", "rewind", "order-5", "--from", "9", "--url", url)
    )
