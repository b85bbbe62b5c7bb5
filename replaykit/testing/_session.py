"""One simulated life of a workflow run: engines, a virtual clock, a journaled store.

A `Session` owns a `MemoryStore`, a `KitClock` and a journal of everything
that happened: every store write (with the virtual time it happened at) and
every call of a step body. It starts an `Engine` (a "process") on that store,
drives it until the run finishes or blocks for good, and can crash it: a
store wrapper refuses a chosen commit, the dead process is closed, and a new
engine recovers the run from the store, as a restarted process would.

`check_determinism` reads the journal of one session to seed others: the
store writes before a commit, replayed into a fresh store, are exactly what a
process that died at that commit would have left behind.
"""

from __future__ import annotations

import contextlib
import functools
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

import attrs

from replaykit import serde
from replaykit.commands import Awakeable
from replaykit.errors import (
    CompletionRefused,
    ControlSignal,
    NonDeterministicCall,
    WorkflowNotFound,
)
from replaykit.log import Log, Outcome, Record, Status
from replaykit.registry import Workflow
from replaykit.runtime import awakeables
from replaykit.runtime.admin import export_run
from replaykit.runtime.engine import Engine
from replaykit.runtime.warm import DEFAULT_MAX_CACHED_RUNS
from replaykit.serde import PayloadCodec
from replaykit.stores.base import FinishWrite, RecordWrite, Store, WorkflowFilter, WorkflowRow
from replaykit.stores.codec import CodecStore
from replaykit.stores.memory import MemoryStore
from replaykit.testing._arrivals import Arrives, checked_at
from replaykit.testing._cancels import Cancel, deliver_cancel
from replaykit.testing._clock import KitClock
from replaykit.testing._completions import Completion, CompletionBook
from replaykit.testing._fakes import StepCall, StepTap, fresh_fakes
from replaykit.testing._real_steps import RealSteps, RealStepsRule
from replaykit.testing._sandbox import sandboxed
from replaykit.testing._updates import Update, request_of, update_id_of

#: A delivery's store write as the journal keeps it: the method, its arguments, its keywords.
_Sent = tuple[str, tuple[Any, ...], dict[str, Any]]

#: `run(warm=...)`: replay at every wake-up (False), keep runs warm (True), or ask
#: `(workflow_id, position) -> bool` at each suspension whether the run stays warm.
Warm = bool | Callable[[str, int], bool]

__all__ = [
    "APP_VERSION",
    "Commit",
    "Exec",
    "KitClock",
    "Message",
    "Session",
    "SessionTimeout",
    "SimulatedCrash",
    "TooManyGenerations",
    "Warm",
    "Write",
    "default_workflow_id",
]

A = TypeVar("A")

#: Every engine the kit starts claims this version, so each recovers the others' runs.
APP_VERSION = "replaykit.testing"
#: How many times `run()` lets a run continue as new before it stops it.
DEFAULT_MAX_GENERATIONS = 1000


def default_workflow_id(wf: Workflow[..., Any]) -> str:
    # Fixed rather than random: child ids derive from it, and the runs a
    # determinism check compares must agree on every id.
    return f"{wf.workflow_name}:test"


def _message_at(value: timedelta | datetime | float) -> timedelta | datetime:
    return checked_at(value, "Message")


@attrs.frozen
class Message(Arrives):
    """A message the test delivers to a run's inbox at a virtual time.

    `at` is when it arrives: a `timedelta` (or seconds) after the run started,
    or an absolute aware `datetime`. `to` is a workflow id; by default the
    workflow under test. Messages arriving at the same instant are delivered
    in the order given, and before any timer due at that instant fires.
    """

    topic: str | None
    payload: Any = None
    at: timedelta | datetime = attrs.field(default=timedelta(0), converter=_message_at)
    to: str | None = None


