"""Workflows that write streams, run in a process of their own by tests/test_streams.py.

    python -m tests.apps.stream_app URL progress ID N PAUSE LINGER
        # N values PAUSE s apart, closed, then LINGER s more before the run ends
    python -m tests.apps.stream_app URL crashing ID MARKER    # killed once mid-stream

The engine has a fixed executor id and version, so an engine of the test process
recovers what a killed one left behind.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

from replaykit import CloseStream, Engine, Sleep, Step, WriteStream, workflow

EXECUTOR_ID = "stream-app"
APP_VERSION = "stream-app-v1"


@workflow(name="stream-app-progress")
def progress(n: int, pause: float, linger: float) -> Generator[Any, Any, int]:
    for i in range(n):
        yield Sleep(pause)
        yield WriteStream("progress", {"done": i + 1, "of": n})
    yield CloseStream("progress")
    yield Sleep(linger)
    return n


def die_once(marker: str) -> str:
    """Kill this process the first time it is called: a crash between two stream values."""
    path = Path(marker)
    if not path.exists():
        path.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


@workflow(name="stream-app-crashing")
def crashing(marker: str) -> Generator[Any, Any, str]:
    yield WriteStream("tokens", "a")
    yield WriteStream("tokens", "b")
    how = yield Step("die-once", die_once, marker)
    yield WriteStream("tokens", "c")
    yield CloseStream("tokens")
    return str(how)


def main(argv: list[str]) -> None:
    url, which, workflow_id, *rest = argv
    with Engine(url, executor_id=EXECUTOR_ID, app_version=APP_VERSION, poll_interval=0.1) as e:
        if which == "progress":
            n, pause, linger = int(rest[0]), float(rest[1]), float(rest[2])
            handle = e.start(progress, n, pause, linger, workflow_id=workflow_id)
        else:
            handle = e.start(crashing, rest[0], workflow_id=workflow_id)
        print(handle.result(timeout=60), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
