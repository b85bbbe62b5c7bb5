"""`replay()`: run a recorded log against today's code, running nothing.

This drives the pure `Interpreter` directly: no engine, no store, no thread.
Every recorded position is answered from the log; the first position the log
does not hold ends the replay (that is where the recorded run was). Drift is
`NonDeterminismError`, as the engine would raise it, plus two checks only a
finished log allows: code that wants a command after a run that already
finished, and a result that differs from the recorded one (`ResultMismatch`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from replaykit import serde
from replaykit.commands import Patch
from replaykit.errors import NonDeterminismError, StepFailed
from replaykit.interpreter import Completed, ContinuedAsNew, Effect, Interpreter, call_site
from replaykit.log import Failure, Log, Record, Status, Value
from replaykit.registry import Workflow

__all__ = ["ReplayResult", "ResultMismatch", "load_log", "log_of_workflow", "replay"]

_FIX_ADVICE = (
    "To change a workflow that has runs in flight: guard the new code with "
    "`if (yield Patch('change-name')):`, or ship it under a new workflow/app version "
    "so old runs finish on old code, or fork the run from an earlier position."
)


class ResultMismatch(NonDeterminismError):
    """The code replayed every recorded command but ended differently than recorded.

    The commands lined up, so the engine would not notice; but code between
    commands computes another result (or failure) from the same recorded
    outcomes than the code that recorded the run did.
    """


@attrs.frozen
class ReplayResult:
    """What a replay found. Drift raises instead; this describes a clean replay."""

    workflow_name: str
    workflow_id: str
    #: Recorded positions the code replayed (a pending record counts once reached).
    positions: int
    #: Every recorded position was replayed.
    reached_end: bool
    #: The code returned or raised within the log.
    finished: bool
    #: SUCCESS or ERROR when finished, CONTINUED when it continued as new (`result` is
    #: then the next generation's `(args, kwargs)`), else PENDING (under way there).
    status: Status
    result: Any = None
    error: BaseException | None = None
    #: (position, kind, name) of every command the code yielded.
    commands: tuple[tuple[int, str, str], ...] = ()
    #: The command the code waits at when the log ends before the code does.
    next_command: str | None = None


def load_log(source: Log | str | os.PathLike[str]) -> Log:
    """A `Log`, from a `Log`, its JSON text, or the path of a JSON file."""
    if isinstance(source, Log):
        return source
    if isinstance(source, os.PathLike):
        return Log.from_json(Path(source).read_text(encoding="utf-8"))
    if isinstance(source, str):
        if source.lstrip().startswith("{"):
            return Log.from_json(source)
        return Log.from_json(Path(source).read_text(encoding="utf-8"))
    raise TypeError(
        f"replay() takes a Log, the JSON text of one (log.to_json()), or a path to such a "
        f"file; got {type(source).__qualname__}"
    )


def log_of_workflow(
    wf: Workflow[..., Any], source: Log | str | os.PathLike[str], caller: str
) -> Log:
    """`source` loaded, once `wf` is a workflow and the log is one of its runs'."""
    if not isinstance(wf, Workflow):
        raise TypeError(f"{caller}() expected a function decorated with @workflow, got {wf!r}")
    log = load_log(source)
    if log.workflow_name and log.workflow_name != wf.workflow_name:
        raise ValueError(
            f"this log was recorded by workflow {log.workflow_name!r}, not {wf.workflow_name!r}"
        )
    return log


def _error_key(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, StepFailed):
        return exc.type_name, exc.message
    info = serde.encode_error(exc, with_traceback=False)
    return info.type_name, info.message


def _describe_outcome(ok: bool, value: Any) -> str:
    if ok:
        return f"returned {value!r:.200}"
    return f"raised {value}"


def _check_result(
    log: Log, interp: Interpreter, ok: bool, value: Any, workflow_name: str, workflow_id: str
) -> None:
    status = log.status
    recorded = log.result
    problem = ""
    if ok and status == Status.ERROR.value:
        recorded_error = recorded.error.type_name if isinstance(recorded, Failure) else "?"
        problem = f"the code returned {value!r:.200} but the recorded run failed ({recorded_error})"
    elif not ok and status == Status.SUCCESS.value:
        problem = f"the code raised {type(value).__name__}: {value} but the recorded run succeeded"
    elif ok and isinstance(recorded, Value):
        try:
            data = serde.encode(value)
        except Exception as exc:
            problem = f"the code returned a value that cannot be encoded ({exc})"
        else:
            if serde.canonical_json(data) != serde.canonical_json(recorded.data):
                problem = (
                    f"the code returned {serde.canonical_json(data):.300} but the recorded "
                    f"run returned {serde.canonical_json(recorded.data):.300}"
                )
    elif not ok and isinstance(recorded, Failure):
        got = _error_key(value)
        want = (recorded.error.type_name, recorded.error.message)
        if got != want:
            problem = (
                f"the code raised {got[0]}: {got[1]} but the recorded run raised "
                f"{want[0]}: {want[1]}"
            )
    if not problem:
        return
    raise ResultMismatch(
        f"workflow {workflow_name!r} (id {workflow_id!r}): every recorded command replayed, "
        f"but {problem}. Code between commands changed what it computes from the same "
        "recorded outcomes; pass check_result=False to replay() if that is intended.",
        workflow_name=workflow_name,
        workflow_id=workflow_id,
        position=interp.position,
        yielded=_describe_outcome(ok, value),
        recorded=f"run {status}",
    )


