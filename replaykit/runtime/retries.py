"""Store calls that survive outages: one retry policy for the runtime's rooms.

`RetryingStore` is the store as the rooms see it. It knows which calls may
run twice without harm and retries those through `StoreUnavailable` (a
dropped connection, a server restarting); every other call goes through once,
and its caller decides what a lost answer means. Record writes are resolved by
reading the log back (`write_with_retries`), as only their caller knows the
position to look at.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from replaykit.errors import RecordConflict, RunNotPending, StoreUnavailable
from replaykit.log import Record, Status
from replaykit.stores.base import Store

__all__ = [
    "NOT_RETRIED",
    "RETRIED_CALLS",
    "TAKES_RUNS",
    "RetryingStore",
    "call_with_retries",
    "write_with_retries",
]

R = TypeVar("R")


def call_with_retries(fn: Callable[[], R], *, stop: Callable[[], bool], attempts: int = 8) -> R:
    """Retry `fn` through `StoreUnavailable` with backoff (the pool reconnects)."""
    delay = 0.05
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except StoreUnavailable:
            if attempt == attempts or stop():
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")


def write_with_retries(
    store: Store,
    workflow_id: str,
    position: int,
    write: Callable[[], Record],
    *,
    stop: Callable[[], bool],
) -> Record:
    """Commit a record, resolving a lost acknowledgement by reading back the log."""
    retried = False
    delay = 0.05
    while True:
        try:
            return write()
        except StoreUnavailable:
            if stop():
                raise
            retried = True
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        except RecordConflict as exc:
            if not retried:
                raise
            # The first attempt may have committed before the connection
            # dropped; if so, the position holds our record: adopt it.
            records = call_with_retries(lambda: store.load_log(workflow_id), stop=stop)
            if position < len(records) and records[position].outcome is not None:
                if isinstance(exc, RunNotPending):
                    # Ours committed, and the run has stopped since: the caller stops
                    # too, rather than go on to an effect nobody may record.
                    raise
                return records[position]
            raise


#: The store calls that are retried, and why each is safe to run twice.
RETRIED_CALLS: dict[str, str] = {
    # Reads change nothing.
    "get_workflow": "a read",
    "list_workflows": "a read",
    "count_workflows": "a read",
    "count_workflows_by": "a read",
    "load_log": "a read",
    "peek_message": "a read",
    "get_event": "a read",
    "get_events": "a read",
    "get_step_heartbeats": "a read",
    "get_cancel_request": "a read",
    "get_parent_close": "a read",
    "executor_holder": "a read",
    "schedule_states": "a read",
    # Writes whose second run finds the first one's effect and adds nothing.
    "create_workflow": "idempotent by id: a retry answers with the run the first created",
    "record_late": "a completed record at its position is answered unchanged: a retry finds "
    "the first attempt's",
    "create_workflows": "idempotent by id, all or nothing",
    "heartbeat": "an upsert of the same row; runs a lost answer took over (with "
    "lease_seconds) are this engine's and found by its sweep, which the loss brings forward",
    "record_step_heartbeat": "writes the same beat over its step's row again",
    "set_deadline": "writes the same two values again",
    "request_cancel": "the first request is kept: a retry finds its own and answers with it",
    "clear_cancel_request": "a second clear finds none",
    "set_parent_close": "an upsert of the same policy",
    "set_attributes": "writes the same values over the same names again",
    "send_message": "idempotent by key; the engine keys every send and names its call",
    "create_and_send": "idempotent by id and by the message's key, its call named: a retry "
    "finds the run and is told its message was delivered",
    "answer_message": "a retry after a lost answer finds the message gone and answers False; "
    "the caller then looks at the inbox again, where the next request waits",
    "set_status": "resolved by reading the run back (see RetryingStore.set_status)",
    "finish_workflow": "a retry of a finish that committed finds the run finished and "
    "answers False, changing nothing; the scheduler takes False as 'finished already'",
    "finish_many": "a retry of the whole call answers False for the finishes the first "
    "attempt committed ('finished already', as for finish_workflow); a finish answered "
    "StoreUnavailable on its own is finished again alone, with finish_workflow's retries",
    "continue_workflow": "a retry of a continue that committed finds the run at the next "
    "generation with the same inputs and its archived row in place: it writes nothing and "
    "answers with the run's row, as the first attempt would have ('already done')",
    "hold_executor": "a lost answer's session is closed, and its lock with it",
    "release": "a retry finds nothing more to put back",
    "register_schedules": "an upsert of the same definitions",
    "set_schedule_paused": "setting the flag again changes nothing",
    "request_schedule_trigger": "a pending trigger is kept: a retry answers with the first's",
    "request_schedule_backfill": "a pending backfill is kept: a retry answers with the first's",
    "clear_schedule_request": "clears only the request it names; a second clear finds none",
    # Their retry may lose the first attempt's answer, never a run: runs taken
    # are PENDING for this engine, and its sweep dispatches what it does not track.
    "claim": "runs the lost answer named are this engine's and found by its sweep, which "
    "the loss brings forward",
    "take_over": "runs the lost answer named are this engine's and found by its sweep, which "
    "the loss brings forward",
}
#: The retried calls whose lost answer may have named runs that are this engine's now.
TAKES_RUNS = frozenset({"claim", "take_over", "heartbeat"})
#: The store calls that go through once, and why.
NOT_RETRIED: dict[str, str] = {
    "record": "its caller reads the log back (write_with_retries)",
    "record_many": "its callers resolve each write by reading back",
    "record_transaction": "the user's transaction body must not run twice",
    "bump_recovery": "a retry would count one recovery twice",
    "move_family": "after a lost answer a retry moves nothing more and answers no ids, which "
    "would tell the operator nothing moved: the caller hears the outage, and running the "
    "resume again is safe",
    "rewind_workflow": "after a lost answer a retry finds the run PENDING and refuses it: "
    "the caller hears the outage, and the run's generation says whether it happened",
    "delete_workflow": "after a lost answer, 'nothing to delete' cannot tell 'we deleted it' "
    "from 'it was never there': the caller hears the outage",
    "delete_schedule_state": "after a lost answer, 'nothing to delete' cannot tell 'we "
    "deleted it' from 'it was never there': the caller hears the outage",
    "subscribe": "local to this process",
    "close": "local to this process",
}


class RetryingStore:
    """`store`, with the calls of `RETRIED_CALLS` retried through outages until `stop()`.

    Attributes are looked up on the wrapped store at each call, so a store
    whose methods are replaced afterwards (the tests' lost acknowledgements)
    is seen as it is then.
    """

    def __init__(
        self,
        store: Store,
        *,
        stop: Callable[[], bool],
        attempts: int = 8,
        runs_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.inner = store
        self._stop = stop
        self._attempts = attempts
        # Called after a call of TAKES_RUNS was retried: the runs its lost answer
        # named are found by the engine's sweep, which this asks for now rather than
        # at its next turn (minutes apart on a store whose notes reach every sharer).
        self._runs_lost = runs_lost

    def __repr__(self) -> str:
        return repr(self.inner)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if name not in RETRIED_CALLS:
            return found
        inner = self.inner
        takes_runs = name in TAKES_RUNS

        def retried(*args: Any, **kwargs: Any) -> Any:
            lost = False

            def attempt() -> Any:
                nonlocal lost
                try:
                    return getattr(inner, name)(*args, **kwargs)
                except StoreUnavailable:
                    lost = True
                    raise

            try:
                return call_with_retries(attempt, stop=self._stop, attempts=self._attempts)
            finally:
                if lost and takes_runs:
                    self._runs_lost()

        retried.__name__ = name
        return retried

    # The record writes go through once (NOT_RETRIED) and are the hot path: plain
    # methods, rather than `__getattr__`'s lookup at every step. Still looked up on
    # the wrapped store at each call.
    def record(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.record(*args, **kwargs)

    def record_many(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.record_many(*args, **kwargs)

    def set_status(self, workflow_id: str, status: Status, **kwargs: Any) -> bool:
        """`Store.set_status`, retried; after a lost answer, "changed nothing" is checked.

        A retry of a change the first attempt made finds the run changed
        already and answers False; reading the run back tells that apart from
        a change that truly did not happen, so the caller hears what happened.
        """
        lost = False
        delay = 0.05
        for attempt in range(1, self._attempts + 1):
            try:
                changed = self.inner.set_status(workflow_id, status, **kwargs)
            except StoreUnavailable:
                if attempt == self._attempts or self._stop():
                    raise
                lost = True
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if changed or not lost:
                return changed
            row = call_with_retries(lambda: self.inner.get_workflow(workflow_id), stop=self._stop)
            wanted_owner = kwargs.get("executor_id")
            return (
                row is not None
                and row.status is status
                and (wanted_owner is None or row.executor_id == wanted_owner)
            )
        raise AssertionError("unreachable")
