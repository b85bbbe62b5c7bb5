"""Reading runs and logs: one run, a listing or a count of runs, a run's log.

Reads go to the reader pool and never wait for the writer. A listing's and a
count's statements are built from the filter (`stores/_sql.py`): which columns
are matched varies with the filter, so there is no one fixed text to name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from replaykit.log import Record, Status
from replaykit.stores._checks import check_count_field, check_filter, check_load_log, check_names
from replaykit.stores._rows import listed
from replaykit.stores._sql import Dialect, counting, counting_by, grouped_counts, listing
from replaykit.stores._where_sql import SQLITE
from replaykit.stores.base import CancelRequest, WorkflowFilter, WorkflowRow
from replaykit.stores.sqlite.connections import Connections
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.values import (
    first,
    from_micros,
    record_from_row,
    to_micros,
    workflow_from_row,
)
from replaykit.stores.values import LoadedRun

__all__ = ["Reads"]


def _statuses_in(statuses: Sequence[Status]) -> tuple[str, list[Any]]:
    if not statuses:
        return "0", []
    return f"status IN ({', '.join('?' for _ in statuses)})", [s.value for s in statuses]


# LIMIT -1 is SQLite for "no limit"; OFFSET needs a LIMIT before it.
_DIALECT = Dialect("?", lambda at: to_micros(at), -1, _statuses_in, SQLITE)


class Reads:
    """get_workflow, list_workflows, count_workflows, load_log, and load_runs (a batch
    of wake-ups' read, beside the protocol)."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        check_names(workflow_id)
        with self._connections.read() as conn:
            row = first(conn.execute(SQL["get_workflow"], (workflow_id,)))
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
        check_load_log(workflow_id, limit)
        with self._connections.read() as conn:
            if limit is None:
                rows = conn.execute(SQL["load_log"], (workflow_id, since)).fetchall()
            else:
                rows = conn.execute(SQL["load_log_limited"], (workflow_id, since, limit)).fetchall()
        return [record_from_row(r, workflow_id) for r in rows]

    def load_runs(self, workflow_ids: Sequence[str]) -> list[LoadedRun]:
        """The runs of `workflow_ids` that exist, each with its whole log and its cancel
        request: three statements on one reader connection however many runs."""
        ids = list(workflow_ids)
        for workflow_id in ids:
            check_names(workflow_id)
        given = json.dumps(ids)
        with self._connections.read() as conn:
            rows = conn.execute(SQL["load_runs"], (given,)).fetchall()
            logs = conn.execute(SQL["load_runs_logs"], (given,)).fetchall()
            cancels = conn.execute(SQL["load_runs_cancels"], (given,)).fetchall()
        records: dict[str, list[Record]] = {}
        for found in logs:
            workflow_id = found[0]
            records.setdefault(workflow_id, []).append(record_from_row(found[1:], workflow_id))
        requests: dict[str, CancelRequest] = {}
        for workflow_id, reason, until, at in cancels:
            grace_until, requested_at = from_micros(until), from_micros(at)
            assert grace_until is not None and requested_at is not None
            requests[workflow_id] = CancelRequest(str(reason), grace_until, requested_at)
        loaded = []
        for found in rows:
            row = workflow_from_row(found)
            wid = row.workflow_id
            loaded.append(LoadedRun(row, records.get(wid, []), requests.get(wid)))
        return loaded
