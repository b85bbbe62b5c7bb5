"""Reading runs and their logs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from replaykit.log import Record, Status
from replaykit.stores._checks import check_count_field, check_filter, check_load_log, check_names
from replaykit.stores._rows import listed
from replaykit.stores._sql import Dialect, counting, counting_by, grouped_counts, listing
from replaykit.stores._where_sql import POSTGRES
from replaykit.stores.base import CancelRequest, WorkflowFilter, WorkflowRow
from replaykit.stores.postgres.database import PLAN_EACH_TIME, Database
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import record_from_row, workflow_from_row
from replaykit.stores.values import LoadedRun

__all__ = ["Reads"]


def _statuses_matched(statuses: Sequence[Status]) -> tuple[str, list[Any]]:
    if len(statuses) == 1:
        # `=` lets the (executor_id, app_version, status) index find a sweep's
        # PENDING runs; the planner leaves `= ANY(...)` to a filter.
        return "status = %s", [statuses[0].value]
    return "status = ANY(%s::text[])", [[s.value for s in statuses]]


# LIMIT NULL is PostgreSQL for "no limit".
_DIALECT = Dialect("%s", lambda at: at, None, _statuses_matched, POSTGRES)


class Reads(Room):
    """get_workflow, list_workflows, count_workflows, load_log, and load_runs (a batch
    of wake-ups' read, beside the protocol)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        # A listing's WHERE clause is built from its filter at each call
        # (stores/_sql.py, shared with SQLite): the one place the store's
        # statements are not all named.
        self._workflows = f"{db.s}.workflows"

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        check_names(workflow_id)
        found = self._db.about(self._sql["get_workflow"], workflow_id)
        return None if found is None else workflow_from_row(found)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        check_filter(where)
        text, params = listing(where, self._workflows, _DIALECT)
        rows = listed(workflow_from_row, self._db.all(text, params, prepare=PLAN_EACH_TIME))
        # A listing is how recovery and sweeps find the runs they then write to.
        self._db.shards.learn_rows(rows)
        return rows

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
        check_load_log(workflow_id, limit)
        if limit is None:
            rows = self._db.about(
                self._sql["load_log"], workflow_id, since, many=True, recheck=False
            )
        else:
            rows = self._db.about(
                self._sql["load_log_limited"], workflow_id, since, limit, many=True, recheck=False
            )
        return [record_from_row(r, workflow_id) for r in rows]

    def load_runs(self, workflow_ids: Sequence[str]) -> list[LoadedRun]:
        """The runs of `workflow_ids` that exist, each with its whole log and its cancel
        request: three statements on one connection however many runs (a batch of
        wake-ups reads them together, rather than three round trips a run)."""
        ids = list(workflow_ids)
        for workflow_id in ids:
            check_names(workflow_id)
        with self._db.connection() as conn:
            keys = self._db.shards.of_many(conn, ids)
            pairs = ([keys[i] for i in ids], ids)
            rows = conn.execute(self._sql["load_runs"], pairs).fetchall()
            logs = conn.execute(self._sql["load_runs_logs"], pairs).fetchall()
            cancels = conn.execute(self._sql["load_runs_cancels"], pairs).fetchall()
        records: dict[str, list[Record]] = {}
        for found in logs:
            workflow_id = found[0]
            records.setdefault(workflow_id, []).append(record_from_row(found[1:], workflow_id))
        requests = {
            # Sessions run in UTC: the stdlib's UTC, as the other stores return.
            workflow_id: CancelRequest(reason, until.replace(tzinfo=UTC), at.replace(tzinfo=UTC))
            for workflow_id, reason, until, at in cancels
        }
        loaded = []
        for found in rows:
            row = workflow_from_row(found)
            self._db.shards.learn(row.workflow_id, str(row.shard_key))
            wid = row.workflow_id
            loaded.append(LoadedRun(row, records.get(wid, []), requests.get(wid)))
        return loaded
