"""The bulk actions as coroutines, for `AsyncEngine` and `AsyncClient` (a base of
`AsyncFace`): each hands its arguments to the sync face's method of the same name, off
the loop (`runtime/bulk.py` does the work). A `progress` callback is called on the
thread that carries the call, not on the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from replaykit.log import Status
from replaykit.runtime.bulk import DEFAULT_BATCH, BulkResult
from replaykit.runtime.cancels import DEFAULT_GRACE
from replaykit.stores.base import WorkflowFilter

__all__ = ["AsyncBulkActions", "BulkFace"]

T = TypeVar("T")


class BulkFace(Protocol):
    """What the async bulk actions ask of the sync face (`Engine`, `Client`)."""

    @property
    def cancel_workflows(self) -> Callable[..., BulkResult]: ...

    @property
    def terminate_workflows(self) -> Callable[..., BulkResult]: ...

    @property
    def resume_workflows(self) -> Callable[..., BulkResult]: ...

    @property
    def delete_workflows(self) -> Callable[..., BulkResult]: ...

    @property
    def send_many(self) -> Callable[..., BulkResult]: ...


class AsyncBulkActions:
    """`cancel_workflows`, `terminate_workflows`, `resume_workflows`, `delete_workflows`
    and `send_many` of the sync face, as coroutines."""

    def _sync(self) -> BulkFace:
        raise NotImplementedError

    async def off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        raise NotImplementedError

    async def cancel_workflows(
        self,
        where: WorkflowFilter | None = None,
        *,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        queue: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        id_prefix: str | None = None,
        all: bool = False,
        reason: str = "",
        grace: float = DEFAULT_GRACE,
        children: bool = True,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
    ) -> BulkResult:
        """`cancel_workflows` as a coroutine: `cancel` every unfinished run the filter
        selects, in batches (no filter is refused unless `all=True`)."""
        return await self.off_loop(
            self._sync().cancel_workflows,
            where,
            status=status,
            name=name,
            version=version,
            queue=queue,
            since=since,
            until=until,
            id_prefix=id_prefix,
            all=all,
            reason=reason,
            grace=grace,
            children=children,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=progress,
        )

    async def terminate_workflows(
        self,
        where: WorkflowFilter | None = None,
        *,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        queue: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        id_prefix: str | None = None,
        all: bool = False,
        reason: str = "",
        children: bool = True,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
    ) -> BulkResult:
        """`terminate_workflows` as a coroutine."""
        return await self.off_loop(
            self._sync().terminate_workflows,
            where,
            status=status,
            name=name,
            version=version,
            queue=queue,
            since=since,
            until=until,
            id_prefix=id_prefix,
            all=all,
            reason=reason,
            children=children,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=progress,
        )

    async def resume_workflows(
        self,
        where: WorkflowFilter | None = None,
        *,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        queue: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        id_prefix: str | None = None,
        all: bool = False,
        reason: str = "",
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
    ) -> BulkResult:
        """`resume_workflows` as a coroutine."""
        return await self.off_loop(
            self._sync().resume_workflows,
            where,
            status=status,
            name=name,
            version=version,
            queue=queue,
            since=since,
            until=until,
            id_prefix=id_prefix,
            all=all,
            reason=reason,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=progress,
        )

    async def delete_workflows(
        self,
        where: WorkflowFilter | None = None,
        *,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        queue: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        id_prefix: str | None = None,
        all: bool = False,
        reason: str = "",
        children: bool = False,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
    ) -> BulkResult:
        """`delete_workflows` as a coroutine."""
        return await self.off_loop(
            self._sync().delete_workflows,
            where,
            status=status,
            name=name,
            version=version,
            queue=queue,
            since=since,
            until=until,
            id_prefix=id_prefix,
            all=all,
            reason=reason,
            children=children,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=progress,
        )

    async def send_many(
        self,
        message: Any,
        topic: str | None = None,
        *,
        where: WorkflowFilter | None = None,
        status: Status | str | Sequence[Status | str] | None = None,
        name: str | None = None,
        version: str | None = None,
        queue: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        id_prefix: str | None = None,
        all: bool = False,
        idempotency_key: str | None = None,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
    ) -> BulkResult:
        """`send_many` as a coroutine."""
        return await self.off_loop(
            self._sync().send_many,
            message,
            topic,
            where=where,
            status=status,
            name=name,
            version=version,
            queue=queue,
            since=since,
            until=until,
            id_prefix=id_prefix,
            all=all,
            idempotency_key=idempotency_key,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=progress,
        )
