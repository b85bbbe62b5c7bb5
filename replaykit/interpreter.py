"""The sans-IO core: drive one workflow generator against its log.

An `Interpreter` owns a generator and the records loaded for it. `start()` and
`resume(record)` step the generator and return a `Decision`:

- `Effect`: the first command with no completed record. The runtime carries it
  out, commits a record, and calls `resume(record)` with what it committed.
- `Completed` / `Failed`: the workflow returned or raised.
- `ContinuedAsNew`: the workflow yielded `ContinueAsNew(...)`; its generator is
  closed, and the runtime starts the same id again with these arguments.

Recorded positions are answered from the log without running anything. There
is no clock, thread, database or sleep in here; the runtime owns all of those.
A mismatch between the code and the log raises `NonDeterminismError` out of
the interpreter (it is not an outcome of the workflow; the run stays
resumable once the code is fixed).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import os
import uuid
from collections.abc import Generator, Sequence
from datetime import datetime
from typing import Any, Protocol

import attrs

from replaykit import serde
from replaykit.commands import (
    All,
    Call,
    Command,
    ContinueAsNew,
    DeprecatePatch,
    Now,
    Patch,
    Race,
    Random,
    Received,
    ReceiveUpdate,
    Recv,
    Step,
    Transaction,
    UpdateRequest,
    Uuid,
    WriteStream,
)
from replaykit.errors import Cancelled, InvalidCommandError, NonDeterminismError, StreamClosed
from replaykit.log import (
    CLOSE_STREAM_KIND,
    AllOutcome,
    Failure,
    Outcome,
    RaceOutcome,
    Record,
    Value,
    archive_id,
    received_from_data,
)

__all__ = [
    "SUGGEST_CONTINUE_AS_NEW_AT",
    "Completed",
    "ContinuedAsNew",
    "Decision",
    "Effect",
    "Failed",
    "Heartbeats",
    "Interpreter",
    "ReplaySafeFilter",
    "StepContext",
    "WorkflowContext",
    "WorkflowGenerator",
    "attempt_beats",
    "command_digest",
    "context",
    "decode_outcome",
    "logger",
    "step_context",
    "step_context_var",
]

WorkflowGenerator = Generator[Command, Any, Any]

#: How a recorded `replaykit.errors.Cancelled` is named in the log (`ErrorInfo`).
CANCELLED_MODULE = Cancelled.__module__
CANCELLED_QUALNAME = Cancelled.__qualname__


#: The log length (positions recorded in this generation) from which
#: `context().continue_as_new_suggested` is True. Every cold rebuild of a run
#: (an eviction from the warm cache, a restart, a takeover) reads its whole log and
#: replays every position through the generator, so its cost grows with the log:
#: at 10,000 step records, about 0.1 s on SQLite and 0.16 s on PostgreSQL and a
#: read of 1.5 MB; ten times the log costs ten times that (docs/concepts.md, "Run
#: information"). Counted in positions, never in bytes or time, so that a replay
#: answers as the live run did.
SUGGEST_CONTINUE_AS_NEW_AT = 10_000


@attrs.define
class WorkflowContext:
    """What a workflow body may ask about itself through `replaykit.context()`.

    `run_id` names this generation of the run: `"<workflow_id>#<generation>"`, the
    id its log is archived under once it continues as new. `generation` counts the
    run's `ContinueAsNew`s (0 for the first). `attempt` is the run's recovery count
    as stored: how many times it was recovered after its engine stopped while it
    executed, since it last waited (0 for a run never interrupted); it is not
    recorded, so it may differ on a replay: log it, never choose a command by it.
    `continue_as_new_suggested` is True once this generation's log holds
    `SUGGEST_CONTINUE_AS_NEW_AT` positions; it depends on the position alone, so a
    replay answers as the live run did.
    """

    workflow_id: str
    name: str
    is_replaying: bool = False
    position: int = 0
    #: The id of the run that started this one (`Start`/`Call`), or None.
    parent_id: str | None = None
    generation: int = 0
    attempt: int = 0
    run_id: str = ""

    def __attrs_post_init__(self) -> None:
        if not self.run_id:
            self.run_id = archive_id(self.workflow_id, self.generation)

    @property
    def continue_as_new_suggested(self) -> bool:
        return self.position >= SUGGEST_CONTINUE_AS_NEW_AT


_current: contextvars.ContextVar[WorkflowContext | None] = contextvars.ContextVar(
    "replaykit_workflow_context", default=None
)


def context() -> WorkflowContext:
    """The running workflow's context; only valid inside a workflow body."""
    ctx = _current.get()
    if ctx is None:
        raise RuntimeError(
            "replaykit.context() was called outside a workflow body; it is only "
            "available while the engine or the testing kit is running a workflow"
        )
    return ctx


