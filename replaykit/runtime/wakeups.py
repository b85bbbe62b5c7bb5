"""Wake-ups: timers, waiters, notifications and the poll loop.

A suspended run is an entry here and nothing else: its deadline in the timer
heap, the notifications it waits for, and a probe the poller may call when a
notification was lost. When one of them fires, the run is handed to
`dispatch`; this room never runs a workflow itself and never reaches back
into the Engine.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

from replaykit.errors import StoreUnavailable
from replaykit.log import Status
from replaykit.runtime.clock import Clock
from replaykit.runtime.host import CancelScope, Suspend, Wake
from replaykit.stores.base import Store, WorkflowFilter

log = logging.getLogger("replaykit.engine")

__all__ = [
    "PARK_BEYOND",
    "PREEMPT_POLL_MAX",
    "SWEEP_EVERY",
    "SWEEP_EVERY_WHEN_HEARD",
    "PreemptWatch",
    "Wakeups",
]

# Poll rounds between sweeps for PENDING runs this engine owns but does not
# track: runs an operator resumed from another process, whose notification
# may not reach us (SQLite has none across processes).
SWEEP_EVERY = 10

# The same where every sharer's notes reach this engine (PostgreSQL's LISTEN): a note
# is lost only while the listener reconnects, and its "relisten" asks for a sweep at
# once (`sweep_soon`), as does a lost answer that may have named runs of ours. What
# is left to this slow sweep is a note the server refused (a key past its size).
SWEEP_EVERY_WHEN_HEARD = 300


#: A sleeper due further ahead than this many seconds is parked: nothing of it is kept
#: here, its run's row holds the instant (`WorkflowRow.wake_at`, written with the
#: `Sleep`'s start), and the timer scan reads it back from the store this far ahead of
#: its instant. A million runs asleep for a day cost an engine nothing until their
#: last minute, and a restart does not read them (docs/design.md, "Parked sleepers").
PARK_BEYOND = 60.0

#: How far the horizon may fall behind `PARK_BEYOND` before the scan reads the next
#: stretch, in seconds: a parked sleeper is read back at least `PARK_BEYOND - SCAN_EVERY`
#: before its instant, and an engine with parked runs reads once per stretch.
SCAN_EVERY = 15.0


#: The longest a preemptible step runs on after its run was cancelled elsewhere,
#: when no notification says so: the watch looks at least this often.
PREEMPT_POLL_MAX = 1.0


#: Up to this many runs of preemptible steps, the watch reads each run; past it, one
#: listing of this engine's PENDING runs answers for all of them.
PREEMPT_READ_EACH = 8


def stopped_runs(
    store: Store, executor_id: str, app_version: str
) -> Callable[[list[str]], set[str]]:
    """The preempt watch's look at the store: which of these runs may no longer run on
    the engine `executor_id` (cancelled, parked, finished, deleted, taken over)."""

    def look(workflow_ids: list[str]) -> set[str]:
        if len(workflow_ids) <= PREEMPT_READ_EACH:
            stopped = set()
            for workflow_id in workflow_ids:
                row = store.get_workflow(workflow_id)
                if (
                    row is None
                    or row.status is not Status.PENDING
                    or row.executor_id != executor_id
                ):
                    stopped.add(workflow_id)
            return stopped
        where = WorkflowFilter(
            status=Status.PENDING, executor_id=executor_id, app_version=app_version
        )
        running = {row.workflow_id for row in store.list_workflows(where)}
        return {workflow_id for workflow_id in workflow_ids if workflow_id not in running}

    return look


class PreemptWatch:
    """Stops preemptible steps whose run was cancelled from anywhere.

    While a preemptible step runs, its run's id and its attempt's cancel scope
    are watched here. Two things cancel the scope: a "finished" notification of
    the run (the store's, so other processes' commits too on PostgreSQL), and a
    look at the store every `interval` seconds, one call for every watched run
    (`look(ids)` answers the ids that may no longer run here: cancelled, parked,
    finished, deleted, or owned by another engine). The watch's thread starts
    with the first step watched, so an engine that runs none has no such thread.
    """

    def __init__(self, *, interval: float, look: Callable[[list[str]], set[str]]) -> None:
        self.interval = min(interval, PREEMPT_POLL_MAX)
        self._look = look
        self._cv = threading.Condition()
        self._watched: dict[int, tuple[str, CancelScope]] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, workflow_id: str, scope: CancelScope) -> int:
        """Watch `workflow_id` until `remove(token)`; its scope is cancelled if the run stops."""
        with self._cv:
            token = next(self._tokens)
            self._watched[token] = (workflow_id, scope)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._loop, name="replaykit-preempt", daemon=True
                )
                self._thread.start()
            return token

    def remove(self, token: int) -> None:
        with self._cv:
            self._watched.pop(token, None)

    def watched(self) -> list[str]:
        with self._cv:
            return sorted({workflow_id for workflow_id, _ in self._watched.values()})

    def stopped(self, workflow_id: str) -> None:
        """The run finished or was cancelled (a notification): stop its watched steps."""
        with self._cv:
            scopes = [scope for wid, scope in self._watched.values() if wid == workflow_id]
        for scope in scopes:
            scope.stop_run()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            thread = self._thread
            self._cv.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _loop(self) -> None:
        while True:
            with self._cv:
                self._cv.wait(self.interval)
                if self._closed:
                    return
                ids = sorted({workflow_id for workflow_id, _ in self._watched.values()})
            if not ids:
                continue
            try:
                gone = self._look(ids)
            except Exception as exc:  # an outage: look again next round
                log.warning("could not look at the runs of preemptible steps: %s", exc)
                continue
            for workflow_id in gone:
                self.stopped(workflow_id)


class Wakeups:
    """Owns every suspended run's wake conditions, under one lock of its own.

    `dispatch(workflow_id)` is called (never under the lock) when a run should
    run again. `busy()` says how many activations run now: an autojumping clock
    moves only when it is zero. `sweep(thorough=...)` is the poller's occasional
    look for runs nobody here tracks: every `SWEEP_EVERY` polls, or every
    `SWEEP_EVERY_WHEN_HEARD` when `notes_reach_every_sharer`, and at the next poll
    after `sweep_soon()` (then `thorough=True`).

    Run deadlines (`watch_deadline`) are timers of their own: when one passes,
    `expire(workflow_id)` is called on a thread of its own (it cancels the run
    through the store), whatever the run is doing, and an autojumping clock
    waits for it to return before it moves on.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        poll_interval: float,
        dispatch: Callable[[str], None],
        busy: Callable[[], int],
        sweep: Callable[..., None],
        expire: Callable[[str], None] | None = None,
        notes_reach_every_sharer: bool = False,
        scan: Callable[[datetime, datetime], list[tuple[str, datetime]]] | None = None,
        revive: Callable[[str], None] | None = None,
    ) -> None:
        self.clock = clock
        self.poll_interval = poll_interval
        self._dispatch = dispatch
        self._busy = busy
        self._sweep = sweep
        self._sweep_every = SWEEP_EVERY_WHEN_HEARD if notes_reach_every_sharer else SWEEP_EVERY
        self._sweep_asked = False
        # Parking (`PARK_BEYOND`): `scan(after, until)` answers the PENDING runs of this
        # engine that sleep until an instant in (after, until] and that nothing here
        # tracks; `revive(id)` runs a run that may be parked now (a cancel for it).
        # Never on an autojumping clock, which must see every timer to jump to it.
        self._scan = None if clock.autojump else scan
        self._revive = revive
        # Sleepers due after this instant are parked; the scan has read every run due
        # by it. None: nothing is parked.
        self._horizon: datetime | None = None
        self._parked = 0  # how many suspensions were parked since the start
        self._cv = threading.Condition()
        self._closed = False
        # (when, tie-breaker, workflow id, the suspension it belongs to or None).
        # An entry whose suspension was forgotten is stale and skipped.
        self._timers: list[tuple[datetime, int, str, Suspend | None]] = []
        # Expiries that composites wait for while counted idle (virtual clocks).
        self._idle_expiries: list[tuple[datetime, int]] = []
        self._timer_seq = itertools.count()
        # Every suspended run: its suspension, or for a run that waits only for an
        # instant (a `Sleep`, not kept warm), that instant alone, the very object its
        # entry in `_sleepers` holds. A million sleepers are a million of these: a
        # bare entry is 0.2 KiB where a suspension and its timer were 0.35.
        self._suspended: dict[str, Suspend | datetime] = {}
        # (when, workflow id) of the bare sleepers; stale once `_suspended` holds
        # another instant for the run (or nothing).
        self._sleepers: list[tuple[datetime, str]] = []
        # The runs whose suspension has a probe for the poller (`Suspend.ready`), so
        # that a poll does not walk every sleeper to find them.
        self._probed: set[str] = set()
        # Who waits on each wake: one run's id, or a set of them when several do (most
        # wakes have one waiter: a run's own inbox; a set per run cost 200 B of each).
        self._waiters: dict[Wake, str | set[str]] = {}
        self._listeners: dict[Wake, list[Callable[[], None]]] = {}
        self._kind_listeners: dict[str, list[Callable[[str], None]]] = {}
        # Runs taken off their waits and not yet handed to dispatch: the clock
        # must not jump over them.
        self._waking = 0
        # Notification counter, and the count at each wake's latest notification,
        # so a run that suspends can tell whether what it waits for changed while
        # it was being replayed.
        self._seq = 0
        self._last_notified: dict[Wake, int] = {}
        # Run deadlines: (when, tie-breaker, workflow id), and each watched run's
        # deadline; an entry that is not its run's deadline any more is stale.
        self._expire = expire
        self._deadlines: list[tuple[datetime, int, str]] = []
        self._deadline_of: dict[str, datetime] = {}
        self._expiring = ThreadPoolExecutor(1, thread_name_prefix="replaykit-deadlines")
        self._threads = [
            threading.Thread(target=self._timer_loop, name="replaykit-timers", daemon=True),
            threading.Thread(target=self._poll_loop, name="replaykit-poll", daemon=True),
        ]

    def start(self) -> None:
        if self._scan is not None:
            self._horizon = self.clock.now() + timedelta(seconds=PARK_BEYOND)
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout=5)
        self._expiring.shutdown(wait=True, cancel_futures=True)

    # -- suspending and forgetting ----------------------------------------------------

    def seq(self) -> int:
        """The notification count now; pass it back to `suspend` as `seen`."""
        with self._cv:
            return self._seq

    def suspend(self, workflow_id: str, suspend: Suspend, *, seen: int) -> bool:
        """Register the run's waits; False if one was notified after `seen` (look again)."""
        with self._cv:
            self._forget(workflow_id)
            if any(self._last_notified.get(w, -1) > seen for w in suspend.waits):
                return False
            if not suspend.waits and suspend.ready is None and suspend.wake_at is not None:
                if (
                    self._horizon is not None
                    and suspend.wake_at > self._horizon
                    and suspend.parkable
                ):
                    # Parked: the scan reads it back from the store before it is due.
                    self._parked += 1
                    return True
                # Only an instant to wait for: a bare entry (no suspension kept).
                self._suspended[workflow_id] = at = suspend.wake_at
                heapq.heappush(self._sleepers, (at, workflow_id))
                self._cv.notify_all()
                return True
            self._suspended[workflow_id] = suspend
            if suspend.ready is not None:
                self._probed.add(workflow_id)
            for wake in suspend.waits:
                waiting = self._waiters.get(wake)
                if waiting is None:
                    self._waiters[wake] = workflow_id
                elif isinstance(waiting, str):
                    if waiting != workflow_id:
                        self._waiters[wake] = {waiting, workflow_id}
                else:
                    waiting.add(workflow_id)
            if suspend.wake_at is not None:
                heapq.heappush(
                    self._timers, (suspend.wake_at, next(self._timer_seq), workflow_id, suspend)
                )
            self._cv.notify_all()
            return True

    def forget(self, workflow_id: str) -> None:
        with self._cv:
            self._forget(workflow_id)

    def is_suspended(self, workflow_id: str) -> bool:
        with self._cv:
            return workflow_id in self._suspended

    def peek_suspended(self, workflow_id: str) -> bool:
        """`is_suspended` without the lock, for a caller that looks again if it misses."""
        return workflow_id in self._suspended

    def suspended_ids(self) -> set[str]:
        with self._cv:
            return set(self._suspended)

    def suspended_count(self) -> int:
        return len(self._suspended)

    def horizon(self) -> datetime | None:
        """Sleepers due after this are parked in the store (None: none are): recovery
        and sweeps pass over them, and the timer scan brings them back."""
        with self._cv:
            return self._horizon

    def parked_count(self) -> int:
        """How many suspensions were parked since the start (some may have woken)."""
        return self._parked

    def _advance_horizon(self) -> None:
        """Move the horizon to `PARK_BEYOND` ahead, reading back the parked sleepers
        it passes over (the poll loop's, every poll)."""
        if self._scan is None:
            return
        with self._cv:
            after = self._horizon
            if after is None:
                return
            until = self.clock.now() + timedelta(seconds=PARK_BEYOND)
            if self._parked == 0:
                # Nothing was parked, so there is nothing to read back.
                self._horizon = max(after, until)
                return
            if (until - after).total_seconds() < SCAN_EVERY:
                return
            # Raised before the read: a run that suspends meanwhile, due by `until`, is
            # kept here, since the read may not see its sleep's start.
            self._horizon = until
        try:
            found = self._scan(after, until)
        except Exception as exc:  # an outage: read this stretch again next poll
            with self._cv:
                self._horizon = after
            log.warning("could not read the sleepers parked in the store: %s", exc)
            return
        with self._cv:
            for workflow_id, at in found:
                if workflow_id not in self._suspended:
                    self._suspended[workflow_id] = at
                    heapq.heappush(self._sleepers, (at, workflow_id))
            self._cv.notify_all()

    def waiting_beyond(self, instant: datetime) -> int:
        """How many suspended runs kept here wait for an instant after `instant` (a
        sweep's count of the store's runs passes over them, as over parked ones)."""
        with self._cv:
            return sum(
                1
                for entry in self._suspended.values()
                if (entry if isinstance(entry, datetime) else entry.wake_at or instant) > instant
            )

    def sleepers_count(self) -> int:
        """How many suspended runs are bare sleepers (waiting for an instant alone)."""
        with self._cv:
            return sum(1 for entry in self._suspended.values() if isinstance(entry, datetime))

    def _forget(self, workflow_id: str) -> None:
        suspend = self._suspended.pop(workflow_id, None)
        if suspend is None or isinstance(suspend, datetime):
            return  # a bare sleeper's heap entry goes stale (`_drop_stale_sleepers`)
        self._probed.discard(workflow_id)
        for wake in suspend.waits:
            waiting = self._waiters.get(wake)
            if waiting is None:
                continue
            if isinstance(waiting, str):
                if waiting == workflow_id:
                    del self._waiters[wake]
                continue
            waiting.discard(workflow_id)
            if not waiting:
                del self._waiters[wake]

    def add_timer(self, at: datetime, workflow_id: str) -> None:
        """Dispatch `workflow_id` at `at` whatever it waits on (a retry after an outage)."""
        with self._cv:
            heapq.heappush(self._timers, (at, next(self._timer_seq), workflow_id, None))
            self._cv.notify_all()

    # -- run deadlines -------------------------------------------------------------------

    def watch_deadline(self, workflow_id: str, deadline: datetime) -> None:
        """Call `expire(workflow_id)` once `deadline` passes, unless forgotten first."""
        with self._cv:
            if self._deadline_of.get(workflow_id) == deadline:
                return
            self._deadline_of[workflow_id] = deadline
            heapq.heappush(self._deadlines, (deadline, next(self._timer_seq), workflow_id))
            self._cv.notify_all()

    def forget_deadline(self, workflow_id: str) -> None:
        """The run finished (or was cancelled): its deadline no longer matters here."""
        with self._cv:
            self._deadline_of.pop(workflow_id, None)

    def watched_deadline(self, workflow_id: str) -> datetime | None:
        with self._cv:
            return self._deadline_of.get(workflow_id)

    def _drop_stale_deadlines(self) -> None:
        while self._deadlines:
            at, _, workflow_id = self._deadlines[0]
            if self._deadline_of.get(workflow_id) == at:
                return
            heapq.heappop(self._deadlines)

    def _due_deadlines(self) -> list[str]:
        """Pop the deadlines that passed (caller holds the lock)."""
        due: list[str] = []
        self._drop_stale_deadlines()
        while self._deadlines and self.clock.passed(self._deadlines[0][0]):
            _, _, workflow_id = heapq.heappop(self._deadlines)
            del self._deadline_of[workflow_id]
            due.append(workflow_id)
            self._drop_stale_deadlines()
        return due

    def _expire_all(self, workflow_ids: list[str]) -> None:
        try:
            for workflow_id in workflow_ids:
                if self._expire is None or self._closed:
                    continue
                try:
                    self._expire(workflow_id)
                except Exception:  # one run's trouble must not keep the others running
                    log.exception(
                        "workflow id %r: could not cancel it at its deadline", workflow_id
                    )
        finally:
            with self._cv:
                self._waking -= len(workflow_ids)
                self._cv.notify_all()

    # -- notifications -------------------------------------------------------------------

    def listen(self, wakes: Iterable[Wake], callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when any of `wakes` is notified, until unsubscribed."""
        wakes = list(wakes)
        with self._cv:
            for wake in wakes:
                self._listeners.setdefault(wake, []).append(callback)

        def unsubscribe() -> None:
            with self._cv:
                for wake in wakes:
                    callbacks = self._listeners.get(wake)
                    if callbacks and callback in callbacks:
                        callbacks.remove(callback)
                        if not callbacks:
                            del self._listeners[wake]

        return unsubscribe

    def listen_kind(self, kind: str, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback(key)` for every notification of `kind`, until unsubscribed.

        One registration for many keys: `AsyncEngine` hears every finished run
        through it, so that a thousand waiters take no lock of ours on the loop."""
        with self._cv:
            self._kind_listeners.setdefault(kind, []).append(callback)

        def unsubscribe() -> None:
            with self._cv:
                callbacks = self._kind_listeners.get(kind, [])
                if callback in callbacks:
                    callbacks.remove(callback)

        return unsubscribe

    def tell_listeners(self, wake: Wake) -> None:
        """Call the listeners of `wake` (not its waiters): something they look at
        changed since the notification they had (the finished cache was filled)."""
        with self._cv:
            listeners = self._listeners_of(wake)
        _tell(listeners, wake)

    def _listeners_of(self, wake: Wake) -> _Listeners:
        """(Under `_cv`.) The listeners of `wake` now, to be called outside the lock."""
        return list(self._listeners.get(wake, ())), list(self._kind_listeners.get(wake[0], ()))

    def notify(self, wake: Wake) -> None:
        """Something a run may wait for happened: wake its waiters and listeners."""
        with self._cv:
            self._seq += 1
            if self._busy():
                self._last_notified[wake] = self._seq
            to_wake = _ids(self._waiters.get(wake))
            for workflow_id in to_wake:
                self._forget(workflow_id)
            self._waking += len(to_wake)
            listeners = self._listeners_of(wake)
        _tell(listeners, wake)
        self._hand_over(to_wake)

    def forget_notifications(self, upto: int) -> None:
        """Nothing ran when the count was `upto`: no suspension in the making needs the
        notifications up to then (activations started since have seen them)."""
        with self._cv:
            if self._last_notified:
                self._last_notified = {
                    wake: seq for wake, seq in self._last_notified.items() if seq > upto
                }
            self._cv.notify_all()

    def wake(self, workflow_id: str) -> None:
        """Hand a suspended run back to dispatch now, whatever it waits for (a cancel
        to deliver). A run not suspended here is left alone, unless runs were parked:
        then `revive` looks in the store for it (a parked sleeper is told at once)."""
        with self._cv:
            suspended = workflow_id in self._suspended
            if suspended:
                self._forget(workflow_id)
                self._waking += 1
        if suspended:
            self._hand_over([workflow_id])
        elif self._parked and self._revive is not None:
            self._revive(workflow_id)  # parked, maybe: the store says whether it is ours

    def sweep_soon(self) -> None:
        """Sweep at the next poll: notes may have been lost (the listener reconnected),
        or a lost answer may have named runs that are this engine's now."""
        with self._cv:
            self._sweep_asked = True

    def poke(self) -> None:
        """Look again now (the number of busy activations changed)."""
        with self._cv:
            self._cv.notify_all()

    def _hand_over(self, workflow_ids: list[str]) -> None:
        try:
            for workflow_id in workflow_ids:
                self._dispatch(workflow_id)
        finally:
            with self._cv:
                self._waking -= len(workflow_ids)
                self._cv.notify_all()

    # -- time --------------------------------------------------------------------------------

    def _drop_stale_timers(self) -> None:
        while self._timers:
            _, _, workflow_id, token = self._timers[0]
            if token is None or self._suspended.get(workflow_id) is token:
                return
            heapq.heappop(self._timers)

    def _drop_stale_sleepers(self) -> None:
        while self._sleepers:
            at, workflow_id = self._sleepers[0]
            if self._suspended.get(workflow_id) is at:
                return
            heapq.heappop(self._sleepers)

    def _next_timer(self) -> datetime | None:
        """The earliest live timer of either heap (caller holds the lock)."""
        self._drop_stale_timers()
        self._drop_stale_sleepers()
        if self._timers and self._sleepers:
            return min(self._timers[0][0], self._sleepers[0][0])
        if self._timers:
            return self._timers[0][0]
        return self._sleepers[0][0] if self._sleepers else None

    def _next_jump(self) -> datetime | None:
        """Where an autojumping clock goes when nothing runs (caller holds the lock)."""
        self._drop_stale_deadlines()
        timer = self._next_timer()
        candidates = [] if timer is None else [timer]
        if self._deadlines:
            candidates.append(self._deadlines[0][0])
        if self._idle_expiries:
            candidates.append(self._idle_expiries[0][0])
        return min(candidates) if candidates else None

    def _idle(self) -> bool:
        return self._busy() == 0 and self._waking == 0

    def _timer_loop(self) -> None:
        clock = self.clock
        while True:
            due: list[str] = []
            with self._cv:
                if self._closed:
                    return
                now = clock.now()
                self._drop_stale_timers()
                while self._timers and clock.passed(self._timers[0][0]):
                    _, _, workflow_id, token = heapq.heappop(self._timers)
                    if token is None or self._suspended.get(workflow_id) is token:
                        due.append(workflow_id)
                        self._forget(workflow_id)
                    self._drop_stale_timers()
                self._drop_stale_sleepers()
                while self._sleepers and clock.passed(self._sleepers[0][0]):
                    _, workflow_id = heapq.heappop(self._sleepers)
                    due.append(workflow_id)
                    del self._suspended[workflow_id]
                    self._drop_stale_sleepers()
                expired = self._due_deadlines()
                if expired:
                    # Counted as waking until cancelled: the clock must not jump past
                    # a run's deadline into what it would do after it.
                    self._waking += len(expired)
                    try:
                        self._expiring.submit(self._expire_all, expired)
                    except RuntimeError:  # closing: nothing runs any more to cancel
                        self._waking -= len(expired)
                    self._cv.notify_all()
                if not due:
                    target = self._next_jump() if clock.autojump and self._idle() else None
                    if target is not None:
                        # Called even when the target is now: a test clock delivers
                        # what is due at that instant (a message at a deadline) first.
                        clock.jump_to(target)
                        self._cv.notify_all()
                        if target > now:
                            continue
                        self._cv.wait(0.005)  # nothing to jump over: no busy loop
                        continue
                    wait = self.poll_interval
                    if clock.autojump:
                        wait = min(wait, 0.05)
                    else:
                        timer = self._next_timer()
                        if timer is not None:
                            wait = min(wait, (timer - now).total_seconds())
                        if self._deadlines:
                            wait = min(wait, (self._deadlines[0][0] - now).total_seconds())
                    self._cv.wait(max(wait, 0.001))
                    continue
                self._waking += len(due)
            self._hand_over(due)

    def add_idle_expiry(self, expiry: datetime) -> tuple[datetime, int]:
        """A composite waits for `expiry` while counted idle: the clock may jump to it."""
        token = (expiry, next(self._timer_seq))
        with self._cv:
            heapq.heappush(self._idle_expiries, token)
            self._cv.notify_all()
        return token

    def remove_idle_expiry(self, token: tuple[datetime, int]) -> None:
        with self._cv:
            self._idle_expiries.remove(token)
            heapq.heapify(self._idle_expiries)

    def jump_for(self, deadline: datetime) -> bool:
        """Move an autojumping clock to `deadline` for the one activation that runs, if
        the timer loop would do so next anyway; True if the deadline has now passed.

        The caller runs alone (it counts itself busy) and waits for nothing but
        that deadline: instead of suspending and being dispatched again by the
        timer loop, it may go on on its own thread.
        """
        if not self.clock.autojump:
            return False
        with self._cv:
            if self._closed or self._busy() != 1 or self._waking:
                return False
            target = self._next_jump()
            if target is not None and target < deadline:
                return False
            self.clock.jump_to(deadline)
            if target == deadline:
                # Something else waits for this very instant: the timer loop wakes it.
                # Otherwise nothing here became due, and a wake-up of the timer loop
                # would only take the GIL from the caller (a fifth of a virtual
                # sleep loop's time went to that hand-off).
                self._cv.notify_all()
            return self.clock.passed(deadline)

    def settled(self) -> bool:
        """Nothing runs and an autojumping clock has nowhere left to jump."""
        with self._cv:
            return self._idle() and not (self.clock.autojump and self._next_jump() is not None)

    def wait(self, timeout: float) -> None:
        """Sleep until something here changes, or `timeout` passes."""
        with self._cv:
            self._cv.wait(timeout)

    # -- the poller: the fallback for lost notifications -------------------------------------

    def _poll_loop(self) -> None:
        """Once per poll interval look again at runs that wait, and every few
        intervals for runs of ours nobody here tracks (resumed elsewhere)."""
        next_poll = time.monotonic() + self.poll_interval
        next_sweep = time.monotonic() + self._sweep_every * self.poll_interval
        # Whether the next sweep was asked for (notes may have been lost): it reads
        # every run of ours; one at its turn may first count them (Recovery.sweep).
        thorough = False
        while True:
            with self._cv:
                # The condition is notified for many reasons; only time drives this loop.
                while not self._closed and (left := next_poll - time.monotonic()) > 0:
                    self._cv.wait(left)
                if self._closed:
                    return
                waiting = [
                    (wid, entry)
                    for wid in self._probed
                    if isinstance(entry := self._suspended[wid], Suspend)
                ]
                asked, self._sweep_asked = self._sweep_asked, False
            self._advance_horizon()  # outside the lock: it may read the store
            now = time.monotonic()
            next_poll = now + self.poll_interval
            if asked:
                next_sweep = min(next_sweep, now)
                thorough = True
            if now >= next_sweep and self._busy() == 0:
                # A fallback for lost "resumed" notifications; a busy engine
                # sweeps once it is idle again.
                next_sweep = now + self._sweep_every * self.poll_interval
                self._sweep(thorough=thorough)
                thorough = False
            for workflow_id, suspend in waiting:
                if self._closed:
                    return
                if not _probe(suspend):
                    continue
                with self._cv:
                    if self._suspended.get(workflow_id) is not suspend:
                        continue  # woken meanwhile
                    self._forget(workflow_id)
                    self._waking += 1
                self._hand_over([workflow_id])


#: A wake's listeners, and the listeners of its kind (called with the id it is about).
_Listeners = tuple[list[Callable[[], None]], list[Callable[[str], None]]]


def _tell(listeners: _Listeners, wake: Wake) -> None:
    callbacks, by_kind = listeners
    for callback in callbacks:
        callback()
    for kind_callback in by_kind:
        kind_callback(wake[1])


def _probe(suspend: Suspend) -> bool:
    if suspend.ready is None:
        return False
    try:
        return suspend.ready()
    except StoreUnavailable:
        return False
    except Exception:
        # What it waits on cannot be read (a damaged message, say): wake the run,
        # whose activation meets the error and parks it, naming it. The poll
        # loop itself goes on for every other run.
        log.exception("a suspended run's wait could not be checked; waking it")
        return True


def _ids(waiting: str | set[str] | None) -> list[str]:
    if waiting is None:
        return []
    return [waiting] if isinstance(waiting, str) else list(waiting)
