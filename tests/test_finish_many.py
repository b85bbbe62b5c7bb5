"""Runs that end side by side finish together: one `Store.finish_many` call per round.

The scheduler hands the finishes of the runs whose generators returned in one round
to one bookkeeping thread, which waits for their group commit once (one thread woken
when it is durable, not one per run). A run alone finishes as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Sequence
from typing import Any

import pytest

from replaykit import Engine, Step, workflow
from replaykit.errors import StoreUnavailable
from replaykit.log import Record
from replaykit.stores import open_store
from replaykit.stores.base import FinishWrite, RecordWrite, Store


class CountingStore:
    """A store that counts how runs are finished, and can fail one finish of a batch."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.batches: list[int] = []
        self.alone = 0
        self.with_record = 0  # finishes that carried the run's last record
        self.recorded: list[tuple[str, int]] = []  # (run, position) written by record_many
        self.fail_once: set[str] = set()
        self.batched: set[str] = set()  # runs finished through finish_many
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def finish_workflow(self, *args: Any, **kwargs: Any) -> bool:
        with self._lock:
            self.alone += 1
        return self.inner.finish_workflow(*args, **kwargs)

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        with self._lock:
            self.recorded.extend((w.workflow_id, w.record.position) for w in writes)
        return self.inner.record_many(writes)

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        with self._lock:
            self.batches.append(len(finishes))
            self.with_record += sum(1 for f in finishes if f.record is not None)
            self.batched.update(f.workflow_id for f in finishes)
            failing = {f.workflow_id for f in finishes} & self.fail_once
            self.fail_once -= failing
        kept = [f for f in finishes if f.workflow_id not in failing]
        answers = iter(self.inner.finish_many(kept))
        return [
            StoreUnavailable(f"test: the finish of {f.workflow_id!r} was lost")
            if f.workflow_id in failing
            else next(answers)
            for f in finishes
        ]


class WithoutFinishMany:
    """A store of the first protocol: everything but `finish_many`."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "finish_many":
            raise AttributeError(name)
        return getattr(self.inner, name)


def nap(i: int) -> int:
    time.sleep(0.01)  # long enough for many runs to be under way at once
    return i


@workflow
def two_naps(n: int) -> Generator[Any, Any, int]:
    a = yield Step("a", nap, n)
    b = yield Step("b", nap, n)
    return int(a + b)


def run_many(store: CountingStore, count: int, prefix: str, **options: Any) -> list[int]:
    """The runs' results, each read back from the store too (it closes with the engine)."""
    with Engine(store, **options) as engine:  # type: ignore[arg-type]
        handles = [engine.start(two_naps, i, workflow_id=f"{prefix}-{i}") for i in range(count)]
        results = [handle.result(timeout=60) for handle in handles]
        for i in range(count):
            row = store.inner.get_workflow(f"{prefix}-{i}")
            assert row is not None and row.status.value == "SUCCESS", row
        return results


def test_runs_ending_side_by_side_finish_in_batches(store_url: str) -> None:
    store = CountingStore(open_store(store_url))
    assert run_many(store, 60, "side") == [2 * i for i in range(60)]
    assert sum(store.batches) + store.alone == 60, (store.batches, store.alone)
    assert max(store.batches) > 1, store.batches  # some finishes shared a call
    # A run that returns right after its last step finishes with that step's record:
    # the batch of records never carried position 1 of a run finished in a batch.
    assert store.with_record == sum(store.batches), (store.with_record, store.batches)
    last_positions = {run for run, position in store.recorded if position == 1}
    assert len(last_positions) <= store.alone, (len(last_positions), store.alone)


def test_a_run_alone_finishes_on_its_own(store_url: str) -> None:
    store = CountingStore(open_store(store_url))
    with Engine(store) as engine:  # type: ignore[arg-type]
        assert engine.run(two_naps, 3, workflow_id="lone") == 6
    assert (store.batches, store.alone) == ([], 1)


def test_a_store_without_finish_many_is_refused_saying_so(store_url: str) -> None:
    store = open_store(store_url)
    try:
        with pytest.raises(TypeError, match=r"lacks the Store method\(s\) finish_many; implement"):
            Engine(WithoutFinishMany(store))  # type: ignore[arg-type]
    finally:
        store.close()


def test_a_finish_lost_in_a_batch_is_tried_again(store_url: str) -> None:
    store = CountingStore(open_store(store_url))
    chosen = {f"lost-{i}" for i in range(0, 30, 3)}
    store.fail_once = set(chosen)
    # The runs whose finish was lost wait a poll interval, then replay and finish.
    assert run_many(store, 30, "lost", poll_interval=0.2) == [2 * i for i in range(30)]
    # Every chosen run that went through a batch had its finish lost once. (A run
    # may end alone, the first one above all, and finish without a batch.)
    assert not store.fail_once & store.batched, (store.fail_once, store.batched)
    assert len(chosen - store.fail_once) >= 5, store.fail_once
