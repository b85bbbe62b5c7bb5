"""Executor holds: an executor id held by a session advisory lock, and who holds it.

A live engine holds its executor id's lock for as long as its session lasts, on
a connection of its own; `take_over` (claims.py) tries the same key, computed
by the server, so a live engine's runs are never moved however late its
heartbeat.
"""

from __future__ import annotations

import hashlib
import os
import select
import socket
import threading
from typing import Any

import psycopg

from replaykit.errors import StoreUnavailable
from replaykit.stores._checks import check_names
from replaykit.stores._holds import ExecutorHold
from replaykit.stores.postgres.database import Database

__all__ = ["Holds", "ServerHold", "executor_prefix"]


def executor_prefix(schema: str) -> bytes:
    """What an executor key's digest starts with; the take_over statement is given it too."""
    return f"replaykit\x00{schema}\x00executor\x00".encode()


class ServerHold:
    """An executor id held by a session advisory lock, on a connection of its own.

    The server drops the lock when that session ends, so a crashed engine's
    id comes free by itself; one whose connection was lost (a server restart)
    takes the lock again at its next `keep()`, unless another engine took the
    id meanwhile.
    """

    def __init__(self, holds: Holds, key: int, conn: psycopg.Connection[Any]) -> None:
        self._holds = holds
        self._key = key
        self._conn: psycopg.Connection[Any] | None = conn
        self._released = False
        self._lock = threading.Lock()
        self._outages = holds.outages()  # the store's count when the hold was last confirmed

    def check(self) -> bool:
        """`keep()`, asked of the server only after an outage since the last time: a
        failover drops the session lock with the old primary, and another engine may
        have taken the id on the new one before this engine writes there."""
        seen = self._holds.outages()
        conn = self._conn
        if seen == self._outages and conn is not None and not conn.broken and not self._released:
            return True
        held = self.keep()
        if held:
            self._outages = seen
        return held

    def keep(self) -> bool:
        with self._lock:
            if self._released:
                return False
            if self._conn is not None and not self._conn.closed:
                if not _heard_from(self._conn):
                    # An idle session's socket has nothing to read until the server
                    # ends it (a restart, a kill, a failover) or keepalives find it
                    # gone: then it reads as an error or the end. So an engine asks
                    # the server nothing at each beat to know its hold still stands.
                    return True
                try:
                    self._conn.execute(self._holds.sql["ping"])
                    return True
                except psycopg.Error:
                    self._conn.close()
            self._conn = None
            self._conn = self._holds.lock_executor(self._key)
            return self._conn is not None

    def release(self) -> None:
        with self._lock:
            self._released = True
            conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            # Unlocked before the answer comes back: a session's end drops its locks
            # too, but only once the server has noticed, a moment after close().
            conn.execute(self._holds.sql["unhold_executor"], (self._key,))
        except psycopg.Error:
            pass  # the session is gone already, and its lock with it
        finally:
            conn.close()


def _heard_from(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server sent an idle session something (most often its end)."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True  # no socket to look at: the ping finds out what is wrong
    return bool(readable)


class Holds:
    """Holding executor ids, and saying who holds one."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.sql = db.sql
        self._prefix = executor_prefix(db.schema)

    def outages(self) -> int:
        """How many connection failures the store has seen (`Database.outages`)."""
        return self._db.outages

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        check_names(executor_id=executor_id, app_version=app_version)
        self._db.check_open()
        key = self._executor_key(executor_id, app_version)
        conn = self.lock_executor(key)
        return None if conn is None else ServerHold(self, key, conn)

    def lock_executor(self, key: int) -> psycopg.Connection[Any] | None:
        """A new session holding the advisory lock `key`, or None if another session holds it."""
        db = self._db
        try:
            conn = psycopg.connect(
                db.url,
                autocommit=True,
                connect_timeout=max(int(db.connect_timeout), 1),
                # This side's keepalives: a server that vanished without a word makes
                # the socket read as an error in about 25 s (see `_heard_from`).
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=3,
                # Read by `executor_holder` for whoever finds the id held; the pid
                # is read now, not at import, for processes that fork.
                application_name=f"replaykit engine: host {socket.gethostname()}, "
                f"pid {os.getpid()}"[:63],
            )
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {db.safe_url} to hold an executor id: "
                f"{str(exc).strip().replace(db.url, db.safe_url)}"
            ) from exc
        try:
            # The server learns of a vanished client machine by keepalives only;
            # these bound how long a dead engine's id stays held to about 25 s.
            conn.execute(self.sql["keepalive_session"])
            got = conn.execute(self.sql["hold_executor"], (key,)).fetchone()
        except psycopg.Error as exc:
            conn.close()
            raise StoreUnavailable(
                f"PostgreSQL at {db.safe_url} failed while holding an executor id: {exc}"
            ) from exc
        if got is None or not got[0]:
            conn.close()
            return None
        return conn

    def _executor_key(self, executor_id: str, app_version: str) -> int:
        """The advisory-lock key of an executor id and version; the take_over statement agrees."""
        digest = hashlib.sha256(
            self._prefix + executor_id.encode() + b"\x00" + app_version.encode()
        ).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        check_names(executor_id=executor_id, app_version=app_version)
        key = self._executor_key(executor_id, app_version)
        found = self._db.one(
            self.sql["executor_holder"], ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF)
        )
        if found is None:
            return ""
        name, client, since = found
        parts = [str(name or "an unnamed session")]
        if client:
            parts.append(f"client address {client}")
        if since is not None:
            parts.append(f"connected since {since.isoformat(timespec='seconds')}")
        return ", ".join(parts)
