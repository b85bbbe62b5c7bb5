"""`run()`: a workflow, in memory, on virtual time, with faked steps and scripted messages."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import attrs

from replaykit import serde
from replaykit.commands import run_deadline
from replaykit.errors import AwaitedWorkflowCancelled, NonDeterminismError
from replaykit.log import CLOSE_STREAM_KIND, WRITE_STREAM_KIND, Failure, Log, Status, Value
from replaykit.registry import Workflow
from replaykit.runtime.admin import run_outcome
from replaykit.runtime.clock import VirtualClock
from replaykit.serde import PayloadCodec
from replaykit.stores.base import StepHeartbeat, WorkflowFilter
from replaykit.testing._cancels import Cancel
from replaykit.testing._completions import Completion
from replaykit.testing._fakes import StepCall, as_fake
from replaykit.testing._real_steps import RealSteps
from replaykit.testing._session import (
    DEFAULT_MAX_GENERATIONS,
    Commit,
    Message,
    Session,
    Warm,
    default_workflow_id,
)
from replaykit.testing._updates import Update, UpdateReply, replies_of, update_id_of

__all__ = ["RunResult", "run", "scripted_deliveries", "start_session"]

R = TypeVar("R")
T = TypeVar("T")

Steps = Mapping[str, Any]


def _start_time(clock: VirtualClock | datetime | None) -> datetime:
    if clock is None:
        return VirtualClock().now()
    if isinstance(clock, datetime):
        if clock.tzinfo is None:
            raise ValueError("run(clock=...) needs a timezone-aware datetime")
        return clock
    if isinstance(clock, VirtualClock):
        return clock.now()
    raise TypeError(
        f"run(clock=...) takes a VirtualClock or an aware datetime to start at, got {clock!r}; "
        "the testing kit always runs on virtual time"
    )


def _crash_predicate(crash_at: int | Iterable[int] | None) -> Callable[[Commit, int], bool] | None:
    if crash_at is None:
        return None
    points = {crash_at} if isinstance(crash_at, int) else set(crash_at)
    if any(not isinstance(p, int) or p < 0 for p in points):
        raise ValueError(f"crash_at takes commit numbers from 0 up, got {crash_at!r}")
    return lambda _commit, nth: nth in points


def _check_workflow(wf: Any, what: str) -> None:
    if not isinstance(wf, Workflow):
        raise TypeError(
            f"{what}() expected a function decorated with @replaykit.workflow, got {wf!r}"
        )


def _checked_items(given: Iterable[Any], kind: type[T], option: str, shown: str) -> list[T]:
    """The items of a test's `option=` list, each refused unless a `kind` (as `shown`)."""
    items = list(given)
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(f"{option}= takes replaykit.testing.{shown} items, got {item!r}")
    return items


