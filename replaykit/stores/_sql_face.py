"""`SqlFace`: the Store protocol's methods the SQL stores forward to their rooms alike.

`PostgresStore` and `SqliteStore` are faces over rooms, one idea each, whose
statements differ by dialect but whose calls are the same: each face builds its
rooms under the names below and keeps only what is its own (opening, closing,
notes, migrations). The memory store and `CodecStore` answer the protocol their
own ways and do not use this.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from replaykit.log import Outcome, Record, Status
from replaykit.stores import _beats as beats
from replaykit.stores._holds import ExecutorHold
from replaykit.stores.base import (
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

if TYPE_CHECKING:
    from replaykit.stores.postgres import claims as pg_claims
    from replaykit.stores.postgres import creates as pg_creates
    from replaykit.stores.postgres import holds as pg_holds
    from replaykit.stores.postgres import messages as pg_messages
    from replaykit.stores.postgres import reads as pg_reads
    from replaykit.stores.postgres import runs as pg_runs
    from replaykit.stores.postgres import schedules as pg_schedules
    from replaykit.stores.postgres import step_beats as pg_step_beats
    from replaykit.stores.postgres import writes as pg_writes
    from replaykit.stores.sqlite import claims as lite_claims
    from replaykit.stores.sqlite import finishes as lite_finishes
    from replaykit.stores.sqlite import lifecycle as lite_lifecycle
    from replaykit.stores.sqlite import messages as lite_messages
    from replaykit.stores.sqlite import reads as lite_reads
    from replaykit.stores.sqlite import records as lite_records
    from replaykit.stores.sqlite import runs as lite_runs
    from replaykit.stores.sqlite import schedules as lite_schedules
    from replaykit.stores.sqlite import step_beats as lite_step_beats

__all__ = ["SqlFace"]


class SqlFace:
    """Forwards each Store method to the room that answers it; the rooms are typed by
    dialect, so a room whose signature drifts from its twin's fails mypy here."""

    _creates: pg_creates.Creates | lite_runs.Runs
    _reads: pg_reads.Reads | lite_reads.Reads
    _claims: pg_claims.Claims | lite_claims.Claims
    _holds: pg_holds.Holds | lite_claims.Claims
    _records: pg_writes.Writes | lite_records.Records
    _finishes: pg_writes.Writes | lite_finishes.Finishes
    _changes: pg_runs.Runs | lite_lifecycle.Lifecycle
    _messages: pg_messages.Messages | lite_messages.Messages
    _step_beats: pg_step_beats.StepBeats | lite_step_beats.StepBeats
    _schedules: pg_schedules.Schedules | lite_schedules.Schedules

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
        return self._finishes.finish_many(finishes)

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
        return self._changes.continue_workflow(
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
        return self._changes.set_status(
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
        return self._changes.move_family(
            workflow_id, app_version=app_version, executor_id=executor_id
        )

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        return self._changes.set_deadline(workflow_id, deadline, timeout)

    def bump_recovery(self, workflow_id: str) -> int:
        return self._changes.bump_recovery(workflow_id)

    def delete_workflow(self, workflow_id: str) -> bool:
        return self._changes.delete_workflow(workflow_id)

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
