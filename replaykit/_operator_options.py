"""The options both operator's tools take, the `replaykit` command (replaykit/cli) and
the web UI's (replaykit/ui/cli.py): the store and the payload codec, from the same
environment variables. A module of their own, for neither tool imports the other."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from replaykit.runtime.engine import DEFAULT_URL

__all__ = ["codec_option", "store_url_option"]

_F = TypeVar("_F", bound=Callable[..., object])


def store_url_option(help: str) -> Callable[[_F], _F]:
    """--url, the store (else $REPLAYKIT_URL, else the default); `help` says what of it."""
    return click.option(
        "--url",
        envvar="REPLAYKIT_URL",
        default=DEFAULT_URL,
        show_default=True,
        show_envvar=True,
        help=help,
    )


def codec_option(help: str) -> Callable[[_F], _F]:
    """--codec MODULE:ATTRIBUTE (else $REPLAYKIT_CODEC), into the parameter `codec_spec`;
    the tool loads it with `_operator.load_codec`."""
    return click.option(
        "--codec",
        "codec_spec",
        envvar="REPLAYKIT_CODEC",
        show_envvar=True,
        metavar="MODULE:ATTRIBUTE",
        help=help,
    )
