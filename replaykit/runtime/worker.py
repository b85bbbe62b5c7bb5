"""A worker process: import the application's module, drain queues until SIGTERM.

The module named on the command line is imported because the operator named
it, never because stored data did. Shutdown is graceful: the engine stops
claiming, running steps finish and commit, and queue runs still held go back
to ENQUEUED for other workers.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Sequence
from datetime import timedelta
from types import FrameType

from replaykit.runtime.engine import Engine
from replaykit.runtime.queues import queue_named

__all__ = ["default_executor_id", "run_worker"]

log = logging.getLogger("replaykit.worker")


def default_executor_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def run_worker(
    module: str,
    *,
    url: str | None,
    queues: Sequence[str] = (),
    executor_id: str | None = None,
    app_version: str | None = None,
    max_workers: int = 64,
    poll_interval: float = 1.0,
    lease_seconds: float = 30.0,
    retention: timedelta | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run until SIGTERM/SIGINT (or `stop` is set). Returns a process exit code."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `replaykit worker myapp.workflows` from the app root
    importlib.import_module(module)
    for name in queues:
        queue_named(name)  # fail fast, with the list of known queues
    stop = stop or threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s; draining", signal.Signals(signum).name)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
    engine = Engine(
        url,
        executor_id=executor_id or default_executor_id(),
        app_version=app_version,
        queues=list(queues) if queues else None,
        max_workers=max_workers,
        poll_interval=poll_interval,
        lease_seconds=lease_seconds,
        retention=retention,
    )
    log.info(
        "worker %s (version %s) draining %s",
        engine.executor_id,
        engine.app_version,
        ", ".join(queues) or "all registered queues",
    )
    try:
        stop.wait()
    finally:
        engine.close(wait=True)
    return 0
