"""Operating on runs through `runtime.admin`: `workflows export|cancel|resume|fork|delete|gc`.

Without an id, `cancel`, `terminate`, `resume` and `delete` act on a selection of runs
(cli/bulk.py).

`resume` and `fork` only mark a run PENDING for the executor id and app version
that should run it: the code that can run it lives in the application, whose
engine takes the run on its next recovery.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from replaykit._text import json_text, when_text
from replaykit.cli.bulk import acts_on_one, confirm, selection_options
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import CliError, UsageError
from replaykit.cli.options import json_option, timedelta_option, url_option
from replaykit.cli.rows import iso, pickup_note, row_json
from replaykit.cli.store import get_row, store_at
from replaykit.log import Status
from replaykit.runtime.admin import (
    TERMINAL,
    cancel_run,
    collect_garbage,
    delete_run,
    export_run,
    fork_run,
    live_parent,
    resume_family,
    rewind_run,
)
from replaykit.runtime.cancels import DEFAULT_GRACE, ask_to_cancel
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow

__all__ = [
    "cancel_command",
    "delete_command",
    "export_command",
    "fork_command",
    "gc_command",
    "resume_command",
    "rewind_command",
    "terminate_command",
]


#: `fork --from` and `rewind --from`: where the run goes on from.
from_option = click.option(
    "--from",
    "from_position",
    type=click.IntRange(min=0),
    required=True,
    help="First position to run again; the records before it are kept.",
)


#: `cancel --reason` and `terminate --reason`: kept with the run that is stopped.
reason_option = click.option(
    "--reason", default="", help="Why: kept with the run, and `show` prints it."
)


@click.command("export")
@click.argument("workflow_id")
@url_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write to this file instead of stdout.",
)
def export_command(workflow_id: str, url: str, output: Path | None) -> None:
    """The run's log as JSON, for `replaykit replay` and `replaykit.testing.replay`."""
    with store_at(url) as store:
        get_row(store, workflow_id)
        text = export_run(store, workflow_id).to_json()
    if output is None:
        click.echo(json_text(text))
        return
    try:
        output.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {str(output)!r}: {exc.strerror or exc}") from exc
    echo(f"wrote the log of {workflow_id!r} to {output}", err=True)


def _unfinished_row(store: Store, workflow_id: str, not_done: str) -> WorkflowRow:
    """The run, refused when it has finished already (it is `not_done`)."""
    row = get_row(store, workflow_id)
    if row.status.is_terminal:
        raise CliError(f"workflow {workflow_id!r} is already {row.status.value}; {not_done}")
    return row


@click.command("cancel")
@click.argument("workflow_id", required=False)
@url_option
@click.option(
    "--grace",
    type=float,
    default=DEFAULT_GRACE,
    show_default=True,
    help="Seconds the workflow has to clean up after Cancelled.",
)
@reason_option
@selection_options
@json_option
def cancel_command(
    workflow_id: str | None, url: str, grace: float, reason: str, as_json: bool, **options: Any
) -> None:
    """Ask a run to cancel: Cancelled is raised in it at its current yield, and it may
    clean up within the grace (`terminate` stops it with no cleanup).

    Without ID, every unfinished run the options select (--status, --name, ...; or
    --all), in batches, each keeping --reason; --dry-run prints how many.
    """
    keywords = {"grace": grace, "reason": reason}
    if not acts_on_one(workflow_id, "cancel", url, options, keywords, as_json=as_json):
        return
    with store_at(url) as store:
        row = _unfinished_row(store, workflow_id, "not cancelled")
        try:
            cancelled = ask_to_cancel(
                store,
                datetime.now(UTC),
                workflow_id,
                grace=grace,
                reason=reason,
                children=True,
                stop=lambda wid, detail, kids: cancel_run(store, wid, children=kids, reason=detail),
            )
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        after = get_row(store, workflow_id)
    if as_json:
        echo_json({**row_json(after), "cancelled": cancelled})
        return
    if after.status is Status.CANCELLED:
        echo(f"cancelled {workflow_id!r} ({row.name}) at once: it was not running.")
        return
    echo(
        f"asked {workflow_id!r} ({row.name}) to cancel. The engine running it raises "
        f"Cancelled at its current yield when it next activates it; it has {grace:g} s to "
        f"clean up. `replaykit workflows terminate {workflow_id}` stops it now."
    )


@click.command("terminate")
@click.argument("workflow_id", required=False)
@url_option
@click.option(
    "--children/--no-children", default=True, show_default=True, help="Stop its children too."
)
@reason_option
@selection_options
@json_option
def terminate_command(
    workflow_id: str | None, url: str, children: bool, reason: str, as_json: bool, **options: Any
) -> None:
    """Stop a run hard: CANCELLED now, no cleanup; its engine stops at its next record.

    Without ID, every unfinished run the options select (or --all), in batches.
    """
    keywords = {"children": children, "reason": reason}
    if not acts_on_one(workflow_id, "terminate", url, options, keywords, as_json=as_json):
        return
    with store_at(url) as store:
        row = _unfinished_row(store, workflow_id, "not terminated")
        cancelled = cancel_run(store, workflow_id, children=children, reason=reason)
        after = get_row(store, workflow_id)
    if as_json:
        echo_json({**row_json(after), "cancelled": cancelled})
        return
    echo(
        f"terminated {workflow_id!r} ({row.name}). An engine running it stops at its next "
        f"record (a step under way finishes, but its outcome is not recorded). "
        f"`replaykit workflows resume {workflow_id}` continues it from its log"
        + (", and the children this stop reached with it." if children else ".")
    )


