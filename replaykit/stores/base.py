"""The `Store` protocol (the rows it exchanges with the runtime: `stores/values.py`).

A store persists workflow runs, their logs, their inboxes and their events.
Every method is one transaction. The runtime relies on these guarantees, and
`replaykit.testing.check_store` checks them for any implementation:

- A position is completed once. `record()` of a position that already holds a
  completed record changes nothing and returns the stored record, so a second
  writer adopts the first writer's outcome instead of overwriting it.
- A pending record is written over only to complete it, or by a pending record
  of the same kind and name with more `attempts` (a retried step's next
  back-off: its attempts and wake instant, and the run's `wake_at`, change in
  one transaction). One with equal or fewer attempts changes nothing and
  returns the stored record, so a retried or stale write never sets the count
  back.
- `record()` only writes while the run is PENDING (and, when `executor_id` is
  given, owned by that executor); otherwise it raises `RecordConflict` and
  writes nothing: a cancelled run or a run taken over by another engine cannot
  be recorded into. `RunNotPending` (a `RecordConflict`) says which status
  refused it.
- `record_late()` is the one way in after that: the completed record of a step
  whose effect happened while its run was cancelled lands at the log's next
  position, written by the executor that owned the run, once (a second landing
  of the same record answers the stored one). Only CANCELLED runs take it, so
  a resume goes on after the step instead of running its body again.
- Side effects passed to `record()` (consuming a message, sending one, setting
  an event) commit in the same transaction as the record, or not at all.
- `record_many()` applies many `record()` writes of distinct runs at once,
  each with the guarantees above; a refused write answers with its exception
  and the others still commit.
- `finish_many()` applies many `finish_workflow()` calls of distinct runs at
  once, each answered on its own, as `record_many()` does.
- `finish_workflow()` with `record=` commits the run's last record and its
  finish in one transaction, or neither: a run not PENDING (or not owned)
  answers False as without a record; a gap before the record's position, or
  a different completed record at it, raises `RecordConflict`, and the run
  stays PENDING with its log unchanged.
- `create_workflow()` is idempotent by id: it returns the existing run.
  `create_workflows()` creates many runs the same way in one transaction, all
  or nothing.
- `send_message()` with an idempotency key already used delivers nothing more. A key
  stays used for the run's whole life (after its message was consumed, and across
  `continue_workflow()`); only `delete_workflow()` forgets it. External completion's
  once-only rests on this.
- `record_step_heartbeat()` keeps one row per step of a run, the latest beat:
  a beat of an earlier generation or attempt than the stored one changes
  nothing (an abandoned attempt's late beat), and it is gated like `record()`
  (the run PENDING, owned by the executor named).
- Names are refused alike by every store, before anything is read or written:
  a workflow id, a run's name, executor id, app version, parent id, queue or
  dedup id, a record's name or kind, a topic, an event key or an idempotency
  key that holds NUL or a lone surrogate, or is longer than `MAX_NAME_BYTES`
  bytes of UTF-8, raises `ValueError` saying which field, its length and the
  limit (`record_many()` answers such a write with that error). A run's
  `error` text is kept, with NUL spelled out as `\\x00`. Schedule names are
  refused the same way by the schedule-state methods.
- Schedule states (`schedule_states()` and the methods after it) are shared by
  every engine on the store: pausing a schedule is one row that every engine's
  cron loop reads. Requests (a trigger, a backfill) are recorded once and
  cleared by the engine that carried them out, only if they are still the
  request it carried out; the runs they start have ids derived from the
  request, so two engines carrying out one request start its runs once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, Unpack, runtime_checkable

from replaykit.log import Outcome, Record, Status, archive_id
from replaykit.stores._holds import ExecutorHold
from replaykit.stores.options import (
    ClaimTerms,
    ClearRequest,
    Continuation,
    CreateAndSendOptions,
    Ending,
    HeartbeatOptions,
    Owner,
    RecordOptions,
    Rewind,
    SendOptions,
    SideWrites,
    StatusChange,
    TransactionBody,
)
from replaykit.stores.values import (
    MAX_NAME_BYTES,
    CancelRequest,
    ClaimLimits,
    DamagedRow,
    EventWrite,
    FinishWrite,
    LoadedRun,
    Message,
    OutgoingMessage,
    RecordWrite,
    ScheduleSpec,
    ScheduleState,
    StepHeartbeat,
    WorkflowFilter,
    WorkflowRow,
)

__all__ = [
    "MAX_NAME_BYTES",
    "CancelRequest",
    "ClaimLimits",
    "ClaimTerms",
    "ClearRequest",
    "Continuation",
    "CreateAndSendOptions",
    "DamagedRow",
    "Ending",
    "EventWrite",
    "FinishWrite",
    "HeartbeatOptions",
    "LoadedRun",
    "Message",
    "OutgoingMessage",
    "Owner",
    "RecordOptions",
    "RecordWrite",
    "Rewind",
    "ScheduleSpec",
    "ScheduleState",
    "SendOptions",
    "SideWrites",
    "StatusChange",
    "StepHeartbeat",
    "Store",
    "TransactionBody",
    "WorkflowFilter",
    "WorkflowRow",
    "archive_id",
]


@runtime_checkable
class Store(Protocol):
    """Durable state of workflow runs. Implementations must be thread-safe."""

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        """Insert `row` (and, for a fork, its first `records`) unless the id exists.

        Returns (the stored row, True) when created, (the existing row, False)
        otherwise; an existing run is never modified. A row with a `queue` and a
        `dedup_id` is refused with `DuplicateDedupId` while another ENQUEUED or
        PENDING run of that queue has the same `dedup_id`. A PENDING row gets
        `started_at` (its creation time) if it has none. Creating an ENQUEUED
        row notifies ("enqueued", queue).

        `fork_of` names the run `records` were copied from (its positions 0 to
        n-1, as a fork copies them). The events those records set in that run
        (`record(..., event=)`) are set on the new run too, in the same
        transaction: for each key, the value of the last copied record that
        set it. The new run's records remember what they set, so a fork of the
        fork sets them again; it notifies ("event", id) if it set any. Records
        that do not match the source's at their position (kind, digest) set
        nothing.
        """
        ...

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        """Create many runs in one transaction, each as `create_workflow(row)` would.

        Answers, in input order, what `create_workflow` called on each row in
        turn would: (the stored row, True) for a new id, (the existing row,
        False) for an id that exists; an existing run is never modified. A
        row whose id an earlier row of the same batch has answers that
        earlier row's answer with False. PENDING rows get `started_at`; rows
        given no `created_at` get creation times that increase in input order,
        so a queue claims a batch of equal priorities in the order given.

        All or nothing: the rows are checked in input order, and if a new row
        has a `queue` and a `dedup_id` that a live (ENQUEUED or PENDING) run of
        that queue holds, or that an earlier new row of the batch, itself
        ENQUEUED or PENDING, takes, `DuplicateDedupId` is raised for the whole
        batch and nothing is written. Its `existing_id` names the live run, or
        the earlier row of the batch (which was not created either). A row
        whose id exists is answered, never checked, as in `create_workflow`.

        After the commit, notifies ("enqueued", queue) once for each queue that
        got a new ENQUEUED run. PostgreSQL inserts the new rows with one
        statement. An empty batch writes nothing. Forks (`records=`) are
        created one at a time with `create_workflow`.
        """
        ...

    def claim(self, queue: str, **terms: Unpack[ClaimTerms]) -> list[WorkflowRow]:
        """Move ready ENQUEUED runs of `queue` and `app_version` to PENDING for `executor_id`.

        Ready: `wake_at` is None or <= now. Order: priority (lower first), then
        created_at, then id. Takes at most `limits.limit`, fewer if the queue's
        `concurrency` (PENDING runs of the queue, all executors) or `rate_limit`
        (runs whose `started_at` is within the last period, all executors) leaves
        less room. Atomic across concurrent claimers: no run is claimed twice and
        the limits hold however many engines claim at once. A claimed run with a
        `timeout` gets `deadline` = `now` + timeout, or keeps its own if that is
        earlier (a queued run's timeout counts from its claim; an absolute
        deadline from its enqueue). Sets `started_at`,
        and each returned row's `has_log`: whether the run has records already, or
        None if the store cannot tell cheaply (the engine then reads the log).
        Never False for a run that has records.
        """
        ...

    def heartbeat(
        self, executor_id: str, app_version: str, now: datetime, **options: Unpack[HeartbeatOptions]
    ) -> list[str]:
        """Record that `executor_id` is alive (upsert), and what it runs.

        `workflows`: the names it has registered; `queues`: the queues it claims
        from, both as they are now (None: not said, as by an older engine; the
        row then records neither). Kept bounded (replaykit/stores/_beats.py) and
        read back, for diagnostics only, by the stores' `read_heartbeats`.

        With `lease_seconds`, the beat also does what `take_over` does, in the
        same round trip where the store can (an idle engine's beat is then one
        statement), and returns the ids taken over; without it, `[]`.
        """
        ...

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        """Give `executor_id` the PENDING runs of `app_version` owned by dead executors.

        Dead: an executor whose last heartbeat is older than `lease_seconds`
        and whose id no live engine of `app_version` holds (`hold_executor`):
        a late heartbeat alone never moves a live engine's runs. Runs move in one transaction;
        their old owner's later writes are then refused (fencing). Returns the
        ids taken over.
        """
        ...

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        """Hold `executor_id` for an engine of `app_version` until released; None if held.

        At most one hold on an (id, version) exists at a time, across processes
        and machines sharing the store: engines of two versions may share an id
        (a rolling deploy), as each recovers only its own version's runs. A hold
        ends with `release()` or with the holding process (its lock is dropped
        by the OS or the server), so an engine restarted after a crash gets its
        id back at once.
        """
        ...

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        """What the store knows of the engine holding the id (host, pid, since), or ""."""
        ...

    def release(self, executor_id: str) -> list[str]:
        """Put `executor_id`'s PENDING queue runs back to ENQUEUED (a graceful shutdown).

        Returns their ids; notifies ("enqueued", queue) for each queue touched.
        """
        ...

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        """The run with this id, or None.

        A stored row that does not decode raises `DamagedRow`, naming the run
        and its damaged columns: the runtime reads a run this way before
        running it, so that run alone fails to activate.
        """
        ...

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        """Runs matching `where`, oldest first (by created_at, then id).

        A row that does not decode is listed with `damaged` saying what is
        wrong, its damaged fields at their defaults and `error` starting
        "damaged row: "; one whose id or status cannot be read is left out,
        with a warning. `create_workflow(s)` answer a damaged run in the way
        the same way; `claim` leaves damaged runs out of its answer (they stay
        PENDING for the claimer, logged).
        """
        ...

    def count_workflows(self, where: WorkflowFilter) -> int:
        """How many runs match `where`, counted by the store (one `COUNT` query).

        `where.limit`, `where.offset` and `where.payloads` do not count: the
        answer is how many rows `list_workflows` would list with neither limit
        nor offset. A listing shows pages of a total without reading the rows.
        """
        ...

    def count_workflows_by(self, where: WorkflowFilter, field: str) -> dict[str, int]:
        """How many runs match `where`, for each value of `field` (one grouped `COUNT`).

        `field` is one of `COUNT_FIELDS` ("status", "name", "queue", "app_version",
        "executor_id"); anything else is refused with `ValueError` naming them. Values
        no run has are left out; a run with no queue counts under "". `where`'s
        limit, offset and payloads do not count, as for `count_workflows`.
        """
        ...

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        """The run's records in position order, from position `since` on, in one query.

        `since` lets a reader that holds the first positions already (a warm run
        whose log moved on) read only the rest; `limit` (None: all) reads at most
        that many, for a page of a long log. A record that does not decode
        raises `DamagedData` naming the run and its position; so do a message
        (`peek_message`) or an event (`get_event`) that does not.
        """
        ...

    def record(self, workflow_id: str, record: Record, **options: Unpack[RecordOptions]) -> Record:
        """Write `record` at its position; return what the position now holds.

        - no record there: insert it (pending or completed);
        - a pending record there and `record` completed: complete it;
        - a pending record there and `record` pending, of the same kind and
          name, with more `attempts`: write `record` over it (a retried step's
          next back-off; its `attempts` and `wake_at` are what change), with the
          run's `wake_at` in the same transaction;
        - a completed record there, or a pending one that `record` does not
          write over (fewer or equal attempts: a retried write after a lost
          acknowledgement, or a stale writer; another kind or name): write
          nothing, return the stored record.
        Side effects commit only when `record` was written. A `send` whose key
        was used before delivers nothing; if it has `if_duplicate`, the record
        is written with that outcome instead, and returned so. `consume` names the
        message(s) to take from the inbox (one id, or several for an `All`); if
        any is already gone nothing is written and `RecordConflict` is raised.
        `wake_at` updates the run's earliest deadline (for timers found after a
        restart).
        Raises `RecordConflict` if the run is not PENDING or, with
        `executor_id`, belongs to another executor.
        """
        ...

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        """Apply many `record()` writes, each to a run of its own; answer each in input order.

        Each write is applied as `record()` would apply it alone, with the same
        gates: the run PENDING (and owned by `executor_id`, if given), the
        previous position present, `consume`/`send`/`event` in the same
        transaction as its record or not at all, and a completed position
        written once (the answer is then the stored record), a pending one
        written over only by a pending record with more attempts. The answer for a
        write is what `record()` would return, or the exception instance it
        would raise (`RecordConflict`, `WorkflowNotFound`, ...), returned
        rather than raised: a refused write does not stop the others, which
        still commit.

        `StoreUnavailable` answers every write that may not have committed
        (the connection was lost, the database stayed locked); one that did
        commit is found on a retry with `record()`, as after a lost
        acknowledgement, so the caller retries those one at a time.

        Precondition: no two writes name the same `workflow_id`; a call that
        breaks it raises `ValueError` and writes nothing. A closed store
        raises `StoreError`, as `record()` does. An empty sequence writes
        nothing. Notifications are sent as `record()` sends them, after the
        commit. SQLite writes the batch in one transaction (a savepoint per
        write); PostgreSQL writes the plain records (no `consume`, `send` or
        `event`) with one statement and the others one at a time; both share
        their batches with concurrent `record()` callers (group commit).
        """
        ...

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        """Land a completed record in a run that was cancelled while its effect ran.

        The effect (a step's body) happened; its record must not be lost, or a
        resume would do it again. Written only if the run is CANCELLED (else
        `RunNotPending`) and, with `executor_id`, owned by it (else
        `RecordConflict`): at the log's next position, or completing the pending
        record there. A completed record already there is returned unchanged
        (idempotent: a retry after a lost acknowledgement finds its own write).
        A position past the log's end raises `RecordConflict`; a pending
        `record` raises `ValueError`. The run's status is not changed.
        """
        ...

    def record_transaction(
        self, workflow_id: str, position: int, body: TransactionBody, **owner: Unpack[Owner]
    ) -> Record:
        """Run `body(connection)` and write the record it returns, in one transaction.

        If the position is already completed, `body` is not called and the
        stored record is returned. If `body` raises, the transaction rolls back
        and the exception propagates (the runtime then records the failure with
        `record()`). Stores without a database connection raise
        `TransactionUnsupported`.
        """
        ...

    def finish_workflow(
        self, workflow_id: str, status: Status, result: Outcome | None, **options: Unpack[Ending]
    ) -> bool:
        """Move a PENDING run to a terminal status with its result, and its last record.

        Returns False, and writes nothing, if the run does not exist, is not
        PENDING or, with `executor_id`, is owned by another executor; True
        once the run is finished. Sets `error`, clears `wake_at`, and notifies
        ("finished", id) after the commit.

        `record`, a completed `Record`, is the run's last outcome, from which
        `result` was computed: it is written as `record(workflow_id, record,
        executor_id=executor_id)` would write it (no side effects, `wake_at`
        None), in the same transaction as the finish; both commit or neither
        does. The finish's gates come first: a run that is not PENDING or not
        owned answers False, as without a record. Then the record's own:

        - no record at its position: inserted, provided the previous position
          is present; otherwise `RecordConflict` (a gap) and nothing written;
        - a pending record there: completed;
        - a completed record there that equals `record` (a retried write after
          a lost acknowledgement, or a record already committed with
          `record()`): counts as written, and the run is finished;
        - a different completed record there: another writer's outcome won,
          and the result was not computed from it. `RecordConflict`, and
          nothing is written: the run stays PENDING, and a replay finishes
          it from the stored outcome.

        A pending `record` is refused with `ValueError` (nothing written). A
        finish with a record is one commit: the journal of the testing kit
        counts it as one commit point, and PostgreSQL writes it in one
        statement, batched with concurrent finishes that carry a record.
        """
        ...

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        """Many `finish_workflow()` calls of distinct runs, at once.

        One answer per finish, in input order: what `finish_workflow()` would
        have returned (True, or False for a run missing, not PENDING or owned
        by another executor), or the exception it would have raised (a name
        the stores refuse, `RecordConflict` for a last `record` the log does
        not take, the store unavailable). Each finish is a write of its own,
        with its last record if it has one: a refused one does not hold the
        others back, and each one finished notifies ("finished", id) after
        its commit. The stores write
        them in the batches concurrent finishes share (one statement and one
        commit on PostgreSQL, one transaction on SQLite), so that the
        runtime's one thread can hand over the finishes of many runs and wait
        once. Two finishes of one run raise `ValueError`, nothing written.
        """
        ...

    def continue_workflow(
        self, workflow_id: str, inputs: Any, **options: Unpack[Continuation]
    ) -> WorkflowRow:
        """Archive the run's current generation and start the next under the same id.

        One transaction. The run must be PENDING (and, with `executor_id`,
        owned by it) and still at `generation`; otherwise `RecordConflict`,
        as `record()` refuses, and nothing is written. Then:

        - a new row `archive_id(workflow_id, generation)` is inserted, status
          CONTINUED, `continued_as` the live id, `generation` its number,
          with the run's name, inputs, parent, executor, app version and
          trace context; its `created_at` is when that generation began (the
          run's creation for generation 0, its `started_at` after), its
          `started_at` the run's and its `updated_at` `now`;
        - the run's records move to that row (an UPDATE of their run id);
        - the run's row is updated in place: `inputs`, `generation` + 1,
          `wake_at` None, recovery attempts 0, `error` "", `started_at` and
          `updated_at` `now`. Only those columns change; status, owner,
          queue, parent and the rest are kept. Its inbox, events and send
          keys stay with the id: messages not consumed carry over, and
          events keep their latest values.

        Returns the run's row as it now is. A retry after a lost
        acknowledgement (the run at `generation` + 1 with these inputs, and
        the archived row in place) writes nothing and returns the row too.
        An archived id longer than `MAX_NAME_BYTES`, or one that another run
        holds, raises `ValueError` naming it, and nothing is written.
        Notifies ("finished", archived id) and ("stream", id) (readers of
        the generation's streams end) after the commit, never ("finished",
        id): the run goes on.
        """
        ...

    def rewind_workflow(
        self, workflow_id: str, position: int, **options: Unpack[Rewind]
    ) -> WorkflowRow:
        """Run a finished run again from `position`, under its own id (one transaction).

        The run must have ended (SUCCESS, ERROR, CANCELLED) or be PARKED, and be at
        `generation`; otherwise `ValueError` (`RecordConflict` for the generation)
        and nothing is written. Its current generation is archived as
        `continue_workflow` archives one (row `archive_id(workflow_id,
        generation)`, status CONTINUED, its log moved there), keeping the attempt's
        result and error; the records below `position` are copied back to the run;
        the run's row starts its next generation PENDING for `executor_id` and
        `app_version`, with the same inputs, no result and no error. Inbox, events
        and children stay as they are. Notifies ("finished", archived id) and
        ("resumed", id). Returns the run's row as it now is.
        """
        ...

    def set_status(self, workflow_id: str, status: Status, **options: Unpack[StatusChange]) -> bool:
        """Change a run's status (only from `only_from` when given).

        `executor_id` reassigns ownership; `app_version` restamps the run (a
        resume on newer code); `reset_recovery` zeroes the recovery counter.
        Returns whether the row changed. A change to a terminal status notifies
        ("finished", id); a change to PENDING notifies ("resumed", id), so the
        owning engine picks the run up at once; so does a bare re-affirm of a
        PENDING run (`only_from=(PENDING,)`, no error, no reset: a client handing a run
        to its engine). An update that only a PENDING run may take and that says
        something of it (`only_from=(PENDING,)` with an `error` note or
        `reset_recovery`) is no resume and notifies nothing: the engine running the run
        keeps it as it is.
        A change to ENQUEUED notifies ("enqueued", queue) where the store's notes
        reach every sharer (an engine there claims an empty queue only when told).
        """
        ...

    def set_attributes(self, workflow_id: str, attributes: Mapping[str, Any]) -> bool:
        """Merge `attributes` into the run's: each name given takes its new value, the
        others stay. False if no run has the id (nothing written).

        The values are checked as a run's attributes are (`stores/_attributes.py`:
        names, types, sizes; `TypeError` or `ValueError` naming the attribute) before
        anything is written. Any status takes them; writing the same values again
        changes nothing, so a retry is safe. The run's other columns, `updated_at`
        among them, are left alone.
        """
        ...

    def bump_recovery(self, workflow_id: str) -> int:
        """Add one to the run's recovery attempts; return the new count."""
        ...

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        """Restamp the run and the unfinished runs below it onto `app_version`, in one
        transaction (a resume onto a new version moves the whole family).

        The family is the run and its descendants: runs whose `parent_id` is it,
        theirs, and so on, through finished runs too (children started by earlier
        generations of a run that continued as new name its live id). A member
        moves when it is ENQUEUED, PENDING or PARKED and stamped with another
        version: it gets `app_version`, and `updated_at` now; a PENDING or PARKED
        one also gets `executor_id` when given, and a PENDING one its recovery
        count reset. Statuses stay as they are; finished runs and archived
        generations are left as they are. Returns the ids moved, parents before
        children ([] when none needs to; `WorkflowNotFound` if no run has the id).
        After the commit, notifies ("resumed", id) for each PENDING run moved, so
        that an engine of the version picks it up at once, and ("enqueued", queue)
        once for each queue that has an ENQUEUED run moved.
        """
        ...

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        """Replace the run's `deadline` and `timeout` (None clears each), whatever its status.

        False, and nothing written, if no run has that id. A resume calls it
        before making a cancelled run PENDING again, so that a deadline that
        passed does not cancel the run at once. Setting the same values again
        changes nothing else.
        """
        ...

    def send_message(
        self, workflow_id: str, topic: str, payload: Any, **options: Unpack[SendOptions]
    ) -> bool:
        """Append to a run's inbox; False (and nothing sent) if the key was used before.

        `trace_context` (the sender's W3C `traceparent`) is kept with the message
        and read back by `peek_message`.

        `call_id` names the caller's one call across its retries: when the key
        was used by that same call (its first attempt committed, the answer was
        lost), nothing more is sent and the answer is True, what the first
        attempt would have said. Raises `WorkflowNotFound` when no run has that id.
        """
        ...

    def create_and_send(
        self, row: WorkflowRow, message: OutgoingMessage, **options: Unpack[CreateAndSendOptions]
    ) -> tuple[WorkflowRow, bool, bool]:
        """Create `row` unless its id exists, and deliver `message` to that run, in one
        transaction (send-with-start, update-with-start).

        When the id exists, the run is not modified and `accept(existing)` is called
        inside the transaction, before anything is written, with the run as
        `create_workflow` would answer it (its `first_inputs` filled in): if it
        raises, nothing is written and the exception propagates (a start under the
        id that is not this one, a run that may take no message). The message is
        then delivered as `send_message` would deliver it (its idempotency key, this
        `call_id`, its trace context): a key used before delivers nothing, and the
        same call again is told it delivered. `message.workflow_id` must be the
        row's id and the row must have no `dedup_id` (`ValueError`, nothing
        written). Returns (the run's row, whether created, whether delivered).
        After the commit, notifies as `create_workflow` and `send_message` do.
        """
        ...

    def answer_message(self, workflow_id: str, message_id: int, event: EventWrite) -> bool:
        """Take message `message_id` out of the run's inbox and set `event`, in one
        transaction and with no record: a request refused before it reached the
        workflow (an update's validator, run in the engine), answered where its
        caller looks for the answer.

        False, and nothing written, when the run's inbox does not hold the message
        (consumed or answered already, by this engine or another). Notifies
        ("event", workflow_id) after the commit.
        """
        ...

    def peek_message(self, workflow_id: str, topic: str | tuple[str, ...]) -> Message | None:
        """The oldest unconsumed message on `topic`, without consuming it.

        Given a tuple of topics, the oldest unconsumed message on any of them
        (the lowest `message_id`; its `topic` says which): what `Recv(("a", "b"))`
        takes. Consuming it (`record(consume=...)`) is the same as for one topic:
        once, with the record. An empty tuple is refused (`ValueError`), and
        every topic is checked as one topic is.
        """
        ...

    def record_step_heartbeat(
        self, workflow_id: str, beat: StepHeartbeat, *, executor_id: str | None = None
    ) -> bool:
        """Keep `beat` as the latest heartbeat of its step (`position`, `child_path`).

        One row per step of a run, written over by each beat. Gated as `record()`
        is: the run must be PENDING (else `RunNotPending`, naming the status found:
        the runtime stops the attempt) and, with `executor_id`, owned by it (else
        `RecordConflict`); `WorkflowNotFound` when no run has the id. Then nothing
        is written, and False answered, for a beat of another generation than the
        run's, or one of an earlier generation or attempt than the stored beat's
        (an abandoned attempt's late beat after its successor began). True once
        written; the same beat again writes the same row. No notification.
        """
        ...

    def get_step_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        """The latest heartbeat of each step of the run's current generation, in one query.

        Ordered by position, then child path; `[]` for a run whose steps never
        beat. `WorkflowNotFound` when no run has the id; `DamagedData` naming the
        run and the step when stored details do not decode.
        """
        ...

    def request_cancel(self, workflow_id: str, request: CancelRequest) -> CancelRequest:
        """Keep `request` for the run unless it holds one already; the one it holds now.

        The first request wins (equal to `request` when it was this one, so a retry
        after a lost acknowledgement counts as the first); a later one is not kept,
        and its caller stops the run hard (a second cancel). The caller checks that
        the run exists and is unfinished.
        """
        ...

    def get_cancel_request(self, workflow_id: str) -> CancelRequest | None:
        """The cancel request the run holds, None for none."""
        ...

    def clear_cancel_request(self, workflow_id: str) -> None:
        """Drop the run's cancel request (a resume); `delete_workflow` drops it too."""
        ...

    def set_parent_close(self, workflow_id: str, policy: str) -> None:
        """Keep the parent close policy of the child run `workflow_id` (written before
        the child is created, so no run exists yet; writing it again is the same)."""
        ...

    def get_parent_close(self, workflow_id: str) -> str | None:
        """The run's parent close policy as kept, None for none (the default)."""
        ...

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        """(True, value) for the latest value set under `key`, else (False, None)."""
        ...

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        """Every event of the run: each key set, with its latest value, in one query.

        `{}` for a run that set none. Raises `WorkflowNotFound` when no run has
        that id (unlike `get_event`, whose waiters poll for a run yet to set a
        key), and `DamagedData` naming the run and the key of a value that
        does not decode.
        """
        ...

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        """Call `callback(kind, key)` after commits others may be waiting on.

        kinds: "message" (key: the receiving workflow id), "event" (the workflow
        that set it), "finished" (the workflow that reached a terminal status),
        "enqueued" (the queue name), "stream" (the workflow whose `record()` or
        `record_many()` committed a completed record of a stream kind,
        `log.STREAM_KINDS`: a `WriteStream` value or a `CloseStream`; a
        `finish_workflow(record=)` carrying one notifies "finished", on which
        stream readers wait too), "deleted" (the workflow `delete_workflow`
        removed: engines forget the finished row they keep of it), "schedule"
        (the schedule whose state an operator changed: paused or resumed, a
        trigger or a backfill asked, deleted). Stores
        shared between processes also deliver other processes' commits
        (Postgres: LISTEN/NOTIFY); a notification may be lost or duplicated,
        so waiters also poll. A store that knows it may have lost some (its
        listener reconnected) says "relisten" (key ""). Returns a function
        that unsubscribes.
        """
        ...

    def delete_workflow(self, workflow_id: str) -> bool:
        """Remove a run, its log, inbox, events and step heartbeats; False if it did not exist.

        Its archived generations (`continued_as` the id) and their logs go too,
        in the same transaction.
        """
        ...

    # -- schedule states: one row per schedule, shared by every engine -------------

    def schedule_states(self) -> dict[str, ScheduleState]:
        """Every stored schedule's state, by name, in one query.

        A cron loop reads it at most once per poll interval, whatever the
        number of schedules.
        """
        ...

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        """Store each spec's definition (upsert), in one transaction.

        A new schedule starts unpaused with no requests. An existing one keeps
        its paused flag and its requests; its definition is replaced, and its
        `updated_at` set to `now`, only when the definition differs. Idempotent.
        """
        ...

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        """Pause or resume a stored schedule; False (nothing written) if none has that name.

        Idempotent: pausing a paused schedule changes nothing, not even its
        `updated_at`.
        """
        ...

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        """Ask the engines for one run of the schedule now, identified by `at`.

        Returns the instant of the trigger that is pending afterwards: `at`, or
        the earlier request's instant if one was pending (requests join, so a
        retry after a lost answer asks for nothing more). None, and nothing
        written, if no schedule has that name.
        """
        ...

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        """Ask the engines to run the schedule's ticks in [start, end).

        Returns the range that is pending afterwards: (start, end), or the
        earlier request's range if one was pending (which is kept; the caller
        tells the two apart). None, and nothing written, if no schedule has
        that name.
        """
        ...

    def clear_schedule_request(self, name: str, **options: Unpack[ClearRequest]) -> None:
        """Clear the pending trigger if it is still `trigger_at`, the backfill if still `backfill`.

        A request made after the one carried out is kept. Clearing what is not
        pending (or a schedule that does not exist) does nothing.
        """
        ...

    def delete_schedule_state(self, name: str) -> bool:
        """Remove a schedule's stored state and requests; False if none was stored."""
        ...

    def close(self) -> None:
        """Release connections. Idempotent."""
        ...
