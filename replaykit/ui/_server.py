"""Listening: who may be let in, and the uvicorn server the UI runs on."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from replaykit._operator import StoreRefused, open_for_operator, require_schema
from replaykit._text import printable, redact
from replaykit.serde import PayloadCodec
from replaykit.stores.codec import CodecStore
from replaykit.ui._app import create_app, is_local_host

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MIN_TOKEN_CHARS", "check_bind", "running", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
MIN_TOKEN_CHARS = 16
_MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe())'"


def check_bind(host: str, token: str | None) -> None:
    """Refuse a listening address anyone else could reach unless a token guards it.

    Whoever reaches the UI can cancel, resume and fork runs, and read every
    run's inputs and results.
    """
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"the token has {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
            f"(`{_MAKE_TOKEN}` makes one)"
        )
    if not host.strip():
        raise ValueError("no host to listen on; pass --host 127.0.0.1 (the default)")
    if token is None and not is_local_host(host):
        raise ValueError(
            f"refusing to listen on {host!r} without a token: anyone who can reach that "
            "address could read every run and cancel, resume or fork them. Pass --token "
            f"(or REPLAYKIT_UI_TOKEN; `{_MAKE_TOKEN}` makes one), or keep the default "
            f"--host {DEFAULT_HOST}"
        )


def _listen(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError(f"cannot listen on {host!r}: {exc.strerror}; check --host") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise OSError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port "
            "(0 takes a free one)"
        ) from exc
    return sock


def _address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _server(app: ASGIApp, *, quiet: bool) -> uvicorn.Server:
    # No access log: the first request of a token-guarded UI carries the token
    # in its query string.
    config = uvicorn.Config(
        app,
        lifespan="off",
        access_log=False,
        log_level="warning" if quiet else "info",
    )
    return uvicorn.Server(config)


@contextmanager
def running(app: ASGIApp, host: str = DEFAULT_HOST, port: int = 0) -> Iterator[str]:
    """Serve `app` on a thread while the block runs; yields its base URL (tests, screenshots)."""
    sock = _listen(host, port)
    server = _server(app, quiet=True)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="replaykit-ui", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the UI server did not start (see the log above)")
        time.sleep(0.01)
    try:
        yield _address(sock)
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def serve(
    url: str,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    codec: PayloadCodec | None = None,
) -> None:
    """Serve the UI for the store at `url` until interrupted (Ctrl-C, SIGTERM).

    Listens on `host` (loopback by default). Any other address needs `token`,
    which every request must then carry: as `?token=` once (the UI swaps it
    for a cookie), or as `Authorization: Bearer TOKEN`. Raises ValueError for a
    refused bind or token, OSError when the address cannot be listened on.
    The store is opened as the CLI opens it: an existing database, its schema
    checked and never migrated. With `codec`, payloads it encoded are shown
    decoded; without, as `<encoded by NAME, N bytes>`.
    """
    check_bind(host, token)
    try:
        store = open_for_operator(url, create=False)
    except StoreRefused as exc:
        raise ValueError(printable(redact(str(exc)))) from exc
    try:
        require_schema(store, url)
    except StoreRefused as exc:
        store.close()
        raise ValueError(printable(redact(str(exc)))) from exc
    if codec is not None:
        store = CodecStore(store, codec)
    try:
        app = create_app(
            store, token=token, local_only=is_local_host(host), store_label=redact(url)
        )
        sock = _listen(host, port)
        address = _address(sock)
        note = " (add ?token=YOUR_TOKEN once; the browser keeps it)" if token else ""
        print(f"replaykit UI for {redact(url)} on {address}/{note}", file=sys.stderr, flush=True)
        print("Ctrl-C stops it.", file=sys.stderr, flush=True)
        _server(app, quiet=False).run(sockets=[sock])
    finally:
        store.close()
