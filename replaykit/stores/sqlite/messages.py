"""Messages and events: delivering into a run's inbox (alone or with a record), reading them.

A keyed send uses its idempotency key once per run: a second send with the key
delivers nothing, and the same call sent again (a retry after a lost answer)
is told its message was delivered.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any, Unpack

import attrs

from replaykit.log import Status
from replaykit.stores._checks import check_names, checked_topics
from replaykit.stores._rows import decoded_json, event_value, message_payload, shown
from replaykit.stores._rules import (
    checked_create_and_send,
    checked_send,
    no_run_for_events,
    no_run_to_send_to,
)
from replaykit.stores.base import EventWrite, Message, OutgoingMessage, WorkflowRow
from replaykit.stores.options import CreateAndSendOptions, SendOptions
from replaykit.stores.sqlite.queries import SQL, id_set, keyed
from replaykit.stores.sqlite.room import Room
from replaykit.stores.sqlite.values import (
    dump,
    first,
    from_micros,
    load_inputs,
    now,
    to_micros,
    workflow_from_row,
    workflow_params,
)
from replaykit.stores.sqlite.writer import Unchanged

__all__ = ["Messages", "deliver"]


def deliver(conn: sqlite3.Connection, message: OutgoingMessage, call_id: str | None = None) -> bool:
    """A message into the run's inbox, in the caller's transaction; False if its key was used.

    The same call again raises `Unchanged(True)`: its earlier attempt delivered.
    """
    workflow_id, idempotency_key = message.workflow_id, message.idempotency_key
    if first(conn.execute(SQL["run_exists"], (workflow_id,))) is None:
        raise no_run_to_send_to(workflow_id)
    if idempotency_key is not None:
        fresh = conn.execute(SQL["use_send_key"], (workflow_id, idempotency_key, call_id)).rowcount
        if not fresh:
            if call_id is None:
                return False
            # The same call again: its earlier attempt delivered the message.
            raise Unchanged(
                first(
                    conn.execute(
                        SQL["send_key_used_by_call"], (workflow_id, idempotency_key, call_id)
                    )
                )
                is not None
            )
    conn.execute(
        SQL["send_message"],
        (
            workflow_id,
            message.topic,
            dump(message.payload),
            to_micros(now()),
            message.trace_context,
        ),
    )
    return True


def _found_run(conn: sqlite3.Connection, workflow_id: str) -> WorkflowRow:
    """The run in the way of a create, as `create_workflow` answers it (first inputs kept)."""
    row = shown(workflow_from_row, first(conn.execute(SQL["get_workflow"], (workflow_id,))))
    if row.generation > 0 and not row.damaged and row.first_inputs is None:
        kept = first(conn.execute(SQL["get_first_inputs"], (id_set([workflow_id]),)))
        if kept is not None:
            # Unreadable: the start is compared with the current inputs only.
            with contextlib.suppress(Exception):
                row = attrs.evolve(row, first_inputs=load_inputs(kept[1]))
    return row


class Messages(Room):
    """send_message, create_and_send, answer_message, peek_message, get_event and
    get_events."""

    def send_message(
        self, workflow_id: str, topic: str, payload: Any, **options: Unpack[SendOptions]
    ) -> bool:
        message, call_id = (
            checked_send(workflow_id, topic, payload, options),
            options.get("call_id"),
        )
        delivered = self._writer.write(lambda conn: deliver(conn, message, call_id))
        if delivered:
            self._notify([("message", workflow_id)])
        return delivered

    def create_and_send(
        self, row: WorkflowRow, message: OutgoingMessage, **options: Unpack[CreateAndSendOptions]
    ) -> tuple[WorkflowRow, bool, bool]:
        call_id, accept = options.get("call_id"), options.get("accept")
        checked = checked_create_and_send(row, message)

        def write(conn: sqlite3.Connection) -> tuple[WorkflowRow, bool, bool]:
            stored = keyed(conn, checked)
            created = conn.execute(SQL["create_workflow"], workflow_params(stored)).rowcount == 1
            found = stored if created else _found_run(conn, row.workflow_id)
            if not created and accept is not None:
                accept(found)  # raising rolls the transaction back: nothing written
            try:
                delivered = deliver(conn, message, call_id)
            except Unchanged as same_call:  # its earlier attempt created and delivered
                raise Unchanged((found, False, bool(same_call.value))) from None
            return found, created, delivered

        found, created, delivered = self._writer.write(write)
        notes = []
        if created and found.status is Status.ENQUEUED and found.queue is not None:
            notes.append(("enqueued", found.queue))
        if delivered:
            notes.append(("message", row.workflow_id))
        if notes:
            self._notify(notes)
        return found, created, delivered

    def answer_message(self, workflow_id: str, message_id: int, event: EventWrite) -> bool:
        check_names(workflow_id, event_key=event.key)
        value = dump(event.value)

        def write(conn: sqlite3.Connection) -> bool:
            taken = conn.execute(SQL["consume_messages"], (workflow_id, id_set([message_id])))
            if not taken.fetchall():
                return False
            conn.execute(SQL["set_event"], (workflow_id, event.key, value))
            return True

        answered = self._writer.write(write)
        if answered:
            self._notify([("event", workflow_id)])
        return answered

    def peek_message(self, workflow_id: str, topic: str | tuple[str, ...]) -> Message | None:
        topics = checked_topics(workflow_id, topic)
        with self._connections.read() as conn:
            if isinstance(topic, str):
                found = first(conn.execute(SQL["peek_message"], (workflow_id, topic)))
            else:
                found = first(
                    conn.execute(SQL["peek_message_any"], (workflow_id, dump(list(topics))))
                )
        if found is None:
            return None
        on = topic if isinstance(topic, str) else str(found[4])
        payload = message_payload(decoded_json, found[1], workflow_id, found[0], on)
        return Message(found[0], workflow_id, on, payload, from_micros(found[2]), found[3])

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        check_names(workflow_id, event_key=key)
        with self._connections.read() as conn:
            found = first(conn.execute(SQL["get_event"], (workflow_id, key)))
        if found is None:
            return False, None
        return True, event_value(decoded_json, found[0], workflow_id, key)

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        check_names(workflow_id)
        # One statement: the run's row tells "no such run" (no rows) from "no
        # events" (one row of NULLs), with no second read in between.
        with self._connections.read() as conn:
            rows = conn.execute(SQL["get_events"], (workflow_id,)).fetchall()
        if not rows:
            raise no_run_for_events(workflow_id)
        return {
            key: event_value(decoded_json, value, workflow_id, key)
            for key, value in rows
            if key is not None
        }
