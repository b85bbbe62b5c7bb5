"""`replaykit db migrate|status`: the store's schema."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from replaykit._operator import schema_status
from replaykit._text import redact
from replaykit.cli.echo import echo_json
from replaykit.cli.errors import EXIT_FAILED, Group
from replaykit.cli.options import json_option, url_option
from replaykit.cli.store import store_at
from replaykit.stores.base import Store

__all__ = ["db", "migrate_command", "status_command"]


def _status_text(store: Store, current: int | None, latest: int | None) -> str:
    kind = type(store).__name__
    if current is None:
        return f"{kind}: no schema to migrate"
    if current == 0:
        return f"{kind}: no schema yet: run `replaykit db migrate`"
    if latest is None or current == latest:
        return f"{kind}: schema version {current}, up to date"
    if current < latest:
        return f"{kind}: schema version {current}, behind {latest}: run `replaykit db migrate`"
    return f"{kind}: schema version {current} is newer than this replaykit knows ({latest})"


@click.group("db", cls=Group)
def db() -> None:
    """The store's schema."""


@db.command("migrate")
@url_option
def migrate_command(url: str) -> None:
    """Create or upgrade the schema (idempotent; safe to run on every deploy)."""
    with store_at(url, create=True, check_schema=False) as store:
        before, _ = schema_status(store)
        migrate: Callable[[], Any] | None = getattr(store, "migrate", None)
        if migrate is not None:
            migrate()
        # SQLite has already created or migrated its schema when it was opened.
        current, latest = schema_status(store)
        text = _status_text(store, current, latest)
    if before is not None and current is not None and before != current:
        text += f" (migrated from version {before})"
    click.echo(redact(f"{text} ({url})"))


@db.command("status")
@url_option
@click.option("--check", is_flag=True, help="Exit 1 unless the schema is up to date.")
@json_option
def status_command(url: str, check: bool, as_json: bool) -> None:
    """The schema version of the store and the newest one this replaykit knows."""
    with store_at(url, check_schema=False) as store:
        current, latest = schema_status(store)
        text = _status_text(store, current, latest)
    up_to_date = current is None or latest is None or current == latest
    if as_json:
        echo_json(
            {
                "url": redact(url),
                "store": type(store).__name__,
                "version": current,
                "latest": latest,
                "up_to_date": up_to_date,
            }
        )
    else:
        click.echo(redact(f"{text} ({url})"))
    if check and not up_to_date:
        sys.exit(EXIT_FAILED)
