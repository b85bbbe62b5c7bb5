"""What the two SQL stores say alike: their column lists and the listing filter.

The stores differ in placeholders (`?` and `%s`), in how a timestamp is bound
(SQLite keeps microseconds as integers), in how "no limit" is spelled and in
how a set of statuses is matched best; `Dialect` holds those differences,
`listing` builds the one query both run for `list_workflows` and `counting`
the one for `count_workflows`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import attrs

from replaykit.log import Status
from replaykit.stores._checks import COUNT_FIELDS
from replaykit.stores._where_sql import WhereDialect, compile_where
from replaykit.stores.base import WorkflowFilter
from replaykit.stores.where import group_key

__all__ = [
    "LISTED_COLUMNS",
    "RECORD_COLUMNS",
    "WORKFLOW_COLUMNS",
    "Dialect",
    "counting",
    "counting_by",
    "grouped_counts",
    "listing",
]

WORKFLOW_COLUMNS = (
    "workflow_id, name, status, inputs, result, executor_id, app_version, created_at, "
    "updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error, "
    "started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds, "
    "generation, continued_as, partition_key, attributes, shard_key"
)
# `WORKFLOW_COLUMNS` for a listing without payloads (`WorkflowFilter.payloads`):
# no inputs, and a result only where it is a failure (an ERROR run's), which
# says what went wrong in a line; a value may be megabytes.
LISTED_COLUMNS = WORKFLOW_COLUMNS.replace(
    "inputs, result,", "NULL AS inputs, CASE WHEN status = 'ERROR' THEN result END AS result,"
)
RECORD_COLUMNS = (
    "position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at, attempts"
)

# Filter fields matched by equality, with their columns.
_EQUAL_COLUMNS = (
    "name",
    "executor_id",
    "app_version",
    "parent_id",
    "queue",
    "forked_from",
    "continued_as",
)
# The column keeps '' for "no key" (so a claim can walk the keys in order); a filter
# names a real key.


@attrs.frozen
class Dialect:
    placeholder: str
    timestamp: Callable[[datetime], Any]
    no_limit: Any
    statuses: Callable[[Sequence[Status]], tuple[str, list[Any]]]
    #: How the filter language's leaves are spelled here (`stores/_where_sql.py`).
    language: WhereDialect


def listing(where: WorkflowFilter, table: str, dialect: Dialect) -> tuple[str, list[Any]]:
    """The `list_workflows` query for `where`: oldest first, paged, every value bound."""
    mark = dialect.placeholder
    columns = WORKFLOW_COLUMNS if where.payloads else LISTED_COLUMNS
    matching, params = _matching(where, dialect)
    text = f"SELECT {columns} FROM {table}{matching}"
    order = "created_at DESC, workflow_id DESC" if where.newest_first else "created_at, workflow_id"
    text += f" ORDER BY {order} LIMIT {mark} OFFSET {mark}"
    params.extend((dialect.no_limit if where.limit is None else where.limit, where.offset))
    return text, params


def counting(where: WorkflowFilter, table: str, dialect: Dialect) -> tuple[str, list[Any]]:
    """The `count_workflows` query for `where` (its limit and offset do not count; its
    `count_at_most` stops the count there, reading no more rows than that)."""
    matching, params = _matching(where, dialect)
    if where.count_at_most is None:
        return f"SELECT COUNT(*) FROM {table}{matching}", params
    mark = dialect.placeholder
    capped = f"SELECT COUNT(*) FROM (SELECT 1 FROM {table}{matching} LIMIT {mark}) capped"
    return capped, [*params, where.count_at_most]


def counting_by(
    where: WorkflowFilter, field: str, table: str, dialect: Dialect
) -> tuple[str, list[Any]]:
    """The `count_workflows_by` query: `field` is one of `COUNT_FIELDS` or an attribute's
    name (checked by the caller); only a known column name reaches the statement's
    text, an attribute's name is bound. Each row is its group's value column(s), then
    the count: `grouped_counts` reads them. By status with a `count_at_most`, one capped
    count per status (each an index range, stopping at the cap) instead of a grouped
    count of every row."""
    if field == "status" and where.count_at_most is not None:
        return _capped_by_status(where, table, dialect)
    matching, params = _matching(where, dialect)
    if field in COUNT_FIELDS:
        return (
            f"SELECT COALESCE({field}, ''), COUNT(*) FROM {table}{matching} "
            f"GROUP BY COALESCE({field}, '')",
            params,
        )
    value, value_params, ordinals = dialect.language.group(field)
    return (
        f"SELECT {value}, COUNT(*) FROM {table}{matching} GROUP BY {ordinals}",
        value_params + params,
    )


def _capped_by_status(where: WorkflowFilter, table: str, dialect: Dialect) -> tuple[str, list[Any]]:
    mark = dialect.placeholder
    wanted = where.statuses() or tuple(Status)
    matching, params = _matching(attrs.evolve(where, status=None), dialect)
    rest = f" AND {matching[len(' WHERE ') :]}" if matching else ""
    parts: list[str] = []
    values: list[Any] = []
    for status in wanted:
        parts.append(
            f"SELECT {mark}, (SELECT COUNT(*) FROM (SELECT 1 FROM {table} "
            f"WHERE status = {mark}{rest} LIMIT {mark}) capped)"
        )
        values.extend((status.value, status.value, *params, where.count_at_most))
    return " UNION ALL ".join(parts), values


def counted_groups(rows: Iterable[Sequence[Any]], at_most: int | None) -> dict[str, int]:
    """A `count_workflows_by` answer from its statement's (value, count) rows: groups
    with runs only, each count capped at `at_most` where given."""
    counts = {str(value): int(count) for value, count in rows if int(count) > 0}
    if at_most is None:
        return counts
    return {value: min(count, at_most) for value, count in counts.items()}


def grouped_counts(
    rows: Sequence[Sequence[Any]], field: str, dialect: Dialect, at_most: int | None
) -> dict[str, int]:
    """A `counting_by` query's rows as `count_workflows_by` answers: a field's groups as
    `counted_groups` reads them; an attribute's by its value as `where.group_key` names
    it, alike in every store, groups of one name added up (each capped at `at_most`)."""
    if field in COUNT_FIELDS:
        return counted_groups(rows, at_most)
    counts: dict[str, int] = {}
    for row in rows:
        key = group_key(dialect.language.grouped_value(row[:-1]))
        counts[key] = counts.get(key, 0) + int(row[-1])
    if at_most is None:
        return counts
    return {value: min(count, at_most) for value, count in counts.items()}


def _matching(where: WorkflowFilter, dialect: Dialect) -> tuple[str, list[Any]]:
    """The WHERE clause (with its leading space; '' for none) of a listing or a count."""
    mark = dialect.placeholder
    clauses: list[str] = []
    params: list[Any] = []
    statuses = where.statuses()
    if statuses is not None:
        clause, values = dialect.statuses(statuses)
        clauses.append(clause)
        params.extend(values)
    for column in _EQUAL_COLUMNS:
        wanted = getattr(where, column)
        if wanted is not None:
            clauses.append(f"{column} = {mark}")
            params.append(wanted)
    if where.partition_key is not None:
        clauses.append(f"partition_key = {mark}")
        params.append(where.partition_key)
    if where.id_prefix is not None:
        # substr, not LIKE: a prefix holding % or _ matches those characters only,
        # and neither SQLite's nor PostgreSQL's collation enters into it.
        clauses.append(f"substr(workflow_id, 1, {mark}) = {mark}")
        params.extend((len(where.id_prefix), where.id_prefix))
    for instant, clause in (
        (where.since, "created_at >= {}"),
        (where.until, "created_at < {}"),
        (where.wakes_after, "wake_at > {}"),
        (where.wakes_by, "(wake_at IS NULL OR wake_at <= {})"),
    ):
        if instant is not None:
            clauses.append(clause.format(mark))
            params.append(dialect.timestamp(instant))
    if where.after is not None:
        # A row value: both stores compare it as the index orders, and use the index.
        after = "<" if where.newest_first else ">"
        clauses.append(f"(created_at, workflow_id) {after} ({mark}, {mark})")
        at, last_id = where.after
        params.extend((dialect.timestamp(at), last_id))
    if where.where is not None:
        compiled = compile_where(where.where, dialect.language, dialect.timestamp)
        clauses.append(compiled.sql)
        params.extend(compiled.params)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
