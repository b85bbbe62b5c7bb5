"""The Engine: runs interpreters, carries out effects, keeps timers and wake-ups.

This is the only layer with threads and clocks. Each *activation* of a run
loads its log in one query, replays it through a fresh `Interpreter` and
carries out effects until the run finishes or suspends. A suspended run keeps
no thread and no generator: only a timer entry or a waiter entry, and it is
rebuilt by replay when it wakes.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import attrs

from replaykit import serde
from replaykit.commands import as_seconds
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    Cancelled,
    ControlSignal,
    DuplicateDedupId,
    InvalidCommandError,
    NonDeterminismError,
    PayloadTooLarge,
    RecordConflict,
    SerializationError,
    StoreUnavailable,
    UnknownWorkflowError,
    WorkflowNotFound,
    WorkflowTimeout,
)
from replaykit.interpreter import Completed, Effect, Interpreter
from replaykit.log import Failure, Log, Outcome, Record, Status, Value
from replaykit.registry import Workflow, app_version_of, lookup, registered
from replaykit.runtime import admin
from replaykit.runtime.clock import Clock, SystemClock
from replaykit.runtime.effects import (
    CancelScope,
    EffectRunner,
    Entropy,
    Suspend,
    Wake,
    system_entropy,
)
from replaykit.runtime.queues import Queue, queue_named, registered_queues
from replaykit.runtime.schedules import Schedule, registered_schedules, ticks_between
from replaykit.stores import open_store
from replaykit.stores.base import ClaimLimits, Store, WorkflowFilter, WorkflowRow

__all__ = ["DEFAULT_URL", "Engine", "WorkflowHandle", "open_store_for"]

R = TypeVar("R")

DEFAULT_URL = "sqlite:///replaykit.db"
# Poll rounds between sweeps for PENDING runs this engine owns but does not
# track: runs an operator resumed from another process, whose notification
# may not reach us (SQLite has none across processes).
SWEEP_EVERY = 10
# Runs this engine finished, kept so handle.result() needs no read.
FINISHED_CACHE = 4096
# Claim rounds that follow each other this closely would each take a run or
# two of a steady stream of enqueues; waiting out the rest lets one claim take
# what arrived meanwhile. A lone enqueue after a quiet spell is claimed at once.
CLAIM_SPACING = 0.002
# A queue this engine finds nothing to claim in is checked, at most this often,
# for runs enqueued longer ago than STRANDED_AFTER under another application
# version, which no engine of this version will ever take (docs/versioning.md).
STRANDED_CHECK_SECONDS = 60.0
STRANDED_AFTER = timedelta(seconds=30)
log = logging.getLogger("replaykit.engine")


def open_store_for(target: str | Store | None) -> Store:
    """A store from a URL, a store instance, or None (REPLAYKIT_URL, else SQLite)."""
    if target is None:
        target = os.environ.get("REPLAYKIT_URL") or DEFAULT_URL
    if isinstance(target, str):
        return open_store(target)
    if not isinstance(target, Store):
        raise TypeError(
            f"Engine() takes a URL ('sqlite:///app.db', 'postgresql://...', 'memory://') or a "
            f"store instance, got {target!r}"
        )
    return target


class WorkflowHandle(Generic[R]):
    """A started run: its id, its status, and a way to wait for its result."""

    def __init__(self, engine: Engine, workflow_id: str, result_type: Any = None) -> None:
        self._engine = engine
        self.workflow_id = workflow_id
        self._result_type = result_type

    def __repr__(self) -> str:
        return f"<WorkflowHandle {self.workflow_id!r}>"

    def row(self) -> WorkflowRow:
        row = self._engine.store_call(lambda: self._engine.store.get_workflow(self.workflow_id))
        if row is None:
            raise WorkflowNotFound(f"no workflow run with id {self.workflow_id!r}")
        return row

    def status(self) -> Status:
        return self.row().status

    def result(self, timeout: float | None = None) -> R:
        """Wait for the run to finish and return its result, or raise its failure.

        A run that failed re-raises its error (same class and message when that
        class is importable, else `StepFailed`); a cancelled run raises
        `AwaitedWorkflowCancelled`; `WorkflowTimeout` if `timeout` passes first.
        """
        row = self._engine.wait_finished(self.workflow_id, timeout)
        result_type = self._result_type
        if result_type is None:
            try:
                result_type = lookup(row.name).result_type
            except UnknownWorkflowError:
                result_type = None
        return self._engine.outcome_value(row, result_type)  # type: ignore[no-any-return]


class Engine:
    """Runs workflows against a store. A context manager; closes cleanly.

    `Engine()` uses SQLite at ./replaykit.db (or REPLAYKIT_URL);
    `Engine("memory://")`, `Engine("sqlite:///path.db")`,
    `Engine("postgresql://...")` or `Engine(store)` pick another store.
    """

    def __init__(
        self,
        target: str | Store | None = None,
        *,
        executor_id: str = "local",
        app_version: str | None = None,
        max_workers: int = 64,
        step_workers: int = 64,
        strict: bool = False,
        clock: Clock | None = None,
        max_recovery_attempts: int = 50,
        poll_interval: float = 1.0,
        max_payload_bytes: int = serde.DEFAULT_MAX_PAYLOAD_BYTES,
        recover: bool = True,
        step_overrides: Mapping[str, Callable[..., Any]] | None = None,
        queues: Iterable[str | Queue] | None = None,
        lease_seconds: float = 30.0,
        schedules: bool = True,
        entropy: Entropy | None = None,
    ) -> None:
        self.store: Store = open_store_for(target)
        self.executor_id = executor_id
        self.app_version = app_version or app_version_of(registered().values())
        self.strict = strict
        self.clock: Clock = clock or SystemClock()
        self.max_recovery_attempts = max_recovery_attempts
        self.poll_interval = poll_interval
        self.max_payload_bytes = max_payload_bytes
        # Kept as given: the testing kit passes a mapping that counts the lookups.
        self.step_overrides: Mapping[str, Callable[..., Any]] = (
            {} if step_overrides is None else step_overrides
        )
        self.entropy: Entropy = entropy or system_entropy
        self.logger = log
        # None: every registered queue, looked up afresh on each claim round.
        self._queue_names: list[str] | None = (
            None if queues is None else [q.name if isinstance(q, Queue) else q for q in queues]
        )
        self.lease_seconds = lease_seconds
        self._queue_runs: dict[str, set[str]] = {}
        self._claim_wanted = threading.Event()
        self._stranded_checked: dict[str, float] = {}
        self._stranded_warned: set[tuple[str, frozenset[str]]] = set()

        self._max_workers = max_workers
        self._workers = ThreadPoolExecutor(max_workers, thread_name_prefix="replaykit-run")
        self.step_pool = ThreadPoolExecutor(step_workers, thread_name_prefix="replaykit-step")
        self._runner = EffectRunner(self)

        self._cv = threading.Condition()
        self._closed = False
        self._busy = 0  # activations queued or running
        self._active: set[str] = set()
        self._rerun: set[str] = set()
        self._cancelled: set[str] = set()
        self._scopes: dict[str, CancelScope] = {}
        self._finished: collections.OrderedDict[str, WorkflowRow] = collections.OrderedDict()
        self._activation_seq: dict[str, int] = {}
        # (when, tie-breaker, workflow id, the suspension it belongs to or None).
        # An entry whose suspension was forgotten is stale and skipped.
        self._timers: list[tuple[datetime, int, str, Suspend | None]] = []
        # Deadlines that composites wait for while counted idle (virtual clocks).
        self._idle_deadlines: list[tuple[datetime, int]] = []
        self._timer_seq = itertools.count()
        self._suspended: dict[str, Suspend] = {}
        self._waiters: dict[Wake, set[str]] = {}
        self._listeners: dict[Wake, list[Callable[[], None]]] = {}
        self._seq = 0
        self._last_notified: dict[Wake, int] = {}

        self._unsubscribe = self.store.subscribe(self._on_notify)
        self._timer_thread = threading.Thread(
            target=self._timer_loop, name="replaykit-timers", daemon=True
        )
        self._timer_thread.start()
        self._poll_thread = threading.Thread(
            target=self._poll_loop, name="replaykit-poll", daemon=True
        )
        self._poll_thread.start()
        self.store.heartbeat(self.executor_id, self.app_version, self.clock.now())
        self._queue_thread = threading.Thread(
            target=self._queue_loop, name="replaykit-queues", daemon=True
        )
        self._queue_thread.start()
        self._schedules: dict[str, Schedule] = (
            {entry.name: entry for entry in registered_schedules()} if schedules else {}
        )
        self._schedule_wanted = threading.Event()
        self._schedule_thread = threading.Thread(
            target=self._schedule_loop, name="replaykit-schedules", daemon=True
        )
        self._schedule_thread.start()
        if recover:
            self.recover()

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self, *, wait: bool = True) -> None:
        """Stop taking work, let running activations end, release the store.

        Runs that are mid-way stay PENDING in the store and are recovered by the
        next engine with the same executor id and version.
        """
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._cv.notify_all()
            scopes = list(self._scopes.values())
        for scope in scopes:
            scope.cancel()
        self._unsubscribe()
        self._workers.shutdown(wait=wait, cancel_futures=True)
        self.step_pool.shutdown(wait=False, cancel_futures=True)
        self._runner.close()
        self._claim_wanted.set()
        self._schedule_wanted.set()
        self._schedule_thread.join(timeout=5)
        self._timer_thread.join(timeout=5)
        self._poll_thread.join(timeout=5)
        self._queue_thread.join(timeout=5)
        if wait:
            # Queue runs this engine held go back to their queue for others to
            # claim at once; other runs wait for recovery or a lease takeover.
            try:
                self.store.release(self.executor_id)
            except Exception as exc:  # a store outage must not turn close() into a crash
                log.warning("could not release queue runs on close: %s", exc)
        self.store.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- starting and finding runs ------------------------------------------------------

    def create_run(
        self,
        wf: Workflow[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        workflow_id: str | None = None,
        parent_id: str | None = None,
        queue: str | None = None,
        priority: int = 0,
        dedup_id: str | None = None,
        delay: timedelta | float | None = None,
        inline: bool = False,
    ) -> tuple[WorkflowRow, bool]:
        """Store a new run (or find the existing one with that id) and schedule it.

        With a `queue` the run is ENQUEUED and waits for a claim instead.
        """
        if not isinstance(wf, Workflow):
            raise TypeError(
                f"expected a function decorated with @workflow, got {wf!r}; decorate it with "
                "@replaykit.workflow so the engine can find it again after a restart"
            )
        inputs = wf.encode_inputs(args, kwargs)
        size = len(serde.dumps(inputs).encode())
        if size > self.max_payload_bytes:
            raise PayloadTooLarge(
                f"the arguments of workflow {wf.workflow_name!r} are {size} bytes encoded, over "
                f"the limit of {self.max_payload_bytes}; pass a reference instead, or raise "
                "Engine(max_payload_bytes=...)"
            )
        now = self.clock.now()
        delay_seconds = as_seconds(delay, "enqueue delay")
        row = WorkflowRow(
            workflow_id=workflow_id or str(uuid.uuid4()),
            name=wf.workflow_name,
            status=Status.ENQUEUED if queue is not None else Status.PENDING,
            inputs=inputs,
            executor_id="" if queue is not None else self.executor_id,
            app_version=self.app_version,
            created_at=now,
            parent_id=parent_id,
            queue=queue,
            priority=priority,
            dedup_id=dedup_id,
            wake_at=now + timedelta(seconds=delay_seconds) if delay_seconds else None,
        )
        stored, created = self.store_call(lambda: self.store.create_workflow(row))
        if created and queue is None:
            self.dispatch(stored.workflow_id, row=stored, fresh=True, inline=inline)
        return stored, created

    def start(
        self,
        wf: Workflow[..., R],
        /,
        *args: Any,
        workflow_id: str | None = None,
        **kwargs: Any,
    ) -> WorkflowHandle[R]:
        """Start a run; idempotent by `workflow_id` (an existing id returns that run)."""
        self._check_open()
        row, _created = self.create_run(wf, args, kwargs, workflow_id=workflow_id)
        return WorkflowHandle(self, row.workflow_id, wf.result_type)

    def enqueue(
        self,
        queue: str | Queue,
        wf: Workflow[..., R],
        /,
        *args: Any,
        workflow_id: str | None = None,
        priority: int = 0,
        dedup_id: str | None = None,
        delay: timedelta | float | None = None,
        if_exists: str = "raise",
        **kwargs: Any,
    ) -> WorkflowHandle[R]:
        """Put a run on a queue (status ENQUEUED until an engine claims it).

        Lower `priority` numbers run first. A `dedup_id` that a live run of the
        queue already holds raises `DuplicateDedupId`, or with
        `if_exists="return"` gives that run's handle. `delay` holds the run back.
        """
        self._check_open()
        name = queue.name if isinstance(queue, Queue) else queue
        if if_exists not in ("raise", "return"):
            raise ValueError(f"if_exists must be 'raise' or 'return', got {if_exists!r}")
        try:
            row, _created = self.create_run(
                wf,
                args,
                kwargs,
                workflow_id=workflow_id,
                queue=name,
                priority=priority,
                dedup_id=dedup_id,
                delay=delay,
            )
        except DuplicateDedupId as exc:
            if if_exists == "return":
                return WorkflowHandle(self, exc.existing_id, wf.result_type)
            raise
        return WorkflowHandle(self, row.workflow_id, wf.result_type)

    def run(
        self,
        wf: Workflow[..., R],
        /,
        *args: Any,
        workflow_id: str | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> R:
        """`start(...)` then `.result(timeout)`.

        The first activation runs on the calling thread, which would only wait
        otherwise; a run that suspends continues on the engine's threads.
        """
        self._check_open()
        row, _created = self.create_run(wf, args, kwargs, workflow_id=workflow_id, inline=True)
        return WorkflowHandle[R](self, row.workflow_id, wf.result_type).result(timeout)

    def handle(self, workflow_id: str) -> WorkflowHandle[Any]:
        if self.store.get_workflow(workflow_id) is None:
            raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
        return WorkflowHandle(self, workflow_id)

    def list_workflows(
        self,
        *,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        executor_id: str | None = None,
        parent_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[WorkflowRow]:
        statuses: Any = status
        if isinstance(status, str):
            statuses = Status(status)
        elif status is not None and not isinstance(status, Status):
            statuses = tuple(Status(s) for s in status)
        where = WorkflowFilter(
            status=statuses,
            name=name,
            executor_id=executor_id,
            app_version=version,
            parent_id=parent_id,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
        )
        # Reads retry through a dropped connection, as the engine's own do.
        return self.store_call(lambda: self.store.list_workflows(where))

    def steps(self, workflow_id: str) -> list[Record]:
        """The run's log, position by position."""
        if self.store_call(lambda: self.store.get_workflow(workflow_id)) is None:
            raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
        return self.store_call(lambda: self.store.load_log(workflow_id))

    def export_log(self, workflow_id: str) -> Log:
        """The run's log as `replaykit.testing.replay` and `replaykit replay` read it."""
        return admin.export_run(self.store, workflow_id)

    # -- messages and events from outside -----------------------------------------------

    def send(
        self,
        workflow_id: str,
        message: Any,
        topic: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> bool:
        """Deliver a message to a run's inbox; False if `idempotency_key` was used already."""
        data = serde.encode(message, what=f"the message to {workflow_id!r}")
        return self.store_call(
            lambda: self.store.send_message(
                workflow_id, topic or "", data, idempotency_key=idempotency_key
            )
        )

    def get_event(self, workflow_id: str, key: str, timeout: float | None = None) -> Any:
        """The latest value of a run's event `key`, waiting up to `timeout` for it; else None."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            found, value = self.store.get_event(workflow_id, key)
            if found:
                return value
            if deadline is None or time.monotonic() >= deadline:
                return None
            event = threading.Event()
            unsubscribe = self.listen([("event", workflow_id)], event.set)
            try:
                found, value = self.store.get_event(workflow_id, key)
                if found:
                    return value
                event.wait(min(self.poll_interval, max(deadline - time.monotonic(), 0)))
            finally:
                unsubscribe()

    # -- operating runs --------------------------------------------------------------------

    def cancel(self, workflow_id: str, *, children: bool = True) -> bool:
        """Mark a run CANCELLED. A running step's attempt records nothing; waits stop."""
        admin.get_run(self.store, workflow_id)
        return admin.cancel_run(
            self.store, workflow_id, children=children, on_cancel=self._stop_locally
        )

    def _stop_locally(self, workflow_id: str) -> None:
        """The in-process half of a cancel: forget its waits, cancel what it runs."""
        with self._cv:
            self._cancelled.add(workflow_id)
            self._forget_suspension(workflow_id)
            scope = self._scopes.get(workflow_id)
        if scope is not None:
            scope.cancel()

    def resume(self, workflow_id: str) -> WorkflowHandle[Any]:
        """Continue a CANCELLED or PARKED run from its log, on this engine."""
        row = self.store.get_workflow(workflow_id)
        if row is None:
            raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
        if row.status in (Status.CANCELLED, Status.PARKED, Status.PENDING):
            # The run continues on this engine's code: stamp it with this
            # engine's version so its recovery and takeovers find it later.
            self.store.set_status(
                workflow_id,
                Status.PENDING,
                only_from=(Status.CANCELLED, Status.PARKED, Status.PENDING),
                executor_id=self.executor_id,
                reset_recovery=True,
                app_version=self.app_version,
            )
            with self._cv:
                self._cancelled.discard(workflow_id)
            self.dispatch(workflow_id)
        elif row.status is not Status.SUCCESS and row.status is not Status.ERROR:
            raise ValueError(f"workflow id {workflow_id!r} is {row.status.value}; cannot resume")
        return WorkflowHandle(self, workflow_id)

    def fork(
        self,
        source_id: str,
        from_position: int,
        /,
        *,
        workflow_id: str | None = None,
        app_version: str | None = None,
    ) -> WorkflowHandle[Any]:
        """Copy the run's records below `from_position` into a new run and run it from there.

        The way to re-run a fixed version of a failed workflow without repeating
        its completed steps. Positions from `from_position` on run again live.
        """
        stored, _kept = admin.fork_run(
            self.store,
            source_id,
            from_position,
            workflow_id=workflow_id,
            executor_id=self.executor_id,
            app_version=app_version or self.app_version,
            now=self.clock.now(),
        )
        self.dispatch(stored.workflow_id)
        return WorkflowHandle(self, stored.workflow_id)

    def delete(self, workflow_id: str, *, children: bool = False) -> bool:
        """Remove a run with its log, inbox and events (cancelling it first if it runs)."""
        with self._cv:
            self._finished.clear()
        return admin.delete_run(
            self.store, workflow_id, children=children, on_cancel=self._stop_locally
        )

    def garbage_collect(
        self, *, older_than: timedelta | datetime, keep_running: bool = True
    ) -> int:
        """Delete runs created before a cutoff; by default only finished ones. Returns the count."""
        cutoff = older_than if isinstance(older_than, datetime) else self.clock.now() - older_than
        with self._cv:
            self._finished.clear()
        return admin.collect_garbage(
            self.store, cutoff, keep_running=keep_running, on_cancel=self._stop_locally
        )

    def recover(self) -> list[str]:
        """Re-dispatch this executor's unfinished runs of this version; park crash-loopers."""
        rows = self.store.list_workflows(
            WorkflowFilter(
                status=Status.PENDING, executor_id=self.executor_id, app_version=self.app_version
            )
        )
        recovered: list[str] = []
        for row in rows:
            attempts = self.store.bump_recovery(row.workflow_id)
            if attempts > self.max_recovery_attempts:
                self.park(
                    row.workflow_id,
                    f"recovered {attempts - 1} times without finishing "
                    f"(max_recovery_attempts={self.max_recovery_attempts}); fix the cause and "
                    "resume it",
                )
                continue
            recovered.append(row.workflow_id)
            self.dispatch(row.workflow_id)
        return recovered

    def park(self, workflow_id: str, why: str) -> None:
        self.store.set_status(workflow_id, Status.PARKED, only_from=(Status.PENDING,), error=why)
        log.error("workflow id %r parked: %s", workflow_id, why)
        with self._cv:
            self._cv.notify_all()

    # -- waiting for results ---------------------------------------------------------------

    def wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow:
        deadline = None if timeout is None else time.monotonic() + timeout
        finished = threading.Event()
        unsubscribe = self.listen([("finished", workflow_id)], finished.set)
        try:
            while True:
                with self._cv:
                    row = self._finished.get(workflow_id)
                if row is None:
                    row = self.store_call(lambda: self.store.get_workflow(workflow_id))
                if row is None:
                    raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
                if row.status.is_terminal:
                    return row
                wait = self.poll_interval
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise WorkflowTimeout(
                            f"workflow {row.name!r} (id {workflow_id!r}) is still "
                            f"{row.status.value} after {timeout}s"
                            + (f": {row.error}" if row.error else "")
                        )
                    wait = min(wait, left)
                finished.wait(wait)
                finished.clear()
        finally:
            unsubscribe()

    def outcome_value(self, row: WorkflowRow, result_type: Any = None) -> Any:
        if row.status is Status.CANCELLED:
            raise AwaitedWorkflowCancelled(
                f"workflow {row.name!r} (id {row.workflow_id!r}) was cancelled"
            )
        outcome = row.result
        if isinstance(outcome, Failure):
            raise serde.decode_error(outcome.error)
        data = outcome.data if isinstance(outcome, Value) else None
        return serde.decode(data, result_type, what=f"the result of workflow {row.name!r}")

    # -- scheduling activations ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Engine is closed; create a new one")

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
        with self._cv:
            if self._closed:
                return
            if workflow_id in self._active:
                self._rerun.add(workflow_id)
                return
            self._active.add(workflow_id)
            self._busy += 1
            self._activation_seq[workflow_id] = self._seq
        if inline:
            self._activation_loop(workflow_id, row, fresh)
            return
        try:
            self._workers.submit(self._activation_loop, workflow_id, row, fresh)
        except RuntimeError:  # shut down between the check and the submit
            with self._cv:
                self._active.discard(workflow_id)
                self._busy -= 1

    def _activation_loop(
        self, workflow_id: str, row: WorkflowRow | None = None, fresh: bool = False
    ) -> None:
        try:
            while True:
                with self._cv:
                    self._scopes[workflow_id] = CancelScope()
                try:
                    self._activate(workflow_id, row, fresh)
                    row, fresh = None, False  # a rerun reads the run afresh
                except Exception:
                    log.exception("workflow id %r: activation failed unexpectedly", workflow_id)
                finally:
                    with self._cv:
                        self._scopes.pop(workflow_id, None)
                with self._cv:
                    if workflow_id in self._rerun and not self._closed:
                        self._rerun.discard(workflow_id)
                        self._activation_seq[workflow_id] = self._seq
                        continue
                    self._active.discard(workflow_id)
                    self._activation_seq.pop(workflow_id, None)
                    break
        finally:
            with self._cv:
                self._busy -= 1
                if not self._active:
                    self._last_notified.clear()
                self._cv.notify_all()

    def _activate(
        self, workflow_id: str, known: WorkflowRow | None = None, fresh: bool = False
    ) -> None:
        row = known or self.store_call(lambda: self.store.get_workflow(workflow_id))
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
        records = [] if fresh else self.store_call(lambda: self.store.load_log(workflow_id))
        try:
            interp = Interpreter(
                gen, records, workflow_name=row.name, workflow_id=workflow_id, strict=self.strict
            )
        except InvalidCommandError as exc:
            self._finish(row, Status.ERROR, Failure(serde.encode_error(exc)))
            return
        recorded_before = len(records)
        try:
            decision = interp.start()
            while isinstance(decision, Effect):
                outcome = self._runner.carry_out(row, decision)
                if isinstance(outcome, Suspend):
                    interp.close()
                    self._suspend(workflow_id, outcome)
                    return
                decision = interp.resume(outcome)
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
            interp.close()
            self.park(workflow_id, str(exc))
        except (RecordConflict, ControlSignal) as exc:
            # Cancelled, or another writer owns the run now: stop without recording.
            log.info("workflow id %r stopped: %s", workflow_id, exc)
            interp.close()
        except StoreUnavailable as exc:
            interp.close()
            log.warning("workflow id %r: store unavailable (%s); retrying soon", workflow_id, exc)
            self._add_timer(self.clock.now() + timedelta(seconds=self.poll_interval), workflow_id)
        finally:
            if row.recovery_attempts and len(interp.records) > recorded_before:
                # Progress after a recovery: it is not crash-looping.
                self.store.set_status(
                    workflow_id, Status.PENDING, only_from=(Status.PENDING,), reset_recovery=True
                )

    def _finish(self, row: WorkflowRow, status: Status, result: Outcome) -> None:
        error = result.error.message[:500] if isinstance(result, Failure) else ""
        finished = self.store_call(
            lambda: self.store.finish_workflow(
                row.workflow_id, status, result, error=error, executor_id=self.executor_id
            )
        )
        if finished:
            # handle.result() on this engine then needs no read of its own.
            with self._cv:
                self._finished[row.workflow_id] = attrs.evolve(
                    row, status=status, result=result, error=error
                )
                while len(self._finished) > FINISHED_CACHE:
                    self._finished.popitem(last=False)
        if row.queue is not None:
            self._queue_run_done(row.queue, row.workflow_id)

    def scope_of(self, workflow_id: str) -> CancelScope | None:
        with self._cv:
            return self._scopes.get(workflow_id)

    # -- queues ------------------------------------------------------------------------------

    def _listened_queues(self) -> list[Queue]:
        if self._queue_names is None:
            return registered_queues()
        return [queue_named(name) for name in self._queue_names]

    def _queue_run_done(self, queue: str, workflow_id: str) -> None:
        with self._cv:
            runs = self._queue_runs.get(queue)
            if runs is not None:
                runs.discard(workflow_id)
        self._claim_wanted.set()

    def claim_now(self) -> int:
        """One claim round over the listened queues; returns how many runs it took."""
        return self._claim_round()[0]

    def _claim_round(self) -> tuple[int, bool]:
        """(runs taken, whether some queue filled all the room it had: more may wait)."""
        taken = 0
        saturated = False
        now = self.clock.now()
        for queue in self._listened_queues():
            with self._cv:
                held = self._queue_runs.setdefault(queue.name, set())
                capacity = self._max_workers * 2
                if queue.worker_concurrency is not None:
                    capacity = min(capacity, queue.worker_concurrency - len(held))
            if capacity <= 0:
                continue
            rows = self.store.claim(
                queue.name,
                executor_id=self.executor_id,
                app_version=self.app_version,
                limits=ClaimLimits(capacity, queue.concurrency, queue.rate_limit),
                now=now,
            )
            if not rows:
                try:
                    self._warn_if_stranded(queue.name)
                except Exception:  # a diagnostic: it must not stop the claims
                    log.debug(
                        "could not check queue %r for stranded runs", queue.name, exc_info=True
                    )
            with self._cv:
                held.update(row.workflow_id for row in rows)
            for row in rows:
                # A claimed run may have a log (one released by a stopped worker);
                # one claimed for the first time starts without reading it.
                self.dispatch(row.workflow_id, row=row, fresh=row.has_log is False)
            taken += len(rows)
            saturated = saturated or len(rows) >= capacity
        return taken, saturated

    def _warn_if_stranded(self, queue: str) -> None:
        """Say so when a queue holds old runs of application versions this engine never claims.

        Their usual cause is a producer and a worker that compute different
        default versions because they import different workflows.
        """
        checked = time.monotonic()
        last = self._stranded_checked.get(queue)
        if last is not None and checked - last < STRANDED_CHECK_SECONDS:
            return
        self._stranded_checked[queue] = checked
        cutoff = self.clock.now() - STRANDED_AFTER  # engines stamp created_at by their clocks
        waiting = self.store.list_workflows(
            WorkflowFilter(status=Status.ENQUEUED, queue=queue, until=cutoff, limit=100)
        )
        stranded = [row for row in waiting if row.app_version != self.app_version]
        versions = frozenset(row.app_version for row in stranded)
        if not stranded or (queue, versions) in self._stranded_warned:
            return
        self._stranded_warned.add((queue, versions))
        log.warning(
            "queue %r holds %s%d run(s) enqueued over %ds ago under application version(s) %s; "
            "this engine (executor %r) runs version %r and never claims them. If the process "
            "that enqueued them runs this same code, give both the same app_version "
            "(Engine(app_version=...)); if they are an older release's, run a process of "
            "that version to drain them (docs/versioning.md)",
            queue,
            "at least " if len(waiting) == 100 else "",
            len(stranded),
            STRANDED_AFTER.total_seconds(),
            ", ".join(sorted(repr(v) for v in versions)),
            self.executor_id,
            self.app_version,
        )

    def _queue_loop(self) -> None:
        last_beat = 0.0
        last_claim = 0.0
        while not self._closed:
            try:
                monotonic = time.monotonic()
                if monotonic - last_beat >= self.lease_seconds / 3:
                    last_beat = monotonic
                    now = self.clock.now()
                    self.store.heartbeat(self.executor_id, self.app_version, now)
                    for workflow_id in self.store.take_over(
                        executor_id=self.executor_id,
                        app_version=self.app_version,
                        lease_seconds=self.lease_seconds,
                        now=now,
                    ):
                        log.warning("took over workflow id %r from a dead engine", workflow_id)
                        self._adopt(workflow_id)
                last_claim = time.monotonic()
                saturated = self._claim_round()[1]
            except StoreUnavailable as exc:
                log.warning("queue claim failed (%s); retrying", exc)
                saturated = False
            except Exception:
                log.exception("queue loop failed; retrying")
                saturated = False
            if saturated:
                continue  # the room was filled: more runs may be ready right now
            # Woken by an enqueue, a finished run (room again) or the poll interval.
            self._claim_wanted.wait(min(self.poll_interval, self.lease_seconds / 3))
            self._claim_wanted.clear()
            spacing = CLAIM_SPACING - (time.monotonic() - last_claim)
            if spacing > 0:
                time.sleep(spacing)

    def _adopt(self, workflow_id: str) -> None:
        row = self.store.get_workflow(workflow_id)
        if row is not None and row.queue is not None:
            with self._cv:
                self._queue_runs.setdefault(row.queue, set()).add(workflow_id)
        self.dispatch(workflow_id)

    # -- schedules ---------------------------------------------------------------------------

    def schedule(
        self,
        cron: str,
        wf: Workflow[..., Any],
        /,
        *,
        name: str | None = None,
        backfill: bool = False,
        queue: str | None = None,
    ) -> Schedule:
        """Start `wf(tick)` once per tick of `cron`, across all engines that know it."""
        entry = Schedule(cron, wf, name or wf.workflow_name, backfill, queue)
        with self._cv:
            self._schedules[entry.name] = entry
        self._schedule_wanted.set()
        return entry

    def _fire(self, entry: Schedule, tick: datetime) -> None:
        try:
            self.create_run(
                entry.workflow, (tick,), {}, workflow_id=entry.run_id(tick), queue=entry.queue
            )
        except Exception:
            log.exception("schedule %r could not start its run for %s", entry.name, tick)

    def _latest_tick(self, entry: Schedule) -> datetime | None:
        prefix = entry.run_id(self.clock.now())[: -len(self.clock.now().isoformat())]
        latest: datetime | None = None
        for row in self.store.list_workflows(WorkflowFilter(name=entry.workflow.workflow_name)):
            if row.workflow_id.startswith(prefix):
                try:
                    tick = datetime.fromisoformat(row.workflow_id[len(prefix) :])
                except ValueError:
                    continue
                latest = tick if latest is None or tick > latest else latest
        return latest

    def _schedule_loop(self) -> None:
        upcoming: dict[str, datetime] = {}
        while not self._closed:
            now = self.clock.now()
            with self._cv:
                entries = dict(self._schedules)
            for name, entry in entries.items():
                if name in upcoming:
                    continue
                start = now
                if entry.backfill:
                    latest = self._latest_tick(entry)
                    if latest is not None:
                        for tick in ticks_between(entry, latest, now):
                            self._fire(entry, tick)
                upcoming[name] = entry.next_tick(start)
            for name, tick in list(upcoming.items()):
                if tick <= now and name in entries:
                    self._fire(entries[name], tick)
                    upcoming[name] = entries[name].next_tick(tick)
            wait = self.poll_interval
            if upcoming:
                wait = min(wait, (min(upcoming.values()) - self.clock.now()).total_seconds())
            self._schedule_wanted.wait(max(wait, 0.005))
            self._schedule_wanted.clear()

    def check_cancelled(self, workflow_id: str) -> None:
        if workflow_id in self._cancelled or self._closed:
            raise Cancelled(f"workflow id {workflow_id!r} was cancelled or its engine closed")

    # -- suspension, timers, wake-ups --------------------------------------------------------

    def _suspend(self, workflow_id: str, suspend: Suspend) -> None:
        with self._cv:
            self._forget_suspension(workflow_id)
            started = self._activation_seq.get(workflow_id, self._seq)
            if any(self._last_notified.get(w, -1) > started for w in suspend.waits):
                # What it waits for changed while it was being replayed: look again.
                self._rerun.add(workflow_id)
                return
            self._suspended[workflow_id] = suspend
            for wake in suspend.waits:
                self._waiters.setdefault(wake, set()).add(workflow_id)
            if suspend.wake_at is not None:
                heapq.heappush(
                    self._timers, (suspend.wake_at, next(self._timer_seq), workflow_id, suspend)
                )
            self._cv.notify_all()

    def _forget_suspension(self, workflow_id: str) -> None:
        suspend = self._suspended.pop(workflow_id, None)
        if suspend is None:
            return
        for wake in suspend.waits:
            waiting = self._waiters.get(wake)
            if waiting is not None:
                waiting.discard(workflow_id)
                if not waiting:
                    del self._waiters[wake]

    def _add_timer(self, at: datetime, workflow_id: str) -> None:
        with self._cv:
            heapq.heappush(self._timers, (at, next(self._timer_seq), workflow_id, None))
            self._cv.notify_all()

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

    def _on_notify(self, kind: str, key: str) -> None:
        if kind == "enqueued":
            self._claim_wanted.set()
            return
        if kind == "resumed":
            # Resumed by an operator (maybe from the CLI, in another process):
            # an activation checks the owner and version and runs it if ours.
            self.dispatch(key)
            return
        wake = (kind, key)
        with self._cv:
            self._seq += 1
            if self._active:
                self._last_notified[wake] = self._seq
            to_wake = list(self._waiters.get(wake, ()))
            for workflow_id in to_wake:
                self._forget_suspension(workflow_id)
            callbacks = list(self._listeners.get(wake, ()))
            if kind == "message" and key in self._active:
                self._rerun.add(key)
        for callback in callbacks:
            callback()
        for workflow_id in to_wake:
            self.dispatch(workflow_id)

    def _drop_stale_timers(self) -> None:
        while self._timers:
            _, _, workflow_id, token = self._timers[0]
            if token is None or self._suspended.get(workflow_id) is token:
                return
            heapq.heappop(self._timers)

    def _next_jump(self) -> datetime | None:
        """Where an autojumping clock goes when nothing runs (caller holds the lock)."""
        self._drop_stale_timers()
        candidates = [self._timers[0][0]] if self._timers else []
        if self._idle_deadlines:
            candidates.append(self._idle_deadlines[0][0])
        return min(candidates) if candidates else None

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
                    self._drop_stale_timers()
                if not due:
                    target = self._next_jump() if clock.autojump and self._busy == 0 else None
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
                    if self._timers and not clock.autojump:
                        wait = min(wait, (self._timers[0][0] - now).total_seconds())
                    elif clock.autojump:
                        wait = min(wait, 0.05)
                    self._cv.wait(max(wait, 0.001))
                    continue
            for workflow_id in due:
                with self._cv:
                    suspend = self._suspended.get(workflow_id)
                    if suspend is not None:
                        self._forget_suspension(workflow_id)
                self.dispatch(workflow_id)

    def wait_for_change(
        self, changed: threading.Event, deadline: datetime | None, *, idle: bool
    ) -> None:
        """Wait (holding the calling thread) for `changed`, the deadline, or a poll interval.

        `idle=True` says nothing runs on behalf of this wait but the clock: an
        autojumping clock may then jump to the deadline, as it does for timers.
        """
        now = self.clock.now()
        if not (idle and self.clock.autojump):
            timeout = self.poll_interval
            if deadline is not None:
                timeout = min(timeout, (deadline - now).total_seconds())
            changed.wait(max(timeout, 0.0))
            return
        token = (deadline, next(self._timer_seq)) if deadline is not None else None
        with self._cv:
            self._busy -= 1
            if token is not None:
                heapq.heappush(self._idle_deadlines, token)
            self._cv.notify_all()
        try:
            stop = time.monotonic() + self.poll_interval
            while not changed.is_set() and time.monotonic() < stop:
                if deadline is not None and self.clock.passed(deadline):
                    return
                changed.wait(0.005)
        finally:
            with self._cv:
                self._busy += 1
                if token is not None:
                    self._idle_deadlines.remove(token)
                    heapq.heapify(self._idle_deadlines)

    def _poll_loop(self) -> None:
        """The fallback for lost notifications: once per poll interval look again at
        runs that wait, and every few intervals for runs of ours nobody here tracks
        (resumed elsewhere)."""
        next_poll = time.monotonic() + self.poll_interval
        next_sweep = time.monotonic() + SWEEP_EVERY * self.poll_interval
        while True:
            with self._cv:
                # The condition is notified for many reasons; only time drives this loop.
                while not self._closed and (left := next_poll - time.monotonic()) > 0:
                    self._cv.wait(left)
                if self._closed:
                    return
                waiting = [wid for wid, s in self._suspended.items() if s.ready is not None]
                idle = self._busy == 0
            now = time.monotonic()
            next_poll = now + self.poll_interval
            if now >= next_sweep and idle:
                # A fallback for lost "resumed" notifications; a busy engine
                # sweeps once it is idle again.
                next_sweep = now + SWEEP_EVERY * self.poll_interval
                self._sweep()
            for workflow_id in waiting:
                if self._closed:
                    return
                if self._wait_satisfied(workflow_id):
                    with self._cv:
                        self._forget_suspension(workflow_id)
                    self.dispatch(workflow_id)

    def _sweep(self) -> None:
        try:
            rows = self.store.list_workflows(
                WorkflowFilter(
                    status=Status.PENDING,
                    executor_id=self.executor_id,
                    app_version=self.app_version,
                )
            )
        except StoreUnavailable:
            return
        with self._cv:
            untracked = [
                row.workflow_id
                for row in rows
                if row.workflow_id not in self._active and row.workflow_id not in self._suspended
            ]
        for workflow_id in untracked:
            self.dispatch(workflow_id)

    def _wait_satisfied(self, workflow_id: str) -> bool:
        with self._cv:
            suspend = self._suspended.get(workflow_id)
        if suspend is None or suspend.ready is None:
            return False
        try:
            return suspend.ready()
        except StoreUnavailable:
            return False

    # -- store calls that survive outages -------------------------------------------------------

    def store_call(self, fn: Callable[[], R], *, attempts: int = 8) -> R:
        """Retry `fn` through `StoreUnavailable` with backoff (the pool reconnects)."""
        delay = 0.05
        for attempt in range(1, attempts + 1):
            try:
                return fn()
            except StoreUnavailable:
                if attempt == attempts or self._closed:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    def store_write(self, row: WorkflowRow, position: int, write: Callable[[], Record]) -> Record:
        """Commit a record, resolving a lost acknowledgement by reading back the log."""
        retried = False
        delay = 0.05
        while True:
            try:
                return write()
            except StoreUnavailable:
                if self._closed:
                    raise
                retried = True
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
            except RecordConflict:
                if not retried:
                    raise
                # The first attempt may have committed before the connection
                # dropped; if so, the position holds our record: adopt it.
                records = self.store_call(lambda: self.store.load_log(row.workflow_id))
                if position < len(records) and records[position].outcome is not None:
                    return records[position]
                raise

    # -- for the testing kit ------------------------------------------------------------------

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing runs and no timer is due soon (virtual clocks jump).

        Returns False if `timeout` passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while True:
                idle = self._busy == 0 and not (
                    self.clock.autojump and self._next_jump() is not None
                )
                if idle:
                    return True
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(0.05 if left is None else min(left, 0.05))
