"""What reaches the terminal: stored data, escaped.

Escaping itself is replaykit/_text.py's (the web UI shows the same data): every
line that holds stored ids, names, errors or tracebacks goes through `printable`,
and JSON through `json_text`, for a terminal would obey the escape sequences
among them.
"""

from __future__ import annotations

import json
from typing import Any

import click

from replaykit._text import json_text, printable

__all__ = ["echo", "echo_json"]


def echo(text: str, *, err: bool = False) -> None:
    """click.echo for a line that holds stored data."""
    click.echo(printable(text), err=err)


def echo_json(data: Any) -> None:
    click.echo(json_text(json.dumps(data, indent=2, ensure_ascii=False, default=str)))
