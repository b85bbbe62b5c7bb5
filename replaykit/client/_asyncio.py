"""`AsyncClient`: `Client` for asyncio code; its store I/O runs on threads of its own."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, Self, TypeVar

from replaykit import _waiting, serde
from replaykit._limits import checked_wait
from replaykit.client._blocking import Client, ClientHandle, ResumedHandle
from replaykit.runtime import admin, debounce, loop_waits, updates
from replaykit.runtime.async_face import (
    AsyncFace,
    AsyncRunHandle,
    call_off_loop,
    kept_options,
    open_sync_face,
)
from replaykit.runtime.twins import off_loop_twin
from replaykit.serde import PayloadCodec
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["AsyncClient", "AsyncClientHandle", "AsyncResumedHandle"]

T = TypeVar("T")

# Threads for an AsyncClient's store I/O: a client waits on the store, it computes little.
DEFAULT_IO_WORKERS = 4


class AsyncClientHandle(AsyncRunHandle):
    """A run seen from a coroutine through an `AsyncClient`."""

    def __init__(self, client: AsyncClient, workflow_id: str) -> None:
        self._client = client
        self.workflow_id = workflow_id

    def __repr__(self) -> str:
        return f"<AsyncClientHandle {self.workflow_id!r}>"

    async def row(self) -> WorkflowRow:
        """The run as stored now."""
        return await self._client.off_loop(self._client.client._row, self.workflow_id)

    def _face(self) -> AsyncClient:
        return self._client

    async def result(self, timeout: float | None = None) -> Any:
        """Wait, holding no thread, for the run to finish; its result, or its failure raised.

        Cancelling the awaiting task cancels the wait, not the run.
        """
        return admin.run_outcome(await self._client._wait_finished(self.workflow_id, timeout))


class AsyncResumedHandle(AsyncClientHandle):
    """What `AsyncClient.resume` returns: `ResumedHandle`'s twin."""

    def __init__(self, client: AsyncClient, workflow_id: str, resumed: ResumedHandle) -> None:
        super().__init__(client, workflow_id)
        #: Every run the resume changed (see `ResumedHandle.resumed`).
        self.resumed: tuple[str, ...] = resumed.resumed
        #: The unfinished runs of its family moved onto `app_version` with it.
        self.moved: tuple[str, ...] = resumed.moved


def _async_handle(face: AsyncClient, handle: ClientHandle) -> AsyncClientHandle:
    """The async face's handle of the run a `Client` call answered with."""
    return AsyncClientHandle(face, handle.workflow_id)


def _async_resumed(face: AsyncClient, done: ResumedHandle) -> AsyncResumedHandle:
    """`AsyncClient.resume`'s handle: the run, and what the resume changed."""
    return AsyncResumedHandle(face, done.workflow_id, done)


