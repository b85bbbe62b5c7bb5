"""`replaykit ui`: the click command that starts the local web UI.

`replaykit ui` runs it (replaykit/cli/ui.py imports it only then, so listing the
commands needs none of the UI's packages); `python -m replaykit.ui` runs it on
its own. Nothing in the UI imports replaykit.cli: what both share is in
replaykit/_text.py, replaykit/_operator.py and replaykit/_operator_options.py.
"""

from __future__ import annotations

import click

from replaykit._operator import BadCodecSpec, load_codec
from replaykit._operator_options import codec_option, store_url_option
from replaykit.errors import ReplayKitError
from replaykit.ui._server import DEFAULT_HOST, DEFAULT_PORT, serve

__all__ = ["ui"]


@click.command("ui", context_settings={"help_option_names": ["-h", "--help"]})
@store_url_option("The store: sqlite:///path.db or postgresql://...[?schema=name].")
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    help="Address to listen on. Anything but loopback needs --token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: a free one).",
)
@click.option(
    "--token",
    envvar="REPLAYKIT_UI_TOKEN",
    show_envvar=True,
    help="A secret every request must carry (?token= once, then a cookie; or "
    "Authorization: Bearer). Required off loopback.",
)
@codec_option(
    "Your payload codec (Engine(codec=...)), to show encoded payloads decoded; "
    "without it they show as <encoded by NAME, N bytes>.",
)
def ui(url: str, host: str, port: int, token: str | None, codec_spec: str | None) -> None:
    """Browse runs, their timelines, children, inboxes, events and queues; cancel,
    resume and fork them. Runs no workflow code."""
    try:
        codec = None if not codec_spec else load_codec(codec_spec)
    except BadCodecSpec as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        serve(url, host=host, port=port, token=token or None, codec=codec)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    except (OSError, ReplayKitError) as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
