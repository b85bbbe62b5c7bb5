"""Stepping aside for an application's event loop, which shares the interpreter lock.

CPython gives the interpreter lock to a thread that waits for it only when the
thread holding it blocks, or after the switch interval (5 ms by default) has
passed with the other still waiting. An event loop thread whose timer fires
while the engine's scheduler computes therefore wakes up to 5 ms late, and twice
that when it is pushed off the lock again within the same iteration: under a
busy `AsyncEngine` that was most of the application's loop lag (docs/asyncio.md).

`sys.setswitchinterval` would change that for every thread of the process, the
application's own among them, so the engine leaves it alone. Instead, the
engine's busiest threads (the scheduler's, and the one that stores a batch of
starts) call a shared `Courtesy` between units of work: after each millisecond
of their work it sleeps for a moment, which hands the lock to whoever waits for
it, the loop included. A thread that waited (the scheduler, for its next event)
says so (`rested`): work right after a wait does not pause at once. An engine
that serves no application loop has none (every call returns at once).
"""

from __future__ import annotations

from time import perf_counter, sleep

__all__ = ["PAUSE", "WORK", "Courtesy"]

#: The work between two pauses, in seconds. With 1 ms the application's loop waits
#: at most about that long for the lock at each wake-up instead of 5 ms; the pauses
#: cost the engine's threads under 10% of their time, and none when they idle.
WORK = 0.001
#: How long a pause asks to sleep. The kernel makes it longer (its timer slack is
#: 50 µs by default): long enough for a waiting thread to take the lock.
PAUSE = 0.00005


class Courtesy:
    """`courtesy()` pauses the calling thread if `work` seconds passed since the last
    pause (of any thread sharing this object); `Courtesy(None)` never pauses. The
    engine makes `Courtesy(WORK)` when it serves an application's loop."""

    __slots__ = ("_last", "_work")

    def __init__(self, work: float | None) -> None:
        if work is not None and work <= 0:
            raise ValueError(
                f"Courtesy(work=...) must be a positive number of seconds or None, got {work!r}"
            )
        self._work = work
        self._last = perf_counter()

    @property
    def active(self) -> bool:
        return self._work is not None

    def rested(self) -> None:
        """The calling thread waited (for work, for I/O): its stretch starts again, so
        that work after a wait pauses only once it has lasted `work` seconds."""
        if self._work is not None:
            self._last = perf_counter()

    def __call__(self) -> None:
        work = self._work
        if work is None:
            return
        if perf_counter() - self._last >= work:
            # Shared by threads without a lock: a race only makes two of them pause.
            sleep(PAUSE)
            self._last = perf_counter()
