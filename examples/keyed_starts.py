"""Concurrency keys and overlap on starts: one sync per customer at a time, a nightly
report that never runs twice at once, and a preview that a newer edit replaces.

    python examples/keyed_starts.py

- `concurrency_key="customer-42"`: the customer's syncs run one at a time, in the
  order they were started, on whichever engine has room; other customers' syncs run
  beside them.
- `overlap="skip"`: a second start of the nightly report while one is live answers
  with the live run instead of starting another.
- `overlap="cancel_other"`: a newer edit's preview cancels the preview under way and
  starts once it has stopped.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

from replaykit import Engine, Status, Step, workflow

_lock = threading.Lock()
_running: dict[str, int] = {}
_peak: dict[str, int] = {}


def sync_customer(customer: str, batch: int) -> str:
    with _lock:
        _running[customer] = _running.get(customer, 0) + 1
        _peak[customer] = max(_peak.get(customer, 0), _running[customer])
    time.sleep(0.05)  # the sync's work
    with _lock:
        _running[customer] -= 1
    return f"{customer} batch {batch} synced"


def build_report(day: str) -> str:
    time.sleep(0.3)
    return f"report for {day}"


def render(document: str, version: int) -> str:
    time.sleep(0.2)
    return f"{document} v{version} rendered"


@workflow
def sync(customer: str, batch: int) -> Generator[Any, Any, str]:
    return (yield Step("sync", sync_customer, customer, batch))


@workflow
def nightly_report(day: str) -> Generator[Any, Any, str]:
    return (yield Step("build", build_report, day))


@workflow
def preview(document: str, version: int) -> Generator[Any, Any, str]:
    # Two steps: a cancel reaches the run at its next yield, between them.
    yield Step("render", render, document, version)
    return (yield Step("publish", render, document, version))


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "keyed.db"
    with Engine(f"sqlite:///{path}", poll_interval=0.05) as engine:
        syncs = [
            engine.start(sync, customer, batch, concurrency_key=customer)
            for batch in range(3)
            for customer in ("customer-42", "customer-7")
        ]
        for handle in syncs:
            print(handle.result(timeout=30))
        print(f"most syncs of one customer at once: {max(_peak.values())}")

        first = engine.start(
            nightly_report, "2026-12-04", concurrency_key="nightly", overlap="skip"
        )
        second = engine.start(
            nightly_report, "2026-12-04", concurrency_key="nightly", overlap="skip"
        )
        print(f"second start answered with the live run: {second.workflow_id == first.workflow_id}")
        print(first.result(timeout=30))

        old = engine.start(preview, "spec.md", 1, concurrency_key="spec.md", overlap="cancel_other")
        while old.status() is not Status.PENDING:
            time.sleep(0.01)
        new = engine.start(preview, "spec.md", 2, concurrency_key="spec.md", overlap="cancel_other")
        print(new.result(timeout=30))
        print(f"the older preview: {old.status().value}")


if __name__ == "__main__":
    main()
