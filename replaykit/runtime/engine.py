"""The Engine: the front door of the runtime.

It owns no loop of its own. It builds the runtime's rooms and joins them:
the scheduler (activations and warm runs), the wake-ups (timers, waiters,
notifications, the poll loop), the claims (queues, leases, takeovers) and the
schedules (the cron loop); the effect runner sees it through the `Host`
protocol. Its methods are what users call: start, enqueue, send, cancel,
resume, fork, list, wait for results. docs/design.md draws who calls whom.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from replaykit import serde
from replaykit._limits import checked_count, checked_interval, checked_wait
from replaykit.commands import run_deadline
from replaykit.errors import WorkflowNotFound
from replaykit.log import Log, Status
from replaykit.otel import QUEUE_DEPTH_CAP, Telemetry
from replaykit.registry import BoundWorkflow, Workflow, app_version_of, registered, unbind
from replaykit.runtime import admin, courtesy, updates
from replaykit.runtime.async_steps import AsyncSteps
from replaykit.runtime.books import Books
from replaykit.runtime.bulk import BulkActions
from replaykit.runtime.cancels import DEFAULT_GRACE, CancelRequests, checked_grace, second_cancel
from replaykit.runtime.claims import Claims
from replaykit.runtime.clock import Clock, SystemClock
from replaykit.runtime.commits import RecordWriter
from replaykit.runtime.deadlines import Deadlines
from replaykit.runtime.effects import EffectRunner
from replaykit.runtime.handles import WorkflowHandle
from replaykit.runtime.history import History
from replaykit.runtime.host import CancelScope, Entropy, Wake, system_entropy
from replaykit.runtime.listing import Listing
from replaykit.runtime.notes import Notes
from replaykit.runtime.overlaps import enqueue_planned, keyed_start
from replaykit.runtime.parents import close_children_after
from replaykit.runtime.pool import WorkPool
from replaykit.runtime.queues import Queue, QueueItem, check_partition_key, queue_named
from replaykit.runtime.recovery import Recovery, hold_executor_id
from replaykit.runtime.retention import Retention, checked_retention
from replaykit.runtime.retries import RetryingStore
from replaykit.runtime.run_filters import ListFilters
from replaykit.runtime.schedule_loop import ScheduleLoop, tick_starter
from replaykit.runtime.scheduler import DEFAULT_MAX_GENERATIONS_IN_A_ROW, Scheduler
from replaykit.runtime.schedules import registered_schedules
from replaykit.runtime.serving import serve_until_stopped
from replaykit.runtime.starts import StartRequest, Starts
from replaykit.runtime.timing import Timing
from replaykit.runtime.twins import room_method
from replaykit.runtime.waits import Waits
from replaykit.runtime.wakeups import Wakeups
from replaykit.runtime.warm import DEFAULT_MAX_CACHED_RUNS, WarmCache
from replaykit.runtime.work import Work
from replaykit.serde import PayloadCodec
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.stores.codec import with_codec

__all__ = ["DEFAULT_URL", "Engine", "WorkflowHandle", "open_store_for"]

R = TypeVar("R")

DEFAULT_URL = admin.DEFAULT_URL
log = logging.getLogger("replaykit.engine")

#: Threads for the short store work of activations (see `Scheduler.__init__`). Each
#: waits in a store call, most of them in a group commit: the threads bound how many
#: finishes one commit can carry (8 gave commits of 7 finishes and drained a queue of
#: one-step runs at 1,150 wf/s on PostgreSQL here; 32 gave commits of 22 and 1,600).
BOOKKEEPERS = 32


def _name_of(wf: Any) -> str:
    """How a start's errors name the workflow given (which may not be one)."""
    name = getattr(wf, "workflow_name", None)
    return repr(name) if isinstance(name, str) else repr(wf)


def open_store_for(target: str | Store | None) -> Store:
    """A store from a URL, a store instance, or None (REPLAYKIT_URL, else SQLite)."""
    return admin.open_store_for(target)


