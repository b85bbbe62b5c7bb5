"""The testing kit's clock: virtual time that also delivers the test's scripted
messages, updates and completions when their time comes."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from datetime import datetime

from replaykit.runtime.clock import VirtualClock

__all__ = ["KitClock"]


class KitClock(VirtualClock):
    """A virtual clock that also delivers the test's messages when their time comes.

    The engine jumps the clock to its next timer when nothing runs; a message
    due before that timer (or at the same instant) stops the jump at the
    message's time and is delivered first. Messages are delivered one per
    idle moment, in arrival order. `autojump` is switched off while a crashed engine is
    being torn down, so a dead process cannot move time.
    """

    def __init__(self, start: datetime) -> None:
        super().__init__(start, autojump=True)
        self._pending: list[tuple[datetime, int]] = []
        # Arrival times of messages taken from `_pending` whose delivery is
        # still under way: they count as not arrived yet (see `passed`).
        self._delivering: list[datetime] = []
        self._deliver: Callable[[int, datetime], None] = lambda index, at: None

    def attach(
        self, pending: Iterable[tuple[datetime, int]], deliver: Callable[[int, datetime], None]
    ) -> None:
        with self._lock:
            self._pending = list(pending)
            heapq.heapify(self._pending)
        self._deliver = deliver

    def add(self, at: datetime, index: int) -> None:
        """One more delivery, due at `at` (a completion whose token was just handed out)."""
        with self._lock:
            heapq.heappush(self._pending, (at, index))

    def rewind(self, instant: datetime) -> None:
        """Only for crash simulation: the lost work's time is spent again."""
        with self._lock:
            self._now = min(self._now, instant)

    def jump_to(self, instant: datetime) -> None:
        with self._lock:
            if not self.autojump:
                return
            if not (self._pending and self._pending[0][0] <= instant):
                self._now = max(self._now, instant)
                return
            at, index = self._take_next_locked()
        self._deliver_taken(at, index)

    def deliver_next(self) -> bool:
        """Move to the next message's arrival and deliver it; False if none is left."""
        with self._lock:
            if not self._pending:
                return False
            at, index = self._take_next_locked()
        self._deliver_taken(at, index)
        return True

    def _take_next_locked(self) -> tuple[datetime, int]:
        """The next message: the clock moves to its arrival; it is under delivery."""
        at, index = heapq.heappop(self._pending)
        self._now = max(self._now, at)
        self._delivering.append(at)
        return at, index

    def _deliver_taken(self, at: datetime, index: int, journal_at: datetime | None = None) -> None:
        # One message per call, even when several are due at this instant: the
        # next is delivered once the engine is idle again. A notification that
        # lands while the run is active makes the engine re-activate it in a
        # loop (see `Engine._suspend`), and one at a time is also the order a
        # real inbox would see. The clock already shows the message's instant,
        # so the run it wakes sees a time no earlier than its arrival; timers
        # due at that instant wait until it is in the inbox (`passed`).
        try:
            self._deliver(index, journal_at or at)
        finally:
            with self._lock:
                self._delivering.remove(at)

    def passed(self, deadline: datetime) -> bool:
        """True once the clock reached `deadline` and every message due by then arrived."""
        with self._lock:
            if self._now < deadline:
                return False
            if self._pending and self._pending[0][0] <= deadline:
                return False
            return not any(at <= deadline for at in self._delivering)

    def deliver_due(self) -> None:
        """Deliver every message whose arrival time is not after now."""
        with self._lock:
            due: list[tuple[datetime, int]] = []
            while self._pending and self._pending[0][0] <= self._now:
                due.append(heapq.heappop(self._pending))
            self._delivering.extend(at for at, _ in due)
            now = self._now
        for at, index in due:
            self._deliver_taken(at, index, journal_at=now)

    def move_to(self, instant: datetime) -> None:
        """Set the time outright; only while no engine runs (seeding a session)."""
        with self._lock:
            self._now = instant
