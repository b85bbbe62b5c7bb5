"""What an activation that ended in an exception means for its run.

The scheduler meets every exception an activation ends with; this room says
what each one means (`judge`) and words what the run's status detail and the
log say about it. It decides nothing by itself and touches no state: a table
of meanings, testable alone (tests/test_failures.py).
"""

from __future__ import annotations

import enum

from replaykit.errors import (
    ControlSignal,
    DamagedData,
    NonDeterminismError,
    RecordConflict,
    StoreUnavailable,
)
from replaykit.interpreter import Effect
from replaykit.runtime.host import LogMovedOn

__all__ = ["Verdict", "broken_why", "describe", "halt_detail", "judge", "spinning_why"]


class Verdict(enum.Enum):
    """How a run goes on after its activation ended in an exception."""

    #: The log and the code disagree, or stored data is damaged: no attempt can get
    #: past it until someone acts. Park the run once, saying why.
    PARK = "park"
    #: Another writer completed a position first: rebuild the run from the store.
    REPLAY = "replay"
    #: Cancelled, closing, or another engine owns the run now: stop, recording nothing.
    STOP = "stop"
    #: A step raised KeyboardInterrupt, SystemExit or a misused GeneratorExit: not the
    #: run's outcome, and not to be retried at every sweep either. Halt it here.
    HALT = "halt"
    #: The store did not answer: look again after a poll interval.
    RETRY_SOON = "retry soon"
    #: The run gave something the engine refuses (a name a store refuses, a payload
    #: over the limit, a Sleep whose deadline overflows): the run fails, once.
    FAIL = "fail"
    #: Nobody expected it (maybe the engine's fault): park the run once, with the
    #: error and its traceback, for an operator to fix and resume.
    BROKEN = "broken"


def judge(error: BaseException, *, knows_its_run: bool) -> Verdict:
    """What `error` means. `knows_its_run`: the activation read its run's row (only
    then can a refusal be laid at the run's door and fail it)."""
    if isinstance(error, (NonDeterminismError, DamagedData)):
        return Verdict.PARK
    if isinstance(error, LogMovedOn):
        return Verdict.REPLAY
    if isinstance(error, (RecordConflict, ControlSignal)):
        return Verdict.STOP
    if not isinstance(error, Exception):
        return Verdict.HALT
    if isinstance(error, StoreUnavailable):
        return Verdict.RETRY_SOON
    if isinstance(error, (ValueError, TypeError, ArithmeticError)) and knows_its_run:
        return Verdict.FAIL
    return Verdict.BROKEN


def describe(effect: Effect | None) -> str:
    """What the activation was doing, for a message: "step 'charge' at position 3"."""
    if effect is None:
        return "an activation"
    command = effect.command
    name = getattr(command, "name", None)
    named = f" {name!r}" if isinstance(name, str) and name else ""
    return f"{type(command).__name__.lower()}{named} at position {effect.position}"


def broken_why(
    error: BaseException, effect: Effect | None, *, executor_id: str, workflow_id: str
) -> str:
    """The parked run's status detail when nobody expected `error`."""
    return (
        f"{describe(effect)} failed unexpectedly in engine {executor_id!r} "
        f"({type(error).__name__}: {error}); this may be a bug in replaykit or a fault "
        "of its environment. Fix the cause, then resume the run "
        f"(replaykit workflows resume {workflow_id})"
    )


def halt_detail(
    error: BaseException, effect: Effect | None, *, executor_id: str, workflow_id: str
) -> str:
    """The halted run's status detail: what stopped it, and how it runs again."""
    said = f": {error}" if str(error) else ""
    return (
        f"stopped by engine {executor_id!r}: {describe(effect)} raised {type(error).__name__}"
        f"{said}; nothing was recorded for it. It runs again on a resume "
        f"(replaykit workflows resume {workflow_id}) or at an engine's next start"
    )


def spinning_why(in_a_row: int, *, limit: int, executor_id: str, workflow_id: str) -> str:
    """The parked run's status detail when it continued as new too often without a wait."""
    return (
        f"continued as new {in_a_row} times in a row in engine {executor_id!r} "
        f"without waiting (max_generations_in_a_row={limit}):"
        " a loop of ContinueAsNew with no Sleep, Recv or other wait between "
        "generations would write them for ever. Add a wait, or raise "
        "Engine(max_generations_in_a_row=...) for a batch that needs more; then "
        f"resume it (replaykit workflows resume {workflow_id})"
    )
