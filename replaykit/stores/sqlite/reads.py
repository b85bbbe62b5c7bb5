"""Reading runs and logs: one run, a listing or a count of runs, a run's log.

Reads go to the reader pool and never wait for the writer. A listing's and a
count's statements are built from the filter (`stores/_sql.py`): which columns
are matched varies with the filter, so there is no one fixed text to name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replaykit.log import Record, Status
from replaykit.stores._checks import check_count_field, check_filter, check_log_limit, check_names
from replaykit.stores._rows import listed
from replaykit.stores._sql import (
    Dialect,
    counting,
    counting_by,
    grouped_counts,
    listing,
)
from replaykit.stores._where_sql import SQLITE
from replaykit.stores.base import WorkflowFilter, WorkflowRow
from replaykit.stores.sqlite.connections import Connections
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.values import first, record_from_row, to_micros, workflow_from_row

__all__ = ["Reads"]

_GET_WORKFLOW = SQL["get_workflow"]
_LOAD_LOG = SQL["load_log"]
_LOAD_LOG_LIMITED = SQL["load_log_limited"]


def _statuses_in(statuses: Sequence[Status]) -> tuple[str, list[Any]]:
    if not statuses:
        return "0", []
    return f"status IN ({', '.join('?' for _ in statuses)})", [s.value for s in statuses]


# LIMIT -1 is SQLite for "no limit"; OFFSET needs a LIMIT before it.
_DIALECT = Dialect("?", lambda at: to_micros(at), -1, _statuses_in, SQLITE)


class Reads:
    """get_workflow, list_workflows, count_workflows and load_log."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        check_names(workflow_id)
        with self._connections.read() as conn:
            row = first(conn.execute(_GET_WORKFLOW, (workflow_id,)))
        return None if row is None else workflow_from_row(row)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        check_filter(where)
        text, params = listing(where, "workflows", _DIALECT)
        with self._connections.read() as conn:
            rows = conn.execute(text, params).fetchall()
        return listed(workflow_from_row, rows)

    def count_workflows(self, where: WorkflowFilter) -> int:
        check_filter(where)
        text, params = counting(where, "workflows", _DIALECT)
        with self._connections.read() as conn:
            return int(conn.execute(text, params).fetchone()[0])

    def count_workflows_by(self, where: WorkflowFilter, field: str) -> dict[str, int]:
        check_filter(where)
        text, params = counting_by(where, check_count_field(field), "workflows", _DIALECT)
        with self._connections.read() as conn:
            rows = conn.execute(text, params).fetchall()
        return grouped_counts(rows, field, _DIALECT, where.count_at_most)

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        check_names(workflow_id)
        check_log_limit(limit)
        with self._connections.read() as conn:
            if limit is None:
                rows = conn.execute(_LOAD_LOG, (workflow_id, since)).fetchall()
            else:
                rows = conn.execute(_LOAD_LOG_LIMITED, (workflow_id, since, limit)).fetchall()
        return [record_from_row(r, workflow_id) for r in rows]
