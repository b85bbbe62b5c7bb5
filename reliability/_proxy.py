"""A TCP proxy in front of PostgreSQL that loses acknowledgements on purpose.

It reads the wire protocol just enough to know, for each `ReadyForQuery` the
server sends, which SQL the client's cycle ran (the statements parsed, bound or
sent since the previous Sync; for the cycle that ends a transaction, every cycle of
that transaction). When a cycle that wrote (INSERT, UPDATE, DELETE or
COMMIT) ends with the server idle — the transaction has committed — the proxy may
close both sockets instead of forwarding that `ReadyForQuery`: the server has
committed, and the client never hears it. Cuts happen when armed for a pattern
(`arm`, deterministic), at random with `cut_probability`, or at any server
message with `random_cut` (mid-reply, not only after commits).

The client must not negotiate TLS or GSS encryption (`sslmode=disable&gssencmode=disable`):
the proxy has to read the bytes it forwards.
"""

from __future__ import annotations

import contextlib
import random
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CuttingProxy"]

_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|COMMIT)\b", re.IGNORECASE)
_SSL_REQUEST = 80877103
_GSS_REQUEST = 80877104


class _Cut(Exception):
    pass


@dataclass
class _Arm:
    pattern: re.Pattern[str]
    remaining: int


class _Connection:
    def __init__(self, proxy: CuttingProxy, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = socket.create_connection(proxy.upstream, timeout=10)
        self.server.settimeout(None)
        self.statements: dict[str, str] = {}
        self.pending: list[str] = []  # SQL of the cycle the client is sending
        self.cycles: deque[list[str]] = deque()  # sent cycles awaiting their ReadyForQuery
        self.transaction: list[str] = []  # SQL of the open transaction's cycles so far
        self.lock = threading.Lock()
        self.untyped_replies = 0  # single-byte answers to SSL/GSS requests
        self.closed = threading.Event()

    def run(self) -> None:
        up = threading.Thread(target=self._pump, args=(self._from_client,), daemon=True)
        down = threading.Thread(target=self._pump, args=(self._from_server,), daemon=True)
        up.start()
        down.start()

    def _pump(self, step: Callable[[], None]) -> None:
        try:
            step()
        except (OSError, _Cut, struct.error):
            pass
        finally:
            self.close()

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    @staticmethod
    def _read(sock: socket.socket, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _from_client(self) -> None:
        while True:  # the untyped start-up messages
            head = self._read(self.client, 8)
            length, code = struct.unpack("!ii", head)
            body = self._read(self.client, length - 8)
            if code in (_SSL_REQUEST, _GSS_REQUEST):
                with self.lock:
                    self.untyped_replies += 1
                self.server.sendall(head + body)
                continue
            self.server.sendall(head + body)
            break
        while True:
            kind = self._read(self.client, 1)
            (length,) = struct.unpack("!i", self._read(self.client, 4))
            body = self._read(self.client, length - 4)
            self._note_client(kind, body)
            self.server.sendall(kind + struct.pack("!i", length) + body)

    def _note_client(self, kind: bytes, body: bytes) -> None:
        if kind == b"Q":
            with self.lock:
                self.cycles.append([*self.pending, body.rstrip(b"\0").decode(errors="replace")])
                self.pending = []
        elif kind == b"P":
            name, rest = body.split(b"\0", 1)
            query = rest.split(b"\0", 1)[0].decode(errors="replace")
            self.statements[name.decode()] = query
            self.pending.append(query)
        elif kind == b"B":
            _portal, rest = body.split(b"\0", 1)
            statement = rest.split(b"\0", 1)[0].decode()
            self.pending.append(self.statements.get(statement, ""))
        elif kind == b"S":
            with self.lock:
                self.cycles.append(self.pending)
                self.pending = []

    def _from_server(self) -> None:
        while True:
            with self.lock:
                untyped = self.untyped_replies
                if untyped:
                    self.untyped_replies -= 1
            if untyped:
                self.client.sendall(self._read(self.server, 1))
                continue
            kind = self._read(self.server, 1)
            (length,) = struct.unpack("!i", self._read(self.server, 4))
            body = self._read(self.server, length - 4)
            message = kind + struct.pack("!i", length) + body
            if kind == b"Z":
                with self.lock:
                    cycle = self.cycles.popleft() if self.cycles else []
                if body[:1] != b"I":
                    # Inside a transaction: its statements count with the cycle that
                    # commits it (a run's start is a transaction of several statements).
                    self.transaction.extend(cycle)
                else:
                    cycle, self.transaction = [*self.transaction, *cycle], []
                    if self.proxy.should_cut(cycle):
                        raise _Cut()
            elif self.proxy.random_cut and self.proxy.roll() < self.proxy.random_cut:
                self.proxy.cut_here("mid-reply", "")
                raise _Cut()
            self.client.sendall(message)


class CuttingProxy:
    """Listens on 127.0.0.1:`port`, forwards to `upstream`; see the module docstring."""

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        seed: int = 0,
        cut_probability: float = 0.0,
        random_cut: float = 0.0,
    ) -> None:
        self.upstream = upstream
        self.cut_probability = cut_probability
        self.random_cut = random_cut
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._armed: list[_Arm] = []
        self.cuts: list[tuple[float, str, str]] = []  # (time, why, SQL)
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: list[_Connection] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="cutting-proxy")

    def start(self) -> CuttingProxy:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for conn in list(self._open):
            conn.close()

    def __enter__(self) -> CuttingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _addr = self._listener.accept()
            except OSError:
                return
            try:
                conn = _Connection(self, client)
            except OSError:
                client.close()
                continue
            self.connections += 1
            self._open = [c for c in self._open if not c.closed.is_set()] + [conn]
            conn.run()

    # -- when to cut -------------------------------------------------------------------

    def arm(self, pattern: str, count: int = 1) -> None:
        """Cut the acknowledgement of the next `count` committed cycles whose SQL matches."""
        with self._lock:
            self._armed.append(_Arm(re.compile(pattern, re.DOTALL), count))

    def disarm(self) -> None:
        with self._lock:
            self._armed.clear()

    def armed_left(self) -> int:
        with self._lock:
            return sum(arm.remaining for arm in self._armed)

    def roll(self) -> float:
        with self._lock:
            return self._rng.random()

    def cut_here(self, why: str, sql: str) -> None:
        with self._lock:
            self.cuts.append((time.time(), why, " ".join(sql.split())[:160]))

    def should_cut(self, cycle: list[str]) -> bool:
        wrote = [sql for sql in cycle if _WRITES.search(sql)]
        if not wrote:
            return False
        with self._lock:
            for arm in self._armed:
                if arm.remaining and any(arm.pattern.search(sql) for sql in wrote):
                    arm.remaining -= 1
                    self.cuts.append((time.time(), "armed", " ".join(wrote[-1].split())[:160]))
                    return True
            if self.cut_probability and self._rng.random() < self.cut_probability:
                self.cuts.append((time.time(), "random", " ".join(wrote[-1].split())[:160]))
                return True
        return False
