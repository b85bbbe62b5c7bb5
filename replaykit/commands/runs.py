"""`CancelRun`: a command that acts on another run, recorded once."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from replaykit.commands.base import NEVER_UNDONE, CommandFacts, Yields, alone


def _target(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(
            f"CancelRun({value!r}): the workflow id must be a non-empty str, the id of the "
            "run to cancel (such as 'order-7')"
        )
    return value


def _reason(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"CancelRun(..., reason={value!r}): the reason must be a str (kept as the "
            "cancelled run's status detail)"
        )
    return value


def _children(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"CancelRun(..., children={value!r}): children must be True or False")
    return value


@attrs.frozen
class CancelRun(Yields[bool]):
    """Ask another run to cancel, durably, as `engine.cancel(workflow_id, reason=...)`
    would: it gets `Cancelled` at its current yield and may clean up within the
    default grace.

    Yields True if this changed the run, False if it had finished already. The cancel
    happens once: its outcome is recorded, and a replay answers from the record
    without asking again; a crash between the request and its record finds the
    request its own (the reason names this run and position, and `reason`) and
    answers True again, without asking twice (a second cancel stops a run hard). The
    run's children end by their parent close policies when it ends; `children=False`
    spares them only when the cancel stops the run at once (it was not running). An
    id no run has raises `WorkflowNotFound` at the yield (recorded); a run cannot
    cancel itself this way (return, or raise, to end it).
    """

    kind: ClassVar[str] = "cancel_run"
    facts: ClassVar[CommandFacts] = alone(
        f"it cancels the other run when it is carried out, {NEVER_UNDONE}", instant=True
    )
    workflow_id: str = attrs.field(converter=_target)
    reason: str = attrs.field(default="", converter=_reason)
    children: bool = attrs.field(default=True, kw_only=True, converter=_children)

    @property
    def name(self) -> str:
        return self.workflow_id

    def describe_args(self) -> Any:
        return [self.workflow_id, self.reason, self.children]
