"""Notes between engines: LISTEN on the schema's channel from a thread of its own.

Writes that others may wait on call `pg_notify` in their own transaction (the
statements do it), so a note leaves at commit and never for a write that rolled
back. Each note is "<origin><kind>:<key>": this process's subscribers were told
at commit (`Database.tell`), so the listener skips notes of its own origin.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from psycopg import sql

from replaykit.stores.postgres.database import NOTIFY_MAX_KEY, Database
from replaykit.stores.postgres.statements import SQL

__all__ = ["NOTE_KINDS", "NOTIFY_MAX_KEY", "Listener", "Notes"]

_log = logging.getLogger("replaykit.stores")

# What a notification can be about; an origin (12 hex digits) is never one of these.
NOTE_KINDS = frozenset(
    {"message", "event", "finished", "enqueued", "resumed", "stream", "deleted", "schedule"}
)


class Listener:
    """LISTENs on one channel from its own thread and connection, reconnecting forever."""

    def __init__(
        self,
        conninfo: str,
        channel: str,
        application_name: str,
        deliver: Callable[[str, str], None],
        origin: str,
        safe_url: str,
    ) -> None:
        self._conninfo = conninfo
        self._origin = origin
        self._channel = channel
        self._application_name = application_name
        self._deliver = deliver
        self._safe_url = safe_url
        self._stop = threading.Event()
        self.ready = threading.Event()
        self.connections = 0  # how many times LISTEN was (re)established
        self._thread = threading.Thread(
            target=self._run, name=f"replaykit-listen-{channel}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        delay = 0.05
        while not self._stop.is_set():
            try:
                self._listen()
                delay = 0.05
            except Exception as exc:
                self.ready.clear()
                if self._stop.is_set():
                    return
                _log.warning(
                    "replaykit listener on %s lost its connection (%s); reconnecting in %.2fs",
                    self._safe_url,
                    exc,
                    delay,
                )
                self._stop.wait(delay)
                delay = min(delay * 2, 5.0)

    def _listen(self) -> None:
        with psycopg.connect(
            self._conninfo,
            autocommit=True,
            application_name=self._application_name,
            connect_timeout=10,
        ) as conn:
            conn.execute(sql.SQL(SQL["listen"]).format(channel=sql.Identifier(self._channel)))
            self.connections += 1
            self.ready.set()
            if self.connections > 1:
                # Whatever was sent while no LISTEN stood is lost. Waiters poll for
                # most of it, but nothing polls for a delete: subscribers hear
                # "relisten" and forget what a lost note might have changed.
                self._deliver("relisten", "")
            while not self._stop.is_set():
                # A short timeout so stop() is noticed without closing the socket
                # under the thread.
                for notify in conn.notifies(timeout=0.25):
                    # "<origin>:<kind>:<key>" (the key may hold colons), or
                    # "<kind>:<key>" from a sender that names no origin.
                    head, sep, rest = notify.payload.partition(":")
                    if not sep:
                        continue
                    if head in NOTE_KINDS:
                        self._deliver(head, rest)
                        continue
                    if notify.payload.startswith(self._origin):
                        continue
                    kind, sep, key = rest.partition(":")
                    if sep:
                        self._deliver(kind, key)


class Notes:
    """The store's subscribers and the one listener they share, started by the first."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()  # guards the listener and `db.closed`
        self.listener: Listener | None = None

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        db = self._db
        unsubscribe = db.subscribers.add(callback)
        with self._lock:
            listener = self.listener
            if listener is None and not db.closed:
                listener = self.listener = Listener(
                    db.url,
                    db.channel,
                    f"replaykit-listen:{db.schema}"[:63],
                    db.subscribers.deliver,
                    db.origin,
                    db.safe_url,
                )
                listener.start()
        if listener is not None:
            # Notifications sent before LISTEN took effect are lost; a brief wait
            # makes "subscribe, then act" dependable when the server is up.
            listener.ready.wait(timeout=db.connect_timeout)
        return unsubscribe

    def close(self) -> bool:
        """Mark the store closed and stop listening; False if it was closed already."""
        with self._lock:
            if self._db.closed:
                return False
            self._db.closed = True
            listener, self.listener = self.listener, None
        if listener is not None:
            listener.stop()
        return True
