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

A module per command group: root (the top group and its shared options),
workflows (the group and `list`), versions, show, operate (export, cancel,
resume, fork, delete, gc), start (start, send), streams (get-event, stream),
queues, schedules, replay, inspect, lint, worker, ui, db. What they share has
rooms of its own: errors (one-line failures, exit codes), echo (escaped output),
printer, fit (table fitting), options, store (opening it), rows (a run's shown
forms), specs (`module:workflow`). This module only re-exports.
"""

from __future__ import annotations

try:
    import click  # noqa: F401
except ImportError as _missing:  # pragma: no cover - depends on the installation
    raise SystemExit(
        "the replaykit command needs click and rich: pip install 'replaykit[cli]'"
    ) from _missing

from replaykit._text import format_duration as format_duration
from replaykit._text import printable
from replaykit.cli.errors import EXIT_BAD_INPUT, EXIT_FAILED
from replaykit.cli.options import parse_duration as parse_duration
from replaykit.cli.options import parse_when as parse_when
from replaykit.cli.root import cli, main
from replaykit.cli.store import open_store

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "cli", "main", "printable"]

# What tests imported from the one-module cli.py by its old name.
_open = open_store
