"""`AsyncFace`: the coroutines `AsyncEngine` and `AsyncClient` share, written once.

Each async face holds a sync face (`Engine`, `Client`) and runs its blocking calls on
threads of its own (`off_loop`). Where a coroutine only hands its arguments to the
sync face's method of the same name, or waits on the store's notifications without
holding a thread, the logic is the same for both and lives here. What differs stays
in each face: opening and closing, the handles a start returns, updates (the engine
checks its loop) and everything only one of them offers.

The signatures are the public ones (tests/test_faces.py keeps the four faces in step,
docs/api.md lists them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar, overload

from replaykit.log import Record, Status
from replaykit.runtime import loop_waits, streams, updates
from replaykit.runtime.async_bulk import AsyncBulkActions, BulkFace
from replaykit.runtime.schedules import ScheduleInfo
from replaykit.stores.base import StepHeartbeat, Store, WorkflowRow
from replaykit.stores.where import Where

__all__ = ["AsyncFace", "AsyncRunHandle", "SyncFace"]

T = TypeVar("T")


class SyncFace(BulkFace, Protocol):
    """What an async face asks of the sync face it holds (`Engine` or `Client`). The
    methods are typed loosely: test_faces.py holds each to the public signature."""

    @property
    def store(self) -> Store: ...

    @property
    def poll_interval(self) -> float: ...

    def listen(
        self, wakes: Iterable[tuple[str, str]], callback: Callable[[], None]
    ) -> Callable[[], None]: ...

    @property
    def updater(self) -> updates.Updater: ...

    @property
    def list_workflows(self) -> Callable[..., list[WorkflowRow]]: ...

    @property
    def count_workflows(self) -> Callable[..., int | dict[str, int]]: ...

    @property
    def steps(self) -> Callable[[str], list[Record]]: ...

    @property
    def send(self) -> Callable[..., bool]: ...

    @property
    def complete(self) -> Callable[[str, Any], None]: ...

    @property
    def fail(self) -> Callable[[str, str | Exception], None]: ...

    @property
    def get_events(self) -> Callable[[str], dict[str, Any]]: ...

    @property
    def get_heartbeats(self) -> Callable[[str], list[StepHeartbeat]]: ...

    @property
    def schedules_list(self) -> Callable[[], list[ScheduleInfo]]: ...

    @property
    def pause_schedule(self) -> Callable[[str], bool]: ...

    @property
    def resume_schedule(self) -> Callable[[str], bool]: ...

    @property
    def delete_schedule(self) -> Callable[[str], bool]: ...

    @property
    def trigger_schedule(self) -> Callable[[str], str]: ...

    @property
    def backfill_schedule(self) -> Callable[[str, datetime, datetime], list[str]]: ...


class AsyncFace(AsyncBulkActions):
    """The coroutines both async faces offer the same way, over `_sync()` (the bulk
    actions in `AsyncBulkActions`, runtime/async_bulk.py)."""

    def _sync(self) -> SyncFace:
        """The sync face underneath; raises when this face is not open."""
        raise NotImplementedError

    def _check_usable(self) -> None:
        """Raise unless this face may make calls now (open, not closed, on its loop)."""
        raise NotImplementedError

    async def off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        raise NotImplementedError

    # -- reading runs ---------------------------------------------------------------------

    async def list_workflows(
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
        """`list_workflows` of the sync face as a coroutine: runs matching every filter
        given and `where`, oldest first."""
        return await self.off_loop(
            self._sync().list_workflows,
            where=where,
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
            stranded=stranded,
        )

    @overload
    async def count_workflows(
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
    async def count_workflows(
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

    async def count_workflows(
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
        """`count_workflows` of the sync face as a coroutine: one `COUNT` in the store,
        or one grouped by `group_by` (a field or an attribute's name)."""
        return await self.off_loop(
            self._sync().count_workflows,
            where=where,
            group_by=group_by,
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

    async def steps(self, workflow_id: str) -> list[Record]:
        """The run's log, position by position."""
        return await self.off_loop(self._sync().steps, workflow_id)

    # -- messages, events, heartbeats and streams ---------------------------------------------

    async def send(
        self,
        workflow_id: str,
        message: Any,
        topic: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> bool:
        """Deliver a message to a run's inbox; False if `idempotency_key` was used already."""
        return await self.off_loop(
            self._sync().send, workflow_id, message, topic, idempotency_key=idempotency_key
        )

    async def complete(self, token: str, value: Any = None) -> None:
        """`complete` as a coroutine: deliver `value` to the run's `Await(token)`, once."""
        await self.off_loop(self._sync().complete, token, value)

    async def fail(self, token: str, error: str | Exception) -> None:
        """`fail` as a coroutine: make the run's `Await(token)` raise `error`, once."""
        await self.off_loop(self._sync().fail, token, error)

    async def get_event(self, workflow_id: str, key: str, timeout: float | None = None) -> Any:
        """The latest value of a run's event `key`, waiting up to `timeout` for it; else None.

        Waits on the store's notifications (and the poll interval), holding no thread.
        """
        sync = self._sync()
        return await loop_waits.get_event(
            sync.store,
            sync.listen,
            self.off_loop,
            workflow_id,
            key,
            timeout,
            sync.poll_interval,
        )

    async def get_events(self, workflow_id: str) -> dict[str, Any]:
        """`get_events` as a coroutine: every event of a run, latest value per key."""
        return await self.off_loop(self._sync().get_events, workflow_id)

    async def get_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        """`get_heartbeats` as a coroutine: each step's latest heartbeat."""
        return await self.off_loop(self._sync().get_heartbeats, workflow_id)

    def read_stream(
        self, workflow_id: str, key: str, start: int = 0, *, timeout: float | None = None
    ) -> AsyncIterator[Any]:
        """`read_stream` as an async iterator: `async for value in face.read_stream(id,
        key)`. Its store reads run off the loop and its waits hold no thread; an unknown
        id raises `WorkflowNotFound` at the first iteration (this call makes no store
        read)."""
        streams.check_read_arguments(key, start, timeout)
        sync = self._sync()
        return streams.read_async(
            sync.store,
            sync.listen,
            self.off_loop,
            workflow_id,
            key,
            start,
            timeout=timeout,
            poll_interval=sync.poll_interval,
        )

    # -- updates --------------------------------------------------------------------------

    async def update(
        self,
        workflow_id: str,
        name: str,
        /,
        *args: Any,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`update` as a coroutine: the run's reply to update `name` (or the error it
        replied with), waited for on the loop, holding no thread."""
        self._check_usable()
        updater = self._sync().updater
        call = updater.call(workflow_id, name, args, kwargs, update_id=update_id, timeout=timeout)
        return await updater.update_async(call, self.off_loop)

    # -- schedules ------------------------------------------------------------------------

    async def schedules_list(self) -> list[ScheduleInfo]:
        """`schedules_list`, off the loop."""
        return await self.off_loop(self._sync().schedules_list)

    async def pause_schedule(self, name: str) -> bool:
        """`pause_schedule`, off the loop."""
        return await self.off_loop(self._sync().pause_schedule, name)

    async def resume_schedule(self, name: str) -> bool:
        """`resume_schedule`, off the loop."""
        return await self.off_loop(self._sync().resume_schedule, name)

    async def delete_schedule(self, name: str) -> bool:
        """`delete_schedule`, off the loop."""
        return await self.off_loop(self._sync().delete_schedule, name)

    async def trigger_schedule(self, name: str) -> str:
        """`trigger_schedule`, off the loop."""
        return await self.off_loop(self._sync().trigger_schedule, name)

    async def backfill_schedule(self, name: str, start: datetime, end: datetime) -> list[str]:
        """`backfill_schedule`, off the loop."""
        return await self.off_loop(self._sync().backfill_schedule, name, start, end)


class AsyncRunHandle:
    """What the async faces' handles share: a run's id and the calls about it that only
    name the run to their face."""

    workflow_id: str

    def _face(self) -> AsyncFace:
        raise NotImplementedError

    async def row(self) -> WorkflowRow:
        raise NotImplementedError

    async def status(self) -> Status:
        """The run's status now."""
        return (await self.row()).status

    async def update(
        self,
        name: str,
        /,
        *args: Any,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`update` of this run: its reply to update `name`."""
        return await self._face().update(
            self.workflow_id, name, *args, timeout=timeout, update_id=update_id, **kwargs
        )
