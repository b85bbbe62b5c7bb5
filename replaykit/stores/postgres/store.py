"""`PostgresStore`: many engines on many machines sharing one PostgreSQL database.

Everything lives in one schema of replaykit's own (default `replaykit`), which
replaykit creates and migrates (migrations.py). Connections come from a
`psycopg_pool.ConnectionPool` in autocommit mode, so a one-statement write is
one round trip (database.py).

The common write, completing a new position of a PENDING run, is one
statement: it locks the run's row (so a concurrent cancel or takeover waits
for it, or it for them), checks status and owner, inserts the record or
completes a pending one, and applies the side effects (shapes.py, single.py);
concurrent writers share a statement and a commit (batches.py). Only when it
writes nothing does a second query find out why. Writes that others may wait
on call `pg_notify` in the same transaction; `subscribe` LISTENs on the
schema's channel from a thread with its own connection (notes.py).

The store is a face: each method forwards to the room that holds its idea (the
forwarding both SQL stores share is `stores/_sql_face.py`), and every fixed
statement is named in statements.sql.
"""

from __future__ import annotations

from collections.abc import Callable

from replaykit.stores._sql_face import SqlFace
from replaykit.stores.postgres.batches import Batches
from replaykit.stores.postgres.cancels import Cancels
from replaykit.stores.postgres.claims import Claims
from replaykit.stores.postgres.creates import Creates
from replaykit.stores.postgres.database import DEFAULT_SCHEMA, Database, validate_schema
from replaykit.stores.postgres.holds import Holds
from replaykit.stores.postgres.layout import MAX_PARTITIONS
from replaykit.stores.postgres.messages import Messages
from replaykit.stores.postgres.migrations import Migrations
from replaykit.stores.postgres.notes import Notes
from replaykit.stores.postgres.reads import Reads
from replaykit.stores.postgres.runs import Runs
from replaykit.stores.postgres.schedules import Schedules
from replaykit.stores.postgres.single import Single
from replaykit.stores.postgres.step_beats import StepBeats
from replaykit.stores.postgres.writes import Writes

__all__ = ["PostgresStore"]


class PostgresStore(SqlFace):
    """The Store protocol on PostgreSQL, in schema `schema`; safe to share between threads.

    Creating the store connects, then creates or migrates the schema unless
    `auto_migrate=False` (then `schema_status()` tells where it stands and
    `migrate()` brings it up to date). An unreachable server raises
    `StoreUnavailable`. `partitions=N` lays a new schema's tables of runs out in N
    hash partitions by shard key (layout.py; docs/storage.md, "Past one server").
    """

    #: LISTEN/NOTIFY carries every note to every engine on the schema, whatever its
    #: process or machine (a note can be lost with a connection; waiters also poll).
    notes_reach_every_sharer = True

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_min: int = 1,
        pool_max: int = 20,
        connect_timeout: float = 10.0,
        auto_migrate: bool = True,
        partitions: int | None = None,
    ) -> None:
        validate_schema(schema)
        if partitions is not None and not (
            isinstance(partitions, int) and 2 <= partitions <= MAX_PARTITIONS
        ):
            raise ValueError(
                f"partitions must be a whole number from 2 to {MAX_PARTITIONS}, got "
                f"{partitions!r}; leave it out for plain tables"
            )
        if pool_min < 0 or pool_max < max(pool_min, 1):
            raise ValueError(
                f"need 0 <= pool_min <= pool_max and pool_max >= 1, got pool_min={pool_min}, "
                f"pool_max={pool_max}"
            )
        db = self._db = Database(url, schema, pool_min, pool_max, connect_timeout)
        self._notes = Notes(db)
        self._migrations = Migrations(db)
        self._single = Single(db)
        self._batches = Batches(db, self._single)
        # Group commit under the names the SQLite store gives it, which tests of
        # both stores drive directly.
        self._group = self._batches.group
        self._write_batch = self._batches.write_batch
        writes = Writes(db, self._single, self._batches)
        super().__init__(
            creates=Creates(db),
            reads=Reads(db),
            claims=Claims(db),
            holds=Holds(db),
            records=writes,
            finishes=writes,
            changes=Runs(db),
            messages=Messages(db),
            step_beats=StepBeats(db),
            schedules=Schedules(db),
            cancels=Cancels(db),
        )
        db.open()
        try:
            if auto_migrate:
                self._migrations.migrate_at_open()
                if partitions is not None:
                    self._migrations.lay_out(partitions)
        except BaseException:
            db.pool.close()
            raise

    def __repr__(self) -> str:
        return self._db.name

    @property
    def schema(self) -> str:
        return self._db.schema

    @property
    def channel(self) -> str:
        return self._db.channel

    def close(self) -> None:
        if self._notes.close():
            self._db.close()

    # -- schema and notes ------------------------------------------------------

    def schema_status(self) -> tuple[int, int]:
        """(the schema's migration version, the latest this replaykit knows); 0 if absent."""
        return self._migrations.status()

    def migrate(self) -> int:
        """Create the schema or bring it to the latest version; return that version.

        Safe to run from many processes at once: they queue on an advisory
        lock, and all but the first find nothing left to do.
        """
        return self._migrations.migrate()

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self._notes.subscribe(callback)
