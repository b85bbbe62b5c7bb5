"""`Listing`: `list_workflows` and `count_workflows`, the reads `Engine` and `Client`
offer alike (the async faces hand them over, `runtime/async_face.py`).

Both take the keyword filters (`status=`, `name=`, ...) and `where=`, a filter of the
filter language (`stores/where.py`): text such as `"customer = '42' and created >
'2026-12-01'"`, or its parsed tree. A run is listed or counted when it matches every
keyword given and `where`. Whatever `list_workflows(where=...)` takes,
`count_workflows(where=...)` takes too, and so does anything built on them.
"""

from __future__ import annotations

from typing import Unpack, overload

import attrs

from replaykit.runtime.run_filters import ListFilters, check_keywords, workflow_filter
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.stores.where import Where, where_of

__all__ = ["Listing"]


class Listing:
    """The listing reads of a sync face, over `self.store`."""

    store: Store

    def _reading(self) -> None:
        """Raise if this face may not read now (a closed client); an engine reads after
        its close, as it always has."""

    def _stranded(self, where: WorkflowFilter, filters: ListFilters) -> list[WorkflowRow]:
        """`list_workflows(stranded=True)`: what this face means by stranded runs."""
        raise NotImplementedError

    def list_workflows(
        self,
        *,
        where: str | Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        stranded: bool = False,
        **filters: Unpack[ListFilters],
    ) -> list[WorkflowRow]:
        """Runs matching every filter given and `where` (the filter language,
        docs/operations.md), oldest first. The keyword filters: `status`, `name`,
        `version`, `queue`, `since`, `until`, `executor_id`, `parent_id`, `forked_from`,
        `continued_as`, `partition_key` (`ListFilters`).

        `stranded=True` lists the runs no engine of this version picks up: PENDING runs
        of the executor id and ENQUEUED runs stamped with another application version
        (`status` and `version` do not apply then). A `where` that does not parse
        raises `FilterError` saying where and why.
        """
        self._reading()
        check_keywords("list_workflows", filters, ListFilters)
        chosen = workflow_filter(limit=limit, offset=offset, **filters)
        chosen = attrs.evolve(chosen, where=where_of(where))
        if stranded:
            return self._stranded(chosen, filters)
        return self.store.list_workflows(chosen)

    @overload
    def count_workflows(
        self,
        *,
        where: str | Where | None = None,
        group_by: None = None,
        **filters: Unpack[ListFilters],
    ) -> int: ...

    @overload
    def count_workflows(
        self, *, where: str | Where | None = None, group_by: str, **filters: Unpack[ListFilters]
    ) -> dict[str, int]: ...

    def count_workflows(
        self,
        *,
        where: str | Where | None = None,
        group_by: str | None = None,
        **filters: Unpack[ListFilters],
    ) -> int | dict[str, int]:
        """How many runs `list_workflows` would list with the same filters (one `COUNT`
        in the store); with `group_by`, how many for each value of a field ("status",
        "name", "queue", "app_version", "executor_id") or of an attribute, by its name
        (runs without it count under "")."""
        self._reading()
        check_keywords("count_workflows", filters, ListFilters)
        chosen = attrs.evolve(workflow_filter(**filters), where=where_of(where))
        if group_by is None:
            return self.store.count_workflows(chosen)
        return self.store.count_workflows_by(chosen, group_by)
