"""The values a `Store` takes and gives: runs' rows, messages, writes, filters, claim
limits, schedule states, cancel requests and step heartbeats (the protocol that uses
them: `stores/base.py`, which re-exports each)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from replaykit._limits import checked_count
from replaykit.errors import DamagedData
from replaykit.log import Outcome, Record, Status
from replaykit.stores.where import Where, where_of

__all__ = [
    "MAX_NAME_BYTES",
    "CancelRequest",
    "ClaimLimits",
    "DamagedRow",
    "EventWrite",
    "FinishWrite",
    "LoadedRun",
    "Message",
    "OutgoingMessage",
    "RecordWrite",
    "ScheduleSpec",
    "ScheduleState",
    "StepHeartbeat",
    "WorkflowFilter",
    "WorkflowRow",
]

# PostgreSQL indexes at most 2,704 bytes per index row, and `(queue, dedup_id)`,
# `(workflow_id, key)` and `(workflow_id, topic, ...)` hold two names each.
MAX_NAME_BYTES = 1000


@attrs.frozen
class WorkflowRow:
    """One workflow run, as stored."""

    workflow_id: str
    name: str
    status: Status
    inputs: Any = None  # {"args": [...], "kwargs": {...}}, encoded
    result: Outcome | None = None
    executor_id: str = "local"
    app_version: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    parent_id: str | None = None
    queue: str | None = None
    priority: int = 0
    dedup_id: str | None = None
    recovery_attempts: int = 0
    wake_at: datetime | None = None  # earliest deadline of a suspended run; for an
    # ENQUEUED run, the instant before which it may not be claimed (enqueue delay)
    error: str = ""  # why a run was PARKED (or a short form of its failure)
    started_at: datetime | None = None  # when it became PENDING (rate limits count these)
    # The W3C `traceparent` current where the run was created (its starter's span, or
    # its parent's activation span), so that its spans join that trace; None: none.
    trace_context: str | None = None
    # A fork's source run and the position it was forked at (its first position
    # run afresh; the records before it were copied); None for a run not forked.
    forked_from: str | None = None
    fork_position: int | None = None
    # The instant at which the run is cancelled as timed out (`timeout=` / `deadline=`),
    # None for none. An ENQUEUED run's `timeout` has not started yet: `claim` sets
    # the deadline to the claim's instant plus `timeout` (the earlier one, if set).
    deadline: datetime | None = None
    timeout: float | None = None  # seconds, as given at the start or the enqueue
    # Continue-as-new: the live run counts its generations from 0 (each
    # `ContinueAsNew` adds one); an archived generation (status CONTINUED) keeps
    # its own number and names the live run's id in `continued_as`.
    generation: int = 0
    continued_as: str | None = None
    # A queued run's partition key (`enqueue(..., partition_key=...)`): a queue with
    # partitions serves its keys in turn and limits each key on its own; None: none
    # (the SQL stores keep '' in a NOT NULL column, so a claim can walk the keys).
    partition_key: str | None = None
    # The run's attributes (`start(..., attributes=...)`, `SetAttributes`): typed,
    # searchable key/values, kept in clear (stores/_attributes.py says which types).
    attributes: dict[str, Any] = attrs.field(factory=dict)
    # The key that places the run's rows on one shard (docs/storage.md, "Past one
    # server"): given at its start, else its parent's (a fork: its source's, an
    # archived generation: its live run's), else its own id, so a family stays
    # together. None only on a row not yet stored: the store fills it in.
    shard_key: str | None = None
    # Not stored: `claim` says whether the run already has records, so a run
    # claimed for the first time starts without reading its (empty) log.
    has_log: bool | None = attrs.field(default=None, eq=False)
    # Not stored: what of a damaged row could not be read ("inputs: not JSON
    # (...)"). Only listings return such rows, with those fields at their
    # defaults and `error` saying so; get_workflow raises DamagedRow instead.
    damaged: str = ""
    # The inputs the run was created with, once it has continued as new (its
    # `inputs` are then the current generation's); None for a run at generation 0.
    # A start re-issued under the id compares with them (`create_workflow`). The
    # SQL stores keep them in a column of their own and fill this in only on the
    # row `create_workflow(s)` finds in the way, where a start is compared.
    first_inputs: Any = attrs.field(default=None, eq=False)


class DamagedRow(DamagedData):
    """A run's stored row does not decode (not JSON, or JSON of the wrong shape).

    The message names the run and each damaged column with what is wrong.
    `row` is the run as a listing shows it (`damaged` set), or None when not
    even its id and status can be read.
    """

    def __init__(self, message: str, row: WorkflowRow | None) -> None:
        super().__init__(message)
        self.row = row


@attrs.frozen
class Message:
    """A message waiting in a workflow's inbox."""

    message_id: int
    workflow_id: str
    topic: str
    payload: Any
    created_at: datetime | None = None
    # The sender's W3C `traceparent`: the receiving run's span links to it.
    trace_context: str | None = None


