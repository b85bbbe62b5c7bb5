"""The `replaykit` command: inspect and operate runs, replay logs, manage the schema.

    replaykit workflows list|show|versions|export|start|send|get-event|stream|cancel|resume|
                        fork|delete|gc
    replaykit queues list [--app module]
    replaykit schedules list|pause|resume|trigger|backfill|delete
    replaykit replay module:workflow run.json ... | --id ID | --in-flight
    replaykit inspect module[:workflow] ID --at N
    replaykit lint PATH...
    replaykit db migrate|status
    replaykit worker module --queue q
    replaykit ui

Every command takes `--url` (else `REPLAYKIT_URL`, else `sqlite:///replaykit.db`).

Apart from `worker`, whose job it is, the command never runs anybody's workflow:
it works on the store alone (`start`, `send` and `get-event` through the
Client, the operations through `runtime.admin`, schedules through the
module-level functions of `runtime.schedules`) and starts no Engine, which
would heartbeat as an executor, claim queue runs, fire schedules and recover
runs. `resume` and `fork` only mark a run PENDING for the executor id and app
version that should run it: the code that can run it lives in the application,
whose engine takes the run on its next recovery. `replay` and `inspect` import
the module the user names and replay a workflow's body, running none of its
steps; `lint` only reads files; `queues list --app` imports the module named.

Exit codes: 0 success; 1 an operation failed (unknown id, unreachable store, a
replay that diverges); 2 bad usage or bad input (options, files, `module:workflow`).

Everything printed from the store goes through `printable` (or, as JSON, through
`json_text`; both in replaykit/_text.py, which the web UI uses too): stored ids,
names, errors and tracebacks are data, and a terminal would obey the escape
sequences among them.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs

try:
    import click
except ImportError as _missing:  # pragma: no cover - depends on the installation
    raise SystemExit(
        "the replaykit command needs click and rich: pip install 'replaykit[cli]'"
    ) from _missing

from replaykit import _waiting, serde
from replaykit._operator import (
    BadCodecSpec,
    decoding,
    load_codec,
    schema_status,
)
from replaykit._text import (
    composite_children,
    format_duration,
    inputs_text,
    json_text,
    outcome_summary,
    printable,
    redact,
    short,
    short_json,
    when_text,
)
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import EXIT_BAD_INPUT, EXIT_FAILED, CliError, Group, UsageError, one_line
from replaykit.cli.fit import Fit
from replaykit.cli.options import (
    UNITS,
    duration_option,
    json_option,
    url_option,
    when_option,
    wide_option,
)
from replaykit.cli.options import (
    parse_duration as parse_duration,
)
from replaykit.cli.options import (
    parse_when as parse_when,
)
from replaykit.cli.printer import Printer
from replaykit.cli.rows import (
    STATUS_STYLE,
    fork_text,
    iso,
    pickup_note,
    record_duration,
    row_json,
    run_error,
)
from replaykit.cli.specs import BadInput, import_spec, resolve_workflow
from replaykit.cli.store import (
    CODEC_KEY,
    client_at,
    get_row,
    named_codec,
    open_store,
    store_at,
)
from replaykit.errors import NonDeterminismError
from replaykit.log import (
    CLOSE_STREAM_KIND,
    WRITE_STREAM_KIND,
    AllOutcome,
    ErrorInfo,
    Failure,
    Log,
    RaceOutcome,
    Record,
    Status,
    Value,
    outcome_to_json,
)
from replaykit.registry import Workflow
from replaykit.runtime.admin import (
    TERMINAL,
    cancel_run,
    collect_garbage,
    delete_run,
    export_run,
    fork_run,
    live_parent,
    resume_family,
    stranded_runs,
)
from replaykit.runtime.engine import DEFAULT_URL
from replaykit.runtime.schedules import (
    ScheduleInfo,
    ScheduleNotFound,
    backfill_schedule,
    delete_schedule,
    list_schedules,
    pause_schedule,
    resume_schedule,
    trigger_schedule,
)
from replaykit.stores.base import ScheduleState, Store, WorkflowFilter, WorkflowRow

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "cli", "main", "printable"]

# What tests imported from the one-module cli.py by its old name.
_open = open_store


_TERMINAL = TERMINAL
#: How many of a run's earlier generations `workflows show` lists (the newest ones).
_SHOWN_GENERATIONS = 20


# -- the command tree -------------------------------------------------------------------------


# What the web UI needs beyond the command's own click and rich (the `ui` extra).
_UI_PACKAGES = ("starlette", "uvicorn", "jinja2")


def _ui_command() -> click.Command:
    """The web UI's command (replaykit/ui/cli.py), imported only when it is run.

    Listing the commands (`replaykit --help`) imports none of the UI, so it is
    fast, and works where the `ui` extra is not installed; running `replaykit ui`
    there says what to install.
    """
    try:
        from replaykit.ui.cli import ui
    except ImportError as exc:
        # replaykit.ui re-raises a missing package as its own ImportError.
        cause = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
        name = getattr(cause, "name", None) or ""
        missing = name.partition(".")[0]
        if missing not in _UI_PACKAGES:
            raise  # a bug, not a missing extra
        message = (
            f"the web UI needs starlette, uvicorn and jinja2 ({missing} is not installed): "
            "pip install 'replaykit[ui]'"
        )

        @click.command(
            "ui",
            add_help_option=False,
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        )
        def ui_missing() -> None:
            raise CliError(message)

        return ui_missing
    return ui


class _RootGroup(Group):
    """The top group: `ui` resolves to the web UI's own command when it is run."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] == "ui":
            return "ui", _ui_command(), args[1:]
        return super().resolve_command(ctx, args)


@click.group(cls=_RootGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="replaykit", prog_name="replaykit")
@click.option("-v", "--verbose", is_flag=True, help="Log what the store and pool do.")
@click.option(
    "--codec",
    "codec_spec",
    envvar="REPLAYKIT_CODEC",
    show_envvar=True,
    metavar="MODULE:ATTRIBUTE",
    help="Your payload codec (Engine(codec=...)): encoded payloads are shown decoded, "
    "and what the command writes is encoded. Without it they show as "
    "<encoded by NAME, N bytes>.",
)
@click.pass_context
def cli(ctx: click.Context, verbose: bool, codec_spec: str | None) -> None:
    """Inspect and operate replaykit workflow runs."""
    if codec_spec:
        try:
            ctx.meta[CODEC_KEY] = load_codec(codec_spec)
        except BadCodecSpec as exc:
            raise UsageError(str(exc)) from exc
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    else:
        ctx.call_on_close(_warnings_as_lines())
        # psycopg_pool logs every failed connection attempt as a warning; the
        # command reports the outcome once, as its one-line error.
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


class _WarningLine(logging.Handler):
    """The library's warnings (a start no engine may run) as `Warning: ...` on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        echo(f"Warning: {' '.join(record.getMessage().split())}", err=True)


def _warnings_as_lines() -> Callable[[], None]:
    """Show the client's warnings for this command; the function that stops it."""
    client_log = logging.getLogger("replaykit.client")
    handler = _WarningLine(logging.WARNING)
    client_log.addHandler(handler)
    return lambda: client_log.removeHandler(handler)


@cli.group(cls=Group)
def workflows() -> None:
    """List, inspect, export, cancel, resume, fork and delete runs."""


def _exists(store: Store, where: WorkflowFilter, offset: int) -> bool:
    return bool(store.list_workflows(attrs.evolve(where, limit=1, offset=offset)))


def count_runs(store: Store, where: WorkflowFilter) -> int:
    """How many runs match `where`, in about 2*log2(n) one-row reads.

    The store lists oldest first and has no count; listing newest first needs
    the total, and reading every row to count them would decode them all.
    """
    if not _exists(store, where, 0):
        return 0
    low, high = 1, 2  # at least `low` runs match, fewer than `high` do once high is found
    while _exists(store, where, high - 1):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if _exists(store, where, middle - 1):
            low = middle
        else:
            high = middle
    return low


def _newest_first(
    store: Store, where: WorkflowFilter, limit: int, offset: int
) -> tuple[list[WorkflowRow], int]:
    """The `limit` newest matching runs after skipping `offset` newer ones; and the total."""
    total = count_runs(store, where)
    end = max(total - offset, 0)
    begin = max(end - limit, 0)
    rows = store.list_workflows(attrs.evolve(where, limit=end - begin, offset=begin)) if end else []
    rows.reverse()
    return rows, total


