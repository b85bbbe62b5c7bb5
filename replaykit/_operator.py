"""Opening a store for an operator's tool: the `replaykit` command and the web UI.

An application opens its store with `open_store`, which creates and migrates
the schema. A tool an operator points at a database must not: a typo in a path
or in `?schema=` would create an empty store and show "no runs" instead of the
mistake. Both tools open their store here, so they refuse the same things with
the same words.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from replaykit import serde
from replaykit._text import redact
from replaykit.errors import ReplayKitError
from replaykit.serde import PayloadCodec
from replaykit.stores import parse_store_url
from replaykit.stores.base import Store
from replaykit.stores.codec import CodecStore

__all__ = [
    "CONNECT_TIMEOUT",
    "BadCodecSpec",
    "StoreRefused",
    "decoding",
    "load_codec",
    "open_for_operator",
    "require_schema",
    "schema_status",
]

# An operator waiting on an unreachable server wants the verdict soon; the URL's
# connect_timeout overrides this.
CONNECT_TIMEOUT = 5.0


class StoreRefused(ReplayKitError):
    """The store named cannot be used as it is; the message says why and what to do."""


def open_for_operator(url: str, *, create: bool) -> Store:
    """The store `url` names, parsed as `open_store` parses it, opened for an operator.

    PostgreSQL is opened without creating or migrating its schema (`open_store`
    migrates, which suits an application): an operator's typo in `?schema=` must
    not create an empty schema, and `db status` must see the schema as it is.
    A SQLite file that does not exist is created only with `create=True`.
    Raises `StoreRefused` for a missing file or driver.
    """
    parsed = parse_store_url(url)
    if parsed.kind == "postgres":
        try:
            return parsed.open(
                auto_migrate=False,
                pool_min=1,
                pool_max=2,
                connect_timeout=parsed.options.get("connect_timeout", CONNECT_TIMEOUT),
            )
        except ImportError as exc:
            raise StoreRefused(str(exc)) from exc
    file = parsed.target if parsed.kind == "sqlite" and parsed.target != ":memory:" else None
    if file is not None and not create and not os.path.exists(file):
        # Opening would create an empty database, and an operator in the wrong
        # directory would then see "no runs" instead of the real mistake.
        raise StoreRefused(
            f"no SQLite database at {file!r} ({os.path.abspath(file)}); "
            "pass --url or set REPLAYKIT_URL (`replaykit db migrate` creates one)"
        )
    return parsed.open()


def schema_status(store: Store) -> tuple[int | None, int | None]:
    """(the database's schema version, the newest this replaykit knows); None if unknown."""
    status = getattr(store, "schema_status", None)
    if status is None:
        return None, None
    value = status()
    if isinstance(value, tuple) and len(value) == 2:
        return value[0], value[1]
    current = getattr(value, "current", getattr(value, "version", None))
    latest = getattr(value, "latest", getattr(value, "target", None))
    return current, latest


def require_schema(store: Store, url: str) -> None:
    """Raise `StoreRefused` unless the store's schema is the one this replaykit knows."""
    current, latest = schema_status(store)
    if current is None or latest is None or current == latest:
        return
    where = redact(url)
    if current == 0:
        raise StoreRefused(
            f"no replaykit schema at {where}; check the URL and its ?schema=, or create it "
            "with `replaykit db migrate`"
        )
    if current < latest:
        raise StoreRefused(
            f"the schema at {where} is at version {current}, this replaykit needs {latest}: "
            "run `replaykit db migrate`"
        )
    raise StoreRefused(
        f"the schema at {where} is at version {current}, newer than this replaykit knows "
        f"({latest}); upgrade replaykit"
    )


# -- the payload codec an operator names -------------------------------------------------------


class BadCodecSpec(ReplayKitError, ValueError):
    """`--codec MODULE:ATTRIBUTE` names nothing usable; the message says what and why."""


_CODEC_FORM = (
    "--codec takes MODULE:ATTRIBUTE, the module and the name of your payload codec in it "
    "(e.g. myapp.crypto:codec)"
)


def load_codec(spec: str) -> PayloadCodec:
    """The payload codec `MODULE:ATTRIBUTE` names, imported as the operator asked.

    The operator names the module on the command line (stored data never
    chooses what is imported). The attribute is a codec, or a class or
    function that makes one when called with no arguments (one that reads its
    key from the environment, say). The current directory is searched first,
    as for `replaykit replay`. Raises `BadCodecSpec` saying what is wrong.
    """
    module_name, sep, attr = spec.strip().partition(":")
    if (
        not sep
        or not all(part.isidentifier() for part in module_name.split("."))
        or not all(part.isidentifier() for part in attr.split("."))
    ):
        raise BadCodecSpec(f"{_CODEC_FORM}, not {spec!r}")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BadCodecSpec(
            f"cannot import {module_name!r} for --codec {spec}: {exc}; run from your project's "
            "directory, or set PYTHONPATH"
        ) from exc
    except Exception as exc:
        raise BadCodecSpec(
            f"importing {module_name!r} for --codec {spec} failed: {type(exc).__name__}: {exc}"
        ) from exc
    found: Any = module
    for part in attr.split("."):
        if not hasattr(found, part):
            raise BadCodecSpec(f"module {module_name!r} has no attribute {attr!r} (--codec {spec})")
        found = getattr(found, part)
    if callable(found) and not callable(getattr(found, "encode", None)):
        try:
            found = found()
        except Exception as exc:
            raise BadCodecSpec(
                f"--codec {spec}: calling {attr}() to make the codec failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    elif isinstance(found, type):
        found = found()
    try:
        return serde.check_codec(found)
    except (TypeError, ValueError) as exc:
        raise BadCodecSpec(f"--codec {spec}: {exc}") from exc


def decoding(store: Store, codec: PayloadCodec | None) -> Store:
    """`store`, decoding payloads with `codec`; with none, refusing encoded ones.

    For what must never take an envelope for a value (a replay feeds stored
    inputs and outcomes to workflow code): a run encoded by a codec the
    operator did not pass fails with a `CodecError` that says to pass --codec.
    """
    return store if isinstance(store, CodecStore) else CodecStore(store, codec)
