"""Cancel, resume and fork from the UI: the operator actions the CLI performs.

They go through `replaykit.runtime.admin`, as the CLI's do, so a run
cancelled from the browser is in the same state as one cancelled with
`replaykit workflows cancel`. Like the CLI, the UI runs no workflow code:
resume and fork mark a run PENDING for the engine that has the code.
"""

from __future__ import annotations

import attrs

from replaykit.log import Status
from replaykit.runtime.admin import cancel_run, fork_run, get_run, resume_run
from replaykit.stores.base import Store

__all__ = ["ActionRefused", "Done", "cancel", "fork", "resume"]


class ActionRefused(Exception):
    """The run's state does not allow the action; the message says why and what to do."""


@attrs.frozen
class Done:
    workflow_id: str  # the run to show next (a fork's new run)
    message: str


def _changed_meanwhile(store: Store, workflow_id: str, so: str) -> ActionRefused:
    """The refusal of an action the run's state changed under, naming the state now."""
    now = store.get_workflow(workflow_id)
    state = now.status.value if now else "gone"
    return ActionRefused(f"run {workflow_id!r} changed meanwhile (now {state}); {so}")


def _pickup(executor_id: str, app_version: str) -> str:
    return (
        f"The engine with executor id {executor_id!r} and app version {app_version!r} runs it "
        "(at once if it is running, else when it starts); the UI runs no workflow code."
    )


def cancel(store: Store, workflow_id: str, *, children: bool = True) -> Done:
    row = get_run(store, workflow_id)
    if row.status.is_terminal:
        raise ActionRefused(f"run {workflow_id!r} is already {row.status.value}; not cancelled")
    if not cancel_run(store, workflow_id, children=children):
        raise _changed_meanwhile(store, workflow_id, "not cancelled")
    return Done(
        workflow_id,
        f"Cancelled {workflow_id!r}"
        + (" and its unfinished children" if children else "")
        + ". An engine running it stops at its next record; resume continues it from its log.",
    )


def resume(
    store: Store,
    workflow_id: str,
    *,
    executor_id: str | None = None,
    app_version: str | None = None,
) -> Done:
    row = get_run(store, workflow_id)
    if row.status in (Status.SUCCESS, Status.ERROR):
        raise ActionRefused(
            f"run {workflow_id!r} is {row.status.value}; a finished run cannot be resumed. "
            "Fork it from a position instead."
        )
    if row.status is Status.ENQUEUED:
        raise ActionRefused(
            f"run {workflow_id!r} is ENQUEUED; it runs when a worker takes it from queue "
            f"{row.queue!r}"
        )
    if row.status not in (Status.CANCELLED, Status.PARKED):
        # The confirmation page offers no resume of a PENDING run; a POST made
        # without it must not move a running run to another executor either.
        raise ActionRefused(
            f"run {workflow_id!r} is {row.status.value}; only CANCELLED and PARKED runs are "
            "resumed. Reload its page to see what it is doing now."
        )
    target = executor_id or row.executor_id
    if not _resumed(store, workflow_id, target, app_version or None):
        raise _changed_meanwhile(store, workflow_id, "try again")
    if get_run(store, workflow_id).status is Status.ENQUEUED:  # never claimed before
        return Done(workflow_id, f"Resumed {workflow_id!r}: back on queue {row.queue!r}.")
    return Done(
        workflow_id,
        f"Resumed {workflow_id!r}: PENDING again. "
        + _pickup(target, app_version or row.app_version),
    )


def _resumed(store: Store, workflow_id: str, executor_id: str, app_version: str | None) -> bool:
    """Resume as the command and the engines do (the children a cancel cascaded to come
    back too); False if the run changed meanwhile."""
    try:
        return bool(
            resume_run(store, workflow_id, executor_id=executor_id, app_version=app_version)
        )
    except ValueError:
        return False


def fork(store: Store, workflow_id: str, from_position: int, *, new_id: str | None = None) -> Done:
    try:
        stored, kept = fork_run(store, workflow_id, from_position, workflow_id=new_id or None)
    except ValueError as exc:
        raise ActionRefused(str(exc)) from exc
    # Re-affirming PENDING notifies ("resumed"): a running owner starts it at once.
    store.set_status(stored.workflow_id, Status.PENDING, only_from=(Status.PENDING,))
    copied = f"keeping positions 0..{kept - 1}" if kept else "keeping no records"
    return Done(
        stored.workflow_id,
        f"Forked {workflow_id!r} into {stored.workflow_id!r}, {copied}; it runs live from "
        f"position {kept}. " + _pickup(stored.executor_id, stored.app_version),
    )
