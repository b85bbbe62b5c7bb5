"""`replaykit workflows`: the group, and `list` (runs oldest or newest first, or stranded ones).

The group's other commands live in rooms of their own: `versions`, `show`,
`operate` (export, cancel, resume, fork, delete, gc; without an id, cancel, terminate,
resume and delete act in bulk: `bulk`, with send-many), `start` (start, send),
`completions` (complete, fail: external completion) and `streams` (get-event, stream).
"""

from __future__ import annotations

from datetime import datetime

import attrs
import click

from replaykit._text import short, when_text
from replaykit.cli.bulk import send_many_command
from replaykit.cli.completions import complete_command, fail_command
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import Group, UsageError
from replaykit.cli.filters import (
    attributes_no_run_has,
    attributes_text,
    count_command,
    say_unknown_attributes,
    where_option,
)
from replaykit.cli.fit import Fit
from replaykit.cli.operate import (
    cancel_command,
    delete_command,
    export_command,
    fork_command,
    gc_command,
    resume_command,
    rewind_command,
    terminate_command,
)
from replaykit.cli.options import (
    datetime_option,
    json_option,
    status_option,
    url_option,
    wide_option,
)
from replaykit.cli.printer import Printer
from replaykit.cli.rows import STATUS_STYLE, row_json, run_error
from replaykit.cli.show import show_command
from replaykit.cli.start import send_command, start_command
from replaykit.cli.store import store_at
from replaykit.cli.streams import get_event_command, stream_command
from replaykit.cli.updates import update_command
from replaykit.cli.versions import versions_command
from replaykit.log import Status
from replaykit.runtime.admin import stranded_runs
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.stores.where import Where

__all__ = ["count_runs", "list_command", "workflows"]


@click.group("workflows", cls=Group)
def workflows() -> None:
    """List, inspect, export, cancel, resume, fork and delete runs."""


def _exists(store: Store, where: WorkflowFilter, offset: int) -> bool:
    return bool(store.list_workflows(attrs.evolve(where, limit=1, offset=offset)))


def count_runs(store: Store, where: WorkflowFilter) -> int:
    """How many runs match `where`, in about 2*log2(n) one-row reads.

    The store lists oldest first and has no count; listing newest first needs
    the total, and reading every row to count them would decode them all.
    """
    if not _exists(store, where, 0):
        return 0
    low, high = 1, 2  # at least `low` runs match, fewer than `high` do once high is found
    while _exists(store, where, high - 1):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if _exists(store, where, middle - 1):
            low = middle
        else:
            high = middle
    return low


def _newest_first(
    store: Store, where: WorkflowFilter, limit: int, offset: int
) -> tuple[list[WorkflowRow], int]:
    """The `limit` newest matching runs after skipping `offset` newer ones; and the total."""
    total = count_runs(store, where)
    end = max(total - offset, 0)
    begin = max(end - limit, 0)
    rows = store.list_workflows(attrs.evolve(where, limit=end - begin, offset=begin)) if end else []
    rows.reverse()
    return rows, total


