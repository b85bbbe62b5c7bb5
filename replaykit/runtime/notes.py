"""What the store's notifications mean to this engine (`Store.subscribe`).

A note may come from this process or another one (the CLI, another engine): a run
enqueued, resumed, deleted, finished, a message or an event for a run. `Notes`
turns each into what the rooms here must do about it: a claim round, an
activation, a finished run forgotten, the waiters and listeners of a wake woken, the
schedule loop or the sweep told to look again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from replaykit.runtime.host import Wake

__all__ = ["NotedRuns", "NotedWakes", "Notes"]


class NotedRuns(Protocol):
    """What a note asks of the scheduler about the runs it tracks here."""

    def allow(self, workflow_id: str) -> None: ...

    def release(self, workflow_id: str) -> None: ...

    def drop_warm(self, workflow_id: str) -> None: ...

    def dispatch(self, workflow_id: str) -> None: ...

    def forget_finished(self, workflow_id: str | None = None) -> None: ...

    def message_arrived(self, workflow_id: str) -> None: ...


class NotedWakes(Protocol):
    """What a note asks of the wake-ups."""

    def forget_deadline(self, workflow_id: str) -> None: ...

    def notify(self, wake: Wake) -> None: ...

    def sweep_soon(self) -> None: ...


class Notes:
    """The store's notifications, routed to the scheduler, the wake-ups and the claims."""

    def __init__(
        self,
        runs: NotedRuns,
        wakes: NotedWakes,
        *,
        claim: Callable[[str | None], None],
        schedules_changed: Callable[[], None] = lambda: None,
    ) -> None:
        self.runs = runs
        self.wakes = wakes
        self._claim = claim
        self._schedules_changed = schedules_changed

    def take_back(self, workflow_id: str) -> None:
        """Run again here a run that was resumed: whatever this engine knew of it (a
        cancel, an interrupt, a warm generator, how it ended) no longer holds."""
        self.runs.forget_finished(workflow_id)
        self.runs.allow(workflow_id)
        self.runs.release(workflow_id)
        self.runs.drop_warm(workflow_id)
        self.runs.dispatch(workflow_id)

    def heard(self, kind: str, key: str) -> None:
        """One notification, as `Store.subscribe` hands it: its kind and its key."""
        runs = self.runs
        if kind == "enqueued":
            self._claim(key)
            return
        if kind == "resumed":
            # Resumed by an operator (maybe from the CLI, in another process):
            # an activation checks the owner and version and runs it if ours. One
            # this engine cancelled (at its deadline, say) may run again: the store,
            # which gates every record on the status, says it is PENDING now.
            self.take_back(key)
            return
        if kind == "deleted":
            # Deleted, maybe from another process: a handle or a waiter must not be
            # answered from what this engine kept of it.
            runs.forget_finished(key)
            runs.drop_warm(key)
        if kind == "relisten":
            # Notes may have been lost, a delete's among them: nothing polls for one.
            # What is read seldom because notes tell of it (runs resumed elsewhere,
            # schedule states) is read at once.
            runs.forget_finished()
            self.wakes.sweep_soon()
            self._schedules_changed()
            self._claim(None)
            return
        if kind == "schedule":
            # An operator paused, resumed, triggered, backfilled or deleted a schedule.
            self._schedules_changed()
            return
        if kind == "finished":
            # Finished or cancelled elsewhere: nothing of it is worth keeping warm,
            # and its deadline no longer matters.
            runs.drop_warm(key)
            self.wakes.forget_deadline(key)
        self.wakes.notify((kind, key))
        if kind == "message":
            runs.message_arrived(key)
