"""Cancel requests (a run's first cancel, kept until a resume or a delete drops it) on
the run's shard, told at commit to the engine running it, wherever it runs; and parent
close policies (what becomes of a child run when its parent ends)."""

from __future__ import annotations

from datetime import UTC

from replaykit.stores._checks import check_names
from replaykit.stores.base import CancelRequest
from replaykit.stores.postgres.notes import NOTIFY_MAX_KEY
from replaykit.stores.postgres.room import Room

__all__ = ["Cancels"]


class Cancels(Room):
    """request_cancel, get_cancel_request, clear_cancel_request, set_parent_close and
    get_parent_close."""

    def request_cancel(self, workflow_id: str, request: CancelRequest) -> CancelRequest:
        check_names(workflow_id)
        db = self._db
        params = {
            "wid": workflow_id,
            "reason": request.reason,
            "until": request.grace_until,
            "at": request.requested_at,
        }
        with db.connection() as conn, conn.transaction():
            params["shard"] = db.shards.of(conn, workflow_id)
            found = conn.execute(self._sql["request_cancel"], params).fetchone()
            assert found is not None  # kept now, or held before
            kept = _request(found)
            # The engine running the run hears of it at commit, wherever it runs.
            if kept == request and len(workflow_id.encode()) < NOTIFY_MAX_KEY:
                conn.execute(self._sql["notify"], (db.channel, f"{db.origin}cancel:{workflow_id}"))
        if kept == request:
            db.tell([("cancel", workflow_id)])
        return kept

    def get_cancel_request(self, workflow_id: str) -> CancelRequest | None:
        check_names(workflow_id)
        found = self._db.about(self._sql["get_cancel_request"], workflow_id, recheck=False)
        return None if found is None else _request(found)

    def set_parent_close(self, workflow_id: str, policy: str) -> None:
        check_names(workflow_id)
        with self._db.connection() as conn:
            conn.execute(self._sql["set_parent_close"], (workflow_id, policy))

    def get_parent_close(self, workflow_id: str) -> str | None:
        check_names(workflow_id)
        found = self._db.one(self._sql["get_parent_close"], (workflow_id,))
        return None if found is None else str(found[0])

    def clear_cancel_request(self, workflow_id: str) -> None:
        check_names(workflow_id)
        with self._db.connection() as conn:
            key = self._db.shards.of(conn, workflow_id)
            conn.execute(self._sql["clear_cancel_request"], (key, workflow_id))


def _request(found: tuple[object, ...]) -> CancelRequest:
    reason, until, at = found
    assert isinstance(reason, str)
    # Sessions run in UTC: the stdlib's UTC, as the other stores return.
    return CancelRequest(reason, until.replace(tzinfo=UTC), at.replace(tzinfo=UTC))  # type: ignore[attr-defined]
