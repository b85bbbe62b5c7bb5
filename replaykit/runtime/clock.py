"""Clocks: the only place the runtime learns the time.

`SystemClock` reads the wall clock. `VirtualClock` is moved by hand or jumps
forward by itself when the engine has nothing to do but wait for a timer (like
trio's MockClock with autojump), so a 30-day `Sleep` takes no wall time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "SystemClock", "VirtualClock"]


class Clock(Protocol):
    #: True when the engine may jump this clock to the next timer when idle.
    autojump: bool

    def now(self) -> datetime: ...

    def passed(self, deadline: datetime) -> bool:
        """Has `deadline` passed? Timers and timeouts fire only once it has.

        A clock that also delivers things (the testing kit's) may say no at
        the deadline itself while something due then has yet to arrive, so
        that arrivals win ties with timers.
        """
        ...

    def sleep(self, seconds: float) -> None: ...

    async def sleep_async(self, seconds: float) -> None:
        """`sleep` for a coroutine on an event loop (a retry's back-off in an async step)."""
        ...

    def jump_to(self, instant: datetime) -> None: ...


class SystemClock:
    autojump = False

    def now(self) -> datetime:
        return datetime.now(UTC)

    def passed(self, deadline: datetime) -> bool:
        return self.now() >= deadline

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    async def sleep_async(self, seconds: float) -> None:
        if seconds > 0:
            await asyncio.sleep(seconds)

    def jump_to(self, instant: datetime) -> None:
        raise RuntimeError("the system clock cannot be moved")


class VirtualClock:
    """Time that moves only when told to (or, with `autojump`, when everything waits)."""

    def __init__(self, start: datetime | None = None, *, autojump: bool = True) -> None:
        self._now = start or datetime(2030, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("VirtualClock(start=...) needs a timezone-aware datetime")
        self._lock = threading.Lock()
        self.autojump = autojump

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def passed(self, deadline: datetime) -> bool:
        return self.now() >= deadline

    def advance(self, delta: timedelta | float) -> None:
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        if seconds < 0:
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._now += timedelta(seconds=seconds)

    def jump_to(self, instant: datetime) -> None:
        with self._lock:
            if instant > self._now:
                self._now = instant

    def sleep(self, seconds: float) -> None:
        # Retry back-off under virtual time: the wait passes instantly.
        self.advance(max(seconds, 0.0))

    async def sleep_async(self, seconds: float) -> None:
        self.sleep(seconds)
