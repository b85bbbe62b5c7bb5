"""`SqliteStore`: the embedded default store, one SQLite file in WAL mode.

The store is a face over rooms, each holding one idea and the statements it runs
(statements.sql, by name): `connections.py` (the writer, the reader pool, their
pragmas), `writer.py` (BEGIN IMMEDIATE transactions shared by concurrent writers),
`migrations.py` (the schema), `runs.py` (creating runs), `claims.py` (queues,
heartbeats, executor holds), `reads.py` (runs and logs), `records.py` with
`refusals.py` (recording, and why a record was refused), `finishes.py`,
`lifecycle.py` (status, families, deadlines, generations, deletion),
`messages.py` (messages and events), `step_beats.py` (step heartbeats) and
`schedules.py`. Each method hands its call to the room that answers it; the
forwarding both SQL stores share is `stores/_sql_face.py`. `record_many` and
`finish_many` run in the transactions concurrent writers share, a savepoint a write.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from typing import TypeVar

from replaykit.stores._group import GroupCommit, Slot
from replaykit.stores._sql_face import SqlFace
from replaykit.stores._subscribers import Subscribers
from replaykit.stores.sqlite import migrations
from replaykit.stores.sqlite.cancels import Cancels
from replaykit.stores.sqlite.claims import Claims
from replaykit.stores.sqlite.connections import SYNCHRONOUS, Connections
from replaykit.stores.sqlite.finishes import Finishes
from replaykit.stores.sqlite.lifecycle import Lifecycle
from replaykit.stores.sqlite.messages import Messages
from replaykit.stores.sqlite.reads import Reads
from replaykit.stores.sqlite.records import Records
from replaykit.stores.sqlite.runs import Runs
from replaykit.stores.sqlite.schedules import Schedules
from replaykit.stores.sqlite.step_beats import StepBeats
from replaykit.stores.sqlite.writer import Body, Writer

__all__ = ["SqliteStore"]

_T = TypeVar("_T")


class SqliteStore(SqlFace):
    """The Store protocol on one SQLite database file; safe to share between threads.

    `synchronous` is SQLite's `PRAGMA synchronous` for the writer: `NORMAL`
    (the default) survives a process crash but may lose the last commits on a
    power cut; `FULL` survives that too, at the cost of an fsync per commit.
    `busy_timeout_ms` bounds how long a write waits for another process.
    """

    #: Notes reach only the engines of this process: a run deleted from another
    #: process is not heard of, so engines ask the file (see `Engine.handle`).
    notes_reach_every_sharer = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 5000,
    ) -> None:
        level = synchronous.upper()
        if level not in SYNCHRONOUS:
            raise ValueError(
                f"synchronous must be one of {', '.join(SYNCHRONOUS)} (SQLite's PRAGMA "
                f"synchronous), not {synchronous!r}"
            )
        if busy_timeout_ms < 0:
            raise ValueError(f"busy_timeout_ms must be >= 0, not {busy_timeout_ms}")
        self._path = os.fspath(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._subscribers = Subscribers()
        self._connections = Connections(
            self._path, synchronous=level, busy_timeout_ms=busy_timeout_ms, label=repr(self)
        )
        self._writing = Writer(self._connections)
        try:
            migrations.migrate(self._writing, self._path)
        except BaseException:
            self._connections.writer.close()
            raise
        notify = self._notify
        connections, writing = self._connections, self._writing
        claims = Claims(connections, writing, notify)
        self._records = Records(connections, writing, notify)
        super().__init__(
            creates=Runs(connections, writing, notify),
            reads=Reads(connections),
            claims=claims,
            holds=claims,
            records=self._records,
            finishes=Finishes(connections, writing, notify),
            changes=Lifecycle(writing, notify),
            messages=Messages(connections, writing, notify),
            step_beats=StepBeats(connections, writing),
            schedules=Schedules(connections, writing, notify),
            cancels=Cancels(connections, writing, notify),
        )

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"

    @property
    def path(self) -> str:
        return self._path

    def journal_mode(self) -> str:
        """SQLite's journal mode for this database (`wal` for a file database)."""
        return self._connections.journal_mode()

    def schema_status(self) -> tuple[int, int]:
        """(the database's schema version, the latest version this replaykit knows)."""
        return migrations.schema_status(self._connections)

    # The writer's parts under the names the tests drive them by.

    @property
    def _writer(self) -> sqlite3.Connection:
        return self._connections.writer

    @property
    def _group(self) -> GroupCommit[Body]:
        return self._writing.group

    def _write(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        return self._writing.write(body)

    def _write_batch(self, slots: Sequence[Slot[Body]]) -> None:
        self._writing.write_batch(slots)

    # -- notifications -------------------------------------------------------

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self._subscribers.add(callback)

    def _notify(self, notes: Sequence[tuple[str, str]]) -> None:
        for kind, key in notes:
            self._subscribers.deliver(kind, key)

    def close(self) -> None:
        self._connections.close()
