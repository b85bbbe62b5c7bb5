"""`LoopThread`: a room's background loop on a daemon thread of its own.

The queue claims (`runtime/claims.py`) and the cron loop (`runtime/schedule_loop.py`)
each run a loop that sleeps until its next round or until it is wanted sooner; what
starting, waking and stopping such a loop takes is written here once.
"""

from __future__ import annotations

import threading

__all__ = ["LoopThread"]


class LoopThread:
    """A base for a room whose `_loop` runs on a daemon thread named `name`.

    `_loop` runs until `_closed`, sleeping on `_wanted` between rounds; setting
    `_wanted` wakes it early (a subclass's `wake`). `close()` waits up to five seconds
    for the loop to see it: a round under way (a slow store) is not waited for longer.
    """

    def __init__(self, name: str) -> None:
        self._wanted = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        self._wanted.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        raise NotImplementedError
