"""What moves between the scheduler and the rooms around it: activations and events.

An *activation* advances one run until it finishes or suspends; the scheduler holds it
between the run's effects. Everything that happens to an activation away from the
scheduler's thread — a read of its log, a step body, a commit, a finish — comes back
as one of the events below, posted to the scheduler (`Scheduler.post`), which
dispatches on the event's class with one `match`. No room calls back into the
scheduler; no tuple tagged with a string crosses a room's wall.

| event | posted by | what it says |
| --- | --- | --- |
| `Begin` | the scheduler | an activation is to begin (dispatched, or a run to look again) |
| `Prepared` | the scheduler (its read of the run) | the run's interpreter is built |
| `Stepped` | a step's runner (a pool thread, the loop) | a step body ended with an outcome |
| `BackedOff` | a step's runner | a step waits for its next attempt |
| `Carried` | any room | what carrying out an effect came to: a record, a suspension, an error |
| `TailRead` | the scheduler (its read) | the log from a position another writer completed |
| `WrittenAhead` | the writer's callers | a record the generator went on from, committed or not |
| `Handed` | a scheduler thread handing over | a step's record still to commit, for the next batch |
| `Ended` | the books, the scheduler | the activation is over |
| `Continued` | the books | the run continued as new: its next generation begins |
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from replaykit.errors import NonDeterminismError
from replaykit.interpreter import Decision, Effect, Interpreter
from replaykit.log import Outcome, Record
from replaykit.runtime.host import CancelScope
from replaykit.stores.base import WorkflowRow

__all__ = [
    "Activation",
    "BackedOff",
    "Begin",
    "Carried",
    "Continued",
    "Ended",
    "Event",
    "Handed",
    "Prepared",
    "StepWrite",
    "Stepped",
    "TailRead",
    "WrittenAhead",
]


@attrs.define(slots=True, eq=False)
class Activation:
    """One run being advanced: what the scheduler holds of it between its effects."""

    workflow_id: str
    row: WorkflowRow | None
    fresh: bool
    interp: Interpreter | None = None
    scope: CancelScope | None = None
    progressed: bool = False  # a record was committed in this activation
    watch: int | None = None  # its preemptible step's entry in the PreemptWatch
    # How it ended, for its span (replaykit.otel): ok, error, cancelled, suspended,
    # parked, or interrupted (closing, an outage, a replay to come).
    outcome: str = "interrupted"
    began_ns: int = 0  # when it began, for its span; set only while tracing

    def row_or_raise(self) -> WorkflowRow:
        if self.row is None:  # pragma: no cover - an effect always follows a read row
            raise AssertionError(f"workflow id {self.workflow_id!r}: no row read yet")
        return self.row


@attrs.frozen
class StepWrite:
    """A step's record on its way to the batch commit."""

    activation: Activation
    effect: Effect
    record: Record
    # What the generator decided from `record` before it was durable (see
    # `Scheduler._stepped`), acted on once the record has committed; and the
    # non-determinism the generator raised at it, if it did.
    following: Decision | None = None
    nondeterministic: NonDeterminismError | None = None


@attrs.frozen(eq=False)
class Begin:
    activation: Activation


@attrs.frozen(eq=False)
class Prepared:
    activation: Activation


@attrs.frozen(eq=False)
class Stepped:
    activation: Activation
    effect: Effect
    outcome: Outcome
    attempts: int
    started: datetime


@attrs.frozen(eq=False)
class BackedOff:
    activation: Activation
    effect: Effect
    #: The step's `steps.Backoff`: attempts made, when the next is due.
    backoff: Any


@attrs.frozen(eq=False)
class Carried:
    activation: Activation
    effect: Effect | None
    #: A `Record`, a `host.Suspend`, or the exception that ended the attempt.
    result: Any


@attrs.frozen(eq=False)
class TailRead:
    activation: Activation
    effect: Effect
    #: The records from `effect`'s position on, or the exception the read raised.
    tail: Any


@attrs.frozen(eq=False)
class WrittenAhead:
    activation: Activation
    effect: Effect
    #: The committed `Record`, or the exception the write came to.
    result: Any
    following: Decision
    nondeterministic: NonDeterminismError | None


@attrs.frozen(eq=False)
class Handed:
    activation: Activation
    write: StepWrite


@attrs.frozen(eq=False)
class Ended:
    activation: Activation


@attrs.frozen(eq=False)
class Continued:
    activation: Activation
    live: WorkflowRow


Event = (
    Begin
    | Prepared
    | Stepped
    | BackedOff
    | Carried
    | TailRead
    | WrittenAhead
    | Handed
    | Ended
    | Continued
)
