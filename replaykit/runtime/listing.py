"""`Listing`: `list_workflows` and `count_workflows`, the reads `Engine` and `Client`
offer alike (the async faces hand them over, `runtime/async_face.py`).

Both take the keyword filters (`status=`, `name=`, ...) and `where=`, a filter of the
filter language (`stores/where.py`): text such as `"customer = '42' and created >
'2026-12-01'"`, or its parsed tree. A run is listed or counted when it matches every
keyword given and `where`. Whatever `list_workflows(where=...)` takes,
`count_workflows(where=...)` takes too, and so does anything built on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import overload

import attrs

from replaykit.log import Status
from replaykit.runtime import admin
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.stores.where import Where, where_of

__all__ = ["Listing"]


class Listing:
    """The listing reads of a sync face, over `self.store`."""

    store: Store

    def _reading(self) -> None:
        """Raise if this face may not read now (a closed client); an engine reads after
        its close, as it always has."""

    def _stranded(
        self,
        where: WorkflowFilter,
        *,
        executor_id: str | None,
        status: object,
        version: str | None,
    ) -> list[WorkflowRow]:
        """`list_workflows(stranded=True)`: what this face means by stranded runs."""
        raise NotImplementedError

    def list_workflows(
        self,
        *,
        where: str | Where | None = None,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        executor_id: str | None = None,
        parent_id: str | None = None,
        queue: str | None = None,
        forked_from: str | None = None,
        continued_as: str | None = None,
        partition_key: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        stranded: bool = False,
    ) -> list[WorkflowRow]:
        """Runs matching every filter given and `where` (the filter language,
        docs/operations.md), oldest first.

        `stranded=True` lists the runs no engine of this version picks up: PENDING runs
        of the executor id and ENQUEUED runs stamped with another application version
        (`status` and `version` do not apply then). A `where` that does not parse
        raises `FilterError` saying where and why.
        """
        self._reading()
        filters = admin.workflow_filter(
            status=status,
            name=name,
            version=version,
            executor_id=executor_id,
            parent_id=parent_id,
            queue=queue,
            forked_from=forked_from,
            continued_as=continued_as,
            partition_key=partition_key,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
        )
        filters = attrs.evolve(filters, where=where_of(where))
        if stranded:
            return self._stranded(filters, executor_id=executor_id, status=status, version=version)
        return self.store.list_workflows(filters)

    @overload
    def count_workflows(
        self,
        *,
        where: str | Where | None = None,
        group_by: None = None,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        executor_id: str | None = None,
        parent_id: str | None = None,
        queue: str | None = None,
        forked_from: str | None = None,
        continued_as: str | None = None,
        partition_key: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> int: ...

    @overload
    def count_workflows(
        self,
        *,
        where: str | Where | None = None,
        group_by: str,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        executor_id: str | None = None,
        parent_id: str | None = None,
        queue: str | None = None,
        forked_from: str | None = None,
        continued_as: str | None = None,
        partition_key: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> dict[str, int]: ...

    def count_workflows(
        self,
        *,
        where: str | Where | None = None,
        group_by: str | None = None,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        executor_id: str | None = None,
        parent_id: str | None = None,
        queue: str | None = None,
        forked_from: str | None = None,
        continued_as: str | None = None,
        partition_key: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> int | dict[str, int]:
        """How many runs `list_workflows` would list with the same filters (one `COUNT`
        in the store); with `group_by`, how many for each value of a field ("status",
        "name", "queue", "app_version", "executor_id") or of an attribute, by its name
        (runs without it count under "")."""
        self._reading()
        filters = admin.workflow_filter(
            status=status,
            name=name,
            version=version,
            executor_id=executor_id,
            parent_id=parent_id,
            queue=queue,
            forked_from=forked_from,
            continued_as=continued_as,
            partition_key=partition_key,
            since=since,
            until=until,
        )
        filters = attrs.evolve(filters, where=where_of(where))
        if group_by is None:
            return self.store.count_workflows(filters)
        return self.store.count_workflows_by(filters, group_by)