class Heartbeats(Protocol):
    """Where a step attempt's heartbeats go: the runtime's record of that attempt
    (`runtime/beats.py`), which keeps them durable and judges its heartbeat timeout."""

    def beat(self, details: Any) -> None: ...

    @property
    def earlier(self) -> Any:
        """The details the step's earlier attempt last beat (None if none)."""
        ...


@attrs.frozen
class StepContext:
    """What a step body may ask about the attempt it runs in, through `step_context()`.

    `attempt` is 1 for the first call of the body and grows by one per retry,
    across restarts too (it is recorded with the step). `idempotency_key` is the
    same for every attempt of one step of one run: the key to hand an outside
    service so that a retried or re-run attempt is not done twice.

    `child_path` is the step's place inside a `Race`/`All` at `position`: the
    argument index at each level (`(1,)` for the second child, `(0, 2)` inside a
    nested composite); `()` for a step yielded on its own. The key includes it, so
    the steps of one composite, which share its position, get keys of their own.

    `heartbeat(details)` reports progress (below); `heartbeat_details` is what
    the step's attempt before this one last reported, to go on from there.
    """

    workflow_id: str
    workflow_name: str
    step_name: str
    position: int
    attempt: int
    child_path: tuple[int, ...] = ()
    #: The runtime's record of this attempt's heartbeats; None for a context built
    #: by hand (a unit test calling a step function), which cannot beat.
    _beats: Heartbeats | None = attrs.field(default=None, eq=False, repr=False, alias="beats")

    @property
    def idempotency_key(self) -> str:
        key = f"{self.workflow_id}:{self.position}"
        if self.child_path:
            key += "/" + ".".join(str(index) for index in self.child_path)
        return key

    def heartbeat(self, details: Any = None) -> None:
        """Say the attempt is alive, and how far it got: `details` (JSON-encodable, as a
        step's result) is kept durably as the step's latest heartbeat.

        Shown by `replaykit workflows show`, the UI and `Client.get_heartbeats`; read
        back by the next attempt as `heartbeat_details`. Cheap enough for a loop:
        writes are throttled (the first beat of an attempt at once, then at most one
        a second, and the last one when the attempt ends). A step with
        `heartbeat_timeout=` fails when its beats stop for longer. When the run was
        cancelled, or the attempt abandoned, this raises the runtime's stop signal
        (`replaykit.errors.Cancelled`, not an `Exception`), so the body stops there;
        let it propagate (a `finally` runs). `details` that cannot be encoded raise
        `SerializationError` (or `PayloadTooLarge`) here, in the body.
        """
        if self._beats is None:
            raise RuntimeError(
                f"step {self.step_name!r} of workflow id {self.workflow_id!r}: this "
                "StepContext was built by hand, so no engine records its heartbeats; "
                "heartbeat() works in a step run by an Engine or replaykit.testing"
            )
        self._beats.beat(details)

    @property
    def heartbeat_details(self) -> Any:
        """The details this step last beat before this attempt (as JSON data: a dict
        comes back a dict), or None: what a retry, or the same attempt run again
        after a crash or a takeover, goes on from. The first attempt of a step
        with no `heartbeat_timeout` in a run never recovered reads None without
        asking the store."""
        return None if self._beats is None else self._beats.earlier


