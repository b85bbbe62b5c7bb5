"""Executor holds: one live engine per executor id, and a liveness test for takeovers.

An engine holds its executor id, for its application version, for as long as
it runs (engines of two versions share an id in a rolling deploy: each
recovers only its own version's runs). The hold is a lock the
operating system or the database server drops by itself when the process
dies (a file lock for SQLite, a session advisory lock for PostgreSQL), so a
restarted engine gets the id back at once after a crash, and a takeover can
tell a dead engine from one whose heartbeat is merely late: a held id is never
taken over, however old its heartbeat.
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["ExecutorHold", "FileHolds", "LocalHolds", "check_hold", "holder_description"]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: file holds degrade to this process only
    fcntl = None  # type: ignore[assignment]


class ExecutorHold(Protocol):
    """This process's hold on one executor id (from `Store.hold_executor`)."""

    def keep(self) -> bool:
        """Whether the id is still held here; takes it again if a lost connection dropped it.

        False: another engine holds it now. Raises `StoreUnavailable` when the
        store cannot tell.
        """
        ...

    def release(self) -> None:
        """Let the id go (idempotent)."""
        ...


def check_hold(hold: ExecutorHold) -> bool:
    """Before a write: whether `hold` still holds its id, cheaply.

    A hold that can be dropped behind its back (a server's session lock, gone with
    its server in a failover) has `check()`: it asks the store again only when an
    outage was seen since it last did, so a write costs nothing more when all is
    well. Other holds (a file lock, this process's own) cannot be dropped while the
    process lives: `keep()` answers at once. Raises `StoreUnavailable` when the
    store cannot tell.
    """
    check = getattr(hold, "check", None)
    if callable(check):
        return bool(check())
    return hold.keep()


def holder_description() -> str:
    """What a waiting engine is told about the holder: where it runs and since when."""
    since = datetime.now(UTC).isoformat(timespec="seconds")
    return f"host {socket.gethostname()}, pid {os.getpid()}, since {since}"


class LocalHolds:
    """Holds that live in this process only: the in-memory store, or SQLite's `:memory:`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], str] = {}

    def hold(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        key = (executor_id, app_version)
        with self._lock:
            if key in self._held:
                return None
            self._held[key] = holder_description()
        return _LocalHold(self, key)

    def probe(self, executor_id: str, app_version: str) -> Callable[[], None] | None:
        """Hold a dead engine's id for the length of a takeover: the function that lets it
        go, or None if a live engine holds it."""
        hold = self.hold(executor_id, app_version)
        return None if hold is None else hold.release

    def holder(self, executor_id: str, app_version: str) -> str:
        with self._lock:
            return self._held.get((executor_id, app_version), "")

    def held(self, executor_id: str, app_version: str) -> bool:
        with self._lock:
            return (executor_id, app_version) in self._held

    def _drop(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._held.pop(key, None)


class _LocalHold:
    def __init__(self, holds: LocalHolds, key: tuple[str, str]) -> None:
        self._holds = holds
        self._key = key
        self._released = False

    def keep(self) -> bool:
        return not self._released

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._holds._drop(self._key)


class FileHolds:
    """Holds as `flock`s on one file per executor id, in a folder beside the database.

    `flock` belongs to an open file, not to a process, so two engines of one
    process exclude each other as two processes do; the kernel drops it when
    the process dies, however it dies.
    """

    def __init__(self, database_path: str) -> None:
        self.folder = database_path + ".executors"
        self._local = LocalHolds()  # where flock is missing, exclusion within the process

    def _path(self, executor_id: str, app_version: str) -> str:
        # Ids and versions are free text; a digest makes a safe, fixed-length file name.
        digest = hashlib.sha256(f"{executor_id}\x00{app_version}".encode()).hexdigest()[:32]
        return os.path.join(self.folder, digest + ".lock")

    def hold(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        if fcntl is None:  # pragma: no cover - Windows
            return self._local.hold(executor_id, app_version)
        fd = self._try_lock(executor_id, app_version)
        if fd is None:
            return None
        # The holder's description is for whoever finds the id held.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{executor_id}\n{holder_description()}\n{app_version}\n".encode(), 0)
        return _FileHold(fd)

    def probe(self, executor_id: str, app_version: str) -> Callable[[], None] | None:
        """Hold a dead engine's id for the length of a takeover: the function that lets it
        go, or None if a live engine holds it."""
        if fcntl is None:  # pragma: no cover - Windows
            return self._local.probe(executor_id, app_version)
        fd = self._try_lock(executor_id, app_version)
        # Closing the only descriptor of the open file drops its flock.
        return None if fd is None else lambda: os.close(fd)

    def holder(self, executor_id: str, app_version: str) -> str:
        if fcntl is None:  # pragma: no cover - Windows
            return self._local.holder(executor_id, app_version)
        # The file outlives its holder: only a lock that is taken says someone holds it.
        free = self.probe(executor_id, app_version)
        if free is not None:
            free()
            return ""
        path = self._path(executor_id, app_version)
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                lines = file.read().splitlines()
        except OSError:
            return ""
        return lines[1] if len(lines) > 1 else "another engine"

    def _try_lock(self, executor_id: str, app_version: str) -> int | None:
        os.makedirs(self.folder, exist_ok=True)
        path = self._path(executor_id, app_version)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return fd


class _FileHold:
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def keep(self) -> bool:
        # A flock lasts as long as its descriptor: nothing outside can drop it.
        return self._fd >= 0

    def release(self) -> None:
        with self._lock:
            if self._fd >= 0:
                fd, self._fd = self._fd, -1
                os.close(fd)
