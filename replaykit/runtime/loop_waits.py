"""Waiting for a store's notification: on the running loop, holding no thread (the waits
`AsyncEngine` and `AsyncClient` share, and the asyncio stream and update drivers'), or
on the calling thread (their blocking twins).

A notification comes from any thread (the store's listener, the engine's wake-ups);
`notified` turns it into an asyncio event set on the loop, and `wait_round` waits for
that event or a poll interval, whichever comes first (a notification may be lost).
`notified_blocking` and `wait_round_blocking` do the same with a threading event.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from replaykit._limits import checked_wait
from replaykit.stores.base import Store

__all__ = [
    "Listen",
    "OffLoop",
    "get_event",
    "notified",
    "notified_blocking",
    "wait_round",
    "wait_round_blocking",
]

#: `listen(wakes, callback) -> stop`: calls `callback` from any thread on a notification.
Listen = Callable[[Iterable[tuple[str, str]], Callable[[], None]], Callable[[], None]]
#: Runs a blocking call off the loop and awaits its answer.
OffLoop = Callable[[Callable[[], Any]], Awaitable[Any]]


@contextlib.contextmanager
def notified(listen: Listen, wakes: Iterable[tuple[str, str]]) -> Iterator[asyncio.Event]:
    """On the running loop: an asyncio event set whenever one of `wakes` is notified."""
    loop = asyncio.get_running_loop()
    event = asyncio.Event()

    def from_any_thread() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
            loop.call_soon_threadsafe(event.set)

    stop = listen(wakes, from_any_thread)
    try:
        yield event
    finally:
        stop()


@contextlib.contextmanager
def notified_blocking(
    listen: Listen, wakes: Iterable[tuple[str, str]]
) -> Iterator[threading.Event]:
    """On the calling thread: a threading event set whenever one of `wakes` is notified."""
    event = threading.Event()
    stop = listen(wakes, event.set)
    try:
        yield event
    finally:
        stop()


def wait_round_blocking(event: threading.Event, timeout: float) -> None:
    """Wait for `event` or `timeout` seconds, then clear it for the next round."""
    # Cleared after the wait, before the next read: a notification that lands later
    # sets it again, and the read then sees what it announced.
    event.wait(timeout)
    event.clear()


async def wait_round(event: asyncio.Event, timeout: float) -> bool:
    """Wait for `event` or `timeout` seconds, then clear it for the next round;
    whether it was set."""
    # asyncio.timeout, not wait_for: no task of its own per round.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(max(timeout, 0.0)):
            await event.wait()
    told = event.is_set()
    event.clear()
    return told


async def get_event(
    store: Store,
    listen: Listen,
    off_loop: OffLoop,
    workflow_id: str,
    key: str,
    timeout: float | None,
    poll_interval: float,
) -> Any:
    """The latest value of a run's event `key`, waiting up to `timeout` seconds for it
    (None: not at all); else None. `AsyncEngine.get_event` and `AsyncClient.get_event`."""
    timeout = checked_wait(timeout, "get_event(timeout=...)")
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    with notified(listen, [("event", workflow_id)]) as changed:
        while True:
            found, value = await off_loop(lambda: store.get_event(workflow_id, key))
            if found:
                return value
            if deadline is None or loop.time() >= deadline:
                return None
            await wait_round(changed, min(poll_interval, deadline - loop.time()))
