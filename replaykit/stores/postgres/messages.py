"""A run's inbox and its events: sending, peeking, reading."""

from __future__ import annotations

import contextlib
from typing import Any, Unpack

import attrs
import psycopg

from replaykit.errors import StoreError
from replaykit.log import Status
from replaykit.stores._checks import check_names, checked_topics
from replaykit.stores._rows import inputs_value, shown
from replaykit.stores._rules import (
    checked_create_and_send,
    checked_send,
    no_run_for_events,
    no_run_to_send_to,
)
from replaykit.stores.base import EventWrite, Message, OutgoingMessage, WorkflowRow
from replaykit.stores.options import CreateAndSendOptions, SendOptions
from replaykit.stores.postgres.creates import insert_run, keyed
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import json_param, utc, utc_now, workflow_from_row

__all__ = ["Messages"]


class Messages(Room):
    """send_message, create_and_send, answer_message, peek_message, get_event, get_events."""

    def send_message(
        self, workflow_id: str, topic: str, payload: Any, **options: Unpack[SendOptions]
    ) -> bool:
        db = self._db
        message = checked_send(workflow_id, topic, payload, options)
        statement, params = self._send_params(message, options.get("call_id"))
        for fresh in (False, True):
            with db.connection() as conn:
                params["shard"] = db.shards.of(conn, workflow_id, fresh=fresh)
                found = db.telling(conn, statement, params, [("message", workflow_id)])
            if found and found[0]:
                break
        else:
            raise no_run_to_send_to(workflow_id)
        if found[1]:
            db.tell([("message", workflow_id)])
        return bool(found[1]) or bool(found[2])

    def _send_params(
        self, message: OutgoingMessage, call_id: str | None
    ) -> tuple[str, dict[str, Any]]:
        db = self._db
        keyed = message.idempotency_key is not None
        return self._sql["send_message_keyed" if keyed else "send_message"], {
            "wid": message.workflow_id,
            "key": message.idempotency_key,
            "call": call_id,
            "topic": message.topic,
            "payload": json_param(message.payload),
            "trace": message.trace_context,
            "now": utc_now(),
            "channel": db.channel,
            "origin": db.origin,
        }

    def create_and_send(
        self, row: WorkflowRow, message: OutgoingMessage, **options: Unpack[CreateAndSendOptions]
    ) -> tuple[WorkflowRow, bool, bool]:
        call_id, accept = options.get("call_id"), options.get("accept")
        stored = checked_create_and_send(row, message)
        db = self._db
        send, params = self._send_params(message, call_id)
        for _ in range(5):
            with db.connection() as conn, conn.transaction():
                # The create and the send's notifications go out at the commit.
                stored = keyed(db, conn, stored)
                created = insert_run(db, conn, stored)
                found = stored if created else self._found(conn, row.workflow_id)
                params["shard"] = (
                    stored.shard_key if created else db.shards.of(conn, row.workflow_id)
                )
                if found is None:
                    continue  # deleted since the insert found it: try again
                if not created and accept is not None:
                    accept(found)  # raising rolls the transaction back: nothing written
                sent = conn.execute(send, params).fetchone()
                if sent and sent[1]:
                    db.notify(conn, [("message", row.workflow_id)])
            if not sent or not sent[0]:
                continue  # deleted between the two statements: nothing was written
            delivered = bool(sent[1]) or bool(sent[2])
            notes = []
            if created and stored.status is Status.ENQUEUED and stored.queue is not None:
                notes.append(("enqueued", stored.queue))
            if sent[1]:
                notes.append(("message", row.workflow_id))
            db.tell(notes)
            return found, created, delivered
        raise StoreError(
            f"workflow id {row.workflow_id!r}: create_and_send kept racing with deletes"
        )

    def _found(self, conn: psycopg.Connection[Any], workflow_id: str) -> WorkflowRow | None:
        """The run in the way of the create, as `create_workflow` answers it, or None."""
        key = self._db.shards.stored(conn, workflow_id, fresh=True)
        if key is None:
            return None
        found = conn.execute(self._sql["get_workflow"], (key, workflow_id)).fetchone()
        if found is None:
            return None
        run = shown(workflow_from_row, found)
        if run.generation > 0 and not run.damaged and run.first_inputs is None:
            kept = conn.execute(self._sql["get_first_inputs"], ([key], [workflow_id])).fetchone()
            if kept is not None:
                # Unreadable: the start is compared with the current inputs only.
                with contextlib.suppress(Exception):
                    run = attrs.evolve(run, first_inputs=inputs_value(kept[1]))
        return run

    def answer_message(self, workflow_id: str, message_id: int, event: EventWrite) -> bool:
        check_names(workflow_id, event_key=event.key)
        db = self._db
        params = {
            "shard": db.shard(workflow_id),
            "wid": workflow_id,
            "mid": message_id,
            "key": event.key,
            "value": json_param(event.value),
        }
        with db.connection() as conn:
            found = db.telling(conn, self._sql["answer_message"], params, [("event", workflow_id)])
        answered = bool(found and found[0])
        if answered:
            db.tell([("event", workflow_id)])
        return answered

    def peek_message(self, workflow_id: str, topic: str | tuple[str, ...]) -> Message | None:
        topics = checked_topics(workflow_id, topic)
        if isinstance(topic, str):
            found = self._db.about(self._sql["peek_message"], workflow_id, topic, recheck=False)
        else:
            found = self._db.about(
                self._sql["peek_message_any"], workflow_id, list(topics), recheck=False
            )
        if found is None:
            return None
        on = topic if isinstance(topic, str) else str(found[4])
        return Message(found[0], workflow_id, on, found[1], utc(found[2]), found[3])

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        check_names(workflow_id, event_key=key)
        found = self._db.about(self._sql["get_event"], workflow_id, key, recheck=False)
        if found is None:
            return False, None
        return True, found[0]

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        check_names(workflow_id)
        # One statement: the run's row tells "no such run" (no rows) from "no
        # events" (one row of NULLs), with no second read in between.
        rows = self._db.about(self._sql["get_events"], workflow_id, many=True)
        if not rows:
            raise no_run_for_events(workflow_id)
        return {key: value for key, value in rows if key is not None}
