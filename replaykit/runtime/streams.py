"""Reading a run's streams from outside: one reading core, a blocking and an asyncio driver.

A stream's values are records of the run's own log (`WriteStream`, `CloseStream`).
A reader keeps a `log.StreamCursor` and reads the log incrementally, from the
first position it has not read (`load_log(since=...)`), so a reader of a long run
never reads a record twice. Between reads it waits for the store's ("stream", id)
or ("finished", id) notification, or a poll interval when none comes (a
notification may be lost; SQLite tells other processes nothing).

`reading()` is the core, a generator with no I/O of its own, in the shape of
psycopg's generators: it yields what it needs (`ReadRun`, `ReadLog`, `Pause`) and
what it found (`Emit`), and a driver answers (`runtime/_cores.py`, the drivers it
shares with the updates' core). `read_blocking` drives it for `Engine` and
`Client`; `read_async` for `AsyncEngine` and `AsyncClient`, whose store calls run
off the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any

import attrs

from replaykit.errors import StreamTimeout, WorkflowNotFound
from replaykit.log import Record, StreamCursor
from replaykit.runtime._cores import Emit, Pause, emitted_async, emitted_blocking, pause_before
from replaykit.runtime.loop_waits import Listen, OffLoop
from replaykit.stores.base import Store, WorkflowRow, archive_id

__all__ = [
    "Emit",
    "Pause",
    "ReadLog",
    "ReadRun",
    "check_read_arguments",
    "read_async",
    "read_blocking",
    "reading",
    "recorded_values",
    "store_read",
    "stream_wakes",
]


@attrs.frozen
class ReadRun:
    """Answer with the run's row (`store.get_workflow`), or None."""


@attrs.frozen
class ReadLog:
    """Answer with `store.load_log(run_id, since=since)`.

    `run_id` is the run's id, or the id of the generation the reader started in
    once the run has continued as new (its records moved there).
    """

    run_id: str
    since: int


Request = ReadRun | ReadLog | Pause | Emit


def stream_wakes(workflow_id: str) -> list[tuple[str, str]]:
    """The notifications a reader of the run's streams waits on."""
    return [("stream", workflow_id), ("finished", workflow_id)]


def check_read_arguments(key: str, start: int, timeout: float | None) -> None:
    if not isinstance(key, str) or not key:
        raise TypeError(f"read_stream: the key must be a non-empty str, got {key!r}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(
            f"read_stream(start={start!r}): the index of the first value to read, 0 or more"
        )
    if timeout is not None and (isinstance(timeout, bool) or not timeout >= 0):
        raise ValueError(f"read_stream(timeout={timeout!r}): seconds, 0 or more, or None")


def _not_found(workflow_id: str) -> WorkflowNotFound:
    return WorkflowNotFound(
        f"no workflow run with id {workflow_id!r}, so no stream to read; check the id "
        "(replaykit workflows list); a deleted or collected run keeps no streams"
    )


