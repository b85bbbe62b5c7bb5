"""A run's row changed outside its log: status, family, deadline, generations, deletion."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Unpack

from replaykit.errors import WorkflowNotFound
from replaykit.log import Status
from replaykit.stores import _generations as generations
from replaykit.stores._attributes import checked_attributes, encoded_attributes
from replaykit.stores._checks import check_names, storable_error
from replaykit.stores._families import Member, family_from_rows, moving
from replaykit.stores._rules import checked_status, stays_pending
from replaykit.stores.base import WorkflowRow
from replaykit.stores.options import Continuation, Rewind, StatusChange
from replaykit.stores.sqlite.queries import SQL, id_set
from replaykit.stores.sqlite.values import (
    dump,
    first,
    to_micros,
    workflow_from_row,
    workflow_params,
)
from replaykit.stores.sqlite.values import now as utc_now
from replaykit.stores.sqlite.writer import Notify, Unchanged, Writer

__all__ = ["Lifecycle"]

# delete_workflow's statements, in the order they run: the run's row first (it
# says whether there was a run), then what hangs off it.
_DELETE_WHAT_IT_HELD = tuple(
    SQL[name]
    for name in (
        "delete_workflow_records",
        "delete_workflow_messages",
        "delete_workflow_events",
        "delete_workflow_send_keys",
        "delete_workflow_step_heartbeats",
        "clear_cancel_request",
        "clear_parent_close",
        "delete_archived_logs",
        "delete_archived_generations",
    )
)


class Lifecycle:
    """continue_workflow, set_status, move_family, set_deadline, bump_recovery, delete_workflow."""

    def __init__(self, writer: Writer, notify: Notify) -> None:
        self._writer = writer
        self._notify = notify

    def continue_workflow(
        self, workflow_id: str, inputs: Any, **options: Unpack[Continuation]
    ) -> WorkflowRow:
        generation, executor_id, now = options["generation"], options["executor_id"], options["now"]
        archived_id = generations.check_continue_args(workflow_id, generation, executor_id)
        inputs_text = None if inputs is None else dump(inputs)
        stamp = to_micros(now)

        def move(conn: sqlite3.Connection) -> WorkflowRow:
            found = first(conn.execute(SQL["get_workflow"], (workflow_id,)))
            other = first(conn.execute(SQL["get_workflow"], (archived_id,)))
            row, archived = generations.stored_pair(found, other, workflow_from_row)
            refusal = generations.continue_refusal(
                row, workflow_id, inputs, generation, executor_id, archived
            )
            assert row is not None
            if refusal == generations.ALREADY_CONTINUED:
                raise Unchanged(row)
            # The archived generation is a run's row of its own, under its own id.
            if not conn.execute(
                SQL["create_workflow"], workflow_params(generations.archived_generation(row, now))
            ).rowcount:
                raise generations.id_taken(row, archived_id)
            conn.execute(SQL["archive_log"], (archived_id, workflow_id))
            conn.execute(SQL["continue_workflow"], (inputs_text, stamp, workflow_id, generation))
            return generations.next_generation(row, inputs, now)

        live = self._writer.write(move)
        if live.generation == generation + 1:
            # The archived generation finished, and the run's streams of it ended.
            self._notify([("finished", archived_id), ("stream", workflow_id)])
        return live

    def rewind_workflow(
        self, workflow_id: str, position: int, **options: Unpack[Rewind]
    ) -> WorkflowRow:
        archived_id = generations.check_rewind_args(workflow_id, options)
        generation = options["generation"]
        stamp = to_micros(options["now"])

        def rewind(conn: sqlite3.Connection) -> WorkflowRow:
            found = first(conn.execute(SQL["get_workflow"], (workflow_id,)))
            other = first(conn.execute(SQL["get_workflow"], (archived_id,)))
            row, archived = generations.stored_pair(found, other, workflow_from_row)
            row = generations.check_rewind(row, workflow_id, position, generation, None, archived)
            attempt, live = generations.rewound(row, **options)
            if not conn.execute(SQL["create_workflow"], workflow_params(attempt)).rowcount:
                raise generations.id_taken(row, archived_id)
            # A refusal below raises, and the write rolls back.
            moved = conn.execute(SQL["archive_log"], (archived_id, workflow_id)).rowcount
            generations.check_rewind_position(row, position, moved)
            conn.execute(SQL["rewind_copy_log"], (workflow_id, archived_id, position))
            conn.execute(
                SQL["rewind_workflow"],
                (options["executor_id"], options["app_version"], stamp, workflow_id, generation),
            )
            return live

        live = self._writer.write(rewind)
        self._notify([("finished", archived_id), ("resumed", workflow_id)])
        return live

    def set_status(self, workflow_id: str, status: Status, **options: Unpack[StatusChange]) -> bool:
        status = checked_status(workflow_id, status, options)
        only_from = options.get("only_from")
        allowed = None
        if only_from is not None:
            allowed = [Status(s).value for s in only_from]
            if not allowed:
                return False
        params = (
            status.value,
            storable_error(options.get("error", "")),
            to_micros(utc_now()),
            options.get("executor_id"),
            options.get("app_version"),
            options.get("reset_recovery", False),
            workflow_id,
            None if allowed is None else id_set(allowed),
        )

        changed = self._writer.write(
            lambda conn: bool(conn.execute(SQL["set_status"], params).rowcount)
        )
        if changed and status.is_terminal:
            self._notify([("finished", workflow_id)])
        elif changed and status is Status.PENDING and not stays_pending(options):
            self._notify([("resumed", workflow_id)])
        return changed

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        check_names(workflow_id, executor_id=executor_id, app_version=app_version)
        stamp = to_micros(utc_now())

        def move(conn: sqlite3.Connection) -> list[Member]:
            found = conn.execute(SQL["lock_family"], (workflow_id,)).fetchall()
            family = family_from_rows(workflow_id, found)
            moved = moving(workflow_id, family, app_version)
            conn.executemany(
                SQL["move_family_member"],
                [
                    (app_version, stamp, m.status.value, executor_id, m.status.value, m.workflow_id)
                    for m in moved
                ],
            )
            return moved

        moved = self._writer.write(move)
        notes = [("resumed", m.workflow_id) for m in moved if m.status is Status.PENDING]
        queues = (m.queue for m in moved if m.status is Status.ENQUEUED and m.queue is not None)
        self._notify(notes + [("enqueued", queue) for queue in dict.fromkeys(queues)])
        return [m.workflow_id for m in moved]

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        check_names(workflow_id)
        params = (to_micros(deadline), timeout, workflow_id)
        return self._writer.write(
            lambda conn: bool(conn.execute(SQL["set_deadline"], params).rowcount)
        )

    def set_attributes(self, workflow_id: str, attributes: Mapping[str, Any]) -> bool:
        check_names(workflow_id)
        params = (dump(encoded_attributes(checked_attributes(attributes))), workflow_id)
        return self._writer.write(
            lambda conn: bool(conn.execute(SQL["set_attributes"], params).rowcount)
        )

    def bump_recovery(self, workflow_id: str) -> int:
        check_names(workflow_id)

        def bump(conn: sqlite3.Connection) -> int:
            found = first(conn.execute(SQL["bump_recovery"], (workflow_id,)))
            if found is None:
                raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
            return int(found[0])

        return self._writer.write(bump)

    def delete_workflow(self, workflow_id: str) -> bool:
        check_names(workflow_id)

        def delete(conn: sqlite3.Connection) -> bool:
            if not conn.execute(SQL["delete_workflow"], (workflow_id,)).rowcount:
                return False
            for statement in _DELETE_WHAT_IT_HELD:
                conn.execute(statement, (workflow_id,))
            return True

        deleted = self._writer.write(delete)
        if deleted:
            self._notify([("deleted", workflow_id)])
        return deleted
