"""Reading runs and their logs."""

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
from replaykit.stores._where_sql import POSTGRES
from replaykit.stores.base import WorkflowFilter, WorkflowRow
from replaykit.stores.postgres.database import PLAN_EACH_TIME, Database
from replaykit.stores.postgres.rows import record_from_row, workflow_from_row

__all__ = ["Reads"]


def _statuses_matched(statuses: Sequence[Status]) -> tuple[str, list[Any]]:
    if len(statuses) == 1:
        # `=` lets the (executor_id, app_version, status) index find a sweep's
        # PENDING runs; the planner leaves `= ANY(...)` to a filter.
        return "status = %s", [statuses[0].value]
    return "status = ANY(%s::text[])", [[s.value for s in statuses]]


# LIMIT NULL is PostgreSQL for "no limit".
_DIALECT = Dialect("%s", lambda at: at, None, _statuses_matched, POSTGRES)


class Reads:
    """get_workflow, list_workflows, count_workflows, load_log."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._sql = db.sql
        # A listing's WHERE clause is built from its filter at each call
        # (stores/_sql.py, shared with SQLite): the one place the store's
        # statements are not all named.
        self._workflows = f"{db.s}.workflows"

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        check_names(workflow_id)
        found = self._db.one(self._sql["get_workflow"], (workflow_id,))
        return None if found is None else workflow_from_row(found)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        check_filter(where)
        text, params = listing(where, self._workflows, _DIALECT)
        return listed(workflow_from_row, self._db.all(text, params, prepare=PLAN_EACH_TIME))

    def count_workflows(self, where: WorkflowFilter) -> int:
        check_filter(where)
        text, params = counting(where, self._workflows, _DIALECT)
        [(count,)] = self._db.all(text, params, prepare=PLAN_EACH_TIME)
        return int(count)

    def count_workflows_by(self, where: WorkflowFilter, field: str) -> dict[str, int]:
        check_filter(where)
        text, params = counting_by(where, check_count_field(field), self._workflows, _DIALECT)
        rows = self._db.all(text, params, prepare=PLAN_EACH_TIME)
        return grouped_counts(rows, field, _DIALECT, where.count_at_most)

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        check_names(workflow_id)
        check_log_limit(limit)
        if limit is None:
            rows = self._db.all(self._sql["load_log"], (workflow_id, since))
        else:
            rows = self._db.all(self._sql["load_log_limited"], (workflow_id, since, limit))
        return [record_from_row(r, workflow_id) for r in rows]
