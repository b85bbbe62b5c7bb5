"""replaykit/_waiting.py: why an unfinished run waits, and which versions engines run.

Driven with the engines given directly (or a store that answers `read_heartbeats`), so
each reason is asked for alone; the CLI and UI showing them are in test_cli_waiting.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from replaykit._waiting import (
    LiveEngine,
    NoLatestVersion,
    engines_text,
    latest_version,
    live_engines,
    start_warning,
    still_running,
    version_loads,
    why_waiting,
)
from replaykit.log import Status
from replaykit.stores._beats import Heartbeat, Registered
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.stores.memory import MemoryStore

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)


def engine(
    executor_id: str,
    version: str = "v1",
    workflows: tuple[str, ...] | None = ("checkout",),
    queues: tuple[str, ...] | None = ("mail",),
) -> LiveEngine:
    said = None if workflows is None and queues is None else Registered(workflows, queues)
    return LiveEngine(executor_id, version, NOW, said)


class Beats:
    """A store that answers heartbeats and listings, and nothing else."""

    def __init__(self, engines: list[LiveEngine], rows: list[WorkflowRow] | None = None) -> None:
        self.engines = engines
        self.rows = rows or []

    def read_heartbeats(self, since: datetime) -> list[Heartbeat]:
        return [
            Heartbeat(e.executor_id, e.app_version, e.seen_at, e.registered)
            for e in self.engines
            if e.seen_at >= since
        ]

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        statuses = where.statuses()
        return [r for r in self.rows if statuses is None or r.status in statuses]


def _store(*engines: LiveEngine, rows: list[WorkflowRow] | None = None) -> Store:
    return cast(Store, Beats(list(engines), rows))


def pending(**fields: Any) -> WorkflowRow:
    fields.setdefault("executor_id", "app-1")
    fields.setdefault("app_version", "v1")
    return WorkflowRow("r-1", "checkout", Status.PENDING, **fields)


def test_a_finished_run_or_one_nothing_stops_waits_for_no_reason() -> None:
    store = MemoryStore()
    assert why_waiting(store, WorkflowRow("r", "checkout", Status.SUCCESS)) == ""
    assert why_waiting(store, pending(), engines=[engine("app-1")], now=NOW) == ""


def test_the_engines_note_comes_first() -> None:
    row = pending(error="engine 'app-1' cannot run workflow 'checkout'")
    assert why_waiting(MemoryStore(), row, engines=[], now=NOW).startswith(
        "engine 'app-1' cannot run workflow 'checkout'; waits for an engine of version 'v1'"
    )


def test_a_run_of_a_version_no_engine_runs_says_which_run() -> None:
    why = why_waiting(MemoryStore(), pending(), engines=[engine("w", "v2")], now=NOW)
    assert "waits for an engine of version 'v1'; engines running: version 'v2' (w)" in why
    assert "replaykit workflows resume r-1 --app-version V" in why


def test_a_run_whose_engine_is_down_or_lacks_the_workflow_says_so() -> None:
    why = why_waiting(MemoryStore(), pending(), engines=[engine("app-2")], now=NOW)
    assert "executor id 'app-1' (version 'v1'), which is not running" in why
    lacking = [engine("app-1", workflows=("refund",))]
    why = why_waiting(MemoryStore(), pending(), engines=lacking, now=NOW)
    assert "has not registered workflow 'checkout' (it runs: refund)" in why


def test_an_enqueued_run_says_when_no_engine_listens_to_its_queue() -> None:
    row = WorkflowRow("r-2", "checkout", Status.ENQUEUED, app_version="v1", queue="bulk")
    why = why_waiting(MemoryStore(), row, engines=[engine("w")], now=NOW)
    assert "queue 'bulk' has no live engine of version 'v1' listening" in why
    assert "listen to: mail" in why


def test_a_due_run_left_on_its_queue_while_listeners_run_is_at_their_limits() -> None:
    row = WorkflowRow(
        "r-3",
        "checkout",
        Status.ENQUEUED,
        app_version="v1",
        queue="mail",
        created_at=NOW - timedelta(seconds=45),
    )
    why = why_waiting(MemoryStore(), row, engines=[engine("w")], now=NOW)
    assert why.startswith("due on queue 'mail' for 45s, unclaimed")
    assert "at their limits" in why
    fresh = why_waiting(MemoryStore(), row, engines=[engine("w")], now=row.created_at)
    assert fresh == ""


def test_engines_listed_by_version() -> None:
    engines = [engine("web-2"), engine("web-1"), engine("worker-1", "v3")]
    assert engines_text(engines) == "version 'v1' (web-2, web-1), version 'v3' (worker-1)"
    assert engines_text([]).startswith("none (no heartbeat in the last 30s)")


def test_live_engines_are_those_heard_from_lately() -> None:
    old = LiveEngine("gone", "v1", NOW - timedelta(minutes=5))
    store = _store(engine("w"), old)
    assert [e.executor_id for e in live_engines(store, now=NOW) or []] == ["w"]
    assert live_engines(cast(Store, object()), now=NOW) is None  # a store that keeps none


def test_latest_is_the_one_version_running_or_refused_naming_them() -> None:
    assert latest_version(_store(engine("a"), engine("b")), now=NOW) == "v1"
    with pytest.raises(NoLatestVersion, match="no engine is running"):
        latest_version(_store(), now=NOW)
    with pytest.raises(NoLatestVersion, match="engines of 2 versions are running"):
        latest_version(_store(engine("a"), engine("b", "v2")), now=NOW)


def test_a_start_is_warned_of_what_will_keep_it_waiting() -> None:
    store = _store(engine("w"))
    assert start_warning(store, "checkout", "v1", now=NOW) == ""
    assert "no engine of that version runs" in start_warning(store, "checkout", "v9", now=NOW)
    assert "'app-7' (version 'v1'), which is not running" in start_warning(
        store, "checkout", "v1", executor_id="app-7", now=NOW
    )
    assert "has registered workflow 'refund'" in start_warning(store, "refund", "v1", now=NOW)
    assert "queue 'bulk' has no live engine" in start_warning(
        store, "checkout", "v1", queue="bulk", now=NOW
    )


def test_versions_count_their_engines_and_unfinished_runs() -> None:
    rows = [
        WorkflowRow("a", "w", Status.PENDING, app_version="v1"),
        WorkflowRow("b", "w", Status.PARKED, app_version="v0"),
        WorkflowRow("c", "w", Status.ENQUEUED, app_version="v0"),
    ]
    loads, readable, partial = version_loads(_store(engine("w"), rows=rows), now=NOW)
    assert readable and not partial
    assert [(v.app_version, len(v.engines), v.unfinished) for v in loads] == [
        ("v1", 1, 1),
        ("v0", 0, 2),
    ]
    assert loads[0].to_json()["engines"][0]["workflows"] == ["checkout"]


def test_a_result_not_ready_says_why_it_waits() -> None:
    error = still_running(pending(), 2.0, "waits for an engine")
    assert str(error) == (
        "workflow 'checkout' (id 'r-1') is still PENDING after 2.0s: waits for an engine"
    )
