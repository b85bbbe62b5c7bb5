"""`MemoryStore`: the Store protocol in a dict, for tests and the testing kit."""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack

import attrs

from replaykit.errors import (
    RecordConflict,
    TransactionUnsupported,
    WorkflowNotFound,
)
from replaykit.log import STREAM_KINDS, Outcome, Record, Status
from replaykit.stores import _beats as beats
from replaykit.stores._attributes import checked_attributes, in_name_order
from replaykit.stores._checks import (
    COUNT_FIELDS,
    check_count_field,
    check_filter,
    check_load_log,
    check_names,
    check_write,
    checked_topics,
    storable_error,
)
from replaykit.stores._families import Member, moving
from replaykit.stores._finish import checked_finish, same_record, unlike_error
from replaykit.stores._holds import ExecutorHold, LocalHolds
from replaykit.stores._late import check_late, check_late_record, late_gap
from replaykit.stores._many import finish_one_by_one, finishes_of, writes_of
from replaykit.stores._memory_generations import MemoryGenerations
from replaykit.stores._memory_schedules import MemorySchedules
from replaykit.stores._partitions import pick_rows
from replaykit.stores._rules import (
    LIVE_STATUSES,
    batch_answers,
    check_batch_dedup,
    check_recordable,
    checked_create,
    checked_create_and_send,
    checked_send,
    checked_status,
    claim_room,
    claimed_deadline,
    creation_batch,
    duplicate_dedup,
    gap_error,
    listed_without_payloads,
    matches_filter,
    no_run_for_events,
    no_run_to_send_to,
    replaces_stored,
    stays_pending,
    utc_now,
)
from replaykit.stores._shards import new_shard_key
from replaykit.stores._step_beats import check_beat, keeps, no_run_for_heartbeats
from replaykit.stores._subscribers import Subscribers
from replaykit.stores.base import (
    CancelRequest,
    EventWrite,
    FinishWrite,
    Message,
    OutgoingMessage,
    RecordWrite,
    ScheduleState,
    StepHeartbeat,
    WorkflowFilter,
    WorkflowRow,
)
from replaykit.stores.options import (
    ClaimTerms,
    CreateAndSendOptions,
    Ending,
    HeartbeatOptions,
    Owner,
    RecordOptions,
    SendOptions,
    StatusChange,
    TransactionBody,
    options_of,
)
from replaykit.stores.values import LoadedRun
from replaykit.stores.where import group_key

__all__ = ["NO_TWIN", "STATEMENT_TWINS", "MemoryStore"]


log = logging.getLogger("replaykit.stores")


