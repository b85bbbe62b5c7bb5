"""Retention: an engine that keeps history for a while deletes what is older, by itself.

`Engine(retention=timedelta(days=30))` starts a thread that, every `RETENTION_EVERY`
seconds (the first time a random share of that after launch, so a fleet started
together does not collect at once), deletes the finished runs created before now minus
the retention, with `admin.collect_garbage`: a bounded batch read at a time and each run
deleted in a short transaction of its own, so nothing holds a lock for long and the
engine's other work goes on between deletes. Every engine with a retention collects;
deletes are idempotent, so two engines collecting at once only share the work.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from datetime import timedelta

from replaykit._limits import checked_wait
from replaykit.runtime import admin
from replaykit.runtime.clock import Clock
from replaykit.stores.base import Store

__all__ = ["RETENTION_EVERY", "Retention", "checked_retention"]

log = logging.getLogger("replaykit.engine")

#: Seconds between two collections of one engine.
RETENTION_EVERY = 600.0


def checked_retention(value: timedelta | float | None, what: str) -> timedelta | None:
    """How long finished runs are kept: None (for ever), or more than zero seconds."""
    seconds = checked_wait(value, what)
    if seconds is None:
        return None
    if seconds <= 0:
        raise ValueError(
            f"{what} must be more than 0 seconds, got {value!r}: it is how long finished "
            "runs are kept (pass None to keep them for ever)"
        )
    return timedelta(seconds=seconds)


class Retention:
    """Deletes the finished runs older than `keep`, every `every` seconds, until closed
    (`keep=None`: keeps them for ever, and `start` starts nothing)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        keep: timedelta | None,
        *,
        every: float | None = None,
        forget_finished: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.keep = keep
        self.every = RETENTION_EVERY if every is None else every
        self._forget_finished = forget_finished
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="replaykit-retention", daemon=True)

    def start(self) -> None:
        if self.keep is not None:
            self._thread.start()

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def collect(self) -> int:
        """Delete now what is past the retention; the number of runs deleted."""
        if self.keep is None:
            return 0
        cutoff = self.clock.now() - self.keep
        # What this engine keeps of finished runs must not answer for deleted ones.
        self._forget_finished()
        deleted = admin.collect_garbage(self.store, cutoff, stop=self._closed.is_set)
        if deleted:
            log.info(
                "retention: deleted %d finished run(s) created before %s",
                deleted,
                cutoff.isoformat(timespec="seconds"),
            )
        return deleted

    def _loop(self) -> None:
        wait = random.uniform(0, self.every)
        while not self._closed.wait(wait):
            wait = self.every
            try:
                self.collect()
            except Exception:  # an outage or a damaged row: the next round tries again
                log.exception("retention: collecting old runs failed; trying again later")
