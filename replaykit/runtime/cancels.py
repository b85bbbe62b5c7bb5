"""Cancels a workflow can handle: the request, its delivery, its grace, the hard stop.

`cancel(workflow_id, grace=..., reason=...)` keeps a `CancelRequest` on the run in
the store (the first wins) and here, in memory, for the runs this engine runs.
The scheduler delivers it at the run's current yield: the command the workflow
waits on (or is about to carry out) is recorded with the outcome `Cancelled`, so
the generator gets the exception at that yield and a replay raises it at the same
position (the log holds the delivery; `Interpreter.cancel_delivered` reads it back).
The workflow may catch it and run cleanup commands; when its generator ends, however
it ends, the books finish the run CANCELLED.

A second cancel, or the grace's end (a timer of the wake-ups, on the engine's clock,
virtual in the testing kit), stops the run hard, as `terminate` does: the store's
status CANCELLED, and the internal `Stopped` signal where its work stands.

A run that does not run (ENQUEUED, PARKED) is cancelled at once: nothing could
deliver the request to it. Another engine running the run learns of the request
when it next activates the run (it reads the request with the run's log).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from replaykit import serde
from replaykit.errors import Cancelled, WorkflowNotFound
from replaykit.log import Failure, Status
from replaykit.runtime.clock import Clock
from replaykit.stores.base import CancelRequest, Store, WorkflowRow

__all__ = [
    "DEFAULT_GRACE",
    "CancelRequests",
    "ask_to_cancel",
    "cancelled_failure",
    "checked_grace",
    "second_cancel",
]

log = logging.getLogger("replaykit.engine")

#: Seconds a cancelled workflow has for its cleanup before it is stopped hard, unless
#: `cancel(..., grace=)` says otherwise: a minute, enough for a few compensating steps
#: against services that answer in seconds, short enough that an operator's cancel is
#: seen to end a run promptly.
DEFAULT_GRACE = 60.0


def checked_grace(grace: object, workflow_id: str) -> float:
    """`grace` as seconds above zero, or a ValueError naming the run."""
    if (
        isinstance(grace, bool)
        or not isinstance(grace, (int, float))
        or not math.isfinite(grace)
        or grace <= 0
    ):
        raise ValueError(
            f"cancel({workflow_id!r}, grace={grace!r}): the grace must be a number of "
            "seconds above 0 (the time the workflow has to clean up after Cancelled); "
            "to stop a run with no cleanup at all, call terminate()"
        )
    return float(grace)


def cancelled_failure(row: WorkflowRow, position: int, what: str, reason: str) -> Failure:
    """The outcome that delivers a cancel at `position`: `Cancelled`, naming where."""
    said = f": {reason}" if reason else ""
    error = Cancelled(
        f"workflow {row.name!r} (id {row.workflow_id!r}) was cancelled at position "
        f"{position} ({what}){said}",
        reason,
    )
    return Failure(serde.encode_error(error, with_traceback=False))


class CancelRequests:
    """The cancel requests of the runs this engine runs, under a lock of its own.

    `held(workflow_id)` is a dictionary read: the scheduler asks it before each
    effect it carries out. `stop` terminates a run (the engine's `terminate`),
    `wake` hands a suspended run back to the scheduler, `watch` arms a timer that
    calls `grace_over` at the given instant.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        stop: Callable[[str, str], bool],
        wake: Callable[[str], None],
        watch: Callable[[str, datetime], None],
        tracked: Callable[[str], bool] = lambda _workflow_id: False,
    ) -> None:
        self.store = store
        self.clock = clock
        self._stop = stop
        self._wake = wake
        self._watch = watch
        self._tracked = tracked
        self._lock = threading.Lock()
        self._held: dict[str, CancelRequest] = {}
        # Runs whose log holds the delivery: a heartbeating cleanup step is not told again.
        self._delivered: set[str] = set()

    def held(self, workflow_id: str) -> CancelRequest | None:
        """The run's cancel request known here (a lock-free read)."""
        return self._held.get(workflow_id)

    def undelivered(self, workflow_id: str) -> CancelRequest | None:
        """The run's request if its delivery is not known here yet (a heartbeat asks)."""
        if workflow_id in self._delivered:
            return None
        return self._held.get(workflow_id)

    def delivered(self, workflow_id: str) -> None:
        """The run's log holds the delivery (its generator saw `Cancelled`)."""
        with self._lock:
            if workflow_id in self._held:
                self._delivered.add(workflow_id)

    def request(self, row: WorkflowRow, grace: float, reason: str) -> bool:
        """Ask the PENDING run `row` to cancel: True if this is its first request (it
        is delivered at its current yield), False if it had one (the caller stops it)."""
        now = self.clock.now()
        request = CancelRequest(reason, now + timedelta(seconds=grace), now)
        kept = self.store.request_cancel(row.workflow_id, request)
        if kept != request:
            return False
        self._keep(row.workflow_id, kept)
        self._wake(row.workflow_id)
        return True

    def loaded(self, workflow_id: str) -> CancelRequest | None:
        """The run is about to run here from its log: take its request from the store."""
        return self.read_with_log(workflow_id, self.store.get_cancel_request(workflow_id))

    def read_with_log(
        self, workflow_id: str, request: CancelRequest | None
    ) -> CancelRequest | None:
        """`loaded`, with the request read beside the run's log (a batch of wake-ups)."""
        if request is None:
            with self._lock:
                self._held.pop(workflow_id, None)
                self._delivered.discard(workflow_id)
            return None
        self._keep(workflow_id, request)
        return request

    def heard(self, workflow_id: str) -> None:
        """A store's note that `workflow_id` was asked to cancel (maybe by a `Client` or
        another engine): a run this engine runs takes the request and is told."""
        if self._tracked(workflow_id) and self._held.get(workflow_id) is None:
            self.deliver(workflow_id)

    def deliver(self, workflow_id: str) -> None:
        """A request kept in the store by another hand (the testing kit): take it, arm
        its grace, and hand the run back to be told if it waits here."""
        if self.loaded(workflow_id) is not None:
            self._wake(workflow_id)

    def forget(self, workflow_id: str) -> None:
        """The run was resumed, deleted or ended: its request is dropped."""
        if workflow_id not in self._held and workflow_id not in self._delivered:
            return  # most runs were never asked: no lock on a finish's path
        with self._lock:
            self._held.pop(workflow_id, None)
            self._delivered.discard(workflow_id)

    def _keep(self, workflow_id: str, request: CancelRequest) -> None:
        with self._lock:
            self._held[workflow_id] = request
        self._watch(workflow_id, request.grace_until)

    def grace_over(self, row: WorkflowRow) -> bool:
        """Stop `row` hard if its cancel's grace has passed; whether it had."""
        request = self._held.get(row.workflow_id) or self.store.get_cancel_request(row.workflow_id)
        if request is None or not self.clock.passed(request.grace_until):
            return False
        grace = (request.grace_until - request.requested_at).total_seconds()
        said = f": {request.reason}" if request.reason else ""
        detail = (
            f"cancelled{said}; its cleanup did not end within the grace of {grace:g} s, "
            "so it was stopped"
        )
        log.info("workflow %r (id %r) %s", row.name, row.workflow_id, detail)
        self._stop(row.workflow_id, detail)
        return True


def ask_to_cancel(
    store: Store,
    now: datetime,
    workflow_id: str,
    *,
    grace: float,
    reason: str,
    children: bool,
    stop: Callable[[str, str, bool], bool],
) -> bool:
    """A cancel from a process that runs nothing (`Client`, the CLI): the request kept
    in the store, for the engine running the run to deliver when it next activates it.
    A run that does not run, or a second cancel, is stopped now through `stop(id,
    detail, children)`. False if the run had finished."""
    grace = checked_grace(grace, workflow_id)
    row = store.get_workflow(workflow_id)
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
    if row.status.is_terminal:
        return False
    if row.status is not Status.PENDING:
        return stop(workflow_id, reason, children)
    request = CancelRequest(reason, now + timedelta(seconds=grace), now)
    if store.request_cancel(workflow_id, request) != request:
        return stop(workflow_id, second_cancel(reason), children)
    return True


def second_cancel(reason: str) -> str:
    """The status detail of a run stopped by a second cancel."""
    return f"{reason}; cancelled a second time" if reason else "cancelled a second time"
