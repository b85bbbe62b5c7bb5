"""The SQLite store's connections: one writer, a pool of readers, and their pragmas.

One writer connection, guarded by `write_lock`, carries every write: SQLite allows
one writer at a time anyway (sqlite/writer.py runs the transactions). Reads go to
a small pool of reader connections, opened as they are first needed; in WAL mode
they see the last committed state without waiting for the writer. A private
in-memory database exists only inside its one connection, so there every read
takes the writer's lock and its connection.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from replaykit.errors import StoreError, StoreUnavailable
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.values import first

__all__ = ["SYNCHRONOUS", "Connections"]

_log = logging.getLogger("replaykit.stores")

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


class Connections:
    """The database file's connections; `close` closes them all, once."""

    def __init__(self, path: str, *, synchronous: str, busy_timeout_ms: int, label: str) -> None:
        self.path = path
        self.label = label  # the store's repr, for errors about it
        self.synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self.in_memory = path == ":memory:" or path == ""
        self.write_lock = threading.RLock()
        self.closed = False
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self.writer = self._connect()
        try:
            self._configure_writer()
        except BaseException:
            self.writer.close()
            raise

    def check_open(self) -> None:
        if self.closed:
            raise StoreError(f"{self.label} is closed")

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,  # the writer issues BEGIN IMMEDIATE / COMMIT itself
                check_same_thread=False,  # every use is serialised by a lock or the pool
                cached_statements=256,
            )
        except sqlite3.OperationalError as exc:
            folder = os.path.dirname(self.path)
            if not self.in_memory and folder and not os.path.isdir(folder):
                raise StoreUnavailable(
                    f"cannot open SQLite database {self.path!r}: the directory {folder!r} "
                    "does not exist; create it first"
                ) from exc
            raise StoreUnavailable(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        # A pragma takes no bound value; the number was checked by the store.
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        return conn

    def _configure_writer(self) -> None:
        conn = self.writer
        if not self.in_memory:
            mode = self._switch_to_wal(conn)
            if str(mode).lower() != "wal":
                _log.warning(
                    "SQLite database %s could not switch to WAL mode (it is in %s mode); "
                    "readers will wait for writers",
                    self.path,
                    mode,
                )
        # A pragma takes no bound value; the level is one of SYNCHRONOUS.
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")

    def _switch_to_wal(self, conn: sqlite3.Connection) -> Any:
        """`PRAGMA journal_mode = WAL`, waiting out another process doing the same.

        Two processes opening a new database at once both switch it to WAL;
        SQLite does not call the busy handler for that switch, so the loser
        sees "database is locked" at once. Retry within `busy_timeout_ms`.
        """
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        delay = 0.005
        while True:
            try:
                return first(conn.execute(SQL["switch_to_wal"]))[0]
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise StoreUnavailable(
                        f"cannot switch SQLite database {self.path!r} to WAL mode: {exc}"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def journal_mode(self) -> str:
        with self.read() as conn:
            return str(first(conn.execute(SQL["journal_mode"]))[0])

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection to read from, back to the pool afterwards."""
        self.check_open()
        if self.in_memory:
            with self.write_lock:
                yield self.writer
            return
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._connect()
            with self._readers_lock:
                self._all_readers.append(conn)
        try:
            yield conn
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(f"SQLite database {self.path!r} failed a read: {exc}") from exc
        finally:
            self._readers.put(conn)

    def close(self) -> None:
        with self.write_lock:
            if self.closed:
                return
            self.closed = True
            self.writer.close()
        with self._readers_lock:
            readers, self._all_readers = self._all_readers, []
        for conn in readers:
            conn.close()
