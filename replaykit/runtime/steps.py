"""A step's attempts: its body called, its retries, its back-offs, sync or async.

`StepRunner` runs one step's attempts for a host: a sync body on the caller's thread
(on the step pool when it has a timeout or is preemptible), an async one on the event
loop (the application's, or a private one started on first use). The retry policy is
one generator of what to do next (`attempts`, attempts.py: call the body, or wait until
an instant); here are its two drivers, one blocking and one for asyncio, as psycopg's
waits are. A durable driver hands a back-off back (`Backoff`) instead of waiting on a
thread: the run suspends until it is due, and the back-off's record (backoffs.py)
survives a restart.

The effect runner (`effects.py`) is a `StepRunner` with every other command kind on
top.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from replaykit.commands import Step
from replaykit.errors import Stopped
from replaykit.interpreter import Effect, StepContext, step_context_var
from replaykit.log import Outcome, Record
from replaykit.otel import StepToken, Telemetry
from replaykit.runtime.attempts import (
    Attempt,
    Backoff,
    Pause,
    attempts,
    preempted,
    preemption,
    reply_to,
)
from replaykit.runtime.beats import StepBeats
from replaykit.runtime.bodies import Bodies, within_beats, within_timeout
from replaykit.runtime.clock import SystemClock
from replaykit.runtime.host import CancelScope, Host
from replaykit.stores.base import WorkflowRow

__all__ = ["StepRunner"]


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
        # The steps' heartbeats, written to the store from a thread of their own.
        self.beats = StepBeats(
            host.store,
            host.clock,
            executor_id=host.executor_id,
            max_payload_bytes=host.max_payload_bytes,
        )
        self.beats.cancel_asked = lambda workflow_id: _cancel_reason(host, workflow_id)

    def async_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop async step bodies run on (`Bodies.async_loop`)."""
        return self.bodies.async_loop()

    def close(self) -> None:
        self.bodies.close()
        self.beats.close()

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
        steps = attempts(self.host, row, position, command, scope, pending, child_path, self.beats)
        # Closed on every way out, so that a run stopped mid-retry leaves no generator open.
        try:
            request: Attempt | Pause | tuple[Outcome, int] = next(steps)
            while isinstance(request, (Attempt, Pause)):
                error: Exception | None = None
                try:
                    if isinstance(request, Pause):
                        if durable:
                            return Backoff(request.attempts, request.due, request.started_at)
                        self._wait_until(request.due, scope)
                        reply = None
                    else:
                        reply = self._call(fn, command, scope, request)
                except Stopped:
                    if isinstance(request, Attempt) and preempted(command, scope, request.beats):
                        attempt = request.context.attempt
                        return preemption(self.host, row, position, command, attempt)
                    raise
                except Exception as exc:
                    reply, error = None, exc
                # Outside the handler: an error the generator raises is not chained to it.
                request = reply_to(steps, reply, error)
            return request
        finally:
            steps.close()

    def _call(
        self,
        fn: Callable[..., Any],
        command: Step[Any],
        scope: CancelScope | None,
        request: Attempt,
    ) -> Any:
        """One attempt's body called from this thread (`Bodies.call`), beating and traced."""
        beats = request.beats
        if beats is not None:
            self.beats.prepare(beats)
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
                beats=beats,
            )
        except BaseException as exc:
            self._step_ended(token, exc)
            raise
        finally:
            if beats is not None:
                self.beats.end(beats)
        if token is not None:  # not `_step_ended`: a call fewer on every untraced step
            self.telemetry.end_step(token, None)
        return reply

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
        steps = attempts(self.host, row, position, command, scope, pending, beats=self.beats)
        try:
            request: Attempt | Pause | tuple[Outcome, int] = next(steps)
            while isinstance(request, Attempt):
                error: Exception | None = None
                try:
                    beats = request.beats
                    if beats is not None:
                        await self.beats.prepare_async(beats)
                    # Set in this task only: the body, and the tasks it creates, see it.
                    token = step_context_var.set(request.context)
                    traced = self._step_began(request.context)
                    try:
                        body = fn(*command.args, **command.kwargs)
                        if beats is not None and beats.timeout is not None:
                            reply = await within_beats(body, beats, command.timeout, command.name)
                        elif command.timeout is None:
                            reply = await body
                        else:
                            reply = await within_timeout(body, command.timeout, command.name)
                    except (asyncio.CancelledError, Stopped) as exc:
                        # A cancelled task (a preemptible step), or a heartbeat that stopped
                        # the body (its run cancelled).
                        self._step_ended(traced, exc)
                        if not preempted(command, scope, beats):
                            raise
                        # Cut short on purpose: the task ends with the recorded preemption.
                        attempt = request.context.attempt
                        return preemption(self.host, row, position, command, attempt)
                    except BaseException as exc:
                        self._step_ended(traced, exc)
                        raise
                    else:
                        self._step_ended(traced, None)
                    finally:
                        step_context_var.reset(token)
                        if beats is not None:
                            await self.beats.end_async(beats)
                except Exception as exc:
                    reply, error = None, exc
                request = reply_to(steps, reply, error)
            if isinstance(request, Pause):
                return Backoff(request.attempts, request.due, request.started_at)
            return request
        finally:
            steps.close()

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

    def _step_ended(self, token: StepToken | None, error: BaseException | None) -> None:
        if token is not None:
            self.telemetry.end_step(token, error)

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


def _cancel_reason(host: Host, workflow_id: str) -> str | None:
    """The reason of the cancel `workflow_id` was asked for here, None for none."""
    cancels = getattr(host, "cancels", None)  # a test's own host may keep none
    request = None if cancels is None else cancels.undelivered(workflow_id)
    return None if request is None else request.reason
