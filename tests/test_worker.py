"""replaykit/runtime/worker.py: a worker drains its queues until told to stop.

Run here on a thread (no signal handlers), draining a SQLite store a producer enqueues
to; `replaykit worker` as a process, killed and restarted, is tests/test_workers.py's.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from conftest import error_line, rk
from replaykit import Engine, Queue, Step, workflow
from replaykit.runtime.worker import default_executor_id, run_worker

QUEUE = "worker-room-q"


@workflow(name="worker-room.double")
def double(n: int) -> Generator[Any, Any, int]:
    return (yield Step("double", lambda: 2 * n))


def test_a_worker_drains_its_queue_and_stops_when_told(tmp_path: Path) -> None:
    Queue(QUEUE)  # declared here: other tests' fixtures restore the queue registry
    url = f"sqlite:///{tmp_path / 'worker.db'}"
    stop = threading.Event()
    code: list[int] = []
    worker = threading.Thread(
        target=lambda: code.append(
            run_worker(
                __name__,
                url=url,
                queues=[QUEUE],
                executor_id="w-1",
                app_version="v1",
                poll_interval=0.05,
                stop=stop,
            )
        )
    )
    worker.start()
    try:
        with Engine(url, queues=[], app_version="v1", poll_interval=0.05) as producer:
            handle = producer.enqueue(QUEUE, double, 21, workflow_id="job-1")
            assert handle.result(timeout=20) == 42
            assert handle.row().executor_id == "w-1"
    finally:
        stop.set()
        worker.join(timeout=30)
    assert code == [0] and not worker.is_alive()


def test_a_queue_nobody_declared_fails_before_the_worker_starts(tmp_path: Path) -> None:
    with pytest.raises(LookupError, match=r"no queue named 'no-such-worker-queue' is registered"):
        run_worker(
            __name__,
            url=f"sqlite:///{tmp_path / 'w.db'}",
            queues=["no-such-worker-queue"],
            stop=threading.Event(),
        )
    assert not (tmp_path / "w.db").exists()  # nothing was opened


def test_a_default_executor_id_names_the_host_and_the_process() -> None:
    first, second = default_executor_id(), default_executor_id()
    assert first.startswith(f"{socket.gethostname()}-{os.getpid()}-")
    assert first != second


def test_a_worker_takes_a_retention_as_a_duration() -> None:
    said = error_line(rk("worker", __name__, "--retention", "soon"), code=2)
    assert "'soon' is not a duration" in said and "--retention" in said
