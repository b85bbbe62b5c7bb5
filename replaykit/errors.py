"""The exception hierarchy.

Two families live here. `ReplayKitError` subclasses are ordinary exceptions that
tell a user what went wrong and what to do. `ControlSignal` subclasses derive
from `BaseException` on purpose: cancellation and shutdown must end a workflow
attempt even when the workflow body says `except Exception:`. Beside them, two
things a step body raises to steer its own retries: the `NonRetryable` mixin and
`RetryAfter` (read by `Retry`, in `_durations.py`).

Some of these describe the live state of the process that raises them, and
`LIVE_ONLY` lists them: a recorded one is never rebuilt from stored data.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import ClassVar

__all__ = [
    "LIVE_ONLY",
    "MAX_RETRY_AFTER",
    "AlreadyCompleted",
    "AwaitedWorkflowCancelled",
    "AwaitedWorkflowFailed",
    "AwakeableFailed",
    "Cancelled",
    "CodecError",
    "CompletionRefused",
    "ControlSignal",
    "DamagedData",
    "DuplicateDedupId",
    "DuplicateWorkflowError",
    "ExecutorIdInUse",
    "FilterError",
    "HeartbeatTimeout",
    "InvalidCommandError",
    "NonDeterminismError",
    "NonDeterministicCall",
    "NonRetryable",
    "PayloadTooLarge",
    "RecordConflict",
    "ReplayKitError",
    "RetryAfter",
    "RunContinued",
    "RunEnded",
    "RunNotPending",
    "ScheduleNotFound",
    "SerializationError",
    "StepFailed",
    "StepPreempted",
    "Stopped",
    "StoreError",
    "StoreUnavailable",
    "StreamClosed",
    "StreamTimeout",
    "TransactionUnsupported",
    "UnknownToken",
    "UnknownUpdate",
    "UnknownWorkflowError",
    "UpdateAlreadyAnswered",
    "UpdateError",
    "UpdateRunFinished",
    "UpdateTimeout",
    "WorkflowDeadlineExceeded",
    "WorkflowIdConflict",
    "WorkflowNotFound",
    "WorkflowTimeout",
]


class ReplayKitError(Exception):
    """Base class of every error replaykit raises on purpose."""


class NonDeterminismError(ReplayKitError):
    """The workflow's code yielded something other than what its log recorded.

    Attributes carry the details so tools (the CLI's `replay`, the testing kit)
    can render them; the message alone is complete for a human.
    """

    def __init__(
        self,
        message: str,
        *,
        workflow_name: str = "",
        workflow_id: str = "",
        position: int = -1,
        yielded: str = "",
        yielded_at: str = "",
        recorded: str = "",
        recorded_at: str = "",
    ) -> None:
        super().__init__(message)
        self.workflow_name = workflow_name
        self.workflow_id = workflow_id
        self.position = position
        self.yielded = yielded
        self.yielded_at = yielded_at
        self.recorded = recorded
        self.recorded_at = recorded_at


class NonDeterministicCall(ReplayKitError):
    """A workflow body called the clock or a source of randomness (the testing kit's sandbox).

    Code between commands runs again on every replay, so what it reads must come
    from a recorded command (`Now()`, `Random()`, `Uuid()`, a `Step`). `call` is
    what was called (`"time.time()"`), `call_site` the file:line of the call.
    """

    # One rebuilt from a recorded failure skips __init__ (`serde.decode_error`):
    # its details read "" rather than raising AttributeError.
    call: str = ""
    workflow_name: str = ""
    workflow_id: str = ""
    call_site: str = ""
    fix: str = ""

    def __init__(
        self,
        message: str,
        *,
        call: str = "",
        workflow_name: str = "",
        workflow_id: str = "",
        call_site: str = "",
        fix: str = "",
    ) -> None:
        super().__init__(message)
        self.call = call
        self.workflow_name = workflow_name
        self.workflow_id = workflow_id
        self.call_site = call_site
        self.fix = fix


class InvalidCommandError(ReplayKitError, TypeError):
    """A workflow yielded something that is not a replaykit command."""


class SerializationError(ReplayKitError, TypeError):
    """A value could not be encoded to, or decoded from, the log's JSON form."""


class PayloadTooLarge(ReplayKitError, ValueError):
    """An encoded input or output is over the configured size limit."""


class StepFailed(ReplayKitError):
    """Stands in for a recorded exception whose class is not importable here.

    replaykit never imports a module because stored data names it, so a replay
    that meets an unknown exception class raises this instead, keeping the
    original type name and message.
    """

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


class StepPreempted(ReplayKitError):
    """A preemptible step was stopped because its run was cancelled.

    It is recorded as the step's outcome, so the body never runs again by itself:
    a resumed run gets this exception at the step's `yield`, where it may run the
    work again as a new step, clean up, or let the run fail.
    """


class HeartbeatTimeout(ReplayKitError, TimeoutError):
    """A step attempt's heartbeats stopped for longer than its `heartbeat_timeout`.

    The attempt failed with it: a sync body was abandoned (its thread runs on,
    its outcome is dropped, and its next `heartbeat()` raises to stop it), an
    async body's task cancelled. It is retried as the step's `Retry` says, and
    the retry reads the last details it beat in `step_context().heartbeat_details`.
    The message names the workflow, its id, the step, its position and attempt,
    and when it last beat; so do the attributes (left at their defaults on an
    error rebuilt from a recorded failure).
    """

    workflow_name: str = ""
    workflow_id: str = ""
    step_name: str = ""
    position: int = -1
    attempt: int = 0

    def __init__(
        self,
        message: str,
        *,
        workflow_name: str = "",
        workflow_id: str = "",
        step_name: str = "",
        position: int = -1,
        attempt: int = 0,
    ) -> None:
        super().__init__(message)
        self.workflow_name = workflow_name
        self.workflow_id = workflow_id
        self.step_name = step_name
        self.position = position
        self.attempt = attempt


class WorkflowNotFound(ReplayKitError, LookupError):
    """No workflow run has the given id."""


class UnknownWorkflowError(ReplayKitError, LookupError):
    """A stored run names a workflow that is not registered in this process."""


class DuplicateDedupId(ReplayKitError, ValueError):
    """An enqueue reused a deduplication id that a live run of the queue holds."""

    # Its args hold the message alone, so one rebuilt from the log skips __init__
    # (`serde.decode_error`); it reads "" here instead of raising AttributeError.
    existing_id: str = ""

    def __init__(self, message: str, existing_id: str) -> None:
        super().__init__(message)
        self.existing_id = existing_id


class WorkflowIdConflict(ReplayKitError, ValueError):
    """A start named an id that a run of another workflow, or of other arguments, holds.

    Starts are idempotent by id only for the same workflow with the same
    arguments (those return the existing run). `workflow_id` is the id,
    `existing_name` the workflow of the stored run, `new_name` the one this
    start asked for; `same_workflow` says whether only the arguments differ.
    """

    # Rebuilt from a recorded failure without __init__ (`serde.decode_error`),
    # its details read "" rather than raising AttributeError.
    workflow_id: str = ""
    existing_name: str = ""
    new_name: str = ""
    same_workflow: bool = False

    def __init__(
        self,
        message: str,
        *,
        workflow_id: str = "",
        existing_name: str = "",
        new_name: str = "",
    ) -> None:
        super().__init__(message)
        self.workflow_id = workflow_id
        self.existing_name = existing_name
        self.new_name = new_name
        self.same_workflow = existing_name == new_name


class DuplicateWorkflowError(ReplayKitError, ValueError):
    """Two different functions were registered under one workflow name."""


class WorkflowTimeout(ReplayKitError, TimeoutError):
    """`handle.result(timeout=...)` returned before the run finished."""


class AwaitedWorkflowFailed(ReplayKitError):
    """Raised in a parent whose awaited child failed with an unknown error class."""


class AwaitedWorkflowCancelled(ReplayKitError):
    """Raised in a parent when the child it waits on was cancelled."""


class WorkflowDeadlineExceeded(AwaitedWorkflowCancelled):
    """The run was cancelled because its deadline passed (`timeout=` / `deadline=`).

    `handle.result()` raises it, and so does a parent's `Call` / `Wait` on such a
    child; it is an `AwaitedWorkflowCancelled`, so handlers of cancellations
    catch it too. The message says when the deadline was and what timeout set it.
    """

    #: How the status detail of a run cancelled at its deadline begins.
    DETAIL_PREFIX: ClassVar[str] = "timed out: "

    @classmethod
    def detail(cls, deadline: datetime, timeout: float | None) -> str:
        """The status detail (the run's `error`) written when `deadline` passes."""
        instant = deadline.astimezone(UTC)
        precision = "seconds" if instant.microsecond == 0 else "milliseconds"
        at = instant.isoformat(timespec=precision).replace("+00:00", "Z")
        set_by = f" (timeout {timeout:g}s)" if timeout is not None else ""
        return f"{cls.DETAIL_PREFIX}its deadline {at} passed{set_by}"

    @classmethod
    def says_timed_out(cls, detail: str) -> bool:
        """Whether a cancelled run's status detail is one written at its deadline."""
        return detail.startswith(cls.DETAIL_PREFIX)


class RunContinued(ReplayKitError):
    """The result of an archived generation was asked for: it ended by `ContinueAsNew`.

    `continued_as` is the id the run goes on under; its result is the run's.
    """

    def __init__(self, message: str, *, continued_as: str | None = None) -> None:
        super().__init__(message)
        self.continued_as = continued_as


class TransactionUnsupported(ReplayKitError):
    """`Transaction` needs a store with a database connection (SQLite, Postgres)."""


class StoreError(ReplayKitError):
    """A store could not carry out an operation (bad schema, bad URL, ...)."""


class StoreUnavailable(StoreError):
    """The store could not be reached; the operation may be retried."""


class DamagedData(StoreError):
    """Stored data (a run's row, a record, a message, an event) cannot be read.

    The fault is in the database, not in the code: the run it belongs to is
    parked with this message until an operator repairs or deletes the row.
    """


class CodecError(DamagedData):
    """A payload at rest cannot be decoded with the codec this process was given.

    It was encoded by a codec this process does not have (none was passed, or
    one of another name), or the codec's `decode` refused it (a wrong key).
    `codec_name` is the name stored with the payload, `workflow_id` the run it
    belongs to ("" when unknown), `what` the payload ("the outcome at position 3").
    The message says what to pass (`codec=`); like any damaged data, a run that
    meets it is parked until the process is given the codec and the run resumed.
    """

    def __init__(
        self, message: str, *, codec_name: str = "", workflow_id: str = "", what: str = ""
    ) -> None:
        super().__init__(message)
        self.codec_name = codec_name
        self.workflow_id = workflow_id
        self.what = what


class RecordConflict(StoreError):
    """Another writer recorded this position first (or owns the workflow)."""


class RunNotPending(RecordConflict):
    """A write into a run that is no longer PENDING (cancelled, finished, parked).

    `status` is the value of the status the store found (`"CANCELLED"`, ...). A
    step that finished while its run was cancelled still has its record landed
    (`Store.record_late`): the step's effect happened, and a resume must not do
    it again.
    """

    def __init__(self, message: str, status: str) -> None:
        super().__init__(message)
        self.status = status


class ExecutorIdInUse(StoreError):
    """Another live engine holds this executor id, and it stayed held for the whole wait.

    An executor id names one live engine per application version at a time: it
    owns that id's runs of the version, and recovers them when it starts.
    `holder` says what the store knows of the other engine (host, process, since
    when), or is empty.
    """

    def __init__(self, executor_id: str, app_version: str, holder: str, waited: float) -> None:
        self.executor_id = executor_id
        self.app_version = app_version
        self.holder = holder
        self.waited = waited
        where = f" ({holder})" if holder else ""
        super().__init__(
            f"executor id {executor_id!r} (application version {app_version!r}) is held by "
            f"another live engine{where}, still after "
            f"waiting {waited:g}s; two engines with one executor id would both run its runs. "
            "Give each live engine its own executor id (Engine(executor_id=...), e.g. the "
            "host name and a process number), or stop the other engine first; to wait longer "
            "for it to stop, as in a rolling deploy, pass Engine(executor_wait=seconds)"
        )


class FilterError(ReplayKitError, ValueError):
    """A filter that does not parse, or asks what no run can answer (such as
    `status < 'ERROR'`): says where (`column`, from 1) and why."""

    def __init__(self, text: str, column: int, why: str) -> None:
        self.text = text
        self.column = column
        self.why = why
        pointer = " " * (column - 1) + "^"
        shown = text if len(text) <= 200 else text[:200] + "…"
        super().__init__(f"filter {shown!r}, column {column}: {why}\n  {shown}\n  {pointer}")


class ScheduleNotFound(ReplayKitError, LookupError):
    """No schedule of that name is defined in the code given or stored in the store."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        known = sorted(set(known))
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        listed = ", ".join(repr(k) for k in known) if known else "none"
        super().__init__(
            f"no schedule named {name!r} (known: {listed}).{hint} A schedule is known once an "
            "engine whose code defines it (@schedule or engine.schedule) has run on this "
            "store; check the name, or start such an engine first"
        )
        self.name = name


class StreamClosed(ReplayKitError, ValueError):
    """A workflow wrote to a stream it had closed (`WriteStream` after `CloseStream`).

    Raised in the workflow at the `yield`, taking no position: the log's earlier
    close decides it, so a replay raises it at the same point.
    """


class StreamTimeout(ReplayKitError, TimeoutError):
    """`read_stream(..., timeout=...)` waited that long for the stream's next value."""


class CompletionRefused(ReplayKitError):
    """`complete(token, ...)` or `fail(token, ...)` delivered nothing; the subclass says why.

    Nothing was written: the awakeable is as it was before the call.
    """


class UnknownToken(CompletionRefused, LookupError):
    """The token is not one an `Awakeable` handed out: not a token's shape, no run of the
    id it names, or nothing handed out at the position it names (a typo, a guess, a
    deleted run)."""


class AlreadyCompleted(CompletionRefused):
    """The awakeable was completed (or failed) before: each token is completed once.

    A caller that retries after losing the answer to its first call gets this too:
    it means that some completion, perhaps its own, was delivered.
    """


class RunEnded(CompletionRefused):
    """The run that handed out the token has ended (succeeded, failed, was cancelled):
    nothing waits for the completion any more.

    It is checked first: once the run ended, every completion of its tokens gets this,
    whether or not one was delivered before. A cancelled run that is resumed waits
    again, and takes a completion then.
    """


class AwakeableFailed(ReplayKitError):
    """What `Await(token)` raises in the workflow when the token was failed with a message
    (`fail(token, "card declined")`); failed with an exception, it raises that one."""


class NonRetryable:
    """Mixin: an exception class that no `Retry` policy retries.

    `class CardDeclined(NonRetryable, Exception): ...` fails its step at the first
    raise, whatever `Retry(max_attempts=..., retry_on=...)` says: retrying a declined
    card cannot help. What the mixin sets is the class attribute `non_retryable =
    True`, and that attribute is the rule: any exception whose `non_retryable` is
    `True` (set on its class, or on one instance: `error.non_retryable = True`) is not
    retried, and a subclass may set it back to `False`. Only `True` itself counts,
    not any truthy value, so an unrelated attribute of that name cannot stop retries
    by accident.
    """

    __slots__ = ()
    non_retryable: ClassVar[bool] = True


#: The longest delay a step may ask for before its next attempt (a hundred years):
#: past it, the due instant would overflow a datetime, and no service means it.
MAX_RETRY_AFTER = 100 * 365 * 86400.0


def _retry_after_seconds(delay: object) -> float:
    if isinstance(delay, timedelta):
        seconds = delay.total_seconds()
    elif isinstance(delay, (int, float)) and not isinstance(delay, bool):
        seconds = float(delay)
    else:
        raise TypeError(
            f"RetryAfter(delay={delay!r}): the delay must be a timedelta or a number of "
            "seconds (such as the 120 of an HTTP 429's 'Retry-After: 120' header)"
        )
    if math.isnan(seconds) or not 0 <= seconds <= MAX_RETRY_AFTER:
        raise ValueError(
            f"RetryAfter(delay={delay!r}): the delay must be from zero seconds to a hundred years"
        )
    return seconds


class RetryAfter(Exception):
    """Raised by a step body: retry this step after `delay`, not after its back-off.

    `raise RetryAfter(int(response.headers["Retry-After"]), "rate limited")` from
    a call answered HTTP 429. `delay` is a timedelta or seconds (kept as seconds,
    a float); it replaces the policy's computed wait for the next attempt (no
    jitter, not capped by `max_interval`: the server said when), and is recorded
    like any back-off, so a restart keeps it. It is a request to retry, so it is
    retried even when `retry_on` does not name it; `max_attempts`, `Retry(timeout=)`
    and `non_retryable` still bound it. Any other exception may ask for a delay the
    same way, through a `retry_after` attribute (seconds or a timedelta) — there
    `retry_on` decides whether it is retried at all.
    """

    def __init__(self, delay: timedelta | float, message: str = "") -> None:
        seconds = _retry_after_seconds(delay)
        if not isinstance(message, str):
            raise TypeError(f"RetryAfter(message={message!r}): the message must be a str")
        # (seconds, message) as the args, so that a recorded one is rebuilt as it was.
        super().__init__(seconds, message)
        self.delay = seconds

    @property
    def retry_after(self) -> float:
        """The seconds to wait before the next attempt (what `Retry` reads)."""
        return self.delay

    @property
    def message(self) -> str:
        return str(self.args[1]) if len(self.args) > 1 else ""

    def __str__(self) -> str:
        said = self.message
        return said if said else f"retry after {self.delay:g}s"


class UpdateError(ReplayKitError):
    """Base of the errors of the update machinery itself (not the errors a workflow
    replies with, which reach the caller as themselves)."""


class UnknownUpdate(UpdateError, LookupError):
    """The workflow declares no update of that name (`@workflow(updates=...)` or a
    `@wf.validator(name)`): no request is sent, or a `ReceiveUpdate` of it fails."""


class UpdateTimeout(UpdateError, TimeoutError):
    """An update was not answered within the caller's timeout.

    The request stays accepted: the run may still answer it, and a call with the
    same update id then gets that answer.
    """


class UpdateRunFinished(UpdateError):
    """The run an update was sent to had finished, or finished without answering it."""


class UpdateAlreadyAnswered(UpdateError, ValueError):
    """A `Reply` to a request that has its answer already (raised in the workflow)."""


class ControlSignal(BaseException):
    """Ends a workflow attempt without recording an outcome."""


class Stopped(ControlSignal):
    """The runtime's own stop: the run was terminated (`terminate`, a second `cancel`,
    a cancel's grace that ran out, a deadline) or its engine is closing.

    Raised where a run's work stands (a step's next attempt, a heartbeat, a composite's
    next look) and never recorded: a `BaseException`, so that `except Exception:` in a
    workflow or a step body cannot swallow it. Not the `Cancelled` a workflow may catch.
    """


class Cancelled(NonRetryable, ReplayKitError):
    """The run was asked to cancel (`cancel(workflow_id, grace=...)`, `CancelRun`, a
    parent closing with `parent_close="cancel"`): raised in the workflow at its current
    yield, and in a heartbeating step body at its next `heartbeat()`.

    A workflow may catch it and run cleanup commands (steps, sends, child calls) within
    the cancel's grace; when it then returns or raises, the run ends CANCELLED with its
    cleanup recorded. Its delivery is a record of the log (the outcome of the command
    the workflow yielded), so a replay raises it at the same position. An ordinary
    exception, never retried: `except Exception:` catches it too, which is what a
    cleanup wants; the grace bounds a workflow that swallows it. `reason` is the one
    the cancel gave.
    """

    def __init__(self, message: str = "cancelled", reason: str = "") -> None:
        super().__init__(message, reason)
        self.reason = reason

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "cancelled"


#: Errors whose meaning is "the live state of this process", which the runtime
#: acts on when it catches one: `StoreError`s (`StoreUnavailable` is retried as an
#: outage, `RecordConflict` stops a run that another writer now owns),
#: `NonDeterminismError` (parks the run), and every `ControlSignal` (cancellation,
#: shutdown, `LogMovedOn`). One that a step or a workflow raised, and the log
#: recorded, is history, not a signal: `serde.decode_error` hands it back as a
#: `StepFailed` naming its type, so that a body re-raising it cannot make the
#: runtime retry, stop or park a run that simply failed. Errors that are recorded
#: outcomes (`WorkflowNotFound`, `AwaitedWorkflowCancelled`, ...) come back as
#: themselves: workflows catch them.
LIVE_ONLY: tuple[type[BaseException], ...] = (ControlSignal, StoreError, NonDeterminismError)
