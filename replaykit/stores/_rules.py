"""The rules every store applies alike: dedup within and across batches, queue room,
creation stamps, who may record, what a filter matches. The memory store states them
in Python; the SQL stores apply them around their statements. They live here, not in
the test store, so that no production store imports the test one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from replaykit.errors import (
    DuplicateDedupId,
    RecordConflict,
    RunNotPending,
    StoreError,
    WorkflowNotFound,
)
from replaykit.log import Record, Status
from replaykit.stores._attributes import checked_attributes
from replaykit.stores._checks import check_names, check_record, check_row, storable_error
from replaykit.stores._shards import check_shard_key
from replaykit.stores.base import ClaimLimits, OutgoingMessage, WorkflowFilter, WorkflowRow
from replaykit.stores.options import SendOptions, StatusChange
from replaykit.stores.where import matches

__all__ = [
    "LIVE_STATUSES",
    "batch_answers",
    "batch_of",
    "check_batch_dedup",
    "check_owned",
    "check_recordable",
    "checked_create",
    "checked_create_and_send",
    "checked_send",
    "checked_status",
    "checked_transaction_record",
    "claim_room",
    "claimed_deadline",
    "creation_batch",
    "duplicate_dedup",
    "duplicate_dedup_in_batch",
    "first_of_each_id",
    "gap_error",
    "listed_without_payloads",
    "matches_filter",
    "no_run_for_events",
    "no_run_to_send_to",
    "replaces_stored",
    "stamped_for_batch",
    "stamped_for_create",
    "utc_now",
]


def no_run_to_send_to(workflow_id: str) -> WorkflowNotFound:
    return WorkflowNotFound(
        f"cannot send to workflow id {workflow_id!r}: no such run. Start it first, or check the id"
    )


def gap_error(name: str, workflow_id: str, position: int, length: int) -> RecordConflict:
    """A record for a position past the log's end."""
    return RecordConflict(
        f"workflow {name!r} (id {workflow_id!r}): cannot record position {position}; "
        f"the log ends at {length}"
    )


def no_run_for_events(workflow_id: str) -> WorkflowNotFound:
    return WorkflowNotFound(
        f"cannot read the events of workflow id {workflow_id!r}: no such run. Check the id "
        "(replaykit workflows list); a deleted or collected run keeps no events"
    )


def duplicate_dedup(row: WorkflowRow, existing_id: str) -> DuplicateDedupId:
    return DuplicateDedupId(
        f"queue {row.queue!r} already has a live run with dedup_id {row.dedup_id!r} "
        f"(workflow id {existing_id!r}); wait for it to finish, use another dedup_id, or "
        "pass if_exists='return' to get the existing run",
        existing_id,
    )


def duplicate_dedup_in_batch(row: WorkflowRow, earlier_id: str) -> DuplicateDedupId:
    return DuplicateDedupId(
        f"rows {earlier_id!r} and {row.workflow_id!r} of one batch both take dedup_id "
        f"{row.dedup_id!r} on queue {row.queue!r}; nothing of the batch was created. Give "
        "them different dedup_ids, or leave one of them out",
        earlier_id,
    )


LIVE_STATUSES = (Status.ENQUEUED, Status.PENDING)


def batch_of(rows: Sequence[WorkflowRow]) -> list[WorkflowRow]:
    """`rows` as a list; a lone row passed where a batch belongs is refused."""
    if isinstance(rows, WorkflowRow):
        raise TypeError("create_workflows() takes a sequence of rows; use create_workflow(row)")
    return list(rows)


def first_of_each_id(rows: Sequence[WorkflowRow]) -> list[WorkflowRow]:
    """The rows whose id no earlier row of the batch has, in input order."""
    seen: set[str] = set()
    firsts = []
    for row in rows:
        if row.workflow_id not in seen:
            seen.add(row.workflow_id)
            firsts.append(row)
    return firsts


