"""Store calls that survive outages: one retry policy for the runtime's rooms."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from replaykit.errors import RecordConflict, StoreUnavailable
from replaykit.log import Record
from replaykit.stores.base import Store

__all__ = ["call_with_retries", "write_with_retries"]

R = TypeVar("R")


def call_with_retries(fn: Callable[[], R], *, stop: Callable[[], bool], attempts: int = 8) -> R:
    """Retry `fn` through `StoreUnavailable` with backoff (the pool reconnects)."""
    delay = 0.05
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except StoreUnavailable:
            if attempt == attempts or stop():
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")


def write_with_retries(
    store: Store,
    workflow_id: str,
    position: int,
    write: Callable[[], Record],
    *,
    stop: Callable[[], bool],
) -> Record:
    """Commit a record, resolving a lost acknowledgement by reading back the log."""
    retried = False
    delay = 0.05
    while True:
        try:
            return write()
        except StoreUnavailable:
            if stop():
                raise
            retried = True
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        except RecordConflict:
            if not retried:
                raise
            # The first attempt may have committed before the connection
            # dropped; if so, the position holds our record: adopt it.
            records = call_with_retries(lambda: store.load_log(workflow_id), stop=stop)
            if position < len(records) and records[position].outcome is not None:
                return records[position]
            raise
