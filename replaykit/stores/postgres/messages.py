"""A run's inbox and its events: sending, peeking, reading."""

from __future__ import annotations

from typing import Any

from replaykit.stores._checks import check_names, checked_topics
from replaykit.stores._rules import no_run_for_events, no_run_to_send_to
from replaykit.stores.base import Message
from replaykit.stores.postgres.database import Database
from replaykit.stores.postgres.rows import json_param, utc, utc_now

__all__ = ["Messages"]


class Messages:
    """send_message, peek_message, get_event, get_events."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._sql = db.sql

    def send_message(
        self,
        workflow_id: str,
        topic: str,
        payload: Any,
        *,
        idempotency_key: str | None = None,
        call_id: str | None = None,
        trace_context: str | None = None,
    ) -> bool:
        check_names(workflow_id, topic=topic, idempotency_key=idempotency_key)
        db = self._db
        statement = self._sql["send_message" if idempotency_key is None else "send_message_keyed"]
        found = db.one(
            statement,
            {
                "wid": workflow_id,
                "key": idempotency_key,
                "call": call_id,
                "topic": topic,
                "payload": json_param(payload),
                "trace": trace_context,
                "now": utc_now(),
                "channel": db.channel,
                "origin": db.origin,
            },
        )
        if not found or not found[0]:
            raise no_run_to_send_to(workflow_id)
        if found[1]:
            db.tell([("message", workflow_id)])
        return bool(found[1]) or bool(found[2])

    def peek_message(self, workflow_id: str, topic: str | tuple[str, ...]) -> Message | None:
        topics = checked_topics(workflow_id, topic)
        if isinstance(topic, str):
            found = self._db.one(self._sql["peek_message"], (workflow_id, topic))
        else:
            found = self._db.one(self._sql["peek_message_any"], (workflow_id, list(topics)))
        if found is None:
            return None
        on = topic if isinstance(topic, str) else str(found[4])
        return Message(found[0], workflow_id, on, found[1], utc(found[2]), found[3])

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        check_names(workflow_id, event_key=key)
        found = self._db.one(self._sql["get_event"], (workflow_id, key))
        if found is None:
            return False, None
        return True, found[0]

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        check_names(workflow_id)
        # One statement: the run's row tells "no such run" (no rows) from "no
        # events" (one row of NULLs), with no second read in between.
        rows = self._db.all(self._sql["get_events"], (workflow_id,))
        if not rows:
            raise no_run_for_events(workflow_id)
        return {key: value for key, value in rows if key is not None}