def batch_answers(
    rows: Sequence[WorkflowRow],
    existing: Mapping[str, WorkflowRow],
    keys: Mapping[str, str | None] | None = None,
) -> tuple[list[tuple[WorkflowRow, bool]], list[str]]:
    """What `create_workflows` answers for each row of the batch, in input order, and the
    queues its new runs were enqueued on (each once, in order), to notify.

    `existing` holds the runs that stood in the way of the batch's ids; every other
    id is created by its first row, and a later row with that id finds that run.
    `keys` holds the shard keys the store gave the new runs.
    """
    answers: list[tuple[WorkflowRow, bool]] = []
    created: dict[str, WorkflowRow] = {}
    queues: dict[str, None] = {}
    for row in rows:
        if row.workflow_id in existing:
            answers.append((existing[row.workflow_id], False))
        elif row.workflow_id in created:
            answers.append((created[row.workflow_id], False))
        else:
            if keys and row.shard_key is None:
                row = attrs.evolve(row, shard_key=keys.get(row.workflow_id))
            created[row.workflow_id] = row
            answers.append((row, True))
            if row.status is Status.ENQUEUED and row.queue is not None:
                queues[row.queue] = None
    return answers, list(queues)


def check_batch_dedup(
    rows: Sequence[WorkflowRow],
    *,
    is_new: Callable[[str], bool],
    live_holder: Callable[[WorkflowRow], str | None],
) -> None:
    """The dedup rule of `create_workflows`, shared by every store; raises or writes nothing.

    `rows` are the batch's first rows of each id, in input order; only rows
    with a queue and a dedup_id whose id is new (`is_new`) are checked, as
    `create_workflow` would check them one after another: refused when
    `live_holder(row)` names a live run of the store holding that dedup_id,
    or when an earlier new row of the batch, itself ENQUEUED or PENDING,
    takes it. The first refusal in input order is raised, for the whole batch.
    """
    held: dict[tuple[str, str], str] = {}
    for row in rows:
        if row.queue is None or row.dedup_id is None or not is_new(row.workflow_id):
            continue
        holder = live_holder(row)
        if holder is not None:
            error = duplicate_dedup(row, holder)
            raise DuplicateDedupId(f"{error}; nothing of the batch was created", holder)
        key = (row.queue, row.dedup_id)
        if key in held:
            raise duplicate_dedup_in_batch(row, held[key])
        if row.status in LIVE_STATUSES:
            held[key] = row.workflow_id


def checked_status(workflow_id: str, status: Status, change: StatusChange) -> Status:
    """`set_status`'s new status, once the names the change writes are checked."""
    executor_id, app_version = change.get("executor_id"), change.get("app_version")
    check_names(workflow_id, executor_id=executor_id, app_version=app_version)
    return Status(status)


def stays_pending(change: StatusChange) -> bool:
    """Whether a `set_status(PENDING, only_from=...)` is an engine's own bookkeeping on a
    run it may be running (a note on why it waits, a reset of the recovery count): it can
    only find the run PENDING and says something of it, so it resumes nothing and
    notifies nothing. A bare re-affirm (no error, no reset) is a hand-over: the run's
    engine is told it has it ("resumed"), wherever it runs."""
    only_from = change.get("only_from")
    return (
        only_from is not None
        and {Status(s) for s in only_from} == {Status.PENDING}
        and (bool(change.get("error")) or change.get("reset_recovery", False))
    )


def claim_room(
    limits: ClaimLimits,
    *,
    running: int,
    started_in_period: Callable[[datetime], int],
    now: datetime,
) -> int:
    """How many runs a claim may take under its limits (shared by every store)."""
    room = limits.limit
    if limits.concurrency is not None:
        room = min(room, limits.concurrency - running)
    if limits.rate_limit is not None and room > 0:
        starts, period = limits.rate_limit
        room = min(room, starts - started_in_period(now - timedelta(seconds=period)))
    return max(room, 0)


_MICROSECOND = timedelta(microseconds=1)


