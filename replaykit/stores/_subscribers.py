"""The callbacks a store tells about its notifications, shared by every store."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["Subscribers"]

_log = logging.getLogger("replaykit.stores")


class Subscribers:
    """Callbacks `(kind, key)`; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[str, str], None]] = []

    def add(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        """Register `callback`; returns the function that unregisters it."""
        with self._lock:
            self._callbacks.append(callback)

        def remove() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove

    def deliver(self, kind: str, key: str) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for callback in callbacks:
            # The write already committed: a failing subscriber must neither
            # make it look failed nor stop a listener thread.
            try:
                callback(kind, key)
            except Exception:
                _log.exception("store subscriber %r failed on %s:%s", callback, kind, key)
