"""`PostgresStore`: many engines on many machines sharing one PostgreSQL database.

Everything lives in one schema of replaykit's own (default `replaykit`), which
replaykit creates and migrates (migrations.py). Connections come from a
`psycopg_pool.ConnectionPool` in autocommit mode, so a one-statement write is
one round trip (database.py).

The common write, completing a new position of a PENDING run, is one
statement: it locks the run's row (so a concurrent cancel or takeover waits
for it, or it for them), checks status and owner, inserts the record or
completes a pending one, and applies the side effects (shapes.py, single.py);
concurrent writers share a statement and a commit (batches.py). Only when it
writes nothing does a second query find out why. Writes that others may wait
on call `pg_notify` in the same transaction; `subscribe` LISTENs on the
schema's channel from a thread with its own connection (notes.py).

The store is a face: each method forwards to the room that holds its idea, and
every fixed statement is named in statements.sql.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any

from replaykit.log import Outcome, Record, Status
from replaykit.stores import _beats as beats
from replaykit.stores._holds import ExecutorHold
from replaykit.stores.base import (
    CancelRequest,
    ClaimLimits,
    EventWrite,
    FinishWrite,
    Message,
    OutgoingMessage,
    RecordWrite,
    ScheduleSpec,
    ScheduleState,
    StepHeartbeat,
    WorkflowFilter,
    WorkflowRow,
)
from replaykit.stores.postgres.batches import Batches
from replaykit.stores.postgres.cancels import Cancels
from replaykit.stores.postgres.claims import Claims
from replaykit.stores.postgres.creates import Creates
from replaykit.stores.postgres.database import DEFAULT_SCHEMA, Database, validate_schema
from replaykit.stores.postgres.holds import Holds
from replaykit.stores.postgres.messages import Messages
from replaykit.stores.postgres.migrations import Migrations
from replaykit.stores.postgres.notes import Notes
from replaykit.stores.postgres.reads import Reads
from replaykit.stores.postgres.runs import Runs
from replaykit.stores.postgres.schedules import Schedules
from replaykit.stores.postgres.single import Single
from replaykit.stores.postgres.step_beats import StepBeats
from replaykit.stores.postgres.writes import Writes

__all__ = ["PostgresStore"]


class PostgresStore:
    """The Store protocol on PostgreSQL, in schema `schema`; safe to share between threads.

    Creating the store connects, then creates or migrates the schema unless
    `auto_migrate=False` (then `schema_status()` tells where it stands and
    `migrate()` brings it up to date). An unreachable server raises
    `StoreUnavailable`.
    """

    #: LISTEN/NOTIFY carries every note to every engine on the schema, whatever its
    #: process or machine (a note can be lost with a connection; waiters also poll).
    notes_reach_every_sharer = True

    def __init__(
        self,
        url: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_min: int = 1,
        pool_max: int = 20,
        connect_timeout: float = 10.0,
        auto_migrate: bool = True,
    ) -> None:
        validate_schema(schema)
        if pool_min < 0 or pool_max < max(pool_min, 1):
            raise ValueError(
                f"need 0 <= pool_min <= pool_max and pool_max >= 1, got pool_min={pool_min}, "
                f"pool_max={pool_max}"
            )
        db = self._db = Database(url, schema, pool_min, pool_max, connect_timeout)
        self._notes = Notes(db)
        self._migrations = Migrations(db)
        self._creates = Creates(db)
        self._claims = Claims(db)
        self._holds = Holds(db)
        self._reads = Reads(db)
        self._single = Single(db)
        self._batches = Batches(db, self._single)
        self._writes = Writes(db, self._single, self._batches)
        # Group commit under the names the SQLite store gives it, which tests of
        # both stores drive directly.
        self._group = self._batches.group
        self._write_batch = self._batches.write_batch
        self._runs = Runs(db)
        self._messages = Messages(db)
        self._step_beats = StepBeats(db)
        self._cancels = Cancels(db)
        self._schedules = Schedules(db)
        db.open()
        try:
            if auto_migrate:
                self._migrations.migrate_at_open()
        except BaseException:
            db.pool.close()
            raise

    def __repr__(self) -> str:
        return self._db.name

    @property
    def schema(self) -> str:
        return self._db.schema

    @property
    def channel(self) -> str:
        return self._db.channel

    def close(self) -> None:
        if self._notes.close():
            self._db.close()

    # -- schema and notes ------------------------------------------------------

    def schema_status(self) -> tuple[int, int]:
        """(the schema's migration version, the latest this replaykit knows); 0 if absent."""
        return self._migrations.status()

    def migrate(self) -> int:
        """Create the schema or bring it to the latest version; return that version.

        Safe to run from many processes at once: they queue on an advisory
        lock, and all but the first find nothing left to do.
        """
        return self._migrations.migrate()

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self._notes.subscribe(callback)

    # -- creating and reading runs ----------------------------------------------

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        return self._creates.create_workflow(row, records=records, fork_of=fork_of)

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        return self._creates.create_workflows(rows)

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        return self._reads.get_workflow(workflow_id)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        return self._reads.list_workflows(where)

    def count_workflows(self, where: WorkflowFilter) -> int:
        return self._reads.count_workflows(where)

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        return self._reads.load_log(workflow_id, since=since, limit=limit)

    # -- queues, heartbeats and holds ---------------------------------------------

    def claim(
        self,
        queue: str,
        *,
        executor_id: str,
        app_version: str,
        limits: ClaimLimits,
        now: datetime,
    ) -> list[WorkflowRow]:
        return self._claims.claim(
            queue, executor_id=executor_id, app_version=app_version, limits=limits, now=now
        )

    def heartbeat(
        self,
        executor_id: str,
        app_version: str,
        now: datetime,
        *,
        workflows: Collection[str] | None = None,
        queues: Collection[str] | None = None,
    ) -> None:
        self._claims.heartbeat(executor_id, app_version, now, workflows=workflows, queues=queues)

    def read_heartbeats(self, since: datetime) -> list[beats.Heartbeat]:
        """The last heartbeats of the engines heard from at `since` or later.

        Not part of the `Store` protocol: replaykit/_waiting.py asks for it where a
        store has it, to say which engines run and what (a read; nothing is locked).
        """
        return self._claims.read_heartbeats(since)

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        return self._claims.take_over(
            executor_id=executor_id, app_version=app_version, lease_seconds=lease_seconds, now=now
        )

    def release(self, executor_id: str) -> list[str]:
        return self._claims.release(executor_id)

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        return self._holds.hold_executor(executor_id, app_version)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        return self._holds.executor_holder(executor_id, app_version)

    # -- recording and finishing ------------------------------------------------

    def record(
        self,
        workflow_id: str,
        record: Record,
        *,
        executor_id: str | None = None,
        consume: int | Sequence[int] | None = None,
        send: OutgoingMessage | None = None,
        event: EventWrite | None = None,
        wake_at: datetime | None = None,
    ) -> Record:
        return self._writes.record(
            workflow_id,
            record,
            executor_id=executor_id,
            consume=consume,
            send=send,
            event=event,
            wake_at=wake_at,
        )

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        return self._writes.record_many(writes)

    def record_transaction(
        self,
        workflow_id: str,
        position: int,
        body: Callable[[Any], Record],
        *,
        executor_id: str | None = None,
    ) -> Record:
        return self._writes.record_transaction(workflow_id, position, body, executor_id=executor_id)

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        return self._writes.record_late(workflow_id, record, executor_id=executor_id)

    def finish_workflow(
        self,
        workflow_id: str,
        status: Status,
        result: Outcome | None,
        *,
        error: str = "",
        executor_id: str | None = None,
        record: Record | None = None,
    ) -> bool:
        return self._writes.finish_workflow(
            workflow_id, status, result, error=error, executor_id=executor_id, record=record
        )

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        return self._writes.finish_many(finishes)

    # -- changing runs ------------------------------------------------------------

    def continue_workflow(
        self,
        workflow_id: str,
        inputs: Any,
        *,
        generation: int,
        executor_id: str | None,
        now: datetime,
    ) -> WorkflowRow:
        return self._runs.continue_workflow(
            workflow_id, inputs, generation=generation, executor_id=executor_id, now=now
        )

    def set_status(
        self,
        workflow_id: str,
        status: Status,
        *,
        only_from: Sequence[Status] | None = None,
        error: str = "",
        executor_id: str | None = None,
        reset_recovery: bool = False,
        app_version: str | None = None,
    ) -> bool:
        return self._runs.set_status(
            workflow_id,
            status,
            only_from=only_from,
            error=error,
            executor_id=executor_id,
            reset_recovery=reset_recovery,
            app_version=app_version,
        )

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        return self._runs.move_family(workflow_id, app_version=app_version, executor_id=executor_id)

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        return self._runs.set_deadline(workflow_id, deadline, timeout)

    def bump_recovery(self, workflow_id: str) -> int:
        return self._runs.bump_recovery(workflow_id)

    def delete_workflow(self, workflow_id: str) -> bool:
        return self._runs.delete_workflow(workflow_id)

    # -- messages and events ------------------------------------------------------

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
        return self._messages.send_message(
            workflow_id,
            topic,
            payload,
            idempotency_key=idempotency_key,
            call_id=call_id,
            trace_context=trace_context,
        )

    def create_and_send(
        self,
        row: WorkflowRow,
        message: OutgoingMessage,
        *,
        call_id: str | None = None,
        accept: Callable[[WorkflowRow], None] | None = None,
    ) -> tuple[WorkflowRow, bool, bool]:
        return self._messages.create_and_send(row, message, call_id=call_id, accept=accept)

    def answer_message(self, workflow_id: str, message_id: int, event: EventWrite) -> bool:
        return self._messages.answer_message(workflow_id, message_id, event)

    def peek_message(self, workflow_id: str, topic: str | tuple[str, ...]) -> Message | None:
        return self._messages.peek_message(workflow_id, topic)

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        return self._messages.get_event(workflow_id, key)

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        return self._messages.get_events(workflow_id)

    def record_step_heartbeat(
        self, workflow_id: str, beat: StepHeartbeat, *, executor_id: str | None = None
    ) -> bool:
        return self._step_beats.record_step_heartbeat(workflow_id, beat, executor_id)

    def get_step_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        return self._step_beats.get_step_heartbeats(workflow_id)

    def request_cancel(self, workflow_id: str, request: CancelRequest) -> CancelRequest:
        return self._cancels.request_cancel(workflow_id, request)

    def get_cancel_request(self, workflow_id: str) -> CancelRequest | None:
        return self._cancels.get_cancel_request(workflow_id)

    def clear_cancel_request(self, workflow_id: str) -> None:
        self._cancels.clear_cancel_request(workflow_id)

    # -- schedule states ------------------------------------------------------------

    def schedule_states(self) -> dict[str, ScheduleState]:
        return self._schedules.schedule_states()

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        self._schedules.register_schedules(specs, now)

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        return self._schedules.set_schedule_paused(name, paused, now)

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        return self._schedules.request_schedule_trigger(name, at)

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        return self._schedules.request_schedule_backfill(name, start, end, now)

    def clear_schedule_request(
        self,
        name: str,
        *,
        trigger_at: datetime | None = None,
        backfill: tuple[datetime, datetime] | None = None,
    ) -> None:
        self._schedules.clear_schedule_request(name, trigger_at=trigger_at, backfill=backfill)

    def delete_schedule_state(self, name: str) -> bool:
        return self._schedules.delete_schedule_state(name)
