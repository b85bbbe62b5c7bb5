"""`replaykit workflows show`: a run and its log as a timeline; why it failed or waits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from replaykit import _waiting, serde
from replaykit._text import composite_children, inputs_text, outcome_summary, short_json, when_text
from replaykit.cli.echo import echo_json
from replaykit.cli.fit import Fit
from replaykit.cli.options import json_option, url_option, wide_option
from replaykit.cli.printer import Printer
from replaykit.cli.rows import STATUS_STYLE, fork_text, record_duration, row_json, run_error
from replaykit.cli.store import get_row, store_at
from replaykit.log import (
    AllOutcome,
    ErrorInfo,
    Failure,
    RaceOutcome,
    Record,
    Status,
    Value,
    outcome_to_json,
)
from replaykit.stores.base import StepHeartbeat, Store, WorkflowFilter, WorkflowRow

__all__ = ["show_command"]


#: How many of a run's earlier generations `workflows show` lists (the newest ones).
_SHOWN_GENERATIONS = 20


def _failures(record: Record) -> list[tuple[str, ErrorInfo]]:
    """(what failed, its error) for a record's failure and its composite children's."""
    where = f"{record.kind} {record.name!r} at position {record.position}"
    if isinstance(record.outcome, Failure):
        return [(where, record.outcome.error)]
    if record.kind in ("race", "all") and isinstance(record.outcome, Value):
        return _composite_failures(record.kind, record.name, record.outcome.data, where)
    return []


def _composite_failures(kind: str, name: str, data: Any, where: str) -> list[tuple[str, ErrorInfo]]:
    children = composite_children(name)
    try:
        if kind == "race":
            race = RaceOutcome.from_data(data)
            held = [(race.index, race.outcome)]
        else:
            held = list(enumerate(AllOutcome.from_data(data).outcomes))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return []
    found: list[tuple[str, ErrorInfo]] = []
    for index, outcome in held:
        child_kind, child_name = children[index] if index < len(children) else ("?", "")
        label = f"{where}, child [{index}] {child_kind}"
        if isinstance(outcome, Failure):
            found.append((f"{label} {child_name!r}", outcome.error))
        elif child_kind in ("race", "all"):
            found.extend(_composite_failures(child_kind, child_name, outcome.data, label))
    return found


def _started_cells(records: Sequence[Record], row: WorkflowRow, compact: bool) -> list[str]:
    """The STARTED column: on a terminal, only the time when the header's date says the day."""
    cells = [when_text(r.started_at) for r in records]
    day = when_text(row.created_at)[:10]
    if compact and all(cell == "-" or cell.startswith(day) for cell in cells):
        return [cell[11:] if cell != "-" else cell for cell in cells]
    return cells


