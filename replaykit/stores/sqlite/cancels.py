"""Cancel requests (a run's first cancel, kept until a resume or a delete drops it) and
parent close policies (what becomes of a child run when its parent ends)."""

from __future__ import annotations

import sqlite3

from replaykit.stores._checks import check_names
from replaykit.stores.base import CancelRequest
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.room import Room
from replaykit.stores.sqlite.values import from_micros, to_micros

__all__ = ["Cancels"]


class Cancels(Room):
    """request_cancel, get_cancel_request, clear_cancel_request, set_parent_close and
    get_parent_close."""

    def request_cancel(self, workflow_id: str, request: CancelRequest) -> CancelRequest:
        check_names(workflow_id)
        values = (
            workflow_id,
            request.reason,
            to_micros(request.grace_until),
            to_micros(request.requested_at),
        )

        def write(conn: sqlite3.Connection) -> CancelRequest:
            conn.execute(SQL["request_cancel"], values)
            found = _read(conn, workflow_id)
            assert found is not None  # kept now, or held before
            return found

        kept = self._writer.write(write)
        if kept == request:  # the engine running the run hears of it
            self._notify([("cancel", workflow_id)])
        return kept

    def get_cancel_request(self, workflow_id: str) -> CancelRequest | None:
        check_names(workflow_id)
        with self._connections.read() as conn:
            return _read(conn, workflow_id)

    def set_parent_close(self, workflow_id: str, policy: str) -> None:
        check_names(workflow_id)
        self._writer.write(
            lambda conn: conn.execute(SQL["set_parent_close"], (workflow_id, policy))
        )

    def get_parent_close(self, workflow_id: str) -> str | None:
        check_names(workflow_id)
        with self._connections.read() as conn:
            found = conn.execute(SQL["get_parent_close"], (workflow_id,)).fetchone()
        return None if found is None else str(found[0])

    def clear_cancel_request(self, workflow_id: str) -> None:
        check_names(workflow_id)
        self._writer.write(lambda conn: conn.execute(SQL["clear_cancel_request"], (workflow_id,)))


def _read(conn: sqlite3.Connection, workflow_id: str) -> CancelRequest | None:
    found = conn.execute(SQL["get_cancel_request"], (workflow_id,)).fetchone()
    if found is None:
        return None
    reason, until, at = found
    grace_until, requested_at = from_micros(until), from_micros(at)
    assert grace_until is not None and requested_at is not None
    return CancelRequest(str(reason), grace_until, requested_at)
