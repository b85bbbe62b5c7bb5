"""Threads for work whose answer nobody waits on: the scheduler's hand-offs.

The scheduler hands a step body or a store write to a pool and hears of the
outcome as an event it posts to itself; it never looks at what `submit`
returns. `concurrent.futures.ThreadPoolExecutor` returns a `Future` all the
same, and each holds a `Condition` over an `RLock`, a deque and a handful of
bound methods: about a dozen objects the garbage collector tracks, per step.
At thousands of steps a second they set off a third of its passes (10,000 plain
steps under an `AsyncEngine`: 255 young passes and 2 full ones before, 173 and 1
after; docs/performance.md), and a full pass stops every thread, an
application's event loop among them, for tens of milliseconds.

`WorkPool` queues a call and its arguments, nothing more. It behaves as the
executor does where the scheduler relies on it: threads start on demand up to
`max_workers` (an idle one is reused first), `submit` after `shutdown` raises
`RuntimeError`, and `shutdown(cancel_pending=True)` drops calls not started.

One difference: its threads are daemons, as the scheduler's own thread is. The
executor's were joined when the interpreter exited, so a program that ended
without closing its engine waited for the calls under way; now they stop with
the process, like a crash, and recovery runs those runs again from their logs.
(Non-daemon threads would hold such a program open for ever, waiting for work.)
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["WorkPool"]

log = logging.getLogger("replaykit.engine")

_Call = tuple[Callable[..., Any], tuple[Any, ...]]


class WorkPool:
    """`submit(fn, *args)` runs `fn(*args)` on one of up to `max_workers` threads.

    What `fn` raises is logged (the scheduler's calls catch their own failures;
    this is the last resort) and the thread goes on with the next call.
    """

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError(f"a WorkPool needs at least one thread, got max_workers={max_workers}")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        # Threads that finished a call and wait for the next, not yet promised to
        # one: a submit promises one of them its call instead of starting a thread.
        self._idle = 0
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> None:
        """Queue `fn(*args)`; `RuntimeError` if the pool is shut down, or if it has no
        thread and cannot start one (then nothing was queued)."""
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot run new work: this pool is shut down")
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._max_workers:
                self._start_thread()
            self._calls.put((fn, args))

    def _start_thread(self) -> None:
        """One more thread (the lock held). Started before it is counted: a thread that
        could not start is neither waited for at shutdown nor counted on for work."""
        thread = threading.Thread(
            target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True
        )
        try:
            thread.start()
        except RuntimeError:  # "can't start new thread": out of threads or shutting down
            if not self._threads:
                raise  # nothing would ever run the call: the caller hears it now
            log.warning(
                "could not start another %s thread; the work waits for one of the %d running",
                self._prefix,
                len(self._threads),
                exc_info=True,
            )
            return
        self._threads.append(thread)

    def _work(self) -> None:
        calls, lock = self._calls, self._lock
        while True:
            call = calls.get()
            if call is None:  # shut down
                return
            fn, args = call
            try:
                fn(*args)
            except BaseException:
                log.exception("work handed to %s failed", self._prefix)
            # Let go of the call before waiting for the next: its arguments (a run's
            # activation, a record) are freed now, not when the next call comes.
            del call, fn, args
            with lock:
                self._idle += 1

    def shutdown(
        self, *, wait: bool = True, cancel_pending: bool = False, timeout: float | None = None
    ) -> bool:
        """No more calls; with `cancel_pending`, those not started are dropped; with
        `wait`, the calls under way (and, without `cancel_pending`, those queued) are
        waited for, not from one of the pool's own threads, which cannot wait for
        itself. With `timeout`, the wait stops after that many seconds and the calls
        not started by then are dropped. Whether every thread ended."""
        with self._lock:
            if not self._shut:
                self._shut = True
                if cancel_pending:
                    self._drop_queued()
                for _ in self._threads:
                    self._calls.put(None)
            threads = list(self._threads)
        if not wait:
            return False
        deadline = None if timeout is None else time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if all(not thread.is_alive() for thread in threads if thread is not current):
            return True
        with self._lock:
            # Out of time: what has not started is dropped, and each thread is told
            # again to stop once its call returns.
            self._drop_queued()
            for _ in self._threads:
                self._calls.put(None)
        return False

    def _drop_queued(self) -> None:
        try:
            while True:
                self._calls.get_nowait()
        except queue.Empty:
            pass
