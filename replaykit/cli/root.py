"""The top group, `replaykit`: the options every command shares (--codec, --verbose).

It imports each command group's room and adds its group or command; `ui` is
resolved to the web UI's own command only when it is run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import click

from replaykit._operator import BadCodecSpec, load_codec
from replaykit._operator_options import codec_option
from replaykit.cli.db import db
from replaykit.cli.echo import echo
from replaykit.cli.errors import Group, UsageError
from replaykit.cli.inspect import inspect_command
from replaykit.cli.lint import lint_command
from replaykit.cli.queues import queues_group
from replaykit.cli.replay import replay_command
from replaykit.cli.schedules import schedules_group
from replaykit.cli.store import CODEC_KEY
from replaykit.cli.ui import ui_command, web_ui_command
from replaykit.cli.worker import worker_command
from replaykit.cli.workflows import workflows

__all__ = ["cli", "main"]


class _RootGroup(Group):
    """The top group: `ui` resolves to the web UI's own command when it is run."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] == "ui":
            return "ui", web_ui_command(), args[1:]
        return super().resolve_command(ctx, args)


@click.group(cls=_RootGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="replaykit", prog_name="replaykit")
@click.option("-v", "--verbose", is_flag=True, help="Log what the store and pool do.")
@codec_option(
    "Your payload codec (Engine(codec=...)): encoded payloads are shown decoded, "
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


for _command in (
    workflows,
    queues_group,
    schedules_group,
    replay_command,
    inspect_command,
    lint_command,
    worker_command,
    ui_command,
    db,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: `replaykit ...`."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="replaykit")
