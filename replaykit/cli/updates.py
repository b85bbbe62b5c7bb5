"""Sending a run an update and printing its reply, through the Client: `workflows update`."""

from __future__ import annotations

import json
from datetime import timedelta

import click

from replaykit._text import json_text
from replaykit.cli.arguments import call_arguments
from replaykit.cli.echo import echo_json
from replaykit.cli.errors import CliError, UsageError, one_line
from replaykit.cli.options import json_option, timedelta_option, url_option
from replaykit.cli.store import client_at
from replaykit.errors import UpdateError, WorkflowNotFound

__all__ = ["update_command"]


@click.command("update")
@click.argument("workflow_id", metavar="ID")
@click.argument("name")
@click.argument("args_json", metavar="[ARGS_JSON]", required=False)
@url_option
@click.option("--kwargs", "kwargs_json", metavar="JSON", help="Keyword arguments, a JSON object.")
@click.option(
    "--update-id",
    help="The update's id (default: a new one): the same id again gets the same reply, so a "
    "call that lost its answer can be repeated safely.",
)
@timedelta_option(
    "--timeout",
    default="30s",
    show_default=True,
    help="How long to wait for the reply (30s, 5m); the request stays accepted after it.",
)
@json_option
def update_command(
    workflow_id: str,
    name: str,
    args_json: str | None,
    url: str,
    kwargs_json: str | None,
    update_id: str | None,
    timeout: timedelta | None,
    as_json: bool,
) -> None:
    """Send update NAME to run ID and print the run's reply, as JSON.

    ARGS_JSON is a JSON array of the update's positional arguments ('[3]'). The
    run takes it with ReceiveUpdate(NAME) and answers with Reply. Imports none
    of your code: the engine runs the update's validator before delivering it.
    Exit 1 when the run answers with an error (printed), refuses the update,
    has finished, or does not answer within --timeout.
    """
    args, kwargs = call_arguments(
        args_json,
        kwargs_json,
        of="the update's positional arguments",
        example="[3]",
        object_example='[{"sku": "a"}]',
        kwargs_example='{"amount": 3}',
        json_example="[3]",
    )
    with client_at(url) as client:
        try:
            reply = client.update(
                workflow_id, name, *args, timeout=timeout, update_id=update_id, **kwargs
            )
        except (UpdateError, WorkflowNotFound, UsageError):
            raise
        except (TypeError, ValueError) as exc:
            if not getattr(exc, "__notes__", None):
                raise UsageError(one_line(exc)) from exc  # our own refusal of the input
            raise _answered(name, workflow_id, exc) from exc
        except Exception as exc:
            raise _answered(name, workflow_id, exc) from exc
    if as_json:
        echo_json({"workflow_id": workflow_id, "update": name, "reply": reply})
        return
    click.echo(json_text(json.dumps(reply, ensure_ascii=False, default=str)))


def _answered(name: str, workflow_id: str, error: BaseException) -> CliError:
    """The run's (or its validator's) error, as the line a shell prints."""
    notes = "; ".join(getattr(error, "__notes__", ()))
    return CliError(
        f"update {name!r} to {workflow_id!r} failed with {type(error).__name__}: "
        f"{one_line(error)}" + (f" ({notes})" if notes else "")
    )
