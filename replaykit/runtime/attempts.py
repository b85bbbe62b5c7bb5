"""A step's retry policy, as one generator of what to do next: call the body
(`Attempt`) or wait until an instant (`Pause`), ending with the step's outcome and the
attempts made. It calls nothing and waits for nothing itself: its drivers in steps.py
(one blocking, one for asyncio, as psycopg's waits over one generator) do, and answer
it. Here too are what a step records when its retries give up or a cancel cut it short,
and the fixed jitter every engine draws alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator
from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit import serde
from replaykit.commands import Retry, Step, requested_delay
from replaykit.errors import (
    ControlSignal,
    PayloadTooLarge,
    SerializationError,
    StepPreempted,
    Stopped,
)
from replaykit.interpreter import StepContext
from replaykit.log import Failure, Outcome, Record, Value
from replaykit.runtime.beats import AttemptBeats, StepBeats
from replaykit.runtime.host import CancelScope, Host
from replaykit.stores.base import WorkflowRow

__all__ = [
    "Attempt",
    "Attempts",
    "Backoff",
    "Pause",
    "attempts",
    "gave_up",
    "jitter_draw",
    "preempted",
    "preemption",
    "reply_to",
]

_NO_RETRY = Retry()


@attrs.frozen
class Attempt:
    """Call the step's body once (the driver sends back its value or throws its error).

    `beats` is the attempt's heartbeats (the same object as in `context`), for the
    driver: it loads the details an earlier attempt beat and writes the last ones.
    """

    context: StepContext
    beats: AttemptBeats | None = None


@attrs.frozen
class Pause:
    """Wait until `due` before the next attempt; `attempts` have been made, the first
    of them at `started_at`."""

    attempts: int
    due: datetime
    started_at: datetime


#: A step's attempts as its drivers see them: requests out, replies in, the result last.
Attempts = Generator[Attempt | Pause, Any, tuple[Outcome, int]]


@attrs.frozen
class Backoff:
    """A step that failed and waits for its next attempt: the run suspends until `due`.

    What a durable driver (`StepRunner.run_attempts`) returns instead of waiting on a
    thread. `record_backoff` (backoffs.py) records it, so that a restart keeps the count
    and the due time.
    """

    attempts: int
    due: datetime
    started_at: datetime


def jitter_draw(workflow_id: str, position: int, attempt: int) -> float:
    """A number in [0, 1) fixed by the run, the position and the attempt.

    Jitter must spread runs that fail together, yet every engine (and every
    replay, and every test) must compute the same wait for one attempt.
    """
    digest = hashlib.blake2b(
        f"{workflow_id}\0{position}\0{attempt}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") / 2**64


def reply_to(
    steps: Attempts,
    reply: Any,
    error: Exception | None,
) -> Attempt | Pause | tuple[Outcome, int]:
    """Give the attempts generator what its driver found: its next request, or its result."""
    try:
        return steps.throw(error) if error is not None else steps.send(reply)
    except StopIteration as stop:
        result: tuple[Outcome, int] = stop.value
        return result


def attempts(
    host: Host,
    row: WorkflowRow,
    position: int,
    command: Step[Any],
    scope: CancelScope | None,
    pending: Record | None = None,
    child_path: tuple[int, ...] = (),
    beats: StepBeats | None = None,
) -> Attempts:
    """A step's retry policy, as a generator of what to do next: call the body
    (`Attempt`, answered with its value or its exception) or wait until an
    instant (`Pause`). `StepRunner.run_attempts` and `run_step_async` (steps.py) are
    its drivers, like psycopg's blocking and asyncio waits over one generator.

    `pending` is the step's pending record when earlier attempts were made
    (before a back-off, maybe in another process): the count and the due
    time go on from it, and `Retry.timeout` counts from its start. `beats` makes
    each attempt's heartbeats (None: the body cannot beat)."""
    retry = command.retry or _NO_RETRY
    made = pending.attempts if pending is not None else 0
    due = pending.wake_at if pending is not None else None
    first_start = (
        pending.started_at if pending is not None and pending.started_at else host.clock.now()
    )
    deadline = None if retry.timeout is None else first_start + timedelta(seconds=retry.timeout)
    last_error: Exception | None = None
    beat: AttemptBeats | None = None
    while True:
        if due is not None and not host.clock.passed(due):
            yield Pause(made, due, first_start)
        host.check_cancelled(row.workflow_id)
        if scope is not None and scope.cancelled:
            raise Stopped(f"step {command.name!r} of workflow id {row.workflow_id!r}")
        if made and deadline is not None and host.clock.passed(deadline):
            return gave_up(row, position, command, made, deadline, due, last_error)
        attempt = made + 1
        if beats is not None:
            beat = beats.begin(row, command, position, attempt, child_path, scope, beat)
        context = StepContext(
            row.workflow_id, row.name, command.name, position, attempt, child_path, beats=beat
        )
        try:
            value = yield Attempt(context, beat)
        except ControlSignal:
            raise
        except Exception as exc:
            made = attempt
            if not retry.should_retry(exc, made):
                return Failure(serde.encode_error(exc)), made
            delay = _next_delay(host, row, position, command, exc, made)
            due = host.clock.now() + timedelta(seconds=delay)
            if deadline is not None and due > deadline:
                return gave_up(row, position, command, made, deadline, due, exc)
            last_error = exc
            host.logger.info(
                "step %r of workflow %r (id %r) failed on attempt %d (%s); attempt %d is due at %s",
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
                max_bytes=host.max_payload_bytes,
            )
        except (SerializationError, PayloadTooLarge) as exc:
            return Failure(serde.encode_error(exc)), attempt
        return Value(data), attempt


def _next_delay(
    host: Host, row: WorkflowRow, position: int, command: Step[Any], error: Exception, made: int
) -> float:
    """Seconds before attempt `made + 1`: what the error asks (`RetryAfter`, a
    `retry_after`), else the policy's back-off with its jitter."""
    try:
        asked = requested_delay(error)
    except ValueError as exc:
        asked = None
        host.logger.warning(
            "step %r of workflow %r (id %r): %s; waiting the Retry policy's back-off instead",
            command.name,
            row.name,
            row.workflow_id,
            exc,
        )
    if asked is not None:
        return asked
    retry = command.retry or _NO_RETRY
    draw = jitter_draw(row.workflow_id, position, made + 1) if retry.jitter else 0.0
    return retry.delay_before(made + 1, draw)


def gave_up(
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


def preemption(
    host: Host, row: WorkflowRow, position: int, command: Step[Any], attempt: int
) -> tuple[Outcome, int]:
    """What a preemptible step (or a heartbeating one, stopped at a beat) records when
    a cancel of its run cut it short: the body never runs again by itself; a resume
    finds `StepPreempted` at its yield."""
    host.logger.info(
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


def preempted(
    command: Step[Any], scope: CancelScope | None, beats: AttemptBeats | None = None
) -> bool:
    """A preemptible body, or one a heartbeat stopped, was cut short because its run
    stopped (not because this engine closes, nor because its branch lost a race)."""
    cut = command.preemptible or (beats is not None and beats.stopped_body)
    return cut and scope is not None and scope.run_stopped
