"""Bulk actions from the shell: `workflows cancel|terminate|resume|delete` without an id
(a selection instead), and `workflows send-many`.

The selection's options (`selection_options`) are those of `workflows list`; with none,
the command is refused unless `--all` is given. `--dry-run` prints how many runs it
would touch; otherwise the count is asked to be confirmed (unless `--yes`), and the
action runs through the Client's bulk methods (runtime/bulk.py) in batches, a line of
progress on stderr after each. Interrupted, the same command again carries on: the runs
it reached are skipped and counted.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeGuard, TypeVar

import attrs
import click

from replaykit._text import printable
from replaykit.cli.arguments import json_argument
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import CliError, UsageError
from replaykit.cli.filters import parse_filter
from replaykit.cli.options import datetime_option, json_option, status_option, url_option
from replaykit.cli.store import client_at
from replaykit.runtime.bulk import ACTIONS, DEFAULT_BATCH, BulkResult, selects
from replaykit.stores.base import WorkflowFilter

__all__ = [
    "SELECTION_OPTIONS",
    "acts_on_one",
    "confirm",
    "run_bulk",
    "selection_options",
    "send_many_command",
]

_F = TypeVar("_F", bound=Callable[..., Any])

#: The parameters `selection_options` adds that a single-run command must not be given
#: (--yes it may: `workflows delete ID --yes`).
SELECTION_OPTIONS = (
    "statuses",
    "name",
    "version",
    "queue",
    "since",
    "until",
    "id_prefix",
    "parent",
    "where",
    "everything",
    "dry_run",
    "batch_size",
    "reason",
)


def selection_options(fn: _F) -> _F:
    """The options that select runs for a bulk action, and how it runs."""
    decorators = [
        status_option("Without ID: runs in this status (repeat for several)."),
        click.option("--name", help="Without ID: runs of this workflow name."),
        click.option("--version", help="Without ID: runs of this app version."),
        click.option("--queue", help="Without ID: runs of this queue."),
        datetime_option(
            "--since", help="Without ID: created at or after (ISO time, or a duration ago: 2h, 7d)."
        ),
        datetime_option(
            "--until", help="Without ID: created before (ISO time, or a duration ago)."
        ),
        click.option("--id-prefix", metavar="TEXT", help="Without ID: runs whose id starts so."),
        click.option("--parent", metavar="ID", help="Without ID: the children of this run."),
        click.option(
            "--where",
            metavar="FILTER",
            help="Without ID: runs matching this filter, such as \"customer = '42'\" "
            "(docs/operations.md, Filtering runs).",
        ),
        click.option(
            "--all",
            "everything",
            is_flag=True,
            help="Without ID and with no filter: act on every run of the store.",
        ),
        click.option("--dry-run", is_flag=True, help="Only print how many runs it would act on."),
        click.option(
            "--batch-size",
            type=click.IntRange(min=1),
            default=DEFAULT_BATCH,
            show_default=True,
            help="Runs read and acted on per batch.",
        ),
        click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation."),
    ]
    for decorate in reversed(decorators):
        fn = decorate(fn)
    return fn


def confirm(question: str, *, as_json: bool = False) -> None:
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


def _filter(options: dict[str, Any]) -> WorkflowFilter:
    since: datetime | None = options["since"]
    until: datetime | None = options["until"]
    return WorkflowFilter(
        status=options["statuses"],
        name=options["name"],
        app_version=options["version"],
        queue=options["queue"],
        parent_id=options["parent"],
        id_prefix=options["id_prefix"],
        since=since,
        until=until,
        where=None if options["where"] is None else parse_filter(options["where"]),
    )


def single_run(command: str, options: dict[str, Any]) -> None:
    """Refuse a selection's options given with a run's id."""
    given = [
        name
        for name in SELECTION_OPTIONS
        if options.get(name) not in (None, False, (), DEFAULT_BATCH)
    ]
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise UsageError(
            f"`workflows {command} ID` acts on that run alone; {flags} go with a bulk "
            f"{command}: drop the ID to act on every run the options select"
        )


def acts_on_one(
    workflow_id: str | None,
    command: str,
    url: str,
    options: dict[str, Any],
    keywords: Mapping[str, Any],
    *,
    as_json: bool,
    bulk_only: Mapping[str, Any] | None = None,
) -> TypeGuard[str]:
    """Whether `workflows COMMAND` acts on the one run `workflow_id` names: then the
    selection's options are refused beside the id, and so are `bulk_only`, the
    command's own options that go with a selection alone. Without an id, the bulk
    action is carried out here, through the Client's `COMMAND_workflows` method called
    with `keywords` besides the selection, and the command has nothing left to do."""
    if workflow_id is None:
        method = f"{command}_workflows"
        run_bulk(
            command,
            url,
            options,
            lambda client: functools.partial(getattr(client, method), **keywords),
            as_json=as_json,
        )
        return False
    single_run(command, {**options, **(bulk_only or {})})
    return True


def run_bulk(
    command: str,
    url: str,
    options: dict[str, Any],
    act: Callable[[Any], Callable[..., BulkResult]],
    *,
    as_json: bool,
) -> None:
    """Select, count, confirm and carry out a bulk action through a Client's method
    (`act(client)` returns the bound method, called with the selection's arguments)."""
    where = _filter(options)
    everything: bool = options["everything"]
    if not selects(where) and not everything:
        raise UsageError(
            f"`workflows {command}` with neither an ID nor a filter would act on every run; "
            "select runs (--status, --name, --version, --queue, --since, --until, --id-prefix, "
            "--parent, --where), or pass --all if every run is meant"
        )
    action = ACTIONS[command.removesuffix("-many")]
    with client_at(url) as client:
        method = act(client)

        def call(**more: Any) -> BulkResult:
            try:
                result: BulkResult = method(
                    where=where, all=everything, batch_size=options["batch_size"], **more
                )
            except (ValueError, TypeError) as exc:
                raise CliError(str(exc)) from exc
            return result

        counted = call(dry_run=True)
        if options["dry_run"]:
            _report(counted, as_json)
            return
        if counted.done == 0:
            if as_json:
                _report(attrs.evolve(counted, dry_run=False), as_json)
                return
            echo(
                f"nothing to {action.name}: {counted.matched} run(s) match, each done already "
                "or not open to it"
            )
            return
        if not options["yes"]:
            confirm(
                f"{action.name} {counted.done} run(s) ({counted.matched} match, "
                f"{counted.skipped} to skip)?",
                as_json=as_json,
            )

        def progress(tally: BulkResult) -> None:
            if not as_json:
                click.echo(
                    f"... {tally.matched} of {counted.matched} read: {tally.done} "
                    f"{action.done}, {tally.skipped} skipped, {tally.failed} failed",
                    err=True,
                )

        try:
            result = call(progress=progress)
        except KeyboardInterrupt:
            raise CliError(
                f"interrupted: the runs reached so far stay {action.done}; run the same "
                "command again to carry on (those are skipped and counted)"
            ) from None
    _report(result, as_json)


def _report(result: BulkResult, as_json: bool) -> None:
    if as_json:
        echo_json(
            {
                "action": result.action,
                "dry_run": result.dry_run,
                "matched": result.matched,
                "done": result.done,
                "skipped": result.skipped,
                "failed": result.failed,
                "failures": [{"workflow_id": w, "error": e} for w, e in result.failures],
            }
        )
        return
    echo(result.summary())
    for workflow_id, why in result.failures:
        echo(f"  {workflow_id}: {why}", err=True)
    if result.failed > len(result.failures):
        echo(f"  ... and {result.failed - len(result.failures)} more", err=True)


@click.command("send-many")
@click.argument("message_json", metavar="MESSAGE_JSON")
@url_option
@click.option("--topic", required=True, help="The topic the runs' Recv(topic) waits on.")
@click.option(
    "--key",
    help="An idempotency key: each run's message is keyed KEY:ID, so running the same "
    "command again delivers to each run once.",
)
@selection_options
@json_option
def send_many_command(
    message_json: str, url: str, topic: str, key: str | None, as_json: bool, **options: Any
) -> None:
    """Put MESSAGE_JSON in the inbox of every unfinished run selected, under --topic.

    Without --key every call delivers again; with it, a run that had it is skipped.
    """
    message = json_argument(message_json, "MESSAGE_JSON", '{"ok": true}')
    run_bulk(
        "send-many",
        url,
        options,
        lambda client: lambda **kw: client.send_many(message, topic, idempotency_key=key, **kw),
        as_json=as_json,
    )
