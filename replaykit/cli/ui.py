"""`replaykit ui`: the web UI's own command (replaykit/ui/cli.py), imported only when run."""

from __future__ import annotations

import click

from replaykit.cli.errors import CliError

__all__ = ["ui_command", "web_ui_command"]


# What the web UI needs beyond the command's own click and rich (the `ui` extra).
_UI_PACKAGES = ("starlette", "uvicorn", "jinja2")


def web_ui_command() -> click.Command:
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


@click.command(
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
    web_ui_command().main(args=ctx.args, prog_name=ctx.command_path, standalone_mode=False)
