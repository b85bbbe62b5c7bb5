"""A step's attempts: its body called, its retries, its back-offs, sync or async.

`StepRunner` runs one step's attempts for a host: a sync body on the caller's thread
(on the step pool when it has a timeout or is preemptible), an async one on the event
loop (the application's, or a private one started on first use). The retry policy is
one generator of what to do next (`_attempts`: call the body, or wait until an instant)
with two drivers, one blocking and one for asyncio, as psycopg's waits are. A durable
driver hands a back-off back (`Backoff`) instead of waiting on a thread: the run
suspends until it is due, and the back-off's record survives a restart.

The effect runner (`effects.py`) is a `StepRunner` with every other command kind on
top.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable, Generator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import attrs

from replaykit import serde
from replaykit.commands import (
    Retry,
    Step,
)
from replaykit.errors import (
    Cancelled,
    ControlSignal,
    PayloadTooLarge,
    SerializationError,
    StepPreempted,
)
from replaykit.interpreter import Effect, StepContext, step_context_var
from replaykit.log import Failure, Outcome, Record, Value
from replaykit.otel import StepToken, Telemetry
from replaykit.runtime.bodies import Bodies, within_deadline
from replaykit.runtime.clock import SystemClock
from replaykit.runtime.host import CancelScope, Host, Suspend
from replaykit.stores.base import WorkflowRow

__all__ = [
    "RETRY_TOPIC",
    "Backoff",
    "StepRunner",
    "jitter_draw",
]

_NO_RETRY = Retry()
T = TypeVar("T")


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


class StepRunner:
    """Runs steps' attempts for one host; owns the private event loop, if one starts."""

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
        # Where bodies run: the application's loop if given, else a private one.
        self.bodies = Bodies(host.step_pool, loop=loop)

    def async_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop async step bodies run on (`Bodies.async_loop`)."""
        return self.bodies.async_loop()

    def close(self) -> None:
        self.bodies.close()

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

    def _preemption(
        self, row: WorkflowRow, position: int, command: Step[Any], attempt: int
    ) -> tuple[Outcome, int]:
        """What a preemptible step records when a cancel of its run cut it short: the
        body never runs again by itself; a resume finds `StepPreempted` at its yield."""
        self.host.logger.info(
            "step %r of workflow %r (id %r) at position %d was stopped on attempt %d: "
            "its run was cancelled",
            command.name,
            row.name,
            row.workflow_id,
            position,
            attempt,
        )
        error = StepPreempted(
            f"step {command.name!r} of workflow {row.name!r} (id {row.workflow_id!r}) at "
            f"position {position} was stopped on attempt {attempt} because its run was "
            "cancelled; catch StepPreempted around the step to run the work again as a new "
            "step after a resume"
        )
        return Failure(serde.encode_error(error, with_traceback=False)), attempt

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
                        reply = self.bodies.call(
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
            except Cancelled:
                steps.close()
                if isinstance(request, _Attempt) and _preempted(command, scope):
                    return self._preemption(row, position, command, request.context.attempt)
                raise
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
                except asyncio.CancelledError as exc:
                    if traced is not None:
                        self.telemetry.end_step(traced, exc)
                    if not _preempted(command, scope):
                        raise
                    # Cut short on purpose: the task ends with the recorded preemption.
                    steps.close()
                    return self._preemption(row, position, command, request.context.attempt)
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


def _preempted(command: Step[Any], scope: CancelScope | None) -> bool:
    """A preemptible body was cut short because its run stopped (not because this
    engine closes, nor because its branch lost a race)."""
    return command.preemptible and scope is not None and scope.run_stopped
