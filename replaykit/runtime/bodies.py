"""Where step bodies run: the event loop for async ones, this thread or the step pool
for sync ones, and how a timeout, a heartbeat timeout or a preemption walks away from
them.

`Bodies` owns the private event loop an engine starts on first use when it was given
none (an `AsyncEngine` gives the application's, which is never stopped here). A sync
body runs on the calling thread, unless it has a timeout, a heartbeat timeout or is
preemptible: then on a thread of the step pool, which the caller can walk away from
(Python cannot stop a thread). An async body's timeouts are judged here, not by the
body (`within_timeout`, `within_beats`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from concurrent.futures import Executor
from typing import Any, TypeVar

from replaykit.errors import Stopped
from replaykit.interpreter import StepContext, step_context_var
from replaykit.runtime.beats import AttemptBeats
from replaykit.runtime.host import CancelScope

__all__ = ["CANCEL_GRACE_SECONDS", "Bodies", "is_async", "within_beats", "within_timeout"]

T = TypeVar("T")


@functools.lru_cache(maxsize=4096)
def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


def is_async(fn: Callable[..., Any]) -> bool:
    try:
        return _is_async(fn)
    except TypeError:  # unhashable callable
        return _is_async.__wrapped__(fn)


#: How long a timed-out async step body may take to end after it is cancelled (its
#: `finally` blocks, say) before the attempt is judged without it.
CANCEL_GRACE_SECONDS = 1.0


async def within_timeout(body: Awaitable[T], timeout: float, name: str) -> T:
    """Await `body` for at most `timeout` seconds; past that, the attempt timed out.

    replaykit judges the timeout, not the body: a body that swallows its
    cancellation and returns a value anyway has still timed out (asyncio's
    `wait_for` would return that value). It is cancelled and given a short
    grace to clean up; whatever it ends with then is ignored.
    """
    task = asyncio.ensure_future(body)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:  # the run was cancelled: so is its body
        task.cancel()
        raise
    if task in done:
        return task.result()
    task.cancel()
    # Its late outcome is dropped on purpose; retrieving it keeps asyncio quiet.
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
    raise TimeoutError(f"step {name!r} timed out after {timeout}s")


async def within_beats(
    body: Awaitable[T], beats: AttemptBeats, timeout: float | None, name: str
) -> T:
    """Await `body` while its heartbeats keep coming (and for at most `timeout` seconds).

    Judged as `within_timeout` judges: a body that ended after its heartbeats'
    expiry timed out, whatever it returned; one still running then is cancelled
    and given a short grace, and the attempt fails with `HeartbeatTimeout`.
    """
    task = asyncio.ensure_future(_watched(body, beats))
    loop = asyncio.get_running_loop()
    limit = None if timeout is None else loop.time() + timeout
    failure: BaseException
    try:
        while True:
            wait = beats.seconds_left()
            if limit is not None:
                wait = min(wait, max(limit - loop.time(), 0.0))
            done, _ = await asyncio.wait({task}, timeout=wait)
            if task in done:
                if beats.expired():
                    if not task.cancelled():
                        task.exception()  # dropped, but retrieved: asyncio stays quiet
                    raise beats.timed_out()
                return task.result()
            if beats.expired():
                failure = beats.timed_out()
                break
            if limit is not None and loop.time() >= limit:
                failure = TimeoutError(f"step {name!r} timed out after {timeout}s")
                break
    except asyncio.CancelledError:  # the run was cancelled: so is its body
        task.cancel()
        raise
    task.cancel()
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    await asyncio.wait({task}, timeout=CANCEL_GRACE_SECONDS)
    raise failure


async def _watched(body: Awaitable[T], beats: AttemptBeats) -> T:
    beats.body_started()
    try:
        return await body
    finally:
        beats.body_ended()


def _call_in_step_context(
    context: StepContext | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    beats: AttemptBeats | None = None,
) -> Any:
    step_context_var.set(context)  # in a copied context: nothing to reset
    if beats is None:
        return fn(*args, **kwargs)
    beats.body_started()
    try:
        return fn(*args, **kwargs)
    finally:
        beats.body_ended()


def _wait_for_body(ended: threading.Event, timeout: float | None, beats: AttemptBeats) -> None:
    """Until the body ends (or a preemption sets `ended`), `timeout` seconds pass, or
    its heartbeats stop for longer than their timeout."""
    limit = None if timeout is None else time.monotonic() + timeout
    while not ended.is_set():
        wait = beats.seconds_left()
        if limit is not None:
            wait = min(wait, max(limit - time.monotonic(), 0.0))
        ended.wait(wait)
        if beats.expired() or (limit is not None and time.monotonic() >= limit):
            return


async def _cancel_the_rest() -> None:
    """Cancel every other task of the running loop and wait a grace period for them."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=CANCEL_GRACE_SECONDS)


