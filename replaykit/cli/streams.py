"""What runs publish, read through the Client: `workflows get-event|stream`."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import click

from replaykit import serde
from replaykit._text import format_duration, json_text
from replaykit.cli.echo import echo
from replaykit.cli.errors import CliError, UsageError, one_line
from replaykit.cli.options import timedelta_option, url_option
from replaykit.cli.store import client_at, get_row
from replaykit.log import CLOSE_STREAM_KIND, WRITE_STREAM_KIND
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["get_event_command", "stream_command"]


@click.command("get-event")
@click.argument("workflow_id", metavar="ID")
@click.argument("key")
@url_option
@timedelta_option(
    "--timeout", help="Wait this long for the event to be set (30s, 5m); default: answer at once."
)
def get_event_command(workflow_id: str, key: str, url: str, timeout: timedelta | None) -> None:
    """Print the latest value run ID set for event KEY, as JSON.

    Exit 1 if the run has set no such event (after waiting --timeout for it).
    """
    seconds = None if timeout is None else timeout.total_seconds()
    with client_at(url) as client:
        row = get_row(client.store, workflow_id)
        if seconds:
            client.get_event(workflow_id, key, timeout=seconds)
        # The store says whether the event is set at all: a value of None is one.
        found, value = client.store.get_event(workflow_id, key)
    if not found:
        waited = f" after waiting {format_duration(seconds)}" if seconds else ""
        raise CliError(
            f"workflow {workflow_id!r} ({row.name}, {row.status.value}) has set no event "
            f"{key!r}{waited}" + ("" if seconds else "; --timeout DURATION waits for it")
        )
    encoded = serde.encoded_by(value)
    if encoded is not None:
        echo(
            f"note: the value is encoded by the payload codec {encoded!r}; pass "
            "replaykit --codec MODULE:ATTRIBUTE to decode it",
            err=True,
        )
    click.echo(json_text(json.dumps(value, ensure_ascii=False, default=str)))


@click.command("stream")
@click.argument("workflow_id", metavar="ID")
@click.argument("key")
@url_option
@click.option(
    "--follow",
    "-f",
    is_flag=True,
    help="Print new values as they come, until the stream is closed or the run ends.",
)
@click.option(
    "--start",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Skip the stream's first N values.",
)
@timedelta_option(
    "--timeout", help="With --follow: exit 1 when no new value comes for this long (30s, 5m)."
)
def stream_command(
    workflow_id: str, key: str, url: str, follow: bool, start: int, timeout: timedelta | None
) -> None:
    """Print the values run ID wrote to its stream KEY (WriteStream), one JSON value a line.

    Without --follow, what is recorded now; a note on stderr says when the stream
    is still open. With --follow, every value as it is written, until the run
    closes the stream or ends (a reader in another process is woken by
    PostgreSQL's notifications; on SQLite it looks every half second).
    """
    from replaykit.runtime.streams import recorded_values

    if timeout is not None and not follow:
        raise UsageError("--timeout bounds the wait of --follow: pass --follow too")

    def show(value: Any) -> None:
        click.echo(json_text(json.dumps(value, ensure_ascii=False, default=str)))

    with client_at(url) as client:
        row = get_row(client.store, workflow_id)
        if follow:
            seconds = None if timeout is None else timeout.total_seconds()
            shown = 0
            try:
                for value in client.read_stream(workflow_id, key, start, timeout=seconds):
                    show(value)
                    shown += 1
            except TimeoutError as exc:
                raise CliError(one_line(exc)) from None
            if not shown:  # the run ended: a key it never wrote was a mistake
                _check_stream_key(client.store, get_row(client.store, workflow_id), key)
            return
        values, closed, row = recorded_values(client.store, workflow_id, key, start)
        if not values and not closed:
            _check_stream_key(client.store, row, key, follow=False)
    for value in values:
        show(value)
    if not closed and not row.status.is_terminal:
        echo(
            f"stream {key!r} of {workflow_id!r} ({row.name}, {row.status.value}) is open: "
            "--follow prints the values still to come",
            err=True,
        )


def _check_stream_key(store: Store, row: WorkflowRow, key: str, *, follow: bool = True) -> None:
    """Exit 1 naming the run's streams when `key` is none of them (a typo, most often)."""
    kinds = (WRITE_STREAM_KIND, CLOSE_STREAM_KIND)
    keys = sorted({r.name for r in store.load_log(row.workflow_id) if r.kind in kinds})
    if key in keys:
        return
    has = f"its streams: {', '.join(repr(k) for k in keys)}" if keys else "it has no stream"
    later = "" if row.status.is_terminal or follow else "; --follow waits for what it writes later"
    raise CliError(
        f"workflow {row.workflow_id!r} ({row.name}, {row.status.value}) has written nothing to "
        f"stream {key!r}: {has}{later}"
    )
