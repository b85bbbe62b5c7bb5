"""Workflows and queues for the worker example (imported by producer and workers alike).

    replaykit worker examples.worker.workflows --url postgresql://... --queue thumbnails

Importing this module registers the workflow and the queue, which is all a worker
needs: the queue's limits are enforced by the database across every worker.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Generator
from datetime import timedelta
from typing import Any

from replaykit import Queue, Retry, Step, workflow

# At most 8 thumbnails in flight across all workers, 4 per worker process,
# and no more than 200 started per second.
thumbnails = Queue(
    "thumbnails", concurrency=8, worker_concurrency=4, rate_limit=(200, timedelta(seconds=1))
)


def render(image_id: str, size: int) -> str:
    time.sleep(0.01)  # stands in for real work
    digest = hashlib.sha256(f"{image_id}:{size}".encode()).hexdigest()[:12]
    return f"thumb-{size}-{digest} by pid {os.getpid()}"


@workflow(name="make-thumbnails")
def make_thumbnails(image_id: str) -> Generator[Any, Any, list[str]]:
    small = yield Step("small", render, image_id, 64, retry=Retry(max_attempts=3))
    large = yield Step("large", render, image_id, 512, retry=Retry(max_attempts=3))
    return [small, large]
