"""Schedules: each tick starts once across engines; missed ticks can be backfilled."""

from __future__ import annotations

import itertools
import time
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import replaykit
from replaykit import Engine, Now, Status, workflow
from replaykit.runtime.schedules import Schedule, schedule, ticks_between


@workflow(name="sched-tick")
def tick_wf(tick: datetime) -> Generator[Any, Any, str]:
    yield Now()
    return tick.isoformat()


def test_two_engines_start_each_tick_once(store_url: str) -> None:
    shared: Any = replaykit.MemoryStore() if store_url.startswith("memory") else store_url
    engines = [
        Engine(shared, executor_id=f"s{i}", poll_interval=0.05, schedules=False) for i in range(2)
    ]
    try:
        for eng in engines:
            eng.schedule("* * * * * *", tick_wf, name="every-second")
        time.sleep(2.6)
    finally:
        for eng in engines:
            eng.close()
    # The same two engines again, without the schedule: a run that a close stopped
    # mid-way (a tick just before it) is theirs to recover and finish.
    engines = [Engine(shared, executor_id=f"s{i}", schedules=False) for i in range(2)]
    try:
        eng = engines[0]
        runs = eng.list_workflows(name="sched-tick")
        ids = [r.workflow_id for r in runs]
        assert len(ids) >= 2
        assert len(ids) == len(set(ids))
        ticks = sorted(datetime.fromisoformat(i.split(":", 2)[2]) for i in ids)
        # One run per second-tick, no tick twice, none skipped in between.
        assert all((b - a) == timedelta(seconds=1) for a, b in itertools.pairwise(ticks))
        for run in runs:
            assert (
                eng.handle(run.workflow_id).result(timeout=20) == run.workflow_id.split(":", 2)[2]
            )
        assert len(eng.list_workflows(name="sched-tick")) == len(ids)  # no tick since
    finally:
        for eng in engines:
            eng.close()


def test_backfill_starts_missed_ticks(store_url: str) -> None:
    shared: Any = replaykit.MemoryStore() if store_url.startswith("memory") else store_url
    entry = Schedule("* * * * * *", tick_wf, "backfilled", backfill=True)
    with Engine(shared, poll_interval=0.05, schedules=False) as eng:
        past = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=4)
        eng.create_run(tick_wf, (past,), {}, workflow_id=entry.run_id(past))
        eng.schedule(entry.cron, tick_wf, name="backfilled", backfill=True)
        time.sleep(0.5)
        ids = {r.workflow_id for r in eng.list_workflows(name="sched-tick")}
        for missed in (past + timedelta(seconds=s) for s in (1, 2, 3)):
            assert entry.run_id(missed) in ids
        assert all(eng.handle(i).result(timeout=20) for i in ids)
        # Only the runs seen above: the schedule goes on ticking every second, and a
        # tick started since may still be running (a full-suite run caught one).
        rows = {r.workflow_id: r for r in eng.list_workflows(name="sched-tick")}
        assert all(rows[i].status is Status.SUCCESS for i in ids)


def test_bad_cron_and_bad_decorator_order_are_refused() -> None:
    with pytest.raises(ValueError, match="not a valid cron"):
        Schedule("every tuesday", tick_wf, "bad")
    with pytest.raises(TypeError, match="above @workflow"):
        schedule("* * * * *")(lambda: None)  # type: ignore[type-var]


def test_ticks_between_is_exclusive_inclusive() -> None:
    entry = Schedule("*/5 * * * *", tick_wf, "five")
    start = datetime(2030, 1, 1, tzinfo=UTC)
    ticks = list(ticks_between(entry, start, start + timedelta(minutes=15)))
    assert ticks == [start + timedelta(minutes=m) for m in (5, 10, 15)]
