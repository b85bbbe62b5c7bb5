"""The SQLite store's write transactions, shared by concurrent writers (group commit).

Every write is a body run on the writer connection inside `BEGIN IMMEDIATE`:
taking the write lock up front means a transaction never fails half-way on a
lock it could not upgrade. Writes that arrive while a transaction is under way
share the next one (`stores/_group.py`), each in a savepoint of its own, so one
body's failure undoes only its own writes. A body that raises `Unchanged` rolls
its writes back and hands its value to the caller.

The transaction control statements live here, not in statements.sql: they are
how this room drives SQLite, not a question the store answers (PostgreSQL's
store leaves them to psycopg).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from replaykit.errors import StoreError, StoreUnavailable
from replaykit.stores._group import FALL_BACK, GroupCommit, Slot
from replaykit.stores.sqlite.connections import Connections

__all__ = ["Body", "BodyFailed", "Notify", "Unchanged", "Writer"]

_log = logging.getLogger("replaykit.stores")

_T = TypeVar("_T")

#: A transaction body: given the writer connection inside the transaction.
Body = Callable[[sqlite3.Connection], Any]
#: How a room tells the store's subscribers what its committed write changed.
Notify = Callable[[Sequence[tuple[str, str]]], None]

_BEGIN = "BEGIN IMMEDIATE"
_COMMIT = "COMMIT"
_ROLLBACK = "ROLLBACK"
_SAVEPOINT = "SAVEPOINT one_write"
_ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO one_write"
_RELEASE_SAVEPOINT = "RELEASE one_write"

_IN_BODY = (
    "the store was called from inside a Transaction body on the same "
    "thread; use the connection the body was given instead"
)


class BodyFailed(Exception):
    """Carries the user's exception from a Transaction body past our error mapping."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


class Unchanged(Exception):
    """Roll the transaction back and hand `value` to the caller."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class Writer:
    """Runs write bodies in transactions on `connections.writer`, grouped where they meet."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self.inside_body = threading.local()
        self.group: GroupCommit[Body] = GroupCommit(self.write_batch, write_one=self.write_alone)

    def check_writable(self) -> None:
        """A write's refusals before it waits for a transaction: the store closed, or
        the call made from inside a Transaction's body."""
        self._connections.check_open()
        if getattr(self.inside_body, "active", False):
            raise StoreError(_IN_BODY)

    def write(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `body` in a BEGIN IMMEDIATE transaction; `Unchanged` rolls back quietly.

        Concurrent writers share transactions (group commit): each body runs
        inside a savepoint of its own, so one body's failure or `Unchanged`
        undoes only its own writes, and all of them commit together.
        """
        self.check_writable()
        outcome = self.group.submit(body)
        if outcome is FALL_BACK:
            return self.write_alone(body)
        return outcome  # type: ignore[no-any-return]

    def submit_many(self, bodies: list[Body]) -> list[Any]:
        """`bodies` into the group's transactions; FALL_BACK for those to write alone."""
        return self.group.submit_many(bodies)

    def write_batch(self, slots: Sequence[Slot[Body]]) -> None:
        """Group commit's batch writer: every body in one transaction, a savepoint each."""
        if len(slots) == 1:
            try:
                slots[0].set_result(self.write_alone(slots[0].item))
            except Exception as exc:
                slots[0].set_error(exc)
            return
        with self._connections.write_lock:
            conn = self._connections.writer
            try:
                conn.execute(_BEGIN)
            except sqlite3.OperationalError as exc:
                error = self._locked_error(exc)
                for slot in slots:
                    slot.set_error(error)
                return
            try:
                for slot in slots:
                    conn.execute(_SAVEPOINT)
                    try:
                        slot.set_result(slot.item(conn))
                    except Unchanged as unchanged:
                        conn.execute(_ROLLBACK_TO_SAVEPOINT)
                        slot.set_result(unchanged.value)
                    except sqlite3.Error:
                        # The database itself failed (I/O, disk full): SQLite may
                        # have rolled the whole transaction back. Start over,
                        # each write alone, where its failure is its own.
                        raise
                    except Exception as exc:
                        conn.execute(_ROLLBACK_TO_SAVEPOINT)
                        slot.set_error(exc)
                    conn.execute(_RELEASE_SAVEPOINT)
                conn.execute(_COMMIT)
            except sqlite3.Error as exc:
                self._rollback(conn)
                _log.debug(
                    "group commit of %d writes failed (%s); writing them alone", len(slots), exc
                )
                for slot in slots:
                    slot.fall_back()
            except BaseException:
                self._rollback(conn)
                raise

    def _locked_error(self, exc: sqlite3.OperationalError) -> StoreUnavailable:
        return StoreUnavailable(
            f"SQLite database {self._connections.path!r} stayed locked by another writer for "
            f"{self._connections.busy_timeout_ms} ms ({exc}); raise busy_timeout_ms or retry"
        )

    def write_alone(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `body` in a BEGIN IMMEDIATE transaction of its own."""
        self._connections.check_open()
        with self._connections.write_lock:
            conn = self._connections.writer
            if conn.in_transaction:
                raise StoreError(_IN_BODY)
            try:
                conn.execute(_BEGIN)
            except sqlite3.OperationalError as exc:
                raise self._locked_error(exc) from exc
            try:
                result = body(conn)
                conn.execute(_COMMIT)
            except Unchanged as unchanged:
                conn.execute(_ROLLBACK)
                return unchanged.value  # type: ignore[no-any-return]
            except BodyFailed as failed:
                self._rollback(conn)
                raise failed.error.with_traceback(failed.error.__traceback__) from None
            except sqlite3.OperationalError as exc:
                # Disk full, I/O error, a failed COMMIT: never leave the writer
                # inside a transaction that the next write would trip over.
                self._rollback(conn)
                raise StoreUnavailable(
                    f"SQLite database {self._connections.path!r} failed a write: {exc}"
                ) from exc
            except BaseException:
                self._rollback(conn)
                raise
            return result

    def _rollback(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute(_ROLLBACK)
            except sqlite3.Error:
                _log.exception("SQLite database %s could not roll back", self._connections.path)
