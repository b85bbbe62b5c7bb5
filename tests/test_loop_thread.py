"""replaykit/runtime/loop_thread.py: a room's background loop on a thread of its own.

`start()` runs `_loop` on a daemon thread of the given name; setting `_wanted` wakes a
loop that sleeps on it; `close()` stops the loop and waits for it.
"""

from __future__ import annotations

import threading

from replaykit.runtime.loop_thread import LoopThread


class Counting(LoopThread):
    """Counts its rounds; sleeps a long time between them unless woken."""

    def __init__(self) -> None:
        super().__init__("test-counting")
        self.rounds = 0
        self.thread_name = ""
        self.round_done = threading.Event()

    def _loop(self) -> None:
        self.thread_name = threading.current_thread().name
        while not self._closed:
            self.rounds += 1
            self.round_done.set()
            self._wanted.wait(60)
            self._wanted.clear()

    def wake(self) -> None:
        self._wanted.set()


def test_the_loop_runs_on_its_own_daemon_thread() -> None:
    loop = Counting()
    loop.start()
    assert loop.round_done.wait(5)
    assert loop.thread_name == "test-counting"
    assert loop._thread.daemon
    loop.close()


def test_wanted_wakes_the_sleeping_loop_and_close_stops_it() -> None:
    loop = Counting()
    loop.start()
    assert loop.round_done.wait(5)
    loop.round_done.clear()
    loop.wake()
    assert loop.round_done.wait(5)  # a second round long before its 60 s sleep ends
    assert loop.rounds == 2
    loop.close()
    assert not loop._thread.is_alive()
    assert loop.rounds == 2  # closing woke it, and it saw the close


def test_closing_a_loop_never_started_does_nothing() -> None:
    loop = Counting()
    loop.close()
    assert loop.rounds == 0