@click.command("show")
@click.argument("workflow_id")
@url_option
@click.option(
    "--traceback",
    "show_traceback",
    is_flag=True,
    help="Print the tracebacks recorded with the run's failure and its steps' failures.",
)
@wide_option
@json_option
def show_command(
    workflow_id: str, url: str, show_traceback: bool, wide: bool, as_json: bool
) -> None:
    """A run and its log as a timeline; a failed or parked run shows why."""
    with store_at(url) as store:
        row = get_row(store, workflow_id)
        records = store.load_log(workflow_id)
        children = store.list_workflows(WorkflowFilter(parent_id=workflow_id))
        forks = store.list_workflows(WorkflowFilter(forked_from=workflow_id))
        generations = _generations_of(store, workflow_id)
        waiting = _waiting.why_waiting(store, row)
        beats = store.get_step_heartbeats(workflow_id)
    if as_json:
        echo_json(
            {
                "workflow": {**row_json(row, full=True), "waiting": waiting},
                "steps": [record.to_json() for record in records],
                "children": [row_json(child) for child in children],
                "forks": [row_json(fork) for fork in forks],
                "generations": [
                    {**row_json(generation), "steps": steps} for generation, steps in generations
                ],
                "heartbeats": [_beat_json(beat, records) for beat in beats],
            }
        )
        return
    out = Printer(wide=wide)
    width = out.value_width
    # On a terminal a composite's children share one cut cell: short values
    # let it show more of them.
    child_width = 24 if out.fits else None
    pairs: list[tuple[str, str, str | None]] = [
        ("workflow", row.workflow_id, "bold"),
        ("name", row.name, None),
        ("status", row.status.value, STATUS_STYLE[row.status]),
        ("version", row.app_version or "-", None),
        ("executor", row.executor_id, None),
        ("created", when_text(row.created_at) + " UTC", None),
        ("updated", when_text(row.updated_at) + " UTC", None),
    ]
    if row.parent_id:
        pairs.append(("parent", row.parent_id, None))
    if row.forked_from is not None:
        pairs.append(("origin", fork_text(row), None))
    if row.continued_as is not None:
        pairs.append(
            ("generation", f"{row.generation} of {row.continued_as} (continued as new)", "dim")
        )
    elif row.generation:
        pairs.append(("generation", str(row.generation), None))
    if row.queue:
        pairs.append(("queue", row.queue, None))
    if row.deadline is not None:
        set_by = f" (timeout {row.timeout:g}s)" if row.timeout is not None else ""
        pairs.append(("deadline", when_text(row.deadline) + " UTC" + set_by, None))
    elif row.timeout is not None:
        pairs.append(("timeout", f"{row.timeout:g}s, from when it is claimed", None))
    if row.recovery_attempts:
        pairs.append(("recoveries", str(row.recovery_attempts), None))
    pairs.append(("inputs", inputs_text(row.inputs, width), None))
    if row.wake_at is not None and not row.status.is_terminal:
        pairs.append(("wakes at", when_text(row.wake_at) + " UTC", None))
    if row.status is Status.SUCCESS and row.result is not None:
        value = outcome_to_json(row.result).get("value")
        pairs.append(("result", short_json(value, None if width is None else width + 40), None))
    if row.status is Status.ERROR:
        pairs.append(("error", run_error(row), "red"))
    elif row.status is Status.PARKED:
        pairs.append(("parked", row.error or "(no reason recorded)", "yellow"))
    elif row.status is Status.CANCELLED and row.error:
        pairs.append(("reason", row.error, "magenta"))
    elif waiting:
        pairs.append(("waiting", waiting, "yellow"))
    out.fields(pairs, full={"waiting"})
    out.line()
    failed = {r.position for r in records if _failures(r)}
    if records:
        out.table(
            ["POS", "KIND", "NAME", "STARTED", "DURATION", "OUTCOME", "CALL SITE"],
            [
                [
                    str(r.position),
                    r.kind,
                    r.name,
                    started,
                    record_duration(r),
                    outcome_summary(r, width, child_width=child_width),
                    r.call_site or "-",
                ]
                for r, started in zip(records, _started_cells(records, row, out.fits), strict=True)
            ],
            [
                {5: "red"} if r.position in failed else {5: "cyan"} if r.is_pending else {}
                for r in records
            ],
            fit={
                2: Fit(8, weight=2),
                5: Fit(12, weight=5),
                6: Fit(10, weight=2, keep_end=True),
            },
        )
    else:
        out.line("(the log is empty: the run has not recorded a command yet)")
    open_beats = [beat for beat in beats if not _completed(beat, records)]
    if open_beats:
        _print_heartbeats(out, row, open_beats, records, width)
    if children:
        out.line()
        out.line("children: " + ", ".join(f"{c.workflow_id} ({c.status.value})" for c in children))
    if forks:
        out.line()
        out.line(
            "forks: "
            + ", ".join(
                f"{f.workflow_id} (at position {f.fork_position}, {f.status.value})" for f in forks
            )
        )
    if generations:
        _print_generations(out, row, generations)
    if show_traceback:
        _print_tracebacks(out, row, records)


def _completed(beat: StepHeartbeat, records: Sequence[Record]) -> bool:
    """Whether the step that beat has its outcome recorded (it runs no more)."""
    return beat.position < len(records) and records[beat.position].outcome is not None