@attrs.frozen
class Commit:
    """One commit the store was asked to make: a crash point.

    `position` is None for the commit that finishes the run. `completes` is
    False for the record a timed command (`Sleep`, `Recv(timeout=...)`, a
    `Race` holding one) writes when it starts.
    """

    workflow_id: str
    position: int | None
    kind: str
    name: str
    completes: bool = True
    # The attempt a step's record is written for (a retried step writes its start once
    # per attempt, alike but for this): 0 for any other commit.
    attempt: int = 0

    def describe(self) -> str:
        if self.kind == CONTINUE_KIND:
            return f"continuing workflow id {self.workflow_id!r} as new ({self.name})"
        if self.position is None:
            return f"finishing workflow id {self.workflow_id!r} as {self.name}"
        what = f"{self.kind} {self.name!r}"
        if not self.completes:
            what += " (its start)" if self.attempt <= 1 else f" (its start, attempt {self.attempt})"
        return f"{what} at position {self.position} of workflow id {self.workflow_id!r}"


#: `Commit.kind` of the commit that archives a generation and starts the next.
CONTINUE_KIND = "continue_as_new"


@attrs.frozen
class Write:
    """A store write that succeeded, in journal order."""

    index: int
    engine: int
    method: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    workflow_id: str
    at: datetime
    commit: Commit | None = None
    kit_message: int | None = None  # index into the session's messages
    kit_completion: int | None = None  # index into the session's completions

    @property
    def on_timeline(self) -> bool:
        """A write that marks progress of a run (not an engine's housekeeping).

        Housekeeping (heartbeats, releasing runs on close) happens at whatever
        time the clock shows, which may be a timer left behind by a wait that
        ended early; the time of progress is what a run's timeline is made of.
        """
        return (
            self.commit is not None
            or self.kit_message is not None
            or self.kit_completion is not None
            or self.method in ("create_workflow", "record", "finish_workflow", "send_message")
            or self._ends_a_run()
        )

    @property
    def is_heartbeat(self) -> bool:
        """A step body's heartbeat: journaled so that a store rebuilt from the journal
        holds it, but written whenever the body's thread got there, during a step's
        call; no commit of the run's, and no sign of which calls were in flight."""
        return self.method == "record_step_heartbeat"

    def _ends_a_run(self) -> bool:
        """A cancel (at a run's deadline, say) ends the run's timeline where it happens."""
        if self.method != "set_status":
            return False
        status = self.args[1] if len(self.args) > 1 else self.kwargs.get("status")
        return isinstance(status, Status) and status.is_terminal


@attrs.frozen
class Exec:
    """A step body was called (one attempt)."""

    index: int
    engine: int
    name: str


class SimulatedCrash(ControlSignal):
    """The testing kit's simulated process crash: the commit under way is lost."""


class TooManyGenerations(AssertionError):
    """The run continued as new more often than the testing kit was told to follow."""


class _GenerationLimit(ControlSignal):
    """Stops the activation whose continue went past the limit; nothing is written."""


class SessionTimeout(TimeoutError):
    """The run neither finished nor blocked within the wall-clock budget."""


#: Store methods that change nothing; every other method is journaled as a write.
#: Executor holds are among them: a hold belongs to its live process, not to the
#: store's data, and a replayed journal must not hold an id for nobody.
_READS = frozenset(
    {
        "get_workflow",
        "list_workflows",
        "count_workflows",
        "count_workflows_by",
        "load_log",
        "peek_message",
        "get_event",
        "get_events",
        "get_step_heartbeats",
        "subscribe",
        "hold_executor",
        "executor_holder",
    }
)
#: What the engine of a crashed process sees until it is closed: no runs, nothing to
#: claim or take over, no schedule. Its activations end at their first read, and its
#: background threads (queue claims, polling, the cron loop) get quiet answers
#: instead of an exception that would kill them. Only commits and the writes an
#: activation makes raise.
_WHEN_DEAD: Mapping[str, Any] = {
    "get_workflow": None,
    "list_workflows": [],
    "count_workflows": 0,
    "count_workflows_by": {},
    "load_log": [],
    "peek_message": None,
    "get_event": (False, None),
    "get_events": {},
    "get_step_heartbeats": [],
    # A body of the dead process may still beat: its thread is lost work, told nothing.
    "record_step_heartbeat": False,
    "release": [],
    "heartbeat": [],  # the ids a beat took over: none
    "take_over": [],
    "claim": [],
    # The cron loop's thread: it finds no schedule and registers none.
    "schedule_states": {},
    "register_schedules": None,
}


