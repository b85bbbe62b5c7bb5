"""`Room`: what a room of the PostgreSQL store is handed when the store is built."""

from __future__ import annotations

from replaykit.stores.postgres.database import Database

__all__ = ["Room"]


class Room:
    """A room that runs its statements, named and filled in for the store's schema
    (`db.sql`), on the store's database: its pool, its shards, its notifications."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._sql = db.sql
