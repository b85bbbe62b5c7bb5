"""Async step bodies, run on an event loop (the application's, under `AsyncEngine`).

An async step holds no thread: the scheduler hands it here (`start`), and at the end of
its round every step started in that round goes to its loop in one call (`launch`),
which starts their tasks a few at a time. Their outcomes come back in batches: the
first outcome of a batch schedules one posting, which hands the whole batch to a
bookkeeping thread that posts the events to the scheduler — the loop never waits for
the scheduler's lock, and neither side wakes once per step.

The room owns its two lists under its own lock; it answers only by posting events
(`Stepped`, `BackedOff`, `Carried`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import attrs

from replaykit.commands import Step
from replaykit.errors import Stopped
from replaykit.interpreter import Effect
from replaykit.log import Outcome
from replaykit.runtime.attempts import Backoff
from replaykit.runtime.clock import Clock
from replaykit.runtime.effects import EffectRunner
from replaykit.runtime.events import Activation, BackedOff, Carried, Event, Stepped
from replaykit.runtime.pool import WorkPool

__all__ = ["LAUNCH_CHUNK", "AsyncSteps"]

#: Async steps started per loop iteration (see `AsyncSteps._start_on_loop`).
LAUNCH_CHUNK = 32


@attrs.define(eq=False)
class _AsyncStep:
    """An async step between the scheduler and the loop it runs on."""

    activation: Activation
    effect: Effect
    command: Step[Any]
    fn: Callable[..., Any]
    started: datetime
    loop: asyncio.AbstractEventLoop
    task: asyncio.Task[tuple[Outcome, int] | Backoff] | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        """From any thread: before its task exists, it will not start; after, it is
        cancelled on its loop."""
        self.cancelled = True
        task = self.task
        if task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing runs
                self.loop.call_soon_threadsafe(task.cancel)


class AsyncSteps:
    """Runs async step bodies on their loop; posts what each came to with `post_many`.

    `offload` is a pool whose thread posts a batch of outcomes, so that the loop
    never waits on the scheduler's lock.
    """

    def __init__(
        self,
        runner: EffectRunner,
        clock: Clock,
        *,
        post_many: Callable[[list[Event]], None],
        offload: WorkPool,
    ) -> None:
        self.runner = runner
        self.clock = clock
        self._post_many = post_many
        self._offload = offload
        self._lock = threading.Lock()
        # Steps started this round, not yet handed to their loop; and, on the loop's
        # side, outcomes not yet posted.
        self._launches: list[_AsyncStep] = []
        self._outcomes: list[Event] = []

    def start(
        self, activation: Activation, effect: Effect, command: Step[Any], fn: Callable[..., Any]
    ) -> None:
        """Start an async step at the end of this round (`launch`)."""
        try:
            loop = self.runner.async_loop()
        except RuntimeError as exc:  # the application's loop ended before the engine
            # Not the run's fault: it stops unrecorded and runs again after a restart.
            self._post_many([Carried(activation, effect, Stopped(str(exc)))])
            return
        pending = effect.pending
        started = pending.started_at if pending and pending.started_at else self.clock.now()
        step = _AsyncStep(activation, effect, command, fn, started, loop)
        if activation.scope is not None and command.preemptible:
            # Only a preemptible step is cut short by a cancel. An ordinary body runs to
            # its end, as a sync one does, and its record lands in the cancelled run
            # (commits.RecordWriter): cut short, it would run again on the resume.
            activation.scope.on_cancel(step.cancel)
        with self._lock:
            self._launches.append(step)

    def launch(self) -> None:
        """Hand the async steps started since the last call to their loop, in one call."""
        with self._lock:
            if not self._launches:
                return
            steps, self._launches = self._launches, []
        by_loop: dict[asyncio.AbstractEventLoop, list[_AsyncStep]] = {}
        for step in steps:
            by_loop.setdefault(step.loop, []).append(step)
        for loop, batch in by_loop.items():
            try:
                loop.call_soon_threadsafe(self._start_on_loop, batch)
            except RuntimeError as exc:  # closed meanwhile
                self._post_many(
                    [Carried(step.activation, step.effect, Stopped(str(exc))) for step in batch]
                )

    def _start_on_loop(self, batch: list[_AsyncStep]) -> None:
        """On the loop: a task per step, each reporting to `_done`.

        A few at a time: each loop iteration runs what was ready when it began, so
        the rest waits for the next one and the application's own callbacks and
        timers get their turn in between."""
        batch, rest = batch[:LAUNCH_CHUNK], batch[LAUNCH_CHUNK:]
        if rest:
            batch[0].loop.call_soon(self._start_on_loop, rest)
        for step in batch:
            row = step.activation.row_or_raise()
            task = step.loop.create_task(
                self.runner.run_step_async(
                    row,
                    step.effect.position,
                    step.command,
                    step.activation.scope,
                    step.fn,
                    step.effect.pending,
                )
            )
            step.task = task
            if step.cancelled:  # cancelled before its task existed
                task.cancel()
            task.add_done_callback(functools.partial(self._done, step))

    def _done(self, step: _AsyncStep, task: asyncio.Task[tuple[Outcome, int] | Backoff]) -> None:
        """On the loop: collect the outcome; the first of a batch schedules its posting."""
        command = step.command
        # The step and its task let go of each other and of the run's scope, so that
        # reference counting frees them (see CancelScope.discard).
        step.task = None
        if step.activation.scope is not None:
            step.activation.scope.discard(step.cancel)
        event: Event
        if task.cancelled():
            cancelled = Stopped(f"step {command.name!r} was cancelled")
            event = Carried(step.activation, step.effect, cancelled)
        elif task.exception() is not None:
            event = Carried(step.activation, step.effect, task.exception())
        else:
            result = task.result()
            if isinstance(result, Backoff):
                event = BackedOff(step.activation, step.effect, result)
            else:
                outcome, attempts = result
                event = Stepped(step.activation, step.effect, outcome, attempts, step.started)
        self._outcomes.append(event)
        if len(self._outcomes) == 1:
            step.loop.call_soon(self._post_outcomes)

    def _post_outcomes(self) -> None:
        """On the loop: hand every outcome collected since the last posting to a thread,
        which posts them under one lock (the scheduler's lock is contended, and the
        loop must not wait for it)."""
        events, self._outcomes = self._outcomes, []
        try:
            self._offload.submit(self._post_many, events)
        except RuntimeError:  # shutting down: post them from here after all
            self._post_many(events)
