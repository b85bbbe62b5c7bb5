"""The SQLite store's schema: its migrations (migrations.sql), run when a store opens.

The database's `PRAGMA user_version` says how many migrations it ran. A store
runs the missing ones in one write transaction with the version bump, so a
schema change and the version that describes it commit together; a database
newer than this replaykit is refused.
"""

from __future__ import annotations

import re
import sqlite3
from itertools import groupby

from replaykit.errors import StoreError
from replaykit.stores._statements import Statements
from replaykit.stores.sqlite.connections import Connections
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.values import first
from replaykit.stores.sqlite.writer import Writer

__all__ = ["MIGRATIONS", "migrate", "schema_status"]

_VERSION = re.compile(r"^v(?P<version>[0-9]+)_")


def _migrations(statements: Statements) -> tuple[tuple[str, ...], ...]:
    """The statements of each migration in order, from blocks named `v<N>_...`."""

    def version(name: str) -> int:
        match = _VERSION.match(name)
        if match is None:
            raise ValueError(f"{statements.source}: {name!r} does not start with v<N>_")
        return int(match["version"])

    grouped = [
        (number, tuple(statements[name] for name in names))
        for number, names in groupby(statements, key=version)
    ]
    if [number for number, _ in grouped] != list(range(1, len(grouped) + 1)):
        raise ValueError(f"{statements.source}: migrations must run v1, v2, ... in file order")
    return tuple(migration for _, migration in grouped)


#: Each migration's statements: a list, not a script, since `executescript` would
#: commit the surrounding BEGIN IMMEDIATE.
MIGRATIONS = _migrations(Statements("replaykit.stores.sqlite", "migrations.sql"))


def migrate(writer: Writer, path: str) -> None:
    """Bring the database at `path` to the latest schema (a write of its own)."""

    def apply(conn: sqlite3.Connection) -> None:
        version = first(conn.execute(SQL["schema_version"]))[0]
        if version > len(MIGRATIONS):
            raise StoreError(
                f"SQLite database {path!r} has schema version {version}, but this "
                f"replaykit knows versions up to {len(MIGRATIONS)}; upgrade replaykit"
            )
        for number in range(version, len(MIGRATIONS)):
            for statement in MIGRATIONS[number]:
                conn.execute(statement)
        if version != len(MIGRATIONS):
            # A pragma takes no bound value; the number is ours.
            conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")

    writer.write(apply)


def schema_status(connections: Connections) -> tuple[int, int]:
    """(the database's schema version, the latest version this replaykit knows)."""
    with connections.read() as conn:
        return first(conn.execute(SQL["schema_version"]))[0], len(MIGRATIONS)
