"""The books: finishing, failing, parking and continuing runs, and what a finish leaves.

When a run's generator returns, raises, or continues as new, or when the scheduler
decides a run cannot go on (non-determinism, a fault, an interrupt), the books write
that to the store — on a bookkeeping thread, never the scheduler's — and answer with
the event the scheduler acts on (`Ended`, `Carried`, `Continued`). They also keep the
rows of runs finished here lately (`FinishedRuns`, finished.py, under its own lock), so
`handle.result()` on this engine needs no read. What an end comes to apart from the
store (the next generation's arguments, the error column, the words) is endings.py.

The room is built by the engine and handed to the scheduler, and answers only with
events (returned, or posted with `post_many` for a batch of finishes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs

from replaykit import serde
from replaykit.errors import (
    Cancelled,
    ControlSignal,
    PayloadTooLarge,
    RecordConflict,
    SerializationError,
    StoreError,
    StoreUnavailable,
)
from replaykit.interpreter import Completed, ContinuedAsNew, Decision, Effect, Failed
from replaykit.log import Failure, Outcome, Record, Status, Value
from replaykit.otel import Telemetry
from replaykit.runtime.clock import Clock
from replaykit.runtime.commits import LogMovedOn, RecordWriter
from replaykit.runtime.endings import continued_inputs, error_text, finished_outcome, say_failed
from replaykit.runtime.events import Activation, Carried, Continued, Ended, Event
from replaykit.runtime.finished import FinishedRuns
from replaykit.runtime.host import Wake
from replaykit.stores.base import Ending, FinishWrite, Store, WorkflowRow

__all__ = ["Books"]

log = logging.getLogger("replaykit.engine")


class Books:
    """Writes how runs end, on the caller's (a bookkeeping) thread."""

    def __init__(
        self,
        store: Store,
        records: RecordWriter,
        clock: Clock,
        telemetry: Telemetry,
        *,
        executor_id: str,
        app_version: str,
        max_payload_bytes: int,
        max_recovery_attempts: int,
        park: Callable[[str, str, BaseException | None], None],
        queue_run_done: Callable[[str, str], None],
        tell: Callable[[Wake], None],
        post_many: Callable[[list[Event]], None],
        parent_ended: Callable[[WorkflowRow, str, bool], None] | None = None,
    ) -> None:
        self.store = store
        self.records = records
        self.clock = clock
        self._telemetry = telemetry
        self.executor_id = executor_id
        self.app_version = app_version
        self.max_payload_bytes = max_payload_bytes
        self.max_recovery_attempts = max_recovery_attempts
        self._park = park
        self._queue_run_done = queue_run_done
        self._tell = tell
        self._post_many = post_many
        # Told of each run that ended (or continued as new), and whether its log started
        # children: their parent close policies apply.
        self._parent_ended = parent_ended
        self.finished = FinishedRuns()

    # -- runs finished here ----------------------------------------------------------------

    def finished_row(self, workflow_id: str) -> WorkflowRow | None:
        return self.finished.get(workflow_id)

    def peek_finished(self, workflow_id: str) -> WorkflowRow | None:
        """Lock-free, for a caller on an event loop (see `FinishedRuns.peek`)."""
        return self.finished.peek(workflow_id)

    def forget_finished(self, workflow_id: str | None = None) -> None:
        """The store may no longer hold the run (deleted): see `FinishedRuns.forget`."""
        self.finished.forget(workflow_id)

    # -- how runs end -----------------------------------------------------------------------

    def finish(self, activation: Activation, decision: Decision, last: Record | None) -> Event:
        """Finish the run; `last` is its last record, not yet committed: they commit together."""
        if isinstance(decision, ContinuedAsNew) and not _cancel_delivered(activation):
            return self._continue(activation, decision, last)
        row = activation.row_or_raise()
        try:
            if activation.progressed and row.recovery_attempts:
                self.reset_recovery(row.workflow_id)
            status, result = self._run_result(row, decision, _cancel_delivered(activation))
            finished = self.end(row, status, result, last)
            activation.outcome = finished_outcome(status, finished)
        except BaseException as exc:
            return Carried(activation, None, exc)
        if finished and status is not Status.CANCELLED:
            say_failed(activation, row, result)
        if finished:
            self._close_children(activation, row, f"ended {status.value}")
        return Ended(activation)

    def finish_many(self, batch: list[tuple[Activation, Decision, Record | None]]) -> None:
        """Finish many runs whose generators returned, in one `finish_many` call, and
        post what became of each (`_end_with`): one event per activation, whatever
        fails on the way, so that none is left neither ended nor finished."""
        events: list[Event] = []
        try:
            self._finish_together(batch, events)
        finally:
            answered = {id(event.activation) for event in events}
            for activation, _, _ in batch:
                if id(activation) not in answered:  # pragma: no cover - a bug above
                    log.error("workflow id %r: its finish was lost", activation.workflow_id)
                    events.append(Ended(activation))
            self._post_many(events)

    def _finish_together(
        self, batch: list[tuple[Activation, Decision, Record | None]], events: list[Event]
    ) -> None:
        finishing: list[
            tuple[Activation, Decision, WorkflowRow, Status, Outcome, str, Record | None]
        ] = []
        for activation, decision, last in batch:
            try:
                row = activation.row_or_raise()
                self.records.fenced(row.workflow_id)  # a zombie finishes nothing (fence.py)
                if activation.progressed and row.recovery_attempts:
                    self.reset_recovery(row.workflow_id)
                status, result = self._run_result(row, decision, _cancel_delivered(activation))
            except BaseException as exc:
                events.append(Carried(activation, None, exc))
                continue
            finishing.append((activation, decision, row, status, result, error_text(result), last))
        if not finishing:
            return
        forgotten = self.finished.mark()
        answers: list[bool | BaseException]
        try:
            answers = list(
                self.store.finish_many(
                    [
                        FinishWrite(row.workflow_id, status, result, **self._said(error, last))
                        for _, _, row, status, result, error, last in finishing
                    ]
                )
            )
            if len(answers) != len(finishing):
                raise StoreError(
                    f"finish_many answered {len(answers)} finishes of {len(finishing)}; "
                    "a store must answer each finish it is given, in order"
                )
        except BaseException as exc:  # the call as a whole: each run goes its own way
            answers = [exc] * len(finishing)
        for (activation, decision, row, status, result, error, last), answer in zip(
            finishing, answers, strict=True
        ):
            try:
                if isinstance(answer, StoreUnavailable):
                    # It may have committed, its answer lost: the one-finish path,
                    # retried through the outage, tells (a second finish of a run
                    # finished already answers False), and releases the run's queue
                    # slot either way.
                    events.append(self.finish(activation, decision, last))
                elif isinstance(answer, RecordConflict) and last is not None:
                    # The last record could not be written as computed: the log moved on.
                    moved = LogMovedOn(str(answer))
                    moved.__cause__ = answer
                    events.append(Carried(activation, None, moved))
                elif isinstance(answer, BaseException):
                    events.append(Carried(activation, None, answer))
                else:
                    self._finished_here(row, status, result, error, answer, forgotten, last)
                    activation.outcome = finished_outcome(status, answer)
                    if answer and status is not Status.CANCELLED:
                        say_failed(activation, row, result)
                    if answer:
                        self._close_children(activation, row, f"ended {status.value}")
                    events.append(Ended(activation))
            except BaseException as exc:
                events.append(Carried(activation, None, exc))

    def _run_result(
        self, row: WorkflowRow, decision: Decision, cancelled: bool = False
    ) -> tuple[Status, Outcome]:
        """The status and result a run ends with, from its generator's last decision.

        A run its log delivered a cancel to ends CANCELLED however its generator ended
        (returned after its cleanup, re-raised `Cancelled`, failed in its cleanup,
        continued as new): its result is that `Cancelled`, its status detail says so.
        """
        if cancelled:
            return Status.CANCELLED, self._cancelled_result(row, decision)
        if isinstance(decision, Completed):
            try:
                data = serde.encode(
                    decision.value,
                    what=f"the result of workflow {row.name!r} (id {row.workflow_id!r})",
                    max_bytes=self.max_payload_bytes,
                )
            except (SerializationError, PayloadTooLarge) as exc:
                return Status.ERROR, Failure(serde.encode_error(exc))
            return Status.SUCCESS, Value(data)
        assert isinstance(decision, Failed)
        return Status.ERROR, Failure(serde.encode_error(decision.error))

    def _cancelled_result(self, row: WorkflowRow, decision: Decision) -> Outcome:
        reason = ""
        if isinstance(decision, Failed) and isinstance(decision.error, Cancelled):
            reason = decision.error.reason
        else:
            request = self.store.get_cancel_request(row.workflow_id)
            reason = "" if request is None else request.reason
        how = {Completed: "returned", Failed: "raised", ContinuedAsNew: "continued as new"}
        ended = how.get(type(decision), "ended")
        if isinstance(decision, Failed) and not isinstance(decision.error, Cancelled):
            ended = f"failed in its cleanup ({type(decision.error).__name__}: {decision.error})"
        # The reason first, as a terminate's detail is: "was cancelled: <reason> (...)".
        said = reason or "cancelled"
        error = Cancelled(f"{said} (a cancel it handled: the workflow {ended})", reason)
        return Failure(serde.encode_error(error, with_traceback=False))

    def end(
        self, row: WorkflowRow, status: Status, result: Outcome, last: Record | None = None
    ) -> bool:
        """Finish the run in the store; whether it was still PENDING here to finish."""
        error = error_text(result)
        self.records.fenced(row.workflow_id)  # a zombie finishes nothing (fence.py)
        forgotten = self.finished.mark()
        try:
            finished = self.store.finish_workflow(
                row.workflow_id, status, result, **self._said(error, last)
            )
        except RecordConflict as exc:
            if last is None:
                raise
            # The last record could not be written as computed: the log moved on.
            raise LogMovedOn(str(exc)) from exc
        self._finished_here(row, status, result, error, finished, forgotten, last)
        return finished

    def _said(self, error: str, last: Record | None) -> Ending:
        """What a finish from here says beside the run, its status and its result,
        alone (`finish_workflow`) or with others (`finish_many`)."""
        return {"error": error, "executor_id": self.executor_id, "record": last}

    def _finished_here(
        self,
        row: WorkflowRow,
        status: Status,
        result: Outcome,
        error: str,
        finished: bool,
        forgotten: int,
        last: Record | None = None,
    ) -> None:
        """What follows a finish's commit here: the finished cache (unless a delete was
        heard since `forgotten` was read), the result waiters, the run's queue; or,
        for a finish refused with the run's last record, that record landed on its
        own if a cancel came first (its effect happened)."""
        if not finished:
            self.records.finish_refused(row, last)
        if finished:
            # handle.result() on this engine then needs no read of its own.
            self.finished.keep(
                attrs.evolve(row, status=status, result=result, error=error), forgotten
            )
            # The store's notification may have come before the cache held the row:
            # tell the result waiters again, so they find it here, not in the store.
            self._tell(("finished", row.workflow_id))
            self._telemetry.run_finished(row.name, status.value)
        if row.queue is not None:
            self._queue_run_done(row.queue, row.workflow_id)

    def _continue(
        self, activation: Activation, decision: ContinuedAsNew, last: Record | None
    ) -> Event:
        """Archive this generation and start the next under the same id (one store call).

        `last`, a lone run's step record the generator went on from, commits first:
        the archived log must hold it. A crash before the continue commits replays
        to the same `ContinueAsNew`; after it, recovery starts the next generation.
        """
        row = activation.row_or_raise()
        workflow_id = row.workflow_id
        try:
            if last is not None:
                self.records.write(row, last)
                activation.progressed = True
            try:
                inputs = continued_inputs(row, decision, self.max_payload_bytes)
            except (TypeError, ValueError) as exc:  # not encodable, too large, bad arguments
                return self.fail(activation, exc, None)
            live = self.store.continue_workflow(
                workflow_id,
                inputs,
                generation=row.generation,
                executor_id=self.executor_id,
                now=self.clock.now(),
            )
        except BaseException as exc:
            return Carried(activation, None, exc)
        # A continued generation is not a finished run: no "finished" for the id, no
        # finished-runs metric, and the queue keeps the run as in progress.
        activation.outcome = "continued"
        self._close_children(activation, row, "continued as new")
        return Continued(activation, live)

    def _close_children(self, activation: Activation, row: WorkflowRow, how: str) -> None:
        """The run ended: its children's parent close policies apply, if it started any."""
        if self._parent_ended is not None:
            self._parent_ended(row, how, _has_children(activation))

    def fail(self, activation: Activation, error: Exception, effect: Effect | None) -> Event:
        """End the run in ERROR with a permanent error, naming where it happened."""
        row = activation.row_or_raise()
        where = "" if effect is None else f" at position {effect.position}"
        doing = "" if effect is None else f" ({type(effect.command).__name__})"
        log.error(
            "workflow %r (id %r) failed%s%s: %s", row.name, row.workflow_id, where, doing, error
        )
        info = serde.encode_error(error)
        info = attrs.evolve(
            info,
            message=f"workflow {row.name!r} (id {row.workflow_id!r}){where}{doing}: {info.message}",
        )
        try:
            finished = self.end(row, Status.ERROR, Failure(info))
        except BaseException as exc:
            log.warning("workflow id %r: could not record its failure (%s)", row.workflow_id, exc)
        else:
            activation.outcome = "error"
            if finished:
                self._close_children(activation, row, "ended ERROR")
        return Ended(activation)

    def park(self, activation: Activation, why: str, cause: BaseException | None = None) -> Event:
        try:
            self._park(activation.workflow_id, why, cause)
        except BaseException as exc:
            log.warning("workflow id %r: could not park it (%s)", activation.workflow_id, exc)
        else:
            activation.outcome = "parked"
            name = activation.row.name if activation.row is not None else ""
            self._telemetry.run_finished(name, Status.PARKED.value)
        return Ended(activation)

    def note_halt(self, activation: Activation, detail: str) -> Event:
        """Say on the run why it stopped, counted as a recovery attempt: a run that is
        interrupted every time is parked after `max_recovery_attempts`."""
        workflow_id = activation.workflow_id
        try:
            attempts = self.store.bump_recovery(workflow_id)
            if attempts > self.max_recovery_attempts:
                self._park(
                    workflow_id,
                    f"{detail}. Stopped or recovered {attempts - 1} times without finishing "
                    f"(max_recovery_attempts={self.max_recovery_attempts}); fix the cause and "
                    "resume it",
                    None,
                )
                activation.outcome = "parked"
            else:
                self.store.set_status(
                    workflow_id, Status.PENDING, only_from=(Status.PENDING,), error=detail
                )
        except Exception as exc:
            log.warning("workflow id %r: could not note why it stopped (%s)", workflow_id, exc)
        # Its waiters on this engine wake to be handed the interrupt.
        self._tell(("finished", workflow_id))
        return Ended(activation)

    def reset_recovery(self, workflow_id: str) -> None:
        """Progress after a recovery: the run is not crash-looping."""
        try:
            self.store.set_status(
                workflow_id, Status.PENDING, only_from=(Status.PENDING,), reset_recovery=True
            )
        except ControlSignal:
            # The engine is stopping (or, in the testing kit, its simulated process
            # crashed): nothing to say; the next suspension or progress resets it.
            return
        except Exception as exc:  # only the crash-loop counter: the next progress resets it
            log.warning("workflow id %r: could not reset its recovery count (%s)", workflow_id, exc)

    def cannot_run(self, row: WorkflowRow, why: str) -> None:
        """Say why this engine skips a run of its own, where users look: the run's
        status detail (`workflows show`, `WorkflowTimeout`) and one warning here."""
        detail = (
            f"engine {self.executor_id!r} (version {self.app_version!r}) cannot run "
            f"workflow {row.name!r} (id {row.workflow_id!r}): {why}"
        )
        if row.error == detail:
            return  # said already; a sweep finds it again and stays quiet
        log.warning("%s", detail)
        self.store.set_status(
            row.workflow_id, Status.PENDING, only_from=(Status.PENDING,), error=detail
        )


def _cancel_delivered(activation: Activation) -> bool:
    """Whether the run's log delivered a cancel to it (`Interpreter.cancel_delivered`)."""
    interp = activation.interp
    return interp is not None and interp.cancel_delivered


def _has_children(activation: Activation) -> bool:
    interp = activation.interp
    return interp is not None and interp.has_children
