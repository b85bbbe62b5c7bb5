"""A long import that reports its progress, outlives a stalled attempt, and stops at a cancel.

    python examples/heartbeats.py

`import_rows` copies a file's rows a batch at a time and calls
`step_context().heartbeat(done)` after each: the count is kept durably as the step's
latest heartbeat, which `Client.get_heartbeats` reads while the step runs (so do
`replaykit workflows show` and the UI). The step has `heartbeat_timeout=1`: its first
attempt hangs half-way (a network read that never returns, here) and beats no more, so a
second later it is abandoned and retried, and the retry reads `heartbeat_details` to go on
from the last batch instead of starting over. A second import is cancelled half-way: its
body gets `Cancelled` at its next heartbeat, the step records it, and the workflow gets
it at the step's yield (it could clean up there; here it lets it end the run).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Generator
from typing import Any

from replaykit import (
    AwaitedWorkflowCancelled,
    Client,
    Engine,
    Retry,
    Status,
    Step,
    step_context,
    workflow,
)
from replaykit.log import Failure

URL = "sqlite:///heartbeats.db"
BATCH = 100
HUNG = threading.Event()  # set only at exit: the hung read of the first attempt


def import_rows(path: str, total: int) -> int:
    ctx = step_context()
    done: int = ctx.heartbeat_details or 0  # where the attempt before this one got
    if done:
        print(f"  {path}: attempt {ctx.attempt} goes on from row {done}")
    while done < total:
        if path == "big.csv" and ctx.attempt == 1 and done == total // 2:
            HUNG.wait(60)  # the read hangs: no heartbeat any more
        time.sleep(0.01)  # copy the next batch
        done += BATCH
        ctx.heartbeat(done)  # cheap: written at most once a second, and at the end
    return done


@workflow
def import_file(path: str, total: int) -> Generator[Any, Any, str]:
    rows: int = yield Step(
        "import",
        import_rows,
        path,
        total,
        heartbeat_timeout=1,
        retry=Retry(max_attempts=3, interval=0.1),
    )
    return f"{path}: {rows} rows imported"


def progress(client: Client, workflow_id: str) -> int:
    beats = client.get_heartbeats(workflow_id)
    return beats[0].details if beats else 0


def main() -> None:
    with Engine(URL) as engine, Client(URL) as client:
        handle = engine.start(import_file, "big.csv", 4000, workflow_id="import-big")
        seen = 0
        while seen < 1000:  # what an operator's dashboard would read
            time.sleep(0.05)
            seen = progress(client, "import-big")
        print(f"import-big: running, {seen} of 4000 rows by its last heartbeat")
        print(handle.result(timeout=60))
        [beat] = client.get_heartbeats("import-big")
        record = engine.steps("import-big")[0]
        print(
            f"import-big: {record.attempts} attempts; its last heartbeat said {beat.details} "
            f"rows, on attempt {beat.attempt}"
        )

        engine.start(import_file, "other.csv", 1_000_000, workflow_id="import-other")
        while progress(client, "import-other") < 1000:
            time.sleep(0.05)
        other = engine.handle("import-other")
        engine.cancel("import-other", reason="wrong file")
        with contextlib.suppress(AwaitedWorkflowCancelled):
            other.result(timeout=30)
        [stopped] = engine.steps("import-other")
        assert isinstance(stopped.outcome, Failure)
        kind = stopped.outcome.error.type_name.rsplit(".", 1)[-1]
        rows = progress(client, "import-other")
        assert other.status() is Status.CANCELLED
        print(f"import-other: CANCELLED; the body stopped at a heartbeat ({kind}), {rows} rows in")
    HUNG.set()  # let the abandoned attempt's thread end


if __name__ == "__main__":
    main()