def _workflow_id_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    if args and isinstance(args[0], str):
        return args[0]
    if args and isinstance(args[0], WorkflowRow):
        return args[0].workflow_id
    found = kwargs.get("workflow_id")
    return found if isinstance(found, str) else ""


class JournalStore:
    """The store one simulated process sees: journals writes, can crash at a commit.

    `record` and `finish_workflow` are commits, where a crash may be injected;
    every other method of the `Store` protocol is passed through (and
    journaled, unless it only reads), so the wrapper keeps up with the
    protocol as it grows. Once crashed, the process does nothing more: it
    reads no run (`_WHEN_DEAD`) and every write raises `SimulatedCrash`.
    """

    def __init__(self, session: Session, engine_no: int) -> None:
        self._session = session
        self._inner: Store = session.store
        self._engine_no = engine_no
        self.dead = False

    def _call(
        self,
        method: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        commit: Commit | None = None,
    ) -> Any:
        session = self._session
        if self.dead:
            if method in _WHEN_DEAD:
                return _WHEN_DEAD[method]
            raise SimulatedCrash("this simulated process has crashed; it writes nothing more")
        if commit is not None and session.should_crash(commit):
            self.dead = True
            session.crashed(self._engine_no, commit)
            raise SimulatedCrash(f"simulated crash before committing {commit.describe()}")
        at = session.clock.now()
        result = getattr(self._inner, method)(*args, **kwargs)
        if method == "record" and result is not args[1]:
            commit = None  # the position held a record already: this commit wrote nothing
        session.journal_write(self._engine_no, method, args, kwargs, at, commit)
        return result

    def record(self, workflow_id: str, record: Record, **kwargs: Any) -> Record:
        commit = Commit(
            workflow_id,
            record.position,
            record.kind,
            record.name,
            record.outcome is not None,
            record.attempts if record.kind == "step" else 0,
        )
        stored: Record = self._call("record", (workflow_id, record), kwargs, commit)
        if stored is record and record.kind == Awakeable.kind:
            # Its time is its journal entry's: the clock does not move during a commit.
            self._session.recorded(workflow_id, record, self._session.clock.now())
        return stored

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | BaseException]:
        # One commit point per write, in order, as a process writing them one by one
        # would have: a crash lands between any two of them.
        return _one_by_one(writes, self.record, "workflow_id", "record")

    def finish_workflow(
        self, workflow_id: str, status: Status, result: Outcome | None, **kwargs: Any
    ) -> bool:
        last: Record | None = kwargs.pop("record", None)
        if last is not None:
            # A finish that carries the run's last record is taken apart into the two
            # commits it replaces, each with its crash point: the journal, the crash
            # points and the kit's checks see every record, and a crash between the
            # two leaves what recovery has always handled (the record without the end).
            self.record(workflow_id, last, executor_id=kwargs.get("executor_id"))
        commit = Commit(workflow_id, None, "finish", status.value)
        done: bool = self._call("finish_workflow", (workflow_id, status, result), kwargs, commit)
        return done

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | BaseException]:
        # One commit point per finish, in order, as for record_many.
        return _one_by_one(finishes, self.finish_workflow, "workflow_id", "status", "result")

    def continue_workflow(self, workflow_id: str, inputs: Any, **kwargs: Any) -> WorkflowRow:
        generation: int = kwargs["generation"]
        session = self._session
        if not self.dead and generation >= session.max_generations:
            session.stop_generations(workflow_id, generation)
            raise _GenerationLimit(f"workflow id {workflow_id!r}: too many generations")
        commit = Commit(workflow_id, None, CONTINUE_KIND, f"generation {generation + 1}")
        row: WorkflowRow = self._call("continue_workflow", (workflow_id, inputs), kwargs, commit)
        return row

    def set_status(self, *args: Any, **kwargs: Any) -> bool:
        if self.dead and kwargs.get("reset_recovery"):
            # The crash-loop counter's reset after progress is bookkeeping a background
            # thread does; a killed process loses it without a word. Raising here would
            # have the engine's work pool log the simulated crash as a failure, with a
            # traceback, in a test that passes.
            return False
        changed: bool = self._call("set_status", args, kwargs)
        return changed

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self._inner.subscribe(callback)

    def close(self) -> None:
        # The store outlives the simulated process: the next one recovers from it.
        pass