def attempt_beats(context: StepContext) -> Heartbeats | None:
    """The runtime's record of the attempt's heartbeats behind `context` (None for a
    context built by hand), for the testing kit, which moves time inside a body."""
    return context._beats


#: Set by the runtime around each attempt of a step body (on the thread or in the
#: task that runs it); read by `step_context()`.
step_context_var: contextvars.ContextVar[StepContext | None] = contextvars.ContextVar(
    "replaykit_step_context", default=None
)


def step_context() -> StepContext:
    """The running step attempt's context; only valid inside a step body."""
    ctx = step_context_var.get()
    if ctx is None:
        inside_workflow = _current.get() is not None
        raise RuntimeError(
            "replaykit.step_context() was called "
            + ("in a workflow body, between its commands" if inside_workflow else "outside a step")
            + "; it is only available inside the function a Step runs (sync or async), "
            "while the engine or the testing kit runs it. In a workflow body, use "
            "replaykit.context() instead"
        )
    return ctx


class ReplaySafeFilter(logging.Filter):
    """Drops a logger's records while a workflow body replays, and tags the others.

    Inside a workflow body each record gets `workflow_id`, `workflow_name` and
    `position` attributes (for a formatter's `%(workflow_id)s`, or a JSON log
    handler); outside one they are None and nothing is dropped. Code between a
    workflow's commands re-runs on every replay: with this filter on a logger,
    each line appears once per run, not once per replay.

    `replaykit.logger` has it already; for a module logger of your own:
    `logging.getLogger(__name__).addFilter(replaykit.ReplaySafeFilter())`. A
    filter added to a handler instead covers every logger that handler serves.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = _current.get()
        if ctx is None:
            # Set, so that one format string serves lines from inside and outside.
            for name in ("workflow_id", "workflow_name", "position"):
                if not hasattr(record, name):
                    setattr(record, name, None)
            return True
        record.workflow_id = ctx.workflow_id
        record.workflow_name = ctx.name
        record.position = ctx.position
        return not ctx.is_replaying


logger = logging.getLogger("replaykit.workflow")
logger.addFilter(ReplaySafeFilter())


@attrs.frozen
class Effect:
    """A command the runtime must carry out and record at `position`.

    `pending` is the record written when a timed command started (its deadline
    is already fixed); it is `None` for a command never seen before.
    """

    position: int
    command: Command
    call_site: str
    digest: str
    pending: Record | None = None


@attrs.frozen
class Completed:
    value: Any


@attrs.frozen
class Failed:
    error: BaseException


@attrs.frozen
class ContinuedAsNew:
    """The workflow asked to start over under its id with these (not yet encoded) arguments."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


Decision = Effect | Completed | Failed | ContinuedAsNew


@functools.lru_cache(maxsize=4096)
def _cached_return_type(fn: Any) -> Any:
    return serde.return_type_of(fn)


def _return_type(fn: Any) -> Any:
    try:
        return _cached_return_type(fn)
    except TypeError:  # unhashable callables
        return serde.return_type_of(fn)


def result_type(command: Command) -> Any:
    """The type a command's recorded value decodes to (`None`: plain JSON data)."""
    if isinstance(command, (Step, Transaction)):
        return _return_type(command.fn)
    if isinstance(command, Now):
        return datetime
    if isinstance(command, Uuid):
        return uuid.UUID
    if isinstance(command, Random):
        return float
    if isinstance(command, Call):
        return getattr(command.workflow, "result_type", None)
    if isinstance(command, ReceiveUpdate):
        return UpdateRequest | None  # None: its timeout passed first
    return None


def _decode_child(command: Command, outcome: Outcome) -> tuple[bool, Any]:
    """(ok, value-or-exception) for one child outcome held in a composite record."""
    if isinstance(outcome, Failure):
        return False, serde.decode_error(outcome.error)
    if isinstance(command, (Race, All)):
        # A nested composite's value is its own record's data; when that says it
        # failed (an inner Race won by a failure, an inner fail-fast All), the
        # failure is this child's.
        try:
            return True, _decode_value(command, outcome.data)
        except Exception as exc:
            return False, exc
    return True, _decode_value(command, outcome.data)


