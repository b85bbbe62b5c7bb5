"""`inspect_run()`: replay a recorded run to one position and look at the workflow there.

For "why did this run take that branch?": the run's log is replayed through the
pure interpreter, as `replay()` does (no engine, no store, no step runs), up to
the `yield` that took the position asked for. The generator is paused there,
so its frames hold the local variables the code had when it yielded that
command, computed from the outcomes recorded before it.

    log = engine.export_log("order-7")          # or a file `replaykit workflows export` wrote
    seen = inspect_run(checkout, log, 2)
    seen.command, seen.record.outcome, seen.locals
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from replaykit._text import shown_path
from replaykit.commands import Command, DeprecatePatch, Patch
from replaykit.errors import NonDeterminismError
from replaykit.interpreter import Effect, Interpreter, decode_outcome
from replaykit.log import Log, Record
from replaykit.registry import Workflow
from replaykit.testing.replay import log_of_workflow

__all__ = ["FrameLocals", "Inspection", "inspect_run"]


@attrs.frozen
class FrameLocals:
    """One generator frame paused at the position: its function, line and locals."""

    function: str
    call_site: str
    locals: Mapping[str, Any]


@attrs.frozen
class Inspection:
    """What the workflow yielded at `position`, what the log holds there, and its locals."""

    workflow_name: str
    workflow_id: str
    position: int
    #: The recorded positions of the log.
    positions: int
    #: The command the code yields at the position (today's code).
    command: Command
    #: file:line of that `yield`.
    call_site: str
    #: The log's record at the position (`record.outcome` is None while under way).
    record: Record
    #: The workflow's own frame first, then each generator it delegates to with
    #: `yield from`, down to the one whose `yield` took the position.
    frames: tuple[FrameLocals, ...]
    #: The recorded outcome decoded as the code would receive it: (True, value),
    #: (False, exception), or None while the command is under way.
    outcome: tuple[bool, Any] | None

    @property
    def locals(self) -> Mapping[str, Any]:
        """The locals of the frame whose `yield` took the position."""
        return self.frames[-1].locals


def _frames(gen: Any) -> tuple[FrameLocals, ...]:
    frames: list[FrameLocals] = []
    current = gen
    while current is not None and getattr(current, "gi_frame", None) is not None:
        frame = current.gi_frame
        frames.append(
            FrameLocals(
                function=getattr(current, "__qualname__", frame.f_code.co_name),
                call_site=f"{shown_path(frame.f_code.co_filename)}:{frame.f_lineno}",
                # A copy: closing the generator afterwards runs its `finally` blocks.
                locals=dict(frame.f_locals),
            )
        )
        current = getattr(current, "gi_yieldfrom", None)
    return tuple(frames)


def _out_of_range(log: Log, position: int) -> ValueError:
    held = f"positions 0 to {len(log) - 1}" if len(log) else "no position yet"
    return ValueError(
        f"position {position} is out of range: the log of workflow id "
        f"{log.workflow_id or '?'!r} holds {held}"
    )


def inspect_run(
    wf: Workflow[..., Any],
    log: Log | str | os.PathLike[str],
    position: int,
    /,
    *args: Any,
    strict: bool = False,
    **kwargs: Any,
) -> Inspection:
    """Replay `log` to `position` and return what the workflow had there.

    `log` is a `Log`, its JSON text or the path of such a file. Arguments default
    to the ones stored with the run. Raises `ValueError` for a position the log
    does not hold, and `NonDeterminismError` when today's code does not replay
    the log up to it (with `strict`, arguments compared too). The workflow's code
    between commands runs, as in `replay()`; no step runs.
    """
    log = log_of_workflow(wf, log, "inspect_run")
    if not 0 <= position < len(log):
        raise _out_of_range(log, position)
    if not args and not kwargs:
        decoded, kwargs = wf.decode_inputs(log.args)
        args = tuple(decoded)
    record = log.records[position]
    if record.kind == "patch":
        # A marker is consumed inline wherever the log holds one; with the log cut
        # just before it, the code stops at the Patch itself instead.
        records = list(log.records[:position])
    else:
        # The record as if still under way: the interpreter replays everything
        # before it, checks that the code yields the same command there, and waits.
        records = [*log.records[:position], attrs.evolve(record, outcome=None)]
    workflow_id = log.workflow_id or "inspect"
    gen = wf.fn(*args, **kwargs)
    interp = Interpreter(
        gen, records, workflow_name=wf.workflow_name, workflow_id=workflow_id, strict=strict
    )
    try:
        decision = interp.start()
        if not isinstance(decision, Effect) or decision.position != position:
            raise _did_not_reach(wf, workflow_id, record, decision)
        command = decision.command
        if record.kind == "patch" and not (
            isinstance(command, (Patch, DeprecatePatch)) and command.name == record.name
        ):
            # Elsewhere the interpreter compared the command with the record itself.
            raise _did_not_reach(wf, workflow_id, record, decision)
        frames = _frames(gen)
    finally:
        interp.close()
    outcome = None if record.outcome is None else decode_outcome(command, record.outcome)
    return Inspection(
        workflow_name=wf.workflow_name,
        workflow_id=workflow_id,
        position=position,
        positions=len(log),
        command=command,
        call_site=decision.call_site,
        record=record,
        frames=frames,
        outcome=outcome,
    )


def _did_not_reach(
    wf: Workflow[..., Any], workflow_id: str, record: Record, decision: Any
) -> NonDeterminismError:
    if isinstance(decision, Effect):
        got = f"yields {decision.command.describe()} at {decision.call_site or '<unknown>'}"
    else:
        got = "ends"
    return NonDeterminismError(
        f"workflow {wf.workflow_name!r} (id {workflow_id!r}) at position {record.position}: "
        f"the code {got} there, but the log recorded {record.describe()} at "
        f"{record.call_site or '<unknown>'}. Today's code does not replay this run up to "
        "that position; inspect it with the code that recorded it.",
        workflow_name=wf.workflow_name,
        workflow_id=workflow_id,
        position=record.position,
        yielded=decision.command.describe() if isinstance(decision, Effect) else "<end>",
        recorded=record.describe(),
        recorded_at=record.call_site,
    )