def claimed_deadline(row: WorkflowRow, now: datetime) -> datetime | None:
    """A run's deadline once claimed at `now`: its timeout counts from the claim, and an
    earlier deadline of its own (given at the enqueue) holds."""
    if row.timeout is None:
        return row.deadline
    started = now + timedelta(seconds=row.timeout)
    return started if row.deadline is None else min(row.deadline, started)


def utc_now() -> datetime:
    return datetime.now(UTC)


def stamped_for_create(row: WorkflowRow, now: datetime | None = None) -> WorkflowRow:
    """`row` as every store creates it: times it leaves unset filled in with now.

    A run created PENDING started when it was created; one created ENQUEUED
    starts when claimed. `now` is the time to fill in (default: the clock's).
    Raises `ValueError` if the row has a name no store takes.
    """
    check_row(row)
    check_shard_key(row.shard_key, row.workflow_id)
    now = now or utc_now()
    created = row.created_at or now
    return attrs.evolve(
        row,
        error=storable_error(row.error),
        created_at=created,
        updated_at=row.updated_at or now,
        started_at=row.started_at or (created if row.status is Status.PENDING else None),
        # A new run's first inputs are its inputs (a row copied from a continued run,
        # such as a fork's, does not bring the other run's along).
        first_inputs=row.first_inputs if row.generation > 0 else None,
        attributes=checked_attributes(
            row.attributes, f"workflow {row.name!r} (id {row.workflow_id!r})"
        ),
    )


def checked_create(row: WorkflowRow, records: Sequence[Record], fork_of: str | None) -> WorkflowRow:
    """`create_workflow`'s refusals before anything is read or written (the row's names,
    a fork's records and source id); the row as it is stored (`stamped_for_create`)."""
    stored = stamped_for_create(row)
    for record in records:
        check_record(row.workflow_id, record)
    if fork_of is not None:
        check_names(fork_of)
    return stored


def checked_send(
    workflow_id: str, topic: str, payload: Any, options: SendOptions
) -> OutgoingMessage:
    """`send_message()`'s message, its names checked before anything is read."""
    key = options.get("idempotency_key")
    check_names(workflow_id, topic=topic, idempotency_key=key)
    return OutgoingMessage(
        workflow_id, topic, payload, key, trace_context=options.get("trace_context")
    )


def checked_create_and_send(row: WorkflowRow, message: OutgoingMessage) -> WorkflowRow:
    """`create_and_send`'s refusals before anything is read or written: the row's and
    the message's names, a message to another run, a row deduplicated on its queue."""
    stored = stamped_for_create(row)
    check_names(row.workflow_id, topic=message.topic, idempotency_key=message.idempotency_key)
    if message.workflow_id != row.workflow_id:
        raise ValueError(
            f"create_and_send: the message is for {message.workflow_id!r}, the run to create "
            f"is {row.workflow_id!r}; a start delivers to the run it starts"
        )
    if row.dedup_id is not None:
        raise ValueError(
            f"create_and_send({row.workflow_id!r}): a start with a message is idempotent by "
            f"its id, not by a queue's dedup_id ({row.dedup_id!r}); leave dedup_id out"
        )
    return stored


def creation_batch(rows: Sequence[WorkflowRow]) -> tuple[list[WorkflowRow], list[WorkflowRow]]:
    """`create_workflows`' rows checked and stamped (`stamped_for_batch`), and of those the
    first of each id: the rows it may create, the later ones answered as theirs."""
    batch = stamped_for_batch(batch_of(rows))
    return batch, first_of_each_id(batch)


def stamped_for_batch(rows: Sequence[WorkflowRow]) -> list[WorkflowRow]:
    """`rows` as `create_workflows` creates them: each as `stamped_for_create` stamps it.

    Rows given no `created_at` get creation times a microsecond apart in input
    order, so a queue claims a batch of equal priorities in the order given.
    Refuses the whole batch, before anything is written, if a row has a name
    no store takes.
    """
    now = utc_now()
    return [stamped_for_create(row, now + index * _MICROSECOND) for index, row in enumerate(rows)]