def _decode_value(command: Command, data: Any) -> Any:
    if isinstance(command, WriteStream):
        return None  # the recorded value is for the stream's readers, not the writer
    if isinstance(command, Recv) and command.topics is not None and data is not None:
        return Received(*received_from_data(data))  # None: its timeout passed first
    if isinstance(command, Race):
        race = RaceOutcome.from_data(data)
        ok, value = _decode_child(command.children[race.index], race.outcome)
        if not ok:
            raise value
        return (race.index, value)
    if isinstance(command, All):
        every = AllOutcome.from_data(data)
        first = every.first_failure
        if first is not None and not command.return_exceptions:
            # Fail-fast: children still running when the first failed have no
            # outcome worth decoding.
            ok, error = _decode_child(command.children[first], every.outcomes[first])
            if not ok:
                raise error
        results: list[Any] = []
        for child, outcome in zip(command.children, every.outcomes, strict=True):
            results.append(_decode_child(child, outcome)[1])
        return results
    hint = result_type(command)
    if hint is None:
        return data
    return serde.decode(data, hint, what=f"the recorded value of {command.describe()}")


def decode_outcome(command: Command, outcome: Outcome) -> tuple[bool, Any]:
    """(True, value) or (False, exception) for what the generator should see."""
    if isinstance(outcome, Failure):
        return False, serde.decode_error(outcome.error)
    try:
        return True, _decode_value(command, outcome.data)
    except Exception as exc:  # a child failure of a composite is the composite's failure
        return False, exc


def command_digest(command: Command) -> str:
    """Digest of a command's arguments; "" when they have no JSON form.

    Arguments are only digested, never stored, so a step may take a database
    connection or a client object; such a step is just not compared in strict mode.
    """
    described = command.describe_args()
    try:
        # Plain JSON arguments (the common case) digest without a cattrs pass;
        # for them both paths give the same canonical JSON.
        return serde.digest_json(serde.canonical_json(described))
    except (TypeError, ValueError):
        pass
    try:
        return serde.digest(serde.encode(described))
    except Exception:
        return ""


_display_paths: dict[str, str] = {}


def _display_path(filename: str) -> str:
    shown = _display_paths.get(filename)
    if shown is None:
        try:
            rel = os.path.relpath(filename)
            shown = filename if rel.startswith("..") else rel
        except ValueError:
            shown = filename
        _display_paths[filename] = shown
    return shown


# `yield from Step(...)` passes through the command's own iterator: the call
# site is the workflow's line, not the line inside the commands package.
_TRANSPARENT = frozenset({Step.__iter__.__code__})


def call_site(gen: Any) -> str:
    """file:line of the `yield` the generator is paused at, through `yield from` chains."""
    current = gen
    while True:
        inner = getattr(current, "gi_yieldfrom", None)
        frame = getattr(inner, "gi_frame", None)
        if frame is None or frame.f_code in _TRANSPARENT:
            break
        current = inner
    frame = getattr(current, "gi_frame", None)
    if frame is None:
        return ""
    return _site(frame.f_code.co_filename, frame.f_lineno)


@functools.lru_cache(maxsize=4096)
def _site(filename: str, line: int) -> str:
    # One string per call site, shared by every run paused there (a warm run keeps it).
    return f"{_display_path(filename)}:{line}"


def _starts_children(command: Command) -> bool:
    if command.kind in ("start", "call"):
        return True
    return isinstance(command, (Race, All)) and any(_starts_children(c) for c in command.children)


