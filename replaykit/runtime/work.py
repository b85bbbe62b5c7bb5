"""The blocking work of activations: reading a run, running a step, writing a record.

The scheduler's thread never blocks on the store or a step body: it hands such work to
a pool (or, for a run alone, does it on its own thread, ready to hand the scheduler to
another thread meanwhile). Each piece of work here answers with the event of what it
found — `Prepared`, `Stepped`, `BackedOff`, `Carried`, `TailRead`, `WrittenAhead`,
`Ended` — and never raises: what went wrong is the event's result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from replaykit import serde
from replaykit.commands import Step
from replaykit.errors import (
    InvalidCommandError,
    NonDeterminismError,
    UnknownWorkflowError,
)
from replaykit.interpreter import Decision, Effect, Interpreter
from replaykit.log import Failure, Outcome, Record, Status
from replaykit.registry import lookup
from replaykit.runtime.attempts import Backoff
from replaykit.runtime.backoffs import record_backoff, settle_backoff
from replaykit.runtime.books import Books
from replaykit.runtime.cancels import cancelled_failure
from replaykit.runtime.clock import Clock
from replaykit.runtime.commits import RecordWriter
from replaykit.runtime.effects import EffectRunner
from replaykit.runtime.events import (
    Activation,
    BackedOff,
    Carried,
    Ended,
    Event,
    Prepared,
    Stepped,
    TailRead,
    WrittenAhead,
)
from replaykit.stores.base import Store, WorkflowRow
from replaykit.stores.values import LoadedRun

__all__ = ["Work"]


class Work:
    """Blocking work for activations; stateless, so any thread may do it."""

    def __init__(
        self,
        store: Store,
        records: RecordWriter,
        runner: EffectRunner,
        books: Books,
        clock: Clock,
        *,
        executor_id: str,
        app_version: str,
        strict: bool,
        closed: Callable[[], bool],
        watch_deadline: Callable[[WorkflowRow], bool] | None = None,
    ) -> None:
        self.store = store
        self.records = records
        self.runner = runner
        self.books = books
        self.clock = clock
        self.executor_id = executor_id
        self.app_version = app_version
        self.strict = strict
        self._closed = closed
        # Told of every run an activation is about to run: it arms the run's deadline,
        # or answers True when the deadline has passed (it cancelled the run).
        self._watch_deadline = watch_deadline

    def prepare(self, activation: Activation, loaded: LoadedRun | None = None) -> Event:
        """Read the run (unless known) and its log, and build its interpreter; with
        `loaded`, what a batch read of the run found (`prepare_many`)."""
        try:
            interp = self._load(activation, loaded)
        except BaseException as exc:
            return Carried(activation, None, exc)
        if interp is None:
            return Ended(activation)
        activation.interp = interp
        return Prepared(activation)

    def prepare_many(self, activations: list[Activation]) -> list[Event]:
        """`prepare` for runs woken together, read in one batch (`cold.py`)."""
        found = {run.row.workflow_id: run for run in self._read_many(activations)}
        events: list[Event] = []
        for activation in activations:
            loaded = found.get(activation.workflow_id)
            if loaded is None and found:
                events.append(Ended(activation))  # read, and not there: deleted meanwhile
            else:
                events.append(self.prepare(activation, loaded))
        return events

    def _read_many(self, activations: list[Activation]) -> list[LoadedRun]:
        """The batch read, or nothing (each run then reads its own, with retries)."""
        load_runs = getattr(self.store, "load_runs", None)
        if load_runs is None:
            return []
        try:
            runs: list[LoadedRun] = load_runs([a.workflow_id for a in activations])
        except Exception:
            # No batch read here (AttributeError), an outage, or one damaged row among
            # them: read run by run, so that only that run is parked, naming it.
            return []
        return runs

    def _load(self, activation: Activation, loaded: LoadedRun | None = None) -> Interpreter | None:
        workflow_id = activation.workflow_id
        known = activation.row or (loaded.row if loaded is not None else None)
        row = known or self.store.get_workflow(workflow_id)
        if row is None or row.status is not Status.PENDING or self._closed():
            return None
        if row.executor_id != self.executor_id or row.app_version != self.app_version:
            return None  # another engine (or another version's engine) owns it
        watch = self._watch_deadline
        if row.deadline is not None and watch is not None and watch(row):
            return None  # it was past its deadline: cancelled, nothing to run
        activation.row = row
        try:
            wf = lookup(row.name)
        except UnknownWorkflowError as exc:
            self.books.cannot_run(row, str(exc))
            return None
        try:
            args, kwargs = wf.decode_inputs(row.inputs)
            gen = wf.fn(*args, **kwargs)
        except Exception as exc:
            self.books.end(row, Status.ERROR, Failure(serde.encode_error(exc)))
            return None
        fresh = activation.fresh
        if fresh:
            records = []
        elif loaded is not None:
            records = loaded.log
            self.runner.host.cancels.read_with_log(workflow_id, loaded.cancel)
        else:
            records = self.store.load_log(workflow_id)
            # A cancel asked for elsewhere (another engine, a Client) is delivered here.
            self.runner.host.cancels.loaded(workflow_id)
        if records and records[-1].outcome is None:
            records = settle_backoff(self.runner.host, workflow_id, records)
        try:
            return Interpreter(
                gen,
                records,
                workflow_name=row.name,
                workflow_id=workflow_id,
                strict=self.strict,
                keep_records=False,
                parent_id=row.parent_id,
                generation=row.generation,
                attempt=row.recovery_attempts,
            )
        except InvalidCommandError as exc:
            self.books.end(row, Status.ERROR, Failure(serde.encode_error(exc)))
            return None

    def run_step(
        self, activation: Activation, effect: Effect, fn: Callable[..., Any] | None = None
    ) -> Event:
        """A step's body with its retries; its record is committed by the scheduler thread."""
        command = effect.command
        assert isinstance(command, Step)
        row = activation.row_or_raise()
        pending = effect.pending
        try:
            started = pending.started_at if pending and pending.started_at else self.clock.now()
            result = self.runner.run_attempts(
                row, effect.position, command, activation.scope, fn, pending=pending, durable=True
            )
        except BaseException as exc:
            return Carried(activation, effect, exc)
        if isinstance(result, Backoff):
            return BackedOff(activation, effect, result)
        outcome, attempts = result
        return Stepped(activation, effect, outcome, attempts, started)

    def hold_back(self, activation: Activation, effect: Effect, backoff: Backoff) -> Event:
        """A step waits for its next attempt: record that, and suspend the run until then
        (a durable timer, like a Sleep's: no thread waits, and a restart keeps it)."""
        result = _captured(
            lambda: record_backoff(self.runner, activation.row_or_raise(), effect, backoff)
        )
        return Carried(activation, effect, result)

    def carry(
        self,
        activation: Activation,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None = None,
    ) -> Event:
        result = _captured(
            lambda: self.runner.carry_out(activation.row_or_raise(), effect, steps_done)
        )
        return Carried(activation, effect, result)

    def deliver_cancel(self, activation: Activation, effect: Effect) -> Event:
        """Record the run's cancel request as the outcome of the command it waits on (or
        is about to carry out): the generator gets `Cancelled` at that yield."""
        try:
            row = activation.row_or_raise()
            request = self.runner.host.cancels.held(row.workflow_id)
            reason = "" if request is None else request.reason
            outcome = cancelled_failure(row, effect.position, type(effect.command).__name__, reason)
            pending = effect.pending
            attempts = pending.attempts if pending is not None and pending.attempts else 1
            record = self.runner.commit(row, effect, outcome, attempts=attempts)
        except BaseException as exc:
            return Carried(activation, effect, exc)
        return Carried(activation, effect, record)

    def read_tail(self, activation: Activation, effect: Effect) -> Event:
        """The run's records from the effect's position on: what the cache lacks."""
        workflow_id = activation.workflow_id
        tail = _captured(lambda: self.store.load_log(workflow_id, since=effect.position))
        return TailRead(activation, effect, tail)

    def write_alone(self, activation: Activation, effect: Effect, record: Record) -> Carried:
        return Carried(activation, effect, self._written(activation, record))

    def write_ahead(
        self,
        activation: Activation,
        effect: Effect,
        written: Record,
        following: Decision,
        nondeterministic: NonDeterminismError | None,
    ) -> WrittenAhead:
        """Commit a record the generator has gone on from; the event carries what it
        decided then, so that whichever thread is the scheduler acts on it once."""
        result = self._written(activation, written)
        return WrittenAhead(activation, effect, result, following, nondeterministic)

    def _written(self, activation: Activation, record: Record) -> Any:
        """The record as committed, or the exception the write raised. Every step's
        checkpoint passes here, so it is `_captured` written out: no closure to build."""
        try:
            return self.records.write(activation.row_or_raise(), record)
        except BaseException as exc:
            return exc


def _captured(work: Callable[[], Any]) -> Any:
    """What `work()` came to: its result, or the exception it raised, which the event
    carries to the scheduler (work here never raises, as trio's `outcome.capture`)."""
    try:
        return work()
    except BaseException as exc:
        return exc
