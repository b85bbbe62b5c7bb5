"""`Engine.serve`: keep a process's engine working until it is told to stop, by a signal or
an event, then close it gracefully with the previous signal handlers kept meanwhile."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence

__all__ = ["serve_until_stopped"]

log = logging.getLogger("replaykit.engine")


def serve_until_stopped(
    close: Callable[[], None],
    *,
    executor_id: str,
    signals: Sequence[signal.Signals],
    stop: threading.Event | None,
) -> None:
    """Wait for one of `signals` (heard on the main thread only) or for `stop`, then
    `close`; the signal handlers in place before come back once the close returns."""
    on_main = threading.current_thread() is threading.main_thread()
    if stop is None and not on_main:
        raise RuntimeError(
            "Engine.serve() hears signals only on the main thread; from another thread, "
            "pass stop=threading.Event() and set it to stop"
        )
    stop = stop or threading.Event()
    told = stop
    previous = (
        {sig: signal.signal(sig, lambda _sig, _frame: told.set()) for sig in signals}
        if on_main
        else {}
    )
    try:
        while not stop.wait(0.5):  # a timed wait, so that signals get their turn
            pass
        log.info("engine %r stopping: running steps finish first", executor_id)
    finally:
        # The handlers stay until the close returns: a second signal meanwhile
        # only asks again for what is under way.
        try:
            close()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