def _passthrough(name: str) -> Callable[..., Any]:
    if name in _READS:

        def read(self: JournalStore, *args: Any, **kwargs: Any) -> Any:
            if self.dead:
                return _WHEN_DEAD.get(name)
            return getattr(self._inner, name)(*args, **kwargs)

        read.__name__ = name
        return read

    def write(self: JournalStore, *args: Any, **kwargs: Any) -> Any:
        return self._call(name, args, kwargs)

    write.__name__ = name
    return write


for _name, _member in vars(Store).items():
    if not _name.startswith("_") and callable(_member) and _name not in vars(JournalStore):
        setattr(JournalStore, _name, _passthrough(_name))


class _SeededEntropy:
    """Reproducible `Random()` and `Uuid()`: each draw derived from (seed, run id, position).

    One per engine: an engine started after a simulated crash draws the same
    values again, so a recovered run sees what an uninterrupted run saw; within
    one engine a position drawn twice gets a new value.
    """

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._drawn: dict[tuple[str, int, str], int] = {}
        self._lock = threading.Lock()

    def __call__(self, workflow_id: str, position: int, kind: str) -> random.Random:
        key = (workflow_id, position, kind)
        with self._lock:
            nth = self._drawn.get(key, 0)
            self._drawn[key] = nth + 1
        return random.Random(f"{self._seed}:{workflow_id}:{position}:{kind}:{nth}")


def _renumbered(write: Write) -> Callable[[int], Write]:
    return lambda index: attrs.evolve(write, index=index, engine=0)