@attrs.frozen
class OutgoingMessage:
    """A message `record()` should deliver in the same transaction (`Send`)."""

    workflow_id: str
    topic: str
    payload: Any
    idempotency_key: str | None = None
    trace_context: str | None = None  # the sending activation's span (`Message.trace_context`)
    # When the key was used before (nothing delivered), `record()` writes the
    # record with this outcome instead of its own, in the same transaction and
    # returns it so; None: the record is written as given either way.
    if_duplicate: Outcome | None = None


@attrs.frozen
class EventWrite:
    key: str
    value: Any


@attrs.frozen
class RecordWrite:
    """One `record()` call, as `record_many()` takes it: the same arguments."""

    workflow_id: str
    record: Record
    executor_id: str | None = None
    consume: int | Sequence[int] | None = None
    send: OutgoingMessage | None = None
    event: EventWrite | None = None
    wake_at: datetime | None = None


@attrs.frozen
class FinishWrite:
    """One `finish_workflow()` call, as `finish_many()` takes it: the same arguments."""

    workflow_id: str
    status: Status
    result: Outcome | None
    error: str = ""
    executor_id: str | None = None
    record: Record | None = None


def _checked_limit(_: object, attribute: Any, value: int | None) -> None:
    if value is not None:
        checked_count(value, f"a listing's {attribute.name}")


def _checked_offset(_: object, attribute: Any, value: int) -> None:
    checked_count(value, f"a listing's {attribute.name}")


@attrs.frozen
class WorkflowFilter:
    status: Status | Sequence[Status] | None = None
    name: str | None = None
    executor_id: str | None = None
    app_version: str | None = None
    parent_id: str | None = None
    queue: str | None = None
    forked_from: str | None = None  # the forks of this run (indexed)
    continued_as: str | None = None  # the archived generations of this run (indexed)
    partition_key: str | None = None  # queued runs with this partition key
    # Runs whose id starts with this (exactly, case and all: no wildcards). Matched
    # by the store without an index: it narrows a listing, it is not a lookup.
    id_prefix: str | None = None
    # A filter of the filter language (`stores/where.py`): text, parsed here (a
    # `FilterError` says where it does not parse), or its tree. It narrows what the
    # fields above select: a run is listed when it matches them all and this.
    where: Where | None = attrs.field(default=None, converter=where_of)
    since: datetime | None = None
    until: datetime | None = None
    # Runs by their wake instant (`WorkflowRow.wake_at`: when a PENDING run's timer is
    # due, a `Sleep`'s end or a wait's expiry). `wakes_after`: only runs with one later
    # than this. `wakes_by`: only runs with none, or one at or before this. An engine
    # reads the sleepers it left in the store with both (its timer scan), and its
    # recovery and sweeps pass over them with `wakes_by` (indexed for PENDING runs).
    wakes_after: datetime | None = None
    wakes_by: datetime | None = None
    # A keyset page: only runs after this (created_at, workflow_id) in the listing's
    # order. A loop over a large selection reads its next page from where the last
    # one ended, so runs that change or go meanwhile do not shift it (as an offset
    # would); served by the (created_at, workflow_id) index.
    after: tuple[datetime, str] | None = None
    limit: int | None = attrs.field(default=None, validator=_checked_limit)
    offset: int = attrs.field(default=0, validator=_checked_offset)
    # True: a listing runs newest first (created_at, then id, both descending), and
    # `after` then means before that (created_at, workflow_id): the next page in that
    # order. The UI's runs list reads its first pages so without an offset.
    newest_first: bool = False
    # A count stops at this many (each group's, for `count_workflows_by`): where a
    # selection holds a million runs the UI says "10,000+" instead of having the store
    # count them all. A store may still count further; it answers the lesser. Lists
    # ignore it.
    count_at_most: int | None = attrs.field(default=None, validator=_checked_limit)
    # False: the rows come without their payloads, for a listing that does not
    # show them: `inputs` None, and `result` None unless it is a failure (what
    # went wrong, in a line; a value may be megabytes). Filters nothing.
    payloads: bool = True

    def statuses(self) -> tuple[Status, ...] | None:
        if self.status is None:
            return None
        if isinstance(self.status, Status):
            return (self.status,)
        return tuple(Status(s) for s in self.status)


