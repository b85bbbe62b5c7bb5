"""Carrying out one effect: what the runtime does for each kind of command.

`EffectRunner.carry_out()` either commits a completed record for the effect's
position and returns it, or returns a `Suspend` saying what the workflow waits
for (a deadline, a message, an event, another workflow). A suspended workflow's
generator is dropped; it is rebuilt by replay when it wakes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import hashlib
import inspect
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import attrs

from replaykit import serde
from replaykit.commands import (
    All,
    Call,
    CloseStream,
    Command,
    GetEvent,
    Now,
    Patch,
    Race,
    Random,
    Recv,
    Retry,
    Send,
    SetEvent,
    Start,
    Step,
    Transaction,
    Uuid,
    Wait,
    WriteStream,
    earliest_deadline,
    facts_of,
)
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    Cancelled,
    ControlSignal,
    PayloadTooLarge,
    RecordConflict,
    RunContinued,
    SerializationError,
    StoreUnavailable,
    UnknownWorkflowError,
    WorkflowDeadlineExceeded,
    WorkflowNotFound,
)
from replaykit.interpreter import Effect, StepContext, step_context_var
from replaykit.log import AllOutcome, Failure, Outcome, RaceOutcome, Record, Status, Value
from replaykit.otel import StepToken, Telemetry
from replaykit.runtime.clock import SystemClock
from replaykit.runtime.host import CancelScope, Host, Suspend, Wake
from replaykit.stores._checks import check_names
from replaykit.stores.base import EventWrite, OutgoingMessage, WorkflowRow

__all__ = [
    "RETRY_TOPIC",
    "Backoff",
    "CompositeRun",
    "EffectRunner",
    "WaitProbe",
    "is_async",
    "jitter_draw",
]

_NO_RETRY = Retry()
T = TypeVar("T")


@functools.lru_cache(maxsize=4096)
def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


def is_async(fn: Callable[..., Any]) -> bool:
    try:
        return _is_async(fn)
    except TypeError:  # unhashable callable
        return _is_async.__wrapped__(fn)


#: How long a timed-out async step body may take to end after it is cancelled (its
#: `finally` blocks, say) before the attempt is judged without it.
CANCEL_GRACE_SECONDS = 1.0


async def within_deadline(body: Awaitable[T], timeout: float, name: str) -> T:
    """Await `body` for at most `timeout` seconds; past that, the attempt timed out.

    replaykit judges the timeout, not the body: a body that swallows its
    cancellation and returns a value anyway has still timed out (asyncio's
    `wait_for` would return that value). It is cancelled and given a short
    grace to clean up; whatever it ends with then is ignored.
    """
    task = asyncio.ensure_future(body)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:  # the run was cancelled: so is its body
        task.cancel()
        raise
    if task in done:
        return task.result()
    task.cancel()
    # Its late outcome is dropped on purpose; retrieving it keeps asyncio quiet.
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
    raise TimeoutError(f"step {name!r} timed out after {timeout}s")


def _call_in_step_context(
    context: StepContext | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> Any:
    step_context_var.set(context)  # in a copied context: nothing to reset
    return fn(*args, **kwargs)


async def _cancel_the_rest() -> None:
    """Cancel every other task of the running loop and wait a grace period for them."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=CANCEL_GRACE_SECONDS)


def _submit_to_loop(
    body: Callable[[], Coroutine[Any, Any, Any]], loop: asyncio.AbstractEventLoop
) -> concurrent.futures.Future[Any]:
    """`asyncio.run_coroutine_threadsafe`, but the coroutine is made on the loop.

    A race's losing async step is cancelled, and an engine closes its loop, before
    the loop may have got to it: a coroutine made here and never started would then
    be garbage with a "never awaited" warning. Made on the loop, it starts at once.
    """
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def begin() -> None:
        if future.cancelled():
            return  # cancelled before the loop got to it: nothing to start
        task = loop.create_task(body())

        def settle(done: asyncio.Task[Any]) -> None:
            # The future stays PENDING until here (never RUNNING), so that a cancel
            # from another thread still reaches it and, through it, the task.
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                if done.cancelled():
                    future.cancel()
                elif (error := done.exception()) is not None:
                    future.set_exception(error)
                else:
                    future.set_result(done.result())

        task.add_done_callback(settle)
        future.add_done_callback(lambda f: f.cancelled() and loop.call_soon_threadsafe(task.cancel))

    loop.call_soon_threadsafe(begin)
    return future