def reading(
    workflow_id: str,
    key: str,
    start: int,
    *,
    timeout: float | None,
    poll_interval: float,
    monotonic: Callable[[], float],
) -> Generator[Request, Any, None]:
    """The reading core: yields requests for its driver, and `Emit` for each value.

    Ends when the key's `CloseStream` record is read, or when the run was seen
    terminal and the log read after that has been taken (a failed or cancelled
    run ends its streams). Raises `WorkflowNotFound` for an unknown (or deleted)
    run, and `StreamTimeout` when `timeout` seconds pass without a new value.

    A stream belongs to one generation of a run: when the run continues as new,
    the reader takes the rest of its generation's values from the archived
    generation (`<id>#<n>`), where its records moved, and ends. A look at the
    run after each read that took something tells whether the read may have
    seen the next generation's log instead, which is then read again there.
    """
    cursor = StreamCursor(key, start)
    row: WorkflowRow | None = yield ReadRun()
    if row is None:
        raise _not_found(workflow_id)
    generation = row.generation
    log_id = workflow_id
    # The log read after a look that found the run terminal is its last.
    terminal = row.status.is_terminal
    deadline = None if timeout is None else monotonic() + timeout
    while True:
        before = attrs.evolve(cursor)
        records: list[Record] = yield ReadLog(log_id, cursor.next_position)
        fresh = cursor.take(records)
        continued = False
        if log_id == workflow_id and not terminal:
            # Whether anything was found or not, look at the run (an ended run
            # never continues: its last read needs no look).
            row = yield ReadRun()
            if row is None:
                raise _not_found(workflow_id)
            continued = row.generation != generation
        if continued:
            cursor, log_id, terminal = before, archive_id(workflow_id, generation), True
            continue
        for value in fresh:
            yield Emit(value)
        if cursor.closed or terminal:
            return
        assert row is not None
        if row.status.is_terminal:
            # Seen terminal after the read: one more read takes what came before.
            terminal = True
            continue
        if fresh:
            deadline = None if timeout is None else monotonic() + timeout
        pause = pause_before(deadline, poll_interval, monotonic)
        if pause is None:
            raise StreamTimeout(
                f"workflow {row.name!r} (id {workflow_id!r}): no new value on stream "
                f"{key!r} within {timeout}s; {cursor.seen - min(cursor.seen, start)} "
                f"value(s) read (from index {start}), the run is {row.status.value} and "
                "the stream open. Wait longer (timeout=None waits for its close or the "
                "run's end), or look at what the run waits for (replaykit workflows show)"
            )
        yield pause


def store_read(store: Store, workflow_id: str, request: ReadLog | ReadRun) -> Any:
    """The store's answer to `request`: a driver's `do`, made where the driver makes its
    store calls (the calling thread, or off the loop)."""
    if isinstance(request, ReadLog):
        return store.load_log(request.run_id, since=request.since)
    return store.get_workflow(workflow_id)


def read_blocking(
    store: Store,
    listen: Listen,
    workflow_id: str,
    key: str,
    start: int = 0,
    *,
    timeout: float | None,
    poll_interval: float,
    monotonic: Callable[[], float],
) -> Iterator[Any]:
    """Drive `reading` on the calling thread: the stream's values, blocking between them.

    Closing the iterator (or leaving a `for` loop over it) stops listening.
    """
    core = reading(
        workflow_id, key, start, timeout=timeout, poll_interval=poll_interval, monotonic=monotonic
    )
    do = functools.partial(store_read, store, workflow_id)
    yield from emitted_blocking(core, do, listen, stream_wakes(workflow_id))


async def read_async(
    store: Store,
    listen: Listen,
    off_loop: OffLoop,
    workflow_id: str,
    key: str,
    start: int = 0,
    *,
    timeout: float | None,
    poll_interval: float,
) -> AsyncIterator[Any]:
    """Drive `reading` on the running loop: store calls through `off_loop`, waits on an
    asyncio event that notifications set from any thread; no thread is held."""
    clock = asyncio.get_running_loop().time
    core = reading(
        workflow_id, key, start, timeout=timeout, poll_interval=poll_interval, monotonic=clock
    )
    do = functools.partial(store_read, store, workflow_id)
    values = emitted_async(core, do, listen, stream_wakes(workflow_id), off_loop)
    async with contextlib.aclosing(values):
        async for value in values:
            yield value


def recorded_values(
    store: Store, workflow_id: str, key: str, start: int = 0
) -> tuple[list[Any], bool, WorkflowRow]:
    """What the stream holds now, without waiting: (values from `start`, closed, the run)."""
    row = store.get_workflow(workflow_id)
    if row is None:
        raise _not_found(workflow_id)
    cursor = StreamCursor(key, start)
    values = cursor.take(store.load_log(workflow_id))
    return values, cursor.closed, row
