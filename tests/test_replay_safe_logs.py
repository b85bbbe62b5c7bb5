"""Logs from workflow bodies appear once per run and say which run and position wrote them."""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

import pytest

import replaykit
from replaykit import Engine, Sleep, Step, workflow
from replaykit.interpreter import ReplaySafeFilter

mine = logging.getLogger("tests.replay_safe.mine")
mine.addFilter(ReplaySafeFilter())
unfiltered = logging.getLogger("tests.replay_safe.unfiltered")


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@workflow(name="logs-twice-asleep")
def logs_around_sleeps(order: str) -> Generator[Any, Any, str]:
    replaykit.logger.info("start %s", order)
    mine.info("mine start %s", order)
    unfiltered.info("raw start %s", order)
    yield Sleep(0.01)
    charged = yield Step("charge", str.upper, order)
    mine.info("mine charged %s", charged)
    yield Sleep(0.01)
    mine.info("mine done")
    return str(charged)


@pytest.fixture
def collected() -> Any:
    handler = Collect()
    loggers = [replaykit.logger, mine, unfiltered]
    for each in loggers:
        each.addHandler(handler)
        each.setLevel(logging.INFO)
    yield handler
    for each in loggers:
        each.removeHandler(handler)


def test_each_line_appears_once_per_run_with_its_run_and_position(
    store_url: str, collected: Collect
) -> None:
    # No warm runs: every wake-up replays the body from the start.
    with Engine(store_url, max_cached_runs=0, poll_interval=0.05) as engine:
        assert engine.run(logs_around_sleeps, "o-1", workflow_id="logs-1", timeout=20) == "O-1"
    lines = [r.getMessage() for r in collected.records]
    assert lines.count("start o-1") == 1
    assert lines.count("mine start o-1") == 1
    assert lines.count("mine charged O-1") == 1
    assert lines.count("mine done") == 1
    # Without the filter a line re-runs with each replay: the replays did happen.
    assert lines.count("raw start o-1") >= 3
    by_line = {r.getMessage(): r for r in collected.records if r.name != unfiltered.name}
    first = by_line["mine start o-1"]
    assert (first.workflow_id, first.workflow_name, first.position) == (  # type: ignore[attr-defined]
        "logs-1",
        "logs-twice-asleep",
        0,
    )
    assert by_line["mine charged O-1"].position == 2  # type: ignore[attr-defined]
    assert by_line["mine done"].position == 3  # type: ignore[attr-defined]


def test_outside_a_workflow_nothing_is_dropped_and_the_fields_are_empty(
    collected: Collect,
) -> None:
    mine.info("at import time")
    (record,) = collected.records
    assert record.workflow_id is None and record.position is None  # type: ignore[attr-defined]
    # One format string serves lines from inside and outside a workflow.
    assert logging.Formatter("%(workflow_id)s %(message)s").format(record) == "None at import time"
