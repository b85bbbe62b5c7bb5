"""`get_events`: all of a run's events, latest value per key, on every store and every face."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any

import pytest

from replaykit import AsyncEngine, Engine, Recv, SetEvent, workflow
from replaykit.client import AsyncClient, Client
from replaykit.errors import DamagedData, WorkflowNotFound
from replaykit.stores.memory import MemoryStore


@workflow(name="get-events-publishes")
def publishes(rounds: int):
    for i in range(rounds):
        yield SetEvent("progress", i)
    yield SetEvent("phase", {"name": "done", "of": rounds})
    yield SetEvent("nothing", None)
    yield Recv("stop")
    return rounds


@workflow
def publishes_nothing():
    yield Recv("stop")
    return None


def _events_settled(engine: Engine, workflow_id: str, keys: int) -> dict[str, Any]:
    for _ in range(300):
        found = engine.get_events(workflow_id)
        if len(found) == keys:
            return found
        time.sleep(0.02)
    raise AssertionError(f"run {workflow_id!r} never set {keys} events: {found}")


def test_latest_value_per_key_and_none_values(engine: Engine) -> None:
    handle = engine.start(publishes, 3, workflow_id="ev-1")
    events = _events_settled(engine, "ev-1", 3)
    assert events == {"progress": 2, "phase": {"name": "done", "of": 3}, "nothing": None}
    # Each key's answer is get_event's answer for that key.
    for key, value in events.items():
        assert engine.get_event("ev-1", key) == value
    engine.send("ev-1", "now", "stop")
    assert handle.result(timeout=30) == 3
    # A finished run keeps its events.
    assert engine.get_events("ev-1") == events


def test_a_run_with_no_events_answers_an_empty_dict(engine: Engine) -> None:
    engine.start(publishes_nothing, workflow_id="ev-none")
    assert engine.get_events("ev-none") == {}


def test_events_of_one_run_only(engine: Engine) -> None:
    engine.start(publishes, 1, workflow_id="ev-a")
    engine.start(publishes, 2, workflow_id="ev-b")
    assert _events_settled(engine, "ev-a", 3)["progress"] == 0
    assert _events_settled(engine, "ev-b", 3)["progress"] == 1


def test_an_unknown_run_is_not_found_and_says_which(engine: Engine) -> None:
    with pytest.raises(WorkflowNotFound, match=r"'no-such-run'.*no such run"):
        engine.get_events("no-such-run")


def test_a_deleted_run_is_not_found(engine: Engine) -> None:
    engine.start(publishes, 1, workflow_id="ev-gone")
    _events_settled(engine, "ev-gone", 3)
    engine.cancel("ev-gone")
    assert engine.store.delete_workflow("ev-gone")
    with pytest.raises(WorkflowNotFound, match="ev-gone"):
        engine.get_events("ev-gone")


def test_async_engine_client_and_async_client_agree(store_url: str) -> None:
    # memory:// is a new store each time it is opened: share one object instead.
    target: Any = MemoryStore() if store_url.startswith("memory") else store_url
    with Engine(target, poll_interval=0.1) as engine:
        engine.start(publishes, 2, workflow_id="ev-faces")
        expected = _events_settled(engine, "ev-faces", 3)
        with Client(target) as client:
            assert client.get_events("ev-faces") == expected
            with pytest.raises(WorkflowNotFound, match="ev-elsewhere"):
                client.get_events("ev-elsewhere")

        async def from_async() -> tuple[dict[str, Any], dict[str, Any]]:
            async with (
                AsyncEngine(target, executor_id="async-reader") as aengine,
                AsyncClient(target) as aclient,
            ):
                with pytest.raises(WorkflowNotFound, match="ev-elsewhere"):
                    await aclient.get_events("ev-elsewhere")
                return await aengine.get_events("ev-faces"), await aclient.get_events("ev-faces")

        assert asyncio.run(from_async()) == (expected, expected)


def test_a_damaged_value_names_the_run_and_the_key(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'damaged.db'}"
    with Engine(url, poll_interval=0.1) as engine:
        engine.start(publishes, 1, workflow_id="ev-bad")
        _events_settled(engine, "ev-bad", 3)
        with sqlite3.connect(tmp_path / "damaged.db") as conn:
            conn.execute(
                "UPDATE events SET value = ? WHERE workflow_id = ? AND key = ?",
                ("{not json", "ev-bad", "phase"),
            )
        with pytest.raises(DamagedData, match=r"'ev-bad'.*event 'phase'.*Delete that event"):
            engine.get_events("ev-bad")
        # The damage is the one key's: the others still read one at a time.
        assert engine.get_event("ev-bad", "progress") == 0
