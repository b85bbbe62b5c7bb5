"""`check_determinism()`: resume a workflow from every point it could stop at.

One uninterrupted run is the reference. Then, for every commit the store was
asked to make in it (each record, each timed command's start, the final
status), two more runs:

- **from the prefix**: a fresh store holding exactly what the reference run
  had written before that commit (the first k records, inbox, events, child
  runs) is resumed by a new engine: a process that stopped cleanly there;
- **through a crash**: a new run whose store refuses that commit, after the
  step body in flight has run; a new engine recovers it from the same store.

Each must end like the reference: the same commands (kind, name) at every
position of every run, the same status and result, the same values on every
stream (`WriteStream`), and no step body run for a position that was already
recorded.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit import serde
from replaykit.log import (
    CLOSE_STREAM_KIND,
    STREAM_KINDS,
    WRITE_STREAM_KIND,
    Failure,
    Log,
    Outcome,
    Status,
    Value,
)
from replaykit.registry import Workflow
from replaykit.runtime.clock import VirtualClock
from replaykit.serde import PayloadCodec
from replaykit.testing._cancels import Cancel
from replaykit.testing._completions import Completion
from replaykit.testing._real_steps import RealSteps
from replaykit.testing._session import Commit, Exec, Message, Session, Write
from replaykit.testing._updates import Update
from replaykit.testing.harness import RunResult, result_of, start_session

__all__ = ["DeterminismReport", "check_determinism", "format_log"]


@attrs.frozen
class DeterminismReport:
    """What `check_determinism` checked; it raises `AssertionError` on any difference."""

    reference: RunResult[Any]
    commits: tuple[Commit, ...]
    prefix_runs: int
    crash_runs: int


def _outcome_text(outcome: Outcome | None) -> str:
    if outcome is None:
        return "(under way)"
    if isinstance(outcome, Value):
        return f"-> {serde.canonical_json(outcome.data):.120}"
    return f"raised {outcome.error.type_name}: {outcome.error.message:.120}"


def format_log(log: Log, *, mark: int | None = None, indent: str = "  ") -> str:
    """One line per position; `mark` points at a position with `>>`."""
    lines = []
    for record in log:
        pointer = ">>" if record.position == mark else "  "
        lines.append(
            f"{indent}{pointer}{record.position:>3} {record.kind} {record.name!r} "
            f"{_outcome_text(record.outcome)}"
        )
    if mark is not None and mark >= len(log):
        lines.append(f"{indent}>>{mark:>3} (nothing recorded)")
    lines.append(f"{indent}     status {log.status or '?'} {_outcome_text(log.result)}")
    return "\n".join(lines)


def _result_key(log: Log) -> tuple[str, str]:
    outcome = log.result
    if isinstance(outcome, Value):
        return log.status, serde.canonical_json(outcome.data)
    if isinstance(outcome, Failure):
        return log.status, f"{outcome.error.type_name}: {outcome.error.message}"
    return log.status, ""


def _stream(log: Log) -> list[tuple[str, str]]:
    return [(r.kind, r.name) for r in log]


def _stream_values(log: Log) -> dict[str, tuple[list[str], bool]]:
    """Each stream of the log: its values (as canonical JSON) and whether it was closed."""
    found: dict[str, tuple[list[str], bool]] = {}
    for record in log:
        if record.kind not in STREAM_KINDS or not isinstance(record.outcome, Value):
            continue
        values, closed = found.get(record.name, ([], False))
        if record.kind == WRITE_STREAM_KIND and not closed:
            values.append(serde.canonical_json(record.outcome.data))
        found[record.name] = (values, closed or record.kind == CLOSE_STREAM_KIND)
    return found


def _describe_at(stream: Sequence[tuple[str, str]], index: int) -> str:
    if index >= len(stream):
        return "nothing (the run ended)"
    kind, name = stream[index]
    return f"{kind} {name!r}"


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int | None:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    if len(a) != len(b):
        return min(len(a), len(b))
    return None


@attrs.frozen
class _Point:
    """A commit of the reference run and what its journal says around it."""

    write: Write
    now: datetime  # virtual time of the last write before it
    after: Mapping[str, int]  # step calls after the commit, by name
    in_flight: Mapping[str, int]  # step calls that may not have been committed yet


def _points(reference: Session) -> list[_Point]:
    journal = reference.journal
    writes = [e for e in journal if isinstance(e, Write) and not e.is_heartbeat]
    execs = [e for e in journal if isinstance(e, Exec)]
    points = []
    for write in writes:
        if write.commit is None:
            continue
        j = write.index
        last_before: dict[str, int] = {}
        for w in writes:
            if w.index < j:
                last_before[w.workflow_id] = w.index
        # Calls in flight at j belong to runs still writing at or after j; each
        # such call came after that run's last write before j.
        active = {w.workflow_id for w in writes if w.index >= j}
        low = min((last_before[v] for v in active if v in last_before), default=-1)
        previous = [w for w in writes if w.index < j and w.on_timeline]
        points.append(
            _Point(
                write=write,
                now=previous[-1].at if previous else reference.start,
                after=collections.Counter(e.name for e in execs if e.index > j),
                in_flight=collections.Counter(e.name for e in execs if low < e.index < j),
            )
        )
    return points


def _check_calls(
    point: _Point, ran: Mapping[str, int], lost: Mapping[str, int], how: str
) -> list[str]:
    problems = []
    for name in sorted(set(point.after) | set(ran)):
        expected = point.after.get(name, 0)
        allowance = point.in_flight.get(name, 0) + lost.get(name, 0)
        got = ran.get(name, 0)
        if got > expected + allowance:
            problems.append(
                f"step {name!r} ran {got} time(s) {how}; the uninterrupted run ran it "
                f"{expected} time(s) after that point and at most {allowance} more call(s) "
                "were in flight: a step that was already recorded ran again"
            )
        elif got < expected:
            problems.append(
                f"step {name!r} ran {got} time(s) {how}, but the uninterrupted run ran it "
                f"{expected} time(s) after that point: a step was skipped"
            )
    return problems


def _compare(reference: Session, variant: Session) -> tuple[list[str], str, int | None]:
    """(problems, the workflow id shown, the first differing position there)."""
    problems: list[str] = []
    shown_id, shown_mark = reference.workflow_id, None
    for row in reference.rows():
        ref_log = reference.log_of(row.workflow_id)
        got = variant.store.get_workflow(row.workflow_id)
        if got is None:
            problems.append(f"workflow id {row.workflow_id!r} was never started")
            continue
        var_log = variant.log_of(row.workflow_id)
        expected, actual = _stream(ref_log), _stream(var_log)
        index = _first_difference(expected, actual)
        who = "" if row.workflow_id == reference.workflow_id else f" of {row.workflow_id!r}"
        if index is not None:
            want = _describe_at(expected, index)
            have = _describe_at(actual, index)
            problems.append(f"position {index}{who}: expected {want}, got {have}")
            if shown_mark is None:
                shown_id, shown_mark = row.workflow_id, index
        want_streams, have_streams = _stream_values(ref_log), _stream_values(var_log)
        for key in sorted(set(want_streams) | set(have_streams)):
            # Positions already make each value once; this catches values that differ.
            want_values, want_closed = want_streams.get(key, ([], False))
            have_values, have_closed = have_streams.get(key, ([], False))
            if want_values != have_values or want_closed != have_closed:
                problems.append(
                    f"stream {key!r}{who}: expected {len(want_values)} value(s) "
                    f"[{', '.join(want_values)[:200]}]{' then closed' if want_closed else ''}, "
                    f"got {len(have_values)} [{', '.join(have_values)[:200]}]"
                    f"{' then closed' if have_closed else ''}"
                )
        if var_log.status == Status.PARKED.value:
            problems.append(
                f"workflow id {row.workflow_id!r} was parked on replay: "
                f"{got.error or 'NonDeterminismError'}"
            )
        elif _result_key(ref_log) != _result_key(var_log):
            want_status, want = _result_key(ref_log)
            have_status, have = _result_key(var_log)
            problems.append(
                f"result{who}: expected {want_status} {want:.200}, got {have_status} {have:.200}"
            )
    return problems, shown_id, shown_mark


class _CrashOnce:
    """Crash at the first attempt of one commit; the recovering process's retry succeeds."""

    def __init__(self, target: Commit) -> None:
        self.target = target
        self.fired = False

    def __call__(self, seen: Commit, _nth: int) -> bool:
        if self.fired or seen != self.target:
            return False
        self.fired = True
        return True


