"""`replaykit inspect`: replay a run to a position and show the workflow's locals there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from replaykit._operator import decoding
from replaykit._text import outcome_summary
from replaykit.cli.echo import echo_json
from replaykit.cli.errors import CliError, UsageError, one_line
from replaykit.cli.options import app_dir_option, json_option, url_option
from replaykit.cli.printer import Printer
from replaykit.cli.specs import BadInput, import_app, resolve_workflow
from replaykit.cli.store import get_row, named_codec, store_at
from replaykit.errors import NonDeterminismError
from replaykit.log import Failure
from replaykit.runtime.admin import export_run

__all__ = ["inspect_command"]


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


@click.command("inspect")
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
@app_dir_option("MODULE")
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

    module, attr = import_app(spec, app_dir)
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