@click.command("resume")
@click.argument("workflow_id", required=False)
@url_option
@click.option(
    "--executor",
    help="Hand the run to this executor id (default: its own; an ENQUEUED run needs one).",
)
@click.option("--app-version", help="Restamp the run for this app version (default: its own).")
@click.option("--reason", help="Without ID: why, logged with each run resumed.")
@selection_options
@json_option
def resume_command(
    workflow_id: str | None,
    url: str,
    executor: str | None,
    app_version: str | None,
    reason: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Mark a CANCELLED or PARKED run PENDING again, for its engine to continue it.

    The children its cancel cascaded to are resumed with it. An ENQUEUED run
    (delayed or not) starts now on the engine that --executor names. With
    --app-version, the run's unfinished family (children, grandchildren, children
    of earlier generations) moves onto that version with it, in one transaction,
    and the ids moved are printed: after a code edit, a child left on the old
    version would never run, and its parent would wait for it for ever.

    Without ID, every CANCELLED or PARKED run the options select (or --all), each
    staying with its own engine and version.
    """
    if workflow_id is None and (executor or app_version):
        raise UsageError(
            "--executor and --app-version go with one run's ID; a bulk resume leaves "
            "each run with its own engine and version"
        )
    bulk_only = {"reason": reason}
    keywords = {"reason": reason or ""}
    if not acts_on_one(
        workflow_id, "resume", url, options, keywords, as_json=as_json, bulk_only=bulk_only
    ):
        return
    with store_at(url) as store:
        row = get_row(store, workflow_id)
        if row.status is Status.CONTINUED:
            raise CliError(
                f"workflow {workflow_id!r} is an earlier generation of run {row.continued_as!r}, "
                "which continued as new; it is not resumed (fork it to run it again)"
            )
        if row.status in (Status.SUCCESS, Status.ERROR):
            raise CliError(
                f"workflow {workflow_id!r} is {row.status.value}; a finished run cannot be "
                f"resumed. Re-run it from a position with "
                f"`replaykit workflows fork {workflow_id} --from N`"
            )
        if row.status is Status.ENQUEUED and not executor:
            raise CliError(
                f"workflow {workflow_id!r} is ENQUEUED on queue {row.queue!r}: a worker of "
                f"that queue takes it when it is due; to start it now, name the engine that "
                f"runs it: `replaykit workflows resume {workflow_id} --executor ID`"
            )
        resumed = resume_family(store, workflow_id, executor_id=executor, app_version=app_version)
        done = sum(1 for r in store.load_log(workflow_id) if r.outcome is not None)
        after = get_row(store, workflow_id)
    if as_json:
        echo_json(
            {
                **row_json(after),
                "resumed": resumed.ids,
                "cascaded": list(resumed.cascaded),
                "moved": list(resumed.moved),
                "replayed_positions": done,
            }
        )
        return
    target = executor or row.executor_id
    children = resumed.cascaded
    also = f" With it, the children its cancel reached: {', '.join(children)}." if children else ""
    if resumed.moved:
        also += (
            f" Moved onto version {app_version!r} with it, the unfinished runs of its family: "
            f"{', '.join(resumed.moved)}."
        )
    started = "started now" if row.status is Status.ENQUEUED else "PENDING again"
    if after.status is Status.ENQUEUED:  # cancelled before a worker claimed it
        echo(f"resumed {workflow_id!r} ({row.name}): back on queue {row.queue!r}.{also}")
        return
    echo(
        f"resumed {workflow_id!r} ({row.name}): {started}, {done} recorded position(s) "
        f"to replay.{also} " + pickup_note(target, app_version or row.app_version)
    )


@click.command("fork")
@click.argument("workflow_id")
@from_option
@url_option
@click.option("--id", "new_id", help="The new run's id (default: ID-fork-<random>).")
@click.option("--executor", help="Executor id to run the fork (default: the source's).")
@click.option("--app-version", help="App version to stamp the fork with (default: the source's).")
@json_option
def fork_command(
    workflow_id: str,
    from_position: int,
    url: str,
    new_id: str | None,
    executor: str | None,
    app_version: str | None,
    as_json: bool,
) -> None:
    """Copy a run's log below --from into a new PENDING run that goes on from there.

    The way to re-run a fixed version of a failed run without repeating its
    completed steps.
    """
    with store_at(url) as store:
        get_row(store, workflow_id)
        stored, kept = fork_run(
            store,
            workflow_id,
            from_position,
            workflow_id=new_id,
            executor_id=executor,
            app_version=app_version,
        )
        # Re-affirming PENDING notifies ("resumed"): a running owner starts it at once.
        store.set_status(stored.workflow_id, Status.PENDING, only_from=(Status.PENDING,))
    if as_json:
        # workflow_id is the new run's; forked_from the source's.
        echo_json({**row_json(stored), "kept_positions": kept})
        return
    copied = f"keeping positions 0..{kept - 1}" if kept else "keeping no records"
    echo(
        f"forked {workflow_id!r} into {stored.workflow_id!r}, {copied}; it runs live from "
        f"position {kept}. " + pickup_note(stored.executor_id, stored.app_version)
    )


@click.command("delete")
@click.argument("workflow_id", required=False)
@url_option
@click.option("--children", is_flag=True, help="Delete its child runs too.")
@click.option("--reason", help="Without ID: why, logged with each run deleted.")
@selection_options
@json_option
def delete_command(
    workflow_id: str | None,
    url: str,
    children: bool,
    reason: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Delete a run with its log, inbox and events (cancelling it first if it runs).

    Without ID, every run the options select (or --all), in batches; a child whose
    parent is unfinished is refused and counted as failed.
    """
    yes: bool = options["yes"]
    bulk_only = {"reason": reason}
    keywords = {"children": children, "reason": reason or ""}
    if not acts_on_one(
        workflow_id, "delete", url, options, keywords, as_json=as_json, bulk_only=bulk_only
    ):
        return
    with store_at(url) as store:
        row = get_row(store, workflow_id)
        if not yes:
            confirm(
                f"delete {row.status.value} run {workflow_id!r} ({row.name}) and its log"
                + (" and children" if children else "")
                + "?",
                as_json=as_json,
            )
        deleted = delete_run(store, workflow_id, children=children)
    if as_json:
        echo_json(
            {"workflow_id": workflow_id, "name": row.name, "deleted": deleted, "children": children}
        )
        return
    echo(f"deleted {workflow_id!r}")