#: The memory store's twin of each statement the two SQL stores share
#: (`stores/postgres/statements.sql`, `stores/sqlite/statements.sql`): the method that
#: answers the same question here. tests/test_statements.py holds the three to one
#: set of questions, so a statement added to the SQL stores is answered here too.
STATEMENT_TWINS: Mapping[str, str] = {
    "archive_log": "continue_workflow",
    "bump_recovery": "bump_recovery",
    "claim": "claim",
    "claim_partitioned": "claim",
    "claimable_exists": "claim",
    "clear_schedule_backfill": "clear_schedule_request",
    "clear_cancel_request": "clear_cancel_request",
    "clear_parent_close": "delete_workflow",
    "clear_schedule_trigger": "clear_schedule_request",
    "continue_workflow": "continue_workflow",
    "count_running": "claim",
    "count_started": "claim",
    "create_workflow": "create_workflow",
    "create_workflow_record": "create_workflow",
    "dedup_holder": "create_workflow",
    "delete_archived_generations": "delete_workflow",
    "delete_schedule_state": "delete_schedule_state",
    "delete_workflow": "delete_workflow",
    "delete_workflow_events": "delete_workflow",
    "delete_workflow_messages": "delete_workflow",
    "delete_workflow_records": "delete_workflow",
    "delete_workflow_send_keys": "delete_workflow",
    "delete_workflow_step_heartbeats": "delete_workflow",
    "finish_workflow": "finish_workflow",
    "fork_copy_event_marks": "create_workflow",
    "fork_set_events": "create_workflow",
    "get_cancel_request": "get_cancel_request",
    "get_event": "get_event",
    "get_parent_close": "get_parent_close",
    "get_events": "get_events",
    "get_first_inputs": "create_workflows",
    "get_step_heartbeats": "get_step_heartbeats",
    "get_workflow": "get_workflow",
    "heartbeat": "heartbeat",
    "rewind_copy_log": "rewind_workflow",
    "rewind_workflow": "rewind_workflow",
    "load_log": "load_log",
    "load_log_limited": "load_log",
    "load_runs": "load_runs",
    "load_runs_logs": "load_runs",
    "load_runs_cancels": "load_runs",
    "lock_family": "move_family",
    "move_family_member": "move_family",
    "peek_message": "peek_message",
    "peek_message_any": "peek_message",
    "read_heartbeats": "read_heartbeats",
    "record_duplicate_send": "record",
    "record_late": "record_late",
    "record_step_heartbeat": "record_step_heartbeat",
    "register_schedule": "register_schedules",
    "release": "release",
    "request_cancel": "request_cancel",
    "request_schedule_backfill": "request_schedule_backfill",
    "request_schedule_trigger": "request_schedule_trigger",
    "schedule_backfill": "request_schedule_backfill",
    "schedule_exists": "set_schedule_paused",
    "schedule_states": "schedule_states",
    "schedule_trigger": "request_schedule_trigger",
    "send_message": "send_message",
    "set_deadline": "set_deadline",
    "set_parent_close": "set_parent_close",
    "set_attributes": "set_attributes",
    "set_schedule_paused": "set_schedule_paused",
    "set_status": "set_status",
    "take_over": "take_over",
}

#: Shared statements that have no twin in memory, and why.
NO_TWIN: Mapping[str, str] = {
    "schema_version": "a memory store has no schema: nothing is migrated",
    "shard_of": "a memory store keeps each run's key on its row (MemoryStore._key_of)",
}