def start_session(
    wf: Workflow[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    steps: Steps | None,
    messages: Iterable[Message],
    clock: VirtualClock | datetime | None,
    strict: bool,
    updates: Iterable[Update] = (),
    workflow_id: str | None,
    timeout: float,
    seed: int,
    crash_at: Callable[[Commit, int], bool] | None = None,
    warm: Warm = False,
    sandbox: bool = True,
    codec: PayloadCodec | None = None,
    workflow_timeout: timedelta | float | None = None,
    deadline: datetime | None = None,
    max_generations: int = DEFAULT_MAX_GENERATIONS,
    real_steps: RealSteps = False,
    caller: str = "run",
    completions: Iterable[Completion] = (),
    cancels: Iterable[Cancel] = (),
    empty: bool = False,
) -> Session:
    """A session with the root run created and the test's messages scheduled (not yet run);
    `empty=True`: nothing in its store yet, for `Session.seed_from` to fill."""
    run_timeout, run_deadline_at = run_deadline(
        workflow_timeout, deadline, what=f"run({wf.workflow_name!r}, ...)"
    )
    scripted = scripted_deliveries(messages, updates, cancels)
    completions = _checked_items(
        completions, Completion, "completions", "Completion(awakeable, value, after=...)"
    )
    session = Session(
        workflow_id=workflow_id or default_workflow_id(wf),
        fakes={name: as_fake(name, spec) for name, spec in (steps or {}).items()},
        messages=scripted,
        completions=completions,
        start=_start_time(clock),
        strict=strict,
        seed=seed,
        timeout=timeout,
        crash_at=crash_at,
        warm=warm,
        sandbox=sandbox,
        codec=codec,
        max_generations=max_generations,
        real_steps=real_steps,
        caller=caller,
    )
    if not empty:
        session.create_root(wf, args, kwargs, timeout=run_timeout, deadline=run_deadline_at)
    return session


def scripted_deliveries(
    messages: Iterable[Message], updates: Iterable[Update], cancels: Iterable[Cancel] = ()
) -> list[Message | Update | Cancel]:
    """The messages, then the updates, checked: what a session delivers (at one instant,
    in this order)."""
    messages = _checked_items(messages, Message, "messages", "Message(topic, payload, at=...)")
    updates = _checked_items(updates, Update, "updates", "Update(name, *args, at=...)")
    ids = [update_id_of(update, index) for index, update in enumerate(updates)]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(
            f"updates= gives update id(s) {twice} more than once; a second request under one "
            "id is not delivered (it gets the first one's reply): give each its own id"
        )
    cancels = _checked_items(cancels, Cancel, "cancels", "Cancel(at=..., grace=..., reason=...)")
    return [*messages, *updates, *cancels]


@attrs.frozen(eq=False)
class RunResult(Generic[R]):
    """What `run()` observed.

    `status` is the run's `Status`: SUCCESS, ERROR, PENDING (it waits for
    something that will never come: a message not scripted, a child that
    blocks) or PARKED (a replay inside the run met `NonDeterminismError`).
    """

    workflow_id: str
    status: Status
    #: The workflow's return value, decoded as production decodes it; None unless SUCCESS.
    result: R | None
    #: The exception the run ended with (ERROR), `NonDeterminismError` (PARKED), or the
    #: cancellation (CANCELLED: `WorkflowDeadlineExceeded` at its deadline); else None.
    error: BaseException | None
    #: The run's log, as `engine.export_log()` gives it; `log.to_json()` exports it.
    log: Log
    #: A VirtualClock standing at the virtual time of the run's last write (its
    #: finish, or the last record of a run that waits).
    clock: VirtualClock
    started_at: datetime
    #: Every call of every step body (one per attempt), by step name.
    calls: Mapping[str, list[StepCall]]
    #: The simulated crashes (`run(crash_at=...)`), in order.
    crashes: tuple[Commit, ...] = ()
    #: Messages (and updates) whose target workflow did not exist when due, and
    #: completions refused when due (`CompletionRefused`: the run ended, say), with why.
    undelivered: tuple[tuple[Message | Update | Completion | Cancel, str], ...] = ()
    #: The run's log as the store holds it: with `run(codec=...)`, its args, outcomes
    #: and result encoded (`{"replaykit.codec": name, "data": ...}`); else `log`.
    stored_log: Log | None = None
    #: The run's events at its end, each key with its latest value, as
    #: `engine.get_events(workflow_id)` answers (the stored JSON data).
    events: Mapping[str, Any] = attrs.field(factory=dict)
    #: The logs of the run's earlier generations, oldest first, when it continued as
    #: new (`ContinueAsNew`); `log` is the last generation's. Each log's `args` are
    #: the arguments that generation was called with.
    generations: tuple[Log, ...] = ()
    #: What became of each `Update` of `updates=`, by update id: the run's reply (value
    #: or error), the refusal (its validator's error, a finished run), or no answer.
    replies: Mapping[str, UpdateReply] = attrs.field(factory=dict)
    #: The latest heartbeat of each step of the run's last generation that beat
    #: (`step_context().heartbeat(details)`), by position, as `get_heartbeats` reads them.
    heartbeats: tuple[StepHeartbeat, ...] = ()
    _workflow: Workflow[..., Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status is Status.SUCCESS

    @property
    def elapsed(self) -> timedelta:
        """Virtual time from the start to the run's last write."""
        return self.clock.now() - self.started_at

    @property
    def streams(self) -> dict[str, list[Any]]:
        """Each stream the run wrote: its key, with its values in order, as
        `engine.read_stream` reads them (plain JSON data)."""
        return {key: [value for _, value in entries] for key, entries in _streams(self.log).items()}

    @property
    def closed_streams(self) -> frozenset[str]:
        """The keys of the streams the run closed (`CloseStream`)."""
        return frozenset(
            r.name for r in self.log if r.kind == CLOSE_STREAM_KIND and isinstance(r.outcome, Value)
        )

    def stream_times(self, key: str) -> list[datetime]:
        """The virtual time each value of stream `key` was written at, in order."""
        return [at for at, _ in _streams(self.log).get(key, [])]

    @property
    def commands(self) -> list[tuple[str, str]]:
        """(kind, name) of every recorded position, e.g. ("step", "charge"), ("sleep", "sleep")."""
        return [(r.kind, r.name) for r in self.log]

    def waiting_on(self) -> str | None:
        """For a PENDING run, the command it waits at (found by replaying its log)."""
        if self.status is not Status.PENDING or self._workflow is None:
            return None
        from replaykit.testing.replay import replay

        try:
            replayed = replay(self._workflow, self.log)
        except Exception as exc:  # the description is best effort; never mask the run
            return f"<could not replay the log: {exc}>"
        return replayed.next_command

    def unwrap(self) -> R:
        """The result; or raise the run's error; or `AssertionError` if it did not finish."""
        if self.status is Status.SUCCESS:
            return self.result  # type: ignore[return-value]
        if self.error is not None:
            raise self.error
        waiting = self.waiting_on()
        raise AssertionError(
            f"workflow {self.log.workflow_name!r} (id {self.workflow_id!r}) did not finish: it "
            f"is {self.status.value} after {len(self.log)} recorded position(s)"
            + (f", waiting on {waiting}" if waiting else "")
            + ". Script the message it waits for with messages=[Message(...)], or fake the "
            "step that blocks"
        )

    def __repr__(self) -> str:
        what = (
            f"result={self.result!r}"
            if self.status is Status.SUCCESS
            else f"error={self.error!r}"
            if self.error is not None
            else f"after {len(self.log)} position(s)"
        )
        return f"<RunResult {self.workflow_id!r} {self.status.value} {what}>"


def _streams(log: Log) -> dict[str, list[tuple[datetime, Any]]]:
    """(write time, value) of every value each stream of the log holds, in order."""
    found: dict[str, list[tuple[datetime, Any]]] = {}
    for record in log:
        if record.kind == WRITE_STREAM_KIND and isinstance(record.outcome, Value):
            at = record.completed_at or record.started_at
            assert at is not None, "a completed record has its completion time"
            found.setdefault(record.name, []).append((at, record.outcome.data))
    return found


def result_of(
    session: Session, wf: Workflow[..., Any], clock: VirtualClock | datetime | None
) -> RunResult[Any]:
    log = session.log_of(session.workflow_id)
    status = Status(log.status)
    row = session.store.get_workflow(session.workflow_id)
    result: Any = None
    error: BaseException | None = None
    if status is Status.SUCCESS and isinstance(log.result, Value):
        result = serde.decode(
            log.result.data, wf.result_type, what=f"the result of workflow {wf.workflow_name!r}"
        )
    elif status is Status.ERROR and isinstance(log.result, Failure):
        error = serde.decode_error(log.result.error)
        if log.result.error.traceback:
            error.add_note(f"Traceback recorded in the workflow:\n{log.result.error.traceback}")
    elif status is Status.PARKED:
        error = NonDeterminismError(
            row.error if row is not None and row.error else "the run was parked",
            workflow_name=wf.workflow_name,
            workflow_id=session.workflow_id,
        )
    elif status is Status.CANCELLED and row is not None:
        # A run cancelled at its deadline (`workflow_timeout=` / `deadline=`): what
        # `handle.result()` raises in production, WorkflowDeadlineExceeded.
        try:
            run_outcome(row)
        except AwaitedWorkflowCancelled as exc:
            error = exc
    # The time of the run's last write, not of the clock: an engine may jump a
    # virtual clock to a timer left behind by a wait that ended early.
    end = session.last_write_time()
    if isinstance(clock, VirtualClock):
        clock.jump_to(end)
        final_clock = clock
    else:
        final_clock = VirtualClock(end, autojump=False)
    return RunResult(
        workflow_id=session.workflow_id,
        status=status,
        result=result,
        error=error,
        log=log,
        clock=final_clock,
        started_at=session.start,
        calls={name: list(calls) for name, calls in session.calls.items()},
        crashes=tuple(commit for _, commit in session.crashes),
        undelivered=tuple(session.undelivered),
        stored_log=session.stored_log_of(session.workflow_id),
        events=session.store.get_events(session.workflow_id),
        generations=_generations(session),
        replies=replies_of(session.store, session.sent_updates(), session.refused_updates),
        heartbeats=tuple(session.store.get_step_heartbeats(session.workflow_id)),
        workflow=wf,
    )


def _generations(session: Session) -> tuple[Log, ...]:
    archived = session.store.list_workflows(WorkflowFilter(continued_as=session.workflow_id))
    archived.sort(key=lambda row: row.generation)
    return tuple(session.log_of(row.workflow_id) for row in archived)


def run(
    wf: Workflow[..., R],
    /,
    *args: Any,
    steps: Steps | None = None,
    messages: Iterable[Message] = (),
    updates: Iterable[Update] = (),
    completions: Iterable[Completion] = (),
    cancels: Iterable[Cancel] = (),
    clock: VirtualClock | datetime | None = None,
    strict: bool = True,
    workflow_id: str | None = None,
    timeout: float = 30.0,
    seed: int = 0,
    crash_at: int | Iterable[int] | None = None,
    warm: Warm = False,
    sandbox: bool = True,
    codec: PayloadCodec | None = None,
    workflow_timeout: timedelta | float | None = None,
    deadline: datetime | None = None,
    max_generations: int = DEFAULT_MAX_GENERATIONS,
    real_steps: RealSteps = False,
    **kwargs: Any,
) -> RunResult[R]:
    """Run `wf(*args, **kwargs)` on a fresh in-memory store and virtual time.

    - `steps={name: fake}` replaces the body of every step with that name: a
      callable is called with the step's arguments, an exception (instance or
      class) is raised, `sequence(a, b, ...)` gives successive outcomes, any
      other value is returned as is.
    - A step not faked runs its real function only when the test says so:
      `real_steps=True` (every step not faked) or `real_steps={"name", ...}`
      (those steps). Otherwise its body does not run, its attempt fails, and
      `run()` raises `UnfakedSteps` naming every such step the run reached.
    - `messages=[Message(topic, payload, at=...)]` delivers messages at virtual
      times; time jumps straight to the next timer or message whenever the
      workflow waits, so a 30-day `Sleep` takes no wall time.
    - `updates=[Update(name, *args, at=...)]` sends updates at virtual times, as
      `engine.update` sends them (checked against the workflow's update names and
      validator; a refused one leaves no trace); `result.replies[update_id]` is
      each one's reply. At one instant, messages arrive first, then updates, each
      in the order given.
    - `completions=[Completion(awakeable, value, after=...)]` completes (or, with
      `error=`, fails) the token the run's `Awakeable(awakeable)` hands out, `after`
      that long from the moment it is handed out, as `engine.complete(token, value)`
      does; each takes the next token of its name. One refused when it is due (the
      run ended first) is listed in `result.undelivered` with the reason.
    - `cancels=[Cancel(at=..., grace=..., reason=...)]` cancels the run (or `to=`
      another) at virtual times, as `engine.cancel` does: `Cancelled` at its current
      yield, its cleanup, and the grace running out on the virtual clock (then the
      run is stopped as `terminate` stops it). At one instant, messages and updates
      come first, then cancels.
    - `Random()` and `Uuid()` are drawn from `seed`, so runs are reproducible.
    - `crash_at=n` (or several) simulates a process crash before the n-th store
      commit (from 0, counted over the whole run): the step body in flight has
      run, its record is lost, and a new engine recovers the run.
    - `warm=False` (the default) rebuilds the run by replay at every wake-up, as
      an engine does after a restart or an eviction, so drift between the code
      and its log shows at once. `warm=True` keeps suspended runs in memory as
      the engine does; a callable `(workflow_id, position) -> bool` is asked at
      each suspension whether the run stays warm (evictions where it says no).
    - `sandbox=True` (the default): a workflow body that reads the clock
      (`time.time()`, `datetime.now()`, ...) or draws randomness (`random.*`,
      `uuid.uuid4()`, `os.urandom()`, `secrets.*`) gets `NonDeterministicCall`,
      which `run()` then raises; step bodies are not affected.
    - `codec=` (a `PayloadCodec`) encodes every payload in the store as
      `Engine(codec=...)` does, so the run goes through your codec's encode and
      decode at every write and read; `RunResult.stored` holds the rows and
      logs as stored (encoded).
    - `workflow_timeout=` (a timedelta or seconds of virtual time, from the
      start) and `deadline=` (an aware datetime) bound the run as
      `engine.start(timeout=..., deadline=...)` does: when it passes, the run
      ends CANCELLED with `error` a `WorkflowDeadlineExceeded` saying so, at
      that virtual instant (a 30-day `Sleep` under a 1-day timeout ends on day
      1, in no wall time). Its children inherit it. (`timeout=` is the wall
      time `run()` itself may take.)
    - Returns when the run finishes, is parked, is cancelled, or waits for
      something that will never come (status PENDING); raises `TimeoutError`
      if it does none of these within `timeout` seconds of wall time.
    - A workflow that yields `ContinueAsNew(...)` is followed through its
      generations on the same virtual clock: the result is the last one's, and
      `result.generations` holds the earlier ones' logs. After
      `max_generations` continues (default 1,000) the run is stopped and
      `run()` raises `TooManyGenerations` (an `AssertionError`) saying so.
    """
    _check_workflow(wf, "run")
    session = start_session(
        wf,
        args,
        kwargs,
        steps=steps,
        messages=messages,
        updates=updates,
        completions=completions,
        cancels=cancels,
        clock=clock,
        strict=strict,
        workflow_id=workflow_id,
        timeout=timeout,
        seed=seed,
        crash_at=_crash_predicate(crash_at),
        warm=warm,
        sandbox=sandbox,
        codec=codec,
        workflow_timeout=workflow_timeout,
        deadline=deadline,
        max_generations=max_generations,
        real_steps=real_steps,
    )
    session.drive()
    return result_of(session, wf, clock)