class Engine(Timing, History, BulkActions, Listing):
    """Runs workflows against a store. A context manager; closes cleanly.

    `Engine()` uses SQLite at ./replaykit.db (or REPLAYKIT_URL);
    `Engine("memory://")`, `Engine("sqlite:///path.db")`,
    `Engine("postgresql://...")` or `Engine(store)` pick another store.
    Async step bodies run on `step_loop` when given (`AsyncEngine` passes the
    application's running loop), else on a private loop the engine starts.

    `executor_id` names this engine to the store: it owns the runs it starts
    and recovers that id's unfinished runs of its `app_version` at launch. One
    live engine holds an id and version at a time; another such engine waits up
    to `executor_wait` seconds for it to stop, then raises `ExecutorIdInUse`.
    (Engines of two versions may share an id, as in a rolling deploy.)

    `codec` (a `replaykit.serde.PayloadCodec`) encodes every payload at rest:
    inputs, results, step outcomes and failures, messages, events. Without
    one, a payload a codec encoded is refused with `CodecError` (the run is
    parked) rather than handed to a workflow; plain payloads read either way.
    `retention` keeps finished runs that long, then deletes them (runtime/retention.py).
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
        max_cached_runs: int = DEFAULT_MAX_CACHED_RUNS,
        step_loop: asyncio.AbstractEventLoop | None = None,
        executor_wait: float = 10.0,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        codec: PayloadCodec | None = None,
        max_generations_in_a_row: int = DEFAULT_MAX_GENERATIONS_IN_A_ROW,
        retention: timedelta | float | None = None,
    ) -> None:
        # Everything is checked before anything is taken (the store, the executor hold):
        # a refused argument leaves no hold behind for the next engine to wait on.
        checked_wait(executor_wait, "Engine(executor_wait=...)")
        keep = checked_retention(retention, "Engine(retention=...)")
        poll_interval = checked_interval(poll_interval, "Engine(poll_interval=...)")
        lease_seconds = checked_interval(lease_seconds, "Engine(lease_seconds=...)")
        checked_count(max_workers, "Engine(max_workers=...)", minimum=1)
        checked_count(step_workers, "Engine(step_workers=...)", minimum=1)
        checked_count(max_cached_runs, "Engine(max_cached_runs=...)")
        checked_count(max_recovery_attempts, "Engine(max_recovery_attempts=...)")
        checked_count(max_payload_bytes, "Engine(max_payload_bytes=...)", minimum=1)
        checked_count(max_generations_in_a_row, "Engine(max_generations_in_a_row=...)", minimum=1)
        listened = (
            None if queues is None else [q.name if isinstance(q, Queue) else q for q in queues]
        )
        for name in listened or ():
            queue_named(name)  # a queue no Queue(...) declares is refused, naming those that are
        self._closed = False
        # One retry policy for every room: the store retries what may run twice.
        # Inside it, the payload codec: a retried call re-encodes nothing it sent.
        self.codec = codec
        opened = open_store_for(target)
        # Whether every sharer's notes reach this engine (but across a "relisten"): then
        # a run it finished lately is known to exist without a read, and runs resumed
        # elsewhere need no frequent sweep. A store that does not say (a user's own) is
        # asked, and swept for.
        notes_reach_every_sharer = getattr(opened, "notes_reach_every_sharer", False) is True
        self.store: Store = cast(
            Store,
            RetryingStore(
                with_codec(opened, codec),
                stop=lambda: self._closed,
                runs_lost=lambda: self.wakeups.sweep_soon(),
            ),
        )
        self.executor_id = executor_id
        # The one writer of records: every room commits through it (runtime/commits.py).
        self.records = RecordWriter(self.store, executor_id=executor_id, stop=lambda: self._closed)
        self.app_version = app_version or app_version_of(registered().values())
        try:
            self._hold = hold_executor_id(self.store, executor_id, self.app_version, executor_wait)
        except BaseException:
            self.store.close()
            raise
        # Before each write and step attempt: does this engine still hold its id (fence.py)?
        self._fence = self.records.fence_with(self._hold, self.app_version)
        try:
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
            self.lease_seconds = lease_seconds
            self.step_pool = ThreadPoolExecutor(step_workers, thread_name_prefix="replaykit-step")
            # Decided once: with no OpenTelemetry (or its no-op providers) the hot path
            # tests a flag and does nothing more.
            self.telemetry = Telemetry(
                tracer_provider=tracer_provider, meter_provider=meter_provider
            )
            self._runner = EffectRunner(self, loop=step_loop, telemetry=self.telemetry)
            # An application's loop shares the interpreter lock with the engine's threads:
            # the busiest of them step aside for it after each millisecond of work.
            self.courtesy = courtesy.Courtesy(courtesy.WORK if step_loop is not None else None)
            self.wakeups = Wakeups(
                self.clock,
                poll_interval=poll_interval,
                dispatch=lambda workflow_id: self.scheduler.dispatch(workflow_id),
                busy=lambda: self.scheduler.busy,
                sweep=lambda thorough: self.recovery.sweep(
                    thorough=thorough or not notes_reach_every_sharer
                ),
                expire=lambda workflow_id: self.deadlines.expire_at(workflow_id),
                notes_reach_every_sharer=notes_reach_every_sharer,
                scan=lambda after, until: self.recovery.parked_due(after, until),
                revive=lambda workflow_id: self.recovery.revive(workflow_id),
            )
            self.deadlines = Deadlines(
                self.store,
                self.clock,
                self.telemetry,
                poll_interval=poll_interval,
                watch_deadline=self.wakeups.watch_deadline,
                stop_locally=lambda workflow_id: self.scheduler.cancel_locally(workflow_id),
                grace_over=lambda row: self.cancels.grace_over(row),
                ask=self._ask_child,
            )
            self.cancels: CancelRequests = CancelRequests(
                self.store,
                self.clock,
                stop=lambda workflow_id, detail: self.terminate(workflow_id, reason=detail),
                wake=self.wakeups.wake,
                watch=self.deadlines.watch_grace,
                tracked=lambda workflow_id: (
                    self.scheduler.is_tracked(workflow_id) or self.recovery.parked_here(workflow_id)
                ),
            )
            self.wakeups.listen_kind("cancel", self.cancels.heard)
            self.claims = Claims(
                self.store,
                self.clock,
                executor_id=executor_id,
                app_version=self.app_version,
                queue_names=listened,
                capacity=max_workers * 2,
                lease_seconds=lease_seconds,
                poll_interval=poll_interval,
                dispatch=lambda workflow_id, row, fresh: self.scheduler.dispatch(
                    workflow_id, row=row, fresh=fresh
                ),
                forget=lambda workflow_id: self.scheduler.drop_warm(workflow_id),
                fence=self._fence,
                notes_reach_every_sharer=notes_reach_every_sharer,
                busy=lambda: self.scheduler.busy,
            )
            # Blocking work of activations: step bodies and effects that wait on the big
            # pool; the short store work around them (reading a run, finishing it,
            # parking it) on a small one of its own, so that long steps filling the big
            # pool do not hold up other runs' finishes.
            workers = WorkPool(max_workers, thread_name_prefix="replaykit-run")
            bookkeepers = WorkPool(BOOKKEEPERS, thread_name_prefix="replaykit-books")
            books = Books(
                self.store,
                self.records,
                self.clock,
                self.telemetry,
                executor_id=executor_id,
                app_version=self.app_version,
                max_payload_bytes=max_payload_bytes,
                max_recovery_attempts=max_recovery_attempts,
                park=self.park,
                queue_run_done=self.claims.run_done,
                tell=self.wakeups.tell_listeners,
                post_many=lambda events: self.scheduler.post_many(events),
                parent_ended=self._parent_ended,
            )
            self.scheduler = Scheduler(
                store=self.store,
                records=self.records,
                runner=self._runner,
                wakeups=self.wakeups,
                clock=self.clock,
                executor_id=executor_id,
                app_version=self.app_version,
                work=Work(
                    self.store,
                    self.records,
                    self._runner,
                    books,
                    self.clock,
                    executor_id=executor_id,
                    app_version=self.app_version,
                    strict=strict,
                    closed=lambda: self.scheduler.closed,
                    watch_deadline=self.deadlines.watch,
                ),
                warm=WarmCache(
                    self.clock, capacity=max_cached_runs, jump_for=self.wakeups.jump_for
                ),
                async_steps=AsyncSteps(
                    self._runner,
                    self.clock,
                    post_many=lambda events: self.scheduler.post_many(events),
                    offload=bookkeepers,
                ),
                books=books,
                workers=workers,
                bookkeepers=bookkeepers,
                poll_interval=poll_interval,
                courtesy=self.courtesy,
                max_generations_in_a_row=max_generations_in_a_row,
            )
            self.notes = Notes(
                self.scheduler,
                self.wakeups,
                claim=self.claims.wake,
                schedules_changed=lambda: self.schedules.wake(),
            )
            self.waits = Waits(
                self.store,
                self.clock,
                self.wakeups,
                self.scheduler,
                poll_interval=poll_interval,
                hears_every_delete=notes_reach_every_sharer,
            )
            self.recovery = Recovery(
                self.store,
                self.scheduler,
                executor_id=executor_id,
                app_version=self.app_version,
                max_recovery_attempts=max_recovery_attempts,
                poke=self.wakeups.poke,
                tracked_count=lambda: self.wakeups.suspended_count() + self.scheduler.busy,
                parked=self.wakeups,
            )
            self.starts = Starts(
                self.store,
                self.clock,
                self.telemetry,
                executor_id=executor_id,
                app_version=self.app_version,
                max_payload_bytes=max_payload_bytes,
                dispatch=self.scheduler.dispatch,
                watch_deadline=self.wakeups.watch_deadline,
                step_aside=self.courtesy,
            )
            self.updater = updates.Updater(
                self.store,
                self.wakeups.listen,
                poll_interval=poll_interval,
                max_payload_bytes=max_payload_bytes,
                trace_context=self._trace_context,
            )
            self.schedules = ScheduleLoop(
                self.store,
                self.clock,
                registered_schedules() if schedules else (),
                poll_interval=poll_interval,
                fire=tick_starter(self.starts.create_run),
                cancel=lambda workflow_id, reason: self.cancel(workflow_id, reason=reason),
                claim_from=self.claims.also_claim,
                notes_reach_every_sharer=notes_reach_every_sharer,
            )
            self.retention = Retention(
                self.store, self.clock, keep, forget_finished=self.scheduler.forget_finished
            )
        except BaseException:
            # Nothing runs yet: let go of what was taken, so no later engine waits on it.
            self._fence.release()
            self.store.close()
            raise
        self._unsubscribe: Callable[[], None] = lambda: None
        if self.telemetry.metering:
            self.telemetry.watch_queues(
                lambda: [] if self._closed else self.claims.queue_depths(QUEUE_DEPTH_CAP)
            )
        try:
            self._unsubscribe = self.store.subscribe(self.notes.heard)
            self.scheduler.start()
            self.wakeups.start()
            self.claims.announce()
            self.claims.start()
            self.schedules.start()
            self.retention.start()
            if recover:
                self.recover()
            self.recovery.warn_stranded()
        except BaseException:
            # A failed launch leaves nothing behind: no thread of it raises later.
            self.close(wait=False)
            raise

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Stop taking work, let running steps finish and commit, release the store.

        With `timeout`, steps still running after that many seconds are
        cancelled (an async body is interrupted; a sync one is abandoned) and
        record nothing. Runs that are mid-way stay PENDING in the store and are
        recovered by the next engine with the same executor id and version.
        """
        if self._closed:
            return
        self._closed = True
        self.telemetry.watch_queues(None)
        self._unsubscribe()
        self.scheduler.close(wait=wait, timeout=timeout)
        self.step_pool.shutdown(wait=False, cancel_futures=True)
        self._runner.close()
        self.claims.close()
        self.schedules.close()
        self.retention.close()
        self.wakeups.close()
        if wait:
            # Queue runs this engine held go back to their queue for others to
            # claim at once; other runs wait for recovery or a lease takeover.
            try:
                self.store.release(self.executor_id)
            except Exception as exc:  # a store outage must not turn close() into a crash
                log.warning("could not release queue runs on close: %s", exc)
        # Last: the next engine with this id may recover its runs from now on.
        self._fence.release()
        self.store.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def serve(
        self,
        *,
        timeout: float | None = None,
        signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
        stop: threading.Event | None = None,
    ) -> None:
        """Keep the engine working until SIGTERM or SIGINT (or `stop` is set), then close
        it gracefully: running steps, composite children included, finish and commit
        (for up to `timeout` seconds). The one line a plain process needs to stop as
        `replaykit worker` does. Call it from the main thread; the previous signal
        handlers come back afterwards."""
        serve_until_stopped(
            lambda: self.close(wait=True, timeout=timeout),
            executor_id=self.executor_id,
            signals=signals,
            stop=stop,
        )

    # -- starting and finding runs ------------------------------------------------------

    create_run = room_method("starts", Starts.create_run)

    def start_batch(
        self,
        starts: Sequence[StartRequest],
        *,
        trace_contexts: Sequence[str | None] | None = None,
        deadlines: Sequence[tuple[float | None, datetime | None]] | None = None,
        attributes: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[WorkflowRow | Exception]:
        """Start many runs, `(wf, args, kwargs, workflow_id)` each, in one statement and
        one commit; each answer is the run's row (or the existing one, by id), or the
        error that start alone raised. `AsyncEngine` gathers the starts of one loop
        iteration into a batch: a thousand concurrent starts cost a few commits.

        `trace_contexts`, one per start, are the trace contexts their callers had
        (`AsyncEngine` gathers starts of many tasks); without, each run gets this
        thread's current one. `deadlines`, one `(timeout seconds, deadline)` per start
        (checked already, as `commands.run_deadline` checks them), bound the runs;
        `attributes`, one mapping (or None) per start, are the runs' attributes."""
        self._check_open()
        return self.starts.start_batch(
            starts, trace_contexts=trace_contexts, deadlines=deadlines, attributes=attributes
        )

    def start(
        self,
        wf: Workflow[..., R] | BoundWorkflow[R],
        /,
        *args: Any,
        workflow_id: str | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        concurrency_key: str | None = None,
        concurrency_limit: int = 1,
        overlap: str = "allow",
        attributes: Mapping[str, Any] | None = None,
        shard_key: str | None = None,
        **kwargs: Any,
    ) -> WorkflowHandle[R]:
        """Start a run; idempotent by `workflow_id`: the same workflow with the same
        arguments returns the existing run, another workflow or other arguments raise
        `WorkflowIdConflict`.

        `timeout` (a timedelta or seconds, counted from now on the engine's clock)
        and `deadline` (an aware datetime) bound the run, the earlier winning: when
        it passes, the run is cancelled with a status detail that says it timed out
        and `result()` raises `WorkflowDeadlineExceeded`. Its children inherit what
        remains of it.

        With a `concurrency_key`, at most `concurrency_limit` runs of that key run at
        once, across every engine; the others wait (ENQUEUED) in order for a slot, and
        `overlap` says what this start does while a run of the key is live: "allow",
        "skip", "queue_one" or "cancel_other" (runtime/overlaps.py, docs/queues.md).
        `attributes` are the run's searchable key/values (docs/operations.md).
        `shard_key` places the run and its children's rows together on a sharded
        database (default: the run's id; docs/storage.md, "Past one server")."""
        self._check_open()
        wf, args, kwargs = unbind(wf, args, kwargs)
        what = f"start({_name_of(wf)}, ...)"
        seconds, deadline = run_deadline(timeout, deadline, what=what)
        keyed = keyed_start(concurrency_key, concurrency_limit, overlap, what)
        if keyed is not None:
            deadline = keyed.deadline(seconds, deadline, self.clock.now)
            self.claims.also_claim(keyed.queue.name)
            return self.enqueue(
                keyed.queue,
                wf,
                *args,
                workflow_id=workflow_id,
                deadline=deadline,
                partition_key=keyed.key,
                overlap=keyed.overlap,
                attributes=attributes,
                shard_key=shard_key,
                **kwargs,
            )
        row, _created = self.create_run(
            wf,
            args,
            kwargs,
            workflow_id=workflow_id,
            timeout=seconds,
            deadline=deadline,
            attributes=attributes,
            shard_key=shard_key,
        )
        return WorkflowHandle(self, row.workflow_id, wf.result_type)

    def enqueue(
        self,
        queue: str | Queue,
        wf: Workflow[..., R] | BoundWorkflow[R],
        /,
        *args: Any,
        workflow_id: str | None = None,
        priority: int = 0,
        dedup_id: str | None = None,
        delay: timedelta | float | None = None,
        if_exists: str = "raise",
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        partition_key: str | None = None,
        overlap: str = "allow",
        attributes: Mapping[str, Any] | None = None,
        shard_key: str | None = None,
        **kwargs: Any,
    ) -> WorkflowHandle[R]:
        """Put a run on a queue (status ENQUEUED until an engine claims it).

        Lower `priority` numbers run first. A `dedup_id` that a live run of the
        queue already holds raises `DuplicateDedupId`, or with
        `if_exists="return"` gives that run's handle. `delay` holds the run back.
        A used `workflow_id` returns its run for the same workflow and arguments,
        and raises `WorkflowIdConflict` otherwise.

        `timeout` counts from the claim (time spent queued is not counted);
        `deadline`, an aware datetime, holds from now, so a run can time out
        while it waits in the queue. The earlier of the two wins.

        `partition_key` (a tenant's id, say) puts the run in that key's partition:
        a partitioned queue serves its keys in turn and holds its per-key limits
        (`Queue(partition_concurrency=..., partition_rate_limit=...)`); `overlap`
        says what the enqueue does while a run of that key is live on the queue
        ("allow", "skip", "queue_one", "cancel_other": runtime/overlaps.py).
        `attributes` and `shard_key` as for `start`.
        """
        self._check_open()
        wf, args, kwargs = unbind(wf, args, kwargs)
        name = queue.name if isinstance(queue, Queue) else queue
        what = f"enqueue({name!r}, {_name_of(wf)}, ...)"
        check_partition_key(partition_key, what)
        if if_exists not in ("raise", "return"):
            raise ValueError(f"if_exists must be 'raise' or 'return', got {if_exists!r}")
        seconds, deadline = run_deadline(timeout, deadline, what=what)

        def create(dedup_id: str | None) -> str:
            row, _created = self.create_run(
                wf,
                args,
                kwargs,
                workflow_id=workflow_id,
                queue=name,
                priority=priority,
                dedup_id=dedup_id,
                delay=delay,
                timeout=seconds,
                deadline=deadline,
                partition_key=partition_key,
                attributes=attributes,
                shard_key=shard_key,
            )
            return row.workflow_id

        run_id = enqueue_planned(
            self, queue, partition_key, overlap, dedup_id, if_exists, what, create
        )
        return WorkflowHandle(self, run_id, wf.result_type)

    def enqueue_many(
        self,
        queue: str | Queue,
        wf: Workflow[..., R],
        items: Iterable[Sequence[Any] | QueueItem],
        /,
        *,
        priority: int = 0,
        delay: timedelta | float | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        if_exists: str = "raise",
        partition_key: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> list[WorkflowHandle[R]]:
        """Put many runs of `wf` on a queue in one statement and one commit.

        Each item is a tuple of positional arguments, or a `QueueItem(*args,
        workflow_id=..., priority=..., dedup_id=..., delay=..., timeout=...,
        deadline=..., attributes=..., **kwargs)`; `priority`, `delay`, `timeout`,
        `deadline`, `partition_key` and `attributes` here apply to items that give none
        (as in `enqueue`: a timeout counts from each run's claim, a deadline from now). Handles come
        back in item order; an id that exists already gives that run's handle.
        All or nothing: a `dedup_id` that a live run of the queue (or an earlier
        item) holds raises `DuplicateDedupId` and enqueues none of them; with
        `if_exists="return"`, as with `enqueue`, such an item gets the handle of
        the run that holds its dedup id instead, and the others are enqueued. Items
        of equal priority are claimed in the order given.

        An item whose `workflow_id` holds a run of another workflow or other
        arguments raises `WorkflowIdConflict` naming the item, after the batch
        committed: the store compares ids in the insert, so the other items are
        enqueued by then (the error says so).
        """
        self._check_open()
        ids = self.starts.enqueue_many(
            queue,
            wf,
            items,
            priority=priority,
            delay=delay,
            timeout=timeout,
            deadline=deadline,
            if_exists=if_exists,
            partition_key=partition_key,
            attributes=attributes,
        )
        return [WorkflowHandle(self, workflow_id, wf.result_type) for workflow_id in ids]

    def run(
        self,
        wf: Workflow[..., R] | BoundWorkflow[R],
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
        wf, args, kwargs = unbind(wf, args, kwargs)
        row, _created = self.create_run(wf, args, kwargs, workflow_id=workflow_id)
        return WorkflowHandle[R](self, row.workflow_id, wf.result_type).result(timeout)

    def handle(self, workflow_id: str) -> WorkflowHandle[Any]:
        if self.kept_finished(workflow_id) is None and self.store.get_workflow(workflow_id) is None:
            raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
        return WorkflowHandle(self, workflow_id)

    def _handle_for(self, workflow_id: str, result_type: Any) -> WorkflowHandle[Any]:
        return WorkflowHandle(self, workflow_id, result_type)

    def _stranded(self, where: WorkflowFilter, filters: ListFilters) -> list[WorkflowRow]:
        status, version = filters.get("status"), filters.get("version")
        if status is not None or version is not None:
            raise ValueError(
                "list_workflows(stranded=True) lists PENDING and ENQUEUED runs of versions "
                "other than this engine's; it takes no status= or version="
            )
        return admin.stranded_runs(
            self.store,
            app_version=self.app_version,
            executor_id=filters.get("executor_id") or self.executor_id,
            where=where,
        )

    def export_log(self, workflow_id: str) -> Log:
        """The run's log as `replaykit.testing.replay` and `replaykit replay` read it."""
        return admin.export_run(self.store, workflow_id)

    # -- operating runs --------------------------------------------------------------------

    def cancel(
        self,
        workflow_id: str,
        *,
        grace: float = DEFAULT_GRACE,
        reason: str = "",
        children: bool = True,
    ) -> bool:
        """Ask a run to cancel: `Cancelled` is raised in the workflow at its current
        yield, which may catch it and clean up within `grace` seconds (default 60);
        the run then ends CANCELLED with its cleanup recorded (docs/concepts.md).

        A second cancel, or the grace's end, stops it as `terminate` does. A run
        that does not run (ENQUEUED, PARKED) is cancelled at once (its unfinished
        children too, unless `children=False`; a run that handles its cancel ends its
        children by their parent close policy). False if the run had finished
        already; `ValueError` for a grace of 0 or less.
        """
        grace = checked_grace(grace, workflow_id)
        row = admin.get_run(self.store, workflow_id)
        if row.status.is_terminal:
            return False
        if row.status is not Status.PENDING:
            return self.terminate(workflow_id, children=children, reason=reason)
        if not self.cancels.request(row, grace, reason):
            return self.terminate(workflow_id, children=children, reason=second_cancel(reason))
        return True

    def terminate(self, workflow_id: str, *, children: bool = True, reason: str = "") -> bool:
        """Stop a run hard: CANCELLED now, with no cleanup (and its unfinished children,
        unless `children=False`).

        A step under way finishes and its record lands in the cancelled run (a
        preemptible one is stopped and records `StepPreempted`; a heartbeating one is
        stopped at its next heartbeat, recording nothing); waits stop. `reason` is kept
        as the run's status detail (`replaykit workflows show` prints it); a later
        `resume` brings back the children this stop reached. False if the run had
        finished already.
        """
        row = admin.get_run(self.store, workflow_id)
        cancelled = admin.cancel_run(
            self.store,
            workflow_id,
            children=children,
            reason=reason,
            on_cancel=self._stop_locally,
            on_ask=self._ask_child,
        )
        if cancelled:
            self.telemetry.run_finished(row.name, Status.CANCELLED.value)
        return cancelled

    def _ask_child(self, workflow_id: str, detail: str) -> None:
        """A parent close policy of "cancel": the child asked as `cancel` asks."""
        self.cancel(workflow_id, reason=detail)

    def _parent_ended(self, row: WorkflowRow, how: str, has_children: bool) -> None:
        """The run ended (`how`: its status, or "continued as new"): what this engine
        kept of its cancel goes, and, if its log started children, their parent close
        policies apply (`admin.close_children`)."""
        self.cancels.forget(row.workflow_id)
        if has_children:
            close_children_after(
                self.store, row, how, on_cancel=self._stop_locally, on_ask=self._ask_child
            )

    def _stop_locally(self, workflow_id: str) -> None:
        self.scheduler.cancel_locally(workflow_id)

    def resume(
        self,
        workflow_id: str,
        *,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
    ) -> WorkflowHandle[Any]:
        """Continue a run on this engine: a CANCELLED or PARKED one from its log (with
        the children its cancel cascaded to), an ENQUEUED one now, delay or not.

        A finished run (SUCCESS, ERROR) is left as it is; `fork` re-runs it.

        A deadline that passed no longer applies (a run that timed out would be
        cancelled again at once); one still ahead holds. `timeout` (from now) or
        `deadline` gives the resumed runs a new one.
        """
        seconds, deadline = run_deadline(timeout, deadline, what=f"resume({workflow_id!r})")
        # The run continues on this engine's code: stamp it with this engine's
        # version so its recovery and takeovers find it later.
        resumed = admin.resume_run(
            self.store,
            workflow_id,
            executor_id=self.executor_id,
            app_version=self.app_version,
            now=self.clock.now(),
            timeout=seconds,
            deadline=deadline,
        )
        for run_id in resumed:
            # A child put back on its queue is for a worker to claim: the
            # activation finds it not PENDING here and leaves it.
            self.cancels.forget(run_id)
            self.notes.take_back(run_id)
        return WorkflowHandle(self, workflow_id)

    def delete(self, workflow_id: str, *, children: bool = False) -> bool:
        """Remove a run with its log, inbox and events (cancelling it first if it runs)."""
        self.scheduler.forget_finished()
        return admin.delete_run(
            self.store, workflow_id, children=children, on_cancel=self._stop_locally
        )

    def _delete_one(self, workflow_id: str, children: bool) -> bool:
        return self.delete(workflow_id, children=children)  # what delete_workflows does

    def garbage_collect(
        self, *, older_than: timedelta | datetime, keep_running: bool = True
    ) -> int:
        """Delete runs created before a cutoff; by default only finished ones. Returns the count."""
        cutoff = older_than if isinstance(older_than, datetime) else self.clock.now() - older_than
        self.scheduler.forget_finished()
        return admin.collect_garbage(
            self.store, cutoff, keep_running=keep_running, on_cancel=self._stop_locally
        )

    def recover(self) -> list[str]:
        """Re-dispatch this executor's unfinished runs of this version; park crash-loopers."""
        return self.recovery.recover()

    def park(self, workflow_id: str, why: str, cause: BaseException | None = None) -> None:
        """Park a run, saying why on it and once in the log (with `cause`'s traceback)."""
        self.recovery.park(workflow_id, why, cause)

    # -- waiting for results ---------------------------------------------------------------

    def wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow:
        return self.waits.wait_finished(workflow_id, timeout)

    def kept_finished(self, workflow_id: str) -> WorkflowRow | None:
        """The row of a run this engine finished lately, if it may answer from it.

        Only while every delete of the store reaches this engine as a note (the
        scheduler forgets a deleted run's row): on SQLite, whose notes stay in their
        process, a run deleted from another process would still be answered for, so
        there the store is asked. Lock-free, for callers on an event loop too.
        """
        return self.waits.kept_finished(workflow_id)

    def outcome_value(self, row: WorkflowRow, result_type: Any = None) -> Any:
        """A finished run's result decoded as `result_type`, or its failure raised."""
        return admin.run_outcome(row, result_type)

    # -- what the scheduler's neighbours and the effect runner call (the Host protocol) ----

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Engine is closed; create a new one")

    def dispatch(self, workflow_id: str, *, row: WorkflowRow | None = None) -> None:
        """Run an activation of `workflow_id` soon (at most one at a time per run)."""
        self.scheduler.dispatch(workflow_id, row=row)

    def scope_of(self, workflow_id: str) -> CancelScope | None:
        return self.scheduler.scope_of(workflow_id)

    def check_cancelled(self, workflow_id: str) -> None:
        self.scheduler.check_cancelled(workflow_id)
        self.records.fenced(workflow_id)  # a zombie starts no step attempt

    def cancel_child(self, workflow_id: str) -> None:
        """Cancel a losing `Call`'s child run (with its own children); finished runs stay."""
        try:
            admin.cancel_run(self.store, workflow_id, children=True, on_cancel=self._stop_locally)
        except Exception as exc:  # the parent's record is committed; do not fail it now
            self.logger.warning("could not cancel the losing child run %r: %s", workflow_id, exc)

    def listen(self, wakes: Iterable[Wake], callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when any of `wakes` is notified, until unsubscribed."""
        return self.wakeups.listen(wakes, callback)

    def keeps_warm(self, workflow_id: str, position: int) -> bool:
        """Whether a run suspending at `position` now would stay warm (in memory)."""
        return self.scheduler.would_stay_warm(workflow_id, position)

    def jump_to(self, workflow_id: str, position: int, deadline: datetime) -> bool:
        """Move an autojumping clock to `deadline` if nothing else runs or is due first
        and the run would stay warm (a run that would be replayed must suspend)."""
        return self.scheduler.would_stay_warm(workflow_id, position) and self.wakeups.jump_for(
            deadline
        )

    def wait_for_change(
        self, changed: threading.Event, deadline: datetime | None, *, idle: bool
    ) -> None:
        """Wait (holding the calling thread) for `changed`, the deadline, or a poll interval.

        `idle=True` says nothing runs on behalf of this wait but the clock: an
        autojumping clock may then jump to the deadline, as it does for timers.
        """
        self.waits.wait_for_change(changed, deadline, idle=idle)

    # -- queues (schedules and debounce: runtime/timing.py) --------------------------

    def claim_now(self) -> int:
        """One claim round over the listened queues; returns how many runs it took."""
        return self.claims.claim_now()

    # -- for the testing kit ------------------------------------------------------------------

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing runs and no timer is due soon (virtual clocks jump).

        Returns False if `timeout` passed first.
        """
        return self.waits.wait_idle(timeout)