def _submit_to_loop(
    body: Callable[[], Coroutine[Any, Any, Any]], loop: asyncio.AbstractEventLoop
) -> concurrent.futures.Future[Any]:
    """`asyncio.run_coroutine_threadsafe`, but the coroutine is made on the loop.

    A race's losing async step is cancelled, and an engine closes its loop, before
    the loop may have got to it: a coroutine made here and never started would then
    be garbage with a "never awaited" warning. Made on the loop, it starts at once.
    """
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def begin() -> None:
        if future.cancelled():
            return  # cancelled before the loop got to it: nothing to start
        task = loop.create_task(body())

        def settle(done: asyncio.Task[Any]) -> None:
            # The future stays PENDING until here (never RUNNING), so that a cancel
            # from another thread still reaches it and, through it, the task.
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                if done.cancelled():
                    future.cancel()
                elif (error := done.exception()) is not None:
                    future.set_exception(error)
                else:
                    future.set_result(done.result())

        task.add_done_callback(settle)
        future.add_done_callback(lambda f: f.cancelled() and loop.call_soon_threadsafe(task.cancel))

    loop.call_soon_threadsafe(begin)
    return future


async def _in_step_context(
    context: StepContext | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> Any:
    # Runs as a task of the loop, which has a context of its own: set it there.
    step_context_var.set(context)
    return await fn(*args, **kwargs)


class Bodies:
    """Runs step bodies; owns the private event loop, if one starts."""

    def __init__(self, pool: Executor, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._pool = pool
        # A loop given here is the application's (AsyncEngine's): async step bodies
        # run on it, so what belongs to that loop works inside them; it is never
        # stopped by us. Without one, a private loop starts on first use.
        self._given_loop = loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()

    def call(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        timeout: float | None,
        name: str,
        scope: CancelScope | None = None,
        *,
        context: StepContext | None = None,
        preemptible: bool = False,
        beats: AttemptBeats | None = None,
    ) -> Any:
        """Call a step body once: an async one on the loop, a sync one here (on the
        step pool when it has a timeout, a heartbeat timeout or is preemptible, so that
        this thread may walk away from it). `beats`, the attempt's heartbeats, is
        watched when the step has a heartbeat timeout."""
        watched = beats if beats is not None and beats.timeout is not None else None
        if is_async(fn):

            def body() -> Coroutine[Any, Any, Any]:
                coro = _in_step_context(context, fn, args, kwargs)
                if watched is not None:
                    return within_beats(coro, watched, timeout, name)
                return within_timeout(coro, timeout, name) if timeout is not None else coro

            future = _submit_to_loop(body, self.async_loop())
            if scope is not None:
                scope.on_cancel(future.cancel)
            try:
                return future.result()
            except concurrent.futures.CancelledError:
                raise Stopped(f"step {name!r} was cancelled") from None
            finally:
                if scope is not None:
                    scope.discard(future.cancel)
        if timeout is None and watched is None and not (preemptible and scope is not None):
            token = step_context_var.set(context)
            try:
                return fn(*args, **kwargs)
            finally:
                step_context_var.reset(token)
        # On a thread of the step pool, with this thread's context (the step's
        # included): Python cannot stop a thread, so this one may walk away from it.
        copied = contextvars.copy_context()
        future = self._pool.submit(
            copied.run, _call_in_step_context, context, fn, args, kwargs, watched
        )
        ended = threading.Event()
        future.add_done_callback(lambda _f: ended.set())
        if preemptible and scope is not None:
            scope.on_cancel(ended.set)
        try:
            if watched is None:
                ended.wait(timeout)
            else:
                _wait_for_body(ended, timeout, watched)
        finally:
            if preemptible and scope is not None:
                scope.discard(ended.set)
        if future.done():
            if watched is not None and watched.expired():
                raise watched.timed_out()  # it ended too late: its outcome is dropped
            return future.result()
        future.cancel()
        if preemptible and scope is not None and scope.cancelled:
            # The run was cancelled (maybe elsewhere): abandoned, its outcome dropped.
            raise Stopped(f"step {name!r} was preempted: its run was cancelled")
        if watched is not None and watched.expired():
            raise watched.timed_out()  # abandoned: its thread runs on, stopped at a beat
        raise TimeoutError(f"step {name!r} timed out after {timeout}s")

    def async_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop async step bodies run on (the given one, else started on first use)."""
        if self._given_loop is not None:
            if self._given_loop.is_closed():
                raise RuntimeError(
                    "the event loop this engine runs async steps on is closed; close the "
                    "AsyncEngine (async with AsyncEngine(...)) before its loop ends"
                )
            return self._given_loop
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="replaykit-async-steps", daemon=True
                )
                thread.start()
                self._loop, self._loop_thread = loop, thread
            return self._loop

    def close(self) -> None:
        with self._loop_lock:
            loop, self._loop = self._loop, None
            thread, self._loop_thread = self._loop_thread, None
        if loop is not None and thread is not None:
            # What still runs there is a race's loser or an abandoned step: cancel
            # it and let it unwind, rather than destroy it pending with the loop.
            drained = asyncio.run_coroutine_threadsafe(_cancel_the_rest(), loop)
            with contextlib.suppress(Exception):
                drained.result(timeout=CANCEL_GRACE_SECONDS + 1)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            if not thread.is_alive():
                loop.close()
