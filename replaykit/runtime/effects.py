"""Carrying out one effect: what the runtime does for each kind of command.

`EffectRunner.carry_out()` either commits a completed record for the effect's
position and returns it, or returns a `Suspend` saying what the workflow waits
for (a deadline, a message, an event, another workflow). A suspended workflow's
generator is dropped; it is rebuilt by replay when it wakes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit import serde
from replaykit.commands import (
    All,
    Call,
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
    facts_of,
)
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    Cancelled,
    ControlSignal,
    PayloadTooLarge,
    RecordConflict,
    SerializationError,
    StoreUnavailable,
    WorkflowNotFound,
)
from replaykit.interpreter import Effect
from replaykit.log import AllOutcome, Failure, Outcome, RaceOutcome, Record, Status, Value
from replaykit.runtime.host import CancelScope, Host, LogMovedOn, Suspend, Wake
from replaykit.stores.base import EventWrite, OutgoingMessage, WorkflowRow

__all__ = ["CompositeRun", "EffectRunner", "WaitProbe", "is_async"]

_NO_RETRY = Retry()


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

    def __call__(self) -> bool:
        row = WorkflowRow(self.workflow_id, self.name, Status.PENDING)
        return any(
            self.runner.check_ready(row, self.position, command, None) is not None
            for command in self.commands
        )


@attrs.frozen
class _Ready:
    """A waiting command that can complete now."""

    outcome: Outcome
    consume: int | None = None


def _same_write(stored: Record, written: Record) -> bool:
    """Is `stored` the record we wrote, read back (after a lost acknowledgement)?"""
    return (
        stored.kind == written.kind
        and stored.name == written.name
        and stored.outcome == written.outcome
        and stored.completed_at == written.completed_at
    )


def _topic(topic: str | None) -> str:
    return topic or ""


class EffectRunner:
    """Carries out effects for one host. Stateless apart from the host it serves."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.store = host.store
        self.clock = host.clock
        self.entropy = host.entropy
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()

    # -- entry point -------------------------------------------------------------

    def carry_out(self, row: WorkflowRow, effect: Effect) -> Record | Suspend:
        command = effect.command
        if isinstance(command, Step):
            return self._step(row, effect, command)
        if isinstance(command, Transaction):
            return self._transaction(row, effect, command)
        if isinstance(command, (Race, All)):
            return self._composite(row, effect, command)
        if isinstance(command, Send):
            return self._send(row, effect, command)
        if isinstance(command, SetEvent):
            data = self._encode(command.value, f"the value of event {command.key!r}", row, effect)
            if isinstance(data, Failure):
                return self.commit(row, effect, data)
            return self.commit(row, effect, Value(None), event=EventWrite(command.key, data))
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
        stored = self.host.store_write(
            row,
            effect.position,
            lambda: self.store.record(
                row.workflow_id,
                record,
                executor_id=self.host.executor_id,
                consume=consume,
                send=send,
                event=event,
                wake_at=wake_at,
            ),
        )
        return self.check_written(row, record, stored)

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

    def check_written(self, row: WorkflowRow, written: Record, stored: Record) -> Record:
        """`stored` as the store answered a write of `written`; `LogMovedOn` if another
        writer had completed that position first."""
        if (
            written.outcome is not None
            and stored is not written
            and not _same_write(stored, written)
        ):
            raise LogMovedOn(
                f"workflow {row.name!r} (id {row.workflow_id!r}): position {written.position} "
                f"was already completed by another writer ({stored.describe()})"
            )
        return stored

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

    # -- steps -----------------------------------------------------------------------

    def _step(self, row: WorkflowRow, effect: Effect, command: Step) -> Record:
        started = self.clock.now()
        outcome, attempts = self.run_step(row, effect.position, command)
        return self.commit(row, effect, outcome, started_at=started, attempts=attempts)

    def run_step(
        self, row: WorkflowRow, position: int, command: Step, scope: CancelScope | None = None
    ) -> tuple[Outcome, int]:
        """Run a step with its retries; the outcome as it will be recorded, and attempts made."""
        fn = self.host.step_overrides.get(command.name, command.fn)
        retry = command.retry or _NO_RETRY
        scope = scope or self.host.scope_of(row.workflow_id)
        attempt = 0
        while True:
            attempt += 1
            self.host.check_cancelled(row.workflow_id)
            if scope is not None and scope.cancelled:
                raise Cancelled(f"step {command.name!r} of workflow id {row.workflow_id!r}")
            try:
                value = self._call(
                    fn, command.args, command.kwargs, command.timeout, command.name, scope
                )
            except ControlSignal:
                raise
            except Exception as exc:
                if retry.should_retry(exc, attempt):
                    self.host.logger.info(
                        "step %r of workflow %r (id %r) failed on attempt %d (%s); retrying",
                        command.name,
                        row.name,
                        row.workflow_id,
                        attempt,
                        exc,
                    )
                    self.clock.sleep(retry.delay_before(attempt + 1))
                    continue
                return Failure(serde.encode_error(exc)), attempt
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

    def _call(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        timeout: float | None,
        name: str,
        scope: CancelScope | None = None,
    ) -> Any:
        if is_async(fn):
            coro = fn(*args, **kwargs)
            future = asyncio.run_coroutine_threadsafe(
                asyncio.wait_for(coro, timeout) if timeout is not None else coro, self._async_loop()
            )
            if scope is not None:
                scope.on_cancel(future.cancel)
            try:
                return future.result()
            except concurrent.futures.CancelledError:
                raise Cancelled(f"step {name!r} was cancelled") from None
            except TimeoutError:
                raise TimeoutError(f"step {name!r} timed out after {timeout}s") from None
        if timeout is None:
            return fn(*args, **kwargs)
        future = self.host.step_pool.submit(fn, *args, **kwargs)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            # Python cannot stop a thread: the attempt is abandoned, its result ignored.
            future.cancel()
            raise TimeoutError(f"step {name!r} timed out after {timeout}s") from None

    def _async_loop(self) -> asyncio.AbstractEventLoop:
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
            return self.host.store_write(
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
        message = OutgoingMessage(
            command.workflow_id,
            _topic(command.topic),
            data,
            # One delivery per position, even if this commit is retried.
            idempotency_key=f"{row.workflow_id}:{effect.position}",
        )
        return self.commit(row, effect, Value(None), send=message)

    # -- child workflows ----------------------------------------------------------------

    def child_id(self, row: WorkflowRow, position: int, command: Start | Call) -> str:
        return command.workflow_id or f"{row.workflow_id}:{position}"

    def _start_child(self, row: WorkflowRow, position: int, command: Start | Call) -> Outcome:
        child_id = self.child_id(row, position, command)
        try:
            self.host.create_run(
                command.workflow,
                tuple(command.args),
                dict(command.kwargs),
                workflow_id=child_id,
                parent_id=row.workflow_id,
                queue=command.queue,
            )
        except (SerializationError, PayloadTooLarge, TypeError) as exc:
            return Failure(serde.encode_error(exc))
        return Value(child_id)

    # -- waiting commands -----------------------------------------------------------------

    def deadline(self, command: Command, started: datetime) -> datetime | None:
        seconds = facts_of(command).deadline_seconds(command)
        return None if seconds is None else started + timedelta(seconds=seconds)

    def wakes_for(self, row: WorkflowRow, position: int, command: Command) -> tuple[Wake, ...]:
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
            return ((kind, self.child_id(row, position, command)),)
        raise AssertionError(f"the command table says {command.describe()} wakes on {kind!r}")

    def check_ready(
        self, row: WorkflowRow, position: int, command: Command, deadline: datetime | None
    ) -> _Ready | None:
        """Can this waiting command complete now? (Checks the store, never blocks.)"""
        if isinstance(command, Recv):
            message = self.store.peek_message(row.workflow_id, _topic(command.topic))
            if message is not None:
                return _Ready(Value(message.payload), consume=message.message_id)
        elif isinstance(command, GetEvent):
            found, value = self.store.get_event(command.workflow_id, command.key)
            if found:
                return _Ready(Value(value))
        elif isinstance(command, (Wait, Call)):
            target = (
                command.workflow_id
                if isinstance(command, Wait)
                else self.child_id(row, position, command)
            )
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
            return self.commit(
                row, effect, ready.outcome, started_at=started_at, consume=ready.consume
            )
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
        self, row: WorkflowRow, position: int, commands: Sequence[Command]
    ) -> WaitProbe | None:
        """What the poller may call to see if a suspended run's wait is over (None: only time)."""
        waiting = tuple(c for c in commands if facts_of(c).wakes_on is not None)
        if not waiting:
            return None
        return WaitProbe(self, row.workflow_id, row.name, position, waiting)

    # -- Race and All ----------------------------------------------------------------------

    def _composite(self, row: WorkflowRow, effect: Effect, command: Race | All) -> Record | Suspend:
        return CompositeRun(self, row, effect, command).run()


