"""`replaykit replay`: replay recorded logs against today's code, a deploy gate for CI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from replaykit._operator import decoding
from replaykit._text import redact
from replaykit.cli.echo import echo
from replaykit.cli.errors import EXIT_BAD_INPUT, EXIT_FAILED, UsageError, one_line
from replaykit.cli.options import app_dir_option, store_url_option
from replaykit.cli.specs import BadInput, import_app, resolve_workflow
from replaykit.cli.store import named_codec, store_at
from replaykit.errors import NonDeterminismError
from replaykit.log import Log, Status
from replaykit.registry import Workflow
from replaykit.runtime.admin import export_run
from replaykit.stores.base import WorkflowFilter

__all__ = ["replay_command"]


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


@click.command("replay")
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
@store_url_option("The store that --id and --in-flight read (only read).")
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
@app_dir_option("MODULE")
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
    module, attr = import_app(spec, app_dir)
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
