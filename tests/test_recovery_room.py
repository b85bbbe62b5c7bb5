"""Recovery built alone: a memory store and a fake scheduler that notes what it is
asked, no engine (runtime/recovery.py)."""

from __future__ import annotations

import logging

import pytest

from replaykit.log import Status
from replaykit.runtime.recovery import Recovery
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore


class FakeRuns:
    def __init__(self, tracked: set[str] | None = None) -> None:
        self.tracked = tracked or set()
        self.asked: list[tuple[str, str]] = []

    def is_tracked(self, workflow_id: str) -> bool:
        return workflow_id in self.tracked

    def allow(self, workflow_id: str) -> None:
        self.asked.append(("allow", workflow_id))

    def release(self, workflow_id: str) -> None:
        self.asked.append(("release", workflow_id))

    def drop_warm(self, workflow_id: str) -> None:
        self.asked.append(("drop_warm", workflow_id))

    def dispatch(self, workflow_id: str) -> None:
        self.asked.append(("dispatch", workflow_id))


def _room(runs: FakeRuns) -> tuple[MemoryStore, Recovery, list[tuple[str, str]]]:
    store = MemoryStore()
    parked: list[tuple[str, str]] = []
    recovery = Recovery(
        store,
        runs,
        executor_id="ex",
        app_version="v1",
        max_recovery_attempts=1,
        park=lambda workflow_id, why: parked.append((workflow_id, why)),
    )
    return store, recovery, parked


def _pending(store: MemoryStore, workflow_id: str, version: str = "v1") -> None:
    store.create_workflow(
        WorkflowRow(
            workflow_id,
            "wf",
            Status.PENDING,
            inputs={"args": []},
            executor_id="ex",
            app_version=version,
        )
    )


def test_recovery_dispatches_this_versions_runs_and_parks_crash_loopers() -> None:
    runs = FakeRuns()
    store, recovery, parked = _room(runs)
    _pending(store, "mine")
    _pending(store, "other", version="v0")
    assert recovery.recover() == ["mine"]
    assert runs.asked == [("release", "mine"), ("drop_warm", "mine"), ("dispatch", "mine")]
    assert parked == []
    # Recovered once already without finishing: past max_recovery_attempts=1.
    assert recovery.recover() == []
    assert [workflow_id for workflow_id, _ in parked] == ["mine"]
    assert "max_recovery_attempts=1" in parked[0][1]


def test_a_sweep_dispatches_only_runs_nothing_here_tracks() -> None:
    runs = FakeRuns(tracked={"running"})
    store, recovery, _parked = _room(runs)
    _pending(store, "running")
    _pending(store, "resumed-elsewhere")
    recovery.sweep()
    assert runs.asked == [("allow", "resumed-elsewhere"), ("dispatch", "resumed-elsewhere")]


def test_runs_under_other_versions_are_named_once(caplog: pytest.LogCaptureFixture) -> None:
    store, recovery, _parked = _room(FakeRuns())
    recovery.warn_stranded()
    assert not caplog.records
    _pending(store, "old-1", version="v0")
    _pending(store, "old-2", version="v0")
    with caplog.at_level(logging.WARNING, logger="replaykit.engine"):
        recovery.warn_stranded()
    (record,) = caplog.records
    assert "2 PENDING run(s) of executor id 'ex'" in record.getMessage()
    assert "'v0' (2)" in record.getMessage()