async def _in_step_context(
    context: StepContext | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> Any:
    # Runs as a task of the loop, which has a context of its own: set it there.
    step_context_var.set(context)
    return await fn(*args, **kwargs)


@attrs.frozen
class WaitProbe:
    """Checks the store for what a suspended run waits on.

    Holds ids and commands only, not the run's row or generator: a suspended
    run should cost next to nothing while it waits.
    """

    runner: EffectRunner = attrs.field(eq=False, repr=False)
    workflow_id: str
    name: str
    position: int
    commands: tuple[Command, ...]
    #: The child run each `Call` waits on (None: the default id at `position`).
    targets: tuple[str | None, ...] = ()

    def __call__(self) -> bool:
        row = WorkflowRow(self.workflow_id, self.name, Status.PENDING)
        targets = self.targets or (None,) * len(self.commands)
        return any(
            self.runner.check_ready(row, self.position, command, None, target=target) is not None
            for command, target in zip(self.commands, targets, strict=True)
        )


@attrs.frozen
class _Ready:
    """A waiting command that can complete now."""

    outcome: Outcome
    consume: int | None = None
    trace_context: str | None = None  # the consumed message's sender's


@attrs.frozen
class _Attempt:
    """Call the step's body once (the driver sends back its value or throws its error)."""

    context: StepContext


@attrs.frozen
class _Backoff:
    """Wait until `due` before the next attempt; `attempts` have been made, the first
    of them at `started_at`."""

    attempts: int
    due: datetime
    started_at: datetime


@attrs.frozen
class Backoff:
    """A step that failed and waits for its next attempt: the run suspends until `due`.

    What a durable driver (`run_attempts`) returns instead of waiting on a thread.
    `record_backoff` records it, so that a restart keeps the count and the due time.
    """

    attempts: int
    due: datetime
    started_at: datetime


#: Topic prefix of the inbox entries in which earlier builds kept each back-off of a
#: retried step after its first (before the pending record held the count); read only
#: to resume runs that were backing off across the upgrade (`settle_backoff`).
RETRY_TOPIC = "replaykit.retry:"


def jitter_draw(workflow_id: str, position: int, attempt: int) -> float:
    """A number in [0, 1) fixed by the run, the position and the attempt.

    Jitter must spread runs that fail together, yet every engine (and every
    replay, and every test) must compute the same wait for one attempt.
    """
    digest = hashlib.blake2b(
        f"{workflow_id}\0{position}\0{attempt}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") / 2**64


def _answer(
    steps: Generator[_Attempt | _Backoff, Any, tuple[Outcome, int]],
    reply: Any,
    error: Exception | None,
) -> _Attempt | _Backoff | tuple[Outcome, int]:
    """Give the attempts generator what its driver found: its next request, or its result."""
    try:
        return steps.throw(error) if error is not None else steps.send(reply)
    except StopIteration as stop:
        result: tuple[Outcome, int] = stop.value
        return result


def _instant(when: datetime | None) -> str:
    """One spelling per instant, whatever time zone a store reads it back in."""
    return "" if when is None else when.astimezone(UTC).isoformat()


def _topic(topic: str | None) -> str:
    return topic or ""


class EffectRunner:
    """Carries out effects for one host. Stateless apart from the host it serves."""

    def __init__(
        self,
        host: Host,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.host = host
        # Spans and metrics of the step attempts that really run (never of replays).
        self.telemetry = telemetry or Telemetry(enabled=False)
        self.store = host.store
        self.clock = host.clock
        self.entropy = host.entropy
        # A loop given here is the application's (AsyncEngine's): async step bodies
        # run on it, so what belongs to that loop works inside them; it is never
        # stopped by us. Without one, a private loop starts on first use.
        self._given_loop = loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()

    # -- entry point -------------------------------------------------------------

    def carry_out(
        self,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None = None,
    ) -> Record | Suspend:
        """Carry out `effect` and record it, or say what it waits for. `steps_done` are
        what a composite's step children gave before it suspended (`Suspend.steps_done`)."""
        command = effect.command
        if isinstance(command, Step):
            return self._step(row, effect, command)
        if isinstance(command, Transaction):
            return self._transaction(row, effect, command)
        if isinstance(command, (Race, All)):
            return CompositeRun(self, row, effect, command, steps_done).run()
        if isinstance(command, Send):
            return self._send(row, effect, command)
        if isinstance(command, SetEvent):
            data = self._encode(command.value, f"the value of event {command.key!r}", row, effect)
            if isinstance(data, Failure):
                return self.commit(row, effect, data)
            return self.commit(row, effect, Value(None), event=EventWrite(command.key, data))
        if isinstance(command, (WriteStream, CloseStream)):
            return self._stream(row, effect, command)
        facts = facts_of(command)
        if facts.waits:
            return self._waiting(row, effect, command)
        if facts.instant:
            return self.commit(row, effect, self.instant_outcome(row, effect.position, command))
        raise AssertionError(f"the command table has no way to carry out {command.describe()}")

    def instant_outcome(self, row: WorkflowRow, position: int, command: Command) -> Outcome:
        """Outcomes that need no waiting: Now, Random, Uuid, Patch, Start."""
        if isinstance(command, Now):
            return Value(self.clock.now().isoformat())
        if isinstance(command, Random):
            return Value(self.entropy(row.workflow_id, position, command.kind).random())
        if isinstance(command, Uuid):
            source = self.entropy(row.workflow_id, position, command.kind)
            return Value(str(uuid.UUID(int=source.getrandbits(128), version=4)))
        if isinstance(command, Patch):
            return Value(True)
        if isinstance(command, Start):
            return self._start_child(row, position, command)
        raise TypeError(f"no instant outcome for {command.describe()}")

    # -- committing ----------------------------------------------------------------

    def commit(
        self,
        row: WorkflowRow,
        effect: Effect,
        outcome: Outcome | None,
        *,
        started_at: datetime | None = None,
        attempts: int = 1,
        consume: int | Sequence[int] | None = None,
        send: OutgoingMessage | None = None,
        event: EventWrite | None = None,
        wake_at: datetime | None = None,
    ) -> Record:
        record = self.record_for(
            effect, outcome, started_at=started_at, attempts=attempts, wake_at=wake_at
        )
        written = self.host.records.write(
            row, record, consume=consume, send=send, event=event, wake_at=wake_at
        )
        if self.telemetry.tracing:
            self.telemetry.executed(row.workflow_id, effect.position)
        return written

    def record_for(
        self,
        effect: Effect,
        outcome: Outcome | None,
        *,
        started_at: datetime | None = None,
        attempts: int = 1,
        wake_at: datetime | None = None,
    ) -> Record:
        """The record that commits `outcome` at the effect's position."""
        now = self.clock.now()
        pending = effect.pending
        return Record(
            position=effect.position,
            kind=effect.command.kind,
            name=effect.command.name,
            outcome=outcome,
            digest=effect.digest,
            call_site=effect.call_site,
            started_at=started_at or (pending.started_at if pending else None) or now,
            completed_at=now if outcome is not None else None,
            wake_at=wake_at or (pending.wake_at if pending else None),
            attempts=attempts,
        )

    def _encode(self, value: Any, what: str, row: WorkflowRow, effect: Effect) -> Any:
        try:
            return serde.encode(
                value,
                what=f"{what} in workflow {row.name!r} (id {row.workflow_id!r}) at position "
                f"{effect.position}",
                max_bytes=self.host.max_payload_bytes,
            )
        except (SerializationError, PayloadTooLarge) as exc:
            return Failure(serde.encode_error(exc))

    # -- streams ---------------------------------------------------------------------

    def _stream(
        self, row: WorkflowRow, effect: Effect, command: WriteStream | CloseStream
    ) -> Record:
        """A stream's value (or its close) is a record of its own kind, named by the key:
        its position makes it exactly once, and the store tells readers ("stream", id)."""
        # The record's name is the key, which the stores refuse as they refuse an event
        # key; said first with the key's own label. A ValueError fails the run.
        check_names(row.workflow_id, position=effect.position, stream_key=command.key)
        if isinstance(command, CloseStream):
            return self.commit(row, effect, Value(None))
        data = self._encode(command.value, f"the value of stream {command.key!r}", row, effect)
        return self.commit(row, effect, data if isinstance(data, Failure) else Value(data))

    # -- steps -----------------------------------------------------------------------

    def _step(self, row: WorkflowRow, effect: Effect, command: Step[Any]) -> Record:
        pending = effect.pending
        started = pending.started_at if pending and pending.started_at else self.clock.now()
        outcome, attempts = self.run_step(row, effect.position, command, pending=pending)
        return self.commit(row, effect, outcome, started_at=started, attempts=attempts)

    def step_fn(self, command: Step[Any]) -> Callable[..., Any]:
        """The body a step runs: the command's own, unless the host overrides it."""
        return self.host.step_overrides.get(command.name, command.fn)

    def _attempts(
        self,
        row: WorkflowRow,
        position: int,
        command: Step[Any],
        scope: CancelScope | None,
        pending: Record | None = None,
        child_path: tuple[int, ...] = (),
    ) -> Generator[_Attempt | _Backoff, Any, tuple[Outcome, int]]:
        """A step's retry policy, as a generator of what to do next: call the body
        (`_Attempt`, answered with its value or its exception) or wait until an
        instant (`_Backoff`). `run_attempts` and `run_step_async` are its drivers,
        like psycopg's blocking and asyncio waits over one generator.

        `pending` is the step's pending record when earlier attempts were made
        (before a back-off, maybe in another process): the count and the due
        time go on from it, and `Retry.timeout` counts from its start."""
        retry = command.retry or _NO_RETRY
        made = pending.attempts if pending is not None else 0
        due = pending.wake_at if pending is not None else None
        first_start = (
            pending.started_at if pending is not None and pending.started_at else self.clock.now()
        )
        deadline = None if retry.timeout is None else first_start + timedelta(seconds=retry.timeout)
        last_error: Exception | None = None
        while True:
            if due is not None and not self.clock.passed(due):
                yield _Backoff(made, due, first_start)
            self.host.check_cancelled(row.workflow_id)
            if scope is not None and scope.cancelled:
                raise Cancelled(f"step {command.name!r} of workflow id {row.workflow_id!r}")
            if made and deadline is not None and self.clock.passed(deadline):
                return self._gave_up(row, position, command, made, deadline, due, last_error)
            attempt = made + 1
            context = StepContext(
                row.workflow_id, row.name, command.name, position, attempt, child_path
            )
            try:
                value = yield _Attempt(context)
            except ControlSignal:
                raise
            except Exception as exc:
                made = attempt
                if not retry.should_retry(exc, made):
                    return Failure(serde.encode_error(exc)), made
                draw = jitter_draw(row.workflow_id, position, made + 1) if retry.jitter else 0.0
                due = self.clock.now() + timedelta(seconds=retry.delay_before(made + 1, draw))
                if deadline is not None and due > deadline:
                    return self._gave_up(row, position, command, made, deadline, due, exc)
                last_error = exc
                self.host.logger.info(
                    "step %r of workflow %r (id %r) failed on attempt %d (%s); attempt %d is "
                    "due at %s",
                    command.name,
                    row.name,
                    row.workflow_id,
                    made,
                    exc,
                    made + 1,
                    due.isoformat(),
                )
                continue
            try:
                data = serde.encode(
                    value,
                    what=f"the result of step {command.name!r} in workflow {row.name!r} "
                    f"(id {row.workflow_id!r}) at position {position}",
                    max_bytes=self.host.max_payload_bytes,
                )
            except (SerializationError, PayloadTooLarge) as exc:
                return Failure(serde.encode_error(exc)), attempt
            return Value(data), attempt

    def _gave_up(
        self,
        row: WorkflowRow,
        position: int,
        command: Step[Any],
        made: int,
        deadline: datetime,
        due: datetime | None,
        last_error: Exception | None,
    ) -> tuple[Outcome, int]:
        """The failure a step records when its `Retry(timeout=...)` ends its retries."""
        retry = command.retry or _NO_RETRY
        next_due = "" if due is None else f", before attempt {made + 1} (due at {due.isoformat()})"
        last = (
            ""
            if last_error is None
            else f"; the last attempt failed with {type(last_error).__name__}: {last_error}"
        )
        error = TimeoutError(
            f"step {command.name!r} of workflow {row.name!r} (id {row.workflow_id!r}) at "
            f"position {position} gave up after {made} attempt(s): its Retry(timeout="
            f"{retry.timeout:g}s) ended at {deadline.isoformat()}{next_due}{last}. Raise the "
            "timeout or max_attempts, or catch TimeoutError around the step"
        )
        error.__cause__ = last_error
        return Failure(serde.encode_error(error)), made

    def run_step(
        self,
        row: WorkflowRow,
        position: int,
        command: Step[Any],
        scope: CancelScope | None = None,
        fn: Callable[..., Any] | None = None,
        *,
        pending: Record | None = None,
        child_path: tuple[int, ...] = (),
    ) -> tuple[Outcome, int]:
        """Run a step with its retries, blocking through its back-offs (a composite's
        step children, which hold their thread anyway); the outcome and attempts made."""
        result = self.run_attempts(
            row, position, command, scope, fn, pending=pending, child_path=child_path
        )
        assert not isinstance(result, Backoff)
        return result

    def run_attempts(
        self,
        row: WorkflowRow,
        position: int,
        command: Step[Any],
        scope: CancelScope | None = None,
        fn: Callable[..., Any] | None = None,
        *,
        pending: Record | None = None,
        durable: bool = False,
        child_path: tuple[int, ...] = (),
    ) -> tuple[Outcome, int] | Backoff:
        """Run a step's attempts on this thread. A back-off is waited out here, or, when
        `durable`, handed back as a `Backoff`: the caller suspends the run until it is due
        and holds no thread meanwhile."""
        fn = fn or self.step_fn(command)
        scope = scope or self.host.scope_of(row.workflow_id)
        steps = self._attempts(row, position, command, scope, pending, child_path)
        request = next(steps)
        while True:
            error: Exception | None
            try:
                if isinstance(request, _Backoff):
                    if durable:
                        steps.close()
                        return Backoff(request.attempts, request.due, request.started_at)
                    self._wait_until(request.due, scope)
                    reply = None
                else:
                    token = self._step_began(request.context)
                    try:
                        reply = self._call(
                            fn,
                            command.args,
                            command.kwargs,
                            command.timeout,
                            command.name,
                            scope,
                            context=request.context,
                            preemptible=command.preemptible,
                        )
                    except BaseException as exc:
                        if token is not None:
                            self.telemetry.end_step(token, exc)
                        raise
                    if token is not None:
                        self.telemetry.end_step(token, None)
            except ControlSignal:
                steps.close()
                raise
            except Exception as exc:
                reply, error = None, exc
            else:
                error = None
            answer = _answer(steps, reply, error)
            if not isinstance(answer, (_Attempt, _Backoff)):
                return answer
            request = answer

    async def run_step_async(
        self,
        row: WorkflowRow,
        position: int,
        command: Step[Any],
        scope: CancelScope | None,
        fn: Callable[..., Any],
        pending: Record | None = None,
    ) -> tuple[Outcome, int] | Backoff:
        """Run an async step's attempts on the event loop: no thread waits for it, and a
        back-off is handed back as a `Backoff` (the run suspends until it is due)."""
        steps = self._attempts(row, position, command, scope, pending)
        request = next(steps)
        while True:
            error: Exception | None
            try:
                if isinstance(request, _Backoff):
                    steps.close()
                    return Backoff(request.attempts, request.due, request.started_at)
                # Set in this task only: the body, and the tasks it creates, see it.
                token = step_context_var.set(request.context)
                traced = self._step_began(request.context)
                try:
                    body = fn(*command.args, **command.kwargs)
                    if command.timeout is None:
                        reply = await body
                    else:
                        reply = await within_deadline(body, command.timeout, command.name)
                except BaseException as exc:
                    if traced is not None:
                        self.telemetry.end_step(traced, exc)
                    raise
                else:
                    if traced is not None:
                        self.telemetry.end_step(traced, None)
                finally:
                    step_context_var.reset(token)
            except ControlSignal:
                steps.close()
                raise
            except Exception as exc:
                reply, error = None, exc
            else:
                error = None
            answer = _answer(steps, reply, error)
            if not isinstance(answer, (_Attempt, _Backoff)):
                return answer
            request = answer

    def _step_began(self, context: StepContext) -> StepToken | None:
        """An attempt's body is about to run: its span and clock start (None: not observed)."""
        telemetry = self.telemetry
        if not telemetry.active:
            return None
        return telemetry.start_step(
            context.workflow_id,
            context.workflow_name,
            context.step_name,
            context.position,
            context.attempt,
        )

    def _wait_until(self, due: datetime, scope: CancelScope | None) -> None:
        """A back-off waited out on this thread: on the wall clock, cut short when the
        attempt's scope is cancelled (the run cancelled, the engine closing)."""
        seconds = (due - self.clock.now()).total_seconds()
        if scope is None or not isinstance(self.clock, SystemClock):
            self.clock.sleep(max(seconds, 0.0))  # virtual time passes at once anyway
            return
        woken = threading.Event()
        scope.on_cancel(woken.set)
        try:
            woken.wait(max(seconds, 0.0))
        finally:
            scope.discard(woken.set)

    # -- durable back-offs ------------------------------------------------------------

    def record_backoff(
        self, row: WorkflowRow, effect: Effect, backoff: Backoff
    ) -> Record | Suspend:
        """Record that a step waits for its next attempt, and suspend the run until then.

        The step's pending record is the back-off: the attempts made, the instant
        the next is due (`wake_at`, which also moves the run's deadline) and the
        first attempt's start. The first back-off inserts it; each later one
        writes its greater count over it (`Store.record` writes a pending record
        over a pending one that has fewer attempts, in one transaction with the
        run's deadline). Nothing is written when the store already holds this
        back-off (a run rebuilt while it waits)."""
        pending = effect.pending
        if (
            pending is not None
            and pending.outcome is None
            and (pending.attempts, pending.wake_at) == (backoff.attempts, backoff.due)
        ):
            return Suspend(backoff.due, (), None, pending)
        written = self.record_for(
            effect,
            None,
            started_at=backoff.started_at,
            attempts=backoff.attempts,
            wake_at=backoff.due,
        )
        stored = self.host.records.write(row, written, wake_at=backoff.due)
        if stored.outcome is not None:
            return stored  # another writer completed the step meanwhile
        # The store keeps a count higher than ours (a stale writer of this run):
        # wait for its due time, and the replay then goes on from its count.
        return Suspend(stored.wake_at or backoff.due, (), None, stored)

    # -- back-offs that earlier builds kept in the inbox --------------------------------

    def settle_backoff(self, workflow_id: str, records: list[Record]) -> list[Record]:
        """`records` (a log just read) with a retried step's pending record brought up
        to date from the inbox entries that earlier builds of replaykit wrote for
        each back-off after the first (topic `replaykit.retry:<position>:<attempts>`,
        payload: the due time and the first attempt's start).

        This version writes no such entry: its back-offs are the pending record
        itself (`record_backoff`). A run that was backing off when the engine was
        upgraded still has them, and without them would repeat the attempts they
        count. So they are read once: the count they give is written over the
        pending record (with the run's deadline), and from then on the record
        counts past every entry. Costs one store read where a run is rebuilt from
        a log ending in a step's pending record; called where the log is read,
        never on an event loop. An entry of another generation of the run (same
        position, another first start) is not this one's."""
        if not records:
            return records
        pending = records[-1]
        if pending.outcome is not None or pending.kind != Step.kind:
            return records
        since = _instant(pending.started_at)
        made, due = pending.attempts, pending.wake_at
        while True:
            topic = f"{RETRY_TOPIC}{pending.position}:{made + 1}"
            found = self.store.peek_message(workflow_id, topic)
            payload = found.payload if found is not None else None
            if not isinstance(payload, dict) or payload.get("since") != since:
                break
            made, due = made + 1, datetime.fromisoformat(str(payload["due"]))
        if made == pending.attempts:
            return records
        settled = self.store.record(
            workflow_id,
            attrs.evolve(pending, attempts=made, wake_at=due),
            executor_id=self.host.executor_id,
            wake_at=due,
        )
        return [*records[:-1], settled]

    def _call(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        timeout: float | None,
        name: str,
        scope: CancelScope | None = None,
        *,
        context: StepContext | None = None,
        preemptible: bool = False,
    ) -> Any:
        if is_async(fn):

            def body() -> Coroutine[Any, Any, Any]:
                coro = _in_step_context(context, fn, args, kwargs)
                return within_deadline(coro, timeout, name) if timeout is not None else coro

            future = _submit_to_loop(body, self.async_loop())
            if scope is not None:
                scope.on_cancel(future.cancel)
            try:
                return future.result()
            except concurrent.futures.CancelledError:
                raise Cancelled(f"step {name!r} was cancelled") from None
            finally:
                if scope is not None:
                    scope.discard(future.cancel)
        if timeout is None and not (preemptible and scope is not None):
            token = step_context_var.set(context)
            try:
                return fn(*args, **kwargs)
            finally:
                step_context_var.reset(token)
        # On a thread of the step pool, with this thread's context (the step's
        # included): Python cannot stop a thread, so this one may walk away from it.
        copied = contextvars.copy_context()
        future = self.host.step_pool.submit(
            copied.run, _call_in_step_context, context, fn, args, kwargs
        )
        ended = threading.Event()
        future.add_done_callback(lambda _f: ended.set())
        if preemptible and scope is not None:
            scope.on_cancel(ended.set)
        try:
            ended.wait(timeout)
        finally:
            if preemptible and scope is not None:
                scope.discard(ended.set)
        if future.done():
            return future.result()
        future.cancel()
        if preemptible and scope is not None and scope.cancelled:
            # The run was cancelled (maybe elsewhere): abandoned, its outcome dropped.
            raise Cancelled(f"step {name!r} was preempted: its run was cancelled")
        raise TimeoutError(f"step {name!r} timed out after {timeout}s")

    def async_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop async step bodies run on (the given one, else started on first use)."""
        if self._given_loop is not None:
            if self._given_loop.is_closed():
                raise RuntimeError(
                    "the event loop this engine runs async steps on is closed; close the "
                    "AsyncEngine (async with AsyncEngine(...)) before its loop ends"
                )
            return self._given_loop
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="replaykit-async-steps", daemon=True
                )
                thread.start()
                self._loop, self._loop_thread = loop, thread
            return self._loop

    def close(self) -> None:
        with self._loop_lock:
            loop, self._loop = self._loop, None
            thread, self._loop_thread = self._loop_thread, None
        if loop is not None and thread is not None:
            # What still runs there is a race's loser or an abandoned step: cancel
            # it and let it unwind, rather than destroy it pending with the loop.
            drained = asyncio.run_coroutine_threadsafe(_cancel_the_rest(), loop)
            with contextlib.suppress(Exception):
                drained.result(timeout=CANCEL_GRACE_SECONDS + 1)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            if not thread.is_alive():
                loop.close()

    def _transaction(self, row: WorkflowRow, effect: Effect, command: Transaction) -> Record:
        started = self.clock.now()
        fn = self.host.step_overrides.get(command.name, command.fn)

        def body(conn: Any) -> Record:
            value = fn(conn, *command.args)
            data = serde.encode(
                value,
                what=f"the result of transaction {command.name!r} in workflow {row.name!r} "
                f"(id {row.workflow_id!r}) at position {effect.position}",
                max_bytes=self.host.max_payload_bytes,
            )
            return Record(
                effect.position,
                command.kind,
                command.name,
                Value(data),
                effect.digest,
                effect.call_site,
                started,
                self.clock.now(),
            )

        self.host.check_cancelled(row.workflow_id)
        try:
            return self.host.records.through(
                row,
                effect.position,
                lambda: self.store.record_transaction(
                    row.workflow_id, effect.position, body, executor_id=self.host.executor_id
                ),
            )
        except (ControlSignal, RecordConflict, StoreUnavailable):
            raise
        except Exception as exc:
            # The transaction rolled back; its failure is the outcome.
            return self.commit(row, effect, Failure(serde.encode_error(exc)), started_at=started)

    def _send(self, row: WorkflowRow, effect: Effect, command: Send) -> Record:
        data = self._encode(command.message, "the message", row, effect)
        if isinstance(data, Failure):
            return self.commit(row, effect, data)
        if self.store.get_workflow(command.workflow_id) is None:
            error = WorkflowNotFound(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {effect.position}: "
                f"cannot send to {command.workflow_id!r}: no such workflow run"
            )
            return self.commit(row, effect, Failure(serde.encode_error(error)))
        key = command.idempotency_key
        if key is None:
            message = OutgoingMessage(
                command.workflow_id,
                _topic(command.topic),
                data,
                # One delivery per position, even if this commit is retried.
                idempotency_key=f"{row.workflow_id}:{effect.position}",
                trace_context=self.telemetry.context_of(row.workflow_id),
            )
            return self.commit(row, effect, Value(None), send=message)
        try:
            check_names(command.workflow_id, idempotency_key=key)
        except ValueError as exc:
            refused = ValueError(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {effect.position}: "
                f"Send(idempotency_key=...) refused: {exc}. Use a shorter key, such as a "
                "hash of the long one"
            )
            return self.commit(row, effect, Failure(serde.encode_error(refused)))
        # The user's key is the receiving run's, shared with `engine.send`: whoever
        # uses it first delivers. Only the store can tell, in the commit itself,
        # so it records False in place of True when the key was taken.
        message = OutgoingMessage(
            command.workflow_id,
            _topic(command.topic),
            data,
            idempotency_key=key,
            trace_context=self.telemetry.context_of(row.workflow_id),
            if_duplicate=Value(False),
        )
        return self.commit(row, effect, Value(True), send=message)

    # -- child workflows ----------------------------------------------------------------

    def child_id(
        self, row: WorkflowRow, position: int, command: Start | Call, path: Sequence[int] = ()
    ) -> str:
        """The child run's id: its own `workflow_id`, else `parent:position`, and inside
        a composite `parent:position.i.j` (the child's argument indexes, outermost first)."""
        if command.workflow_id:
            return command.workflow_id
        where = ".".join(map(str, (position, *path)))
        return f"{row.workflow_id}:{where}"

    def _start_child(
        self, row: WorkflowRow, position: int, command: Start | Call, child_id: str | None = None
    ) -> Outcome:
        child_id = child_id or self.child_id(row, position, command)
        try:
            self.host.create_run(
                command.workflow,
                tuple(command.args),
                dict(command.kwargs),
                workflow_id=child_id,
                parent_id=row.workflow_id,
                queue=command.queue,
                # The child inherits what remains of this run's deadline.
                timeout=command.timeout,
                deadline=earliest_deadline(command.deadline, row.deadline),
            )
        except (ValueError, TypeError, UnknownWorkflowError) as exc:
            # Failures are outcomes, for child starts too: a conflicting id
            # (WorkflowIdConflict), a dedup id in use, arguments that do not encode or are
            # too large, a name the stores refuse. The parent gets the error at its yield,
            # recorded, and may catch it; a replay raises the same.
            return Failure(serde.encode_error(exc))
        return Value(child_id)

    # -- waiting commands -----------------------------------------------------------------

    def deadline(self, command: Command, started: datetime) -> datetime | None:
        seconds = facts_of(command).deadline_seconds(command)
        return None if seconds is None else started + timedelta(seconds=seconds)

    def wakes_for(
        self, row: WorkflowRow, position: int, command: Command, target: str | None = None
    ) -> tuple[Wake, ...]:
        kind = facts_of(command).wakes_on
        if kind is None:
            return ()
        if isinstance(command, Recv):
            return ((kind, row.workflow_id),)
        if isinstance(command, GetEvent):
            return ((kind, command.workflow_id),)
        if isinstance(command, Wait):
            return ((kind, command.workflow_id),)
        if isinstance(command, Call):
            return ((kind, target or self.child_id(row, position, command)),)
        raise AssertionError(f"the command table says {command.describe()} wakes on {kind!r}")

    def check_ready(
        self,
        row: WorkflowRow,
        position: int,
        command: Command,
        deadline: datetime | None,
        *,
        target: str | None = None,
    ) -> _Ready | None:
        """Can this waiting command complete now? (Checks the store, never blocks.)

        `target` is the child run a `Call` waits on when it is not the default
        id at `position` (a `Call` inside a composite)."""
        if isinstance(command, Recv):
            message = self.store.peek_message(row.workflow_id, _topic(command.topic))
            if message is not None:
                return _Ready(
                    Value(message.payload),
                    consume=message.message_id,
                    trace_context=message.trace_context,
                )
        elif isinstance(command, GetEvent):
            found, value = self.store.get_event(command.workflow_id, command.key)
            if found:
                return _Ready(Value(value))
        elif isinstance(command, (Wait, Call)):
            if isinstance(command, Wait):
                target = command.workflow_id
            elif target is None:
                target = self.child_id(row, position, command)
            finished = self._finished_outcome(row, position, target)
            if finished is not None:
                return _Ready(finished)
        if deadline is not None and self.clock.passed(deadline):
            if isinstance(command, Wait):
                error = TimeoutError(
                    f"Wait({command.workflow_id!r}) in workflow {row.name!r} "
                    f"(id {row.workflow_id!r}) at position {position} timed out after "
                    f"{command.timeout}s"
                )
                return _Ready(Failure(serde.encode_error(error, with_traceback=False)))
            return _Ready(Value(None))
        return None

    def _finished_outcome(self, row: WorkflowRow, position: int, target: str) -> Outcome | None:
        child = self.store.get_workflow(target)
        if child is None:
            error: Exception = WorkflowNotFound(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {position} waits "
                f"for {target!r}, but no such workflow run exists"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        if child.status is Status.SUCCESS or child.status is Status.ERROR:
            return child.result or Value(None)
        if child.status is Status.CANCELLED and WorkflowDeadlineExceeded.says_timed_out(
            child.error
        ):
            error = WorkflowDeadlineExceeded(
                f"workflow {child.name!r} (id {target!r}), awaited by {row.name!r} "
                f"(id {row.workflow_id!r}) at position {position}, was cancelled: it {child.error}"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        if child.status is Status.CONTINUED:
            # An archived generation: it will never finish; the run goes on as its live id.
            error = RunContinued(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {position} waits "
                f"for {target!r}, an earlier generation of run {child.continued_as!r}, which "
                f"continued as new; wait for {child.continued_as!r} instead",
                continued_as=child.continued_as,
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        if child.status is Status.CANCELLED:
            error = AwaitedWorkflowCancelled(
                f"workflow {child.name!r} (id {target!r}), awaited by {row.name!r} "
                f"(id {row.workflow_id!r}) at position {position}, was cancelled"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        return None

    def _waiting(self, row: WorkflowRow, effect: Effect, command: Command) -> Record | Suspend:
        if isinstance(command, Call) and effect.pending is None:
            started = self._start_child(row, effect.position, command)
            if isinstance(started, Failure):
                return self.commit(row, effect, started)
        now = self.clock.now()
        pending = effect.pending
        started_at = pending.started_at if pending and pending.started_at else now
        deadline = pending.wake_at if pending else self.deadline(command, started_at)
        ready = self.check_ready(row, effect.position, command, deadline)
        if ready is not None:
            taken = self.commit(
                row, effect, ready.outcome, started_at=started_at, consume=ready.consume
            )
            if ready.trace_context is not None and self.telemetry.tracing:
                self.telemetry.link(row.workflow_id, ready.trace_context)
            return taken
        if (
            pending is None
            and deadline is not None
            and facts_of(command).wakes_on is None
            and self.host.jump_to(row.workflow_id, effect.position, deadline)
        ):
            # Only time to wait for, and an autojumping clock alone with this warm run
            # has jumped over it: the wait is over before it began, so its start need
            # not be recorded apart (one commit, not two, for a Sleep on virtual time).
            ready = self.check_ready(row, effect.position, command, deadline)
            if ready is not None:
                return self.commit(row, effect, ready.outcome, started_at=started_at)
        if pending is None:
            # Record the start before suspending: the deadline survives a crash
            # or a deploy, and the next replay knows the code up to this yield
            # already ran (context().is_replaying stays true through it).
            pending = self.commit(row, effect, None, started_at=started_at, wake_at=deadline)
            if pending.outcome is not None:
                return pending
        return Suspend(
            deadline,
            self.wakes_for(row, effect.position, command),
            self.probe(row, effect.position, (command,)),
            pending,
        )

    def probe(
        self,
        row: WorkflowRow,
        position: int,
        commands: Sequence[Command],
        targets: Sequence[str | None] = (),
    ) -> WaitProbe | None:
        """What the poller may call to see if a suspended run's wait is over (None: only time)."""
        every = list(zip(commands, targets or [None] * len(commands), strict=True))
        waiting = [(c, t) for c, t in every if facts_of(c).wakes_on is not None]
        if not waiting:
            return None
        return WaitProbe(
            self,
            row.workflow_id,
            row.name,
            position,
            tuple(c for c, _ in waiting),
            tuple(t for _, t in waiting) if targets else (),
        )

    # -- Race and All ----------------------------------------------------------------------


@attrs.define(eq=False)
class _Node:
    """One command of a composite tree: the root `Race`/`All`, an inner one, or a leaf."""

    path: tuple[int, ...]
    command: Command
    parent: _Node | None
    children: list[_Node] = attrs.field(factory=list)
    #: Leaves: the instant it times out, counted from the outer composite's start.
    deadline: datetime | None = None
    #: `Call` and `Start` leaves: the child run's id.
    target: str | None = None
    #: Composites: cancels the steps below it once it is decided.
    scope: CancelScope | None = None

    @property
    def is_composite(self) -> bool:
        return isinstance(self.command, (Race, All))

    def leaves(self) -> list[_Node]:
        if not self.is_composite:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]


class CompositeRun:
    """One attempt at a `Race` or an `All`, composites nested in it included.

    The whole tree is decided in this attempt and recorded once, at the outer
    composite's position. Every deadline below counts from the outer record's
    `started_at`, so a restart keeps them. Step leaves run concurrently on the
    step pool while this thread watches the waiting leaves. A tree with no step
    leaves suspends like a single wait (no thread held): its partial readiness
    is dropped (nothing is consumed before the commit) and looked at again on
    wake-up. A tree with step leaves holds its thread until it is decided.

    An inner composite, once decided, stays decided for the attempt; the steps
    below it that lost are cancelled then, and its waiting leaves are not looked
    at again (a losing inner `Recv` takes no message). The record consumes the
    messages of the subtrees whose outcomes it holds, nothing else; two `Recv`
    leaves never take the same message. After the record committed, every
    `Call` or `Start` leaf whose outcome the record does not hold (a loser, or a
    `Call` still running when a fail-fast `All` failed) has its child run cancelled.
    """

    def __init__(
        self,
        runner: EffectRunner,
        row: WorkflowRow,
        effect: Effect,
        command: Race | All,
        steps_done: Mapping[tuple[int, ...], Outcome] | None = None,
    ):
        self.runner = runner
        self.host = runner.host
        self.row = row
        self.effect = effect
        self.command = command
        # Losing children are cancelled through the scopes; so is everything
        # when the run itself is cancelled.
        self.scope = CancelScope(self.host.scope_of(row.workflow_id))
        self.changed = threading.Event()
        self.scope.on_cancel(self.changed.set)
        self.root = self._build((), command, None, self.scope)
        self.leaves = self.root.leaves()
        self.outcomes: dict[tuple[int, ...], Outcome] = {}
        step_paths = {leaf.path for leaf in self.leaves if isinstance(leaf.command, Step)}
        for path, outcome in (steps_done or {}).items():
            if path in step_paths:  # an attempt before this one ran it: not again
                self.outcomes[path] = outcome
        #: message id -> the leaf that took it (not consumed until the record commits).
        self.taken: dict[int, tuple[int, ...]] = {}
        #: composites decided so far: path -> (recorded value, whether it failed).
        self.decided: dict[tuple[int, ...], tuple[Outcome, bool]] = {}
        self.winners: dict[tuple[int, ...], int] = {}

    def _build(
        self,
        path: tuple[int, ...],
        command: Command,
        parent: _Node | None,
        scope: CancelScope | None = None,
    ) -> _Node:
        node = _Node(path, command, parent)
        if isinstance(command, (Race, All)):
            node.scope = scope or CancelScope(parent.scope if parent else None)
            node.children = [
                self._build((*path, index), child, node)
                for index, child in enumerate(command.children)
            ]
        elif isinstance(command, (Start, Call)):
            node.target = self._child_id(command, path)
        return node

    def _child_id(self, command: Start | Call, path: tuple[int, ...]) -> str:
        runner, row, position = self.runner, self.row, self.effect.position
        child_id = runner.child_id(row, position, command, path)
        if command.workflow_id or self.effect.pending is None:
            return child_id
        # A composite recorded as started before child ids held the child's
        # place in the tree used the composite's own `parent:position`; keep
        # waiting on that child rather than starting a second one.
        legacy = runner.child_id(row, position, command)
        if runner.store.get_workflow(child_id) is None:
            old = runner.store.get_workflow(legacy)
            if old is not None and old.parent_id == row.workflow_id:
                return legacy
        return child_id

    # -- the attempt -----------------------------------------------------------------------

    def run(self) -> Record | Suspend:
        runner, effect, row = self.runner, self.effect, self.row
        now = runner.clock.now()
        pending = effect.pending
        started_at = pending.started_at if pending and pending.started_at else now
        for leaf in self.leaves:
            leaf.deadline = runner.deadline(leaf.command, started_at)
        timed = [leaf.deadline for leaf in self.leaves if leaf.deadline is not None]

        futures: dict[tuple[int, ...], concurrent.futures.Future[tuple[Outcome, int]]] = {}
        resumed = pending is not None or bool(self.outcomes)
        # Instant leaves and Starts first, in argument order: they are done at once,
        # and a race one of them decides starts no step.
        for leaf in self.leaves:
            child = leaf.command
            if isinstance(child, (Step, Call)) or not self._is_open(leaf):
                continue
            if isinstance(child, Start):
                started = runner._start_child(row, effect.position, child, leaf.target)
                self.outcomes[leaf.path] = started
                self._decide(self.root)
            elif facts_of(child).instant:
                self.outcomes[leaf.path] = runner.instant_outcome(row, effect.position, child)
                self._decide(self.root)
        if resumed and any(
            isinstance(leaf.command, (Step, Call)) and self._is_open(leaf) for leaf in self.leaves
        ):
            # A later attempt (a warm run's next look, a replay after a restart):
            # decide what its finished steps and what has arrived or fallen due decide
            # before running anything, so that a step that lost an inner race in an
            # earlier attempt (to a sibling step, a message, a timer) runs no more.
            self._look(futures)
        for leaf in self.leaves:
            child = leaf.command
            if not isinstance(child, (Step, Call)) or not self._is_open(leaf):
                continue  # done, or a sibling already decided the composite above it
            if isinstance(child, Step):
                future = self.host.step_pool.submit(self._run_child_step, leaf)
                future.add_done_callback(lambda _f: self.changed.set())
                futures[leaf.path] = future
            else:
                started = runner._start_child(row, effect.position, child, leaf.target)
                if isinstance(started, Failure):
                    self.outcomes[leaf.path] = started
                    self._decide(self.root)

        wakes = tuple(
            dict.fromkeys(
                wake
                for leaf in self.leaves
                for wake in runner.wakes_for(row, effect.position, leaf.command, leaf.target)
            )
        )
        unsubscribe = self.host.listen(wakes, self.changed.set) if futures else None
        try:
            while True:
                self.changed.clear()
                closing = self._check_stop(futures, look_first=True)
                # Asked before the look, so that the look takes in every step that
                # is not running any more: only then may the composite suspend.
                steps_were_running = self._steps_running(futures)
                decided = self._look(futures)
                if decided is None and closing:
                    self._check_stop(futures)
                if decided is not None:
                    self.scope.cancel()
                    for future in futures.values():
                        if not future.done():
                            future.cancel()
                    too_large = self._over_the_limit(decided)
                    record = runner.commit(
                        row,
                        effect,
                        too_large or decided,
                        started_at=started_at,
                        # A record refused for its size consumes nothing it took.
                        consume=None if too_large else (self._consumed() or None),
                    )
                    self._cancel_losing_children()
                    return record
                open_deadlines = [
                    leaf.deadline
                    for leaf in self.leaves
                    if leaf.deadline is not None and self._is_open(leaf)
                ]
                if not futures or (
                    not steps_were_running
                    and self.host.keeps_warm(row.workflow_id, effect.position)
                ):
                    # Nothing is consumed before the commit, so partial readiness
                    # can be dropped: the replay on wake-up looks again. Finished
                    # step children go with the warm run, so that what is left to
                    # wait for (a message, a timer) holds no thread; a run replayed
                    # instead (evicted, or a host that keeps none) runs them again,
                    # as any step whose record did not commit.
                    if pending is None:
                        pending = runner.commit(
                            row,
                            effect,
                            None,
                            started_at=started_at,
                            wake_at=min(timed) if timed else None,
                        )
                        if pending.outcome is not None:
                            return pending
                    # Wake at the next deadline of a leaf that is not done yet. The
                    # poller looks only at the waiting leaves that were not ready at
                    # this look and are still needed: a leaf already ready (a message
                    # there, a child finished) has not decided the tree, and looking at
                    # it again would wake the run at every poll for nothing.
                    waiting = [
                        leaf
                        for leaf in self.leaves
                        if facts_of(leaf.command).waits
                        and leaf.path not in self.outcomes
                        and self._is_open(leaf)
                    ]
                    return Suspend(
                        min(open_deadlines, default=None),
                        wakes,
                        runner.probe(
                            row,
                            effect.position,
                            [leaf.command for leaf in waiting],
                            [leaf.target for leaf in waiting],
                        ),
                        pending,
                        self._finished_steps() or None,
                    )
                self._check_stop(futures)
                self.host.wait_for_change(
                    self.changed,
                    min(open_deadlines, default=None),
                    idle=not self._steps_running(futures),
                )
        finally:
            self.scope.cancel()
            if unsubscribe is not None:
                unsubscribe()

    def _steps_running(
        self, futures: Mapping[tuple[int, ...], concurrent.futures.Future[tuple[Outcome, int]]]
    ) -> bool:
        """Whether a step child that is still needed has not finished yet."""
        return any(self._is_open(self._leaf(path)) and not f.done() for path, f in futures.items())

    def _finished_steps(self) -> dict[tuple[int, ...], Outcome]:
        """The outcomes of the step children that finished (a later attempt keeps them)."""
        return {
            leaf.path: self.outcomes[leaf.path]
            for leaf in self.leaves
            if isinstance(leaf.command, Step) and leaf.path in self.outcomes
        }

    def _check_stop(
        self,
        futures: Mapping[tuple[int, ...], concurrent.futures.Future[tuple[Outcome, int]]],
        *,
        look_first: bool = False,
    ) -> bool:
        """Raise `Cancelled` if the run was cancelled; when its host is closing, only
        once no step child still runs. Shutdown lets running children finish, and if
        they decide the composite (an `All` of steps), its record commits; what is
        still undecided then records nothing and runs again after the restart.

        With `look_first`, a closing host with no child running does not raise yet
        but answers True: what the children just finished is looked at first."""
        if not self.host.closed:
            self.host.check_cancelled(self.row.workflow_id)
            return False
        if any(self._is_open(self._leaf(path)) and not f.done() for path, f in futures.items()):
            return False
        if look_first:
            return True
        raise Cancelled(
            f"workflow {self.row.name!r} (id {self.row.workflow_id!r}) at position "
            f"{self.effect.position}: the engine is closing"
        )

    def _over_the_limit(self, decided: Outcome) -> Failure | None:
        """The composite's one record holds all its children's outcomes: each was
        within the payload limit, the sum may not be (three 1.5 MB steps)."""
        if not isinstance(decided, Value):
            return None
        limit = self.host.max_payload_bytes
        size = len(serde.dumps(decided.data).encode())
        if size <= limit:
            return None
        kind = type(self.command).__name__
        error = PayloadTooLarge(
            f"the record of {kind} in workflow {self.row.name!r} (id {self.row.workflow_id!r}) "
            f"at position {self.effect.position} is {size} bytes encoded, over the limit of "
            f"{limit}: it holds every child's outcome. Have the children return references "
            "to data stored elsewhere, or raise Engine(max_payload_bytes=...)"
        )
        return Failure(serde.encode_error(error))

    def _leaf(self, path: tuple[int, ...]) -> _Node:
        node = self.root
        for index in path:
            node = node.children[index]
        return node

    def _is_open(self, leaf: _Node) -> bool:
        """Not done, and no composite above it decided (then it lost, or is not needed)."""
        if leaf.path in self.outcomes:
            return False
        node = leaf.parent
        while node is not None:
            if node.path in self.decided:
                return False
            node = node.parent
        return True

    def _look(
        self, futures: Mapping[tuple[int, ...], concurrent.futures.Future[tuple[Outcome, int]]]
    ) -> Outcome | None:
        """Take in what finished and what arrived; the root's recorded value once decided."""
        signal: BaseException | None = None
        for path, future in futures.items():
            if future.done() and not future.cancelled() and self._is_open(self._leaf(path)):
                error = future.exception()
                if error is None:
                    self.outcomes[path] = future.result()[0]
                elif signal is None:
                    signal = error
        decided = self._decide(self.root)
        if decided is not None:
            return decided[0]
        if signal is not None:
            # A child that is still needed stopped without an outcome (the run was
            # cancelled, or the engine closes before it began): so does the attempt.
            raise signal
        # What arrived (a message, an event, a finished run) is looked at before
        # any deadline: something that arrived at the instant a deadline falls
        # wins the tie, whatever the children's order.
        for timed_out in (False, True):
            for leaf in self.leaves:
                if leaf.path in futures or not facts_of(leaf.command).waits:
                    continue
                if not self._is_open(leaf):
                    continue
                deadline = leaf.deadline
                if timed_out and (deadline is None or not self.runner.clock.passed(deadline)):
                    continue  # looked at a moment ago, and not due
                ready = self.runner.check_ready(
                    self.row,
                    self.effect.position,
                    leaf.command,
                    deadline if timed_out else None,
                    target=leaf.target,
                )
                if ready is None:
                    continue
                if ready.consume is not None and ready.consume in self.taken:
                    # Two Recv leaves never take one message: the store shows only
                    # the oldest, so this one waits on, or times out when due.
                    if not timed_out:
                        continue
                    ready = _Ready(Value(None))
                if ready.consume is not None:
                    self.taken[ready.consume] = leaf.path
                self.outcomes[leaf.path] = ready.outcome
                decided = self._decide(self.root)
                if decided is not None:
                    return decided[0]
        return None

    def _decide(self, node: _Node) -> tuple[Outcome, bool] | None:
        """(recorded value, failed) of a node once decided; decisions stick for the attempt."""
        if not node.is_composite:
            outcome = self.outcomes.get(node.path)
            return None if outcome is None else (outcome, isinstance(outcome, Failure))
        known = self.decided.get(node.path)
        if known is not None:
            return known
        command = node.command
        result: tuple[Outcome, bool] | None = None
        if isinstance(command, Race):
            for index, child in enumerate(node.children):
                won = self._decide(child)
                if won is not None:
                    self.winners[node.path] = index
                    result = (Value(RaceOutcome(index, won[0]).to_data()), won[1])
                    break
        else:
            assert isinstance(command, All)
            every = [self._decide(child) for child in node.children]
            first_failure = None
            if not command.return_exceptions:
                first_failure = next(
                    (i for i, got in enumerate(every) if got is not None and got[1]), None
                )
            if first_failure is not None or all(got is not None for got in every):
                outcomes = tuple(Value(None) if got is None else got[0] for got in every)
                value = AllOutcome(outcomes, first_failure).to_data()
                result = (Value(value), first_failure is not None)
        if result is not None:
            self.decided[node.path] = result
            if node is not self.root and node.scope is not None:
                node.scope.cancel()  # its losing (or no longer needed) steps
        return result

    def _kept(self, node: _Node) -> list[_Node]:
        """The leaves whose outcomes the decided node's record holds."""
        if not node.is_composite:
            return [node] if node.path in self.outcomes else []
        if node.path not in self.decided:
            return []
        if isinstance(node.command, Race):
            return self._kept(node.children[self.winners[node.path]])
        return [leaf for child in node.children for leaf in self._kept(child)]

    def _consumed(self) -> list[int]:
        kept = {leaf.path for leaf in self._kept(self.root)}
        return [message for message, path in self.taken.items() if path in kept]

    def _cancel_losing_children(self) -> None:
        """Cancel the runs of `Call` leaves the record does not hold, and of `Start`
        leaves in a branch a race decided against; only runs this run started (a
        child id naming a run started elsewhere attaches to it, and is left alone)."""
        kept = {leaf.path for leaf in self._kept(self.root)}
        # Every child leaf, not only those this attempt started: an earlier attempt
        # (before the run suspended) may have started one that lost since.
        for leaf in self.leaves:
            if not isinstance(leaf.command, (Call, Start)) or not leaf.target:
                continue
            if isinstance(leaf.command, Start):
                # Started at once and recorded: only a lost race takes it back.
                if not self._lost(leaf):
                    continue
            elif leaf.path in kept:
                continue
            if self._started_here(leaf.target):
                self.host.cancel_child(leaf.target)

    def _lost(self, leaf: _Node) -> bool:
        """Whether a decided `Race` above `leaf` was won by another branch."""
        child, node = leaf, leaf.parent
        while node is not None:
            won = self.winners.get(node.path)
            if won is not None and node.children[won] is not child:
                return True
            child, node = node, node.parent
        return False

    def _started_here(self, child_id: str) -> bool:
        try:
            child = self.runner.store.get_workflow(child_id)
        except Exception as exc:  # the parent's record is committed; do not fail it now
            self.host.logger.warning(
                "could not read the losing child run %r to cancel it: %s", child_id, exc
            )
            return False
        return child is not None and child.parent_id == self.row.workflow_id

    def _run_child_step(self, leaf: _Node) -> tuple[Outcome, int]:
        assert isinstance(leaf.command, Step)
        scope = leaf.parent.scope if leaf.parent is not None else self.scope
        # A control signal (cancelled, closing) leaves as the future's exception: a
        # losing child's is never looked at, a needed one's ends the attempt.
        return self.runner.run_step(
            self.row, self.effect.position, leaf.command, scope, child_path=leaf.path
        )