@attrs.frozen
class ClaimLimits:
    """What one `claim()` may take from a queue."""

    limit: int  # at most this many (this engine's free capacity)
    concurrency: int | None = None  # PENDING runs of the queue across all executors
    rate_limit: tuple[int, float] | None = None  # (starts, per seconds) across all executors
    # Partitions (`Queue(partition_concurrency=..., partition_rate_limit=...)`): the
    # claim serves the queue's partition keys in turn (`stores/_partitions.py`) and
    # holds these per key, across all executors, beside the limits above.
    partitioned: bool = False
    partition_concurrency: int | None = None  # PENDING runs of one key
    partition_rate_limit: tuple[int, float] | None = None  # (starts, per seconds) of one key
    # (key, weight) pairs: a key of weight w gets w runs a round of the turn; others 1.
    partition_weights: tuple[tuple[str, int], ...] = ()


@attrs.frozen
class ScheduleSpec:
    """What an engine's code defines of a schedule, as stored for listings and clients.

    Engines write it when their cron loop starts or is given the schedule; when
    engines of different code share a store, the last one to start wins.
    """

    name: str
    workflow_name: str
    cron: str
    tz: str | None = None  # an IANA zone name; None is UTC
    queue: str | None = None
    backfill: bool = False


@attrs.frozen
class ScheduleState:
    """A schedule's durable state: its stored definition, paused or not, and open requests."""

    name: str
    workflow_name: str
    cron: str
    tz: str | None
    queue: str | None
    backfill: bool
    paused: bool
    updated_at: datetime  # the last change of any of the above
    # A run asked for "now" that no engine has started yet: the instant it was asked for.
    trigger_at: datetime | None = None
    # A range of ticks [start, end) asked to be run that no engine has run yet.
    backfill_start: datetime | None = None
    backfill_end: datetime | None = None

    @property
    def spec(self) -> ScheduleSpec:
        return ScheduleSpec(
            self.name, self.workflow_name, self.cron, self.tz, self.queue, self.backfill
        )


@attrs.frozen
class CancelRequest:
    """A cancel a run was asked for (`cancel(workflow_id, grace=...)`), kept until the
    run is resumed or deleted: delivered at its current yield, and a hard stop once
    `grace_until` passes (runtime/cancels.py)."""

    reason: str
    grace_until: datetime
    requested_at: datetime


@attrs.frozen
class LoadedRun:
    """One run as a batch of wake-ups reads it (`load_runs`, which a store may offer
    beside the `Store` protocol): its row, its whole log, and its cancel request."""

    row: WorkflowRow
    log: list[Record]
    cancel: CancelRequest | None


@attrs.frozen
class StepHeartbeat:
    """A step attempt's latest heartbeat: what its body last passed to
    `step_context().heartbeat(details)`, and when.

    A run keeps one per step: `position` and, for a step inside a `Race` or an
    `All`, `child_path` (the argument index at each level, as
    `StepContext.child_path`; `()` for a step yielded on its own). `name` is the
    step's, `attempt` the attempt that beat (1 for the first), `generation` the
    run's generation it ran in (continue-as-new). `details` is the JSON data the
    body gave, as stored (None when it gave none); `at` the engine's time of the
    beat.
    """

    position: int
    name: str
    attempt: int
    at: datetime
    details: Any = None
    child_path: tuple[int, ...] = ()
    generation: int = 0