class Session:
    """Runs one workflow run to the end (or to a block), through simulated crashes."""

    def __init__(
        self,
        *,
        workflow_id: str,
        fakes: Mapping[str, Callable[..., Any]],
        messages: Sequence[Message | Update | Cancel],
        start: datetime,
        completions: Sequence[Completion] = (),
        strict: bool,
        seed: int,
        timeout: float,
        crash_at: Callable[[Commit, int], bool] | None = None,
        warm: Warm = False,
        sandbox: bool = True,
        codec: PayloadCodec | None = None,
        max_generations: int = DEFAULT_MAX_GENERATIONS,
        real_steps: RealSteps = False,
        caller: str = "run",
    ) -> None:
        if isinstance(max_generations, bool) or not isinstance(max_generations, int):
            raise TypeError(f"max_generations takes a whole number, got {max_generations!r}")
        if max_generations < 0:
            raise ValueError(f"max_generations must be 0 or more, got {max_generations}")
        self.max_generations = max_generations
        #: Set when a run continued as new past `max_generations`; `drive` raises it.
        self.too_many_generations: TooManyGenerations | None = None
        self.workflow_id = workflow_id
        self.warm = warm
        self.sandbox = sandbox
        #: What the sandbox refused, in order (a body may have swallowed the error).
        self.refusals: list[NonDeterministicCall] = []
        self.fakes = dict(fakes)
        #: Which steps not faked may run their real function; what it refused.
        self.real_steps = RealStepsRule(real_steps, self.fakes, who=caller)
        self.messages = list(messages)
        #: The test's external completions, matched to tokens as the run hands them out;
        #: the clock knows each by its delivery number, after the messages' numbers.
        self.completions = CompletionBook(list(completions), workflow_id)
        self.start = start
        self.strict = strict
        self.seed = seed
        self.timeout = timeout
        self.crash_at = crash_at
        #: What the store holds, as it holds it: payloads encoded, with a codec.
        self.memory = MemoryStore()
        #: The store every simulated process shares; with a codec, it encodes
        #: what they write into `memory` and decodes what they read, as
        #: `Engine(codec=...)` does in production.
        self.store: Store = self.memory if codec is None else CodecStore(self.memory, codec)
        self.clock = KitClock(start)
        self.journal: list[Write | Exec] = []
        self.calls: dict[str, list[StepCall]] = {}
        self.crashes: list[tuple[int, Commit]] = []  # (journal index, commit)
        self.undelivered: list[tuple[Message | Update | Completion | Cancel, str]] = []
        #: Updates refused at delivery (their validator, a finished run), by update id.
        self.refused_updates: dict[str, BaseException] = {}
        self.delivery_errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._commits_seen = 0
        self._crash_pending = False
        self._engine_no = 0
        self._engine: Engine | None = None
        self._encoded = [
            serde.encode(m.payload, what=f"the payload of {m!r}")
            if isinstance(m, Message)
            else None
            for m in self.messages
        ]

    # -- setting up -------------------------------------------------------------

    def create_root(
        self,
        wf: Workflow[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        timeout: float | None = None,
        deadline: datetime | None = None,
    ) -> None:
        """Store the root run; `timeout` (checked seconds) counts from the virtual start."""
        inputs = wf.encode_inputs(args, kwargs)
        if timeout is not None:
            counted = self.start + timedelta(seconds=timeout)
            deadline = counted if deadline is None else min(deadline, counted)
        row = WorkflowRow(
            workflow_id=self.workflow_id,
            name=wf.workflow_name,
            status=Status.PENDING,
            inputs=inputs,
            executor_id="local",
            app_version=APP_VERSION,
            created_at=self.start,
            deadline=deadline,
            timeout=timeout,
        )
        cast(Store, JournalStore(self, 0)).create_workflow(row)
        self.schedule_messages(range(len(self.messages)))

    def seed_from(self, writes: Sequence[Write], now: datetime) -> None:
        """Replay another session's store writes into this session's fresh store.

        The store then holds exactly what it held after those writes; the
        clock is set to `now`, and the test's messages not yet delivered stay
        scheduled at their own times.
        """
        delivered: set[int] = set()
        for write in writes:
            getattr(self.store, write.method)(*write.args, **write.kwargs)
            if write.kit_message is not None:
                delivered.add(write.kit_message)
            if write.kit_completion is not None:
                self.completions.delivered.add(write.kit_completion)
            if write.method == "record" and write.commit is not None:
                self.completions.handed_out(write.workflow_id, write.args[1], write.at)
            self._append(_renumbered(write))
        self.clock.move_to(now)
        self.schedule_messages(i for i in range(len(self.messages)) if i not in delivered)

    def schedule_messages(self, indexes: Iterable[int]) -> None:
        pending = [(self.messages[i].arrival(self.start), i) for i in indexes]
        first = len(self.messages)
        pending += [(self.completions.due(i), first + i) for i in self.completions.waiting()]
        self.clock.attach(pending, self._deliver)
        # Messages whose time has come arrive before the workflow runs.
        self.clock.deliver_due()

    def recorded(self, workflow_id: str, record: Record, at: datetime) -> None:
        """A record the store took at `at`: a token handed out is scheduled for the
        completion that takes it, if any."""
        with self._lock:
            index = self.completions.handed_out(workflow_id, record, at)
        if index is not None:
            self.clock.add(self.completions.due(index), len(self.messages) + index)

    def sent_updates(self) -> list[tuple[str, Update, str]]:
        """(update id, update, target run) of every scripted update."""
        return [
            (update_id_of(item, index), item, item.to or self.workflow_id)
            for index, item in enumerate(u for u in self.messages if isinstance(u, Update))
        ]

    def _deliver(self, index: int, at: datetime) -> None:
        if index >= len(self.messages):
            number = index - len(self.messages)
            completion = self.completions.completions[number]
            complete = functools.partial(self._complete, number)
            self._attempt(completion, complete, CompletionRefused, at, kit_completion=number)
            return
        message = self.messages[index]
        target = message.to or self.workflow_id
        send: Callable[[], _Sent | str | None]
        if isinstance(message, Update):
            send = functools.partial(self._send_update, index, message, target)
        elif isinstance(message, Cancel):
            send = functools.partial(self._send_cancel, message, target, at)
        else:
            send = functools.partial(self._send_message, index, message, target)
        self._attempt(message, send, WorkflowNotFound, at, kit_message=index)

    def _attempt(
        self,
        item: Message | Update | Completion | Cancel,
        send: Callable[[], _Sent | str | None],
        refused: type[Exception],
        at: datetime,
        **kit: int,
    ) -> None:
        """Deliver one of the test's items with `send()`: what it wrote is journaled as
        the item's (`kit`); a refusal (`refused`, or the reason `send` returns) lists it
        as undelivered; None is an update its validator refused, kept by `send`."""
        try:
            sent = send()
        except refused as exc:
            sent = str(exc)
        except Exception as exc:  # the timer thread must not die of it; the driver re-raises
            self.delivery_errors.append(exc)
            return
        if isinstance(sent, str):
            self.undelivered.append((item, sent))
        elif sent is not None:
            method, args, kwargs = sent
            self.journal_write(0, method, args, kwargs, at, None, **kit)

    def _send_message(self, index: int, message: Message, target: str) -> _Sent:
        args = (target, message.topic or "", self._encoded[index])
        self.store.send_message(*args)
        return "send_message", args, {}

    def _send_update(self, index: int, update: Update, target: str) -> _Sent | None:
        nth = sum(1 for m in self.messages[:index] if isinstance(m, Update))
        update_id = update_id_of(update, nth)
        request = request_of(self.store, update, update_id, target)
        if isinstance(request, BaseException):
            self.refused_updates[update_id] = request  # refused: no trace in the run
            return None
        kwargs = {"idempotency_key": request.idempotency_key}
        self.store.send_message(target, request.topic, request.payload, **kwargs)
        return "send_message", (target, request.topic, request.payload), kwargs

    def _send_cancel(self, cancel: Cancel, target: str, at: datetime) -> _Sent | str:
        kept = deliver_cancel(self.store, self._engine, cancel, target, at)
        if isinstance(kept, str):
            return kept
        return "request_cancel", (target, kept), {}

    def _complete(self, index: int) -> _Sent:
        """Complete (or fail) the token the `index`-th completion took, as production does."""
        completion = self.completions.completions[index]
        token = self.completions.token_of(index)
        limit = serde.DEFAULT_MAX_PAYLOAD_BYTES
        try:
            target = awakeables.target_of(self.store, token)
            if completion.error is None:
                payload = awakeables.value_payload(token, completion.value, max_bytes=limit)
            else:
                payload = awakeables.failure_payload(token, completion.error, max_bytes=limit)
            # No call id: the kit sends once, with no store retrying it.
            awakeables.deliver(self.store, target, payload, call_id=None)
        finally:
            self.completions.delivered.add(index)
        return (
            "send_message",
            (target.workflow_id, target.topic, payload),
            {"idempotency_key": target.key},
        )

    # -- the journal --------------------------------------------------------------

    def _append(self, make: Callable[[int], Write | Exec]) -> int:
        with self._lock:
            index = len(self.journal)
            self.journal.append(make(index))
            return index

    def journal_write(
        self,
        engine_no: int,
        method: str,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        at: datetime,
        commit: Commit | None,
        *,
        kit_message: int | None = None,
        kit_completion: int | None = None,
    ) -> None:
        """A store write that succeeded at `at`, journaled under the run it names."""
        workflow_id = _workflow_id_of(args, kwargs)
        self._append(
            lambda index: Write(
                index,
                engine_no,
                method,
                args,
                dict(kwargs),
                workflow_id,
                at,
                commit,
                kit_message,
                kit_completion,
            )
        )

    def on_step_call(
        self, engine_no: int, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        with self._lock:
            self.calls.setdefault(name, []).append(StepCall(tuple(args), dict(kwargs)))
        self._append(lambda index: Exec(index, engine_no, name))

    def should_crash(self, commit: Commit) -> bool:
        with self._lock:
            nth = self._commits_seen
            self._commits_seen += 1
        return self.crash_at is not None and self.crash_at(commit, nth)

    def stop_generations(self, workflow_id: str, generation: int) -> None:
        row = self.store.get_workflow(workflow_id)
        name = row.name if row is not None else "?"
        with self._lock:
            if self.too_many_generations is None:
                self.too_many_generations = TooManyGenerations(
                    f"workflow {name!r} (id {workflow_id!r}) asked to continue as new for the "
                    f"{generation + 1}th time; the testing kit follows at most "
                    f"{self.max_generations} generation(s) and stopped it there (a workflow "
                    "that always continues never ends). Pass max_generations=... to follow "
                    "more, or give the workflow an end the test can reach"
                )

    def crashed(self, engine_no: int, commit: Commit) -> None:
        # A dead process must not move time or take deliveries.
        self.clock.autojump = False
        with self._lock:
            self.crashes.append((len(self.journal), commit))
            self._crash_pending = True

    # -- driving --------------------------------------------------------------------

    def _start_engine(self) -> Engine:
        self._engine_no += 1
        engine_no = self._engine_no
        engine = Engine(
            cast(Store, JournalStore(self, engine_no)),
            clock=self.clock,
            strict=self.strict,
            app_version=APP_VERSION,
            recover=False,
            # Registered cron schedules would fire into the test's store as virtual time jumps.
            schedules=False,
            # Every step lookup goes through the tap so the kit can count body calls.
            step_overrides=StepTap(
                fresh_fakes(self.fakes),
                lambda name, args, kwargs: self.on_step_call(engine_no, name, args, kwargs),
                self.real_steps,
            ),
            entropy=_SeededEntropy(self.seed),
            max_cached_runs=0 if self.warm is False else DEFAULT_MAX_CACHED_RUNS,
        )
        if callable(self.warm):
            engine.scheduler.warm.keep_if = self.warm
        # A crash at a Sleep's commit rewinds the kit's clock to that commit: the sleep
        # must be committed where it began (pending) and where it ended, as a
        # suspension does, not once after the clock jumped over it and delivered
        # what was scripted meanwhile.
        engine.scheduler.warm.go_on_at_jumps = False
        engine.recover()
        return engine

    def _stop_engine(self, engine: Engine, *, wait: bool = True, last: bool = False) -> None:
        engine.close(wait=wait)
        if wait and not last:
            # Step bodies still running in the pool belong to this process's
            # lost work; let them end so their calls are counted for it.
            engine.step_pool.shutdown(wait=True)
        # After the last engine closed, the pool runs only bodies the engine walked
        # away from (a preempted or timed-out sync step), whose outcomes are dropped
        # and whose calls are counted already: the test does not wait for them.

    # -- the sandbox (see _sandbox.py) -------------------------------------------------

    def owns(self, workflow_id: str) -> bool:
        """Whether a run of this id is one of this session's."""
        if workflow_id == self.workflow_id or workflow_id.startswith(self.workflow_id + ":"):
            return True  # the root, and its children under their default ids
        return self.store.get_workflow(workflow_id) is not None

    def refused(self, error: NonDeterministicCall) -> None:
        with self._lock:
            self.refusals.append(error)

    def drive(self) -> None:
        """Run engines until the root run finishes, is parked, or waits for good.

        With the sandbox on, a workflow body's call of the clock or of randomness
        is refused in the body and raised from here once the engines stopped, even
        if the body caught it. So is a step the test neither faked nor let run for
        real (`UnfakedSteps`), whatever else went wrong after it was refused.
        """
        try:
            with sandboxed(self) if self.sandbox else contextlib.nullcontext():
                self._drive()
        except Exception as exc:
            if self.real_steps.refused:
                raise self.real_steps.error(self._workflow_name()) from exc
            raise
        if self.real_steps.refused:
            raise self.real_steps.error(self._workflow_name())
        if self.refusals:
            raise self.refusals[0]

    def _workflow_name(self) -> str:
        row = self.store.get_workflow(self.workflow_id)
        return row.name if row is not None else "?"

    def _drive(self) -> None:
        deadline = time.monotonic() + self.timeout
        engine = self._engine = self._start_engine()
        try:
            while True:
                if not engine.wait_idle(timeout=max(deadline - time.monotonic(), 0.0)):
                    raise SessionTimeout(self._timeout_message())
                if self.delivery_errors:
                    raise self.delivery_errors[0]
                if self.too_many_generations is not None:
                    raise self.too_many_generations
                if self._crash_pending:
                    self._stop_engine(engine)
                    self._crash_pending = False
                    self.clock.rewind(self.last_write_time())
                    self.clock.autojump = True
                    engine = self._engine = self._start_engine()
                    continue
                row = self.store.get_workflow(self.workflow_id)
                if row is None or row.status is not Status.PENDING:
                    break
                if self.clock.deliver_next() or self._claim_enqueued(engine):
                    continue
                break  # nothing runs, no timer, no message left: blocked for good
        except BaseException:
            self._stop_engine(engine, wait=False)
            self._engine = None
            raise
        self._stop_engine(engine, last=True)
        self._engine = None

    def _claim_enqueued(self, engine: Engine) -> bool:
        """Queued child runs: claim them now rather than at the engine's next poll."""
        enqueued = self.store.list_workflows(WorkflowFilter(status=Status.ENQUEUED))
        if not enqueued:
            return False
        if engine.claim_now():
            return True
        # A delayed enqueue is held back until its wake_at: let virtual time get there.
        now = self.clock.now()
        later = [r.wake_at for r in enqueued if r.wake_at is not None and r.wake_at > now]
        if not later:
            return False
        self.clock.jump_to(min(later))
        return engine.claim_now() > 0

    def last_write_time(self) -> datetime:
        """The virtual time of the last write on the run's timeline.

        On a crash the clock goes back to it: the time since went into the
        lost work (the retry back-off of the step in flight), which the
        recovering process spends again, so both timelines agree.
        """
        with self._lock:
            for entry in reversed(self.journal):
                if isinstance(entry, Write) and entry.on_timeline:
                    return entry.at
        return self.start

    def _timeout_message(self) -> str:
        row = self.store.get_workflow(self.workflow_id)
        records = self.store.load_log(self.workflow_id)
        last = records[-1].describe() if records else "nothing recorded"
        status = row.status.value if row is not None else "missing"
        return (
            f"workflow id {self.workflow_id!r} neither finished nor blocked within "
            f"{self.timeout}s of wall time; it is {status} with {len(records)} record(s) "
            f"(last: {last}). A step may be blocking in real time, or an All() that holds "
            "a step together with a Sleep/Recv timeout is waiting (the engine does not move "
            "virtual time while a composite holds its thread)"
        )

    # -- results ----------------------------------------------------------------------

    def log_of(self, workflow_id: str) -> Log:
        return export_run(self.store, workflow_id)

    def stored_log_of(self, workflow_id: str) -> Log:
        """The run's log as the store holds it (encoded, with a codec)."""
        return export_run(self.memory, workflow_id)

    def rows(self) -> list[WorkflowRow]:
        return self.store.list_workflows(WorkflowFilter())

    def writes(self) -> list[Write]:
        return [e for e in self.journal if isinstance(e, Write)]


def _one_by_one(
    items: Sequence[RecordWrite | FinishWrite], call: Callable[..., A], *positional: str
) -> list[A | BaseException]:
    """Each item's answer from `call`, or what it raised, in order: a batch written as a
    process writing its items one by one would. A batch's item holds one call's
    arguments (`RecordWrite`, `FinishWrite`): its fields named in `positional` are
    passed in that order, the others by keyword."""
    answers: list[A | BaseException] = []
    for item in items:
        keywords = attrs.asdict(item, recurse=False)
        args = [keywords.pop(name) for name in positional]
        try:
            answers.append(call(*args, **keywords))
        except (Exception, ControlSignal) as exc:
            answers.append(exc)
    return answers