@workflows.command("list")
@url_option
@status_option()
@click.option("--name", help="Only runs of this workflow name.")
@click.option("--version", "app_version", help="Only runs stamped with this app version.")
@click.option("--executor", help="Only runs owned by this executor id.")
@click.option("--parent", help="Only children of this run.")
@click.option("--queue", help="Only runs of this queue.")
@click.option("--partition-key", metavar="KEY", help="Only runs enqueued with this partition key.")
@where_option
@datetime_option(
    "--since", help="Created at or after: ISO time, or a duration ago (2h, 1h30m, 7d)."
)
@datetime_option("--until", help="Created before: ISO time, or a duration ago (2h, 1h30m, 7d).")
@click.option(
    "--stranded",
    is_flag=True,
    help="Only PENDING and ENQUEUED runs of versions other than --app-version: "
    "runs no engine of that version picks up.",
)
@click.option(
    "--app-version",
    "stranded_for",
    metavar="V",
    help="With --stranded: the version your engines run (Engine(app_version=...)).",
)
@click.option("--newest", is_flag=True, help="Newest first (--offset skips the newest).")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True)
@wide_option
@json_option
def list_command(
    url: str,
    statuses: tuple[Status, ...] | None,
    name: str | None,
    app_version: str | None,
    executor: str | None,
    parent: str | None,
    queue: str | None,
    partition_key: str | None,
    where_text: Where | None,
    since: datetime | None,
    until: datetime | None,
    stranded: bool,
    stranded_for: str | None,
    newest: bool,
    limit: int,
    offset: int,
    wide: bool,
    as_json: bool,
) -> None:
    """Runs, oldest first (--newest: newest first).

    --where FILTER keeps the runs that match a filter of the filter language, such as
    "customer = '42' and status in ('ERROR', 'CANCELLED') and created > '2026-12-01'"
    (docs/operations.md, "Filtering runs"), besides the other options.

    --stranded --app-version V lists the runs that engines of version V never
    pick up: PENDING runs (of --executor, if given) and ENQUEUED ones whose
    stamped version is not V. They wait for an engine of their own version, or
    for a resume or fork onto V (docs/versioning.md).
    """
    if stranded_for is not None and not stranded:
        raise UsageError(
            "--app-version goes with --stranded (runs of versions other than V); "
            "to list the runs of version V, pass --version V"
        )
    if stranded:
        if not stranded_for:
            raise UsageError(
                "--stranded needs --app-version V: stranded runs are those of versions other "
                "than your engines', and this command, which imports no workflow code, cannot "
                "compute the default one. Pass the version your engines are given "
                "(Engine(app_version=...))"
            )
        if statuses or app_version is not None:
            raise UsageError(
                "--stranded lists PENDING and ENQUEUED runs of versions other than "
                "--app-version; it takes no --status or --version"
            )
    where = WorkflowFilter(
        status=statuses,
        name=name,
        app_version=app_version,
        executor_id=executor,
        parent_id=parent,
        queue=queue,
        partition_key=partition_key or None,
        since=since,
        until=until,
        where=where_text,
    )
    with store_at(url) as store:
        if stranded_for:
            # stranded_runs sorts what it finds (a bounded scan) oldest first: the
            # total is known, so pages are cut here, in either order. --executor
            # narrows the PENDING runs only: ENQUEUED ones belong to no engine yet.
            found = stranded_runs(
                store,
                app_version=stranded_for,
                executor_id=executor,
                where=attrs.evolve(where, executor_id=None),
            )
            if newest:
                found.reverse()
            rows = found[offset : offset + limit]
            more = len(found) - offset - len(rows) if rows else 0
        elif newest:
            rows, total = _newest_first(store, where, limit, offset)
            more = total - offset - len(rows) if rows else 0
        else:
            rows = store.list_workflows(attrs.evolve(where, limit=limit, offset=offset))
            more = -1 if len(rows) == limit else 0  # -1: there may be more; unknown how many
        unknown = [] if rows or where_text is None else attributes_no_run_has(store, where_text)
    if as_json:
        echo_json([row_json(row) for row in rows])
        return
    if not rows:
        if stranded_for:
            echo(
                f"no stranded runs match: engines of version {stranded_for!r} pick up every "
                "PENDING and ENQUEUED run that does"
            )
        else:
            click.echo("no workflow runs match")
            say_unknown_attributes(unknown)
        return
    out = Printer(wide=wide)
    # The attributes' column only where a run has some: listings of stores without
    # them look as they did.
    shown = any(row.attributes for row in rows)
    out.table(
        ["ID", "NAME", "STATUS", "CREATED", "VERSION", "EXECUTOR", "ERROR"]
        + (["ATTRIBUTES"] if shown else []),
        [
            [
                row.workflow_id,
                row.name,
                row.status.value,
                when_text(row.created_at),
                row.app_version,
                row.executor_id,
                short(run_error(row), None if wide else 50 if out.console is None else 500),
            ]
            + ([attributes_text(row.attributes)] if shown else [])
            for row in rows
        ],
        [{2: STATUS_STYLE[row.status]} for row in rows],
        fit={
            0: Fit(16, weight=4),
            1: Fit(6, weight=2),
            4: Fit(7),
            5: Fit(8),
            6: Fit(5, weight=3),
            **({7: Fit(10, weight=3)} if shown else {}),
        },
    )
    first = "newest" if newest else "first"
    if more > 0:
        click.echo(
            f"({first} {len(rows)} from offset {offset}; {more} more match: "
            f"--offset {offset + limit})",
            err=True,
        )
    elif more < 0:
        click.echo(
            f"({first} {limit} from offset {offset}; more may match: --offset {offset + limit})",
            err=True,
        )
    if stranded_for:
        echo(
            f"(no engine of version {stranded_for!r} runs these: start an engine of their "
            "version to drain them, or move each onto yours with `replaykit workflows resume "
            f"ID --app-version {stranded_for}` (an ENQUEUED one also needs --executor E) or a "
            "fork; docs/versioning.md says when each is safe)",
            err=True,
        )


for _command in (
    count_command,
    versions_command,
    show_command,
    export_command,
    start_command,
    send_command,
    send_many_command,
    complete_command,
    fail_command,
    update_command,
    get_event_command,
    stream_command,
    cancel_command,
    terminate_command,
    resume_command,
    fork_command,
    rewind_command,
    delete_command,
    gc_command,
):
    workflows.add_command(_command)
