"""The scheduler: one thread advances every run, between commits shared by all.

An *activation* advances one run until it finishes or suspends. The scheduler
thread does the deciding: it resumes each run's generator through its
interpreter and, for each effect the run asks for, hands the blocking part to
a pool — a step's body, a read of the log, a wait's first look at the store —
and goes on with other runs. The records of all steps that finished since the
last commit are committed together in one `Store.record_many` call (in parts of
`COMMIT_PART` when serving an application's loop), and each run resumes once its
record is durable. A run that suspends holds no thread.

A run that suspends is kept *warm*: its generator and interpreter stay in a
bounded cache, so when it wakes the scheduler resumes it with the new outcome,
with no log read and no replay. A run that is not warm (evicted, never seen by
this engine, or whose log may hold what the cache does not) is rebuilt by
replay from the store.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any

import attrs

from replaykit.commands import All, Race, Step
from replaykit.errors import ControlSignal, NonDeterminismError, Stopped
from replaykit.interpreter import (
    ContinuedAsNew,
    Decision,
    Effect,
    Failed,
)
from replaykit.log import Outcome, Record
from replaykit.runtime import group_commit
from replaykit.runtime.async_steps import AsyncSteps
from replaykit.runtime.bodies import is_async
from replaykit.runtime.books import Books
from replaykit.runtime.clock import Clock
from replaykit.runtime.cold import ColdReads
from replaykit.runtime.commits import RecordWriter
from replaykit.runtime.courtesy import Courtesy
from replaykit.runtime.effects import EffectRunner
from replaykit.runtime.events import (
    Activation,
    BackedOff,
    Begin,
    Carried,
    Continued,
    Ended,
    Event,
    Handed,
    Prepared,
    Stepped,
    StepWrite,
    TailRead,
    WrittenAhead,
)
from replaykit.runtime.failures import (
    Verdict,
    broken_why,
    halt_detail,
    judge,
    spinning_why,
)
from replaykit.runtime.handlers import handler_for
from replaykit.runtime.host import CancelScope, LogMovedOn, Suspend
from replaykit.runtime.pool import WorkPool
from replaykit.runtime.wakeups import PreemptWatch, Wakeups, stopped_runs
from replaykit.runtime.warm import WarmCache, WarmRun, close_quietly, kept_row
from replaykit.runtime.work import Work
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["DEFAULT_MAX_GENERATIONS_IN_A_ROW", "Scheduler"]

log = logging.getLogger("replaykit.engine")


class _HandedOver(Exception):
    """This thread stopped being the scheduler's while it ran a step (internal)."""


#: How many times a run may continue as new in a row, in one engine, without waiting.
DEFAULT_MAX_GENERATIONS_IN_A_ROW = 10_000

# The longest a patient close waits for bookkeeping writes still queued (seconds).
BOOKS_DRAIN = 5.0


