"""`Room`: what a room of the SQLite store is handed when the store is built."""

from __future__ import annotations

from replaykit.stores.sqlite.connections import Connections
from replaykit.stores.sqlite.writer import Notify, Writer

__all__ = ["Room"]


class Room:
    """A room that reads on the store's connections, writes through its one writer
    (a write transaction at a time, shared by concurrent callers) and tells the
    store's subscribers what its writes changed, once they committed."""

    def __init__(self, connections: Connections, writer: Writer, notify: Notify) -> None:
        self._connections = connections
        self._writer = writer
        self._notify = notify
