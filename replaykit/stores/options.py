"""The keywords of the `Store` protocol's methods, declared once.

Eleven of the protocol's methods take keywords beyond what they act on (`record`'s side
effects, `set_status`'s conditions, `claim`'s claimant and limits, ...). Spelled out,
each list stood five times: in the protocol, the codec store that forwards it, and
the memory, SQLite and PostgreSQL stores. Here each is a typed dict the methods take
as `**options` (PEP 692): a type checker still checks every keyword and its type at
every call, and a store that spells its keywords out instead still satisfies the
protocol. What each keyword means is said once, in `stores/base.py`; an optional one
left out means what the protocol says its default is (`None`, or as noted here).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any, TypedDict

from replaykit.log import Record, Status
from replaykit.stores.values import (
    ClaimLimits,
    EventWrite,
    OutgoingMessage,
    RecordWrite,
    WorkflowRow,
)

__all__ = [
    "ClaimTerms",
    "ClearRequest",
    "Continuation",
    "CreateAndSendOptions",
    "Ending",
    "HeartbeatOptions",
    "Owner",
    "RecordOptions",
    "Rewind",
    "SendOptions",
    "SideWrites",
    "StatusChange",
    "TransactionBody",
    "options_of",
]


class ClaimTerms(TypedDict):
    """`claim()`'s keywords, all required: who claims, for which version, within which
    limits, at what instant."""

    executor_id: str
    app_version: str
    limits: ClaimLimits
    now: datetime


#: What `record_transaction()` runs inside the store's transaction: given the store's
#: connection, it does its own writes and returns the record to write with them.
TransactionBody = Callable[[Any], Record]


class Owner(TypedDict, total=False):
    """The executor a write is gated on: given, the run must be owned by it."""

    executor_id: str | None


class SideWrites(TypedDict, total=False):
    """What `record()` writes beside the record, in its transaction: the messages it
    consumes, the message it sends, the event it sets, the run's next wake instant.
    The runtime's commits take these and add the executor (`runtime/commits.py`)."""

    consume: int | Sequence[int] | None
    send: OutgoingMessage | None
    event: EventWrite | None
    wake_at: datetime | None


class RecordOptions(SideWrites, Owner, total=False):
    """`record()`'s side writes and the executor it is gated on; `RecordWrite` holds the
    same with the run and the record, as `record_many()` takes them."""


def options_of(write: RecordWrite) -> RecordOptions:
    """A `record_many()` write's options, as `record()` takes them: the stores carry out
    both one way without building a `RecordWrite` for each `record()` (a frozen value
    costs a microsecond, a tenth of the memory store's write)."""
    return {
        "executor_id": write.executor_id,
        "consume": write.consume,
        "send": write.send,
        "event": write.event,
        "wake_at": write.wake_at,
    }


class Ending(Owner, total=False):
    """How `finish_workflow()` ends a run beside its status and result: the error text
    (left out: ""), the executor it is gated on, its last record. `FinishWrite` holds
    the same with the run, its status and its result."""

    error: str
    record: Record | None


class HeartbeatOptions(TypedDict, total=False):
    """What `heartbeat()` records beside the executor's liveness."""

    workflows: Collection[str] | None
    queues: Collection[str] | None
    lease_seconds: float | None


class StatusChange(TypedDict, total=False):
    """`set_status()`'s conditions and what else it changes (`error` left out: "",
    `reset_recovery` left out: False)."""

    only_from: Sequence[Status] | None
    error: str
    executor_id: str | None
    reset_recovery: bool
    app_version: str | None


class Rewind(TypedDict):
    """`rewind_workflow()`'s keywords, all required: the generation being archived and
    who runs the next one from when."""

    generation: int
    executor_id: str
    app_version: str
    now: datetime


class Continuation(TypedDict):
    """`continue_workflow()`'s keywords, all required: the generation being archived,
    the executor that runs the next (None: whoever holds the run), and the instant."""

    generation: int
    executor_id: str | None
    now: datetime


class SendOptions(TypedDict, total=False):
    """`send_message()`'s once-only key, the caller's id and its trace."""

    idempotency_key: str | None
    call_id: str | None
    trace_context: str | None


class CreateAndSendOptions(TypedDict, total=False):
    """`create_and_send()`'s caller id and its check of a run already there."""

    call_id: str | None
    accept: Callable[[WorkflowRow], None] | None


class ClearRequest(TypedDict, total=False):
    """Which of a schedule's requests `clear_schedule_request()` clears, if still so."""

    trigger_at: datetime | None
    backfill: tuple[datetime, datetime] | None
