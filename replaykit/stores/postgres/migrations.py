"""The PostgreSQL schema's migrations: which ran, and running the rest under a lock.

`schema_version` records the migrations that ran; they run in one transaction
under an advisory lock, so engines starting together take turns and all but
the first find nothing left to do. The migration files stay in
`replaykit/stores/sql/postgres_00NN_*.sql`.
"""

from __future__ import annotations

import logging
import time
from importlib import resources
from typing import Any

import psycopg
from psycopg import sql

from replaykit.errors import StoreError, StoreUnavailable
from replaykit.stores.postgres.database import PoolExhausted
from replaykit.stores.postgres.layout import is_partitioned, partition_schema
from replaykit.stores.postgres.room import Room

__all__ = ["MIGRATIONS", "Migrations"]

_log = logging.getLogger("replaykit.stores")

# The ordered migrations; version N is MIGRATIONS[N - 1]. Never edit a shipped
# one: add the next file.
MIGRATIONS: tuple[str, ...] = (
    "postgres_0001_initial.sql",
    "postgres_0002_record_events.sql",
    "postgres_0003_send_calls.sql",
    "postgres_0004_schedules.sql",
    "postgres_0005_trace_context.sql",
    "postgres_0006_forks.sql",
    "postgres_0007_deadlines.sql",
    "postgres_0008_generations.sql",
    "postgres_0009_first_inputs.sql",
    "postgres_0010_registered.sql",
    "postgres_0011_heartbeats.sql",
    "postgres_0012_partitions.sql",
    "postgres_0013_cancel_requests.sql",
    "postgres_0014_attributes.sql",
    "postgres_0015_shard_keys.sql",
    "postgres_0016_queue_items.sql",
    "postgres_0017_wakes.sql",
)

# Bounds every lock a migration waits for: the advisory lock another engine
# holds while migrating, and the table locks that running engines hold.
_LOCK_TIMEOUT = "15s"
# Tries of the schema check at open when a connection drops under it (the
# migration is one transaction and looks at the version first, so a retry after
# a lost COMMIT finds nothing left to do): one dropped connection should not
# fail an engine's start. A server that is down fails the pool's open instead.
_OPEN_ATTEMPTS = 4


class Migrations(Room):
    """Where the schema stands, and bringing it to the latest version."""

    def migrate_at_open(self) -> None:
        delay = 0.05
        for attempt in range(1, _OPEN_ATTEMPTS + 1):
            try:
                self.migrate()
                return
            except PoolExhausted as exc:
                # No connection came in connect_timeout (the server went away after
                # the pool opened): waiting again helps nobody; say why, as an open does.
                raise self._db.unreachable(exc) from exc
            except StoreUnavailable as exc:
                if attempt == _OPEN_ATTEMPTS:
                    raise
                _log.warning(
                    "PostgreSQL at %s: the schema check at open lost its connection (%s); "
                    "trying again",
                    self._db.safe_url,
                    exc,
                )
                time.sleep(delay)
                delay *= 2

    def status(self) -> tuple[int, int]:
        """(the schema's migration version, the latest this replaykit knows); 0 if absent."""
        with self._db.connection() as conn:
            return self._current_version(conn), len(MIGRATIONS)

    def _current_version(self, conn: psycopg.Connection[Any]) -> int:
        exists = conn.execute(
            self._sql["schema_version_table_exists"], (f"{self._db.s}.schema_version",)
        ).fetchone()
        if not exists or not exists[0]:
            return 0
        found = conn.execute(self._sql["schema_version"]).fetchone()
        return int(found[0]) if found and found[0] is not None else 0

    def migrate(self) -> int:
        """Create the schema or bring it to the latest version; return that version.

        Safe to run from many processes at once: they queue on an advisory
        lock, and all but the first find nothing left to do.
        """
        db, statements = self._db, self._sql
        latest = len(MIGRATIONS)
        with db.connection() as conn:
            if self._current_version(conn) == latest:
                return latest
            try:
                with conn.transaction():
                    conn.execute(statements["limit_migration_lock_wait"], (_LOCK_TIMEOUT,))
                    conn.execute(statements["lock_transaction"], (db.key("migrate"),))
                    conn.execute(statements["create_schema"])
                    conn.execute(statements["create_schema_version"])
                    current = self._current_version(conn)
                    if current > latest:
                        raise StoreError(
                            f"schema {db.schema!r} at {db.safe_url} is at version "
                            f"{current}, newer than this replaykit knows ({latest}); upgrade "
                            "replaykit, or use another schema"
                        )
                    for version in range(current + 1, latest + 1):
                        conn.execute(self._migration(version))
                        conn.execute(statements["mark_migrated"], (version,))
            except psycopg.errors.LockNotAvailable as exc:
                raise StoreError(
                    f"could not migrate schema {db.schema!r} at {db.safe_url}: a lock "
                    f"was not granted within {_LOCK_TIMEOUT} ({exc}). Another "
                    "process may be migrating it, or long transactions hold its tables; "
                    "retry, or run `replaykit migrate` when traffic is low"
                ) from exc
        return latest

    def lay_out(self, partitions: int) -> None:
        """Partition the schema's tables of runs (layout.py) unless they are, under the
        migrations' lock, so engines opening together do it once."""
        db = self._db
        with db.connection() as conn:
            if is_partitioned(conn, db.schema):
                return
            with conn.transaction():
                conn.execute(self._sql["limit_migration_lock_wait"], (_LOCK_TIMEOUT,))
                conn.execute(self._sql["lock_transaction"], (db.key("migrate"),))
                if not is_partitioned(conn, db.schema):
                    partition_schema(conn, db.schema, partitions)

    def _migration(self, version: int) -> sql.Composed:
        name = MIGRATIONS[version - 1]
        text = resources.files("replaykit.stores").joinpath("sql", name).read_text("utf-8")
        return sql.SQL(text).format(schema=sql.Identifier(self._db.schema))
