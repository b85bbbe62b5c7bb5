"""`--where FILTER` (the filter language, `stores/where.py`) as the commands take it,
`replaykit workflows count` (how many runs match, or how many per value of a field or
an attribute), and what a listing says of an attribute no run has."""

from __future__ import annotations

from datetime import datetime

import click

from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import UsageError
from replaykit.cli.options import datetime_option, json_option, status_option, url_option
from replaykit.cli.printer import Printer
from replaykit.cli.store import store_at
from replaykit.errors import FilterError
from replaykit.log import Status
from replaykit.stores._attributes import encoded_attribute
from replaykit.stores.base import Store, WorkflowFilter
from replaykit.stores.where import Has, Where, attribute_names, parse_where

__all__ = [
    "attributes_no_run_has",
    "attributes_text",
    "count_command",
    "parse_filter",
    "say_unknown_attributes",
    "where_option",
]


def parse_filter(text: str, option: str = "--where") -> Where:
    """The filter `text`, or a usage error (exit 2) saying where and why, on one line."""
    try:
        return parse_where(text)
    except FilterError as exc:
        raise UsageError(f"{option}: {str(exc).splitlines()[0]}") from None


def _where_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> Where | None:
    return None if value is None else parse_filter(value)


where_option = click.option(
    "--where",
    "where_text",
    metavar="FILTER",
    callback=_where_callback,
    help="Only runs matching this filter, such as \"customer = '42' and status = 'ERROR'\" "
    "(docs/operations.md, Filtering runs).",
)


def attributes_text(attributes: dict[str, object]) -> str:
    """A run's attributes on one line: `customer=42 plan=pro tags=[a,b]`."""
    parts = []
    for name, value in attributes.items():
        shown = encoded_attribute(value)
        if isinstance(shown, list):
            shown = "[" + ",".join(shown) + "]"
        elif isinstance(shown, bool):
            shown = "true" if shown else "false"
        parts.append(f"{name}={shown}")
    return " ".join(parts)


def attributes_no_run_has(store: Store, where: Where) -> list[str]:
    """The attributes `where` names that no run has: why a filter found nothing."""
    return [
        name
        for name in attribute_names(where)
        if store.count_workflows(WorkflowFilter(where=Has(name))) == 0
    ]


def say_unknown_attributes(names: list[str]) -> None:
    for name in names:
        echo(
            f"(no run has an attribute {name!r}: a filter on it matches nothing; attributes "
            "are set by start(..., attributes=...) or SetAttributes, and their names are "
            "case-sensitive)",
            err=True,
        )


@click.command("count")
@url_option
@where_option
@click.option(
    "--by",
    "group_by",
    metavar="FIELD",
    help="Count per value of status, name, queue, app_version, executor_id or an attribute.",
)
@status_option()
@click.option("--name", help="Only runs of this workflow name.")
@click.option("--queue", help="Only runs of this queue.")
@datetime_option("--since", help="Created at or after.")
@datetime_option("--until", help="Created before.")
@json_option
def count_command(
    url: str,
    where_text: Where | None,
    group_by: str | None,
    statuses: tuple[Status, ...] | None,
    name: str | None,
    queue: str | None,
    since: datetime | None,
    until: datetime | None,
    as_json: bool,
) -> None:
    """How many runs match (one COUNT in the store); --by FIELD: how many per value.

    replaykit workflows count --where "customer = '42'" --by status
    """
    where = WorkflowFilter(
        status=statuses,
        name=name,
        queue=queue,
        since=since,
        until=until,
        where=where_text,
    )
    with store_at(url) as store:
        if group_by is None:
            total = store.count_workflows(where)
            counts: dict[str, int] | None = None
        else:
            try:
                counts = store.count_workflows_by(where, group_by)
            except ValueError as exc:
                raise UsageError(f"--by: {exc}") from None
            total = sum(counts.values())
        unknown = [] if total or where_text is None else attributes_no_run_has(store, where_text)
    if as_json:
        echo_json(total if counts is None else counts)
        return
    if counts is None:
        click.echo(str(total))
    else:
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        Printer(wide=False).table(
            [str(group_by).upper(), "RUNS"],
            [[value if value else "(none)", str(count)] for value, count in ordered],
        )
    say_unknown_attributes(unknown)