def check_recordable(row: WorkflowRow | None, workflow_id: str, executor_id: str | None) -> None:
    """The ownership check every store makes before recording into a run."""
    check_owned(
        row,
        workflow_id,
        executor_id,
        Status.PENDING,
        "nothing can be recorded into it until it is resumed",
        "this engine lost it and stops",
    )


def check_owned(
    row: WorkflowRow | None,
    workflow_id: str,
    executor_id: str | None,
    status: Status,
    otherwise: str,
    not_ours: str,
) -> None:
    """That the run exists, is `status` and, when an executor is named, is that
    executor's; `otherwise` and `not_ours` end the two refusals' messages."""
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
    if row.status is not status:
        raise RunNotPending(
            f"workflow {row.name!r} (id {workflow_id!r}) is {row.status.value}; {otherwise}",
            row.status.value,
        )
    if executor_id is not None and row.executor_id != executor_id:
        raise RecordConflict(
            f"workflow {row.name!r} (id {workflow_id!r}) is owned by executor "
            f"{row.executor_id!r}, not {executor_id!r}; {not_ours}"
        )


def checked_transaction_record(workflow_id: str, position: int, record: object) -> Record:
    """What a Transaction body returned, refused unless it is the Record for `position`
    with names a store can hold."""
    if not isinstance(record, Record) or record.position != position:
        raise StoreError(
            f"workflow id {workflow_id!r}: the Transaction body must return the "
            f"Record for position {position}, not {record!r}"
        )
    check_record(workflow_id, record)
    return record


def replaces_stored(stored: Record, record: Record) -> bool:
    """Whether `record()` of `record` writes over `stored`, the record its position holds.

    A completed record is never written over. A pending one is completed by any
    completed record, and written over by a pending record of the same kind and
    name that carries more attempts: a retried step's next back-off, whose
    attempts and wake instant the record then holds. A pending record with
    equal or fewer attempts (a retried write after a lost acknowledgement, a
    stale writer) writes nothing, so the count never goes back.
    """
    if stored.outcome is not None:
        return False
    if record.outcome is not None:
        return True
    return (
        record.kind == stored.kind
        and record.name == stored.name
        and record.attempts > stored.attempts
    )


def matches_filter(row: WorkflowRow, where: WorkflowFilter) -> bool:
    statuses = where.statuses()
    if statuses is not None and row.status not in statuses:
        return False
    checks = (
        (where.name, row.name),
        (where.executor_id, row.executor_id),
        (where.app_version, row.app_version),
        (where.parent_id, row.parent_id),
        (where.queue, row.queue),
        (where.forked_from, row.forked_from),
        (where.continued_as, row.continued_as),
        (where.partition_key, row.partition_key),
    )
    if any(wanted is not None and wanted != actual for wanted, actual in checks):
        return False
    if where.id_prefix is not None and not row.workflow_id.startswith(where.id_prefix):
        return False
    created = row.created_at
    if where.since is not None and (created is None or created < where.since):
        return False
    if where.after is not None:
        if created is None:
            return False
        key = (created, row.workflow_id)
        passed = key < where.after if where.newest_first else key > where.after
        if not passed:
            return False
    if where.until is not None and (created is None or created >= where.until):
        return False
    wake = row.wake_at
    if where.wakes_after is not None and (wake is None or wake <= where.wakes_after):
        return False
    if where.wakes_by is not None and wake is not None and wake > where.wakes_by:
        return False
    return where.where is None or matches(where.where, row)


def listed_without_payloads(row: WorkflowRow) -> WorkflowRow:
    """`row` as a listing without payloads has it (`WorkflowFilter.payloads`): no
    inputs, and a result only where it is an ERROR run's failure."""
    result = row.result if row.status is Status.ERROR else None
    if row.inputs is None and result is row.result:
        return row
    return attrs.evolve(row, inputs=None, result=result)