@workflows.command("list")
@url_option
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice([s.value for s in Status], case_sensitive=False),
    help="Only runs in this status (repeat for several).",
)
@click.option("--name", help="Only runs of this workflow name.")
@click.option("--version", "app_version", help="Only runs stamped with this app version.")
@click.option("--executor", help="Only runs owned by this executor id.")
@click.option("--parent", help="Only children of this run.")
@click.option("--queue", help="Only runs of this queue.")
@click.option(
    "--since",
    callback=when_option,
    metavar="TIME",
    help="Created at or after: ISO time, or a duration ago (2h, 1h30m, 7d).",
)
@click.option(
    "--until",
    callback=when_option,
    metavar="TIME",
    help="Created before: ISO time, or a duration ago (2h, 1h30m, 7d).",
)
@click.option(
    "--stranded",
    is_flag=True,
    help="Only PENDING and ENQUEUED runs of versions other than --app-version: "
    "runs no engine of that version picks up.",
)
@click.option(
    "--app-version",
    "stranded_for",
    metavar="V",
    help="With --stranded: the version your engines run (Engine(app_version=...)).",
)
@click.option("--newest", is_flag=True, help="Newest first (--offset skips the newest).")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True)
@wide_option
@json_option
def list_command(
    url: str,
    statuses: tuple[str, ...],
    name: str | None,
    app_version: str | None,
    executor: str | None,
    parent: str | None,
    queue: str | None,
    since: datetime | None,
    until: datetime | None,
    stranded: bool,
    stranded_for: str | None,
    newest: bool,
    limit: int,
    offset: int,
    wide: bool,
    as_json: bool,
) -> None:
    """Runs, oldest first (--newest: newest first).

    --stranded --app-version V lists the runs that engines of version V never
    pick up: PENDING runs (of --executor, if given) and ENQUEUED ones whose
    stamped version is not V. They wait for an engine of their own version, or
    for a resume or fork onto V (docs/versioning.md).
    """
    if stranded_for is not None and not stranded:
        raise UsageError(
            "--app-version goes with --stranded (runs of versions other than V); "
            "to list the runs of version V, pass --version V"
        )
    if stranded:
        if not stranded_for:
            raise UsageError(
                "--stranded needs --app-version V: stranded runs are those of versions other "
                "than your engines', and this command, which imports no workflow code, cannot "
                "compute the default one. Pass the version your engines are given "
                "(Engine(app_version=...))"
            )
        if statuses or app_version is not None:
            raise UsageError(
                "--stranded lists PENDING and ENQUEUED runs of versions other than "
                "--app-version; it takes no --status or --version"
            )
    where = WorkflowFilter(
        status=tuple(Status(s) for s in statuses) or None,
        name=name,
        app_version=app_version,
        executor_id=executor,
        parent_id=parent,
        queue=queue,
        since=since,
        until=until,
    )
    with store_at(url) as store:
        if stranded_for:
            # stranded_runs sorts what it finds (a bounded scan) oldest first: the
            # total is known, so pages are cut here, in either order. --executor
            # narrows the PENDING runs only: ENQUEUED ones belong to no engine yet.
            found = stranded_runs(
                store,
                app_version=stranded_for,
                executor_id=executor,
                where=attrs.evolve(where, executor_id=None),
            )
            if newest:
                found.reverse()
            rows = found[offset : offset + limit]
            more = len(found) - offset - len(rows) if rows else 0
        elif newest:
            rows, total = _newest_first(store, where, limit, offset)
            more = total - offset - len(rows) if rows else 0
        else:
            rows = store.list_workflows(attrs.evolve(where, limit=limit, offset=offset))
            more = -1 if len(rows) == limit else 0  # -1: there may be more; unknown how many
    if as_json:
        echo_json([row_json(row) for row in rows])
        return
    if not rows:
        if stranded_for:
            echo(
                f"no stranded runs match: engines of version {stranded_for!r} pick up every "
                "PENDING and ENQUEUED run that does"
            )
        else:
            click.echo("no workflow runs match")
        return
    out = Printer(wide=wide)
    out.table(
        ["ID", "NAME", "STATUS", "CREATED", "VERSION", "EXECUTOR", "ERROR"],
        [
            [
                row.workflow_id,
                row.name,
                row.status.value,
                when_text(row.created_at),
                row.app_version,
                row.executor_id,
                short(run_error(row), None if wide else 50 if out.console is None else 500),
            ]
            for row in rows
        ],
        [{2: STATUS_STYLE[row.status]} for row in rows],
        fit={
            0: Fit(16, weight=4),
            1: Fit(6, weight=2),
            4: Fit(7),
            5: Fit(8),
            6: Fit(5, weight=3),
        },
    )
    first = "newest" if newest else "first"
    if more > 0:
        click.echo(
            f"({first} {len(rows)} from offset {offset}; {more} more match: "
            f"--offset {offset + limit})",
            err=True,
        )
    elif more < 0:
        click.echo(
            f"({first} {limit} from offset {offset}; more may match: --offset {offset + limit})",
            err=True,
        )
    if stranded_for:
        echo(
            f"(no engine of version {stranded_for!r} runs these: start an engine of their "
            "version to drain them, or move each onto yours with `replaykit workflows resume "
            f"ID --app-version {stranded_for}` (an ENQUEUED one also needs --executor E) or a "
            "fork; docs/versioning.md says when each is safe)",
            err=True,
        )


@workflows.command("versions")
@url_option
@json_option
def versions_command(url: str, as_json: bool) -> None:
    """The app versions engines run now, and the unfinished runs stamped with each.

    An engine counts as running when it beat its heartbeat in the last 30 seconds.
    WORKFLOWS and QUEUES: the workflows that version's engines registered and the
    queues they listen to, as they record them with their heartbeats ("?": an
    engine of an older replaykit, which records none). A version whose runs wait
    with no engine running lists none: start one of it, or move its runs
    (`workflows list --stranded`, docs/versioning.md).
    """
    with store_at(url) as store:
        loads, readable, partial = _waiting.version_loads(store)
    if as_json:
        echo_json([load.to_json() for load in loads])
        return
    if not loads:
        click.echo("no engine is running and no run is unfinished")
        return
    Printer().table(
        ["VERSION", "ENGINES", "PENDING", "ENQUEUED", "PARKED", "WORKFLOWS", "QUEUES"],
        [
            [
                load.app_version,
                ", ".join(e.executor_id for e in load.engines) or "none running",
                str(load.pending),
                str(load.enqueued),
                str(load.parked),
                _engines_run(load.engines, _waiting.workflows_text),
                _engines_run(load.engines, _waiting.queues_text),
            ]
            for load in loads
        ],
        [{} if load.engines else {1: "yellow"} for load in loads],
        fit={
            0: Fit(12, weight=2),
            1: Fit(12, weight=3),
            5: Fit(12, weight=4),
            6: Fit(8, weight=2),
        },
    )
    if partial:
        click.echo(f"(counts from the first {_waiting.MAX_SCAN} unfinished runs)", err=True)
    if not readable:
        click.echo("(this store keeps no heartbeats the command can read: no engine is shown)")


def _engines_run(
    engines: Sequence[_waiting.LiveEngine], names: Callable[[Sequence[_waiting.LiveEngine]], str]
) -> str:
    """A `versions` cell: what the engines said they run; "?" where one said nothing."""
    if not engines:
        return ""
    said = names(engines)
    if all(engine.registered is not None for engine in engines):
        return said
    # An engine of an older replaykit records no names: the list may be short.
    return "?" if said == "none" else f"{said}, ?"


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


@workflows.command("show")
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


@workflows.command("export")
@click.argument("workflow_id")
@url_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write to this file instead of stdout.",
)
def export_command(workflow_id: str, url: str, output: Path | None) -> None:
    """The run's log as JSON, for `replaykit replay` and `replaykit.testing.replay`."""
    with store_at(url) as store:
        get_row(store, workflow_id)
        text = export_run(store, workflow_id).to_json()
    if output is None:
        click.echo(json_text(text))
        return
    try:
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {str(output)!r}: {exc.strerror or exc}") from exc
    echo(f"wrote the log of {workflow_id!r} to {output}", err=True)