class Scheduler:
    """Advances activations on its one thread and keeps suspended runs warm.

    It owns its state under its own lock: the inbox its thread works from,
    which runs are active, which must run again, which were cancelled here,
    their cancel scopes, the warm cache and the finished cache. It hands
    suspensions to `wakeups` and hears back through `dispatch`.
    """

    def __init__(
        self,
        *,
        store: Store,
        records: RecordWriter,
        runner: EffectRunner,
        wakeups: Wakeups,
        clock: Clock,
        executor_id: str,
        app_version: str,
        work: Work,
        warm: WarmCache,
        async_steps: AsyncSteps,
        books: Books,
        workers: WorkPool,
        bookkeepers: WorkPool,
        poll_interval: float,
        courtesy: Courtesy | None = None,
        max_generations_in_a_row: int = DEFAULT_MAX_GENERATIONS_IN_A_ROW,
    ) -> None:
        self.store = store
        self.records = records
        self.runner = runner
        self._telemetry = runner.telemetry
        self.wakeups = wakeups
        self.clock = clock
        self.executor_id = executor_id
        self.app_version = app_version
        self.work = work
        self.warm = warm
        self.async_steps = async_steps
        self.books = books
        self.poll_interval = poll_interval
        # Called between events: steps aside for an application's event loop after
        # each millisecond of work (runtime/courtesy.py); does nothing without one.
        self._courtesy = courtesy or Courtesy(None)
        # Blocking work of activations: step bodies and effects that wait on the big
        # pool; the short store work around them (reading a run, finishing it,
        # parking it) on a small one of its own, so that long steps filling the big
        # pool do not hold up other runs' finishes.
        self._workers = workers
        self._books = bookkeepers
        # One condition guards the scheduler's state and wakes its thread.
        self._cv = threading.Condition(threading.Lock())
        self._inbox: collections.deque[Event] = collections.deque()
        self._stopping = False
        # The thread that is the scheduler now (`_notify_loop` may hand over), and
        # whether it is running a step body itself.
        self._owner: int | None = None
        self._stepping_here = False
        self._thread = threading.Thread(target=self._loop, name="replaykit-scheduler", daemon=True)
        self._closed = False
        self._busy = 0  # activations queued or running (read without the lock)
        self._active: set[str] = set()
        self._rerun: set[str] = set()
        self._cancelled: set[str] = set()
        # Runs a step body stopped with a BaseException that is no control signal
        # (KeyboardInterrupt, SystemExit): this engine leaves them until a resume
        # (`release`), and their waiters here are handed the interrupt.
        self._halted: dict[str, BaseException] = {}
        # How many generations each run began in a row here without waiting between
        # them (ContinueAsNew); past `max_generations_in_a_row` the run is parked.
        self._generations_in_a_row: dict[str, int] = {}
        self.max_generations_in_a_row = max_generations_in_a_row
        self._scopes: dict[str, CancelScope] = {}
        # Runs whose async step body is under way: a graceful close lets it finish
        # and commit, as a sync body (which nothing can interrupt) does.
        self._stepping: set[str] = set()
        # Runs whose generator returned this round, beside other runs: their finishes
        # go to one bookkeeping thread together (`_send_finishes`).
        self._finishing: list[tuple[Activation, Decision, Record | None]] = []
        self._seen: dict[str, int] = {}  # the notification count each activation began at
        # This round's batch of records (`_loop`'s `writes`), for `_sleep_over`.
        self._writes: list[StepWrite] = []
        # Cancels a preemptible step's attempt when its run stops elsewhere.
        self._preempt = PreemptWatch(
            interval=poll_interval, look=stopped_runs(store, executor_id, app_version)
        )
        self._unlisten = wakeups.listen_kind("finished", self._preempt.stopped)
        # One batch for every step that finished since the last one (group_commit.py).
        self._commit = functools.partial(
            group_commit.commit,
            write_many=lambda writes: records.write_many(group_commit.rows_and_records(writes)),
            courtesy=self._courtesy,
            write_alone=lambda write: group_commit.write_alone(write, self._on_pool, work),
        )
        self._cold = ColdReads(
            prepare_many=work.prepare_many,
            pool=bookkeepers,
            post_many=self.post_many,
            ended=self._end,
        )

    # -- what others ask -----------------------------------------------------------------

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def closed(self) -> bool:
        return self._closed

    def warm_count(self) -> int:
        return len(self.warm)

    def is_warm(self, workflow_id: str) -> bool:
        return workflow_id in self.warm

    def is_tracked(self, workflow_id: str) -> bool:
        with self._cv:
            if workflow_id in self._active:
                return True
        return self.wakeups.is_suspended(workflow_id)

    def peek_finished(self, workflow_id: str) -> WorkflowRow | None:
        """Lock-free, for a caller on an event loop (see `Books.peek_finished`)."""
        return self.books.peek_finished(workflow_id)

    def peek_tracked(self, workflow_id: str) -> bool:
        """`is_tracked` without the locks (see `peek_finished`)."""
        return workflow_id in self._active or self.wakeups.peek_suspended(workflow_id)

    def forget_finished(self, workflow_id: str | None = None) -> None:
        """The store may no longer hold the run (deleted): keep no finished row of it."""
        self.books.forget_finished(workflow_id)

    def scope_of(self, workflow_id: str) -> CancelScope | None:
        with self._cv:
            return self._scopes.get(workflow_id)

    @contextlib.contextmanager
    def counted_idle(self) -> Iterator[None]:
        """The calling activation only waits on the clock: let an autojumping clock move."""
        with self._cv:
            self._busy -= 1
        self.wakeups.poke()
        try:
            yield
        finally:
            with self._cv:
                self._busy += 1

    def check_cancelled(self, workflow_id: str) -> None:
        if workflow_id in self._cancelled or self._closed:
            raise Stopped(f"workflow id {workflow_id!r} was cancelled or its engine closed")

    # -- what others tell ------------------------------------------------------------------

    def cancel_locally(self, workflow_id: str) -> None:
        """The in-process half of a cancel: forget its waits, cancel what it runs."""
        with self._cv:
            self._cancelled.add(workflow_id)
            scope = self._scopes.get(workflow_id)
        self.wakeups.forget(workflow_id)
        self.drop_warm(workflow_id)
        if scope is not None:
            scope.stop_run()

    def allow(self, workflow_id: str) -> None:
        """A run cancelled here was resumed: it may run again."""
        with self._cv:
            self._cancelled.discard(workflow_id)

    def release(self, workflow_id: str) -> None:
        """A run an interrupt stopped here was resumed: it may run again."""
        with self._cv:
            self._halted.pop(workflow_id, None)

    def interruption(self, workflow_id: str) -> BaseException | None:
        """The interrupt that stopped this run here, for the threads that wait on it
        (lock-free: a waiter that misses it looks again at its next wake-up)."""
        return self._halted.get(workflow_id)

    def drop_warm(self, workflow_id: str) -> None:
        """The store may hold what the cached run does not: rebuild it by replay next time."""
        self.warm.drop(workflow_id)

    def message_arrived(self, workflow_id: str) -> None:
        """A message for a run that is running now: let it look again when it stops."""
        with self._cv:
            if workflow_id in self._active:
                self._rerun.add(workflow_id)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def close(self, *, wait: bool, timeout: float | None = None) -> None:
        """Stop: no new effect starts; with `wait`, steps under way finish and commit
        (for up to `timeout` seconds, after which what still runs is cancelled)."""
        with self._cv:
            self._closed = True
            scopes = [
                scope
                for workflow_id, scope in self._scopes.items()
                if not (wait and workflow_id in self._stepping)
            ]
            self._cv.notify_all()
        self.warm.close()
        for scope in scopes:
            scope.cancel()
        late: list[CancelScope] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        if wait:
            with self._cv:
                while self._active and self._thread.is_alive():
                    if deadline is not None and time.monotonic() >= deadline:
                        late = list(self._scopes.values())
                        break
                    self._cv.wait(0.05)
            for scope in late:
                # Out of time: cancelled, recording nothing; recovery runs them again.
                scope.cancel()
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        # Out of time, a sync body that still runs is abandoned (no thread can be
        # stopped): neither the scheduler's thread nor the pool is waited for.
        patient = wait and not late
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5 if patient else 0.2)
        self._workers.shutdown(wait=patient, cancel_pending=True)
        # What still waits on the bookkeeping pool is writes nobody waits for (the
        # reset of a waiting run's recovery count, say): a patient close does them,
        # or the next launch would count a clean stop as a crash. Within what is
        # left of `timeout`, and a few seconds at most: one dropped reset costs a
        # count until the run's next suspension, and a store that does not answer
        # must not hold a shutdown.
        drain = BOOKS_DRAIN if deadline is None else min(BOOKS_DRAIN, deadline - time.monotonic())
        self._books.shutdown(wait=patient, cancel_pending=not patient, timeout=max(0.0, drain))
        self._unlisten()
        self._preempt.close()

    # -- activations: entry -------------------------------------------------------------------

    def dispatch(
        self,
        workflow_id: str,
        *,
        row: WorkflowRow | None = None,
        fresh: bool = False,
    ) -> None:
        """Run an activation of `workflow_id` soon (at most one at a time per run).

        `row` is the run as this engine just stored or claimed it, which spares
        the first activation a read; `fresh` says its log is empty (just created).
        """
        seen = self.wakeups.seq()
        with self._cv:
            if self._closed or workflow_id in self._halted:
                return
            if workflow_id in self._active:
                self._rerun.add(workflow_id)
                return
            self._active.add(workflow_id)
            self._busy += 1
            self._seen[workflow_id] = seen
            self._inbox.append(Begin(Activation(workflow_id, row, fresh)))
            self._notify_loop()

    def _post(self, event: Event) -> None:
        with self._cv:
            self._inbox.append(event)
            self._notify_loop()

    def _submit(self, fn: Callable[..., Event], activation: Activation, *args: Any) -> None:
        """Blocking work for an activation: on this thread when the run is alone (no
        hand-off), else on the pool; what it finds comes back as an event."""
        if self._alone():
            event = self._here(fn, activation, *args)
            with self._cv:
                self._inbox.appendleft(event)
            return
        long_work = fn == self.work.run_step or fn == self.work.carry
        pool = self._workers if long_work else self._books
        try:
            pool.submit(self._post_result, fn, activation, *args)
        except RuntimeError:  # the pool shut down: the activation ends here
            self._end(activation)

    def _on_pool(self, fn: Callable[..., Event], activation: Activation, *args: Any) -> None:
        """Short store work for an activation on the bookkeeping pool, whatever the load."""
        try:
            self._books.submit(self._post_result, fn, activation, *args)
        except RuntimeError:  # the pool shut down: the activation ends here
            self._end(activation)

    def _post_result(self, fn: Callable[..., Event], *args: Any) -> None:
        self._post(fn(*args))

    def _here(self, fn: Callable[..., Event], *args: Any) -> Event:
        """Run blocking work on the scheduler's thread, handing the scheduler over to
        another thread if an event arrives meanwhile (then `_HandedOver`)."""
        with self._cv:
            self._stepping_here = True
        try:
            event = fn(*args)
        finally:
            with self._cv:
                self._stepping_here = False
                handed_over = self._owner != threading.get_ident()
        if handed_over:
            with self._cv:
                self._inbox.appendleft(event)
                self._cv.notify_all()
            raise _HandedOver
        return event

    # -- the scheduler thread ---------------------------------------------------------------

    def _loop(self) -> None:
        """Advance every run that has something new, then commit their steps together."""
        with self._cv:
            self._owner = threading.get_ident()
            self._thread = threading.current_thread()
        while True:
            with self._cv:
                if not self._inbox and not self._stopping:
                    while not self._inbox and not self._stopping:
                        self._cv.wait()
                    self._courtesy.rested()
                if self._stopping and not self._inbox:
                    return
                events = collections.deque(self._inbox)
                self._inbox.clear()
            writes: list[StepWrite] = []
            self._writes = writes
            try:
                courtesy = self._courtesy
                while events or writes:
                    while events:
                        courtesy()
                        event = events.popleft()
                        try:
                            self._handle(event, writes)
                        except _HandedOver:
                            raise
                        except (Exception, ControlSignal) as exc:
                            # A fault of the scheduler's own handling: the run is
                            # parked once, naming it, rather than retried at every sweep.
                            activation = event.activation
                            self._close_interp(activation)
                            self._broken(activation, exc, None)
                    self._cold.flush()
                    self._send_finishes()
                    self.async_steps.launch()
                    if writes:
                        # The records of every step that finished, in one batch; what
                        # each write came to goes round as an event of its own.
                        events.extend(self._commit(writes))
                        writes = []
                        self._writes = writes
                self.async_steps.launch()
            except _HandedOver:
                # Another thread is the scheduler now: give it what this one held.
                self._cold.flush()
                self._send_finishes()
                self.async_steps.launch()
                with self._cv:
                    for write in reversed(writes):
                        self._inbox.appendleft(Handed(write.activation, write))
                    self._inbox.extendleft(reversed(events))
                    self._cv.notify_all()
                return

    def _notify_loop(self) -> None:
        """Wake the scheduler thread (the caller holds the lock and queued an event).

        If the scheduler's thread is running a step itself, another thread takes
        over as the scheduler, so that the event is not held up by the step.
        """
        self._cv.notify_all()  # close() may wait on the condition too
        if self._stepping_here and not self._stopping:
            self._stepping_here = False
            self._owner = None
            threading.Thread(target=self._loop, name="replaykit-scheduler", daemon=True).start()

    def _handle(self, event: Event, writes: list[StepWrite]) -> None:
        activation = event.activation
        match event:
            case Begin():
                self._begin(activation)
            case Prepared():
                self._traced(activation)
                self._decide(activation, None, None)
            case Stepped(_, effect, outcome, attempts, started):
                self._unwatch(activation)
                record = self.runner.record_for(
                    effect, outcome, started_at=started, attempts=attempts
                )
                self._stepped(activation, effect, record, writes)
            case BackedOff(_, effect, backoff):
                self._unwatch(activation)
                self._submit(self.work.hold_back, activation, effect, backoff)
            case Carried(_, effect, result):
                self._unwatch(activation)
                if effect is not None and isinstance(effect.command, (Race, All)):
                    with self._cv:
                        self._stepping.discard(activation.workflow_id)
                self._carried(activation, effect, result)
            case TailRead(_, effect, tail):
                self._caught_up(activation, effect, tail)
            case WrittenAhead(_, effect, result, following):
                # A record the generator went on from committed (a batch's, or one a
                # thread that handed over was committing): act on what it decided then.
                if self._committed_ahead(activation, event):
                    self._decide(activation, result, effect, decided=following)
            case Handed(_, write):
                # A step's record the last scheduler thread had not committed when it
                # handed over (see `_loop`): it goes into this thread's next batch.
                writes.append(write)
            case Ended():
                self._end(activation)
            case Continued(_, live):
                self._begin_next_generation(activation, live)

    def _begin(self, activation: Activation) -> None:
        with self._cv:
            activation.scope = self._scopes[activation.workflow_id] = CancelScope()
        if self._closed:
            self._end(activation)
            return
        if self._telemetry.tracing:
            activation.began_ns = time.time_ns()
        warm = self.warm.take(activation.workflow_id)
        if warm is not None and self._past_deadline(warm.row):
            # Its deadline passed while it waited: read afresh, the activation cancels it.
            close_quietly(warm.interpreter)
            warm = None
        if warm is not None:
            # No read and no replay: the cached run resumes where it waits. Its
            # record is gated on status and owner like any other, and a log
            # that moved on without it is caught at the commit (LogMovedOn).
            activation.row, activation.interp = warm.row, warm.interpreter
            self._traced(activation)
            effect = warm.effect()
            if isinstance(effect.command, Step):
                # It waits for its next attempt: run it as any step is run.
                self._decide(activation, None, None, decided=effect)
                return
            self._carry_warm(activation, effect, warm.steps_done)
            return
        if activation.fresh and activation.row is not None:
            # Just created here: nothing to read, so nothing to hand to the pool.
            event = self.work.prepare(activation)
            with self._cv:
                self._inbox.appendleft(event)
            return
        if activation.row is None and not self._alone():
            self._cold.add(activation)  # read with the others begun this round (cold.py)
            return
        self._submit(self.work.prepare, activation)

    def _carry_warm(
        self,
        activation: Activation,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> None:
        """Carry out again the effect a warm run waits on (its composite's next look)."""
        if self._cancel_due(activation):
            self._submit(self.work.deliver_cancel, activation, effect)
            return
        if self._sleep_over(activation, effect):
            return
        if isinstance(effect.command, (Race, All)):
            # As when it first ran: a graceful close lets its step children finish.
            with self._cv:
                self._stepping.add(activation.workflow_id)
        self._submit(self.work.carry, activation, effect, steps_done)

    def _sleep_over(self, activation: Activation, effect: Effect) -> bool:
        """A `Sleep` whose instant passed completes in this round's batch of records,
        not in a write of its own from a pool thread (a wave of sleepers coming due
        is thousands of them); the run goes on once it is durable. True if so."""
        row = activation.row
        record = None if row is None else self.runner.elapsed_sleep(row, effect)
        if record is not None:
            self._writes.append(StepWrite(activation, effect, record))
        return record is not None

    def _traced(self, activation: Activation) -> None:
        """The activation knows its run: its span may start at its first new work."""
        row = activation.row
        if self._telemetry.tracing and row is not None:
            self._telemetry.begin(row.workflow_id, row.name, row.trace_context, activation.began_ns)

    def _decide(
        self,
        activation: Activation,
        record: Record | None,
        effect: Effect | None,
        decided: Decision | None = None,
    ) -> None:
        """Resume the run's generator (start it, or send it `record`) and act on its decision.

        `decided` is what the generator already decided from `record` before it was
        durable (see below); it is acted on without resuming the generator again.
        """
        interp = activation.interp
        assert interp is not None
        while True:
            if record is not None:
                activation.progressed = True
                if self._closed:
                    # Shutting down: the record is durable; the rest waits for recovery.
                    self._close_interp(activation)
                    self._end(activation)
                    return
            if decided is not None:
                decision, decided = decided, None
            else:
                try:
                    decision = interp.start() if record is None else interp.resume(record)
                except NonDeterminismError as exc:
                    self._close_interp(activation)
                    self._submit(self.books.park, activation, str(exc))
                    return
            if not isinstance(decision, Effect):
                self._end_with(activation, decision)
                return
            if self._cancel_due(activation):
                self._submit(self.work.deliver_cancel, activation, decision)
                return
            command = decision.command
            if handler_for(command).preemptible(command):
                self._watch(activation)
            if not isinstance(command, Step):
                if self._sleep_over(activation, decision):
                    return
                if isinstance(command, (Race, All)):
                    # Its step children may be under way: a graceful close lets them
                    # finish (and the composite commit, if they decide it).
                    with self._cv:
                        self._stepping.add(activation.workflow_id)
                self._submit(self.work.carry, activation, decision)
                return
            fn = self.runner.step_fn(command)
            if is_async(fn):
                with self._cv:
                    self._stepping.add(activation.workflow_id)
                self.async_steps.start(activation, decision, command, fn)
                return
            if not self._alone():
                self._submit(self.work.run_step, activation, decision)
                return
            step = decision
            written = self._step_here(activation, step, fn)
            self._unwatch(activation)
            if written is None:
                return
            # The generator goes on with the outcome before its record is durable, so
            # that a workflow's last record commits with its finish. Nothing is carried
            # out until that record has committed, and if it never does, this
            # interpreter is dropped and the run rebuilt by replay from the store.
            try:
                following = interp.resume(written)
            except NonDeterminismError as exc:
                following = Failed(exc)
                nondeterministic: NonDeterminismError | None = exc
            else:
                nondeterministic = None
            if nondeterministic is None and not isinstance(following, Effect):
                activation.progressed = True
                self._submit(self.books.finish, activation, following, written)
                return
            event = self._here(
                self.work.write_ahead, activation, step, written, following, nondeterministic
            )
            assert isinstance(event, WrittenAhead)
            if not self._committed_ahead(activation, event):
                return
            record, decided = event.result, following

    def _cancel_due(self, activation: Activation) -> bool:
        """A cancel request waits to be delivered to this run (its log has none yet)."""
        interp = activation.interp
        cancels = self.runner.host.cancels
        if interp is None or cancels.held(activation.workflow_id) is None:
            return False
        if interp.cancel_delivered:
            cancels.delivered(activation.workflow_id)  # heartbeats of its cleanup go on
            return False
        return True

    def _stepped(
        self, activation: Activation, effect: Effect, record: Record, writes: list[StepWrite]
    ) -> None:
        """A step's record, not yet durable: the generator goes on from it at once.

        If the run then returns, its last record commits with its finish, one write
        instead of two (as a run alone does; deviation 13). Otherwise the record goes
        into this round's batch, and what the generator asked for next is acted on
        once the record has committed; if it never does, the interpreter is dropped
        and the run rebuilt by replay from the store.
        """
        interp = activation.interp
        assert interp is not None
        try:
            following = interp.resume(record)
        except NonDeterminismError as exc:
            writes.append(StepWrite(activation, effect, record, Failed(exc), exc))
            return
        if not isinstance(following, Effect):
            activation.progressed = True
            self._end_with(activation, following, last=record)
            return
        writes.append(StepWrite(activation, effect, record, following))

    def _end_with(
        self, activation: Activation, decision: Decision, last: Record | None = None
    ) -> None:
        """The run's generator returned: finish the run in the store.

        Beside other runs, the finishes of one round go to one bookkeeping
        thread together (`Store.finish_many`), which waits for their group
        commit once: one thread woken when it is durable, not one per run
        (each waking thread competes for the interpreter lock, with an
        application's event loop among them). Alone, or continuing as new,
        a run finishes as before. `last` is the run's last record, not yet
        committed: it commits with the finish."""
        if isinstance(decision, ContinuedAsNew) or self._alone():
            self._submit(self.books.finish, activation, decision, last)
            return
        with self._cv:
            self._finishing.append((activation, decision, last))

    def _send_finishes(self) -> None:
        with self._cv:
            if not self._finishing:
                return
            batch, self._finishing = self._finishing, []
        try:
            self._books.submit(self.books.finish_many, batch)
        except RuntimeError:  # the pool shut down: these activations end here
            for activation, _, _ in batch:
                self._end(activation)

    def post_many(self, events: list[Event]) -> None:
        """Events from another room (async steps' outcomes, the books' answers)."""
        with self._cv:
            for event in events:
                self._stepping.discard(event.activation.workflow_id)
            self._inbox.extend(events)
            self._notify_loop()

    def _alone(self) -> bool:
        """Only this activation runs: a step may run on this thread, sparing two hand-offs."""
        return self._busy == 1 and not self._inbox and not self._closed

    def _step_here(
        self, activation: Activation, effect: Effect, fn: Callable[..., Any]
    ) -> Record | None:
        """Run a step's body on the scheduler's own thread (`_here`); the record of its
        outcome, not yet committed, or None when the activation failed."""
        match self._here(self.work.run_step, activation, effect, fn):
            case Stepped(_, _, outcome, attempts, started):
                return self.runner.record_for(
                    effect, outcome, started_at=started, attempts=attempts
                )
            case BackedOff(_, _, backoff):
                self._submit(self.work.hold_back, activation, effect, backoff)
            case Carried(_, _, error):
                self._failed(activation, error, effect)
        return None

    def _committed_ahead(self, activation: Activation, event: WrittenAhead) -> bool:
        """Settle a record written ahead: True if the run goes on with its decision."""
        result, nondeterministic = event.result, event.nondeterministic
        if not isinstance(result, Record):
            self._failed(activation, result)  # the generator is past it: it is dropped
            return False
        activation.progressed = True
        if nondeterministic is not None:
            self._close_interp(activation)
            self._submit(self.books.park, activation, str(nondeterministic))
            return False
        return True

    def _carried(self, activation: Activation, effect: Effect | None, result: Any) -> None:
        if isinstance(result, Record):
            assert effect is not None
            self._decide(activation, result, effect)
        elif isinstance(result, Suspend):
            assert effect is not None
            self._suspended(activation, effect, result)
        elif (
            isinstance(result, LogMovedOn)
            and effect is not None
            and activation.interp is not None
            and activation.interp.position == effect.position
        ):
            # Another writer completed this position: read the log from here on and
            # let the generator replay it, instead of rebuilding the run from position 0.
            self._submit(self.work.read_tail, activation, effect)
        else:
            self._failed(activation, result, effect)

    def _caught_up(self, activation: Activation, effect: Effect, tail: Any) -> None:
        interp = activation.interp
        if (
            interp is None
            or not isinstance(tail, list)
            or not tail
            or tail[0].position != effect.position
            or tail[0].outcome is None
        ):
            error = tail if isinstance(tail, BaseException) else LogMovedOn("log moved on")
            self._failed(activation, error)
            return
        log.info(
            "workflow id %r: position %d was completed by another writer; replaying the %d "
            "record(s) from there",
            activation.workflow_id,
            effect.position,
            len(tail),
        )
        interp.catch_up(tail)
        self._decide(activation, tail[0], effect)

    def _suspended(self, activation: Activation, effect: Effect, suspend: Suspend) -> None:
        interp = activation.interp
        row = activation.row
        assert interp is not None and row is not None
        workflow_id = activation.workflow_id
        with self._cv:
            cancelled = workflow_id in self._cancelled
        if cancelled:
            # Cancelled while it looked at its wait again: nothing of it stays here (kept
            # warm and waiting, it held memory and a timer, and looked tracked to a sweep).
            self._close_interp(activation)
            activation.outcome = "cancelled"
            self._end(activation)
            return
        pending = suspend.pending if suspend.pending is not None else effect.pending
        waiting = attrs.evolve(effect, pending=pending)
        if self._cancel_due(activation):
            # A cancel came while it looked at its wait: delivered at that wait now.
            self._submit(self.work.deliver_cancel, activation, waiting)
            return
        keep = not self._closed and self.warm.stays(workflow_id, effect, suspend)
        if keep and self.warm.due_at_once(suspend):
            # A warm run alone on an autojumping clock: the timer loop would jump
            # to its deadline and wake it; it goes on at once instead.
            if isinstance(waiting.command, Step):
                self._decide(activation, None, None, decided=waiting)
                return
            self._carry_warm(activation, waiting, suspend.steps_done)
            return
        if row.recovery_attempts:
            # Reaching a wait is not crash-looping, even with no new record: a run
            # that sleeps for a month must survive any number of restarts. Only runs
            # that die while executing keep counting toward parking.
            activation.row = row = attrs.evolve(row, recovery_attempts=0)
            # Closing (the pool shut): the count stays until its next suspension.
            with contextlib.suppress(RuntimeError):
                self._books.submit(self.books.reset_recovery, workflow_id)
        activation.outcome = "suspended"
        with self._cv:
            self._generations_in_a_row.pop(workflow_id, None)
        if keep:
            self.warm.keep(workflow_id, WarmRun(kept_row(row), interp, pending, suspend.steps_done))
        else:
            close_quietly(interp)
        activation.interp = None
        with self._cv:
            seen = self._seen.get(workflow_id, 0)
        # What waits in the wake-ups holds no record nor step outcomes: the warm entry
        # has them, if any.
        waits = attrs.evolve(suspend, pending=None, steps_done=None)
        if not self.wakeups.suspend(workflow_id, waits, seen=seen):
            # What it waits for changed while it was being replayed: look again.
            with self._cv:
                self._rerun.add(workflow_id)
        self._end(activation)

    def _failed(
        self, activation: Activation, error: BaseException, effect: Effect | None = None
    ) -> None:
        """An effect ended the attempt: how the run goes on depends on why (`judge`)."""
        workflow_id = activation.workflow_id
        self._close_interp(activation)
        match judge(error, knows_its_run=activation.row is not None):
            case Verdict.PARK:
                self._submit(self.books.park, activation, str(error))
                return
            case Verdict.REPLAY:
                log.info("workflow id %r: %s; replaying it from the store", workflow_id, error)
                with self._cv:
                    self._rerun.add(workflow_id)
            case Verdict.STOP:
                log.info("workflow id %r stopped: %s", workflow_id, error)
                if not self._closed:  # closing interrupts; otherwise the run was stopped
                    activation.outcome = "cancelled"
            case Verdict.HALT:
                self._halt(activation, error, effect)
                return
            case Verdict.RETRY_SOON:
                log.warning(
                    "workflow id %r: store unavailable (%s); retrying soon", workflow_id, error
                )
                self.wakeups.add_timer(
                    self.clock.now() + timedelta(seconds=self.poll_interval), workflow_id
                )
            case Verdict.FAIL:
                self._submit(self.books.fail, activation, error, effect)
                return
            case Verdict.BROKEN:
                self._broken(activation, error, effect)
                return
        self._end(activation)

    def _broken(self, activation: Activation, error: BaseException, effect: Effect | None) -> None:
        """An error nobody expected (maybe the engine's fault): park the run once, with
        the error and its traceback named, for an operator to fix and resume."""
        why = broken_why(
            error, effect, executor_id=self.executor_id, workflow_id=activation.workflow_id
        )
        self._submit(self.books.park, activation, why, error)

    def _halt(self, activation: Activation, error: BaseException, effect: Effect | None) -> None:
        """A step body raised a BaseException that is no control signal: stop the run in
        this engine, record nothing, say why on the run, count it as a recovery."""
        workflow_id = activation.workflow_id
        with self._cv:
            self._halted[workflow_id] = error
        row = activation.row
        detail = halt_detail(error, effect, executor_id=self.executor_id, workflow_id=workflow_id)
        log.error(
            "workflow %r (id %r) %s",
            row.name if row is not None else "?",
            workflow_id,
            detail,
            exc_info=(type(error), error, error.__traceback__),
        )
        activation.outcome = "interrupted"
        self._on_pool(self.books.note_halt, activation, detail)

    def _end(self, activation: Activation) -> None:
        """The activation is over; another begins at once if the run must look again."""
        workflow_id = activation.workflow_id
        seen = self._leave(activation)
        with self._cv:
            if self._scopes.get(workflow_id) is activation.scope:
                self._scopes.pop(workflow_id, None)
            if workflow_id in self._rerun and not self._closed and workflow_id not in self._halted:
                self._again(Activation(workflow_id, None, False), seen)
                return
            self._rerun.discard(workflow_id)
            self._active.discard(workflow_id)
            self._seen.pop(workflow_id, None)
            self._generations_in_a_row.pop(workflow_id, None)
            self._busy -= 1
            nothing_runs = not self._active
            self._cv.notify_all()
        if nothing_runs:
            self.wakeups.forget_notifications(seen)
        else:
            self.wakeups.poke()

    def _leave(self, activation: Activation) -> int:
        """What an activation's end does first, outside the lock: its preemption watch
        and its span end; the notification count it had seen by then."""
        self._unwatch(activation)
        if self._telemetry.tracing:
            self._telemetry.end(activation.workflow_id, activation.outcome)
        return self.wakeups.seq()

    def _again(self, activation: Activation, seen: int) -> None:
        """(Under `_cv`.) The run goes on at once as `activation`, still active and
        counted busy, having seen the notifications up to `seen`."""
        workflow_id = activation.workflow_id
        self._rerun.discard(workflow_id)
        self._seen[workflow_id] = seen
        self._inbox.append(Begin(activation))
        self._notify_loop()

    def _close_interp(self, activation: Activation) -> None:
        if activation.interp is not None:
            close_quietly(activation.interp)
            activation.interp = None

    # -- preemptible steps --------------------------------------------------------------------

    def _watch(self, activation: Activation) -> None:
        if activation.watch is None and activation.scope is not None:
            activation.watch = self._preempt.add(activation.workflow_id, activation.scope)

    def _unwatch(self, activation: Activation) -> None:
        token, activation.watch = activation.watch, None
        if token is not None:
            self._preempt.remove(token)

    # -- continue-as-new ----------------------------------------------------------------------

    def _begin_next_generation(self, activation: Activation, live: WorkflowRow) -> None:
        """The continue committed: the next generation starts at once, on this scheduler,
        from its empty log (no read), as a run just created here does."""
        workflow_id = activation.workflow_id
        self._close_interp(activation)
        self.drop_warm(workflow_id)
        seen = self._leave(activation)
        with self._cv:
            if self._scopes.get(workflow_id) is activation.scope:
                self._scopes.pop(workflow_id, None)
            in_a_row = self._generations_in_a_row[workflow_id] = (
                self._generations_in_a_row.get(workflow_id, 0) + 1
            )
            spinning = in_a_row > self.max_generations_in_a_row
            if not self._closed and workflow_id not in self._cancelled and not spinning:
                # Still active and counted busy: it goes on as a new activation. A
                # message that asked it to look again is seen by the new generation
                # when it reaches its Recv.
                self._again(Activation(workflow_id, live, True), seen)
                return
        if spinning:
            # Generations one after another with no wait between: a loop that would
            # write them for ever. The live generation is parked, saying so.
            with self._cv:
                self._generations_in_a_row.pop(workflow_id, None)
            why = spinning_why(
                in_a_row,
                limit=self.max_generations_in_a_row,
                executor_id=self.executor_id,
                workflow_id=workflow_id,
            )
            self._submit(self.books.park, Activation(workflow_id, live, False), why)
            self._end(activation)
            return
        # Closing (or cancelled here): the new generation waits in the store, PENDING,
        # for recovery.
        self._end(activation)

    # -- the warm cache ---------------------------------------------------------------------

    def _past_deadline(self, row: WorkflowRow) -> bool:
        return row.deadline is not None and self.clock.passed(row.deadline)

    def would_stay_warm(self, workflow_id: str, position: int) -> bool:
        """Whether a run suspending at `position` now would keep its generator."""
        return not self._closed and self.warm.would_stay(workflow_id, position)
