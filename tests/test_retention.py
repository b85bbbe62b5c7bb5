"""replaykit/runtime/retention.py: `Engine(retention=...)` deletes finished runs past
their time, in the background, on every store; what is unfinished, or recent, stays."""

from __future__ import annotations

import math
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import Engine, Sleep, Status, Step, VirtualClock, workflow
from replaykit.runtime import admin, retention
from replaykit.runtime.retention import Retention, checked_retention
from replaykit.runtime.run_filters import workflow_filter
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@workflow(name="retention.done")
def done(n: int) -> Generator[Any, Any, int]:
    return (yield Step("n", lambda: n))


@workflow(name="retention.sleeper")
def sleeper() -> Generator[Any, Any, None]:
    yield Sleep(timedelta(days=365))


@pytest.mark.parametrize("bad", [0, -1, timedelta(0), math.nan])
def test_a_retention_of_nothing_is_refused_naming_what_to_pass(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"Engine\(retention=...\) must be"):
        Engine("memory://", retention=bad)


def test_a_retention_that_is_not_a_duration_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Engine\(retention=...\) must be a number of seconds"):
        Engine("memory://", retention="30d")  # type: ignore[arg-type]
    assert checked_retention(None, "x") is None
    assert checked_retention(90, "x") == timedelta(seconds=90)


def test_finished_runs_past_the_retention_go_and_the_rest_stay(store_url: str) -> None:
    clock = VirtualClock(T0, autojump=False)
    with Engine(store_url, clock=clock, retention=timedelta(days=30), poll_interval=0.05) as engine:
        old = engine.start(done, 1, workflow_id="old-done")
        assert old.result(timeout=15) == 1
        engine.start(sleeper, workflow_id="old-sleeping")
        wait_for(lambda: engine.store.load_log("old-sleeping"), "the sleeper to sleep")
        clock.jump_to(T0 + timedelta(days=31))
        recent = engine.start(done, 2, workflow_id="recent-done")
        assert recent.result(timeout=15) == 2
        assert engine.retention.collect() == 1
        kept = {row.workflow_id for row in engine.list_workflows()}
        assert kept == {"old-sleeping", "recent-done"}
        assert engine.retention.collect() == 0  # nothing more is old enough


def test_the_engine_collects_by_itself_every_so_often(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "RETENTION_EVERY", 0.05)
    with Engine(store_url, retention=0.2, poll_interval=0.05) as engine:
        handle = engine.start(done, 3, workflow_id="soon-gone")
        assert handle.result(timeout=15) == 3
        wait_for(lambda: engine.store.get_workflow("soon-gone") is None, "the run to be deleted")


def test_an_engine_without_retention_starts_no_collector() -> None:
    with Engine("memory://") as engine:
        assert not engine.retention._thread.is_alive()
        assert engine.retention.collect() == 0


def test_a_collection_asked_to_stop_ends_between_runs() -> None:
    store = MemoryStore()
    for n in range(5):
        row = WorkflowRow(f"done-{n}", "w", Status.SUCCESS, created_at=T0 - timedelta(days=9))
        store.create_workflow(row)
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2  # two runs deleted, then told to stop

    assert admin.collect_garbage(store, T0, stop=stop) == 2
    assert len(store.list_workflows(workflow_filter())) == 3
    collector = Retention(store, VirtualClock(T0), timedelta(days=1))
    assert collector.collect() == 3  # the next collection takes the rest
