"""A thread that waits on the runtime: for a run to finish (a handle's `result()`),
for an event's value, for a change a composite waits on, or for the engine to settle.

`Waits` holds the calling thread, never the runtime's own: it listens through the
wake-ups, asks the scheduler lock-free what it knows of runs it tracks, and reads
the store for the rest. `AsyncEngine` waits on its loop instead (runtime/aio.py)
and shares only `kept_finished`; the Client's `get_event` shares `wait_event`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import datetime
from typing import Any, Protocol

from replaykit._limits import checked_wait
from replaykit._waiting import still_running, why_waiting
from replaykit.runtime.admin import get_run
from replaykit.runtime.clock import Clock
from replaykit.runtime.loop_waits import Listen, notified_blocking, wait_round_blocking
from replaykit.runtime.wakeups import Wakeups
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["TrackedRuns", "Waits", "wait_event"]


def wait_event(
    store: Store,
    listen: Listen,
    workflow_id: str,
    key: str,
    timeout: float | None,
    poll_interval: float,
) -> Any:
    """The latest value of a run's event `key`, waiting up to `timeout` seconds for it
    (None: not at all); else None. The Engine's and the Client's `get_event`."""
    timeout = checked_wait(timeout, "get_event(timeout=...)")
    deadline = None if timeout is None else time.monotonic() + timeout
    found, value = store.get_event(workflow_id, key)
    if found:
        return value
    if deadline is None or time.monotonic() >= deadline:
        return None
    with notified_blocking(listen, [("event", workflow_id)]) as changed:
        while True:
            # Read after subscribing: a value set before the listening began is found.
            found, value = store.get_event(workflow_id, key)
            if found:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            wait_round_blocking(changed, min(poll_interval, left))


class TrackedRuns(Protocol):
    """What a waiter asks the scheduler about the runs it tracks here."""

    @property
    def busy(self) -> int: ...

    def is_tracked(self, workflow_id: str) -> bool: ...

    def peek_finished(self, workflow_id: str) -> WorkflowRow | None: ...

    def interruption(self, workflow_id: str) -> BaseException | None: ...

    def counted_idle(self) -> contextlib.AbstractContextManager[None]: ...


def _handed_over(interrupt: BaseException) -> BaseException:
    """A fresh instance of the interrupt a step raised, for a waiting thread: the
    original (its traceback with it) is its cause. Each waiter gets its own."""
    try:
        fresh = type(interrupt)(*interrupt.args)
    except Exception:
        return interrupt
    fresh.__cause__ = interrupt
    return fresh


class Waits:
    """Blocking waits of callers' threads, each bounded by a poll interval per round
    so that a lost notification costs one round, never the wait."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        wakeups: Wakeups,
        runs: TrackedRuns,
        *,
        poll_interval: float,
        hears_every_delete: bool,
    ) -> None:
        self.store = store
        self.clock = clock
        self.wakeups = wakeups
        self.runs = runs
        self.poll_interval = poll_interval
        # Whether every delete, from wherever, reaches this engine as a note: then a
        # run it finished lately is known to exist without a read.
        self._hears_every_delete = hears_every_delete

    def _read(self, workflow_id: str) -> WorkflowRow:
        return get_run(self.store, workflow_id)

    def wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow:
        """`Engine.wait_finished`: the run's row once it is terminal."""
        timeout = checked_wait(timeout, "result(timeout=...)")
        deadline = None if timeout is None else time.monotonic() + timeout
        finished = threading.Event()
        unsubscribe = self.wakeups.listen([("finished", workflow_id)], finished.set)
        runs = self.runs
        try:
            looked = False
            while True:
                interrupt = runs.interruption(workflow_id)
                if interrupt is not None:
                    # A step body raised it (KeyboardInterrupt, SystemExit): it belongs
                    # to whoever waits on the run, as if the step had run here.
                    raise _handed_over(interrupt)
                row = self.kept_finished(workflow_id)
                if row is None and (
                    looked
                    or not runs.is_tracked(workflow_id)
                    # Finished here, maybe before this waiter listened, though its
                    # row is not answered from (SQLite): the store has it.
                    or runs.peek_finished(workflow_id) is not None
                ):
                    # A run this engine runs says when it finishes (the listener above),
                    # so its first look costs no store read: in `run()` that read was
                    # one statement in twelve.
                    row = self._read(workflow_id)
                if row is not None and row.status.is_terminal:
                    return row
                wait = self.poll_interval
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        row = row or self._read(workflow_id)
                        if row.status.is_terminal:
                            return row
                        raise still_running(row, timeout, why_waiting(self.store, row))
                    wait = min(wait, left)
                # After a wake-up the cache is asked first, then the store: a run
                # cancelled or deleted elsewhere (the CLI, another process) is never
                # in the cache, and a round that runs out without a word may have
                # missed a notification.
                finished.wait(wait)
                finished.clear()
                looked = True
        finally:
            unsubscribe()

    def kept_finished(self, workflow_id: str) -> WorkflowRow | None:
        """`Engine.kept_finished`: lock-free, for callers on an event loop too."""
        if not self._hears_every_delete:
            return None
        return self.runs.peek_finished(workflow_id)

    def wait_event(self, workflow_id: str, key: str, timeout: float | None) -> Any:
        """`Engine.get_event`: the latest value of a run's event `key`, else None."""
        return wait_event(
            self.store, self.wakeups.listen, workflow_id, key, timeout, self.poll_interval
        )

    def wait_for_change(
        self, changed: threading.Event, deadline: datetime | None, *, idle: bool
    ) -> None:
        """`Engine.wait_for_change`: `changed`, the deadline, or a poll interval."""
        if not (idle and self.clock.autojump):
            timeout = self.poll_interval
            if deadline is not None:
                timeout = min(timeout, (deadline - self.clock.now()).total_seconds())
            changed.wait(max(timeout, 0.0))
            return
        # The deadline is in place before this wait counts as idle, and stays until it
        # counts as busy again: the clock never jumps past it meanwhile.
        token = None if deadline is None else self.wakeups.add_idle_expiry(deadline)
        try:
            with self.runs.counted_idle():
                stop = time.monotonic() + self.poll_interval
                while not changed.is_set() and time.monotonic() < stop:
                    if deadline is not None and self.clock.passed(deadline):
                        return
                    changed.wait(0.005)
        finally:
            if token is not None:
                self.wakeups.remove_idle_expiry(token)

    def wait_idle(self, timeout: float | None) -> bool:
        """`Engine.wait_idle`: True once nothing runs and no timer is due soon."""
        timeout = checked_wait(timeout, "wait_idle(timeout=...)")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.runs.busy == 0 and self.wakeups.settled():
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            self.wakeups.wait(0.05 if left is None else min(left, 0.05))
