"""`AsyncFace`: the coroutines `AsyncEngine` and `AsyncClient` share, written once.

Each async face holds a sync face (`Engine`, `Client`) and runs its blocking calls on
threads of its own (`off_loop`). Where a coroutine only hands its arguments to the
sync face's method of the same name (made from that method by `off_loop_twin`,
`runtime/twins.py`), or waits on the store's notifications without holding a thread,
the logic is the same for both and lives here. What differs stays
in each face: opening and closing, the handles a start returns, updates (the engine
checks its loop) and everything only one of them offers.

The signatures are the public ones (tests/test_faces.py keeps the four faces in step,
docs/api.md lists them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from replaykit.log import Record, Status
from replaykit.runtime import loop_waits, streams, updates
from replaykit.runtime.async_bulk import AsyncBulkActions
from replaykit.runtime.listing import Listing
from replaykit.runtime.outside import FromOutside
from replaykit.runtime.timing import Timing
from replaykit.runtime.twins import off_loop_twin
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["AsyncFace", "AsyncRunHandle", "SyncFace"]

T = TypeVar("T")


class SyncFace(Protocol):
    """What an async face asks of the sync face it holds (`Engine` or `Client`) beyond
    the methods its coroutines call by name (`runtime/twins.py`; test_faces.py holds
    those to the public signature)."""

    @property
    def store(self) -> Store: ...

    @property
    def poll_interval(self) -> float: ...

    def listen(
        self, wakes: Iterable[tuple[str, str]], callback: Callable[[], None]
    ) -> Callable[[], None]: ...

    @property
    def updater(self) -> updates.Updater: ...

    def steps(self, workflow_id: str) -> list[Record]: ...


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

    list_workflows = off_loop_twin(Listing.list_workflows)
    count_workflows = off_loop_twin(Listing.count_workflows)

    async def steps(self, workflow_id: str) -> list[Record]:
        """The run's log, position by position."""
        return await self.off_loop(self._sync().steps, workflow_id)

    # -- messages, events, heartbeats and streams ---------------------------------------------

    send = off_loop_twin(FromOutside.send)
    complete = off_loop_twin(FromOutside.complete)
    fail = off_loop_twin(FromOutside.fail)

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

    get_events = off_loop_twin(FromOutside.get_events)
    get_heartbeats = off_loop_twin(FromOutside.get_heartbeats)

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

    schedules_list = off_loop_twin(Timing.schedules_list)
    pause_schedule = off_loop_twin(Timing.pause_schedule)
    resume_schedule = off_loop_twin(Timing.resume_schedule)
    delete_schedule = off_loop_twin(Timing.delete_schedule)
    trigger_schedule = off_loop_twin(Timing.trigger_schedule)
    backfill_schedule = off_loop_twin(Timing.backfill_schedule)


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