@workflows.command("cancel")
@click.argument("workflow_id")
@url_option
@click.option(
    "--children/--no-children", default=True, show_default=True, help="Cancel its children too."
)
@click.option("--reason", default="", help="Why: kept with the run, and `show` prints it.")
@json_option
def cancel_command(workflow_id: str, url: str, children: bool, reason: str, as_json: bool) -> None:
    """Mark a run CANCELLED; the engine running it stops at its next record."""
    with store_at(url) as store:
        row = get_row(store, workflow_id)
        if row.status.is_terminal:
            raise CliError(f"workflow {workflow_id!r} is already {row.status.value}; not cancelled")
        cancelled = cancel_run(store, workflow_id, children=children, reason=reason)
        after = get_row(store, workflow_id)
    if as_json:
        echo_json({**row_json(after), "cancelled": cancelled})
        return
    echo(
        f"cancelled {workflow_id!r} ({row.name}). An engine running it stops at its next record "
        f"(a step under way finishes, but its outcome is not recorded). "
        f"`replaykit workflows resume {workflow_id}` continues it from its log"
        + (", and the children this cancel reached with it." if children else ".")
    )


@workflows.command("resume")
@click.argument("workflow_id")
@url_option
@click.option(
    "--executor",
    help="Hand the run to this executor id (default: its own; an ENQUEUED run needs one).",
)
@click.option("--app-version", help="Restamp the run for this app version (default: its own).")
@json_option
def resume_command(
    workflow_id: str, url: str, executor: str | None, app_version: str | None, as_json: bool
) -> None:
    """Mark a CANCELLED or PARKED run PENDING again, for its engine to continue it.

    The children its cancel cascaded to are resumed with it. An ENQUEUED run
    (delayed or not) starts now on the engine that --executor names. With
    --app-version, the run's unfinished family (children, grandchildren, children
    of earlier generations) moves onto that version with it, in one transaction,
    and the ids moved are printed: after a code edit, a child left on the old
    version would never run, and its parent would wait for it for ever.
    """
    with store_at(url) as store:
        row = get_row(store, workflow_id)
        if row.status is Status.CONTINUED:
            raise CliError(
                f"workflow {workflow_id!r} is an earlier generation of run {row.continued_as!r}, "
                "which continued as new; it is not resumed (fork it to run it again)"
            )
        if row.status in (Status.SUCCESS, Status.ERROR):
            raise CliError(
                f"workflow {workflow_id!r} is {row.status.value}; a finished run cannot be "
                f"resumed. Re-run it from a position with "
                f"`replaykit workflows fork {workflow_id} --from N`"
            )
        if row.status is Status.ENQUEUED and not executor:
            raise CliError(
                f"workflow {workflow_id!r} is ENQUEUED on queue {row.queue!r}: a worker of "
                f"that queue takes it when it is due; to start it now, name the engine that "
                f"runs it: `replaykit workflows resume {workflow_id} --executor ID`"
            )
        resumed = resume_family(store, workflow_id, executor_id=executor, app_version=app_version)
        done = sum(1 for r in store.load_log(workflow_id) if r.outcome is not None)
        after = get_row(store, workflow_id)
    if as_json:
        echo_json(
            {
                **row_json(after),
                "resumed": resumed.ids,
                "cascaded": list(resumed.cascaded),
                "moved": list(resumed.moved),
                "replayed_positions": done,
            }
        )
        return
    target = executor or row.executor_id
    children = resumed.cascaded
    also = f" With it, the children its cancel reached: {', '.join(children)}." if children else ""
    if resumed.moved:
        also += (
            f" Moved onto version {app_version!r} with it, the unfinished runs of its family: "
            f"{', '.join(resumed.moved)}."
        )
    started = "started now" if row.status is Status.ENQUEUED else "PENDING again"
    echo(
        f"resumed {workflow_id!r} ({row.name}): {started}, {done} recorded position(s) "
        f"to replay.{also} " + pickup_note(target, app_version or row.app_version)
    )


# -- starting runs and talking to them: through the Client ------------------------------------


def _json_argument(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(
            f"{what} is not JSON ({exc}); quote it for the shell, e.g. '{{\"ok\": true}}'"
        ) from None


@workflows.command("start")
@click.argument("name")
@click.argument("args_json", metavar="[ARGS_JSON]", required=False)
@url_option
@click.option("--kwargs", "kwargs_json", metavar="JSON", help="Keyword arguments, a JSON object.")
@click.option("--id", "workflow_id", help="The run's id (default: a new UUID); idempotent.")
@click.option("--queue", help="Put the run on this queue, for any engine draining it.")
@click.option(
    "--delay",
    callback=duration_option,
    metavar="DURATION",
    help="With --queue: not claimed before this long (90s, 1h30m, 2d).",
)
@click.option(
    "--executor", help="Without --queue: the executor id of the engine to run it (it is told)."
)
@click.option(
    "--app-version",
    help="The version to stamp the run with: your engines' Engine(app_version=...); "
    "'latest': the version the running engines run (`workflows versions` lists them).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse the start when no running engine may run it (else: a warning).",
)
@json_option
def start_command(
    name: str,
    args_json: str | None,
    url: str,
    kwargs_json: str | None,
    workflow_id: str | None,
    queue: str | None,
    delay: timedelta | None,
    executor: str | None,
    app_version: str | None,
    strict: bool,
    as_json: bool,
) -> None:
    """Start a run of the workflow registered as NAME, for your engines to run.

    ARGS_JSON is a JSON array of its positional arguments ('["o-1", 100]').
    Imports none of your code: the run is written to the store, ENQUEUED on
    --queue (the usual way: any engine draining that queue claims it) or
    PENDING for the engine --executor names. Engines run only runs of their
    own app version, which this command cannot compute: --app-version says it
    (`latest`: the one the running engines run). A start that no running engine
    may run warns; --strict refuses it. The same --id with the same workflow and
    arguments is the same run; anything else under a used id is refused.
    """
    args = [] if args_json is None else _json_argument(args_json, "ARGS_JSON")
    if not isinstance(args, list):
        raise UsageError(
            "ARGS_JSON must be a JSON array of the positional arguments, e.g. "
            "'[\"o-1\", 100]' (one object argument: '[{\"id\": 1}]'; keyword ones: --kwargs)"
        )
    kwargs = {} if kwargs_json is None else _json_argument(kwargs_json, "--kwargs")
    if not isinstance(kwargs, dict):
        raise UsageError("--kwargs must be a JSON object, e.g. '{\"amount\": 100}'")
    if not app_version:
        raise UsageError(
            "--app-version is required: engines run only runs stamped with their own version, "
            "and this command, which imports no workflow code, cannot compute the default "
            "one. Pass the version your engines are given (Engine(app_version=...))"
        )
    if queue is None and not executor:
        raise UsageError(
            "no engine would run it: pass --queue Q (any engine draining Q claims it) or "
            "--executor ID (the engine with that executor id runs it)"
        )
    if delay is not None and queue is None:
        raise UsageError("--delay holds a run back on its queue: it needs --queue")
    with client_at(url, app_version=app_version, strict=strict) as client:
        if app_version == "latest":
            try:
                client.app_version = _waiting.latest_version(client.store)
            except _waiting.NoLatestVersion as exc:
                raise CliError(str(exc)) from None
        existed = workflow_id is not None and client.store.get_workflow(workflow_id) is not None
        if queue is not None:
            handle = client.enqueue(
                queue, name, *args, workflow_id=workflow_id, delay=delay, **kwargs
            )
        else:
            handle = client.start(
                name, *args, workflow_id=workflow_id, executor_id=executor, **kwargs
            )
        row = handle.row()
    if as_json:
        echo_json({**row_json(row), "created": not existed})
        return
    verb = "exists already (same workflow and arguments):" if existed else "started:"
    if row.status is Status.ENQUEUED:
        where = (
            f"ENQUEUED on queue {row.queue!r}, for an engine of version {row.app_version!r} "
            "draining it to claim"
            + (f" from {when_text(row.wake_at)} UTC" if row.wake_at is not None else "")
        )
    else:
        where = f"{row.status.value}. " + pickup_note(row.executor_id, row.app_version)
    echo(f"{row.workflow_id} {verb} {name!r} {where}")


@workflows.command("send")
@click.argument("workflow_id", metavar="ID")
@click.argument("message_json", metavar="MESSAGE_JSON")
@url_option
@click.option("--topic", required=True, help="The topic the run's Recv(topic) waits on.")
@click.option(
    "--key",
    help="An idempotency key: a second send with it delivers nothing (safe to retry).",
)
@json_option
def send_command(
    workflow_id: str, message_json: str, url: str, topic: str, key: str | None, as_json: bool
) -> None:
    """Put MESSAGE_JSON in run ID's inbox under --topic (approve a step from a shell).

    The run's `Recv(topic)` takes it, once. Without --key every call delivers
    one message; with it, only the first call that uses the key does.
    """
    message = _json_argument(message_json, "MESSAGE_JSON")
    with client_at(url) as client:
        row = get_row(client.store, workflow_id)
        delivered = client.send(workflow_id, message, topic, idempotency_key=key)
    if as_json:
        echo_json(
            {
                "workflow_id": workflow_id,
                "name": row.name,
                "status": row.status.value,
                "topic": topic,
                "key": key,
                "delivered": delivered,
            }
        )
        return
    if not delivered:
        echo(
            f"not sent again: key {key!r} was used before for {workflow_id!r}, and that "
            "message was delivered then"
        )
        return
    note = ""
    if row.status.is_terminal:
        note = f" (the run is {row.status.value}: nothing will read it)"
    echo(f"sent to {workflow_id!r} ({row.name}) on topic {topic!r}{note}")


@workflows.command("get-event")
@click.argument("workflow_id", metavar="ID")
@click.argument("key")
@url_option
@click.option(
    "--timeout",
    callback=duration_option,
    metavar="DURATION",
    help="Wait this long for the event to be set (30s, 5m); default: answer at once.",
)
def get_event_command(workflow_id: str, key: str, url: str, timeout: timedelta | None) -> None:
    """Print the latest value run ID set for event KEY, as JSON.

    Exit 1 if the run has set no such event (after waiting --timeout for it).
    """
    seconds = None if timeout is None else timeout.total_seconds()
    with client_at(url) as client:
        row = get_row(client.store, workflow_id)
        if seconds:
            client.get_event(workflow_id, key, timeout=seconds)
        # The store says whether the event is set at all: a value of None is one.
        found, value = client.store.get_event(workflow_id, key)
    if not found:
        waited = f" after waiting {format_duration(seconds)}" if seconds else ""
        raise CliError(
            f"workflow {workflow_id!r} ({row.name}, {row.status.value}) has set no event "
            f"{key!r}{waited}" + ("" if seconds else "; --timeout DURATION waits for it")
        )
    encoded = serde.encoded_by(value)
    if encoded is not None:
        echo(
            f"note: the value is encoded by the payload codec {encoded!r}; pass "
            "replaykit --codec MODULE:ATTRIBUTE to decode it",
            err=True,
        )
    click.echo(json_text(json.dumps(value, ensure_ascii=False, default=str)))


@workflows.command("stream")
@click.argument("workflow_id", metavar="ID")
@click.argument("key")
@url_option
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Print new values as they come, until the stream is closed or the run ends.",
)
@click.option(
    "--start",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Skip the stream's first N values.",
)
@click.option(
    "--timeout",
    callback=duration_option,
    metavar="DURATION",
    help="With --follow: exit 1 when no new value comes for this long (30s, 5m).",
)
def stream_command(
    workflow_id: str, key: str, url: str, follow: bool, start: int, timeout: timedelta | None
) -> None:
    """Print the values run ID wrote to its stream KEY (WriteStream), one JSON value a line.

    Without --follow, what is recorded now; a note on stderr says when the stream
    is still open. With --follow, every value as it is written, until the run
    closes the stream or ends (a reader in another process is woken by
    PostgreSQL's notifications; on SQLite it looks every half second).
    """
    from replaykit.runtime.streams import recorded_values

    if timeout is not None and not follow:
        raise UsageError("--timeout bounds the wait of --follow: pass --follow too")

    def show(value: Any) -> None:
        click.echo(json_text(json.dumps(value, ensure_ascii=False, default=str)))

    with client_at(url) as client:
        row = get_row(client.store, workflow_id)
        if follow:
            seconds = None if timeout is None else timeout.total_seconds()
            shown = 0
            try:
                for value in client.read_stream(workflow_id, key, start, timeout=seconds):
                    show(value)
                    shown += 1
            except TimeoutError as exc:
                raise CliError(one_line(exc)) from None
            if not shown:  # the run ended: a key it never wrote was a mistake
                _check_stream_key(client.store, get_row(client.store, workflow_id), key)
            return
        values, closed, row = recorded_values(client.store, workflow_id, key, start)
        if not values and not closed:
            _check_stream_key(client.store, row, key, follow=False)
    for value in values:
        show(value)
    if not closed and not row.status.is_terminal:
        echo(
            f"stream {key!r} of {workflow_id!r} ({row.name}, {row.status.value}) is open: "
            "--follow prints the values still to come",
            err=True,
        )


