"""The two drivers of the outside readers' cores: one on the calling thread, one on the
running loop (`streams.reading`, `updates.updating`).

A core is a generator with no I/O of its own. It yields `Pause(seconds)` to wait for a
notification of its run (at most that long: one may be lost), `Emit(value)` to hand a
value to the driver's caller, or a store request of its own kind, which the driver hands
to `do`: the core gets back what `do` returned, or has the error `do` raised thrown in
at its `yield`. As psycopg's `wait` and `wait_async`, the two drivers differ only in
how they wait and where the store call runs.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable, Generator, Iterable
from typing import Any

import attrs

from replaykit.runtime.loop_waits import (
    Listen,
    OffLoop,
    notified,
    notified_blocking,
    wait_round,
    wait_round_blocking,
)

__all__ = ["Emit", "Pause", "emitted_async", "emitted_blocking", "pause_before"]


@attrs.frozen
class Pause:
    """Wait up to `seconds` for a notification of the run; answer None."""

    seconds: float


@attrs.frozen
class Emit:
    """A value for the driver's caller (a stream's next value, an update's reply)."""

    value: Any


def pause_before(
    deadline: float | None, poll_interval: float, monotonic: Callable[[], float]
) -> Pause | None:
    """A core's wait for its run's next change: the poll interval, cut short to what is
    left before `deadline` (on `monotonic`'s clock); None once the deadline has passed."""
    if deadline is None:
        return Pause(poll_interval)
    left = deadline - monotonic()
    return Pause(min(poll_interval, left)) if left > 0 else None


def _next(core: Generator[Any, Any, Any], answer: Any, error: Exception | None) -> Any:
    """The core's next request, given the answer to its last one or the error it raised."""
    return core.send(answer) if error is None else core.throw(error)


def emitted_blocking(
    core: Generator[Any, Any, Any],
    do: Callable[[Any], Any],
    listen: Listen,
    wakes: Iterable[tuple[str, str]],
) -> Generator[Any, None, None]:
    """Drive `core` on the calling thread: the values it emits, blocking between them
    until one of `wakes` is notified. Closing the generator stops listening."""
    with notified_blocking(listen, wakes) as changed:
        answer: Any = None
        error: Exception | None = None
        while True:
            try:
                request = _next(core, answer, error)
            except StopIteration:
                return
            answer, error = None, None
            if isinstance(request, Emit):
                yield request.value
            elif isinstance(request, Pause):
                wait_round_blocking(changed, request.seconds)
            else:
                try:
                    answer = do(request)
                except Exception as exc:
                    error = exc


async def emitted_async(
    core: Generator[Any, Any, Any],
    do: Callable[[Any], Any],
    listen: Listen,
    wakes: Iterable[tuple[str, str]],
    off_loop: OffLoop,
) -> AsyncGenerator[Any, None]:
    """Drive `core` on the running loop, its store calls through `off_loop`: the values
    it emits; no thread is held between them. Closing the generator stops listening."""
    with notified(listen, wakes) as changed:
        answer: Any = None
        error: Exception | None = None
        while True:
            try:
                request = _next(core, answer, error)
            except StopIteration:
                return
            answer, error = None, None
            if isinstance(request, Emit):
                yield request.value
            elif isinstance(request, Pause):
                await wait_round(changed, request.seconds)
            else:
                try:
                    answer = await off_loop(functools.partial(do, request))
                except Exception as exc:
                    error = exc
