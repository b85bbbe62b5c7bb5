"""Sleepers that are not kept warm: a bare timer entry each, woken on time, once, across
a restart too; and their wake-ups read in batches (runtime/cold.py, `load_runs`).

The memory figures are docs/performance.md's ("Sleepers": python -m
bench.bench_sleepers); these check what the figures rest on, on all three stores.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import start_sleepers, wait_for
from replaykit import Engine, Now, Sleep, Step, workflow
from replaykit.log import Record, Status, Value
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.host import Suspend
from replaykit.runtime.wakeups import Wakeups
from replaykit.stores import open_store
from replaykit.stores.base import CancelRequest, WorkflowRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)

_woken: dict[str, int] = {}
_woken_lock = threading.Lock()


def note_woken(run: str) -> float:
    """A step after the sleep: counts its runs (a doubled wake runs it twice) and says
    when it ran (wall clock, as bench.queue_app's sleeper does)."""
    with _woken_lock:
        _woken[run] = _woken.get(run, 0) + 1
    return time.time()


@workflow(name="test-sleepers-nap")
def nap(run: str, due: float) -> Generator[Any, Any, float]:
    """Sleeps until `due` (a POSIX time); returns how late its next step ran."""
    now: datetime = yield Now()
    yield Sleep(max(due - now.timestamp(), 0.0))
    woke: float = yield Step("woke", note_woken, run)
    return woke - due


# -- the wake-ups alone: a bare entry per sleeper ----------------------------------------


class Room:
    def __init__(self) -> None:
        self.clock = VirtualClock(T0, autojump=False)
        self.dispatched: list[str] = []
        self.wakeups = Wakeups(
            self.clock,
            poll_interval=0.02,
            dispatch=self.dispatched.append,
            busy=lambda: 0,
            sweep=lambda **_: None,
        )


@pytest.fixture
def room() -> Iterator[Room]:
    built = Room()
    built.wakeups.start()
    try:
        yield built
    finally:
        built.wakeups.close()


def test_a_sleeper_is_kept_as_a_bare_entry_and_wakes_once_at_its_instant(room: Room) -> None:
    wakeups = room.wakeups
    seen = wakeups.seq()
    assert wakeups.suspend("s", Suspend(T0 + timedelta(seconds=10)), seen=seen)
    # A run that waits for a message besides is a suspension as before.
    assert wakeups.suspend(
        "m", Suspend(T0 + timedelta(seconds=5), (("message", "m:t"),)), seen=seen
    )
    assert wakeups.sleepers_count() == 1
    assert wakeups.is_suspended("s") and wakeups.is_suspended("m")
    room.clock.advance(timedelta(seconds=9))
    time.sleep(0.1)
    assert room.dispatched == ["m"]
    room.clock.advance(timedelta(seconds=1))
    wait_for(lambda: room.dispatched == ["m", "s"], "the sleeper's wake-up")
    room.clock.advance(timedelta(seconds=100))
    time.sleep(0.1)
    assert room.dispatched == ["m", "s"]  # once
    assert not wakeups.is_suspended("s") and wakeups.sleepers_count() == 0


def test_a_sleeper_suspended_again_wakes_at_its_new_instant_only(room: Room) -> None:
    wakeups = room.wakeups
    wakeups.suspend("s", Suspend(T0 + timedelta(seconds=5)), seen=wakeups.seq())
    # Woken by hand (a cancel to deliver), then asleep again until later: the first
    # instant's entry is stale.
    wakeups.wake("s")
    assert room.dispatched == ["s"]
    wakeups.suspend("s", Suspend(T0 + timedelta(seconds=20)), seen=wakeups.seq())
    room.clock.advance(timedelta(seconds=10))
    time.sleep(0.1)
    assert room.dispatched == ["s"]
    room.clock.advance(timedelta(seconds=10))
    wait_for(lambda: room.dispatched == ["s", "s"], "the second instant's wake-up")
    # Forgotten (its run finished elsewhere): it never wakes.
    wakeups.suspend("f", Suspend(T0 + timedelta(seconds=30)), seen=wakeups.seq())
    wakeups.forget("f")
    room.clock.advance(timedelta(seconds=30))
    time.sleep(0.1)
    assert room.dispatched == ["s", "s"]


def test_an_autojumping_clock_jumps_to_a_bare_sleepers_instant() -> None:
    clock = VirtualClock(T0, autojump=True)
    dispatched: list[str] = []
    wakeups = Wakeups(
        clock,
        poll_interval=0.02,
        dispatch=dispatched.append,
        busy=lambda: 0,
        sweep=lambda **_: None,
    )
    wakeups.start()
    try:
        wakeups.suspend("s", Suspend(T0 + timedelta(days=30)), seen=wakeups.seq())
        wait_for(lambda: dispatched == ["s"], "the jump to the sleeper's instant")
        assert clock.now() == T0 + timedelta(days=30)
    finally:
        wakeups.close()


# -- the engine: evicted sleepers on every store ----------------------------------------


def _asleep(engine: Engine, ids: list[str]) -> bool:
    return all(engine.scheduler.is_tracked(i) for i in ids) and engine.scheduler.busy == 0


def _check_woken_once(engine: Engine, ids: list[str], tolerance: float) -> list[float]:
    late = [float(engine.handle(i).result(timeout=30)) for i in ids]
    for workflow_id in ids:
        assert _woken[workflow_id] == 1, f"{workflow_id} woke {_woken[workflow_id]} times"
        kinds = [record.kind for record in engine.store.load_log(workflow_id)]
        assert kinds == ["now", "sleep", "step"], f"{workflow_id}: {kinds}"
    assert min(late) >= 0.0, late  # never before its instant
    assert max(late) < tolerance, late
    return late


def test_evicted_sleepers_wake_on_time_once(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1, max_cached_runs=0) as engine:
        due = time.time() + 2.0
        ids = start_sleepers(engine, nap, 60, due, "evicted-")
        wait_for(lambda: _asleep(engine, ids), "every run asleep")
        assert engine.scheduler.warm_count() == 0
        assert engine.wakeups.sleepers_count() == 60  # a bare entry each
        _check_woken_once(engine, ids, tolerance=1.5)


def test_sleepers_wake_on_time_once_after_a_restart(store_url: str) -> None:
    if store_url.startswith("memory"):
        store: Any = open_store(store_url)  # one store the two engines share
    else:
        store = store_url
    due = time.time() + 3.0
    with Engine(store, poll_interval=0.1, executor_id="sleepy") as first:
        ids = start_sleepers(first, nap, 30, due, "restarted-")
        wait_for(lambda: _asleep(first, ids), "every run asleep")
    assert time.time() < due, "the first engine closed too late to test a restart"
    with Engine(store, poll_interval=0.1, executor_id="sleepy", max_cached_runs=0) as second:
        # Recovered at launch (read together, a batch at a time) and asleep again.
        wait_for(lambda: _asleep(second, ids), "every run recovered and asleep")
        _check_woken_once(second, ids, tolerance=1.5)


def test_sleepers_woken_together_are_read_in_batches(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1, max_cached_runs=0) as engine:
        inner = engine.store.inner  # under the retries: the codec store, then the store's own
        asked: list[int] = []
        load_runs = inner.load_runs

        def counted(workflow_ids: list[str]) -> Any:
            asked.append(len(workflow_ids))
            return load_runs(workflow_ids)

        inner.load_runs = counted
        due = time.time() + 2.0
        ids = start_sleepers(engine, nap, 80, due, "batched-")
        wait_for(lambda: _asleep(engine, ids), "every run asleep")
        _check_woken_once(engine, ids, tolerance=2.0)
    assert sum(asked) >= 1 and max(asked) > 1, asked  # some wake-ups were read together


# -- the batch read itself -------------------------------------------------------------------


def test_load_runs_reads_rows_logs_and_cancel_requests(store_url: str) -> None:
    store: Any = open_store(store_url)
    try:
        now = datetime.now(UTC)
        for workflow_id in ("a", "b"):
            store.create_workflow(
                WorkflowRow(workflow_id, "w", Status.PENDING, inputs=None, executor_id="e")
            )
        store.record("a", Record(0, "step", "s0", Value(1)))
        store.record("a", Record(1, "step", "s1", Value([2, "x"])))
        request = CancelRequest("enough", now + timedelta(seconds=5), now)
        store.request_cancel("b", request)
        loaded = {run.row.workflow_id: run for run in store.load_runs(["a", "b", "absent"])}
        assert set(loaded) == {"a", "b"}
        assert [(r.position, r.outcome) for r in loaded["a"].log] == [
            (0, Value(1)),
            (1, Value([2, "x"])),
        ]
        assert loaded["a"].cancel is None and loaded["b"].log == []
        assert loaded["b"].cancel == request
        assert loaded["a"].row == store.get_workflow("a")
        assert store.load_runs([]) == []
    finally:
        store.close()


def test_sleeps_that_came_due_complete_in_the_rounds_batch(store_url: str) -> None:
    """A Sleep found over as its run resumes is completed in the scheduler's batch of
    records (`record_many`), never by a write of its own from a pool thread (`record`)."""
    with Engine(store_url, poll_interval=0.1, max_cached_runs=0) as engine:
        inner = engine.store.inner  # under the retries: the codec store
        alone: list[Record] = []
        batched: list[Record] = []
        record, record_many = inner.record, inner.record_many

        def counted(workflow_id: str, written: Record, **kwargs: Any) -> Any:
            alone.append(written)
            return record(workflow_id, written, **kwargs)

        def counted_many(writes: Any) -> Any:
            batched.extend(write.record for write in writes)
            return record_many(writes)

        inner.record, inner.record_many = counted, counted_many
        due = time.time() + 1.5
        ids = start_sleepers(engine, nap, 40, due, "due-")
        wait_for(lambda: _asleep(engine, ids), "every run asleep")
        _check_woken_once(engine, ids, tolerance=2.0)
    completed = [r for r in batched if r.kind == "sleep" and r.outcome is not None]
    assert len(completed) == 40
    assert [r for r in alone if r.kind == "sleep" and r.outcome is not None] == []
    # The sleep's start (its instant) is what the completion keeps.
    assert all(r.wake_at is not None and r.completed_at >= r.wake_at for r in completed)