def _check_stream_key(store: Store, row: WorkflowRow, key: str, *, follow: bool = True) -> None:
    """Exit 1 naming the run's streams when `key` is none of them (a typo, most often)."""
    kinds = (WRITE_STREAM_KIND, CLOSE_STREAM_KIND)
    keys = sorted({r.name for r in store.load_log(row.workflow_id) if r.kind in kinds})
    if key in keys:
        return
    has = f"its streams: {', '.join(repr(k) for k in keys)}" if keys else "it has no stream"
    later = "" if row.status.is_terminal or follow else "; --follow waits for what it writes later"
    raise CliError(
        f"workflow {row.workflow_id!r} ({row.name}, {row.status.value}) has written nothing to "
        f"stream {key!r}: {has}{later}"
    )


@workflows.command("fork")
@click.argument("workflow_id")
@click.option(
    "--from",
    "from_position",
    type=click.IntRange(min=0),
    required=True,
    help="First position to run again; the records before it are kept.",
)
@url_option
@click.option("--id", "new_id", help="The new run's id (default: ID-fork-<random>).")
@click.option("--executor", help="Executor id to run the fork (default: the source's).")
@click.option("--app-version", help="App version to stamp the fork with (default: the source's).")
@json_option
def fork_command(
    workflow_id: str,
    from_position: int,
    url: str,
    new_id: str | None,
    executor: str | None,
    app_version: str | None,
    as_json: bool,
) -> None:
    """Copy a run's log below --from into a new PENDING run that goes on from there.

    The way to re-run a fixed version of a failed run without repeating its
    completed steps.
    """
    with store_at(url) as store:
        get_row(store, workflow_id)
        stored, kept = fork_run(
            store,
            workflow_id,
            from_position,
            workflow_id=new_id,
            executor_id=executor,
            app_version=app_version,
        )
        # Re-affirming PENDING notifies ("resumed"): a running owner starts it at once.
        store.set_status(stored.workflow_id, Status.PENDING, only_from=(Status.PENDING,))
    if as_json:
        # workflow_id is the new run's; forked_from the source's.
        echo_json({**row_json(stored), "kept_positions": kept})
        return
    copied = f"keeping positions 0..{kept - 1}" if kept else "keeping no records"
    echo(
        f"forked {workflow_id!r} into {stored.workflow_id!r}, {copied}; it runs live from "
        f"position {kept}. " + pickup_note(stored.executor_id, stored.app_version)
    )


