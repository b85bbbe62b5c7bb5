"""What the two SQL stores say alike: their column lists and the listing filter.

The stores differ in placeholders (`?` and `%s`), in how a timestamp is bound
(SQLite keeps microseconds as integers), in how "no limit" is spelled and in
how a set of statuses is matched best; `Dialect` holds those differences and
`listing` builds the one query both run for `list_workflows`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from replaykit.log import Status
from replaykit.stores.base import WorkflowFilter

__all__ = ["RECORD_COLUMNS", "WORKFLOW_COLUMNS", "Dialect", "listing"]

WORKFLOW_COLUMNS = (
    "workflow_id, name, status, inputs, result, executor_id, app_version, created_at, "
    "updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error, "
    "started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds, "
    "generation, continued_as"
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


@attrs.frozen
class Dialect:
    placeholder: str
    timestamp: Callable[[datetime], Any]
    no_limit: Any
    statuses: Callable[[Sequence[Status]], tuple[str, list[Any]]]


def listing(where: WorkflowFilter, table: str, dialect: Dialect) -> tuple[str, list[Any]]:
    """The `list_workflows` query for `where`: oldest first, paged, every value bound."""
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
    if where.since is not None:
        clauses.append(f"created_at >= {mark}")
        params.append(dialect.timestamp(where.since))
    if where.until is not None:
        clauses.append(f"created_at < {mark}")
        params.append(dialect.timestamp(where.until))
    text = f"SELECT {WORKFLOW_COLUMNS} FROM {table}"
    if clauses:
        text += " WHERE " + " AND ".join(clauses)
    text += f" ORDER BY created_at, workflow_id LIMIT {mark} OFFSET {mark}"
    params.extend((dialect.no_limit if where.limit is None else where.limit, where.offset))
    return text, params
