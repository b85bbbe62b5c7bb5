"""The wake-ups (runtime/wakeups.py) alone: a virtual clock, a list as the dispatcher.

They own every suspended run's wake conditions: what it waits to be notified of, its
timer, its run deadline. Built here with no engine, no store and no scheduler.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from conftest import wait_for
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.host import Suspend
from replaykit.runtime.wakeups import Wakeups

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Room:
    """Wakeups with what it asks of the rest of the engine, recorded."""

    def __init__(self, *, autojump: bool = False) -> None:
        self.clock = VirtualClock(T0, autojump=autojump)
        self.dispatched: list[str] = []
        self.expired: list[str] = []
        self.busy = 0
        self._lock = threading.Lock()
        self.wakeups = Wakeups(
            self.clock,
            poll_interval=0.05,
            dispatch=self._dispatch,
            busy=lambda: self.busy,
            sweep=lambda **_: None,
            expire=self.expired.append,
        )

    def _dispatch(self, workflow_id: str) -> None:
        with self._lock:
            self.dispatched.append(workflow_id)


@pytest.fixture
def room() -> Iterator[Room]:
    built = Room()
    built.wakeups.start()
    try:
        yield built
    finally:
        built.wakeups.close()


def test_a_notification_wakes_the_runs_that_wait_for_it_once(room: Room) -> None:
    wakeups = room.wakeups
    seen = wakeups.seq()
    assert wakeups.suspend("a", Suspend(None, (("message", "a:t"),)), seen=seen)
    assert wakeups.suspend("b", Suspend(None, (("message", "a:t"), ("event", "x"))), seen=seen)
    assert wakeups.suspend("c", Suspend(None, (("message", "c:t"),)), seen=seen)
    wakeups.notify(("message", "a:t"))
    assert sorted(room.dispatched) == ["a", "b"]
    assert wakeups.suspended_ids() == {"c"}
    wakeups.notify(("event", "x"))  # b woke already: it is not waiting any more
    assert sorted(room.dispatched) == ["a", "b"]


def test_a_forgotten_run_is_not_woken(room: Room) -> None:
    wakeups = room.wakeups
    wakeups.suspend("a", Suspend(None, (("message", "a:t"),)), seen=wakeups.seq())
    wakeups.forget("a")
    wakeups.notify(("message", "a:t"))
    assert room.dispatched == []
    assert not wakeups.is_suspended("a")


def test_a_notification_while_a_run_replays_makes_it_look_again(room: Room) -> None:
    wakeups = room.wakeups
    room.busy = 1  # an activation runs: notifications are remembered for it
    seen = wakeups.seq()
    wakeups.notify(("message", "a:t"))
    # It reached its Recv after the message came: suspending would miss it.
    assert not wakeups.suspend("a", Suspend(None, (("message", "a:t"),)), seen=seen)
    assert not wakeups.is_suspended("a")
    # Something else it does not wait for changes nothing.
    assert wakeups.suspend("b", Suspend(None, (("message", "b:t"),)), seen=seen)


def test_a_timer_wakes_its_run_when_the_clock_passes_it(room: Room) -> None:
    wakeups = room.wakeups
    wakeups.suspend("sleeper", Suspend(T0 + timedelta(hours=1)), seen=wakeups.seq())
    room.clock.advance(timedelta(minutes=59))
    wakeups.poke()
    wakeups.wait(0.2)  # the timer loop has looked: a minute early, nothing fires
    assert room.dispatched == []
    room.clock.advance(timedelta(minutes=1))
    wakeups.poke()
    wait_for(lambda: room.dispatched == ["sleeper"], "the timer to fire", timeout=5)
    assert not wakeups.is_suspended("sleeper")


def test_a_timer_of_a_suspension_forgotten_since_does_not_fire(room: Room) -> None:
    wakeups = room.wakeups
    wakeups.suspend("a", Suspend(T0 + timedelta(seconds=5)), seen=wakeups.seq())
    wakeups.suspend("a", Suspend(T0 + timedelta(hours=5)), seen=wakeups.seq())  # waits anew
    room.clock.advance(timedelta(minutes=1))
    wakeups.poke()
    wakeups.wait(0.2)
    assert room.dispatched == []
    assert wakeups.is_suspended("a")


def test_a_run_deadline_is_expired_once_and_a_forgotten_one_never(room: Room) -> None:
    wakeups = room.wakeups
    wakeups.watch_deadline("late", T0 + timedelta(seconds=30))
    wakeups.watch_deadline("done", T0 + timedelta(seconds=30))
    wakeups.forget_deadline("done")  # it finished first
    assert wakeups.watched_deadline("late") == T0 + timedelta(seconds=30)
    room.clock.advance(timedelta(seconds=31))
    wakeups.poke()
    wait_for(lambda: room.expired == ["late"], "the deadline to pass", timeout=5)
    assert wakeups.watched_deadline("late") is None


def test_an_autojumping_clock_jumps_to_the_next_timer_only_when_nothing_runs() -> None:
    room = Room(autojump=True)
    room.busy = 1
    room.wakeups.start()
    try:
        room.wakeups.suspend("nap", Suspend(T0 + timedelta(days=3)), seen=room.wakeups.seq())
        room.wakeups.wait(0.2)
        assert room.clock.now() == T0 and room.dispatched == []  # an activation runs
        room.busy = 0
        room.wakeups.poke()
        wait_for(lambda: room.dispatched == ["nap"], "the jump", timeout=5)
        assert room.clock.now() == T0 + timedelta(days=3)
        assert room.wakeups.settled()
    finally:
        room.wakeups.close()


def test_listeners_hear_their_wakes_until_they_unsubscribe(room: Room) -> None:
    heard: list[str] = []
    by_kind: list[str] = []
    stop = room.wakeups.listen([("finished", "a")], lambda: heard.append("a"))
    stop_kind = room.wakeups.listen_kind("finished", by_kind.append)
    room.wakeups.notify(("finished", "a"))
    room.wakeups.notify(("finished", "b"))
    stop()
    stop_kind()
    room.wakeups.notify(("finished", "a"))
    assert heard == ["a"]
    assert by_kind == ["a", "b"]