def _beyond_finished_log(
    log: Log, effect: Effect, gen: Any, workflow_name: str, workflow_id: str
) -> NonDeterminismError:
    command = effect.command
    site = effect.call_site or call_site(gen)
    return NonDeterminismError(
        f"workflow {workflow_name!r} (id {workflow_id!r}) at position {effect.position}: the "
        f"code yielded {command.kind} {command.name!r} at {site or '<unknown>'}, but the "
        f"recorded run finished ({log.status}) after {len(log)} position(s). The code takes a "
        "path it did not take when this run was recorded. " + _FIX_ADVICE,
        workflow_name=workflow_name,
        workflow_id=workflow_id,
        position=effect.position,
        yielded=f"{command.kind} {command.name!r}",
        yielded_at=site,
        recorded=f"<end of log: run {log.status}>",
    )


def replay(
    wf: Workflow[..., Any],
    log: Log | str | os.PathLike[str],
    /,
    *args: Any,
    strict: bool = True,
    check_result: bool = True,
    **kwargs: Any,
) -> ReplayResult:
    """Replay `log` against `wf` as it is now; run no step, touch no store.

    Arguments default to the ones recorded with the run. Raises
    `NonDeterminismError` when the code yields something other than the log
    holds at a position, returns while positions remain, or (for a finished
    run) wants a command past the end; and `ResultMismatch` (a subclass) when
    a finished run replays to another result. `strict=True` also compares
    each command's arguments.
    """
    log = log_of_workflow(wf, log, "replay")
    if not args and not kwargs:
        decoded_args, kwargs = wf.decode_inputs(log.args)
        args = tuple(decoded_args)
    workflow_id = log.workflow_id or "replay"
    finished_log = log.status in (
        Status.SUCCESS.value,
        Status.ERROR.value,
        Status.CONTINUED.value,
    )
    trace: list[tuple[int, str, str]] = []
    gen = wf.fn(*args, **kwargs)
    interp = Interpreter(
        gen,
        log.records,
        workflow_name=wf.workflow_name,
        workflow_id=workflow_id,
        strict=strict,
        trace=trace,
    )
    next_command: str | None = None
    try:
        decision = interp.start()
        while isinstance(decision, Effect):
            if decision.position < len(log):
                # A pending record: the run was waiting on this command.
                next_command = f"{decision.command.describe()} at position {decision.position}"
                break
            if not finished_log:
                next_command = f"{decision.command.describe()} at position {decision.position}"
                break
            if isinstance(decision.command, Patch):
                # A run that finished before the patch shipped never saw it: the old branch.
                marker = Record(decision.position, "patch", decision.command.name, Value(False))
                decision = interp.resume(marker)
                continue
            raise _beyond_finished_log(log, decision, gen, wf.workflow_name, workflow_id)
    finally:
        interp.close()

    if isinstance(decision, Effect):
        # A pending record at the end counts as reached; a position past the end does not.
        replayed = min(decision.position + 1, len(log))
        return ReplayResult(
            workflow_name=wf.workflow_name,
            workflow_id=workflow_id,
            positions=replayed,
            reached_end=replayed >= len(log),
            finished=False,
            status=Status.PENDING,
            commands=tuple(trace),
            next_command=next_command,
        )
    continued = isinstance(decision, ContinuedAsNew)
    if check_result and finished_log and continued != (log.status == Status.CONTINUED.value):
        how = "continued as new" if continued else "ended"
        raise ResultMismatch(
            f"workflow {wf.workflow_name!r} (id {workflow_id!r}): the code {how} after the "
            f"last recorded position, but the recorded run is {log.status}. " + _FIX_ADVICE,
            workflow_name=wf.workflow_name,
            workflow_id=workflow_id,
            position=len(log),
        )
    result: Any
    error: BaseException | None = None
    if isinstance(decision, ContinuedAsNew):
        # This generation ended by starting the next; its arguments are the next's.
        status, result = Status.CONTINUED, (decision.args, decision.kwargs)
    else:
        ok = isinstance(decision, Completed)
        value = decision.value if isinstance(decision, Completed) else decision.error
        if check_result and finished_log:
            _check_result(log, interp, ok, value, wf.workflow_name, workflow_id)
        status = Status.SUCCESS if ok else Status.ERROR
        result, error = (value, None) if ok else (None, value)
    return ReplayResult(
        workflow_name=wf.workflow_name,
        workflow_id=workflow_id,
        positions=len(log),
        reached_end=True,
        finished=True,
        status=status,
        result=result,
        error=error,
        commands=tuple(trace),
    )
