"""Stores: where runs, logs, inboxes and events live.

`open_store(url)` picks one from a URL; `parse_store_url(url)` says what a URL
names without opening it, for callers that open it their own way (the
`replaykit` command opens PostgreSQL without migrating). `PostgresStore` is
imported on first use, so replaykit works without psycopg installed until a
PostgreSQL URL is opened.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from replaykit.stores.base import (
    EventWrite,
    Message,
    OutgoingMessage,
    StepHeartbeat,
    Store,
    WorkflowFilter,
    WorkflowRow,
)
from replaykit.stores.memory import MemoryStore
from replaykit.stores.sqlite import SqliteStore

if TYPE_CHECKING:
    from replaykit.stores.postgres import PostgresStore

__all__ = [
    "EventWrite",
    "MemoryStore",
    "Message",
    "OutgoingMessage",
    "SqliteStore",
    "StepHeartbeat",
    "Store",
    "StoreURL",
    "WorkflowFilter",
    "WorkflowRow",
    "open_store",
    "parse_store_url",
]

_URL_FORMS = (
    "memory://",
    "sqlite:///relative/path.db",
    "sqlite:////absolute/path.db",
    "sqlite:///:memory:",
    "postgresql://user:password@host:5432/dbname?schema=replaykit",
)
_SQLITE_OPTIONS = ("synchronous", "busy_timeout_ms")


def _postgres_store_class() -> type[PostgresStore]:
    try:
        from replaykit.stores.postgres import PostgresStore
    except ImportError as exc:
        raise ImportError(
            f"PostgreSQL support needs psycopg 3 and psycopg_pool ({exc}); install them with "
            "pip install 'replaykit[postgres]'"
        ) from exc
    return PostgresStore


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        return _postgres_store_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _masked(url: str) -> str:
    """`url` with its password, if it has one, as *** (a repr may reach a log)."""
    return repr(re.sub(r"(://[^:/@\s]+:)[^@\s]+@", r"\1***@", url))


def _bad_url(url: str, why: str) -> ValueError:
    forms = "\n  ".join(_URL_FORMS)
    return ValueError(f"cannot open a store from {url!r}: {why}. Accepted forms:\n  {forms}")


@attrs.frozen
class StoreURL:
    """What a store URL names: the kind of store and what opening it takes.

    `target` is a SQLite file's path (`:memory:` for none) or the PostgreSQL
    conninfo (without `schema`, which is replaykit's, not the server's);
    `options` are the store class's keyword arguments the URL sets.
    """

    kind: str  # "memory", "sqlite" or "postgres"
    target: str = attrs.field(default="", repr=lambda target: _masked(target))
    options: Mapping[str, Any] = attrs.field(factory=dict)

    def open(self, **overrides: Any) -> Store:
        """The store, with `overrides` added to (or replacing) the URL's options."""
        options = {**self.options, **overrides}
        if self.kind == "memory":
            return MemoryStore()
        if self.kind == "sqlite":
            return SqliteStore(self.target, **options)
        store: Store = _postgres_store_class()(self.target, **options)
        return store


def open_store(url: str) -> Store:
    """The store a URL names.

    - `memory://` — a `MemoryStore` (nothing persists);
    - `sqlite:///relative/path.db`, `sqlite:////absolute/path.db`,
      `sqlite:///:memory:` — a `SqliteStore`; `?synchronous=FULL` and
      `?busy_timeout_ms=N` set its options;
    - `postgresql://…` or `postgres://…` — a `PostgresStore`; `?schema=name`
      picks the schema (default `replaykit`) and is not passed to the server;
      `?connect_timeout=S` also bounds the wait for a pooled connection.
    """
    return parse_store_url(url).open()


def parse_store_url(url: str) -> StoreURL:
    """What `open_store(url)` would open; ValueError naming the accepted forms if none."""
    if not isinstance(url, str):
        raise TypeError(f"open_store() takes a URL string, not {type(url).__name__}")
    scheme, sep, _ = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise _bad_url(url, "it has no scheme")
    if scheme == "memory":
        if url.partition("://")[2]:
            raise _bad_url(url, "a memory store takes nothing after 'memory://'")
        return StoreURL("memory")
    if scheme == "sqlite":
        return _parse_sqlite(url)
    if scheme in ("postgresql", "postgres"):
        return _parse_postgres(url)
    raise _bad_url(url, f"unknown scheme {scheme!r}")


def _parse_sqlite(url: str) -> StoreURL:
    parts = urllib.parse.urlsplit(url)
    if parts.netloc:
        raise _bad_url(
            url,
            f"SQLite URLs name a file, not a host ({parts.netloc!r}); write three slashes "
            "for a relative path and four for an absolute one",
        )
    # urlsplit keeps the slash that ends '//'; what follows it is the path.
    path = urllib.parse.unquote(parts.path[1:] if parts.path.startswith("/") else parts.path)
    if not path:
        path = ":memory:"
    options: dict[str, Any] = {}
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key not in _SQLITE_OPTIONS:
            raise _bad_url(
                url,
                f"unknown SQLite option {key!r} (known: {', '.join(_SQLITE_OPTIONS)})",
            )
        if key == "busy_timeout_ms":
            try:
                options[key] = int(value)
            except ValueError:
                raise _bad_url(url, f"busy_timeout_ms must be an integer, not {value!r}") from None
        else:
            options[key] = value
    return StoreURL("sqlite", path, options)


def _parse_postgres(url: str) -> StoreURL:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    if len(schemas) > 1:
        raise _bad_url(url, "'schema' is given more than once")
    options: dict[str, Any] = {}
    if schemas:
        options["schema"] = schemas[0]
    for key, value in query:
        if key == "connect_timeout":  # libpq reads it too: it stays in the conninfo
            try:
                options["connect_timeout"] = float(value)
            except ValueError:
                raise _bad_url(
                    url, f"connect_timeout must be a number of seconds, not {value!r}"
                ) from None
    rest = urllib.parse.urlencode([(k, v) for k, v in query if k != "schema"])
    conninfo = urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, parts.path, rest, parts.fragment)
    )
    return StoreURL("postgres", conninfo, options)
