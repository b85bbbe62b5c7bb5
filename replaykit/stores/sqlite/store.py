"""`SqliteStore`: the embedded default store, one SQLite file in WAL mode.

The store is a face over rooms, each holding one idea and the statements it runs
(statements.sql, by name): `connections.py` (the writer, the reader pool, their
pragmas), `writer.py` (BEGIN IMMEDIATE transactions shared by concurrent writers),
`migrations.py` (the schema), `runs.py` (creating runs), `claims.py` (queues,
heartbeats, executor holds), `reads.py` (runs and logs), `records.py` with
`refusals.py` (recording, and why a record was refused), `finishes.py`,
`lifecycle.py` (status, families, deadlines, generations, deletion),
`messages.py` (messages and events), `step_beats.py` (step heartbeats) and
`schedules.py`. Each method here hands
its call to the room that answers it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, TypeVar

from replaykit.log import Outcome, Record, Status
from replaykit.stores import _beats as beats
from replaykit.stores._group import GroupCommit, Slot
from replaykit.stores._holds import ExecutorHold
from replaykit.stores._subscribers import Subscribers
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
from replaykit.stores.sqlite import migrations
from replaykit.stores.sqlite.cancels import Cancels
from replaykit.stores.sqlite.claims import Claims
from replaykit.stores.sqlite.connections import SYNCHRONOUS, Connections
from replaykit.stores.sqlite.finishes import Finishes
from replaykit.stores.sqlite.lifecycle import Lifecycle
from replaykit.stores.sqlite.messages import Messages
from replaykit.stores.sqlite.reads import Reads
from replaykit.stores.sqlite.records import Records
from replaykit.stores.sqlite.runs import Runs
from replaykit.stores.sqlite.schedules import Schedules
from replaykit.stores.sqlite.step_beats import StepBeats
from replaykit.stores.sqlite.writer import Body, Writer

__all__ = ["SqliteStore"]

_T = TypeVar("_T")


class SqliteStore:
    """The Store protocol on one SQLite database file; safe to share between threads.

    `synchronous` is SQLite's `PRAGMA synchronous` for the writer: `NORMAL`
    (the default) survives a process crash but may lose the last commits on a
    power cut; `FULL` survives that too, at the cost of an fsync per commit.
    `busy_timeout_ms` bounds how long a write waits for another process.
    """

    #: Notes reach only the engines of this process: a run deleted from another
    #: process is not heard of, so engines ask the file (see `Engine.handle`).
    notes_reach_every_sharer = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 5000,
    ) -> None:
        level = synchronous.upper()
        if level not in SYNCHRONOUS:
            raise ValueError(
                f"synchronous must be one of {', '.join(SYNCHRONOUS)} (SQLite's PRAGMA "
                f"synchronous), not {synchronous!r}"
            )
        if busy_timeout_ms < 0:
            raise ValueError(f"busy_timeout_ms must be >= 0, not {busy_timeout_ms}")
        self._path = os.fspath(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._subscribers = Subscribers()
        self._connections = Connections(
            self._path, synchronous=level, busy_timeout_ms=busy_timeout_ms, label=repr(self)
        )
        self._writing = Writer(self._connections)
        try:
            migrations.migrate(self._writing, self._path)
        except BaseException:
            self._connections.writer.close()
            raise
        notify = self._notify
        self._runs = Runs(self._connections, self._writing, notify)
        self._claims = Claims(self._connections, self._writing, notify)
        self._reads = Reads(self._connections)
        self._records = Records(self._connections, self._writing, notify)
        self._finishes = Finishes(self._connections, self._writing, notify)
        self._lifecycle = Lifecycle(self._writing, notify)
        self._messages = Messages(self._connections, self._writing, notify)
        self._step_beats = StepBeats(self._connections, self._writing)
        self._cancels = Cancels(self._connections, self._writing)
        self._schedules = Schedules(self._connections, self._writing)

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"

    @property
    def path(self) -> str:
        return self._path

    def journal_mode(self) -> str:
        """SQLite's journal mode for this database (`wal` for a file database)."""
        return self._connections.journal_mode()

    def schema_status(self) -> tuple[int, int]:
        """(the database's schema version, the latest version this replaykit knows)."""
        return migrations.schema_status(self._connections)

    # The writer's parts under the names the tests drive them by.

    @property
    def _writer(self) -> sqlite3.Connection:
        return self._connections.writer

    @property
    def _group(self) -> GroupCommit[Body]:
        return self._writing.group

    def _write(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        return self._writing.write(body)

    def _write_batch(self, slots: Sequence[Slot[Body]]) -> None:
        self._writing.write_batch(slots)

    # -- notifications -------------------------------------------------------

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self._subscribers.add(callback)

    def _notify(self, notes: Sequence[tuple[str, str]]) -> None:
        for kind, key in notes:
            self._subscribers.deliver(kind, key)

    # -- runs ----------------------------------------------------------------

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        return self._runs.create_workflow(row, records=records, fork_of=fork_of)

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        return self._runs.create_workflows(rows)

    # -- queues and executors ------------------------------------------------

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

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        return self._claims.hold_executor(executor_id, app_version)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        return self._claims.executor_holder(executor_id, app_version)

    def release(self, executor_id: str) -> list[str]:
        return self._claims.release(executor_id)

    # -- reading -------------------------------------------------------------

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

    # -- recording -----------------------------------------------------------

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
        return self._records.record(
            workflow_id,
            record,
            executor_id=executor_id,
            consume=consume,
            send=send,
            event=event,
            wake_at=wake_at,
        )

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        """One transaction for the batch (a savepoint per write), shared by group commit."""
        return self._records.record_many(writes)

    def record_transaction(
        self,
        workflow_id: str,
        position: int,
        body: Callable[[Any], Record],
        *,
        executor_id: str | None = None,
    ) -> Record:
        return self._records.record_transaction(
            workflow_id, position, body, executor_id=executor_id
        )

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        return self._records.record_late(workflow_id, record, executor_id=executor_id)

    # -- finishing and status ------------------------------------------------

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
        return self._finishes.finish_workflow(
            workflow_id, status, result, error=error, executor_id=executor_id, record=record
        )

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        """The finishes in the transactions concurrent writers share, a savepoint each."""
        return self._finishes.finish_many(finishes)

    def continue_workflow(
        self,
        workflow_id: str,
        inputs: Any,
        *,
        generation: int,
        executor_id: str | None,
        now: datetime,
    ) -> WorkflowRow:
        return self._lifecycle.continue_workflow(
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
        return self._lifecycle.set_status(
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
        return self._lifecycle.move_family(
            workflow_id, app_version=app_version, executor_id=executor_id
        )

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        return self._lifecycle.set_deadline(workflow_id, deadline, timeout)

    def bump_recovery(self, workflow_id: str) -> int:
        return self._lifecycle.bump_recovery(workflow_id)

    def delete_workflow(self, workflow_id: str) -> bool:
        return self._lifecycle.delete_workflow(workflow_id)

    # -- messages and events -------------------------------------------------

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

    # -- schedule states -----------------------------------------------------

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

    def close(self) -> None:
        self._connections.close()