def _beat_json(beat: StepHeartbeat, records: Sequence[Record]) -> dict[str, Any]:
    return {
        "position": beat.position,
        "child_path": list(beat.child_path),
        "step": beat.name,
        "attempt": beat.attempt,
        "at": beat.at.isoformat(),
        "details": beat.details,
        "running": not _completed(beat, records),
    }


def _beat_state(row: WorkflowRow, beat: StepHeartbeat, records: Sequence[Record]) -> str:
    if row.status is not Status.PENDING:
        return "stopped"
    pending = records[beat.position] if beat.position < len(records) else None
    return "backing off" if pending is not None and pending.kind == "step" else "running"


def _print_heartbeats(
    out: Printer,
    row: WorkflowRow,
    beats: Sequence[StepHeartbeat],
    records: Sequence[Record],
    width: int | None,
) -> None:
    """The latest heartbeat of each step not recorded yet: running, waiting to retry, or
    stopped with its run."""
    out.line()
    out.line("heartbeats of the steps under way (step_context().heartbeat):")
    out.table(
        ["POS", "STEP", "ATTEMPT", "STATE", "BEAT AT", "DETAILS"],
        [
            [
                str(beat.position)
                + ("." + ".".join(str(i) for i in beat.child_path) if beat.child_path else ""),
                beat.name,
                str(beat.attempt),
                _beat_state(row, beat, records),
                when_text(beat.at) + " UTC",
                short_json(beat.details, width),
            ]
            for beat in beats
        ],
        [{5: "cyan"} for _ in beats],
        fit={1: Fit(8, weight=2), 5: Fit(12, weight=5)},
    )


def _traceback_text(error: ErrorInfo) -> str:
    if serde.is_encoded_error(error):
        return "(the traceback is encoded with the failure: pass replaykit --codec to read it)"
    return error.traceback or "(no traceback was recorded)"


def _generations_of(store: Store, workflow_id: str) -> list[tuple[WorkflowRow, int]]:
    """The run's newest earlier generations (continue-as-new), oldest first, with the
    number of positions each recorded; the listing is indexed by `continued_as`."""
    archived = store.list_workflows(WorkflowFilter(continued_as=workflow_id))
    archived.sort(key=lambda generation: generation.generation)
    shown = archived[-_SHOWN_GENERATIONS:]
    return [(generation, len(store.load_log(generation.workflow_id))) for generation in shown]


def _print_generations(
    out: Printer, row: WorkflowRow, generations: Sequence[tuple[WorkflowRow, int]]
) -> None:
    out.line()
    earlier = row.generation
    note = f" (the newest {len(generations)} of {earlier})" if len(generations) < earlier else ""
    out.line(f"earlier generations{note}: `replaykit workflows show ID` shows one's steps")
    out.table(
        ["GEN", "ID", "BEGAN", "ENDED", "STEPS"],
        [
            [
                str(generation.generation),
                generation.workflow_id,
                when_text(generation.created_at),
                when_text(generation.updated_at),
                str(steps),
            ]
            for generation, steps in generations
        ],
    )


def _print_tracebacks(out: Printer, row: WorkflowRow, records: Sequence[Record]) -> None:
    """The step bodies' own tracebacks, where the failures began, then the run's.

    A run's failure records where the workflow body re-raised a step's error;
    the frames that explain it are in the step's record.
    """
    shown = False
    for record in records:
        for where, error in _failures(record):
            out.line()
            out.line(f"{where} raised {error.type_name}: {error.message}", "bold red")
            out.line(_traceback_text(error), newlines=True, code=True)
            shown = True
    if isinstance(row.result, Failure):
        error = row.result.error
        out.line()
        out.line(f"the workflow raised {error.type_name}: {error.message}", "bold red")
        out.line(_traceback_text(error), newlines=True, code=True)
        shown = True
    if not shown:
        out.line()
        out.line("(nothing failed: no traceback to show)")