def _fail(
    wf: Workflow[..., Any],
    what: str,
    problems: list[str],
    reference: Session,
    variant: Session,
    shown_id: str,
    mark: int | None,
) -> AssertionError:
    lines = [
        f"check_determinism({wf.workflow_name}): {what}, the run did not end like the "
        "uninterrupted run:",
        *(f"  - {p}" for p in problems),
        f"uninterrupted run (workflow id {shown_id!r}):",
        format_log(reference.log_of(shown_id), mark=mark, indent="  "),
    ]
    if variant.store.get_workflow(shown_id) is not None:
        lines += ["this run:", format_log(variant.log_of(shown_id), mark=mark, indent="  ")]
    return AssertionError("\n".join(lines))


def check_determinism(
    wf: Workflow[..., Any],
    /,
    *args: Any,
    steps: Mapping[str, Any] | None = None,
    messages: Iterable[Message] = (),
    updates: Iterable[Update] = (),
    completions: Iterable[Completion] = (),
    cancels: Iterable[Cancel] = (),
    clock: VirtualClock | datetime | None = None,
    strict: bool = True,
    workflow_id: str | None = None,
    timeout: float = 30.0,
    seed: int = 0,
    prefixes: bool = True,
    crashes: bool = True,
    sandbox: bool = True,
    codec: PayloadCodec | None = None,
    workflow_timeout: timedelta | float | None = None,
    deadline: datetime | None = None,
    max_generations: int = 100,
    real_steps: RealSteps = False,
    **kwargs: Any,
) -> DeterminismReport:
    """Run once, then resume from every commit point; assert every resumption agrees.

    Takes `run()`'s arguments. Raises `AssertionError` naming the point, what
    differed, and both logs. Fakes must answer the same arguments the same way
    (stateful fakes with a `fresh()` method, like `sequence`, start over in
    every simulated process). The sandbox is on in every run, as in `run()`
    (`sandbox=False` turns it off). A run that continues as new is checked
    through all its generations: the continue is a commit point like the
    others (resumed from just before it, and crashed at it), and every
    archived generation's log must come out the same; `max_generations`
    (default 100) bounds how many it follows. A step not faked runs its real
    function only as `run(real_steps=...)` allows, in every run it makes (and a
    determinism check makes many); otherwise it raises `UnfakedSteps` before
    the first resumption. Returns a `DeterminismReport`.
    """
    if not isinstance(wf, Workflow):
        raise TypeError(
            f"check_determinism() expected a function decorated with @workflow, got {wf!r}"
        )
    messages = list(messages)
    updates = list(updates)
    completions = list(completions)
    cancels = list(cancels)
    settings: dict[str, Any] = {
        "steps": steps,
        "messages": messages,
        "updates": updates,
        "completions": completions,
        "cancels": cancels,
        "clock": clock,
        "strict": strict,
        "workflow_id": workflow_id,
        "timeout": timeout,
        "seed": seed,
        "sandbox": sandbox,
        "codec": codec,
        "workflow_timeout": workflow_timeout,
        "deadline": deadline,
        "max_generations": max_generations,
        "real_steps": real_steps,
        "caller": "check_determinism",
    }
    reference = start_session(wf, args, kwargs, **settings)
    reference.drive()
    reference_result = result_of(reference, wf, None)
    if reference_result.status is Status.PARKED:
        raise AssertionError(
            f"check_determinism({wf.workflow_name}): the uninterrupted run was parked, so its "
            f"own replays already disagree with it: {reference_result.error}\n"
            + format_log(reference_result.log)
        )
    points = _points(reference)
    prefix_runs = crash_runs = 0
    for point in points:
        commit = point.write.commit
        assert commit is not None
        if prefixes:
            # Set up as the reference was (its id, its start), its store left empty.
            variant = start_session(wf, args, kwargs, empty=True, **settings)
            variant.seed_from(
                [w for w in reference.writes() if w.index < point.write.index], point.now
            )
            variant.drive()
            prefix_runs += 1
            ran = collections.Counter(
                e.name for e in variant.journal if isinstance(e, Exec) and e.engine >= 1
            )
            problems, shown, mark = _compare(reference, variant)
            problems += _check_calls(point, ran, {}, "when resumed from there")
            if problems:
                raise _fail(
                    wf,
                    f"resumed from the store as it was just before committing {commit.describe()}",
                    problems,
                    reference,
                    variant,
                    shown,
                    mark,
                )
        if crashes:
            variant = start_session(wf, args, kwargs, crash_at=_CrashOnce(commit), **settings)
            variant.drive()
            crash_runs += 1
            problems, shown, mark = _compare(reference, variant)
            if not variant.crashes and not commit.completes:
                # The start of a command that waits (a step's attempt, a Wait, a Recv) is
                # written only when the answer is not there yet; runs going on beside
                # this one (a child the parent cancelled ending first, say) may have it
                # there in this schedule. No crash point there: nothing to compare but
                # how the run ended, compared above.
                pass
            elif not variant.crashes:
                problems.append(
                    f"the run never reached the commit to crash at: {commit.describe()}"
                )
            else:
                crash_index = variant.crashes[0][0]
                execs = [e for e in variant.journal if isinstance(e, Exec)]
                ran = collections.Counter(e.name for e in execs if e.engine >= 2)
                lost = collections.Counter(
                    e.name for e in execs if e.engine == 1 and e.index >= crash_index
                )
                problems += _check_calls(point, ran, lost, "after the crash")
            if problems:
                raise _fail(
                    wf,
                    f"after a simulated crash before committing {commit.describe()} "
                    "(the work in flight had run)",
                    problems,
                    reference,
                    variant,
                    shown,
                    mark,
                )
    return DeterminismReport(
        reference=reference_result,
        commits=tuple(p.write.commit for p in points if p.write.commit is not None),
        prefix_runs=prefix_runs,
        crash_runs=crash_runs,
    )