class MemoryStore(MemorySchedules, MemoryGenerations):
    """Keeps everything in process memory; safe to share between threads."""

    #: Every engine sharing it hears every note (there is one process), so an engine
    #: may answer from what it keeps until a "deleted" note says otherwise.
    notes_reach_every_sharer = True

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._rows: dict[str, WorkflowRow] = {}
        self._logs: dict[str, list[Record]] = {}
        self._inbox: dict[str, list[Message]] = {}
        self._events: dict[tuple[str, str], Any] = {}
        self._step_beats: dict[tuple[str, int, tuple[int, ...]], StepHeartbeat] = {}  # latest
        self._cancels: dict[str, CancelRequest] = {}
        self._parent_close: dict[str, str] = {}
        # What each run's records set: position -> (key, value), for forks.
        self._set_by: dict[str, dict[int, tuple[str, Any]]] = {}
        self._used_keys: dict[tuple[str, str], str | None] = {}  # -> the call that used it
        self._next_message_id = 1
        self._order: dict[str, int] = {}
        self._subscribers = Subscribers()
        self._heartbeats: dict[str, tuple[str, datetime]] = {}
        self._registered: dict[str, beats.Registered | None] = {}
        self._holds = LocalHolds()
        self._schedules: dict[str, ScheduleState] = {}

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self._subscribers.add(callback)

    def _notify(self, kind: str, key: str) -> None:
        self._subscribers.deliver(kind, key)

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        stored = checked_create(row, records, fork_of)
        set_any = False
        with self._lock:
            existing = self._rows.get(row.workflow_id)
            if existing is not None:
                return existing, False
            stored = self._keyed(stored, fork_of)
            if row.queue is not None and row.dedup_id is not None:
                for other in self._rows.values():
                    if (
                        other.queue == row.queue
                        and other.dedup_id == row.dedup_id
                        and other.status in (Status.ENQUEUED, Status.PENDING)
                    ):
                        raise duplicate_dedup(row, other.workflow_id)
            self._rows[row.workflow_id] = stored
            self._logs[row.workflow_id] = list(records)
            self._order[row.workflow_id] = len(self._order)
            if fork_of is not None:
                set_any = self._copy_events(fork_of, row.workflow_id, records)
        if stored.status is Status.ENQUEUED and stored.queue is not None:
            self._notify("enqueued", stored.queue)
        if set_any:
            self._notify("event", row.workflow_id)
        return stored, True

    def _keyed(self, row: WorkflowRow, fork_of: str | None = None) -> WorkflowRow:
        """`row` with its shard key (stores/_shards.py: a fork's is its source's)."""
        if row.shard_key is None:
            source = None if fork_of is None or row.continued_as else self._rows.get(fork_of)
            key = source.shard_key if source else new_shard_key(row, self._key_of)
            row = attrs.evolve(row, shard_key=key)
        return row

    def _key_of(self, workflow_id: str) -> str | None:
        return getattr(self._rows.get(workflow_id), "shard_key", None)

    def _copy_events(self, source_id: str, fork_id: str, records: Sequence[Record]) -> bool:
        """Set on the fork what the copied records set in the source (under the lock)."""
        source_log = self._logs.get(source_id, [])
        source_set = self._set_by.get(source_id, {})
        fork_set: dict[int, tuple[str, Any]] = {}
        for record in records:
            position = record.position
            if position not in source_set or position >= len(source_log):
                continue
            original = source_log[position]
            if (original.kind, original.digest) != (record.kind, record.digest):
                continue
            key, value = source_set[position]
            fork_set[position] = (key, copy.deepcopy(value))
            self._events[(fork_id, key)] = copy.deepcopy(value)
        if fork_set:
            self._set_by[fork_id] = fork_set
        return bool(fork_set)

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        batch, firsts = creation_batch(rows)
        with self._lock:
            live: dict[tuple[str, str], str] = {}
            if any(r.queue is not None and r.dedup_id is not None for r in firsts):
                for other in self._rows.values():
                    if other.queue is None or other.dedup_id is None:
                        continue
                    if other.status not in LIVE_STATUSES:
                        continue
                    live.setdefault((other.queue, other.dedup_id), other.workflow_id)
            check_batch_dedup(
                firsts,
                is_new=lambda workflow_id: workflow_id not in self._rows,
                live_holder=lambda row: live.get((row.queue or "", row.dedup_id or "")),
            )
            existing = {
                r.workflow_id: self._rows[r.workflow_id]
                for r in firsts
                if r.workflow_id in self._rows
            }
            new = [r for r in firsts if r.workflow_id not in existing]
            keys = {r.workflow_id: self._keyed(r).shard_key for r in new}
            answers, queues = batch_answers(batch, existing, keys)
            for row, created in answers:
                if created:
                    self._rows[row.workflow_id] = row
                    self._logs[row.workflow_id] = []
                    self._order[row.workflow_id] = len(self._order)
        for queue in queues:
            self._notify("enqueued", queue)
        return answers

    def claim(self, queue: str, **terms: Unpack[ClaimTerms]) -> list[WorkflowRow]:
        executor_id, app_version = terms["executor_id"], terms["app_version"]
        limits, now = terms["limits"], terms["now"]
        check_names(queue=queue, executor_id=executor_id, app_version=app_version)
        with self._lock:
            room = claim_room(
                limits,
                running=sum(
                    1
                    for r in self._rows.values()
                    if r.queue == queue and r.status is Status.PENDING
                ),
                started_in_period=lambda since: sum(
                    1
                    for r in self._rows.values()
                    if r.queue == queue and r.started_at is not None and r.started_at > since
                ),
                now=now,
            )
            if room <= 0:
                return []
            if limits.partitioned:
                ready = pick_rows(self._rows.values(), queue, app_version, limits, room, now)
            else:
                ready = [
                    r
                    for r in self._rows.values()
                    if r.queue == queue
                    and r.status is Status.ENQUEUED
                    and r.app_version == app_version
                    and (r.wake_at is None or r.wake_at <= now)
                ]
            ready.sort(key=lambda r: (r.priority, r.created_at or now, r.workflow_id))
            claimed = []
            for row in ready[:room]:
                taken = attrs.evolve(
                    row,
                    status=Status.PENDING,
                    executor_id=executor_id,
                    started_at=now,
                    wake_at=None,
                    updated_at=now,
                    deadline=claimed_deadline(row, now),
                )
                self._rows[row.workflow_id] = taken
                claimed.append(attrs.evolve(taken, has_log=bool(self._logs.get(row.workflow_id))))
            return claimed

    def heartbeat(
        self, executor_id: str, app_version: str, now: datetime, **options: Unpack[HeartbeatOptions]
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        names = beats.registered(options.get("workflows"), options.get("queues"))
        with self._lock:
            self._heartbeats[executor_id] = (app_version, now)
            self._registered[executor_id] = names
        lease_seconds = options.get("lease_seconds")
        if lease_seconds is None:
            return []
        return self.take_over(
            executor_id=executor_id, app_version=app_version, lease_seconds=lease_seconds, now=now
        )

    def read_heartbeats(self, since: datetime) -> list[beats.Heartbeat]:
        """The last heartbeats of the engines heard from at `since` or later.

        Not part of the `Store` protocol: replaykit/_waiting.py asks for it where a
        store has it, to say which engines run and what they run.
        """
        with self._lock:
            found = sorted(self._heartbeats.items())
            return [
                beats.Heartbeat(executor, version, seen, self._registered.get(executor))
                for executor, (version, seen) in found
                if seen >= since
            ]

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        with self._lock:
            dead = {
                executor
                for executor, (_version, seen) in self._heartbeats.items()
                if executor != executor_id
                and (now - seen).total_seconds() > lease_seconds
                and not self._holds.held(executor, app_version)
            }
            taken = []
            for workflow_id, row in list(self._rows.items()):
                if (
                    row.status is Status.PENDING
                    and row.app_version == app_version
                    and row.executor_id in dead
                ):
                    self._rows[workflow_id] = attrs.evolve(
                        row, executor_id=executor_id, updated_at=now
                    )
                    taken.append(workflow_id)
            return taken

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        check_names(executor_id=executor_id, app_version=app_version)
        return self._holds.hold(executor_id, app_version)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        return self._holds.holder(executor_id, app_version)

    def release(self, executor_id: str) -> list[str]:
        check_names(executor_id=executor_id)
        queues: set[str] = set()
        released = []
        with self._lock:
            for workflow_id, row in list(self._rows.items()):
                if (
                    row.status is Status.PENDING
                    and row.executor_id == executor_id
                    and row.queue is not None
                ):
                    self._rows[workflow_id] = attrs.evolve(
                        row, status=Status.ENQUEUED, executor_id="", updated_at=utc_now()
                    )
                    released.append(workflow_id)
                    queues.add(row.queue)
        for queue in sorted(queues):
            self._notify("enqueued", queue)
        return released

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        check_names(workflow_id)
        with self._lock:
            return self._rows.get(workflow_id)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        check_filter(where)
        with self._lock:
            rows = [r for r in self._rows.values() if matches_filter(r, where)]
            rows.sort(
                key=lambda r: (r.created_at or utc_now(), r.workflow_id),
                reverse=where.newest_first,
            )
        rows = rows[where.offset :]
        rows = rows[: where.limit] if where.limit is not None else rows
        return rows if where.payloads else [listed_without_payloads(row) for row in rows]

    def count_workflows(self, where: WorkflowFilter) -> int:
        check_filter(where)
        with self._lock:
            counted = sum(1 for row in self._rows.values() if matches_filter(row, where))
        cap = where.count_at_most
        return counted if cap is None else min(counted, cap)

    def count_workflows_by(self, where: WorkflowFilter, field: str) -> dict[str, int]:
        check_filter(where)
        check_count_field(field)
        counts: dict[str, int] = {}
        with self._lock:
            for row in self._rows.values():
                if matches_filter(row, where):
                    if field in COUNT_FIELDS:
                        value = getattr(row, field)
                        key = value.value if isinstance(value, Status) else (value or "")
                    else:  # an attribute
                        key = group_key(row.attributes.get(field))
                    counts[key] = counts.get(key, 0) + 1
        cap = where.count_at_most
        return counts if cap is None else {key: min(n, cap) for key, n in counts.items()}

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        check_load_log(workflow_id, limit)
        start = max(since, 0)
        with self._lock:
            log = self._logs.get(workflow_id, ())
            return list(log[start:] if limit is None else log[start : start + limit])

    def load_runs(self, workflow_ids: Sequence[str]) -> list[LoadedRun]:
        """The runs of `workflow_ids` that exist, with their logs and cancel requests
        (beside the protocol: the engine reads a batch of wake-ups with it)."""
        for workflow_id in workflow_ids:
            check_names(workflow_id)
        with self._lock:
            return [
                LoadedRun(row, list(self._logs.get(wid, ())), self._cancels.get(wid))
                for wid in workflow_ids
                if (row := self._rows.get(wid)) is not None
            ]

    def record(self, workflow_id: str, record: Record, **options: Unpack[RecordOptions]) -> Record:
        notes: list[tuple[str, str]] = []
        with self._lock:
            stored = self._record_locked(workflow_id, record, options, notes)
        for kind, key in notes:
            self._notify(kind, key)
        return stored

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        batch = writes_of(writes)
        answers: list[Record | Exception] = []
        notes: list[tuple[str, str]] = []
        with self._lock:
            for write in batch:
                try:
                    answers.append(
                        self._record_locked(
                            write.workflow_id, write.record, options_of(write), notes
                        )
                    )
                except Exception as exc:
                    answers.append(exc)
        for kind, key in notes:
            self._notify(kind, key)
        return answers

    def _record_locked(
        self,
        workflow_id: str,
        record: Record,
        options: RecordOptions,
        notes: list[tuple[str, str]],
    ) -> Record:
        """`record()` under the lock; appends the notifications to send after it."""
        executor_id, send, event = (
            options.get("executor_id"),
            options.get("send"),
            options.get("event"),
        )
        check_write(workflow_id, record, executor_id, send, event)
        row = self._rows.get(workflow_id)
        check_recordable(row, workflow_id, executor_id)
        assert row is not None
        log = self._logs[workflow_id]
        position = record.position
        if position < len(log):
            stored = log[position]
            if not replaces_stored(stored, record):
                return stored
        elif position != len(log):
            raise gap_error(row.name, workflow_id, position, len(log))
        if (consume := options.get("consume")) is not None:
            ids = [consume] if isinstance(consume, int) else list(consume)
            inbox_ids = {m.message_id for m in self._inbox.get(workflow_id, ())}
            missing = [i for i in ids if i not in inbox_ids]
            if missing or len(set(ids)) != len(ids):
                raise RecordConflict(
                    f"workflow id {workflow_id!r}: message(s) {missing or ids} already "
                    "consumed (or named twice)"
                )
            if send is not None and send.workflow_id not in self._rows:
                # Checked before anything changes: a failed send must not
                # leave the consumed message gone.
                raise no_run_to_send_to(send.workflow_id)
            for message_id in ids:
                self._take_message(workflow_id, message_id)
        delivered = send is not None and self._deliver(send)
        if send is not None and not delivered and send.if_duplicate is not None:
            record = attrs.evolve(record, outcome=send.if_duplicate)
        if event is not None:
            self._events[(workflow_id, event.key)] = copy.deepcopy(event.value)
            self._set_by.setdefault(workflow_id, {})[position] = (
                event.key,
                copy.deepcopy(event.value),
            )
        if position < len(log):
            log[position] = record
        else:
            log.append(record)
        wake_at = options.get("wake_at")
        if row.wake_at != wake_at:
            self._rows[workflow_id] = attrs.evolve(row, updated_at=utc_now(), wake_at=wake_at)
        if send is not None and delivered:
            notes.append(("message", send.workflow_id))
        if event is not None:
            notes.append(("event", workflow_id))
        if record.kind in STREAM_KINDS and record.outcome is not None:
            notes.append(("stream", workflow_id))
        return record

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        check_late_record(workflow_id, record, executor_id)
        with self._lock:
            row = self._rows.get(workflow_id)
            check_late(row, workflow_id, executor_id)
            assert row is not None
            log = self._logs[workflow_id]
            position = record.position
            if position < len(log):
                if log[position].outcome is not None:
                    return log[position]
                log[position] = record
            elif position == len(log):
                log.append(record)
            else:
                raise late_gap(row.name, workflow_id, position, len(log))
        return record

    def record_transaction(
        self, workflow_id: str, position: int, body: TransactionBody, **owner: Unpack[Owner]
    ) -> Record:
        executor_id = owner.get("executor_id")
        check_names(workflow_id, executor_id=executor_id)
        raise TransactionUnsupported(
            f"workflow id {workflow_id!r} position {position}: Transaction runs its function "
            "inside the store's database transaction, and the memory store has no database. "
            "Use SqliteStore or PostgresStore (Engine('sqlite:///app.db')), or use a Step"
        )

    def finish_workflow(
        self, workflow_id: str, status: Status, result: Outcome | None, **options: Unpack[Ending]
    ) -> bool:
        executor_id = options.get("executor_id")
        last = checked_finish(workflow_id, executor_id, options.get("record"))
        error = storable_error(options.get("error", ""))
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None or row.status is not Status.PENDING:
                return False
            if executor_id is not None and row.executor_id != executor_id:
                return False
            if last is not None:
                log = self._logs[workflow_id]
                position = last.position
                if position > len(log):
                    raise gap_error(row.name, workflow_id, position, len(log))
                if position == len(log):
                    log.append(last)
                elif log[position].outcome is None:
                    log[position] = last
                elif not same_record(log[position], last):
                    raise unlike_error(row.name, workflow_id, log[position], last)
            self._rows[workflow_id] = attrs.evolve(
                row, status=status, result=result, error=error, updated_at=utc_now(), wake_at=None
            )
        self._notify("finished", workflow_id)
        return True

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        return finish_one_by_one(
            finishes_of(finishes),
            lambda f: self.finish_workflow(
                f.workflow_id,
                f.status,
                f.result,
                error=f.error,
                executor_id=f.executor_id,
                record=f.record,
            ),
        )

    def set_status(self, workflow_id: str, status: Status, **options: Unpack[StatusChange]) -> bool:
        status = checked_status(workflow_id, status, options)
        executor_id, app_version = options.get("executor_id"), options.get("app_version")
        error = storable_error(options.get("error", ""))
        only_from = options.get("only_from")
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None:
                return False
            if only_from is not None and row.status not in only_from:
                return False
            changes: dict[str, Any] = {"status": status, "error": error, "updated_at": utc_now()}
            if executor_id is not None:
                changes["executor_id"] = executor_id
            if options.get("reset_recovery", False):
                changes["recovery_attempts"] = 0
            if app_version is not None:
                changes["app_version"] = app_version
            self._rows[workflow_id] = attrs.evolve(row, **changes)
        if status.is_terminal:
            self._notify("finished", workflow_id)
        elif status is Status.PENDING and not stays_pending(options):
            self._notify("resumed", workflow_id)
        elif status is Status.ENQUEUED and row.queue:
            self._notify("enqueued", row.queue)
        return True

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        check_names(workflow_id, executor_id=executor_id, app_version=app_version)
        now = utc_now()
        with self._lock:
            if workflow_id not in self._rows:
                raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
            members = [
                Member(r.workflow_id, r.parent_id, r.status, r.app_version, r.queue)
                for r in self._rows.values()
            ]
            moved = moving(workflow_id, members, app_version)
            for member in moved:
                row = self._rows[member.workflow_id]
                changes: dict[str, Any] = {"app_version": app_version, "updated_at": now}
                if executor_id is not None and row.status is not Status.ENQUEUED:
                    changes["executor_id"] = executor_id
                if row.status is Status.PENDING:
                    changes["recovery_attempts"] = 0
                self._rows[member.workflow_id] = attrs.evolve(row, **changes)
        for member in moved:
            if member.status is Status.PENDING:
                self._notify("resumed", member.workflow_id)
        for queue in dict.fromkeys(
            m.queue for m in moved if m.status is Status.ENQUEUED and m.queue is not None
        ):
            self._notify("enqueued", queue)
        return [m.workflow_id for m in moved]

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        check_names(workflow_id)
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None:
                return False
            self._rows[workflow_id] = attrs.evolve(row, deadline=deadline, timeout=timeout)
            return True

    def set_attributes(self, workflow_id: str, attributes: Mapping[str, Any]) -> bool:
        check_names(workflow_id)
        given = checked_attributes(attributes)
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None:
                return False
            merged = in_name_order({**row.attributes, **given})
            self._rows[workflow_id] = attrs.evolve(row, attributes=merged)
            return True

    def bump_recovery(self, workflow_id: str) -> int:
        check_names(workflow_id)
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None:
                raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
            row = attrs.evolve(row, recovery_attempts=row.recovery_attempts + 1)
            self._rows[workflow_id] = row
            return row.recovery_attempts

    def send_message(
        self, workflow_id: str, topic: str, payload: Any, **options: Unpack[SendOptions]
    ) -> bool:
        message = checked_send(workflow_id, topic, payload, options)
        with self._lock:
            delivered = self._deliver(message, options.get("call_id"))
        if delivered:
            self._notify("message", workflow_id)
        return delivered

    def _deliver(self, sent: OutgoingMessage, call_id: str | None = None) -> bool:
        workflow_id, idempotency_key = sent.workflow_id, sent.idempotency_key
        if workflow_id not in self._rows:
            raise no_run_to_send_to(workflow_id)
        if idempotency_key is not None:
            key = (workflow_id, idempotency_key)
            if key in self._used_keys:
                # True only for the same call again: its earlier attempt delivered.
                return call_id is not None and self._used_keys[key] == call_id
            self._used_keys[key] = call_id
        message = Message(
            self._next_message_id,
            workflow_id,
            sent.topic,
            copy.deepcopy(sent.payload),
            utc_now(),
            sent.trace_context,
        )
        self._next_message_id += 1
        self._inbox.setdefault(workflow_id, []).append(message)
        return True

    def create_and_send(
        self, row: WorkflowRow, message: OutgoingMessage, **options: Unpack[CreateAndSendOptions]
    ) -> tuple[WorkflowRow, bool, bool]:
        call_id, accept = options.get("call_id"), options.get("accept")
        stored = checked_create_and_send(row, message)
        with self._lock:
            existing = self._rows.get(row.workflow_id)
            if existing is not None and accept is not None:
                accept(existing)  # nothing written yet: a refusal leaves no trace
            if existing is None:
                stored = self._keyed(stored)
                self._rows[row.workflow_id] = stored
                self._logs[row.workflow_id] = []
                self._order[row.workflow_id] = len(self._order)
            delivered = self._deliver(message, call_id)
        if existing is None and stored.status is Status.ENQUEUED and stored.queue is not None:
            self._notify("enqueued", stored.queue)
        if delivered:
            self._notify("message", row.workflow_id)
        return (stored, True, delivered) if existing is None else (existing, False, delivered)

    def answer_message(self, workflow_id: str, message_id: int, event: EventWrite) -> bool:
        check_names(workflow_id, event_key=event.key)
        with self._lock:
            try:
                self._take_message(workflow_id, message_id)
            except RecordConflict:
                return False
            self._events[(workflow_id, event.key)] = copy.deepcopy(event.value)
        self._notify("event", workflow_id)
        return True

    def _take_message(self, workflow_id: str, message_id: int) -> None:
        inbox = self._inbox.get(workflow_id, [])
        for index, message in enumerate(inbox):
            if message.message_id == message_id:
                del inbox[index]
                return
        raise RecordConflict(
            f"workflow id {workflow_id!r}: message {message_id} was already consumed"
        )

    def peek_message(self, workflow_id: str, topic: str | tuple[str, ...]) -> Message | None:
        topics = checked_topics(workflow_id, topic)
        with self._lock:
            # The inbox is in send order: the first on any of the topics is the oldest.
            for message in self._inbox.get(workflow_id, ()):
                if message.topic in topics:
                    return message
            return None

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        check_names(workflow_id, event_key=key)
        with self._lock:
            if (workflow_id, key) in self._events:
                return True, copy.deepcopy(self._events[(workflow_id, key)])
            return False, None

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        check_names(workflow_id)
        with self._lock:
            if workflow_id not in self._rows:
                raise no_run_for_events(workflow_id)
            found = {k: v for (w, k), v in self._events.items() if w == workflow_id}
            return copy.deepcopy(dict(sorted(found.items())))

    def record_step_heartbeat(
        self, workflow_id: str, beat: StepHeartbeat, *, executor_id: str | None = None
    ) -> bool:
        check_beat(workflow_id, beat, executor_id)
        with self._lock:
            row = self._rows.get(workflow_id)
            check_recordable(row, workflow_id, executor_id)
            assert row is not None
            key = (workflow_id, beat.position, beat.child_path)
            stored = self._step_beats.get(key)
            if row.generation != beat.generation or (
                stored is not None and not keeps(stored.generation, stored.attempt, beat)
            ):
                return False
            self._step_beats[key] = attrs.evolve(beat, details=copy.deepcopy(beat.details))
            return True

    def get_step_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        check_names(workflow_id)
        with self._lock:
            row = self._rows.get(workflow_id)
            if row is None:
                raise no_run_for_heartbeats(workflow_id)
            found = [
                beat
                for (run, _, _), beat in self._step_beats.items()
                if run == workflow_id and beat.generation == row.generation
            ]
            found.sort(key=lambda beat: (beat.position, beat.child_path))
            return [attrs.evolve(beat, details=copy.deepcopy(beat.details)) for beat in found]

    def request_cancel(self, workflow_id: str, request: CancelRequest) -> CancelRequest:
        check_names(workflow_id)
        with self._lock:
            kept = self._cancels.setdefault(workflow_id, request)
        if kept is request:  # the engine running the run hears of it
            self._notify("cancel", workflow_id)
        return kept

    def get_cancel_request(self, workflow_id: str) -> CancelRequest | None:
        check_names(workflow_id)
        with self._lock:
            return self._cancels.get(workflow_id)

    def clear_cancel_request(self, workflow_id: str) -> None:
        check_names(workflow_id)
        with self._lock:
            self._cancels.pop(workflow_id, None)

    def set_parent_close(self, workflow_id: str, policy: str) -> None:
        check_names(workflow_id)
        with self._lock:
            self._parent_close[workflow_id] = policy

    def get_parent_close(self, workflow_id: str) -> str | None:
        check_names(workflow_id)
        with self._lock:
            return self._parent_close.get(workflow_id)

    def delete_workflow(self, workflow_id: str) -> bool:
        check_names(workflow_id)
        with self._lock:
            if self._rows.pop(workflow_id, None) is None:
                return False
            archived = [r.workflow_id for r in self._rows.values() if r.continued_as == workflow_id]
            for archived_id in archived:
                self._rows.pop(archived_id, None)
                self._logs.pop(archived_id, None)
                self._set_by.pop(archived_id, None)
                self._order.pop(archived_id, None)
            self._logs.pop(workflow_id, None)
            self._set_by.pop(workflow_id, None)
            self._inbox.pop(workflow_id, None)
            self._order.pop(workflow_id, None)
            self._used_keys = {k: c for k, c in self._used_keys.items() if k[0] != workflow_id}
            for key in [k for k in self._events if k[0] == workflow_id]:
                del self._events[key]
            for beat_key in [k for k in self._step_beats if k[0] == workflow_id]:
                del self._step_beats[beat_key]
            self._cancels.pop(workflow_id, None)
            self._parent_close.pop(workflow_id, None)
        self._notify("deleted", workflow_id)
        return True

    def close(self) -> None:
        pass
