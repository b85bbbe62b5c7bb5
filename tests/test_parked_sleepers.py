"""Parked sleepers (runtime/wakeups.py, `PARK_BEYOND`): a run asleep past the horizon
is kept by the store alone, read back by the timer scan before its instant, woken on
time and once, told of a cancel at once, parked again after a restart, and passed
over by sweeps. The memory figure this rests on is docs/performance.md's ("Sleepers").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import start_sleepers, wait_for, wait_status
from replaykit import Client, Engine, Now, Sleep, Step, workflow
from replaykit.log import Status
from replaykit.runtime import wakeups as wakeups_room
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.host import Suspend
from replaykit.runtime.wakeups import Wakeups
from replaykit.stores import open_store

T0 = datetime(2026, 1, 1, tzinfo=UTC)

_activations: dict[str, int] = {}
_steps: dict[str, int] = {}
_lock = threading.Lock()


def _count(counts: dict[str, int], run: str) -> None:
    with _lock:
        counts[run] = counts.get(run, 0) + 1


def woke(run: str) -> float:
    _count(_steps, run)
    return time.time()


@workflow(name="test-parked-nap")
def nap(run: str, due: float) -> Generator[Any, Any, float]:
    """Sleeps until `due` (a POSIX time); returns how late its next step ran. Each
    activation replays from the top, so the count below counts activations."""
    _count(_activations, run)
    now: datetime = yield Now()
    yield Sleep(max(due - now.timestamp(), 0.0))
    ran: float = yield Step("woke", woke, run)
    return ran - due


@pytest.fixture
def near(monkeypatch: pytest.MonkeyPatch) -> None:
    """A horizon a second ahead, read every fifth of a second: tests of seconds."""
    monkeypatch.setattr(wakeups_room, "PARK_BEYOND", 1.0)
    monkeypatch.setattr(wakeups_room, "SCAN_EVERY", 0.2)


def _parked(engine: Engine, ids: list[str]) -> bool:
    """Every run asleep and none of them kept here."""
    logs = [engine.store.load_log(i) for i in ids]
    asleep = all(len(log) == 2 and log[1].outcome is None for log in logs)
    return (
        asleep
        and engine.scheduler.busy == 0
        and not any(engine.scheduler.is_tracked(i) for i in ids)
    )


def _check_woken_once(engine: Engine, ids: list[str], activations: int) -> None:
    late = [float(engine.handle(i).result(timeout=30)) for i in ids]
    assert min(late) >= 0.0, late  # never before its instant
    assert max(late) < 2.0, late
    for workflow_id in ids:
        assert _steps[workflow_id] == 1, f"{workflow_id}: its step ran {_steps[workflow_id]} times"
        assert _activations[workflow_id] == activations, (workflow_id, _activations[workflow_id])


# -- the wake-ups alone: a virtual clock, a list as the store ---------------------------


class Room:
    def __init__(self, *, autojump: bool = False) -> None:
        self.clock = VirtualClock(T0, autojump=autojump)
        self.dispatched: list[str] = []
        self.revived: list[str] = []
        self.stored: dict[str, datetime] = {}  # what the store says each sleeps until
        self.reads: list[tuple[datetime, datetime]] = []
        self.failing = False
        self.wakeups = Wakeups(
            self.clock,
            poll_interval=0.01,
            dispatch=self.dispatched.append,
            busy=lambda: 0,
            sweep=lambda **_: None,
            scan=self._scan,
            revive=self.revived.append,
        )

    def _scan(self, after: datetime, until: datetime) -> list[tuple[str, datetime]]:
        if self.failing:
            raise OSError("the store is down")
        self.reads.append((after, until))
        return sorted(
            (wid, at)
            for wid, at in self.stored.items()
            if after < at <= until and not self.wakeups.is_suspended(wid)
        )

    def sleep(self, workflow_id: str, seconds: float) -> None:
        at = self.clock.now() + timedelta(seconds=seconds)
        self.stored[workflow_id] = at  # the Sleep's start is written before it suspends
        assert self.wakeups.suspend(
            workflow_id, Suspend(at, parkable=True), seen=self.wakeups.seq()
        )

    def back_off(self, workflow_id: str, seconds: float) -> None:
        at = self.clock.now() + timedelta(seconds=seconds)
        self.stored[workflow_id] = at
        assert self.wakeups.suspend(workflow_id, Suspend(at), seen=self.wakeups.seq())


@pytest.fixture
def room() -> Iterator[Room]:
    built = Room()
    built.wakeups.start()
    try:
        yield built
    finally:
        built.wakeups.close()


def test_a_sleeper_past_the_horizon_is_parked_and_read_back_before_its_instant(
    room: Room,
) -> None:
    wakeups = room.wakeups
    room.sleep("near", 30)
    room.sleep("far", 100)
    assert wakeups.is_suspended("near") and not wakeups.is_suspended("far")
    assert wakeups.parked_count() == 1
    # The horizon follows the clock, and the scan reads what it passes over, once.
    room.clock.advance(timedelta(seconds=39))
    wait_for(lambda: wakeups.horizon() == T0 + timedelta(seconds=39 + 60), "the horizon")
    assert not wakeups.is_suspended("far")
    room.clock.advance(timedelta(seconds=14))
    time.sleep(0.05)
    assert not wakeups.is_suspended("far")  # a stretch is read once it is SCAN_EVERY long
    room.clock.advance(timedelta(seconds=1))
    wait_for(lambda: wakeups.is_suspended("far"), "the far sleeper read back")
    assert room.dispatched == ["near"]
    # Stretches one after the other, each read once, none left out.
    assert room.reads == [
        (T0 + timedelta(seconds=60), T0 + timedelta(seconds=99)),
        (T0 + timedelta(seconds=99), T0 + timedelta(seconds=114)),
    ]
    room.clock.advance(timedelta(seconds=46))
    wait_for(lambda: room.dispatched == ["near", "far"], "the far sleeper's wake-up")
    time.sleep(0.05)
    assert room.dispatched == ["near", "far"]  # once


def test_a_step_back_off_past_the_horizon_stays_here(room: Room) -> None:
    """Only a Sleep is parked: a step's back-off is few and short-lived, and the retry
    decisions look for it among the suspended runs."""
    room.back_off("retrying", 600)
    room.sleep("asleep", 600)
    assert room.wakeups.is_suspended("retrying")
    assert not room.wakeups.is_suspended("asleep")
    assert room.wakeups.parked_count() == 1


def test_a_failed_read_is_read_again(room: Room) -> None:
    room.sleep("far", 100)
    room.failing = True
    room.clock.advance(timedelta(seconds=50))
    time.sleep(0.1)
    assert room.wakeups.horizon() == T0 + timedelta(seconds=60)  # not moved past it
    room.failing = False
    wait_for(lambda: room.wakeups.horizon() == T0 + timedelta(seconds=110), "the read")
    wait_for(lambda: room.wakeups.is_suspended("far"), "the far sleeper read back")


def test_a_wake_for_a_run_not_kept_here_asks_the_store_once_runs_were_parked(
    room: Room,
) -> None:
    room.wakeups.wake("unknown")
    assert room.revived == []  # nothing parked yet: nothing can be in the store
    room.sleep("far", 100)
    room.wakeups.wake("far")
    assert room.revived == ["far"] and room.dispatched == []


def test_an_autojumping_clock_parks_nothing() -> None:
    room = Room(autojump=True)
    room.wakeups.start()
    try:
        room.sleep("far", 3600)
        assert room.wakeups.parked_count() == 0 and room.wakeups.horizon() is None
        wait_for(lambda: room.dispatched == ["far"], "the jump to its instant")
    finally:
        room.wakeups.close()


# -- the engine, on every store -----------------------------------------------------------


@pytest.mark.usefixtures("near")
def test_parked_sleepers_wake_on_time_once(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.05, max_cached_runs=0) as engine:
        ids = start_sleepers(engine, nap, 20, time.time() + 3.0, "parked-")
        wait_for(lambda: _parked(engine, ids), "every run parked")
        assert engine.wakeups.parked_count() >= 20
        assert engine.wakeups.suspended_count() == 0
        # A sweep, thorough or counting first, leaves them in the store.
        engine.recovery.sweep(thorough=True)
        engine.recovery.sweep(thorough=False)
        assert _parked(engine, ids)
        _check_woken_once(engine, ids, activations=2)


@pytest.mark.usefixtures("near")
def test_a_parked_sleeper_is_cancelled_at_once(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.05, max_cached_runs=0) as engine:
        [workflow_id] = start_sleepers(engine, nap, 1, time.time() + 120.0, "cancelled-")
        wait_for(lambda: _parked(engine, [workflow_id]), "the run parked")
        engine.cancel(workflow_id, reason="enough")
        row = wait_status(engine, workflow_id, Status.CANCELLED, timeout=10)
        assert row.status is Status.CANCELLED
        assert _steps.get(workflow_id) is None


@pytest.mark.usefixtures("near")
def test_a_parked_sleeper_hears_a_clients_cancel(pg_url: str, pg_schema: str) -> None:
    url = f"{pg_url}?schema={pg_schema}"
    with Engine(url, poll_interval=0.05, max_cached_runs=0) as engine:
        [workflow_id] = start_sleepers(engine, nap, 1, time.time() + 120.0, "heard-")
        wait_for(lambda: _parked(engine, [workflow_id]), "the run parked")
        with Client(url) as client:
            client.cancel(workflow_id, reason="from outside")
        wait_status(engine, workflow_id, Status.CANCELLED, timeout=10)
        assert _steps.get(workflow_id) is None


@pytest.mark.usefixtures("near")
def test_parked_sleepers_wake_on_time_once_after_a_restart(store_url: str) -> None:
    store: Any = open_store(store_url) if store_url.startswith("memory") else store_url
    due = time.time() + 4.0
    with Engine(store, poll_interval=0.05, executor_id="parky", max_cached_runs=0) as first:
        ids = start_sleepers(first, nap, 10, due, "restarted-")
        wait_for(lambda: _parked(first, ids), "every run parked")
    assert time.time() < due - 2.0, "the first engine closed too late to test a restart"
    with Engine(
        store, poll_interval=0.05, executor_id="parky", max_cached_runs=0, recover=False
    ) as second:
        # Read at launch (a row does not tell a sleep from a wait with a timeout), and
        # parked again as each activation suspends.
        assert set(second.recover()) >= set(ids)
        wait_for(lambda: _parked(second, ids), "every run parked again")
        _check_woken_once(second, ids, activations=3)