class CompositeRun:
    """One attempt at a `Race` or an `All`.

    Step children run concurrently on the step pool while this thread watches
    the waiting children. A Race with no step children suspends like a single
    wait (no thread held); an All holds its thread until every child is done.
    """

    def __init__(self, runner: EffectRunner, row: WorkflowRow, effect: Effect, command: Race | All):
        self.runner = runner
        self.host = runner.host
        self.row = row
        self.effect = effect
        self.command = command
        self.children: Sequence[Command] = command.children
        self.is_race = isinstance(command, Race)
        self.outcomes: dict[int, Outcome] = {}
        self.consumed: list[int] = []
        self.first_failure: int | None = None
        self.changed = threading.Event()
        # Losing Race children are cancelled through this scope; so is
        # everything when the run itself is cancelled.
        self.scope = CancelScope(self.host.scope_of(row.workflow_id))
        self.scope.on_cancel(self.changed.set)

    def run(self) -> Record | Suspend:
        runner, effect = self.runner, self.effect
        now = runner.clock.now()
        pending = effect.pending
        started_at = pending.started_at if pending and pending.started_at else now
        deadlines = [runner.deadline(child, started_at) for child in self.children]
        timed = [d for d in deadlines if d is not None]

        futures: dict[int, concurrent.futures.Future[tuple[Outcome, int]]] = {}
        for index, child in enumerate(self.children):
            if isinstance(child, Step):
                future = self.host.step_pool.submit(self._run_child_step, effect.position, child)
                future.add_done_callback(lambda _f: self.changed.set())
                futures[index] = future
            elif facts_of(child).instant:
                self.outcomes[index] = runner.instant_outcome(self.row, effect.position, child)
            elif isinstance(child, Call):
                started = runner._start_child(self.row, effect.position, child)
                if isinstance(started, Failure):
                    self.outcomes[index] = started

        wakes = tuple(
            wake
            for index, child in enumerate(self.children)
            for wake in runner.wakes_for(self.row, effect.position, child)
        )
        unsubscribe = self.host.listen(wakes, self.changed.set) if futures else None
        try:
            while True:
                self.changed.clear()
                self.host.check_cancelled(self.row.workflow_id)
                for index, future in futures.items():
                    if index not in self.outcomes and future.done() and not future.cancelled():
                        self.outcomes[index] = future.result()[0]
                # What arrived (a message, an event, a finished run) is looked
                # at before any deadline: something that arrived at the instant
                # a deadline falls wins the tie, whatever the children's order.
                for timed_out in (False, True):
                    if self.is_race and self.outcomes:
                        break
                    for index, child in enumerate(self.children):
                        if index in self.outcomes or index in futures:
                            continue
                        if not facts_of(child).waits:
                            continue
                        deadline = deadlines[index]
                        if timed_out and (deadline is None or not runner.clock.passed(deadline)):
                            continue  # looked at a moment ago, and not due
                        ready = runner.check_ready(
                            self.row,
                            effect.position,
                            child,
                            deadline if timed_out else None,
                        )
                        if ready is None:
                            continue
                        if ready.consume is not None and ready.consume in self.consumed:
                            continue  # two Recv children on one topic take two messages
                        self.outcomes[index] = ready.outcome
                        if ready.consume is not None:
                            self.consumed.append(ready.consume)
                        if self.is_race:
                            break
                decided = self._decided()
                if decided is not None:
                    self.scope.cancel()
                    for index, future in futures.items():
                        if index not in self.outcomes:
                            future.cancel()
                    return runner.commit(
                        self.row,
                        effect,
                        Value(decided.to_data()),
                        started_at=started_at,
                        consume=self.consumed or None,
                    )
                if not futures:
                    # Nothing is consumed before the commit, so partial readiness
                    # can be dropped: the replay on wake-up looks again.
                    if pending is None:
                        pending = runner.commit(
                            self.row,
                            effect,
                            None,
                            started_at=started_at,
                            wake_at=min(timed) if timed else None,
                        )
                        if pending.outcome is not None:
                            return pending
                    # Wake at the next deadline of a child that is not done yet.
                    open_deadlines = [
                        d
                        for i, d in enumerate(deadlines)
                        if d is not None and i not in self.outcomes
                    ]
                    return Suspend(
                        min(open_deadlines, default=None),
                        wakes,
                        runner.probe(self.row, effect.position, self.children),
                        pending,
                    )
                self.host.check_cancelled(self.row.workflow_id)
                open_deadlines = [
                    d for i, d in enumerate(deadlines) if d is not None and i not in self.outcomes
                ]
                steps_running = any(
                    i not in self.outcomes and not f.done() for i, f in futures.items()
                )
                self.host.wait_for_change(
                    self.changed, min(open_deadlines, default=None), idle=not steps_running
                )
        finally:
            self.scope.cancel()
            if unsubscribe is not None:
                unsubscribe()

    def _run_child_step(self, position: int, child: Step) -> tuple[Outcome, int]:
        try:
            return self.runner.run_step(self.row, position, child, self.scope)
        except ControlSignal:
            # A losing child: its outcome is never looked at.
            return Failure(serde.encode_error(Cancelled("cancelled"), with_traceback=False)), 0

    def _decided(self) -> RaceOutcome | AllOutcome | None:
        """The composite's recorded value, once it is decided; else None."""
        if self.is_race:
            for index in sorted(self.outcomes):
                return RaceOutcome(index, self.outcomes[index])
            return None
        assert isinstance(self.command, All)
        for index in sorted(self.outcomes):
            if isinstance(self.outcomes[index], Failure) and not self.command.return_exceptions:
                self.first_failure = index
                break
        if self.first_failure is None and len(self.outcomes) < len(self.children):
            return None
        outcomes = tuple(self.outcomes.get(i, Value(None)) for i in range(len(self.children)))
        return AllOutcome(outcomes, self.first_failure)
