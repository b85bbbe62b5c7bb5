"""The group commit's own connection: the leader writes on one it keeps between batches.

Only the thread leading a group commit writes its batch, and one thread leads at
a time, so the writes of every batch can share one connection that stays checked
out of the pool: a lone run's step then pays no pool checkout and return (a lock,
a queue, a status check: a fifth of its client CPU on PostgreSQL) per record.

The connection is kept only while the pool has room for another (`max_size` of 2
or more): with one connection in all, the other callers would wait for it. A
connection that failed, or was interrupted mid-statement, goes back to the pool,
which closes what it cannot reuse; the next batch takes a fresh one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["HeldConnection"]


class HeldConnection:
    """A connection from `pool` for whichever thread is leading the group commit."""

    def __init__(self, pool: Any, timeout: float) -> None:
        self._pool = pool
        self._timeout = timeout
        self._conn: Any = None
        self._leader: int | None = None
        self._lock = threading.Lock()  # between the leader and close()
        self.enabled = pool.max_size >= 2

    @contextmanager
    def leading(self) -> Iterator[None]:
        """While this thread writes a batch, `_connection()` hands it the kept connection."""
        if not self.enabled:
            yield
            return
        self._leader = threading.get_ident()
        try:
            yield
        finally:
            self._leader = None

    def mine(self) -> bool:
        """Is this thread the leader writing a batch (and may it hold a connection)?"""
        return self._leader == threading.get_ident()

    def get(self) -> Any:
        """The kept connection, taken from the pool if there is none (`PoolTimeout` if the
        pool has none free within its timeout, as a checkout would)."""
        conn = self._conn
        if conn is not None and conn.closed:
            self.drop()  # closed under us: the pool counts it out, and makes room for another
            conn = None
        if conn is None:
            conn = self._pool.getconn(timeout=self._timeout)
            with self._lock:
                self._conn = conn
        return conn

    def drop(self) -> None:
        """Give the connection back (it failed, or the store closes): the pool checks it."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                self._pool.putconn(conn)
            except Exception:
                conn.close()
