"""Changing runs as a whole: their status, their family's version, their deadline, their
next generation, and deleting them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Unpack

import psycopg

from replaykit.errors import WorkflowNotFound
from replaykit.log import Status
from replaykit.stores import _generations as generations
from replaykit.stores._attributes import checked_attributes, encoded_attributes
from replaykit.stores._checks import check_names, storable_error
from replaykit.stores._families import family_from_rows, moving
from replaykit.stores._rules import checked_status, stays_pending
from replaykit.stores.base import WorkflowRow
from replaykit.stores.options import Continuation, Rewind, StatusChange
from replaykit.stores.postgres.items import enqueue_items
from replaykit.stores.postgres.notes import NOTIFY_MAX_KEY
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import json_param, utc_now, workflow_from_row

__all__ = ["Runs"]


class Runs(Room):
    """continue_workflow, rewind_workflow, set_status, move_family, set_deadline,
    bump_recovery, delete."""

    def continue_workflow(
        self, workflow_id: str, inputs: Any, **options: Unpack[Continuation]
    ) -> WorkflowRow:
        generation, executor_id, now = options["generation"], options["executor_id"], options["now"]
        db, statements = self._db, self._sql
        archived_id = generations.check_continue_args(workflow_id, generation, executor_id)
        with db.connection() as conn, conn.transaction():
            # The live row's lock first, as record() and finish_workflow() take it: a
            # writer that wants to record into this generation waits, then finds its
            # status or generation moved on.
            key = db.shards.of(conn, workflow_id)
            found = conn.execute(statements["lock_workflow"], (key, workflow_id)).fetchone()
            # An archived generation lives on its run's shard.
            other = conn.execute(statements["get_workflow"], (key, archived_id)).fetchone()
            row, archived = generations.stored_pair(found, other, workflow_from_row)
            refusal = generations.continue_refusal(
                row, workflow_id, inputs, generation, executor_id, archived
            )
            assert row is not None
            if refusal == generations.ALREADY_CONTINUED:
                return row
            self._archive(conn, row, generations.archived_generation(row, now), now)
            conn.execute(statements["archive_log"], (archived_id, key, workflow_id))
            conn.execute(
                statements["continue_workflow"],
                {
                    "inputs": None if inputs is None else json_param(inputs),
                    "now": now,
                    "shard": key,
                    "wid": workflow_id,
                },
            )
            # Names are far shorter than a notification may be (MAX_NAME_BYTES).
            # The archived generation finished, and the run's streams of it ended.
            conn.execute(
                statements["notify_continued"],
                {
                    "c": db.channel,
                    "f": f"{db.origin}finished:{archived_id}",
                    "s": f"{db.origin}stream:{workflow_id}",
                },
            )
        db.tell([("finished", archived_id), ("stream", workflow_id)])
        return generations.next_generation(row, inputs, now)

    def _archive(
        self, conn: psycopg.Connection[Any], row: WorkflowRow, archived: WorkflowRow, now: datetime
    ) -> None:
        """Insert the row that keeps the run's current generation (`continue_workflow`'s
        and `rewind_workflow`'s), or raise if its id is taken. It takes the run's shard key,
        and its id goes in the directory."""
        key = row.shard_key
        registered = conn.execute(self._sql["register_run"], (archived.workflow_id, key)).fetchone()
        if not registered:
            raise generations.id_taken(row, archived.workflow_id)
        inserted = conn.execute(
            self._sql["archive_generation"],
            {
                "shard": key,
                "aid": archived.workflow_id,
                "name": archived.name,
                "status": archived.status.value,
                "inputs": None if archived.inputs is None else json_param(archived.inputs),
                "executor": archived.executor_id,
                "version": archived.app_version,
                "created": archived.created_at,
                "now": now,
                "parent": archived.parent_id,
                "started": archived.started_at,
                "trace": archived.trace_context,
                "generation": archived.generation,
                "wid": row.workflow_id,
            },
        ).rowcount
        if not inserted:
            raise generations.id_taken(row, archived.workflow_id)

    def rewind_workflow(
        self, workflow_id: str, position: int, **options: Unpack[Rewind]
    ) -> WorkflowRow:
        db, statements = self._db, self._sql
        archived_id = generations.check_rewind_args(workflow_id, options)
        generation = options["generation"]
        with db.connection() as conn, conn.transaction():
            # The live row's lock first, as continue_workflow takes it.
            key = db.shards.of(conn, workflow_id)
            found = conn.execute(statements["lock_workflow"], (key, workflow_id)).fetchone()
            other = conn.execute(statements["get_workflow"], (key, archived_id)).fetchone()
            row, archived = generations.stored_pair(found, other, workflow_from_row)
            row = generations.check_rewind(row, workflow_id, position, generation, None, archived)
            attempt, live = generations.rewound(row, **options)
            self._archive(conn, row, attempt, options["now"])
            conn.execute(
                statements["rewind_keep_outcome"],
                {"shard": key, "aid": archived_id, "wid": workflow_id},
            )
            moved = conn.execute(
                statements["archive_log"], (archived_id, key, workflow_id)
            ).rowcount
            # A refusal raises, and the transaction rolls back.
            generations.check_rewind_position(row, position, moved)
            conn.execute(
                statements["rewind_copy_log"],
                {"shard": key, "wid": workflow_id, "aid": archived_id, "pos": position},
            )
            conn.execute(
                statements["rewind_workflow"],
                {
                    "executor": options["executor_id"],
                    "version": options["app_version"],
                    "now": options["now"],
                    "shard": key,
                    "wid": workflow_id,
                    "generation": generation,
                },
            )
            for kind, key in (("finished", archived_id), ("resumed", workflow_id)):
                if len(key.encode()) < NOTIFY_MAX_KEY:
                    conn.execute(statements["notify"], (db.channel, f"{db.origin}{kind}:{key}"))
        db.tell([("finished", archived_id), ("resumed", workflow_id)])
        return live

    def set_status(self, workflow_id: str, status: Status, **options: Unpack[StatusChange]) -> bool:
        status = checked_status(workflow_id, status, options)
        only_from = options.get("only_from")
        resumed = status is Status.PENDING and not stays_pending(options)
        # A finish tells waiters; a resume tells the owning engine, wherever it
        # runs, to pick the run up now; a run back on its queue tells its claimers.
        note = "finished" if status.is_terminal else "resumed" if resumed else None
        if status is Status.ENQUEUED:
            note = "enqueued"
        db = self._db
        params = {
            "status": status.value,
            "error": storable_error(options.get("error", "")),
            "now": utc_now(),
            "executor": options.get("executor_id"),
            "version": options.get("app_version"),
            "reset": options.get("reset_recovery", False),
            "wid": workflow_id,
            "only_from": None if only_from is None else [Status(s).value for s in only_from],
            "note": note,
        }
        with db.connection() as conn, conn.transaction():
            key = params["shard"] = db.shards.of(conn, workflow_id)
            found = conn.execute(self._sql["set_status"], params).fetchone()
            if found and found[0] and note is not None:
                about = found[1] if note == "enqueued" else workflow_id
                if about:
                    db.notify(conn, [(note, about)])
            if found and found[0] and status is Status.ENQUEUED and found[1] is not None:
                queue, partition_key, version, priority, created_at, wake_at = found[1:7]
                enqueue_items(
                    db,
                    conn,
                    [
                        WorkflowRow(
                            workflow_id,
                            "",
                            status,
                            queue=queue,
                            shard_key=key,
                            partition_key=partition_key,
                            app_version=version,
                            priority=priority,
                            created_at=created_at,
                            wake_at=wake_at,
                        )
                    ],
                )
        changed = bool(found and found[0])
        about = found[1] if found and note == "enqueued" else workflow_id
        if changed and note is not None and about:
            self._db.tell([(note, about)])
        return changed

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        check_names(workflow_id, executor_id=executor_id, app_version=app_version)
        db = self._db
        now = utc_now()
        with db.connection() as conn, conn.transaction():
            key = db.shards.of(conn, workflow_id)
            found = conn.execute(
                self._sql["lock_family"], {"shard": key, "wid": workflow_id}
            ).fetchall()
            family = family_from_rows(workflow_id, found)
            moved = moving(workflow_id, family, app_version)
            notes = [("resumed", m.workflow_id) for m in moved if m.status is Status.PENDING]
            queues = (m.queue for m in moved if m.status is Status.ENQUEUED and m.queue)
            notes += [("enqueued", queue) for queue in dict.fromkeys(queues) if queue]
            with conn.cursor() as cur:
                cur.executemany(
                    self._sql["move_family_member"],
                    [
                        {
                            "version": app_version,
                            "now": now,
                            "status": m.status.value,
                            "executor": executor_id,
                            "shard": key,
                            "wid": m.workflow_id,
                        }
                        for m in moved
                    ],
                )
                waiting = [m for m in moved if m.status is Status.ENQUEUED and m.queue]
                if waiting:
                    # Their items follow them to the version they move to.
                    cur.executemany(
                        self._sql["move_item"],
                        [(app_version, m.queue, m.workflow_id) for m in waiting],
                    )
            # Told to every process on commit, as the transaction's own notifications.
            for kind, key in notes:
                if len(key.encode()) < NOTIFY_MAX_KEY:
                    conn.execute(self._sql["notify"], (db.channel, f"{db.origin}{kind}:{key}"))
        db.tell(notes)
        return [m.workflow_id for m in moved]

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        check_names(workflow_id)
        found = self._db.one(
            self._sql["set_deadline"], (deadline, timeout, self._db.shard(workflow_id), workflow_id)
        )
        return found is not None

    def set_attributes(self, workflow_id: str, attributes: Mapping[str, Any]) -> bool:
        check_names(workflow_id)
        given = json_param(encoded_attributes(checked_attributes(attributes)))
        key = self._db.shard(workflow_id)
        return self._db.one(self._sql["set_attributes"], (given, key, workflow_id)) is not None

    def bump_recovery(self, workflow_id: str) -> int:
        check_names(workflow_id)
        found = self._db.about(self._sql["bump_recovery"], workflow_id)
        if found is None:
            raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
        return int(found[0])

    def delete_workflow(self, workflow_id: str) -> bool:
        check_names(workflow_id)
        db, statements = self._db, self._sql
        with db.connection() as conn, conn.transaction():
            # Deleting the run's row first takes its lock, so a writer that
            # wants to add to it waits, then finds it gone; each later
            # statement takes a fresh snapshot that includes what finished
            # before the lock was granted.
            key = db.shards.of(conn, workflow_id, fresh=True)
            gone = conn.execute(statements["delete_workflow"], (key, workflow_id)).fetchone()
            if gone is None:
                return False
            if gone[0] is not None:
                conn.execute(statements["drop_item"], (gone[0], workflow_id))
            for part in (
                "delete_workflow_records",
                "delete_workflow_messages",
                "delete_workflow_inbox",
                "delete_workflow_events",
                "delete_workflow_send_keys",
                "delete_workflow_step_heartbeats",
                "clear_cancel_request",
            ):
                conn.execute(statements[part], (key, workflow_id))
            conn.execute(statements["clear_parent_close"], (workflow_id,))
            # Its archived generations, and their logs (they have no inbox or events).
            archived = conn.execute(
                statements["delete_archived_generations"], {"shard": key, "wid": workflow_id}
            ).fetchall()
            conn.execute(statements["unregister_runs"], ([workflow_id, *(r[0] for r in archived)],))
            if len(workflow_id.encode()) < NOTIFY_MAX_KEY:
                # Other engines forget what they keep of the run (a finished row a
                # handle would answer from); sent at commit, as every note is.
                conn.execute(statements["notify_deleted"], (db.channel, db.origin, workflow_id))
        db.shards.forget([workflow_id])
        db.tell([("deleted", workflow_id)])
        return True
