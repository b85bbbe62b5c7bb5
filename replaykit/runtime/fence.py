"""Fencing: an engine that lost its executor hold to another engine runs and writes
nothing more.

An executor id's runs belong to the one live engine that holds the id. A hold can
be lost behind the engine's back: a PostgreSQL failover takes the session lock
with the old primary, and while the engine is cut off, another engine may take the
id on the new primary (a replacement started with the same id) and run the same
runs. The first engine is then a zombie: its runs' rows still name its executor id,
so the store's ownership check (`check_recordable`) cannot tell it from the rightful
holder. The fence does:

- before each record write and each step attempt, `check()` asks the hold whether it
  still holds the id (`check_hold`: free unless the store saw an outage since the
  last confirmation, then one round trip that also takes the lock again on the new
  primary when nobody else did);
- when another engine holds it, the engine is fenced for good: every later write and
  step attempt raises `Fenced`, a `RecordConflict`, so the run stops and records
  nothing (the rightful holder runs it), and the queue loop claims and takes over
  nothing more. A fenced engine is to be closed and started again.

Runs moved to another executor id by a takeover need no fence of this kind: their
rows name the new owner, and the store refuses this engine's writes to them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from replaykit.errors import RecordConflict
from replaykit.stores._holds import ExecutorHold, check_hold

__all__ = ["Fence", "Fenced"]

log = logging.getLogger("replaykit.engine")


class Fenced(RecordConflict):
    """This engine lost its executor hold to another engine: it writes nothing more."""


class Fence:
    """An engine's executor hold, checked before it writes; sticky once lost."""

    def __init__(
        self,
        hold: ExecutorHold,
        *,
        executor_id: str,
        app_version: str,
        holder: Callable[[], str],
    ) -> None:
        self.hold = hold
        self.executor_id = executor_id
        self.app_version = app_version
        self._holder = holder  # who holds the id now, for the message
        self._lock = threading.Lock()
        self.lost = False
        self.released = False

    def release(self) -> None:
        """The engine lets its id go (it is closing): from now on it writes nothing, and
        says nothing of it (no other engine took the id)."""
        self.released = True
        self.hold.release()

    def keep(self) -> bool:
        """The queue loop's periodic check: `ExecutorHold.keep()`, and False for good
        once the id was lost or let go."""
        if self.lost or self.released:
            return False
        if self.hold.keep():
            return True
        self._lose()
        return False

    def check(self, workflow_id: str) -> None:
        """Raise `Fenced` unless this engine still holds its id (before a write to, or a
        step of, run `workflow_id`); `StoreUnavailable` when the store cannot tell."""
        if self.released:
            # A step that outlived close(wait=False): the next engine runs it again.
            raise Fenced(
                f"engine with executor id {self.executor_id!r} has closed and let the id go; "
                f"workflow id {workflow_id!r} records nothing more here"
            )
        if not self.lost and check_hold(self.hold):
            return
        self._lose()
        raise Fenced(
            f"engine with executor id {self.executor_id!r} lost its hold on the id to another "
            f"engine while its connection was down; workflow id {workflow_id!r} belongs to "
            "that engine now, and this one runs and writes nothing more. Close this engine "
            "and start it again (with an executor id of its own)"
        )

    def _lose(self) -> None:
        with self._lock:
            if self.lost:
                return
            self.lost = True
        try:
            holder = self._holder() or "no details"
        except Exception as exc:  # a message's detail: the fence stands without it
            holder = f"not known: {exc}"
        log.error(
            "engine lost its hold on executor id %r (application version %r) to another "
            "engine (%s) while its connection was down; it is fenced: it runs, claims and "
            "writes nothing more. Close it and start it again, and give each engine its own "
            "executor id",
            self.executor_id,
            self.app_version,
            holder,
        )
