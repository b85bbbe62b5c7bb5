"""A cron expression that never fires is refused when declared; a failing schedule
never stops the others, and is logged once, not at every round of the loop."""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from replaykit import Engine, Now, workflow
from replaykit.runtime.clock import SystemClock
from replaykit.runtime.schedules import schedule
from replaykit.stores.base import WorkflowFilter


@workflow(name="bad-cron-tick")
def tick_wf(tick: datetime) -> Generator[Any, Any, str]:
    yield Now()
    return tick.isoformat()


@pytest.mark.parametrize(
    ("cron", "tz"),
    [
        ("0 0 31 2 *", None),
        ("0 0 30 2 *", None),
        ("0 0 31 4 *", "Europe/Berlin"),
        ("0 0 1 1 * 0 2001", None),  # a year that has passed
    ],
)
def test_a_cron_that_never_fires_is_refused_when_declared(cron: str, tz: str | None) -> None:
    with pytest.raises(ValueError, match="never fires") as refused:
        schedule(cron, name="nightly-report", tz=tz)(tick_wf)
    assert "'nightly-report'" in str(refused.value) and repr(cron) in str(refused.value)
    with (
        Engine("memory://", schedules=False) as engine,
        pytest.raises(ValueError, match=r"'feb-31'.*never fires"),
    ):
        engine.schedule(cron, tick_wf, name="feb-31", tz=tz)


def test_a_rare_cron_that_does_fire_is_accepted() -> None:
    with Engine("memory://", schedules=False) as engine:
        engine.schedule("0 0 29 2 *", tick_wf, name="leap-day")  # every four years
        assert [entry.name for entry in engine.schedules.entries()] == ["leap-day"]


class Later(SystemClock):
    """The wall clock three years on: a cron limited to next year has run out by then."""

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(days=3 * 366)


def test_a_failing_schedule_does_not_stop_the_others_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    next_year = datetime.now(UTC).year + 1
    caplog.set_level(logging.INFO, logger="replaykit.engine")
    with Engine("memory://", clock=Later(), poll_interval=0.02, schedules=False) as engine:
        # Declared while it still fires (next 1 January); the engine's clock is past it.
        engine.schedule(f"0 0 1 1 * 0 {next_year}", tick_wf, name="a-ran-out")
        engine.schedule("* * * * * *", tick_wf, name="b-every-second")
        deadline = time.monotonic() + 15
        ticks: list[str] = []
        while len(ticks) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
            rows = engine.store.list_workflows(WorkflowFilter(name="bad-cron-tick"))
            ticks = [r.workflow_id for r in rows if r.workflow_id.startswith("schedule:b-")]
        time.sleep(0.5)  # some 25 rounds more of the loop
    assert len(ticks) >= 2, "the healthy schedule must go on firing"
    failures = [r for r in caplog.records if "a-ran-out" in r.getMessage()]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    assert "other schedules go on" in failures[0].getMessage()
    assert failures[0].exc_info is not None  # the traceback, once
    assert not [r for r in caplog.records if "schedule loop failed" in r.getMessage()]
