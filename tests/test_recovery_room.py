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


def _room(runs: FakeRuns) -> tuple[MemoryStore, Recovery, list[None]]:
    store = MemoryStore()
    poked: list[None] = []
    recovery = Recovery(
        store,
        runs,
        executor_id="ex",
        app_version="v1",
        max_recovery_attempts=1,
        poke=lambda: poked.append(None),
    )
    return store, recovery, poked


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
    store, recovery, poked = _room(runs)
    _pending(store, "mine")
    _pending(store, "other", version="v0")
    assert recovery.recover() == ["mine"]
    assert runs.asked == [("release", "mine"), ("drop_warm", "mine"), ("dispatch", "mine")]
    assert poked == []
    # Recovered once already without finishing: past max_recovery_attempts=1.
    assert recovery.recover() == []
    parked = store.get_workflow("mine")
    assert parked is not None and parked.status is Status.PARKED
    assert "max_recovery_attempts=1" in (parked.error or "")
    assert poked == [None]  # the wake-ups look again: one run fewer can be busy


def test_a_sweep_dispatches_only_runs_nothing_here_tracks() -> None:
    runs = FakeRuns(tracked={"running"})
    store, recovery, _poked = _room(runs)
    _pending(store, "running")
    _pending(store, "resumed-elsewhere")
    recovery.sweep()
    assert runs.asked == [("allow", "resumed-elsewhere"), ("dispatch", "resumed-elsewhere")]


def test_runs_under_other_versions_are_named_once(caplog: pytest.LogCaptureFixture) -> None:
    store, recovery, _poked = _room(FakeRuns())
    recovery.warn_stranded()
    assert not caplog.records
    _pending(store, "old-1", version="v0")
    _pending(store, "old-2", version="v0")
    with caplog.at_level(logging.WARNING, logger="replaykit.engine"):
        recovery.warn_stranded()
    (record,) = caplog.records
    assert "2 PENDING run(s) of executor id 'ex'" in record.getMessage()
    assert "'v0' (2)" in record.getMessage()
