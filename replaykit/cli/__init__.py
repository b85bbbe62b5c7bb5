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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

try:
    import click
except ImportError as _missing:  # pragma: no cover - depends on the installation
    raise SystemExit(
        "the replaykit command needs click and rich: pip install 'replaykit[cli]'"
    ) from _missing

from replaykit._operator import BadCodecSpec, decoding, load_codec, schema_status
from replaykit._text import format_duration as format_duration
from replaykit._text import outcome_summary, printable, redact, when_text
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import EXIT_BAD_INPUT, EXIT_FAILED, CliError, Group, UsageError, one_line
from replaykit.cli.fit import Fit
from replaykit.cli.options import UNITS, json_option, url_option, when_option, wide_option
from replaykit.cli.options import parse_duration as parse_duration
from replaykit.cli.options import parse_when as parse_when
from replaykit.cli.printer import Printer
from replaykit.cli.rows import iso
from replaykit.cli.specs import BadInput, import_spec, resolve_workflow
from replaykit.cli.store import CODEC_KEY, get_row, named_codec, open_store, store_at
from replaykit.cli.workflows import workflows
from replaykit.errors import NonDeterminismError
from replaykit.log import Failure, Log, Status
from replaykit.registry import Workflow
from replaykit.runtime.admin import export_run
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
from replaykit.stores.base import ScheduleState, Store, WorkflowFilter

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "cli", "main", "printable"]

# What tests imported from the one-module cli.py by its old name.
_open = open_store


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


cli.add_command(workflows)


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
