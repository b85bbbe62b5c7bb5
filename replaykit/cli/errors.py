"""How a command fails: one line on stderr and an exit code, never a traceback.

Exit codes: 0 success; 1 an operation failed (unknown id, unreachable store, a
replay that diverges); 2 bad usage or bad input (options, files, `module:workflow`).
"""

from __future__ import annotations

import os
from typing import Any

import click

from replaykit._text import printable, redact
from replaykit.errors import ReplayKitError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "CliError", "Group", "UsageError", "one_line"]


EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class CliError(click.ClickException):
    """One line on stderr and a non-zero exit; never a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(redact(message)))


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, (ReplayKitError, ValueError, LookupError)) and text:
        return text  # our own messages already say what happened and what to do
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


class UsageError(CliError):
    exit_code = EXIT_BAD_INPUT


# click >= 8.2 signals "no subcommand given: show the help" with this UsageError.
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


class Group(click.Group):
    """Turns any exception a command lets through into one line and exit 1.

    `REPLAYKIT_DEBUG=1` lets the traceback through, for reporting a bug.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if isinstance(exc, _NO_ARGS_IS_HELP):
                raise
            # click prints usage, a hint and the error on three lines; one will do.
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            raise UsageError(exc.format_message() + hint) from exc
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            # A reader that closed the pipe (`| head -1`): click's main points
            # stdout at nothing and exits 1, without a word.
            raise
        except Exception as exc:
            if os.environ.get("REPLAYKIT_DEBUG"):
                raise
            raise CliError(one_line(exc)) from exc
