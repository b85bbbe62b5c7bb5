"""External completion from a shell, through the Client: `workflows complete|fail TOKEN`.

The token is what a run's `yield Awakeable(name)` gave (`workflows show ID` prints it as
that record's value). Each token takes one completion or one failure; a refused one
exits 1 with the reason (`UnknownToken`, `RunEnded`, `AlreadyCompleted`).
"""

from __future__ import annotations

from typing import Any

import click

from replaykit.cli.arguments import json_argument
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.options import json_option, url_option
from replaykit.cli.store import client_at
from replaykit.commands import AwakeableToken

__all__ = ["complete_command", "fail_command"]


@click.command("complete")
@click.argument("token")
@click.argument("value_json", metavar="VALUE_JSON", required=False)
@url_option
@json_option
def complete_command(token: str, value_json: str | None, url: str, as_json: bool) -> None:
    """Complete the awakeable TOKEN with VALUE_JSON (default: null), once.

    The run's `Await(token)` gets the value. A second completion, a token of a run
    that ended, or one no run handed out is refused, and nothing is sent.
    """
    value = None if value_json is None else json_argument(value_json, "VALUE_JSON", '{"ok": true}')
    with client_at(url) as client:
        client.complete(token, value)
    _done(token, "completed", as_json)


@click.command("fail")
@click.argument("token")
@click.argument("message")
@url_option
@json_option
def fail_command(token: str, message: str, url: str, as_json: bool) -> None:
    """Fail the awakeable TOKEN with MESSAGE, once.

    The run's `Await(token)` raises `AwakeableFailed(MESSAGE)`, which the workflow may
    catch. Refused as `complete` is.
    """
    with client_at(url) as client:
        client.fail(token, message)
    _done(token, "failed", as_json)


def _done(token: str, what: str, as_json: bool) -> None:
    parts = AwakeableToken.parse(token)
    assert parts is not None, "the client checked it"
    if as_json:
        answer: dict[str, Any] = {
            "token": token,
            "workflow_id": parts.workflow_id,
            "position": parts.position,
            what: True,
        }
        echo_json(answer)
        return
    echo(
        f"{what} the awakeable at position {parts.position} of {parts.workflow_id!r}; its "
        "Await takes it"
    )
