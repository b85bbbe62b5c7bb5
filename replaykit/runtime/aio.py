"""AsyncEngine: the runtime's asyncio face, on the same core as `Engine`.

One core, two faces: an `AsyncEngine` holds an `Engine` (the same scheduler,
wake-ups, claims and stores) and offers its operations as coroutines. What it
adds is where things happen:

- async step bodies run on the application's running loop, so clients,
  sessions and futures that belong to it work inside steps;
- store I/O and other blocking calls run on the engine's threads (a small
  pool for the front door's calls, the scheduler's own for runs), never on
  the loop;
- waiting for a result or an event holds no thread: a notification from the
  engine settles a future (a result) or sets an asyncio event (an event) on the
  loop.

Workflows stay generators; a run started under one face can be finished
under the other (they share the store, the executor id and the version).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, Generic, Self, TypeVar

from replaykit import serde
from replaykit._limits import checked_wait
from replaykit._waiting import still_running, why_waiting
from replaykit.commands import run_deadline
from replaykit.errors import WorkflowNotFound
from replaykit.otel import current_trace_context
from replaykit.registry import BoundWorkflow, Workflow, unbind
from replaykit.runtime import admin, debounce
from replaykit.runtime.async_face import (
    AsyncFace,
    AsyncRunHandle,
    call_off_loop,
    kept_options,
    open_sync_face,
)
from replaykit.runtime.clock import Clock
from replaykit.runtime.engine import Engine
from replaykit.runtime.handles import WorkflowHandle, result_type_of
from replaykit.runtime.host import Entropy
from replaykit.runtime.queues import Queue, QueueItem
from replaykit.runtime.scheduler import DEFAULT_MAX_GENERATIONS_IN_A_ROW
from replaykit.runtime.starts import StartRequest
from replaykit.runtime.timing import Timing
from replaykit.runtime.twins import off_loop_twin, room_method
from replaykit.runtime.warm import DEFAULT_MAX_CACHED_RUNS
from replaykit.serde import PayloadCodec
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["AsyncEngine", "AsyncWorkflowHandle"]

R = TypeVar("R")
T = TypeVar("T")

DEFAULT_IO_WORKERS = 16
#: The most starts stored in one statement (those of one loop iteration beyond it
#: go in further batches, side by side).
START_BATCH = 500
#: A start waiting for its batch: the request, its caller's answer, its trace context,
#: its (timeout seconds, deadline) as checked on the loop, and its attributes.
_PendingStart = tuple[
    StartRequest,
    "asyncio.Future[WorkflowRow]",
    str | None,
    tuple[float | None, datetime | None],
    Mapping[str, Any] | None,
]
#: How many poll intervals a waiter for a run this engine runs sleeps between its
#: own looks (it is woken when the run finishes; the look is for a lost wake-up).
TRACKED_ROUNDS = 5
#: Runs whose waiters are woken, and starts answered, per loop iteration (see
#: `_wake_finish_waiters`, `_start_batch`).
WAKE_CHUNK = 32


class AsyncWorkflowHandle(AsyncRunHandle, Generic[R]):
    """A run seen from a coroutine: its id, its status, and an awaitable result."""

    def __init__(self, engine: AsyncEngine, workflow_id: str, result_type: Any = None) -> None:
        self._engine = engine
        self.workflow_id = workflow_id
        self._result_type = result_type

    def __repr__(self) -> str:
        return f"<AsyncWorkflowHandle {self.workflow_id!r}>"

    async def row(self) -> WorkflowRow:
        row = await self._engine.off_loop(self._get)
        if row is None:
            raise WorkflowNotFound(f"no workflow run with id {self.workflow_id!r}")
        return row

    def _get(self) -> WorkflowRow | None:
        return self._engine.engine.store.get_workflow(self.workflow_id)

    def _face(self) -> AsyncEngine:
        return self._engine

    async def result(self, timeout: float | None = None) -> R:
        """Wait for the run to finish and return its result, or raise its failure.

        Holds no thread while it waits. Cancelling the task that awaits this
        cancels the wait, not the run (`engine.cancel(id)` cancels the run);
        `WorkflowTimeout` if `timeout` passes first.
        """
        row = await self._engine.wait_finished(self.workflow_id, timeout)
        result_type = result_type_of(row, self._result_type)
        return self._engine.engine.outcome_value(row, result_type)  # type: ignore[no-any-return]


def _async_handle(face: AsyncEngine, handle: WorkflowHandle[Any]) -> AsyncWorkflowHandle[Any]:
    """The async face's handle of the run an `Engine` call answered with (untyped, as the
    sync handle of a resume, fork or rewind is)."""
    return AsyncWorkflowHandle(face, handle.workflow_id)


class AsyncEngine(AsyncFace[Engine]):
    """Runs workflows from asyncio code: `async with AsyncEngine(url) as engine:`.

    Takes the same target and options as `Engine` but `step_loop` (async step
    bodies run on the loop the engine is opened on), and `io_workers`, the
    threads that carry the front door's store calls; tests/test_faces.py keeps
    the two in step. It opens on entering the `async with` (or `await
    engine.open()`), on the loop that is running then.
    """

    _named = ("AsyncEngine", "engine")

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
        executor_wait: float = 10.0,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        codec: PayloadCodec | None = None,
        max_generations_in_a_row: int = DEFAULT_MAX_GENERATIONS_IN_A_ROW,
        retention: timedelta | float | None = None,
        io_workers: int = DEFAULT_IO_WORKERS,
    ) -> None:
        # Before any other name is bound: `locals()` is the parameters.
        self._target, self._io_workers, self._options = kept_options(locals())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._io: ThreadPoolExecutor | None = None
        self._finish_waiters: dict[str, set[asyncio.Future[bool]]] = {}
        self._heard: collections.deque[str] = collections.deque()
        self._waking = False
        self._starts: list[_PendingStart] = []
        self._batches: set[asyncio.Task[None]] = set()
        self._unlisten: Callable[[], None] = lambda: None

    # -- lifecycle ---------------------------------------------------------------------

    async def open(self) -> Self:
        """Build the engine off the loop (it reads the store and recovers runs)."""
        if self._held is not None:
            if self._held.closed:
                raise RuntimeError("this AsyncEngine is closed; create a new one")
            return self
        loop, io, engine = await open_sync_face(
            self._io_workers,
            "replaykit-aio",
            lambda loop: Engine(self._target, step_loop=loop, **self._options),
        )
        self._loop, self._io, self._held = loop, io, engine
        # One listener for every finished run, whoever waits: a waiter registers in
        # `_finish_waiters` on the loop and takes no lock of the engine's.
        self._unlisten = engine.wakeups.listen_kind("finished", self._heard_finished)
        return self

    async def close(self, *, wait: bool = True, timeout: float | None = None) -> None:
        """Stop taking work; with `wait`, running steps (async ones included) finish and
        commit first, for up to `timeout` seconds (then they are cancelled). The loop
        stays free meanwhile: the close runs off it."""
        engine, io = self._held, self._io
        if engine is None or io is None or engine.closed:
            return
        loop = asyncio.get_running_loop()
        # Still listening meanwhile: runs that finish during the close wake their waiters.
        await loop.run_in_executor(io, functools.partial(engine.close, wait=wait, timeout=timeout))
        self._unlisten()
        io.shutdown(wait=False)

    @property
    def engine(self) -> Engine:
        """The sync face of this same core, for code on other threads."""
        return self._sync()

    def _check_usable(self) -> None:
        self._own_loop()

    async def off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a blocking call on the engine's I/O threads and await its answer
        (`call_off_loop`: a start under way when its caller is cancelled may still
        have started)."""
        return await call_off_loop(self._own_loop(), self._io, fn, args, kwargs)

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        engine = self.engine
        if engine.closed or self._io is None or self._loop is None:
            raise RuntimeError("this AsyncEngine is closed; create a new one")
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError(
                "this AsyncEngine belongs to another event loop; use it on the loop it was "
                "opened on"
            )
        return self._loop

    # -- starting runs -----------------------------------------------------------------------

    async def start(
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
    ) -> AsyncWorkflowHandle[R]:
        """Start a run; idempotent by `workflow_id`: the same workflow with the same
        arguments returns the existing run, another workflow or other arguments raise
        `WorkflowIdConflict`. `timeout` and `deadline` bound the run, and
        `concurrency_key`, `concurrency_limit` and `overlap` limit it, as in
        `Engine.start`; `attributes` are its searchable key/values, `shard_key` where
        its rows are placed (`Engine.start`).

        The starts made in one iteration of the loop (a `gather` of many) are stored
        together, in one statement and one commit; each caller gets its own answer
        (a keyed start, which reads its key's live runs first, and a start with a
        shard key are stored alone).
        """
        loop = self._own_loop()
        wf, args, kwargs = unbind(wf, args, kwargs)
        alone = concurrency_key is not None or concurrency_limit != 1 or overlap != "allow"
        if alone or shard_key is not None:
            handle = await self.off_loop(
                self.engine.start,
                wf,
                *args,
                workflow_id=workflow_id,
                timeout=timeout,
                deadline=deadline,
                concurrency_key=concurrency_key,
                concurrency_limit=concurrency_limit,
                overlap=overlap,
                attributes=attributes,
                shard_key=shard_key,
                **kwargs,
            )
            return AsyncWorkflowHandle(self, handle.workflow_id, wf.result_type)
        limits = run_deadline(
            timeout, deadline, what=f"start({getattr(wf, 'workflow_name', wf)!r}, ...)"
        )
        answer: asyncio.Future[WorkflowRow] = loop.create_future()
        # Each start's own trace context: the batch is stored from one thread.
        traced = current_trace_context() if self.engine.telemetry.tracing else None
        self._starts.append(((wf, args, kwargs, workflow_id), answer, traced, limits, attributes))
        if len(self._starts) == 1:
            loop.call_soon(self._send_starts)
        row = await answer
        return AsyncWorkflowHandle(self, row.workflow_id, wf.result_type)

    def _send_starts(self) -> None:
        """On the loop: the starts gathered since the last call go to the store as batches."""
        starts, self._starts = self._starts, []
        for first in range(0, len(starts), START_BATCH):
            task = asyncio.ensure_future(self._start_batch(starts[first : first + START_BATCH]))
            self._batches.add(task)  # held until done: the loop keeps only weak references
            task.add_done_callback(self._batches.discard)

    async def _start_batch(self, batch: list[_PendingStart]) -> None:
        try:
            answers = await self.off_loop(
                self.engine.start_batch,
                [start for start, _, _, _, _ in batch],
                trace_contexts=[traced for _, _, traced, _, _ in batch],
                deadlines=[limits for _, _, _, limits, _ in batch],
                attributes=[given for _, _, _, _, given in batch],
            )
        except BaseException as exc:  # the store is out, or the engine closed: all hear it
            for _, answer, _, _, _ in batch:
                if answer.done():
                    continue
                if isinstance(exc, asyncio.CancelledError):  # the loop is going away
                    answer.cancel()
                else:
                    answer.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        answered = list(zip(batch, answers, strict=True))
        try:
            for index, ((_, answer, _, _, _), result) in enumerate(answered):
                if index and index % WAKE_CHUNK == 0:
                    # A caller answered goes on in the next iteration: a few per
                    # iteration, so that five hundred do not hold the loop at once.
                    await asyncio.sleep(0)
                if answer.done():  # its caller was cancelled; the run is started anyway
                    continue
                if isinstance(result, Exception):
                    answer.set_exception(result)
                else:
                    answer.set_result(result)
        except asyncio.CancelledError:  # the loop is going away: nobody is left waiting
            for (_, answer, _, _, _), _ in answered:
                answer.cancel()
            raise

    async def run(
        self,
        wf: Workflow[..., R] | BoundWorkflow[R],
        /,
        *args: Any,
        workflow_id: str | None = None,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> R:
        """`await start(...)` then `await handle.result(timeout)`."""
        handle = await self.start(wf, *args, workflow_id=workflow_id, **kwargs)
        return await handle.result(timeout)

    async def enqueue(
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
    ) -> AsyncWorkflowHandle[R]:
        """`Engine.enqueue` as a coroutine (`timeout` counts from the claim, `deadline`
        from now, `partition_key` the run's partition, `overlap` what to do while a run
        of that key is live, `attributes` its key/values, `shard_key` its rows' place)."""
        wf, args, kwargs = unbind(wf, args, kwargs)
        handle = await self.off_loop(
            self.engine.enqueue,
            queue,
            wf,
            *args,
            workflow_id=workflow_id,
            priority=priority,
            dedup_id=dedup_id,
            delay=delay,
            if_exists=if_exists,
            timeout=timeout,
            deadline=deadline,
            partition_key=partition_key,
            overlap=overlap,
            attributes=attributes,
            shard_key=shard_key,
            **kwargs,
        )
        return AsyncWorkflowHandle(self, handle.workflow_id, wf.result_type)

    async def enqueue_many(
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
    ) -> list[AsyncWorkflowHandle[R]]:
        """`Engine.enqueue_many` as a coroutine: one statement, one commit."""
        # Items are read here, on the loop, so a generator of items is not
        # consumed on another thread.
        handles = await self.off_loop(
            self.engine.enqueue_many,
            queue,
            wf,
            list(items),
            priority=priority,
            delay=delay,
            timeout=timeout,
            deadline=deadline,
            if_exists=if_exists,
            partition_key=partition_key,
            attributes=attributes,
        )
        return [AsyncWorkflowHandle(self, h.workflow_id, wf.result_type) for h in handles]

    def handle(self, workflow_id: str) -> AsyncWorkflowHandle[Any]:
        """A handle by id, made without a store read: `status()` and `result()` raise
        `WorkflowNotFound` if no such run exists."""
        self.engine  # noqa: B018 - raises when not open
        return AsyncWorkflowHandle(self, workflow_id)

    # -- reading runs ---------------------------------------------------------------------------

    export_log = off_loop_twin(Engine.export_log)

    # -- updates ------------------------------------------------------------------------------

    async def update_with_start(
        self,
        wf: Workflow[..., Any] | BoundWorkflow[Any],
        name: str,
        /,
        *args: Any,
        workflow_id: str,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`Engine.update_with_start` as a coroutine: the run started if its id is free,
        the request delivered in the same transaction, the reply awaited."""
        self._own_loop()
        engine = self.engine
        call, start, started = engine._update_with_start_call(
            wf, name, args, kwargs, workflow_id=workflow_id, timeout=timeout, update_id=update_id
        )
        return await engine.updater.update_async(call, self.off_loop, start, started)

    async def send_with_start(
        self,
        wf: Workflow[..., R] | BoundWorkflow[R],
        message: Any,
        /,
        topic: str | None = None,
        *,
        workflow_id: str,
        idempotency_key: str | None = None,
    ) -> AsyncWorkflowHandle[R]:
        """`Engine.send_with_start` as a coroutine: the run started if its id is free, the
        message delivered in the same transaction."""
        handle = await self.off_loop(
            self.engine.send_with_start,
            wf,
            message,
            topic,
            workflow_id=workflow_id,
            idempotency_key=idempotency_key,
        )
        result_type = wf.workflow.result_type if isinstance(wf, BoundWorkflow) else wf.result_type
        return AsyncWorkflowHandle(self, handle.workflow_id, result_type)

    # -- flow control ----------------------------------------------------------------------

    async def debounce(
        self,
        key: str,
        period: timedelta | float,
        wf: Workflow[..., Any] | BoundWorkflow[Any] | str,
        /,
        *args: Any,
        max_wait: timedelta | float | None = None,
        **kwargs: Any,
    ) -> str:
        """`Engine.debounce` as a coroutine: the id the debounced run will have."""
        call = debounce.debounce_call(key, period, wf, args, kwargs, max_wait)
        answer = await self.update_with_start(
            debounce.debouncer.bind(key),
            debounce.DEBOUNCE_UPDATE,
            *call.update_args(),
            workflow_id=debounce.debouncer_id(key),
        )
        return str(answer)

    # -- operating runs ----------------------------------------------------------------------

    cancel = off_loop_twin(Engine.cancel)
    terminate = off_loop_twin(Engine.terminate)
    resume = off_loop_twin(Engine.resume, _async_handle, AsyncWorkflowHandle[Any])
    fork = off_loop_twin(Engine.fork, _async_handle, AsyncWorkflowHandle[Any])
    rewind = off_loop_twin(Engine.rewind, _async_handle, AsyncWorkflowHandle[Any])
    delete = off_loop_twin(Engine.delete)
    garbage_collect = off_loop_twin(Engine.garbage_collect)
    recover = off_loop_twin(Engine.recover)

    # No I/O: it registers the schedule on the engine; the cron loop fires on its thread.
    schedule = room_method("engine", Timing.schedule)

    claim_now = off_loop_twin(Engine.claim_now)

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """`Engine.wait_idle` off the loop (async steps keep running meanwhile)."""
        timeout = checked_wait(timeout, "wait_idle(timeout=...)")
        return await self.off_loop(self.engine.wait_idle, timeout)

    # -- waiting ----------------------------------------------------------------------------------

    async def wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow:
        """The run's row once it is terminal; `WorkflowTimeout` after `timeout` seconds.

        A waiter is a bare future per round and one timer, nothing more: a thousand
        waiting at once are objects the garbage collector walks at every full pass,
        and each pass holds the loop."""
        timeout = checked_wait(timeout, "result(timeout=...)")
        engine = self.engine
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        scheduler = engine.scheduler
        waiters = self._finish_waiters
        told = looked = False
        while True:
            # Listening before looking: a run that finishes in between is heard of.
            finished: asyncio.Future[bool] = loop.create_future()
            waiters.setdefault(workflow_id, set()).add(finished)
            try:
                # Lock-free looks: the scheduler's locks are contended, and waiting
                # for one holds the loop behind the GIL. A miss costs a store read.
                row = engine.kept_finished(workflow_id)
                if row is None and (
                    told
                    or looked
                    or not scheduler.peek_tracked(workflow_id)
                    # Finished here (maybe before this waiter listened), its row not
                    # answered from (SQLite): the store has it.
                    or scheduler.peek_finished(workflow_id) is not None
                ):
                    # Only a run that lives elsewhere is looked up at every round: one
                    # this engine runs says when it finishes. (A thousand waiters
                    # reading the store took its connections from the runs' commits.)
                    # Told it finished, but not in the cache yet: the store has it.
                    row = await self._read_row(workflow_id)
                if row is not None and row.status.is_terminal:
                    return row
                # A run this engine runs is heard of when it finishes: its waiter
                # looks again only rarely, in case a notification was lost. Rounds
                # are spread, so that a thousand waiters started together do not all
                # wake in one instant (each round holds the loop a little).
                rounds = engine.poll_interval * (TRACKED_ROUNDS if row is None else 1)
                wait = rounds * random.uniform(0.75, 1.25)
                if deadline is not None:
                    left = deadline - loop.time()
                    if left <= 0:
                        row = row or await self._read_row(workflow_id)
                        if row.status.is_terminal:
                            return row
                        why = await self.off_loop(why_waiting, self.engine.store, row)
                        raise still_running(row, timeout, why)
                    wait = min(wait, left)
                timer = loop.call_later(wait, _settle, finished, False)
                try:
                    told = await finished
                finally:
                    timer.cancel()
            finally:
                held = waiters.get(workflow_id)
                if held is not None:
                    held.discard(finished)
                    if not held:
                        del waiters[workflow_id]
            # A round that ran out without a word reads the store next: the run
            # may have finished or been cancelled elsewhere (the CLI, another
            # process), which this engine's cache never hears of.
            looked = not told

    async def _read_row(self, workflow_id: str) -> WorkflowRow:
        return await self.off_loop(admin.get_run, self.engine.store, workflow_id)

    def _heard_finished(self, workflow_id: str) -> None:
        """From any thread: a run finished; wake its waiters on the loop, if any.

        What is heard between two turns of the loop is handed over in one call: each
        wake-up of the loop from another thread costs it a wait for the GIL."""
        if workflow_id not in self._finish_waiters or self._loop is None:
            return
        self._heard.append(workflow_id)
        if not self._waking:
            self._waking = True
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                self._loop.call_soon_threadsafe(self._wake_finish_waiters)

    def _wake_finish_waiters(self) -> None:
        """On the loop: wake the waiters of the runs heard of, a few per iteration.

        A waiter woken runs in the next iteration, all of them in one go: waking
        hundreds that finished together at once held the loop (and the application's
        timers) for tens of milliseconds. The rest wait for the next iteration."""
        heard, waiters = self._heard, self._finish_waiters
        for _ in range(min(len(heard), WAKE_CHUNK)):
            for finished in waiters.get(heard.popleft(), ()):
                _settle(finished, True)
        if not heard:
            # Drained: an id heard from now on schedules a call of its own. One heard
            # between the look and the reset scheduled none; it is looked for again.
            self._waking = False
            if not heard:
                return
            self._waking = True
        asyncio.get_running_loop().call_soon(self._wake_finish_waiters)


def _settle(future: asyncio.Future[bool], told: bool) -> None:
    """End a waiter's round: `told` it finished, or its time ran out."""
    if not future.done():  # cancelled with its task, or settled already
        future.set_result(told)