@workflows.command("delete")
@click.argument("workflow_id")
@url_option
@click.option("--children", is_flag=True, help="Delete its child runs too.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def delete_command(workflow_id: str, url: str, children: bool, yes: bool, as_json: bool) -> None:
    """Delete a run with its log, inbox and events (cancelling it first if it runs)."""
    with store_at(url) as store:
        row = get_row(store, workflow_id)
        if not yes:
            _confirm(
                f"delete {row.status.value} run {workflow_id!r} ({row.name}) and its log"
                + (" and children" if children else "")
                + "?",
                as_json=as_json,
            )
        deleted = delete_run(store, workflow_id, children=children)
    if as_json:
        echo_json(
            {"workflow_id": workflow_id, "name": row.name, "deleted": deleted, "children": children}
        )
        return
    echo(f"deleted {workflow_id!r}")


def _confirm(question: str, *, as_json: bool = False) -> None:
    """Ask `question` on the terminal; exit 1 on "no", and say to pass --yes with no terminal.

    With --json, a prompt would be mixed into the JSON: --yes is needed.
    """
    if as_json:
        raise UsageError("--json prints no prompt: pass --yes to go ahead without one")
    try:
        yes = click.confirm(printable(question))
    except click.Abort:
        if sys.stdin is not None and sys.stdin.isatty():
            raise  # Ctrl-C or Ctrl-D at the prompt: aborted, as asked
        raise CliError(
            "no answer to the confirmation: standard input is not a terminal (a script or a "
            "pipe); pass --yes to go ahead without asking"
        ) from None
    if not yes:
        raise click.Abort()


@workflows.command("gc")
@url_option
@click.option(
    "--older-than",
    callback=duration_option,
    metavar="DURATION",
    required=True,
    help="Delete runs created longer ago than this (30d, 12h, ...).",
)
@click.option(
    "--include-unfinished",
    is_flag=True,
    help="Also delete PENDING, ENQUEUED and PARKED runs (cancelling them first).",
)
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def gc_command(
    url: str,
    older_than: timedelta,
    include_unfinished: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Retention: delete old runs; by default only finished ones."""
    try:
        cutoff = datetime.now(UTC) - older_than
    except OverflowError:
        raise UsageError(f"--older-than {older_than.days}d reaches before the year 1") from None
    with store_at(url) as store:
        matching = store.list_workflows(
            WorkflowFilter(status=None if include_unfinished else _TERMINAL, until=cutoff)
        )
        what = "runs" if include_unfinished else "finished runs"
        # collect_garbage keeps the children of unfinished parents, which may
        # still wait for them: the count says what it would delete.
        before = len(matching)
        matching = [row for row in matching if live_parent(store, row) is None]
        spared = before - len(matching)
        kept = f" ({spared} kept: their parents are unfinished)" if spared else ""
        report = {"cutoff": iso(cutoff), "matching": len(matching), "kept": spared}
        if dry_run or not matching:
            if as_json:
                echo_json({**report, "deleted": 0, "dry_run": dry_run})
                return
            click.echo(f"{len(matching)} {what} created before {when_text(cutoff)} UTC{kept}")
            return
        if not yes:
            _confirm(
                f"delete {len(matching)} {what} created before {when_text(cutoff)} UTC?",
                as_json=as_json,
            )
        deleted = collect_garbage(store, cutoff, keep_running=not include_unfinished)
    if as_json:
        echo_json({**report, "deleted": deleted, "dry_run": False})
        return
    click.echo(f"deleted {deleted} {what} created before {when_text(cutoff)} UTC{kept}")


# -- queues ---------------------------------------------------------------------------------

# Counting reads the live runs themselves (the store keeps no counters); past
# this many the counts are lower bounds, and say so.
_MAX_QUEUE_SCAN = 20_000


@attrs.define
class _QueueCounts:
    depth: int = 0  # ENQUEUED, delayed ones included
    delayed: int = 0  # ENQUEUED with a start delay still running
    running: int = 0  # PENDING


def _queue_counts(store: Store, now: datetime) -> tuple[dict[str, _QueueCounts], bool]:
    """Counts per queue from the store's ENQUEUED and PENDING runs; and whether partial."""
    live = store.list_workflows(
        WorkflowFilter(status=(Status.ENQUEUED, Status.PENDING), limit=_MAX_QUEUE_SCAN + 1)
    )
    counts: dict[str, _QueueCounts] = {}
    for row in live[:_MAX_QUEUE_SCAN]:
        if row.queue is None:
            continue  # started directly, not from a queue
        entry = counts.setdefault(row.queue, _QueueCounts())
        if row.status is Status.ENQUEUED:
            entry.depth += 1
            wake = row.wake_at
            if wake is not None and wake.tzinfo is None:
                wake = wake.replace(tzinfo=UTC)
            if wake is not None and wake > now:
                entry.delayed += 1
        else:
            entry.running += 1
    return counts, len(live) > _MAX_QUEUE_SCAN


def _period(seconds: float) -> str:
    """A rate limit's period in the largest unit that divides it: 60 -> '1m', 90 -> '90s'."""
    for unit, size in UNITS.items():
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _import_app(module: str, app_dir: Path) -> None:
    """Import the application module that registers queues (and workflows) by name."""
    where = str(app_dir.resolve())
    if where not in sys.path:
        sys.path.insert(0, where)
    try:
        import_spec(module)
    except BadInput as exc:
        raise UsageError(str(exc)) from exc


_app_option = click.option(
    "--app",
    "app_module",
    metavar="MODULE",
    help="Your module that defines the queues (imported, to read their limits).",
)
_app_dir_option = click.option(
    "--app-dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory put first on sys.path before importing --app.",
)


@cli.group("queues", cls=Group)
def queues_group() -> None:
    """What waits on each queue and what runs from it."""


@queues_group.command("list")
@url_option
@_app_option
@_app_dir_option
@json_option
def queues_list_command(url: str, app_module: str | None, app_dir: Path, as_json: bool) -> None:
    """Each queue's depth (ENQUEUED runs), delayed runs, running (PENDING) runs and limits.

    The counts come from the store. The limits live in your code: with --app
    MODULE, the module is imported (as `worker` does) and its queues' limits are
    shown, with the queues that have nothing waiting or running too. No
    workflow runs.
    """
    from replaykit.runtime.queues import Queue, registered_queues

    registered: dict[str, Queue] = {}
    if app_module is not None:
        _import_app(app_module, app_dir)
        registered = {queue.name: queue for queue in registered_queues()}
    with store_at(url) as store:
        counts, partial = _queue_counts(store, datetime.now(UTC))
    names = sorted(set(counts) | set(registered))

    def limits(name: str) -> dict[str, Any] | None:
        queue = registered.get(name)
        if queue is None:
            return None
        rate = queue.rate_limit
        return {
            "concurrency": queue.concurrency,
            "worker_concurrency": queue.worker_concurrency,
            "rate_limit": None if rate is None else {"count": rate[0], "per_seconds": rate[1]},
        }

    if as_json:
        echo_json(
            {
                "queues": [
                    {
                        "queue": name,
                        "depth": counts.get(name, _QueueCounts()).depth,
                        "delayed": counts.get(name, _QueueCounts()).delayed,
                        "running": counts.get(name, _QueueCounts()).running,
                        "registered": name in registered if app_module else None,
                        "limits": limits(name),
                    }
                    for name in names
                ],
                "partial": partial,
            }
        )
        return
    if not names:
        click.echo(
            "no queue has runs waiting or running"
            + ("" if app_module else " (--app MODULE also lists the queues your code defines)")
        )
        return
    at_least = "+" if partial else ""
    headers = ["QUEUE", "DEPTH", "DELAYED", "RUNNING"]
    if app_module:
        headers += ["CONCURRENCY", "PER WORKER", "RATE LIMIT"]
    rows: list[list[str]] = []
    for name in names:
        entry = counts.get(name, _QueueCounts())
        cells = [name, f"{entry.depth}{at_least}", f"{entry.delayed}{at_least}"]
        cells.append(f"{entry.running}{at_least}")
        if app_module:
            queue = registered.get(name)
            if queue is None:
                cells += ["(not in --app)", "", ""]
            else:
                rate = queue.rate_limit
                cells += [
                    str(queue.concurrency) if queue.concurrency else "-",
                    str(queue.worker_concurrency) if queue.worker_concurrency else "-",
                    f"{rate[0]}/{_period(rate[1])}" if rate else "-",
                ]
        rows.append(cells)
    Printer().table(headers, rows, fit={0: Fit(12)})
    if partial:
        click.echo(
            f"(counted the first {_MAX_QUEUE_SCAN} live runs: the counts are lower bounds)",
            err=True,
        )
    if not app_module:
        click.echo("(limits live in your code: --app MODULE shows them)", err=True)


# -- schedules ------------------------------------------------------------------------------


@contextmanager
def _schedule_errors() -> Iterator[None]:
    """A name the store does not know exits 1 with its message; a bad range or time, 2."""
    try:
        yield
    except ScheduleNotFound as exc:
        raise CliError(str(exc)) from exc
    except ValueError as exc:
        raise UsageError(" ".join(str(exc).split())) from exc


def _schedule_state(store: Store, name: str) -> ScheduleState | None:
    return store.schedule_states().get(name)


def _schedule_requests(info: ScheduleInfo) -> str:
    asked: list[str] = []
    if info.trigger_requested_at is not None:
        asked.append(f"trigger asked {when_text(info.trigger_requested_at)}")
    if info.backfill_requested is not None:
        start, end = info.backfill_requested
        asked.append(f"backfill {when_text(start)} to {when_text(end)}")
    return "; ".join(asked) or "-"


def _schedule_json(info: ScheduleInfo) -> dict[str, Any]:
    backfill = info.backfill_requested
    return {
        "name": info.name,
        "workflow": info.workflow_name,
        "cron": info.cron,
        "tz": info.tz,
        "queue": info.queue,
        "backfill": info.backfill,
        "paused": info.paused,
        "next_tick": iso(info.next_tick),
        "trigger_requested_at": iso(info.trigger_requested_at),
        "backfill_requested": (
            None if backfill is None else {"start": iso(backfill[0]), "end": iso(backfill[1])}
        ),
        "updated_at": iso(info.updated_at),
    }


def _scheduler_pickup(what: str, state: ScheduleState | None) -> str:
    queue = f" on queue {state.queue!r}" if state is not None and state.queue else ""
    return (
        f"The next engine whose code defines the schedule starts {what}{queue} within its "
        "poll interval (paused or not); this command runs no workflow code"
    )


@cli.group("schedules", cls=Group)
def schedules_group() -> None:
    """List, pause, resume, trigger, backfill and delete schedules, through the store.

    Schedules are defined in your code (@schedule); engines keep their state
    in the store, where these commands change it without importing that code.
    Engines see a change at their next look at the store (one poll interval).
    """


@schedules_group.command("list")
@url_option
@wide_option
@json_option
def schedules_list_command(url: str, wide: bool, as_json: bool) -> None:
    """Each schedule the store knows: its workflow, cron, zone, queue, state and next tick.

    A schedule is in the store once an engine whose code defines it has run on
    it. REQUESTS are the triggers and backfills asked for that no engine has
    carried out yet. NEXT is the next tick after now (UTC), paused or not.
    """
    with store_at(url) as store:
        # registered=(): the store's schedules only. Whatever this process has
        # imported is not the application's code, whose engines define them.
        infos = list_schedules(store, registered=())
    if as_json:
        echo_json([_schedule_json(info) for info in infos])
        return
    if not infos:
        click.echo(
            "no schedules in the store (an engine registers the schedules its code defines "
            "when it starts)"
        )
        return
    Printer(wide=wide).table(
        ["NAME", "WORKFLOW", "CRON", "TZ", "QUEUE", "PAUSED", "NEXT (UTC)", "REQUESTS"],
        [
            [
                info.name,
                info.workflow_name,
                info.cron,
                info.tz or "UTC",
                info.queue or "-",
                "yes" if info.paused else "no",
                when_text(info.next_tick) if info.next_tick is not None else "?",
                _schedule_requests(info),
            ]
            for info in infos
        ],
        [{5: "bold yellow"} if info.paused else {} for info in infos],
        # PAUSED and NEXT are never cut; at 80 columns the others share what is
        # left, none narrower than its header.
        fit={
            0: Fit(8, weight=3),
            1: Fit(8, weight=2),
            2: Fit(7),
            3: Fit(5),
            4: Fit(5),
            7: Fit(8, weight=3),
        },
    )


@schedules_group.command("pause")
@click.argument("name")
@url_option
def schedules_pause_command(name: str, url: str) -> None:
    """Pause schedule NAME for every engine on the store, until it is resumed.

    Engines skip its ticks from their next look at the store; runs already
    started go on. Durable across restarts and deploys.
    """
    with store_at(url) as store, _schedule_errors():
        changed = pause_schedule(store, name, registered=())
    if changed:
        echo(
            f"paused schedule {name!r}: engines skip its ticks from their next look at the "
            f"store; runs already started go on. `replaykit schedules resume {name}` undoes it"
        )
    else:
        echo(f"schedule {name!r} was paused already; nothing changed")


@schedules_group.command("resume")
@click.argument("name")
@url_option
def schedules_resume_command(name: str, url: str) -> None:
    """Resume paused schedule NAME.

    The ticks missed while it was paused are not started, unless the schedule
    has backfill=True: then engines start them, as after downtime.
    """
    with store_at(url) as store, _schedule_errors():
        changed = resume_schedule(store, name, registered=())
        state = _schedule_state(store, name)
    if not changed:
        echo(f"schedule {name!r} was not paused; nothing changed")
        return
    missed = (
        "engines start the ticks missed while it was paused (it has backfill=True)"
        if state is not None and state.backfill
        else "the ticks missed while it was paused are not started (`replaykit schedules "
        f"backfill {name} --from T --to T` starts them)"
    )
    echo(f"resumed schedule {name!r}: engines fire its ticks again from their next look; {missed}")


@schedules_group.command("trigger")
@click.argument("name")
@url_option
@json_option
def schedules_trigger_command(name: str, url: str, as_json: bool) -> None:
    """Ask for one run of schedule NAME now, outside its cron.

    The run's id is schedule:NAME:manual:<UTC instant>, and its tick that
    instant. A trigger asked for while another is pending joins it: one run.
    """
    with store_at(url) as store, _schedule_errors():
        before = _schedule_state(store, name)
        run_id = trigger_schedule(store, name, registered=())
    pending_since = None if before is None else before.trigger_at
    if as_json:
        echo_json({"schedule": name, "run_id": run_id, "joined": pending_since is not None})
        return
    if pending_since is not None:
        asked = (
            f"a trigger of schedule {name!r} asked at {when_text(pending_since)} UTC is "
            f"still pending, and this one joins it: {run_id}"
        )
    else:
        asked = f"asked for a run of schedule {name!r} now: {run_id}"
    echo(f"{asked}. {_scheduler_pickup('it', before)}.")


@schedules_group.command("backfill")
@click.argument("name")
@click.option(
    "--from",
    "start",
    callback=when_option,
    metavar="TIME",
    required=True,
    help="The first instant of the range: ISO 8601 (2030-01-01T00:00, or with an offset, "
    "2030-01-01T02:00+01:00; without one it is UTC), or a duration ago (7d).",
)
@click.option(
    "--to",
    "end",
    callback=when_option,
    metavar="TIME",
    required=True,
    help="The end of the range, not included; written as --from is.",
)
@url_option
@json_option
def schedules_backfill_command(
    name: str, start: datetime, end: datetime, url: str, as_json: bool
) -> None:
    """Ask for a run of every tick of schedule NAME in [--from, --to).

    Ticks that already have a run (from the cron or an earlier backfill) are
    not run again. At most 10,000 ticks per backfill, and one backfill pending
    per schedule at a time. The next engine whose code defines the schedule
    starts the runs, paused or not.
    """
    if end <= start:
        raise UsageError(
            f"--to {end.isoformat()} is not after --from {start.isoformat()}: a backfill takes "
            "the ticks in [--from, --to); write the earlier time as --from"
        )
    with store_at(url) as store:
        state = _schedule_state(store, name)
        # The library refuses this too, but as a ValueError, which would exit 2:
        # it is the store's state that stands in the way, not what was written.
        if (
            state is not None
            and state.backfill_start is not None
            and state.backfill_end is not None
            and (state.backfill_start, state.backfill_end) != (start, end)
        ):
            raise CliError(
                f"schedule {name!r} has a backfill from {when_text(state.backfill_start)} to "
                f"{when_text(state.backfill_end)} UTC pending, not yet run by an engine that "
                "defines it; ask for this range once that one is done (`replaykit schedules "
                "list` shows it)"
            )
        with _schedule_errors():
            run_ids = backfill_schedule(store, name, start, end, registered=())
    if as_json:
        echo_json({"schedule": name, "start": iso(start), "end": iso(end), "run_ids": run_ids})
        return
    span = f"from {when_text(start)} to {when_text(end)} UTC"
    if not run_ids:
        echo(f"schedule {name!r} has no tick {span}; nothing to run")
        return
    echo(
        f"asked for the {len(run_ids)} tick(s) of schedule {name!r} {span} (the first "
        f"{run_ids[0]}, the last {run_ids[-1]}); ticks that already have a run keep it. "
        + _scheduler_pickup("the others", state)
        + "."
    )


@schedules_group.command("delete")
@click.argument("name")
@url_option
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def schedules_delete_command(name: str, url: str, yes: bool) -> None:
    """Remove schedule NAME's state from the store: its paused flag and pending requests.

    Its definition lives in your code: engines running now drop the schedule at
    their next look, and an engine that starts with it in its code registers it
    again, unpaused. To stop it for good, remove it from the code, and pause it
    until that deploy is out.
    """
    with store_at(url) as store, _schedule_errors():
        states = store.schedule_states()
        if name not in states:
            raise ScheduleNotFound(name, states)
        if not yes:
            click.confirm(
                printable(
                    f"delete schedule {name!r} ({states[name].workflow_name}) from the store, "
                    "with its paused flag and pending requests?"
                ),
                abort=True,
            )
        delete_schedule(store, name)
    echo(
        f"deleted schedule {name!r} from the store. Engines running now drop it at their next "
        "look; an engine whose code defines it registers it again, unpaused, when it starts: "
        "remove it from the code to stop it for good"
    )


# -- replay --------------------------------------------------------------------------------


def _read_log(path: Path) -> Log:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput("no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read it ({one_line(exc)})") from exc
    try:
        return Log.from_json(text)
    except ValueError as exc:
        raise BadInput(one_line(exc)) from exc


@cli.command("replay")
@click.argument("spec", metavar="MODULE:WORKFLOW")
@click.argument("logs", nargs=-1, type=click.Path(path_type=Path), metavar="[LOG]...")
@click.option(
    "--id",
    "run_ids",
    multiple=True,
    help="Also replay this run's log, read from the store at --url (repeat for several).",
)
@click.option(
    "--in-flight",
    is_flag=True,
    help="Also replay every PENDING or PARKED run of the workflow(s) in the store at --url.",
)
@click.option(
    "--url",
    envvar="REPLAYKIT_URL",
    default=DEFAULT_URL,
    show_default=True,
    show_envvar=True,
    help="The store that --id and --in-flight read (only read).",
)
@click.option(
    "--strict/--no-strict",
    default=True,
    show_default=True,
    help="Also compare each command's arguments (the engine compares them only with "
    "Engine(strict=True)).",
)
@click.option(
    "--check-result/--no-check-result",
    default=True,
    show_default=True,
    help="For a finished run, also require the recorded result (or error).",
)
@click.option(
    "--app-dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory put first on sys.path before importing MODULE.",
)
def replay_command(
    spec: str,
    logs: tuple[Path, ...],
    run_ids: tuple[str, ...],
    in_flight: bool,
    url: str,
    strict: bool,
    check_result: bool,
    app_dir: Path,
) -> None:
    """Replay recorded logs against today's code: a deploy gate for CI.

    MODULE:WORKFLOW names the @workflow (MODULE alone: the workflow each log
    names, once MODULE is imported). The logs are exported files (LOG...), runs
    in a store (--id), or every run in flight there (--in-flight): check that the
    new code replays production's runs before deploying it. No step runs and
    nothing is written.

    Exit 0 when every log replays; 1 when one diverges (the first divergence is
    explained: position, what the code yielded and what the log recorded, with both
    call sites); 2 for bad input (a missing or malformed file, a bad MODULE:WORKFLOW).
    """
    if not (logs or run_ids or in_flight):
        raise UsageError("nothing to replay: give LOG files, --id ID or --in-flight")
    where = str(app_dir.resolve())
    if where not in sys.path:
        sys.path.insert(0, where)
    try:
        module, attr = import_spec(spec)
    except BadInput as exc:
        raise UsageError(str(exc)) from exc
    worst = 0
    for path in logs:
        try:
            log = _read_log(path)
        except BadInput as exc:
            echo(f"Error: {path}: {redact(str(exc))}", err=True)
            worst = max(worst, EXIT_BAD_INPUT)
            continue
        worst = max(worst, _replay_one(str(path), spec, module, attr, log, strict, check_result))
    if run_ids or in_flight:
        names: list[str] = []
        if in_flight:
            try:
                names = (
                    [resolve_workflow(spec, module, attr, Log()).workflow_name]
                    if attr
                    else sorted(_names_defined_in(module))
                )
            except BadInput as exc:
                raise UsageError(str(exc)) from exc
        with store_at(url) as store:
            ids = list(run_ids)
            if in_flight:
                for name in names:
                    rows = store.list_workflows(
                        WorkflowFilter(status=(Status.PENDING, Status.PARKED), name=name)
                    )
                    ids.extend(row.workflow_id for row in rows)
                if not ids:
                    echo(f"no runs of {', '.join(names) or spec} are in flight")
            # Workflow code must never take an encoded payload for a value: a run
            # encoded by a codec not passed fails, saying to pass --codec.
            readable = decoding(store, named_codec())
            for workflow_id in ids:
                log = export_run(readable, workflow_id)
                label = f"run {workflow_id}"
                worst = max(
                    worst, _replay_one(label, spec, module, attr, log, strict, check_result)
                )
    if worst:
        sys.exit(worst)


def _names_defined_in(module: Any) -> set[str]:
    """Names of the workflows a module defines (what `--in-flight` looks for)."""
    return {value.workflow_name for value in vars(module).values() if isinstance(value, Workflow)}


def _replay_one(
    label: str, spec: str, module: Any, attr: str, log: Log, strict: bool, check_result: bool
) -> int:
    """Replay one log and report it in a line or four; the exit code it calls for."""
    from replaykit.testing.replay import replay

    try:
        wf = resolve_workflow(spec, module, attr, log)
    except BadInput as exc:
        echo(f"Error: {label}: {redact(str(exc))}", err=True)
        return EXIT_BAD_INPUT
    run = f"workflow {wf.workflow_name!r}" + (
        f" (id {log.workflow_id!r})" if log.workflow_id else ""
    )
    try:
        result = replay(wf, log, strict=strict, check_result=check_result)
    except NonDeterminismError as drift:
        echo(f"{label}: DIVERGES at position {drift.position} of {run}")
        echo(f"  the code yielded  {drift.yielded}" + _at(drift.yielded_at))
        echo(f"  the log recorded  {drift.recorded}" + _at(drift.recorded_at))
        echo(f"  {one_line(drift)}")
        return EXIT_FAILED
    except Exception as exc:  # the code cannot even start on this log's inputs
        echo(f"{label}: FAILS on {run}: {one_line(exc)}")
        return EXIT_FAILED
    mode = "strict" if strict else "kind and name only"
    if result.finished:
        ending = f"ends {result.status.value} as recorded"
    else:
        ending = f"the run waits at {result.next_command}"
    echo(f"{label}: OK, {result.positions} recorded position(s) of {run} replay ({mode}); {ending}")
    return 0


def _at(site: str) -> str:
    return f"  at {site}" if site else ""


# -- inspect ---------------------------------------------------------------------------------


def _value_text(value: Any, width: int = 200) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a user's __repr__ may raise; the rest still prints
        text = f"<repr failed: {one_line(exc)}>"
    return text if len(text) <= width else text[: width - 3] + "..."


def _value_json(value: Any) -> dict[str, Any]:
    """A local for --json: its repr, and its JSON form when serde can encode it."""
    from replaykit import serde

    shown: dict[str, Any] = {"type": type(value).__qualname__, "repr": _value_text(value, 2000)}
    try:
        data = serde.encode(value)
        json.dumps(data)
    except Exception:
        return shown
    shown["value"] = data
    return shown


@cli.command("inspect")
@click.argument("spec", metavar="MODULE[:WORKFLOW]")
@click.argument("workflow_id", metavar="ID")
@click.option(
    "--at", "position", type=click.IntRange(min=0), required=True, help="The position to stop at."
)
@url_option
@click.option(
    "--strict/--no-strict",
    default=False,
    show_default=True,
    help="Also compare each replayed command's arguments with the log's.",
)
@click.option(
    "--app-dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory put first on sys.path before importing MODULE.",
)
@json_option
def inspect_command(
    spec: str,
    workflow_id: str,
    position: int,
    url: str,
    strict: bool,
    app_dir: Path,
    as_json: bool,
) -> None:
    """Replay run ID to position N: the command there, its outcome, the workflow's locals.

    For "why did this run take that branch?". MODULE[:WORKFLOW] names your code,
    as for `replay` (MODULE alone: the workflow the run names, once MODULE is
    imported). The run's log is read from the store and replayed up to the
    `yield` that took position N; the local variables are the generator's at
    that `yield`. Like `replay`, this runs the workflow's code between commands
    but no step, and writes nothing.

    Exit 1 for an unknown ID or a log today's code does not replay up to N; 2 for
    an N the log does not hold or a MODULE that cannot be imported.
    """
    from replaykit.testing.inspection import inspect_run

    where = str(app_dir.resolve())
    if where not in sys.path:
        sys.path.insert(0, where)
    try:
        module, attr = import_spec(spec)
    except BadInput as exc:
        raise UsageError(str(exc)) from exc
    with store_at(url) as store:
        get_row(store, workflow_id)
        log = export_run(decoding(store, named_codec()), workflow_id)
    try:
        wf = resolve_workflow(spec, module, attr, log)
    except BadInput as exc:
        raise UsageError(str(exc)) from exc
    if position >= len(log):
        held = f"positions 0 to {len(log) - 1}" if len(log) else "no position yet"
        raise UsageError(f"--at {position} is out of range: run {workflow_id!r} holds {held}")
    try:
        seen = inspect_run(wf, log, position, strict=strict)
    except NonDeterminismError as drift:
        raise CliError(one_line(drift)) from drift
    record = seen.record
    if as_json:
        echo_json(
            {
                "workflow_id": seen.workflow_id,
                "workflow": seen.workflow_name,
                "position": seen.position,
                "positions": seen.positions,
                "command": {
                    "kind": seen.command.kind,
                    "name": seen.command.name,
                    "describe": seen.command.describe(),
                    "call_site": seen.call_site,
                },
                "record": record.to_json(),
                "frames": [
                    {
                        "function": frame.function,
                        "call_site": frame.call_site,
                        "locals": {k: _value_json(v) for k, v in frame.locals.items()},
                    }
                    for frame in seen.frames
                ],
            }
        )
        return
    out = Printer()
    out.fields(
        [
            ("workflow", f"{seen.workflow_id} ({seen.workflow_name})", "bold"),
            ("position", f"{seen.position} of 0..{seen.positions - 1}", None),
            ("yielded", f"{seen.command.describe()} at {seen.call_site or '?'}", None),
            ("recorded", f"{record.describe()} at {record.call_site or '?'}", None),
            (
                "outcome",
                outcome_summary(record),
                "red" if isinstance(record.outcome, Failure) else None,
            ),
        ]
    )
    for index, frame in enumerate(seen.frames):
        out.line()
        where = " (where the yield is)" if index == len(seen.frames) - 1 and index else ""
        out.line(f"locals of {frame.function} at {frame.call_site}{where}:")
        if not frame.locals:
            out.line("  (none)")
        width = max((len(name) for name in frame.locals), default=0)
        for name, value in frame.locals.items():
            out.line(f"  {name:<{width}}  {_value_text(value)}")


# -- lint ------------------------------------------------------------------------------------


@cli.command("lint")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option
def lint_command(paths: tuple[Path, ...], as_json: bool) -> None:
    """Check the workflow bodies in PATHS (files, directories) for what breaks replay.

    Reads the code, imports and runs nothing. Reports clock reads, randomness, the
    environment, I/O, threads, set iteration, id()/hash(), changed globals, and
    slips (a command not yielded, a step's function called directly, a yield of
    something that is not a command, async def workflows), each as
    file:line:col, a code, what is wrong and the fix. `# replaykit: ignore[CODE]`
    on a line silences it there.

    Exit 0 when nothing is found; 1 on findings; 2 for a path that does not exist
    or a file that does not parse.
    """
    from replaykit.lint import lint_file, python_files

    try:
        files = python_files(paths)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    findings = []
    unreadable: list[tuple[str, str]] = []
    for path in files:
        try:
            findings.extend(lint_file(path))
        except SyntaxError as exc:
            where = f"{path}:{exc.lineno or 1}:{exc.offset or 1}"
            unreadable.append((where, f"syntax error: {exc.msg}"))
        except (OSError, UnicodeDecodeError) as exc:
            unreadable.append((str(path), f"cannot read it ({one_line(exc)})"))
    if as_json:
        echo_json(
            {
                "files": len(files),
                "findings": [finding.to_json() for finding in findings],
                "errors": [{"where": where, "error": why} for where, why in unreadable],
            }
        )
    else:
        for finding in findings:
            echo(finding.format())
        for where, why in unreadable:
            echo(f"Error: {where}: {why}", err=True)
        checked = f"{len(files) - len(unreadable)} file(s) checked"
        if unreadable:
            checked += f", {len(unreadable)} could not be read"
        echo(f"{len(findings)} finding(s), {checked}" if findings else f"no findings, {checked}")
    if unreadable:
        sys.exit(EXIT_BAD_INPUT)
    if findings:
        sys.exit(EXIT_FAILED)


# -- worker ---------------------------------------------------------------------------------


@cli.command("worker")
@click.argument("module")
@url_option
@click.option(
    "-q",
    "--queue",
    "queues",
    multiple=True,
    help="A queue to drain (repeat for several; default: every registered queue).",
)
@click.option("--executor-id", help="This process's executor id (default: host-pid-random).")
@click.option("--app-version", help="Pin the app version (default: derived from the code).")
@click.option("--max-workers", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--poll-interval", type=click.FloatRange(min=0.01), default=1.0, show_default=True)
@click.option(
    "--lease-seconds",
    type=click.FloatRange(min=0.1),
    help="Heartbeat lease: a worker silent this long is dead and its runs move (default 30).",
)
def worker_command(
    module: str,
    url: str,
    queues: tuple[str, ...],
    executor_id: str | None,
    app_version: str | None,
    max_workers: int,
    poll_interval: float,
    lease_seconds: float | None,
) -> None:
    """Import MODULE (your workflows and queues) and run them until SIGTERM or Ctrl-C.

    Unlike every other command this one runs workflow code: the application's,
    from the module the operator names.
    """
    from replaykit.runtime.worker import run_worker

    options: dict[str, Any] = {}
    if lease_seconds is not None:
        options["lease_seconds"] = lease_seconds
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        code = run_worker(
            module,
            url=url,
            queues=queues,
            executor_id=executor_id,
            app_version=app_version,
            max_workers=max_workers,
            poll_interval=poll_interval,
            **options,
        )
    except ModuleNotFoundError as exc:
        if exc.name is None or not module.startswith(exc.name):
            raise  # the module exists but one of its own imports is missing
        raise CliError(
            f"cannot import {module!r}: {exc}; run from your project's directory or set PYTHONPATH"
        ) from exc
    if code:
        sys.exit(code)


# -- the web UI -------------------------------------------------------------------------------


@cli.command(
    "ui",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.pass_context
def ui_command(ctx: click.Context) -> None:
    """A local web UI: runs, timelines, queues; cancel, resume, fork (the ui extra).

    Stands in for replaykit/ui/cli.py's command in the list of commands; the
    top group runs that command itself (`_RootGroup.resolve_command`).
    """
    _ui_command().main(args=ctx.args, prog_name=ctx.command_path, standalone_mode=False)


# -- the schema ----------------------------------------------------------------------------


def _status_text(store: Store, current: int | None, latest: int | None) -> str:
    kind = type(store).__name__
    if current is None:
        return f"{kind}: no schema to migrate"
    if current == 0:
        return f"{kind}: no schema yet: run `replaykit db migrate`"
    if latest is None or current == latest:
        return f"{kind}: schema version {current}, up to date"
    if current < latest:
        return f"{kind}: schema version {current}, behind {latest}: run `replaykit db migrate`"
    return f"{kind}: schema version {current} is newer than this replaykit knows ({latest})"


@cli.group(cls=Group)
def db() -> None:
    """The store's schema."""


@db.command("migrate")
@url_option
def migrate_command(url: str) -> None:
    """Create or upgrade the schema (idempotent; safe to run on every deploy)."""
    with store_at(url, create=True, check_schema=False) as store:
        before, _ = schema_status(store)
        migrate: Callable[[], Any] | None = getattr(store, "migrate", None)
        if migrate is not None:
            migrate()
        # SQLite has already created or migrated its schema when it was opened.
        current, latest = schema_status(store)
        text = _status_text(store, current, latest)
    if before is not None and current is not None and before != current:
        text += f" (migrated from version {before})"
    click.echo(redact(f"{text} ({url})"))


@db.command("status")
@url_option
@click.option("--check", is_flag=True, help="Exit 1 unless the schema is up to date.")
@json_option
def status_command(url: str, check: bool, as_json: bool) -> None:
    """The schema version of the store and the newest one this replaykit knows."""
    with store_at(url, check_schema=False) as store:
        current, latest = schema_status(store)
        text = _status_text(store, current, latest)
    up_to_date = current is None or latest is None or current == latest
    if as_json:
        echo_json(
            {
                "url": redact(url),
                "store": type(store).__name__,
                "version": current,
                "latest": latest,
                "up_to_date": up_to_date,
            }
        )
    else:
        click.echo(redact(f"{text} ({url})"))
    if check and not up_to_date:
        sys.exit(EXIT_FAILED)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: `replaykit ...`."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="replaykit")
