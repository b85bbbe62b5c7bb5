"""Run deadlines: armed when a run is about to run here, and the run cancelled when
its deadline passes (`Engine.start(timeout=..., deadline=...)`).

The wake-ups keep the timers (`Wakeups.watch_deadline`) and call `expire_at` on
their deadline thread; `Deadlines` decides what a passed deadline means for the run
as the store has it now, and cancels it through the path `Engine.cancel` takes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from replaykit.errors import DamagedData, StoreUnavailable, WorkflowDeadlineExceeded
from replaykit.log import Status
from replaykit.otel import Telemetry
from replaykit.runtime import admin
from replaykit.runtime.clock import Clock
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["Deadlines"]

log = logging.getLogger("replaykit.engine")


class Deadlines:
    """Arms run deadlines with `watch_deadline` and cancels the runs past them; a run
    running here is stopped with `stop_locally` (the scheduler's local cancel)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        telemetry: Telemetry,
        *,
        poll_interval: float,
        watch_deadline: Callable[[str, datetime], None],
        stop_locally: Callable[[str], None],
        grace_over: Callable[[WorkflowRow], bool] | None = None,
        ask: Callable[[str, str], object] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.telemetry = telemetry
        self.poll_interval = poll_interval
        self._watch_deadline = watch_deadline
        self._stop_locally = stop_locally
        # A cancel's grace shares the run's deadline timer (one per run): told the
        # run when its timer fires, it stops the run if the grace has passed.
        self._grace_over = grace_over
        self._graces: dict[str, datetime] = {}
        self._ask = ask  # a child whose parent close policy is "cancel" is asked so

    def watch(self, row: WorkflowRow) -> bool:
        """Arm the deadline of a run about to run here; True if it passed (then it is
        cancelled now: a run found late by a recovery, claim, takeover or resume)."""
        if row.deadline is None:
            return False
        if not self.clock.passed(row.deadline):
            self._watch_deadline(row.workflow_id, row.deadline)
            return False
        self.expire(row)
        return True

    def expire_at(self, workflow_id: str) -> None:
        """A watched deadline passed (on the wake-ups' deadline thread): cancel the run."""
        try:
            row = self.store.get_workflow(workflow_id)
        except DamagedData as exc:
            log.warning("workflow id %r: its deadline passed, but %s", workflow_id, exc)
            return
        except StoreUnavailable as exc:
            log.warning(
                "workflow id %r: its deadline passed; the store is unavailable (%s), trying "
                "again soon",
                workflow_id,
                exc,
            )
            self._watch_deadline(
                workflow_id, self.clock.now() + timedelta(seconds=self.poll_interval)
            )
            return
        if row is None or row.status.is_terminal:
            self._graces.pop(workflow_id, None)
            return
        grace = self._graces.get(workflow_id)
        if grace is not None and self.clock.passed(grace):
            self._graces.pop(workflow_id, None)
            if self._grace_over is not None and self._grace_over(row):
                return
            grace = None
        if row.deadline is None:
            if grace is not None:
                self._watch_deadline(workflow_id, grace)
            return
        if not self.clock.passed(row.deadline):  # given a later one meanwhile (a resume)
            self._watch_deadline(workflow_id, _earliest(row.deadline, grace))
            return
        self.expire(row)

    def watch_grace(self, workflow_id: str, until: datetime) -> None:
        """Arm the end of a cancel's grace on the run's timer (with its deadline, the
        earlier of the two first)."""
        self._graces[workflow_id] = until
        row = self.store.get_workflow(workflow_id)
        deadline = None if row is None else row.deadline
        self._watch_deadline(workflow_id, _earliest(deadline, until))

    def expire(self, row: WorkflowRow) -> None:
        """Cancel a run past its deadline through the path `cancel` takes (children too)."""
        cancelled = admin.cancel_timed_out(
            self.store, row, on_cancel=self._stop_locally, on_ask=self._ask
        )
        if cancelled is None:
            return
        log.info(
            "workflow %r (id %r) %s; cancelled it",
            cancelled.name,
            cancelled.workflow_id,
            WorkflowDeadlineExceeded.detail(
                cancelled.deadline or row.deadline or self.clock.now(), cancelled.timeout
            ),
        )
        self.telemetry.run_finished(cancelled.name, Status.CANCELLED.value)


def _earliest(deadline: datetime | None, grace: datetime | None) -> datetime:
    assert deadline is not None or grace is not None
    return min(d for d in (deadline, grace) if d is not None)
