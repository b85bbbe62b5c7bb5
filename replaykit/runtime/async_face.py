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

import asyncio
import contextvars
import functools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from replaykit.log import Status
from replaykit.runtime import loop_waits, streams, updates
from replaykit.runtime.async_bulk import AsyncBulkActions
from replaykit.runtime.listing import Listing
from replaykit.runtime.outside import FromOutside
from replaykit.runtime.timing import Timing
from replaykit.runtime.twins import off_loop_twin
from replaykit.stores.base import Store, WorkflowRow

__all__ = [
    "AsyncFace",
    "AsyncRunHandle",
    "SyncFace",
    "call_off_loop",
    "kept_options",
    "not_open",
    "open_sync_face",
]

F = TypeVar("F", bound="SyncFace")
S = TypeVar("S")
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

    @property
    def closed(self) -> bool: ...


async def open_sync_face(
    workers: int, prefix: str, build: Callable[[asyncio.AbstractEventLoop], S]
) -> tuple[asyncio.AbstractEventLoop, ThreadPoolExecutor, S]:
    """An async face's opening: a pool of `workers` threads of its own, and the sync face
    `build(loop)` makes on one of them (opening a store connects, an engine recovers),
    off the running loop. A build that fails shuts the pool."""
    loop = asyncio.get_running_loop()
    io = ThreadPoolExecutor(workers, thread_name_prefix=prefix)
    try:
        face = await loop.run_in_executor(io, functools.partial(build, loop))
    except BaseException:
        io.shutdown(wait=False, cancel_futures=True)
        raise
    return loop, io, face


def kept_options(given: Mapping[str, Any]) -> tuple[str | Store | None, int, dict[str, Any]]:
    """What an async face's `__init__` keeps for `open()`: its `target`, its `io_workers`
    (1 or more) and its other parameters, which the sync face it builds takes (`given` is
    its `locals()`, taken before it binds any name of its own). Read from the parameters
    themselves, so an option added to the signature (test_faces.py holds it to the sync
    face's) cannot be left out of what is handed on."""
    io_workers = given["io_workers"]
    if io_workers < 1:
        raise ValueError(f"io_workers must be 1 or more, got {io_workers}")
    options = {
        name: value for name, value in given.items() if name not in ("self", "target", "io_workers")
    }
    return given["target"], io_workers, options


def not_open(face: str, name: str) -> RuntimeError:
    """What an async face that was never opened raises when it is used."""
    return RuntimeError(
        f"this {face} is not open: use `async with {face}(...) as {name}:` "
        f"or `await {name}.open()` first"
    )


async def call_off_loop(
    loop: asyncio.AbstractEventLoop,
    io: ThreadPoolExecutor | None,
    fn: Callable[..., T],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> T:
    """`fn(*args, **kwargs)` on the face's threads `io`, awaited on `loop`. It runs in the
    caller's context: the span current in the awaiting task is the one a run started or
    a message sent from there joins (replaykit.otel). Cancelling the awaiting task
    abandons the answer; the call itself ends on its thread."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await loop.run_in_executor(io, call)


class AsyncFace(AsyncBulkActions, Generic[F]):
    """The coroutines both async faces offer the same way, over `_sync()` (the bulk
    actions in `AsyncBulkActions`, runtime/async_bulk.py)."""

    #: The face's class and the name `async with` binds it to, as `not_open` says them.
    _named: ClassVar[tuple[str, str]]
    #: The sync face `open()` built (None before).
    _held: F | None = None

    def _sync(self) -> F:
        """The sync face underneath; raises when this face was never opened."""
        if self._held is None:
            raise not_open(*self._named)
        return self._held

    @property
    def closed(self) -> bool:
        """Whether it was closed."""
        return self._held is not None and self._held.closed

    def _check_usable(self) -> None:
        """Raise unless this face may make calls now (open, not closed, on its loop)."""
        raise NotImplementedError

    async def off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        raise NotImplementedError

    async def open(self) -> Self:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- reading runs ---------------------------------------------------------------------

    list_workflows = off_loop_twin(Listing.list_workflows)
    count_workflows = off_loop_twin(Listing.count_workflows)

    steps = off_loop_twin(FromOutside.steps)

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

    def _face(self) -> AsyncFace[Any]:
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
