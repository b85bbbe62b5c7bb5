"""Opening the store a command names, with the payload codec `replaykit --codec` named."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import click

from replaykit._operator import StoreRefused, open_for_operator, require_schema
from replaykit.cli.errors import CliError
from replaykit.serde import PayloadCodec
from replaykit.stores.base import Store, WorkflowRow
from replaykit.stores.codec import CodecStore

__all__ = ["CODEC_KEY", "client_at", "get_row", "named_codec", "open_store", "store_at"]


def open_store(url: str, *, create: bool) -> Store:
    """The store `url` names, opened as replaykit/_operator.py opens it for an operator."""
    try:
        return open_for_operator(url, create=create)
    except StoreRefused as exc:
        raise CliError(str(exc)) from exc


def _require_schema(store: Store, url: str) -> None:
    try:
        require_schema(store, url)
    except StoreRefused as exc:
        raise CliError(str(exc)) from exc


# Where the root command keeps the codec `--codec` named, for every subcommand's store.
CODEC_KEY = "replaykit.codec"


def named_codec() -> PayloadCodec | None:
    """The payload codec `replaykit --codec` named; None without one."""
    ctx = click.get_current_context(silent=True)
    found = None if ctx is None else ctx.find_root().meta.get(CODEC_KEY)
    return cast(PayloadCodec | None, found)


@contextmanager
def store_at(url: str, *, create: bool = False, check_schema: bool = True) -> Iterator[Store]:
    """The store, decoding payloads with `--codec`; without it, showing them encoded."""
    store = open_store(url, create=create)
    try:
        if check_schema:
            _require_schema(store, url)
        codec = named_codec()
        yield store if codec is None else CodecStore(store, codec)
    finally:
        store.close()


def get_row(store: Store, workflow_id: str) -> WorkflowRow:
    row = store.get_workflow(workflow_id)
    if row is None:
        raise CliError(
            f"no workflow run with id {workflow_id!r} (`replaykit workflows list` shows the runs)"
        )
    return row


@contextmanager
def client_at(url: str, **options: Any) -> Iterator[Any]:
    """A `Client` on the store the command opens (no schema created, a short timeout)."""
    from replaykit.client import Client

    with store_at(url) as store:
        # Without --codec, what the client reads is shown as stored (encoded),
        # and what it writes is plain, which engines with a codec read as well.
        if not isinstance(store, CodecStore):
            store = CodecStore(store, None, pass_encoded=True)
        client = Client(store, **options)
        try:
            yield client
        finally:
            client.close()
