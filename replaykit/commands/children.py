"""`Start`, `Call`, `Wait` and `ContinueAsNew`: the commands that begin, await or succeed a run."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic

import attrs

from replaykit._durations import as_seconds, run_deadline
from replaykit.commands.base import Command, CommandFacts, T_co, Yields
from replaykit.registry import BoundWorkflow, Workflow, unbind


def _workflow_name(wf: Any) -> str:
    name = getattr(wf, "workflow_name", None)
    if isinstance(name, str):
        return name
    raise TypeError(
        f"expected a function decorated with @workflow, got {wf!r}; "
        "decorate it with @replaykit.workflow so the engine can find it again by name"
    )


#: What becomes of a child run still running when its parent ends (returns, fails, is
#: cancelled or terminated, continues as new): stopped hard ("terminate", the
#: default, as Temporal's), asked to cancel so that it may clean up ("cancel"), or left
#: to run on ("abandon"). docs/concepts.md, "Parent close policy", says why.
PARENT_CLOSE_POLICIES = ("terminate", "cancel", "abandon")
DEFAULT_PARENT_CLOSE = "terminate"


def checked_parent_close(value: object, what: str) -> str:
    if not isinstance(value, str) or value not in PARENT_CLOSE_POLICIES:
        raise ValueError(
            f"{what}: parent_close={value!r} is not a parent close policy; use one of "
            + ", ".join(repr(p) for p in PARENT_CLOSE_POLICIES)
            + f" (the default, {DEFAULT_PARENT_CLOSE!r}, stops the child when this run ends)"
        )
    return value


@attrs.frozen(init=False)
class _ChildCommand(Command, Generic[T_co]):
    """What `Start` and `Call` share: the child's workflow, arguments, id and queue.
    Generic in the child's result, so that `Call(child, ...)` is typed by it.

    `workflow_id`, `queue`, `timeout` and `deadline` are options of the start;
    every other keyword goes to the child. `timeout` (a timedelta or seconds)
    and `deadline` (an aware datetime) bound the *child run*, as they do on
    `engine.start`: the child's deadline is the earliest of them and of this
    run's own deadline (it inherits what remains of it). It is not how long
    this run waits: for that, `Wait(child_id, timeout=...)`.

    `parent_close` says what becomes of the child if it still runs when this run
    ends in any way: `"terminate"` (the default), `"cancel"` (a cancel it may
    handle) or `"abandon"` (it runs on); see `PARENT_CLOSE_POLICIES`.
    """

    workflow: Any = attrs.field(eq=False)
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    workflow_id: str | None
    queue: str | None
    timeout: float | None = None
    deadline: datetime | None = None
    parent_close: str = DEFAULT_PARENT_CLOSE

    def __init__(
        self,
        wf: Workflow[..., T_co] | BoundWorkflow[T_co],
        /,
        *args: Any,
        workflow_id: str | None = None,
        queue: str | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        parent_close: str = DEFAULT_PARENT_CLOSE,
        **kwargs: Any,
    ) -> None:
        if isinstance(wf, BoundWorkflow):
            wf, args, kwargs = unbind(wf, args, kwargs)
        name = _workflow_name(wf)
        what = f"{type(self).__name__}({name!r}, ...)"
        seconds, deadline = run_deadline(timeout, deadline, what=what)
        policy = checked_parent_close(parent_close, what)
        self.__attrs_init__(wf, args, dict(kwargs), workflow_id, queue, seconds, deadline, policy)

    @property
    def name(self) -> str:
        return _workflow_name(self.workflow)

    def describe_args(self) -> Any:
        described: list[Any] = [list(self.args), dict(self.kwargs), self.workflow_id]
        # Only when given: the digests of logs recorded before these options stay the same.
        if self.timeout is not None or self.deadline is not None:
            described.append(
                {
                    "timeout": self.timeout,
                    "deadline": None if self.deadline is None else self.deadline.isoformat(),
                }
            )
        if self.parent_close != DEFAULT_PARENT_CLOSE:
            described.append({"parent_close": self.parent_close})
        return described


@attrs.frozen(init=False)
class Start(_ChildCommand[Any], Yields[str]):
    """Start a child workflow; yields its id. Replays start nothing new."""

    kind: ClassVar[str] = "start"
    facts: ClassVar[CommandFacts] = CommandFacts(instant=True)


@attrs.frozen(init=False)
class Call(_ChildCommand[T_co], Yields[T_co]):
    """Start a child workflow and wait for its result, in one position.

    `yield from Call(child, ...)` is typed by the child's return annotation
    (`Generator[..., ..., R]` gives `R`). `Call(child.bind(...), workflow_id=...)`
    has mypy check the child's arguments too, as `engine.start` does.
    """

    kind: ClassVar[str] = "call"
    facts: ClassVar[CommandFacts] = CommandFacts(wakes_on="finished", waits=True)


@attrs.frozen(init=False)
class Wait(Yields[Any]):
    """Wait for another workflow to finish; yields its result or raises its failure."""

    kind: ClassVar[str] = "wait"
    facts: ClassVar[CommandFacts] = CommandFacts(
        wakes_on="finished", timeout_field="timeout", waits=True
    )
    workflow_id: str
    timeout: float | None

    def __init__(self, workflow_id: str, timeout: timedelta | float | None = None) -> None:
        self.__attrs_init__(workflow_id, as_seconds(timeout, "Wait timeout"))

    @property
    def name(self) -> str:
        return "wait"

    def describe_args(self) -> Any:
        return [self.workflow_id, self.timeout]


@attrs.frozen(init=False)
class ContinueAsNew(Command):
    """End this log and start the workflow again under the same id with these arguments.

    `yield ContinueAsNew(*args, **kwargs)` does not return: the run's current
    generation is archived (a row of its own, status CONTINUED, holding its
    log), and the same workflow id starts over from an empty log, called with
    `args` and `kwargs` as a start would call it. Messages not yet consumed
    stay in the id's inbox, `send` reaches the new generation, and
    `handle.result()` answers with the last generation's result. It takes no
    position; positions recorded after it are a `NonDeterminismError`, as for
    a return.
    """

    kind: ClassVar[str] = "continue_as_new"
    facts: ClassVar[CommandFacts] = CommandFacts(
        terminal=True,
        in_composite=False,
        why_not_child="it ends the run's log, which a composite's other children would still "
        "be writing to; yield it on its own, after the composite",
    )
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__attrs_init__(args, dict(kwargs))

    def describe_args(self) -> Any:
        return [list(self.args), dict(self.kwargs)]
