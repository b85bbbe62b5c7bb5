"""replaykit/runtime/loop_waits.py: waiting on the running loop for a store's notification.

A notification from another thread wakes the loop's wait at once; without one, a wait
ends at its poll interval (a notification may be lost).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from replaykit.log import Record, Status, Value
from replaykit.runtime.loop_waits import get_event, notified, wait_round
from replaykit.stores.base import EventWrite, WorkflowRow
from replaykit.stores.memory import MemoryStore


class Listener:
    """`listen(wakes, callback)` as an engine offers it; notifies by hand."""

    def __init__(self) -> None:
        self.callbacks: dict[tuple[str, str], list[Callable[[], None]]] = {}
        self.stopped = 0

    def listen(
        self, wakes: Iterable[tuple[str, str]], callback: Callable[[], None]
    ) -> Callable[[], None]:
        wakes = list(wakes)
        for wake in wakes:
            self.callbacks.setdefault(wake, []).append(callback)

        def stop() -> None:
            self.stopped += 1
            for wake in wakes:
                self.callbacks[wake].remove(callback)

        return stop

    def notify(self, wake: tuple[str, str]) -> None:
        for callback in list(self.callbacks.get(wake, ())):
            callback()


async def _off_loop(call: Callable[[], Any]) -> Any:
    return await asyncio.to_thread(call)


def test_a_notification_from_another_thread_wakes_the_wait_at_once() -> None:
    listener = Listener()

    async def main() -> tuple[bool, float]:
        with notified(listener.listen, [("event", "r-1")]) as event:
            threading.Timer(0.05, listener.notify, [("event", "r-1")]).start()
            started = time.monotonic()
            told = await wait_round(event, 30)
            return told, time.monotonic() - started

    told, waited = asyncio.run(main())
    assert told and waited < 10
    assert listener.stopped == 1 and listener.callbacks[("event", "r-1")] == []


def test_a_round_without_a_notification_ends_at_its_timeout_and_clears() -> None:
    async def main() -> list[bool]:
        event = asyncio.Event()
        first = await wait_round(event, 0.01)
        event.set()
        second = await wait_round(event, 0.01)
        third = await wait_round(event, -1)  # a deadline already past: no wait
        return [first, second, third, event.is_set()]

    assert asyncio.run(main()) == [False, True, False, False]


def test_get_event_answers_the_value_set_while_it_waits() -> None:
    store = MemoryStore()
    store.create_workflow(WorkflowRow("r-1", "wf", Status.PENDING))
    listener = Listener()

    def set_it() -> None:
        store.record(
            "r-1", Record(0, "set_event", "stage", Value(None)), event=EventWrite("stage", "paid")
        )
        listener.notify(("event", "r-1"))

    async def main() -> Any:
        assert await get_event(store, listener.listen, _off_loop, "r-1", "stage", 0, 30) is None
        threading.Timer(0.05, set_it).start()
        return await get_event(store, listener.listen, _off_loop, "r-1", "stage", 20, 30)

    assert asyncio.run(main()) == "paid"
