"""Operator actions on a store: cancel, delete, collect garbage, export, fork.

The Engine and the `replaykit` command share these. They run no workflow
code; the Engine adds its in-process part (stopping what it runs) through the
`on_cancel` callback.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from replaykit.errors import WorkflowNotFound
from replaykit.log import Log, Record, Status
from replaykit.stores.base import DamagedRow, Store, WorkflowFilter, WorkflowRow

__all__ = [
    "TERMINAL",
    "cancel_run",
    "collect_garbage",
    "delete_run",
    "export_run",
    "fork_run",
    "get_run",
]

TERMINAL = (Status.SUCCESS, Status.ERROR, Status.CANCELLED)


def get_run(store: Store, workflow_id: str) -> WorkflowRow:
    row = store.get_workflow(workflow_id)
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
    return row


def cancel_run(
    store: Store,
    workflow_id: str,
    *,
    children: bool = True,
    on_cancel: Callable[[str], None] | None = None,
) -> bool:
    """Mark a run (and its unfinished children) CANCELLED; False if it had finished.

    An engine running it elsewhere finds out at its next record, which the
    store refuses because the run is no longer PENDING.
    """
    changed = store.set_status(
        workflow_id, Status.CANCELLED, only_from=(Status.PENDING, Status.ENQUEUED, Status.PARKED)
    )
    if on_cancel is not None:
        on_cancel(workflow_id)
    if children:
        for child in store.list_workflows(WorkflowFilter(parent_id=workflow_id)):
            if not child.status.is_terminal:
                cancel_run(store, child.workflow_id, children=True, on_cancel=on_cancel)
    return changed


def delete_run(
    store: Store,
    workflow_id: str,
    *,
    children: bool = False,
    on_cancel: Callable[[str], None] | None = None,
) -> bool:
    """Delete a run with its log, inbox and events, cancelling it first if unfinished.

    A run whose stored row is damaged can be deleted too: that is one of the
    two ways out its `DamagedRow` error names.
    """
    try:
        row = store.get_workflow(workflow_id)
    except DamagedRow as damaged:
        row = damaged.row
        if row is None:  # not even its status reads: cancel it in case it runs
            row = WorkflowRow(workflow_id, "", Status.PENDING)
    if row is None:
        return False
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
) -> int:
    """Delete runs created before `cutoff` (only finished ones unless told); the count."""
    # Batches keep memory flat on a large table; each batch is deleted before the
    # next is read, so reading from the start again finds the rest.
    where = WorkflowFilter(status=TERMINAL if keep_running else None, until=cutoff, limit=500)
    deleted = 0
    while batch := store.list_workflows(where):
        progress = sum(
            1 for row in batch if delete_run(store, row.workflow_id, on_cancel=on_cancel)
        )
        if progress == 0:
            break  # someone else deleted them as we went; nothing left for us
        deleted += progress
    return deleted


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


def fork_run(
    store: Store,
    source_id: str,
    from_position: int,
    *,
    workflow_id: str | None = None,
    executor_id: str | None = None,
    app_version: str | None = None,
    now: datetime | None = None,
) -> tuple[WorkflowRow, int]:
    """A new PENDING run holding the source's records below `from_position`.

    Returns the new row and how many records it kept (an unfinished timed
    command below the cut starts afresh in the fork). Executor and version
    default to the source's. The events the kept records set are set on the
    fork as well (the last value per key), as the fork's own log says: a
    `GetEvent` on the fork agrees with its `SetEvent` records.
    """
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
    fork_row = WorkflowRow(
        workflow_id=workflow_id or f"{source_id}-fork-{uuid.uuid4().hex[:8]}",
        name=row.name,
        status=Status.PENDING,
        inputs=row.inputs,
        executor_id=executor_id or row.executor_id,
        app_version=app_version or row.app_version,
        created_at=now or datetime.now(UTC),
        parent_id=row.parent_id,
        queue=row.queue,
        priority=row.priority,
    )
    stored, created = store.create_workflow(fork_row, records=kept, fork_of=source_id)
    if not created:
        raise ValueError(f"cannot fork into {fork_row.workflow_id!r}: that id is taken")
    return stored, len(kept)
