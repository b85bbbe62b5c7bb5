"""Operator actions on a store: cancel, resume, delete, collect garbage, export, fork.

The Engine, the Client and the `replaykit` command share these. They run no
workflow code and hold nothing of an engine's (no executor hold, no
heartbeat, no claim); the Engine adds its in-process part (stopping what it
runs) through the `on_cancel` callback.

Cancel, resume and garbage collection are one story: a cancel that cascades
to a run's children marks each child it cancelled with `cascade_note(parent)`
as its status detail, a resume of the parent resumes exactly those, and
neither `delete_run` nor `collect_garbage` removes a run whose parent is
still live (it may yet wait for it).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NotRequired, TypedDict, Unpack

import attrs

from replaykit import serde
from replaykit.commands import as_seconds, earliest_deadline
from replaykit.commands.children import DEFAULT_PARENT_CLOSE
from replaykit.commands.updates import check_not_reserved
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    PayloadTooLarge,
    RunContinued,
    WorkflowDeadlineExceeded,
    WorkflowIdConflict,
    WorkflowNotFound,
)
from replaykit.log import Failure, Log, Record, Status, Value
from replaykit.otel import current_trace_context
from replaykit.runtime.cancels import DEFAULT_GRACE, ask_to_cancel
from replaykit.runtime.run_filters import check_keywords
from replaykit.stores import open_store
from replaykit.stores._attributes import checked_attributes
from replaykit.stores.base import DamagedRow, OutgoingMessage, Store, WorkflowFilter, WorkflowRow

__all__ = [
    "DEFAULT_URL",
    "TERMINAL",
    "Posting",
    "Restamp",
    "ResumeOptions",
    "Resumed",
    "cancel_run",
    "cancel_timed_out",
    "cascade_note",
    "check_start",
    "close_children",
    "collect_garbage",
    "continued_error",
    "delete_run",
    "deliver",
    "encode_inputs",
    "export_run",
    "fork_run",
    "get_run",
    "live_parent",
    "new_run_row",
    "open_store_for",
    "outgoing_message",
    "resume_family",
    "resume_run",
    "run_outcome",
    "send_message",
    "stranded_runs",
]

# CONTINUED rows (earlier generations): garbage collection ages them as finished runs.
TERMINAL = (Status.SUCCESS, Status.ERROR, Status.CANCELLED, Status.CONTINUED)
DEFAULT_URL = "sqlite:///replaykit.db"
#: Where a listing of stranded runs stops, so that a huge backlog cannot fill memory.
STRANDED_SCAN = 10_000


def open_store_for(target: str | Store | None, *, who: str = "Engine") -> Store:
    """A store from a URL, a store instance, or None (REPLAYKIT_URL, else SQLite)."""
    if target is None:
        target = os.environ.get("REPLAYKIT_URL") or DEFAULT_URL
    if isinstance(target, str):
        return open_store(target)
    if not isinstance(target, Store):
        missing = [
            name for name in sorted(_STORE_METHODS) if not callable(getattr(target, name, None))
        ]
        if missing and len(missing) < len(_STORE_METHODS) // 2:
            # Most of a store: one written against an earlier protocol, say.
            raise TypeError(
                f"{who}() was given {target!r}, which lacks the Store method(s) "
                f"{', '.join(missing)}; implement them (replaykit.stores.base.Store says what "
                "each must do, and replaykit.testing.check_store checks them)"
            )
        raise TypeError(
            f"{who}() takes a URL ('sqlite:///app.db', 'postgresql://...', 'memory://') or a "
            f"store instance, got {target!r}"
        )
    return target


#: The methods of the Store protocol, to say which a would-be store lacks.
_STORE_METHODS = frozenset(
    name for name in vars(Store) if not name.startswith("_") and callable(getattr(Store, name))
)


# -- starting ---------------------------------------------------------------------------


def encode_inputs(name: str, args: Sequence[Any], kwargs: dict[str, Any], *, max_bytes: int) -> Any:
    """A run's arguments in their stored form, as `Workflow.encode_inputs` writes them.

    The Client encodes by name alone (it has no workflow code to bind the
    arguments to), so the two must write the same data: a start conflict is
    found by comparing stored inputs with these.
    """
    what = f"the arguments of workflow {name!r}"
    inputs = {
        "args": serde.encode(list(args), what=what),
        "kwargs": serde.encode(dict(kwargs), what=what),
    }
    check_input_size(name, inputs, max_bytes=max_bytes)
    return inputs


def new_run_row(
    name: str,
    inputs: Any,
    *,
    workflow_id: str | None,
    executor_id: str,
    app_version: str,
    now: datetime,
    queue: str | None,
    priority: int,
    dedup_id: str | None,
    delay: timedelta | float | None,
    timeout: float | None,
    deadline: datetime | None,
    trace_context: str | None,
    parent_id: str | None = None,
    partition_key: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    shard_key: str | None = None,
) -> WorkflowRow:
    """The row of a new run created `now`, as the Engine and the Client start it: ENQUEUED
    on `queue` (for any executor), else PENDING for `executor_id`; `attributes` checked."""
    delay_seconds = as_seconds(delay, "enqueue delay")
    workflow_id = workflow_id or str(uuid.uuid4())
    checked = checked_attributes(attributes, f"workflow {name!r} (id {workflow_id!r})")
    if timeout is not None and queue is None:
        # A run that starts now: its clock starts now (a queued one's at its claim).
        deadline = earliest_deadline(deadline, now + timedelta(seconds=timeout))
    return WorkflowRow(
        workflow_id=workflow_id,
        name=name,
        status=Status.ENQUEUED if queue is not None else Status.PENDING,
        inputs=inputs,
        executor_id="" if queue is not None else executor_id,
        app_version=app_version,
        created_at=now,
        parent_id=parent_id,
        queue=queue,
        priority=priority,
        dedup_id=dedup_id,
        wake_at=now + timedelta(seconds=delay_seconds) if delay_seconds else None,
        trace_context=trace_context,
        deadline=deadline,
        timeout=timeout,
        partition_key=partition_key,
        attributes=checked,
        shard_key=shard_key,
    )


def check_input_size(name: str, inputs: Any, *, max_bytes: int) -> None:
    size = len(serde.dumps(inputs).encode())
    if size > max_bytes:
        raise PayloadTooLarge(
            f"the arguments of workflow {name!r} are {size} bytes encoded, over the limit of "
            f"{max_bytes}; pass a reference instead, or raise max_payload_bytes=..."
        )


def _canonical(inputs: Any) -> str:
    # Stores may give back an object's keys in another order (PostgreSQL's jsonb
    # sorts them); the arguments are the same if their sorted text is.
    return json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _preview(inputs: Any, limit: int = 120) -> str:
    text = _canonical(inputs)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_start(stored: WorkflowRow, wanted: WorkflowRow) -> None:
    """Raise `WorkflowIdConflict` unless the stored run is the one `wanted` describes.

    Called when a start found its id taken: the same workflow with the same
    encoded arguments is the same start (idempotent, the existing run is the
    answer); another workflow, or other arguments, is a mistake the caller
    must hear of. A damaged stored row cannot be compared and is let be.

    A run that continued as new is found by the arguments it was created with
    (its generation 0's, which the store keeps), so that re-issuing the start
    that created it still returns it; the current generation's arguments are
    accepted too, as they were before the first ones were kept.
    """
    if stored.damaged:
        return
    workflow_id = stored.workflow_id
    status = stored.status.value
    if stored.name != wanted.name:
        raise WorkflowIdConflict(
            f"cannot start workflow {wanted.name!r} under id {workflow_id!r}: that id holds a "
            f"run of workflow {stored.name!r} ({status}). An id names one run; start "
            f"{wanted.name!r} under another id (or delete the old run first)",
            workflow_id=workflow_id,
            existing_name=stored.name,
            new_name=wanted.name,
        )
    given = _canonical(wanted.inputs)
    first = stored.first_inputs
    if given != _canonical(stored.inputs) and (first is None or given != _canonical(first)):
        shown = f"stored {_preview(stored.inputs)}"
        if first is not None:
            shown = (
                f"created with {_preview(first)}, at generation {stored.generation} "
                f"{_preview(stored.inputs)}"
            )
        raise WorkflowIdConflict(
            f"cannot start workflow {wanted.name!r} under id {workflow_id!r} with these "
            f"arguments: that id holds a run of {stored.name!r} ({status}) started with other "
            f"arguments ({shown}, given {_preview(wanted.inputs)}). "
            "A start under a used id returns the existing run only for the same workflow and "
            "arguments; pass the same arguments, or use another id for this run",
            workflow_id=workflow_id,
            existing_name=stored.name,
            new_name=wanted.name,
        )


def run_outcome(row: WorkflowRow, result_type: Any = None) -> Any:
    """A finished run's result, or its failure raised (`AwaitedWorkflowCancelled` if cancelled).

    A failure comes back as its own class only when that class is imported
    already (else `StepFailed`): stored data never makes anything be imported.
    """
    if row.status is Status.CANCELLED and WorkflowDeadlineExceeded.says_timed_out(row.error):
        raise WorkflowDeadlineExceeded(
            f"workflow {row.name!r} (id {row.workflow_id!r}) was cancelled: it {row.error}"
        )
    if row.status is Status.CONTINUED:
        raise continued_error(row)
    if row.status is Status.CANCELLED:
        why = f": {row.error}" if row.error else ""
        raise AwaitedWorkflowCancelled(
            f"workflow {row.name!r} (id {row.workflow_id!r}) was cancelled{why}"
        )
    outcome = row.result
    if isinstance(outcome, Failure):
        raise serde.decode_error(outcome.error)
    data = outcome.data if isinstance(outcome, Value) else None
    return serde.decode(data, result_type, what=f"the result of workflow {row.name!r}")


def continued_error(row: WorkflowRow) -> RunContinued:
    """What asking for the result of an archived generation says."""
    live = row.continued_as or "?"
    return RunContinued(
        f"workflow {row.name!r} (id {row.workflow_id!r}) is generation {row.generation} of "
        f"run {live!r}, which continued as new; it has no result of its own. Ask run "
        f"{live!r} for the result",
        continued_as=row.continued_as,
    )


class Posting(TypedDict):
    """How a message from outside is sent (`outgoing_message`, `send_message`): its
    once-only key (None: one of the call's own), the payload limit, the sender's span."""

    idempotency_key: str | None
    max_bytes: int
    trace_context: NotRequired[str | None]


def outgoing_message(
    workflow_id: str,
    message: Any,
    topic: str | None,
    *,
    idempotency_key: str | None,
    max_bytes: int,
    trace_context: str | None = None,
) -> tuple[OutgoingMessage, str]:
    """A message from outside, encoded and keyed, and the call id that names its send.

    Without a key of the caller's, a key of this call's own: a retry after a lost
    acknowledgement (the first attempt committed) must not deliver twice. With one,
    the call id tells such a retry what its first attempt did.
    """
    check_not_reserved(topic, "send(topic=...): the topic")
    data = serde.encode(message, what=f"the message to {workflow_id!r}", max_bytes=max_bytes)
    call_id = uuid.uuid4().hex
    key = idempotency_key or f"replaykit-send:{call_id}"
    return OutgoingMessage(
        workflow_id, topic or "", data, idempotency_key=key, trace_context=trace_context
    ), call_id


def send_message(
    store: Store, workflow_id: str, message: Any, topic: str | None, **posting: Unpack[Posting]
) -> bool:
    """Deliver a message to a run's inbox; False if `idempotency_key` was used already.

    Every send is keyed and names its call, so a store that retries it after a
    lost acknowledgement (`RetryingStore`) delivers once and answers truly.
    `trace_context` is the sender's span (W3C `traceparent`), kept with the message.
    """
    outgoing, call_id = outgoing_message(workflow_id, message, topic, **posting)
    return deliver(store, outgoing, call_id)


def deliver(store: Store, message: OutgoingMessage, call_id: str | None) -> bool:
    """`Store.send_message` of a message built beforehand, its send named `call_id`."""
    return store.send_message(
        message.workflow_id,
        message.topic,
        message.payload,
        idempotency_key=message.idempotency_key,
        call_id=call_id,
        trace_context=message.trace_context,
    )


def get_run(store: Store, workflow_id: str) -> WorkflowRow:
    row = store.get_workflow(workflow_id)
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
    return row


CASCADE = "cancelled with its parent"


def cascade_note(parent_id: str, reason: str = "") -> str:
    """The status detail a cascade writes on each child it cancels (`resume_run` reads it)."""
    note = f"{CASCADE} {parent_id!r}"
    return f"{note}: {reason}" if reason else note


def _cancelled_by_cascade_of(child: WorkflowRow, parent_id: str) -> bool:
    note = cascade_note(parent_id)
    return child.status is Status.CANCELLED and (
        child.error == note or child.error.startswith(note + ": ")
    )


def cancel_run(
    store: Store,
    workflow_id: str,
    *,
    children: bool = True,
    reason: str = "",
    on_cancel: Callable[[str], None] | None = None,
    on_ask: Callable[[str, str], object] | None = None,
) -> bool:
    """Mark a run CANCELLED, and apply its unfinished children's parent close policies
    (`close_children`); False if it had finished.

    `reason` is kept as the run's status detail (`workflows show` prints it);
    each child the cancel reaches gets `cascade_note(parent, reason)`, so that
    resuming the parent resumes them too. An engine running it elsewhere finds
    out at its next record, which the store refuses because the run is no
    longer PENDING.
    """
    changed = store.set_status(
        workflow_id,
        Status.CANCELLED,
        only_from=(Status.PENDING, Status.ENQUEUED, Status.PARKED),
        error=reason,
    )
    if on_cancel is not None:
        on_cancel(workflow_id)
    if children:
        close_children(store, workflow_id, reason, on_cancel=on_cancel, on_ask=on_ask)
    return changed


def close_children(
    store: Store,
    parent_id: str,
    reason: str,
    *,
    on_cancel: Callable[[str], None] | None = None,
    on_ask: Callable[[str, str], object] | None = None,
) -> None:
    """Apply each unfinished child's parent close policy: its parent has ended (or was
    stopped). "terminate" (the default) stops it and its own children, noted as a
    cascade of `parent_id` (`resume_run` brings it back with the parent); "cancel" asks
    it to cancel (`on_ask(child_id, detail)`, else through the store alone), unless it
    was asked already; "abandon" leaves it running."""
    for child in store.list_workflows(WorkflowFilter(parent_id=parent_id)):
        if child.status.is_terminal:
            continue
        policy = store.get_parent_close(child.workflow_id) or DEFAULT_PARENT_CLOSE
        if policy == "abandon":
            continue
        if policy == "cancel":
            if store.get_cancel_request(child.workflow_id) is None:
                _ask(store, child.workflow_id, cascade_note(parent_id, reason), on_cancel, on_ask)
            continue
        _cancel_child(store, child.workflow_id, parent_id, reason, on_cancel, on_ask)


def _ask(
    store: Store,
    workflow_id: str,
    detail: str,
    on_cancel: Callable[[str], None] | None,
    on_ask: Callable[[str, str], object] | None,
) -> None:
    if on_ask is not None:
        on_ask(workflow_id, detail)
        return
    ask_to_cancel(
        store,
        datetime.now(UTC),
        workflow_id,
        grace=DEFAULT_GRACE,
        reason=detail,
        children=True,
        stop=lambda wid, said, kids: cancel_run(
            store, wid, children=kids, reason=said, on_cancel=on_cancel
        ),
    )


def _cancel_child(
    store: Store,
    workflow_id: str,
    parent_id: str,
    reason: str,
    on_cancel: Callable[[str], None] | None,
    on_ask: Callable[[str, str], object] | None = None,
) -> None:
    # The note names the run whose cancel reached this one, which is the run
    # whose resume brings it back; its own children get its id in theirs.
    store.set_status(
        workflow_id,
        Status.CANCELLED,
        only_from=(Status.PENDING, Status.ENQUEUED, Status.PARKED),
        error=cascade_note(parent_id, reason),
    )
    if on_cancel is not None:
        on_cancel(workflow_id)
    close_children(store, workflow_id, reason, on_cancel=on_cancel, on_ask=on_ask)


def cancel_timed_out(
    store: Store,
    row: WorkflowRow,
    *,
    on_cancel: Callable[[str], None] | None = None,
    on_ask: Callable[[str, str], object] | None = None,
) -> WorkflowRow | None:
    """Cancel a run whose deadline passed, with a status detail that says so; the run cancelled.

    A child that inherited its deadline shares it with its parent: then the
    parent is the one that timed out (the earliest ancestor whose deadline is
    no later than the run's), and the cancel cascades to the child as any
    cancel does, so that a resume of the parent brings the child back too.
    None when the run (or that ancestor) had finished already.
    """
    if row.deadline is None:
        return None
    target = row
    seen = {row.workflow_id}
    while target.parent_id is not None and target.parent_id not in seen:
        try:
            parent = store.get_workflow(target.parent_id)
        except DamagedRow:
            break
        if (
            parent is None
            or parent.status.is_terminal
            or parent.deadline is None
            or target.deadline is None
            or parent.deadline > target.deadline
        ):
            break
        seen.add(parent.workflow_id)
        target = parent
    assert target.deadline is not None
    detail = WorkflowDeadlineExceeded.detail(target.deadline, target.timeout)
    if not cancel_run(
        store,
        target.workflow_id,
        children=True,
        reason=detail,
        on_cancel=on_cancel,
        on_ask=on_ask,
    ):
        return None
    return target


def resume_deadline(
    store: Store,
    row: WorkflowRow,
    now: datetime,
    *,
    timeout: float | None = None,
    deadline: datetime | None = None,
) -> None:
    """Settle a run's deadline before it is resumed.

    A deadline that passed is dropped (the run would be cancelled again at
    once); one still ahead holds. A new `timeout` (from `now`) or `deadline`
    replaces it, the earlier of the two winning. An ENQUEUED run resumed (it
    starts now, unclaimed) gets its timeout counted from `now`, as a claim
    would count it.
    """
    if timeout is not None or deadline is not None:
        wanted = deadline
        if timeout is not None:
            counted = now + timedelta(seconds=timeout)
            wanted = counted if wanted is None else min(wanted, counted)
        store.set_deadline(row.workflow_id, wanted, timeout)
        return
    if row.deadline is not None and row.deadline <= now:
        store.set_deadline(row.workflow_id, None, None)
    elif row.status is Status.ENQUEUED and row.timeout is not None:
        counted = now + timedelta(seconds=row.timeout)
        kept = counted if row.deadline is None else min(row.deadline, counted)
        store.set_deadline(row.workflow_id, kept, row.timeout)


class Restamp(TypedDict, total=False):
    """Who runs a run again, of which version, from when: what a resume, a rewind and a
    fork are given (each says what a key left out means; `now` left out: the clock's)."""

    executor_id: str | None
    app_version: str | None
    now: datetime | None


class ResumeOptions(Restamp, total=False):
    """`resume_run`'s and `resume_family`'s keywords: the restamp, and a new deadline."""

    timeout: float | None
    deadline: datetime | None


def resume_run(store: Store, workflow_id: str, **options: Unpack[ResumeOptions]) -> list[str]:
    """`resume_family`, flat: the run's id, the children its cancel reached, and the
    runs of its family moved onto `app_version` ([] when nothing changed)."""
    return resume_family(store, workflow_id, **options).ids


@attrs.frozen
class Resumed:
    """What a resume changed: the run, the children its cancel reached, the family moved."""

    #: The run resumed; None when it was finished (SUCCESS, ERROR, CONTINUED) and left.
    workflow_id: str | None
    #: Runs its cancel had cascaded to, resumed with it (parents before children).
    cascaded: tuple[str, ...] = ()
    #: Unfinished runs of its family (children, grandchildren, children of earlier
    #: generations) restamped onto the resume's `app_version`, parents before children.
    moved: tuple[str, ...] = ()

    @property
    def ids(self) -> list[str]:
        if self.workflow_id is None:
            return []
        extra = [m for m in self.moved if m not in self.cascaded]
        return [self.workflow_id, *self.cascaded, *extra]


def resume_family(
    store: Store,
    workflow_id: str,
    *,
    executor_id: str | None = None,
    app_version: str | None = None,
    now: datetime | None = None,
    timeout: float | None = None,
    deadline: datetime | None = None,
) -> Resumed:
    """Make a run PENDING again for `executor_id` (default: its own); what it changed.

    - CANCELLED, PARKED or PENDING: PENDING again from its log (a run cancelled
      before any worker claimed it: ENQUEUED again, unless `executor_id` is given), its recovery
      count reset; becoming PENDING notifies ("resumed", id), so the engine
      owning it picks it up at once if it runs (else at its next launch). A
      CANCELLED run's children that its cancel cascaded to are resumed as
      well (and theirs): a child that was never claimed from its queue goes
      back to it, the others become PENDING for the same executor and version.
    - ENQUEUED (a delayed run included): starts now, PENDING for
      `executor_id`, which must be given (the run has no engine yet).
    - SUCCESS or ERROR: nothing changes, the answer is [] (fork it instead).
    - CONTINUED (an archived generation): nothing changes, the answer is []
      (its run goes on under the live id; fork the generation to run it again).

    `app_version` restamps what is resumed, for engines of that version to
    run it (a resume onto newer code), and moves the run's whole unfinished
    family with it, in one transaction (`Store.move_family`): its children,
    theirs, and the children of its earlier generations, ENQUEUED, PENDING or
    PARKED under another version. A child left on the old version would never
    run after a code edit, and its parent would wait for it for ever. Raises
    `ValueError` when the run changed under the call.

    Deadlines (`resume_deadline`): a deadline that passed is dropped from
    every run resumed (a timed-out run would be cancelled again at once),
    one still ahead holds; `timeout` / `deadline` give the run (and the
    children resumed with it) a new one, counted from `now`.
    """
    row = get_run(store, workflow_id)
    if row.status in (Status.SUCCESS, Status.ERROR, Status.CONTINUED):
        return Resumed(None)
    if row.status is Status.ENQUEUED:
        if executor_id is None:
            raise ValueError(
                f"workflow {row.name!r} (id {workflow_id!r}) is ENQUEUED on queue "
                f"{row.queue!r}; a resume starts it now, so it needs the executor id of the "
                "engine to run it (resume(..., executor_id=...)); or leave it for a worker "
                "of the queue to claim"
            )
        only_from: tuple[Status, ...] = (Status.ENQUEUED,)
    else:
        only_from = (Status.CANCELLED, Status.PARKED, Status.PENDING)
    now = now or datetime.now(UTC)
    new_deadline = (timeout, deadline)
    # The family first, then the cancelled children, then the run: a parent that ran
    # again before its child could would wait for it (or record its cancellation).
    moved: list[str] = []
    if app_version is not None:
        moved = store.move_family(workflow_id, app_version=app_version, executor_id=executor_id)
    children: list[str] = []
    if row.status is Status.CANCELLED:
        children = _resume_cascaded(
            store, workflow_id, executor_id, app_version, now=now, new_deadline=new_deadline
        )
    resume_deadline(store, row, now, timeout=timeout, deadline=deadline)
    if row.status is Status.CANCELLED:
        # Its cancel (if it was one a workflow could handle) is over: a later one is new.
        store.clear_cancel_request(workflow_id)
    # Cancelled before any worker claimed it, and no engine named: back on its queue, as
    # its cascaded children go (PENDING for no executor, no engine would ever run it).
    queued = row.status is Status.CANCELLED and row.queue is not None and not row.executor_id
    changed = store.set_status(
        workflow_id,
        Status.ENQUEUED if queued and not executor_id else Status.PENDING,
        only_from=only_from,
        executor_id=executor_id,
        reset_recovery=True,
        app_version=app_version,
    )
    if not changed:
        current = store.get_workflow(workflow_id)
        state = current.status.value if current else "deleted"
        raise ValueError(
            f"workflow {row.name!r} (id {workflow_id!r}) changed while it was being resumed "
            f"(it is {state} now); look at it again and retry"
        )
    return Resumed(workflow_id, tuple(children), tuple(m for m in moved if m != workflow_id))


def _resume_cascaded(
    store: Store,
    parent_id: str,
    executor_id: str | None,
    app_version: str | None,
    *,
    now: datetime,
    new_deadline: tuple[float | None, datetime | None],
) -> list[str]:
    resumed: list[str] = []
    for child in store.list_workflows(WorkflowFilter(parent_id=parent_id)):
        if not _cancelled_by_cascade_of(child, parent_id):
            continue
        below = _resume_cascaded(
            store,
            child.workflow_id,
            executor_id,
            app_version,
            now=now,
            new_deadline=new_deadline,
        )
        timeout, deadline = new_deadline
        resume_deadline(store, child, now, timeout=timeout, deadline=deadline)
        if child.queue is not None and not child.executor_id:
            # Cancelled before any worker claimed it: back on its queue, where
            # a worker of the (re)stamped version takes it.
            changed = store.set_status(
                child.workflow_id,
                Status.ENQUEUED,
                only_from=(Status.CANCELLED,),
                app_version=app_version,
            )
        else:
            changed = store.set_status(
                child.workflow_id,
                Status.PENDING,
                only_from=(Status.CANCELLED,),
                executor_id=executor_id,
                reset_recovery=True,
                app_version=app_version,
            )
        if changed:
            resumed.append(child.workflow_id)
        resumed += below
    return resumed


def live_parent(store: Store, row: WorkflowRow) -> WorkflowRow | None:
    """The run's parent when that parent is unfinished (it may still wait for this run).

    None for an archived generation: a parent waits for the live id, never for it.
    """
    if not row.parent_id or row.continued_as is not None:
        return None
    try:
        parent = store.get_workflow(row.parent_id)
    except DamagedRow as damaged:
        parent = damaged.row
    if parent is None or parent.status.is_terminal:
        return None
    return parent


def delete_run(
    store: Store,
    workflow_id: str,
    *,
    children: bool = False,
    on_cancel: Callable[[str], None] | None = None,
) -> bool:
    """Delete a run with its log, inbox and events, cancelling it first if unfinished.

    A run whose parent is unfinished is refused with `ValueError`: the parent
    may still wait for it (delete or cancel the parent instead; with
    `children=True` a parent's deletion takes its children along). A run whose
    stored row is damaged can be deleted too: that is one of the two ways out
    its `DamagedRow` error names.
    """
    try:
        row = store.get_workflow(workflow_id)
    except DamagedRow as damaged:
        row = damaged.row
        if row is None:  # not even its status reads: cancel it in case it runs
            row = WorkflowRow(workflow_id, "", Status.PENDING)
    if row is None:
        return False
    parent = live_parent(store, row)
    if parent is not None:
        raise ValueError(
            f"cannot delete workflow {row.name!r} (id {workflow_id!r}): its parent "
            f"{parent.name!r} (id {parent.workflow_id!r}) is {parent.status.value} and may "
            "still wait for it. Cancel or delete the parent first (deleting the parent with "
            "children=True removes this run too)"
        )
    if not row.status.is_terminal:
        cancel_run(store, workflow_id, children=children, on_cancel=on_cancel)
    if children:
        for child in store.list_workflows(WorkflowFilter(parent_id=workflow_id)):
            delete_run(store, child.workflow_id, children=True, on_cancel=on_cancel)
    return store.delete_workflow(workflow_id)


def collect_garbage(
    store: Store,
    cutoff: datetime,
    *,
    keep_running: bool = True,
    on_cancel: Callable[[str], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> int:
    """Delete runs created before `cutoff` (only finished ones unless told); the count.

    A run whose parent is unfinished stays, however old: the parent may
    still wait for it. Each run goes in a transaction of its own, and `stop()`
    is asked before each: a collection ends early, never half a run.
    """
    # Batches keep memory flat on a large table; each batch is deleted before the
    # next is read, so reading again from the runs kept finds the rest.
    kept = 0
    deleted = 0
    while True:
        where = WorkflowFilter(
            status=TERMINAL if keep_running else None, until=cutoff, limit=500, offset=kept
        )
        batch = store.list_workflows(where)
        if not batch:
            break
        progress = spared = 0
        for row in batch:
            if stop():
                return deleted + progress
            try:
                if live_parent(store, row) is None:
                    progress += delete_run(store, row.workflow_id, on_cancel=on_cancel)
                    continue
            except ValueError:  # its parent was resumed meanwhile
                pass
            spared += 1
        kept += spared
        if progress == 0 and spared == 0:
            break  # someone else deleted them as we went; nothing left for us
        deleted += progress
    return deleted


def stranded_runs(
    store: Store,
    *,
    app_version: str,
    executor_id: str | None = None,
    where: WorkflowFilter | None = None,
) -> list[WorkflowRow]:
    """Unfinished runs that engines of `app_version` never pick up: their version differs.

    PENDING runs of `executor_id` (of any executor when None) and ENQUEUED
    runs of any queue whose stamped application version is not
    `app_version`, oldest first. An engine recovers and claims only its own
    version's runs, so these wait for an engine of their version, or for a
    resume that restamps them (`resume_run(..., app_version=...)`). `where`
    narrows the listing further (name, parent, queue, times, limit, offset;
    its status and version are set here). Scans at most `STRANDED_SCAN` runs
    per status.
    """
    base = where or WorkflowFilter()
    found: list[WorkflowRow] = []
    for status, executor in ((Status.PENDING, executor_id), (Status.ENQUEUED, None)):
        scan = attrs.evolve(
            base,
            status=status,
            executor_id=executor if executor is not None else base.executor_id,
            app_version=None,
            limit=STRANDED_SCAN,
            offset=0,
        )
        found += [row for row in store.list_workflows(scan) if row.app_version != app_version]
    found.sort(
        key=lambda row: (row.created_at or datetime.min.replace(tzinfo=UTC), row.workflow_id)
    )
    found = found[base.offset :]
    return found if base.limit is None else found[: base.limit]


def export_run(store: Store, workflow_id: str) -> Log:
    """The run's log with what replaying it needs (name, id, arguments, result)."""
    row = get_run(store, workflow_id)
    return Log(
        records=store.load_log(workflow_id),
        workflow_name=row.name,
        workflow_id=workflow_id,
        args=row.inputs,
        status=row.status.value,
        result=row.result,
    )


def _restamped(
    row: WorkflowRow,
    *,
    executor_id: str | None = None,
    app_version: str | None = None,
    now: datetime | None = None,
) -> tuple[str, str, datetime]:
    """The executor, version and instant a rewind or a fork of `row` runs with: those
    given, else the run's own (and the clock's); the caller refused any other keyword
    before it read the run (`check_keywords`)."""
    return executor_id or row.executor_id, app_version or row.app_version, now or datetime.now(UTC)


def rewind_run(
    store: Store, workflow_id: str, position: int, **stamp: Unpack[Restamp]
) -> WorkflowRow:
    """Run a finished run again from `position` under its own id (`Store.rewind_workflow`).

    The attempt that ended stays in its history as the archived generation the rewind
    made; the records below `position` are kept, the rest run again live, for
    `executor_id` and `app_version` (default: the run's). A live run is refused: cancel
    it first. A deadline that passed no longer applies (the run would be cancelled
    again at once). Returns the run's row as it now is.
    """
    check_keywords("rewind_run", stamp, Restamp, kind="keywords")
    row = get_run(store, workflow_id)
    records = store.load_log(workflow_id)
    completed = next((r.position for r in records if r.outcome is None), len(records))
    if isinstance(position, int) and not isinstance(position, bool) and completed < position:
        raise ValueError(
            f"cannot rewind workflow {row.name!r} (id {workflow_id!r}) to position "
            f"{position}: the command at position {completed} never completed, so no run "
            f"can go on after it; give a position from 0 to {completed}"
        )
    executor_id, app_version, when = _restamped(row, **stamp)
    live = store.rewind_workflow(
        workflow_id,
        position,
        generation=row.generation,
        executor_id=executor_id,
        app_version=app_version,
        now=when,
    )
    if row.deadline is not None and row.deadline <= when:
        store.set_deadline(workflow_id, None, None)
    return live


def fork_run(
    store: Store,
    source_id: str,
    from_position: int,
    *,
    workflow_id: str | None = None,
    **stamp: Unpack[Restamp],
) -> tuple[WorkflowRow, int]:
    """A new PENDING run holding the source's records below `from_position`.

    Returns the new row and how many records it kept (an unfinished timed
    command below the cut starts afresh in the fork). Executor and version
    default to the source's. The events the kept records set are set on the
    fork as well (the last value per key), as the fork's own log says: a
    `GetEvent` on the fork agrees with its `SetEvent` records.
    """
    check_keywords("fork_run", stamp, Restamp, kind="keywords")
    row = get_run(store, source_id)
    records = store.load_log(source_id)
    if not 0 <= from_position <= len(records):
        raise ValueError(
            f"cannot fork workflow {row.name!r} (id {source_id!r}) from position "
            f"{from_position}: its log has positions 0..{len(records) - 1}; pick a "
            f"position from 0 to {len(records)}"
        )
    kept: list[Record] = []
    for record in records[:from_position]:
        if record.outcome is None:
            break
        kept.append(record)
    executor_id, app_version, now = _restamped(row, **stamp)
    fork_row = WorkflowRow(
        workflow_id=workflow_id or f"{source_id}-fork-{uuid.uuid4().hex[:8]}",
        name=row.name,
        status=Status.PENDING,
        inputs=row.inputs,
        executor_id=executor_id,
        app_version=app_version,
        created_at=now,
        parent_id=row.parent_id,
        queue=row.queue,
        priority=row.priority,
        # The forker's span, not the source's: the fork is a new run someone asked for
        # now, and the source's trace is history.
        trace_context=current_trace_context(),
        forked_from=source_id,
        fork_position=from_position,
        attributes=row.attributes,  # the same business, searchable the same way
    )
    stored, created = store.create_workflow(fork_row, records=kept, fork_of=source_id)
    if not created:
        raise ValueError(f"cannot fork into {fork_row.workflow_id!r}: that id is taken")
    return stored, len(kept)
