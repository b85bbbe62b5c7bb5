"""A step that fails three times, BACKOFF_SECONDS apart, for tests/test_retries_durable.py.

    python tests/apps/retry_app.py URL ATTEMPTS_FILE

starts the run and waits; the test kills the process with SIGKILL during a back-off
and lets an engine of its own finish the run. Each attempt appends a line to
ATTEMPTS_FILE (its number and the wall-clock instant it began), so the count is
kept across the crash. Both processes pin APP_VERSION: the default version digests
every workflow a process registers, and the test process registers many more.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Generator
from typing import Any

from replaykit import Engine, Retry, Step, step_context, workflow

BACKOFF_SECONDS = 1.5
APP_VERSION = "retry-app"
WORKFLOW_ID = "killed-during-a-back-off"


def charge(attempts_file: str) -> str:
    attempt = step_context().attempt
    with open(attempts_file, "a", encoding="utf-8") as out:
        out.write(f"{attempt} {time.time()}\n")
        out.flush()
        os.fsync(out.fileno())
    if attempt < 4:
        raise ConnectionError(f"the payment service is down (attempt {attempt})")
    return f"charged on attempt {attempt}"


@workflow(name="retry-app.charge")
def charge_with_retries(attempts_file: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge",
        charge,
        attempts_file,
        retry=Retry(max_attempts=5, interval=BACKOFF_SECONDS, backoff=1.0),
    )
    return value


if __name__ == "__main__":
    url, attempts_file = sys.argv[1], sys.argv[2]
    with Engine(url, app_version=APP_VERSION) as engine:
        engine.start(charge_with_retries, attempts_file, workflow_id=WORKFLOW_ID)
        time.sleep(120)  # killed long before