def _explain_bad_yield(value: Any) -> str:
    if value is None:
        return (
            "yielded None (a bare `yield`); yield a command instead, e.g. "
            "`result = yield Step('name', fn, ...)`"
        )
    if isinstance(value, type) and issubclass(value, Command):
        return f"yielded the class {value.__name__} itself; call it: `yield {value.__name__}(...)`"
    if inspect.iscoroutine(value):
        name = getattr(value, "__qualname__", "?")
        value.close()  # it never ran; closing avoids a "never awaited" warning
        return (
            f"yielded a coroutine from calling the async function {name}(); replaykit runs "
            f"async functions as steps: `yield Step('{name}', {name}, ...)` (without the call)"
        )
    if inspect.isgenerator(value):
        name = getattr(value, "__qualname__", "?")
        return (
            f"yielded the generator {name}(); to run a helper workflow inline, "
            f"delegate to it with `yield from {name}(...)`"
        )
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        name = getattr(value, "__qualname__", repr(value))
        return (
            f"yielded the function {name} itself; to run it durably, wrap it: "
            f"`yield Step('{name}', {name}, ...)`"
        )
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Command) for v in value):
        return (
            f"yielded a {type(value).__name__} of commands; to run them concurrently "
            "yield All(...) (or Race(...) for the first to finish)"
        )
    return (
        f"yielded {type(value).__qualname__} {value!r:.80}; a workflow may only yield "
        "replaykit commands (Step, Sleep, Recv, Race, All, ...)"
    )


