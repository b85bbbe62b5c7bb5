"""The scheduler: activations of runs, at most one at a time per run, and warm runs.

An *activation* advances one run until it finishes or suspends: the
interpreter decides, the effect runner carries out, and the driver loop in
`_advance` joins them. A run that suspends is kept *warm*: its generator and
interpreter stay in a bounded cache, so when it wakes the scheduler resumes it
with the new outcome, with no log read and no replay. A run that is not warm
(evicted, never seen by this engine, or whose log may hold what the cache does
not) is rebuilt by replay from the store.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import attrs

from replaykit import serde
from replaykit.errors import (
    Cancelled,
    ControlSignal,
    InvalidCommandError,
    NonDeterminismError,
    PayloadTooLarge,
    RecordConflict,
    SerializationError,
    StoreUnavailable,
    UnknownWorkflowError,
)
from replaykit.interpreter import Completed, Decision, Effect, Interpreter
from replaykit.log import Failure, Outcome, Status, Value
from replaykit.registry import lookup
from replaykit.runtime.clock import Clock
from replaykit.runtime.effects import EffectRunner
from replaykit.runtime.host import CancelScope, LogMovedOn, Suspend
from replaykit.runtime.retries import call_with_retries
from replaykit.runtime.wakeups import Wakeups
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["DEFAULT_MAX_CACHED_RUNS", "FINISHED_CACHE", "Scheduler", "WarmRun"]

log = logging.getLogger("replaykit.engine")

# Runs this engine finished, kept so handle.result() needs no read.
FINISHED_CACHE = 4096
# Suspended runs kept warm. A warm run costs its generator's frame and the
# interpreter around it, a few KiB for a typical workflow (docs/performance.md
# has the measurement); 10,000 of them stay in the tens of MiB.
DEFAULT_MAX_CACHED_RUNS = 10_000


@attrs.define(slots=True, eq=False)
class WarmRun:
    """A suspended run held in memory: resumed with the outcome of `effect`."""

    row: WorkflowRow
    interpreter: Interpreter
    effect: Effect  # the effect it waits on, with the pending record its position holds


class Scheduler:
    """Runs activations on a pool of threads and keeps suspended runs warm.

    It owns its state under its own lock: which runs are active, which must
    run again, which were cancelled here, their cancel scopes, the warm cache
    and the finished cache. It hands suspensions to `wakeups` and hears back
    through `dispatch`.
    """

    def __init__(
        self,
        *,
        store: Store,
        runner: EffectRunner,
        wakeups: Wakeups,
        clock: Clock,
        executor_id: str,
        app_version: str,
        strict: bool,
        max_workers: int,
        max_cached_runs: int,
        max_payload_bytes: int,
        poll_interval: float,
        park: Callable[[str, str], None],
        queue_run_done: Callable[[str, str], None],
    ) -> None:
        if max_cached_runs < 0:
            raise ValueError(f"max_cached_runs must be 0 or more, got {max_cached_runs}")
        self.store = store
        self.runner = runner
        self.wakeups = wakeups
        self.clock = clock
        self.executor_id = executor_id
        self.app_version = app_version
        self.strict = strict
        self.max_cached_runs = max_cached_runs
        self.max_payload_bytes = max_payload_bytes
        self.poll_interval = poll_interval
        self._park = park
        self._queue_run_done = queue_run_done
        self._workers = ThreadPoolExecutor(max_workers, thread_name_prefix="replaykit-run")
        self._lock = threading.Lock()
        self._closed = False
        self._busy = 0  # activations queued or running (read without the lock)
        self._active: set[str] = set()
        self._rerun: set[str] = set()
        self._cancelled: set[str] = set()
        self._scopes: dict[str, CancelScope] = {}
        self._seen: dict[str, int] = {}  # the notification count each activation began at
        self._warm: collections.OrderedDict[str, WarmRun] = collections.OrderedDict()
        self._finished: collections.OrderedDict[str, WorkflowRow] = collections.OrderedDict()
        #: A testing hook: asked `(workflow_id, position)` as a run suspends; False
        #: evicts it at once (the testing kit draws evictions at random points).
        self.keep_warm_if: Callable[[str, int], bool] | None = None

    # -- what others ask -----------------------------------------------------------------

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def closed(self) -> bool:
        return self._closed

    def warm_count(self) -> int:
        with self._lock:
            return len(self._warm)

    def is_warm(self, workflow_id: str) -> bool:
        with self._lock:
            return workflow_id in self._warm

    def is_tracked(self, workflow_id: str) -> bool:
        with self._lock:
            if workflow_id in self._active:
                return True
        return self.wakeups.is_suspended(workflow_id)

    def finished_row(self, workflow_id: str) -> WorkflowRow | None:
        with self._lock:
            return self._finished.get(workflow_id)

    def forget_finished(self) -> None:
        with self._lock:
            self._finished.clear()

    def scope_of(self, workflow_id: str) -> CancelScope | None:
        with self._lock:
            return self._scopes.get(workflow_id)

    @contextlib.contextmanager
    def counted_idle(self) -> Iterator[None]:
        """The calling activation only waits on the clock: let an autojumping clock move."""
        with self._lock:
            self._busy -= 1
        self.wakeups.poke()
        try:
            yield
        finally:
            with self._lock:
                self._busy += 1

    def check_cancelled(self, workflow_id: str) -> None:
        if workflow_id in self._cancelled or self._closed:
            raise Cancelled(f"workflow id {workflow_id!r} was cancelled or its engine closed")

    # -- what others tell ------------------------------------------------------------------

    def cancel_locally(self, workflow_id: str) -> None:
        """The in-process half of a cancel: forget its waits, cancel what it runs."""
        with self._lock:
            self._cancelled.add(workflow_id)
            scope = self._scopes.get(workflow_id)
        self.wakeups.forget(workflow_id)
        self.drop_warm(workflow_id)
        if scope is not None:
            scope.cancel()

    def allow(self, workflow_id: str) -> None:
        """A run cancelled here was resumed: it may run again."""
        with self._lock:
            self._cancelled.discard(workflow_id)

    def drop_warm(self, workflow_id: str) -> None:
        """The store may hold what the cached run does not: rebuild it by replay next time."""
        with self._lock:
            warm = self._warm.pop(workflow_id, None)
        if warm is not None:
            _close_quietly(warm.interpreter)

    def message_arrived(self, workflow_id: str) -> None:
        """A message for a run that is running now: let it look again when it stops."""
        with self._lock:
            if workflow_id in self._active:
                self._rerun.add(workflow_id)

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self, *, wait: bool) -> None:
        with self._lock:
            self._closed = True
            scopes = list(self._scopes.values())
            warm = list(self._warm.values())
            self._warm.clear()
        for scope in scopes:
            scope.cancel()
        self._workers.shutdown(wait=wait, cancel_futures=True)
        for run in warm:
            _close_quietly(run.interpreter)

    # -- activations -----------------------------------------------------------------------

    def dispatch(
        self,
        workflow_id: str,
        *,
        row: WorkflowRow | None = None,
        fresh: bool = False,
        inline: bool = False,
    ) -> None:
        """Run an activation of `workflow_id` soon (at most one at a time per run).

        `row` is the run as this engine just stored or claimed it, which spares
        the first activation a read; `fresh` says its log is empty (just created).
        """
        seen = self.wakeups.seq()
        with self._lock:
            if self._closed:
                return
            if workflow_id in self._active:
                self._rerun.add(workflow_id)
                return
            self._active.add(workflow_id)
            self._busy += 1
            self._seen[workflow_id] = seen
        if inline:
            self._activation_loop(workflow_id, row, fresh)
            return
        try:
            self._workers.submit(self._activation_loop, workflow_id, row, fresh)
        except RuntimeError:  # shut down between the check and the submit
            with self._lock:
                self._active.discard(workflow_id)
                self._busy -= 1

    def _activation_loop(
        self, workflow_id: str, row: WorkflowRow | None = None, fresh: bool = False
    ) -> None:
        try:
            while True:
                with self._lock:
                    self._scopes[workflow_id] = CancelScope()
                try:
                    self._activate(workflow_id, row, fresh)
                    row, fresh = None, False  # a rerun reads the run afresh
                except Exception:
                    log.exception("workflow id %r: activation failed unexpectedly", workflow_id)
                finally:
                    with self._lock:
                        self._scopes.pop(workflow_id, None)
                seen = self.wakeups.seq()
                with self._lock:
                    if workflow_id in self._rerun and not self._closed:
                        self._rerun.discard(workflow_id)
                        self._seen[workflow_id] = seen
                        continue
                    self._active.discard(workflow_id)
                    self._seen.pop(workflow_id, None)
                    break
        finally:
            with self._lock:
                self._busy -= 1
                nothing_runs = not self._active
            if nothing_runs:
                self.wakeups.forget_notifications(seen)
            else:
                self.wakeups.poke()

    def _take_warm(self, workflow_id: str) -> WarmRun | None:
        with self._lock:
            return self._warm.pop(workflow_id, None)

    def _stays_warm(self, workflow_id: str, effect: Effect) -> bool:
        if self.max_cached_runs == 0 or self._closed:
            return False
        keep_if = self.keep_warm_if
        return keep_if is None or keep_if(workflow_id, effect.position)

    def _due_at_once(self, suspend: Suspend) -> bool:
        if suspend.waits or suspend.wake_at is None or not self.clock.autojump:
            return False
        return self.wakeups.jump_for(suspend.wake_at)

    def _keep_warm(self, workflow_id: str, run: WarmRun) -> None:
        evicted: list[WarmRun] = []
        with self._lock:
            if self._closed:
                evicted.append(run)
            else:
                self._warm[workflow_id] = run
                while len(self._warm) > self.max_cached_runs:
                    evicted.append(self._warm.popitem(last=False)[1])
        for old in evicted:
            _close_quietly(old.interpreter)

    def _activate(
        self, workflow_id: str, known: WorkflowRow | None = None, fresh: bool = False
    ) -> None:
        if self._closed:
            return
        warm = self._take_warm(workflow_id)
        if warm is not None:
            # No read and no replay: the cached run resumes where it waits. Its
            # record is gated on status and owner like any other, and a log
            # that moved on without it is caught at the commit (LogMovedOn).
            self._advance(warm.row, warm.interpreter, warm.effect)
            return
        row = known or self._store_call(lambda: self.store.get_workflow(workflow_id))
        if row is None or row.status is not Status.PENDING or self._closed:
            return
        if row.executor_id != self.executor_id or row.app_version != self.app_version:
            return  # another engine (or another version's engine) owns it
        try:
            wf = lookup(row.name)
        except UnknownWorkflowError as exc:
            log.error("workflow id %r: %s", workflow_id, exc)
            return
        try:
            args, kwargs = wf.decode_inputs(row.inputs)
            gen = wf.fn(*args, **kwargs)
        except Exception as exc:
            self._finish(row, Status.ERROR, Failure(serde.encode_error(exc)))
            return
        records = [] if fresh else self._store_call(lambda: self.store.load_log(workflow_id))
        try:
            interp = Interpreter(
                gen,
                records,
                workflow_name=row.name,
                workflow_id=workflow_id,
                strict=self.strict,
                keep_records=False,
            )
        except InvalidCommandError as exc:
            self._finish(row, Status.ERROR, Failure(serde.encode_error(exc)))
            return
        self._advance(row, interp, None)

    def _advance(self, row: WorkflowRow, interp: Interpreter, waiting: Effect | None) -> None:
        """The driver loop: carry out effects until the run finishes or suspends."""
        workflow_id = row.workflow_id
        progressed = False
        try:
            decision: Decision = interp.start() if waiting is None else waiting
            while isinstance(decision, Effect):
                outcome = self.runner.carry_out(row, decision)
                if isinstance(outcome, Suspend):
                    keep = self._stays_warm(workflow_id, decision)
                    if keep and self._due_at_once(outcome):
                        # A warm run alone on an autojumping clock: the timer loop
                        # would jump to its deadline and wake it; it goes on here.
                        decision = attrs.evolve(decision, pending=outcome.pending)
                        continue
                    self._suspend(row, interp, decision, outcome, progressed, keep=keep)
                    return
                progressed = True
                decision = interp.resume(outcome)
            self._reset_recovery(row, progressed)
            if isinstance(decision, Completed):
                try:
                    data = serde.encode(
                        decision.value,
                        what=f"the result of workflow {row.name!r} (id {workflow_id!r})",
                        max_bytes=self.max_payload_bytes,
                    )
                except (SerializationError, PayloadTooLarge) as exc:
                    self._finish(row, Status.ERROR, Failure(serde.encode_error(exc)))
                else:
                    self._finish(row, Status.SUCCESS, Value(data))
            else:
                self._finish(row, Status.ERROR, Failure(serde.encode_error(decision.error)))
        except NonDeterminismError as exc:
            _close_quietly(interp)
            self._park(workflow_id, str(exc))
        except LogMovedOn as exc:
            # Another writer got to this run's log first: rebuild it from the store.
            log.info("workflow id %r: %s; replaying it from the store", workflow_id, exc)
            _close_quietly(interp)
            with self._lock:
                if workflow_id in self._active:
                    self._rerun.add(workflow_id)
        except (RecordConflict, ControlSignal) as exc:
            # Cancelled, or another writer owns the run now: stop without recording.
            log.info("workflow id %r stopped: %s", workflow_id, exc)
            _close_quietly(interp)
        except StoreUnavailable as exc:
            _close_quietly(interp)
            log.warning("workflow id %r: store unavailable (%s); retrying soon", workflow_id, exc)
            self.wakeups.add_timer(
                self.clock.now() + timedelta(seconds=self.poll_interval), workflow_id
            )
        except BaseException:
            _close_quietly(interp)
            raise

    def _suspend(
        self,
        row: WorkflowRow,
        interp: Interpreter,
        effect: Effect,
        suspend: Suspend,
        progressed: bool,
        *,
        keep: bool,
    ) -> None:
        row = self._reset_recovery(row, progressed)
        workflow_id = row.workflow_id
        pending = suspend.pending if suspend.pending is not None else effect.pending
        if keep:
            run = WarmRun(row, interp, attrs.evolve(effect, pending=pending))
            self._keep_warm(workflow_id, run)
        else:
            _close_quietly(interp)
        with self._lock:
            seen = self._seen.get(workflow_id, 0)
        if not self.wakeups.suspend(workflow_id, suspend, seen=seen):
            # What it waits for changed while it was being replayed: look again.
            with self._lock:
                self._rerun.add(workflow_id)

    def _reset_recovery(self, row: WorkflowRow, progressed: bool) -> WorkflowRow:
        if not (row.recovery_attempts and progressed):
            return row
        # Progress after a recovery: it is not crash-looping.
        self.store.set_status(
            row.workflow_id, Status.PENDING, only_from=(Status.PENDING,), reset_recovery=True
        )
        return attrs.evolve(row, recovery_attempts=0)

    def _finish(self, row: WorkflowRow, status: Status, result: Outcome) -> None:
        error = result.error.message[:500] if isinstance(result, Failure) else ""
        finished = self._store_call(
            lambda: self.store.finish_workflow(
                row.workflow_id, status, result, error=error, executor_id=self.executor_id
            )
        )
        if finished:
            # handle.result() on this engine then needs no read of its own.
            with self._lock:
                self._finished[row.workflow_id] = attrs.evolve(
                    row, status=status, result=result, error=error
                )
                while len(self._finished) > FINISHED_CACHE:
                    self._finished.popitem(last=False)
        if row.queue is not None:
            self._queue_run_done(row.queue, row.workflow_id)

    def _store_call(self, fn: Callable[[], Any]) -> Any:
        return call_with_retries(fn, stop=lambda: self._closed)


def _close_quietly(interp: Interpreter) -> None:
    """Drop a run's generator; one that misbehaves on close only costs a log line."""
    try:
        interp.close()
    except Exception:
        log.exception("workflow id %r: closing its generator failed", interp.workflow_id)