class AsyncClient(AsyncFace[Client]):
    """`Client` for asyncio code: `async with AsyncClient(url) as client:`.

    The same methods as coroutines (`handle` is a plain call); store I/O runs
    on a few threads of its own (`io_workers`), never on the loop. Takes the
    same options as `Client` (tests/test_faces.py keeps the two in step). It
    opens on entering the `async with` (or `await client.open()`).
    """

    _named = ("AsyncClient", "client")

    def __init__(
        self,
        target: str | Store | None = None,
        *,
        app_version: str | None = None,
        executor_id: str | None = None,
        poll_interval: float = 0.5,
        max_payload_bytes: int = serde.DEFAULT_MAX_PAYLOAD_BYTES,
        codec: PayloadCodec | None = None,
        strict: bool = False,
        io_workers: int = DEFAULT_IO_WORKERS,
    ) -> None:
        # Before any other name is bound: `locals()` is the parameters.
        self._target, self._io_workers, self._options = kept_options(locals())
        self._io: ThreadPoolExecutor | None = None

    async def open(self) -> Self:
        """Open the store off the loop (a PostgreSQL pool connects)."""
        if self._held is not None:
            return self
        _, self._io, self._held = await open_sync_face(
            self._io_workers, "replaykit-client", lambda _: Client(self._target, **self._options)
        )
        return self

    async def close(self) -> None:
        """Release the store, off the loop (idempotent)."""
        client, io = self._held, self._io
        if client is None or io is None or client.closed:
            return
        await asyncio.get_running_loop().run_in_executor(io, client.close)
        io.shutdown(wait=False)

    @property
    def client(self) -> Client:
        """The sync `Client` underneath, for code on other threads."""
        return self._sync()

    def _check_usable(self) -> None:
        self.client._check_open()

    async def off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a blocking call on the client's I/O threads and await its answer."""
        client = self.client
        if client.closed or self._io is None:
            raise RuntimeError("this AsyncClient is closed; create a new one")
        return await call_off_loop(asyncio.get_running_loop(), self._io, fn, args, kwargs)

    # -- what only hands over to the `Client` it holds (runtime/twins.py) ----------------

    start = off_loop_twin(Client.start, _async_handle, AsyncClientHandle)
    enqueue = off_loop_twin(Client.enqueue, _async_handle, AsyncClientHandle)
    send_with_start = off_loop_twin(Client.send_with_start, _async_handle, AsyncClientHandle)
    cancel = off_loop_twin(Client.cancel)
    terminate = off_loop_twin(Client.terminate)
    resume = off_loop_twin(Client.resume, _async_resumed, AsyncResumedHandle)
    fork = off_loop_twin(Client.fork, _async_handle, AsyncClientHandle)
    rewind = off_loop_twin(Client.rewind, _async_handle, AsyncClientHandle)

    def handle(self, workflow_id: str) -> AsyncClientHandle:
        """A handle by id, made without a store read: `status()` and `result()` raise
        `WorkflowNotFound` if no such run exists."""
        self.client  # noqa: B018 - raises when not open
        return AsyncClientHandle(self, workflow_id)

    async def update_with_start(
        self,
        workflow: str,
        name: str,
        /,
        *args: Any,
        workflow_id: str,
        start_args: Sequence[Any] = (),
        start_kwargs: Mapping[str, Any] | None = None,
        queue: str | None = None,
        executor_id: str | None = None,
        app_version: str | None = None,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`Client.update_with_start` as a coroutine, the reply awaited on the loop."""
        client = self.client
        client._check_open()
        row = client._start_row(
            workflow, start_args, start_kwargs, workflow_id, queue, executor_id, app_version
        )
        updater = client.updater
        call = updater.call(workflow_id, name, args, kwargs, update_id=update_id, timeout=timeout)
        start = functools.partial(
            client._create_and_send, row, accept=updates.refuse_finished(call)
        )
        return await updater.update_async(
            call, self.off_loop, start, updates.registered_workflow(workflow)
        )

    async def debounce(
        self,
        key: str,
        period: timedelta | float,
        workflow: str,
        /,
        *args: Any,
        max_wait: timedelta | float | None = None,
        queue: str | None = None,
        executor_id: str | None = None,
        app_version: str | None = None,
        **kwargs: Any,
    ) -> str:
        """`Client.debounce` as a coroutine, the debouncer's answer awaited on the loop."""
        call = debounce.debounce_call(
            key, period, workflow, args, kwargs, max_wait, registered_here=False
        )
        answer = await self.update_with_start(
            debounce.DEBOUNCER_NAME,
            debounce.DEBOUNCE_UPDATE,
            *call.update_args(),
            workflow_id=debounce.debouncer_id(key),
            start_args=[key],
            queue=queue,
            executor_id=executor_id,
            app_version=app_version,
        )
        return str(answer)

    async def _wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow:
        timeout = checked_wait(timeout, "result(timeout=...)")
        client = self.client
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        with loop_waits.notified(client.listen, [("finished", workflow_id)]) as finished:
            while True:
                row = await self.off_loop(client._row, workflow_id)
                if row.status.is_terminal:
                    return row
                wait = client.poll_interval
                if deadline is not None:
                    left = deadline - loop.time()
                    if left <= 0:
                        why = await self.off_loop(_waiting.why_waiting, client.store, row)
                        raise _waiting.still_running(row, timeout, why)
                    wait = min(wait, left)
                await loop_waits.wait_round(finished, wait)