class Interpreter:
    """Drives one workflow generator against its recorded log.

    `strict=True` also compares a digest of each command's arguments with the
    one recorded. The interpreter never runs a command itself.
    """

    __slots__ = (
        "_base",
        "_closed",
        "_closed_streams",
        "_ctx",
        "_declined",
        "_gen",
        "_keep_records",
        "_position",
        "_records",
        "_waiting",
        "cancel_delivered",
        "has_children",
        "strict",
        "trace",
        "workflow_id",
        "workflow_name",
    )

    def __init__(
        self,
        gen: WorkflowGenerator,
        records: Sequence[Record],
        *,
        workflow_name: str,
        workflow_id: str,
        strict: bool = False,
        trace: list[tuple[int, str, str]] | None = None,
        keep_records: bool = True,
        parent_id: str | None = None,
        generation: int = 0,
        attempt: int = 0,
    ) -> None:
        if not inspect.isgenerator(gen):
            raise InvalidCommandError(
                f"workflow {workflow_name!r} (id {workflow_id!r}) did not return a generator "
                f"but {type(gen).__qualname__}; a workflow body must `yield` commands "
                "(did you forget a `yield` before a Step?)"
            )
        self._gen = gen
        self._records = list(records)
        # The position of `_records[0]`: records before it were let go (keep_records=False).
        self._base = 0
        self._position = 0
        self._waiting: Effect | None = None
        self._closed = False
        # Stream key -> the position of the run's first CloseStream of it, from the
        # records replayed and committed so far (see `_stream_closed`). None until the
        # first close: most runs close no stream, and a warm run keeps its interpreter.
        self._closed_streams: dict[str, int] | None = None
        # Patch name -> the position where it first answered False in this run (see
        # `_decline`). Derived from the log as it replays, so a warm run and a run
        # rebuilt from its log hold the same; None until the first decline.
        self._declined: dict[str, int] | None = None
        #: Whether the log delivered a cancel to this run: a record whose outcome is
        #: `Cancelled` (raised at that yield). Derived from the log as it replays,
        #: so a warm run and a run rebuilt from its log agree; the runtime ends such a
        #: run CANCELLED however its generator ends, and delivers no second one.
        self.cancel_delivered = False
        #: Whether this generation's code yielded a `Start` or a `Call` (in a composite
        #: too): only then does the run's end look for live children to close.
        self.has_children = False
        self._ctx = WorkflowContext(
            workflow_id,
            workflow_name,
            bool(self._records),
            0,
            parent_id=parent_id,
            generation=generation,
            attempt=attempt,
        )
        self.workflow_name = workflow_name
        self.workflow_id = workflow_id
        self.strict = strict
        # (position, kind, name) of every command the code yielded, for the testing kit.
        self.trace = trace
        # False: records are let go once replayed past, and live ones are not kept, so
        # a long-lived run held in memory between wake-ups does not grow with its log.
        self._keep_records = keep_records

    @property
    def position(self) -> int:
        """The next position a yielded command would take."""
        return self._position

    @property
    def waiting(self) -> Effect | None:
        """The effect the generator waits on (None: none, or it finished)."""
        return self._waiting

    @property
    def records(self) -> Sequence[Record]:
        """The records replayed and committed so far (only those still to replay when
        built with `keep_records=False`)."""
        return self._records

    def start(self) -> Decision:
        return self._run(True, None)

    def resume(self, record: Record) -> Decision:
        """Continue with the record the runtime committed for the awaited effect."""
        effect = self._waiting
        if effect is None:
            raise RuntimeError("resume() called with no effect awaiting an outcome")
        if record.position != effect.position or record.outcome is None:
            raise ValueError(
                f"resume() needs the completed record of position {effect.position}, "
                f"got position {record.position}"
                + (" (still pending)" if record.outcome is None else "")
            )
        self._waiting = None
        if effect.position < self._base + len(self._records):
            self._records[effect.position - self._base] = record
        elif self._keep_records:
            self._records.append(record)
        self._position = effect.position + 1
        self._note_stream(record)
        self._note_cancel(record.outcome)
        if (
            isinstance(effect.command, Patch)
            and isinstance(record.outcome, Value)
            and record.outcome.data is False
        ):
            # A caller may answer a marker False (`testing.replay` does for a finished
            # run that never saw the patch): the rule holds for it as well.
            self._decline(effect.command.name, effect.position)
        ok, value = decode_outcome(effect.command, record.outcome)
        return self._run(ok, value)

    def close(self) -> None:
        """Drop the generator cleanly (runs its `finally` blocks, nothing else)."""
        if self._closed:
            return
        self._closed = True
        token = _current.set(self._ctx)
        try:
            self._gen.close()
        except RuntimeError as exc:
            raise InvalidCommandError(
                f"workflow {self.workflow_name!r} (id {self.workflow_id!r}) yielded while "
                f"being closed at position {self._position}; a `finally:` or "
                "`except GeneratorExit:` block must not yield commands"
            ) from exc
        finally:
            _current.reset(token)

    # -- internals -------------------------------------------------------------

    def _where(self) -> str:
        return (
            f"workflow {self.workflow_name!r} (id {self.workflow_id!r}) "
            f"at position {self._position}"
        )

    def _run(self, ok: bool, value: Any) -> Decision:
        if self._closed:
            raise RuntimeError(f"{self._where()}: the interpreter was closed")
        gen = self._gen
        records = self._records
        base = self._base
        end = base + len(records)  # positions below `end` are answered from the log
        ctx = self._ctx
        token = _current.set(ctx)
        try:
            while True:
                ctx.position = self._position
                ctx.is_replaying = self._position < end
                try:
                    yielded = gen.send(value) if ok else gen.throw(value)
                except StopIteration as stop:
                    self._closed = True
                    self._check_log_consumed("returned")
                    return Completed(stop.value)
                except Exception as exc:
                    self._closed = True
                    self._check_log_consumed(f"raised {type(exc).__name__}")
                    return Failed(exc)

                if not isinstance(yielded, Command) or not yielded.kind:
                    error = InvalidCommandError(f"{self._where()}: {_explain_bad_yield(yielded)}")
                    self._abandon()
                    return Failed(error)

                position = self._position
                if not self.has_children and _starts_children(yielded):
                    self.has_children = True
                if self.trace is not None:
                    self.trace.append((position, yielded.kind, yielded.name))

                if (
                    isinstance(yielded, WriteStream)
                    and self._closed_streams is not None
                    and yielded.key in self._closed_streams
                ):
                    # Decided by the log's earlier close: no position is taken, and a
                    # replay raises it at the same point.
                    ok, value = False, self._stream_closed(yielded)
                    continue
                if isinstance(yielded, ContinueAsNew):
                    return self._continue_as_new(yielded)

                if isinstance(yielded, (Patch, DeprecatePatch)):
                    marker = records[position - base] if position < end else None
                    if (
                        marker is not None
                        and marker.kind == "patch"
                        and marker.name == yielded.name
                    ):
                        # The log's marker wins, even after a decline: a log written
                        # before answers were kept per run replays as it was recorded.
                        self._position += 1
                        ok, value = True, (True if isinstance(yielded, Patch) else None)
                        continue
                    declined_at = self._declined_at(yielded.name)
                    if declined_at is not None:
                        if isinstance(yielded, DeprecatePatch):
                            raise self._deprecated_after_decline(yielded, declined_at)
                        # Once False, False for the rest of the run, so that it never
                        # takes half of each branch; no position is taken.
                        ok, value = True, False
                        continue
                    if isinstance(yielded, DeprecatePatch) or marker is not None:
                        # A run recorded before the patch (or after its removal
                        # began) has no marker here: take no position.
                        if isinstance(yielded, Patch):
                            self._decline(yielded.name, position)
                        ok, value = True, (False if isinstance(yielded, Patch) else None)
                        continue

                if position < end:
                    record = records[position - base]
                    self._check_match(yielded, record)
                    if record.outcome is None:
                        return self._await(
                            Effect(position, yielded, call_site(gen), record.digest, record)
                        )
                    self._position += 1
                    self._note_stream(record)
                    self._note_cancel(record.outcome)
                    ok, value = decode_outcome(yielded, record.outcome)
                    continue

                return self._await(
                    Effect(position, yielded, call_site(gen), command_digest(yielded))
                )
        finally:
            _current.reset(token)

    def _await(self, effect: Effect) -> Effect:
        self._waiting = effect
        if not self._keep_records and effect.position >= self._base + len(self._records):
            # Live from here on: no position below will be looked at again.
            self._records = []
            self._base = effect.position
        return effect

    def catch_up(self, records: Sequence[Record]) -> None:
        """Take records that another writer committed from the awaited position on.

        The run's log moved on while this interpreter waited at `position`:
        `records` are the log's records from that position (read with
        `load_log(since=position)`). The caller then resumes with the first of
        them, and the generator replays the rest before it goes live again,
        without being rebuilt and without the earlier records being read again.
        """
        effect = self._waiting
        if effect is None or self._closed:
            raise RuntimeError("catch_up() needs an interpreter waiting for an effect")
        if not records or records[0].position != effect.position:
            raise ValueError(
                f"catch_up() needs the records from position {effect.position} on, got "
                + (f"position {records[0].position} first" if records else "none")
            )
        self._records = list(records)
        self._base = effect.position

    def _note_cancel(self, outcome: Outcome) -> None:
        if (
            isinstance(outcome, Failure)
            and outcome.error.module == CANCELLED_MODULE
            and outcome.error.qualname == CANCELLED_QUALNAME
        ):
            self.cancel_delivered = True

    def _note_stream(self, record: Record) -> None:
        if record.kind == CLOSE_STREAM_KIND and isinstance(record.outcome, Value):
            if self._closed_streams is None:
                self._closed_streams = {}
            self._closed_streams.setdefault(record.name, record.position)

    def _declined_at(self, name: str) -> int | None:
        return None if self._declined is None else self._declined.get(name)

    def _decline(self, name: str, position: int) -> None:
        """Note that `Patch(name)` answered False at `position`: it does for the rest of
        the run. Only replay of the log leads here (a position holding another command,
        or a marker answered False), so every replay of the same log notes the same."""
        if self._declined is None:
            self._declined = {}
        self._declined.setdefault(name, position)

    def _deprecated_after_decline(self, command: DeprecatePatch, declined_at: int) -> Exception:
        site = call_site(self._gen)
        self._abandon()
        return NonDeterminismError(
            f"{self._where()}: DeprecatePatch({command.name!r}) at {site or '<unknown>'} "
            f"assumes the patched branch, but this run took the old one: Patch("
            f"{command.name!r}) answered False at position {declined_at}, where its log "
            "holds a command recorded before the patch shipped. Going on would run half "
            f"of each branch. Keep `if (yield Patch({command.name!r})):` with its old "
            "branch at this site until the runs that started before the patch have "
            "finished (docs/versioning.md), or fork this run from position "
            f"{declined_at} or earlier (engine.fork / `replaykit workflows fork`).",
            workflow_name=self.workflow_name,
            workflow_id=self.workflow_id,
            position=self._position,
            yielded=f"{command.kind} {command.name!r}",
            yielded_at=site,
            recorded=f"Patch({command.name!r}) answered False at position {declined_at}",
            recorded_at="",
        )

    def _stream_closed(self, command: WriteStream) -> StreamClosed:
        assert self._closed_streams is not None  # only asked of a stream seen closed
        closed_at = self._closed_streams[command.key]
        return StreamClosed(
            f"{self._where()}: WriteStream({command.key!r}) refused: this run closed the "
            f"stream {command.key!r} at position {closed_at} (CloseStream), and its readers "
            "have ended. Write every value before closing the stream, or write to another key"
        )

    def _continue_as_new(self, command: ContinueAsNew) -> ContinuedAsNew:
        """The generation ends here, as a return would: its generator is closed (its
        `finally` blocks run), and positions recorded past this point are drift."""
        self._closed = True
        try:
            self._gen.close()
        except RuntimeError as exc:
            raise InvalidCommandError(
                f"{self._where()}: the workflow yielded while being closed after "
                "ContinueAsNew; a `finally:` or `except GeneratorExit:` block must not yield "
                "commands"
            ) from exc
        self._check_log_consumed("continued as new")
        return ContinuedAsNew(tuple(command.args), dict(command.kwargs))

    def _abandon(self) -> None:
        self._closed = True
        # A generator that yields on close is reported by the caller's error.
        with contextlib.suppress(RuntimeError):
            self._gen.close()

    def _check_log_consumed(self, how: str) -> None:
        remaining = self._base + len(self._records) - self._position
        if remaining <= 0:
            return
        nxt = self._records[self._position - self._base]
        raise NonDeterminismError(
            f"{self._where()}: the workflow {how} here, but the log records "
            f"{remaining} more position(s), starting with {nxt.describe()} recorded at "
            f"{nxt.call_site or '<unknown>'}. The code no longer takes the path it took "
            "when this run was recorded. " + _FIX_ADVICE,
            workflow_name=self.workflow_name,
            workflow_id=self.workflow_id,
            position=self._position,
            yielded=f"<{how}>",
            yielded_at="",
            recorded=nxt.describe(),
            recorded_at=nxt.call_site,
        )

    def _check_match(self, command: Command, record: Record) -> None:
        problem = ""
        if command.kind != record.kind or command.name != record.name:
            problem = "different command"
        elif self.strict and record.digest:
            current = command_digest(command)
            if current and current != record.digest:
                problem = "same command with different arguments (strict mode)"
        if not problem:
            return
        site = call_site(self._gen)
        self._abandon()
        raise NonDeterminismError(
            f"{self._where()}: {problem}. The code yielded {command.kind} {command.name!r} "
            f"at {site or '<unknown>'}, but the log recorded {record.describe()} at "
            f"{record.call_site or '<unknown>'}. " + _FIX_ADVICE,
            workflow_name=self.workflow_name,
            workflow_id=self.workflow_id,
            position=record.position,
            yielded=f"{command.kind} {command.name!r}",
            yielded_at=site,
            recorded=record.describe(),
            recorded_at=record.call_site,
        )


_FIX_ADVICE = (
    "To change a workflow that has runs in flight: guard the new code with "
    "`if (yield Patch('change-name')):`, or ship it under a new workflow/app version "
    "so old runs finish on old code, or fork the run from an earlier position "
    "(engine.fork / `replaykit workflows fork`)."
)