@click.command("rewind")
@click.argument("workflow_id")
@from_option
@url_option
@click.option("--executor", help="Executor id to run it (default: the run's).")
@click.option("--app-version", help="App version to stamp it with (default: the run's).")
@json_option
def rewind_command(
    workflow_id: str,
    from_position: int,
    url: str,
    executor: str | None,
    app_version: str | None,
    as_json: bool,
) -> None:
    """Run a finished or failed run again from --from, under its own id.

    The attempt that ended stays in the run's history (`workflows show` lists its
    generations); a live run is refused: cancel it first.
    """
    with store_at(url) as store:
        stored = rewind_run(
            store, workflow_id, from_position, executor_id=executor, app_version=app_version
        )
    if as_json:
        echo_json({**row_json(stored), "kept_positions": from_position})
        return
    echo(
        f"rewound {workflow_id!r} to position {from_position} (generation "
        f"{stored.generation}); the attempt that ended is generation "
        f"{stored.generation - 1} of its history. "
        + pickup_note(stored.executor_id, stored.app_version)
    )


@click.command("gc")
@url_option
@timedelta_option(
    "--older-than", required=True, help="Delete runs created longer ago than this (30d, 12h, ...)."
)
@click.option(
    "--include-unfinished",
    is_flag=True,
    help="Also delete PENDING, ENQUEUED and PARKED runs (cancelling them first).",
)
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def gc_command(
    url: str,
    older_than: timedelta,
    include_unfinished: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Retention: delete old runs; by default only finished ones."""
    try:
        cutoff = datetime.now(UTC) - older_than
    except OverflowError:
        raise UsageError(f"--older-than {older_than.days}d reaches before the year 1") from None
    with store_at(url) as store:
        matching = store.list_workflows(
            WorkflowFilter(status=None if include_unfinished else TERMINAL, until=cutoff)
        )
        what = "runs" if include_unfinished else "finished runs"
        # collect_garbage keeps the children of unfinished parents, which may
        # still wait for them: the count says what it would delete.
        before = len(matching)
        matching = [row for row in matching if live_parent(store, row) is None]
        spared = before - len(matching)
        kept = f" ({spared} kept: their parents are unfinished)" if spared else ""
        report = {"cutoff": iso(cutoff), "matching": len(matching), "kept": spared}
        if dry_run or not matching:
            if as_json:
                echo_json({**report, "deleted": 0, "dry_run": dry_run})
                return
            click.echo(f"{len(matching)} {what} created before {when_text(cutoff)} UTC{kept}")
            return
        if not yes:
            confirm(
                f"delete {len(matching)} {what} created before {when_text(cutoff)} UTC?",
                as_json=as_json,
            )
        deleted = collect_garbage(store, cutoff, keep_running=not include_unfinished)
    if as_json:
        echo_json({**report, "deleted": deleted, "dry_run": False})
        return
    click.echo(f"deleted {deleted} {what} created before {when_text(cutoff)} UTC{kept}")
