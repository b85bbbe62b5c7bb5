"""Keyed starts (runtime/overlaps.py): `start(..., concurrency_key=..., concurrency_limit=...)`
and `overlap=` on starts and enqueues, on the three stores."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import Client, Engine, Queue, Status, Step, workflow
from replaykit.runtime.overlaps import (
    CONCURRENCY_QUEUE_PREFIX,
    known_concurrency_queue,
    skip_dedup_id,
)

LOCK = threading.Lock()
RUNNING: dict[str, int] = {}
PEAK: dict[str, int] = {}
ORDER: list[str] = []
GATE = threading.Event()


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    RUNNING.clear()
    PEAK.clear()
    ORDER.clear()
    GATE.clear()
    yield
    GATE.set()


def hold(key: str, label: str, seconds: float) -> str:
    with LOCK:
        RUNNING[key] = RUNNING.get(key, 0) + 1
        PEAK[key] = max(PEAK.get(key, 0), RUNNING[key])
    time.sleep(seconds)
    with LOCK:
        RUNNING[key] -= 1
        ORDER.append(label)
    return label


def gated(label: str) -> str:
    GATE.wait(30)
    with LOCK:
        ORDER.append(label)
    return label


@workflow(name="keyed-hold")
def hold_wf(key: str, label: str, seconds: float) -> Generator[Any, Any, str]:
    return (yield Step("hold", hold, key, label, seconds))


@workflow(name="keyed-hold-twice")
def hold_twice_wf(key: str, label: str, seconds: float) -> Generator[Any, Any, str]:
    yield Step("hold", hold, key, label, seconds)
    return (yield Step("again", hold, key, label, 0.0))


@workflow(name="keyed-gated")
def gated_wf(label: str) -> Generator[Any, Any, str]:
    return (yield Step("gated", gated, label))


def test_a_concurrency_key_runs_its_starts_one_at_a_time_in_order(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        handles = [
            engine.start(hold_wf, "a", f"a{i}", 0.05, concurrency_key="tenant-a") for i in range(4)
        ] + [
            engine.start(hold_wf, "b", f"b{i}", 0.05, concurrency_key="tenant-b") for i in range(2)
        ]
        assert [h.result(timeout=30) for h in handles] == ["a0", "a1", "a2", "a3", "b0", "b1"]
        rows = {row.workflow_id: row for row in engine.list_workflows()}
    assert PEAK == {"a": 1, "b": 1}
    assert [label for label in ORDER if label.startswith("a")] == ["a0", "a1", "a2", "a3"]
    assert {rows[h.workflow_id].queue for h in handles} == {f"{CONCURRENCY_QUEUE_PREFIX}1"}
    assert rows[handles[0].workflow_id].partition_key == "tenant-a"


def test_a_concurrency_limit_holds_across_engines(shared: Any) -> None:
    engines = [Engine(shared, executor_id=f"ck{i}", poll_interval=0.05) for i in range(2)]
    try:
        handles = [
            engines[i % 2].start(
                hold_wf, "k", str(i), 0.1, concurrency_key="k", concurrency_limit=2
            )
            for i in range(8)
        ]
        for handle in handles:
            handle.result(timeout=30)
    finally:
        for engine in engines:
            engine.close()
    assert PEAK == {"k": 2}


def test_a_worker_claims_keyed_starts_made_before_it_launched(shared: Any) -> None:
    """Keyed starts made by a client while no engine ran: a worker that never saw a
    keyed start finds their queue in the store at launch and runs them one at a time."""
    with Engine(shared, queues=[], executor_id="version-only", recover=False) as reader:
        version = reader.app_version
    client = Client(shared, app_version=version)
    try:
        ids = [
            client.start("keyed-hold", "w", f"w{i}", 0.02, concurrency_key="w").workflow_id
            for i in range(3)
        ]
    finally:
        client.close()
    with Engine(shared, executor_id="late-worker", poll_interval=0.05) as worker:
        assert [worker.handle(i).result(timeout=30) for i in ids] == ["w0", "w1", "w2"]
    assert PEAK == {"w": 1}


def test_overlap_skip_answers_with_the_live_run(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        first = engine.start(gated_wf, "first", concurrency_key="nightly", overlap="skip")
        second = engine.start(gated_wf, "second", concurrency_key="nightly", overlap="skip")
        assert second.workflow_id == first.workflow_id
        row = engine.store.get_workflow(first.workflow_id)
        assert row is not None and row.dedup_id == skip_dedup_id("nightly")
        GATE.set()
        assert first.result(timeout=30) == "first"
        # Once it ended, the key is free again.
        third = engine.start(gated_wf, "third", concurrency_key="nightly", overlap="skip")
        assert third.workflow_id != first.workflow_id and third.result(timeout=30) == "third"


def test_overlap_skip_racing_starts_make_one_run(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        barrier = threading.Barrier(6)
        ids: list[str] = []

        def start(i: int) -> None:
            barrier.wait()
            handle = engine.start(gated_wf, f"r{i}", concurrency_key="race", overlap="skip")
            with LOCK:
                ids.append(handle.workflow_id)

        threads = [threading.Thread(target=start, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        GATE.set()
        assert len(set(ids)) == 1
        engine.handle(ids[0]).result(timeout=30)
    assert len(ORDER) == 1


def test_overlap_queue_one_keeps_one_waiting(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        live = engine.start(gated_wf, "live", concurrency_key="q1", overlap="queue_one")
        wait_for(lambda: live.status() is Status.PENDING)
        waiting = engine.start(gated_wf, "waiting", concurrency_key="q1", overlap="queue_one")
        again = engine.start(gated_wf, "again", concurrency_key="q1", overlap="queue_one")
        assert waiting.workflow_id not in (live.workflow_id,)
        assert again.workflow_id == waiting.workflow_id
        assert waiting.status() is Status.ENQUEUED
        GATE.set()
        assert (live.result(timeout=30), waiting.result(timeout=30)) == ("live", "waiting")
    assert ORDER == ["live", "waiting"]


def test_overlap_cancel_other_cancels_the_live_run_and_waits_for_it(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        # Cancelled at its next yield: after the step under way, before the second.
        old = engine.start(
            hold_twice_wf, "c", "old", 1.0, concurrency_key="c", overlap="cancel_other"
        )
        wait_for(lambda: RUNNING.get("c") == 1)
        new = engine.start(hold_wf, "c", "new", 0.01, concurrency_key="c", overlap="cancel_other")
        assert new.result(timeout=30) == "new"
        row = engine.store.get_workflow(old.workflow_id)
        assert row is not None and row.status is Status.CANCELLED
        assert "overlap='cancel_other'" in (row.error or ""), row.error
    assert PEAK == {"c": 1}


def test_overlap_on_an_enqueue_applies_to_its_partition_key(shared: Any) -> None:
    Queue("keyed-reports", partition_concurrency=1)
    with Engine(shared, queues=[], poll_interval=0.05) as producer:
        first = producer.enqueue("keyed-reports", gated_wf, "a", partition_key="t7", overlap="skip")
        second = producer.enqueue(
            "keyed-reports", gated_wf, "b", partition_key="t7", overlap="skip"
        )
        other = producer.enqueue("keyed-reports", gated_wf, "c", partition_key="t8", overlap="skip")
        assert second.workflow_id == first.workflow_id != other.workflow_id
        Queue("keyed-wide", partition_concurrency=3)
        with pytest.raises(ValueError, match="needs the key's runs one at a time"):
            producer.enqueue("keyed-wide", gated_wf, "x", partition_key="t7", overlap="queue_one")
        with pytest.raises(ValueError, match="takes no dedup_id"):
            producer.enqueue(
                "keyed-reports", gated_wf, "y", partition_key="t7", overlap="skip", dedup_id="d"
            )


def test_a_client_starts_keyed_runs_for_any_engine(shared: Any) -> None:
    with Engine(shared, executor_id="ck-worker", poll_interval=0.05) as worker:
        client = Client(shared, app_version=worker.app_version)
        try:
            handles = [
                client.start("keyed-hold", "cl", f"c{i}", 0.02, concurrency_key="cl")
                for i in range(3)
            ]
            skipped = client.start(
                "keyed-hold", "cl", "skipped", 0.02, concurrency_key="cl", overlap="skip"
            )
            assert skipped.workflow_id in {h.workflow_id for h in handles}
            assert [worker.handle(h.workflow_id).result(timeout=30) for h in handles] == [
                "c0",
                "c1",
                "c2",
            ]
        finally:
            client.close()
    assert PEAK == {"cl": 1}


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"concurrency_key": ""}, TypeError),
        ({"concurrency_key": 7}, TypeError),
        ({"concurrency_key": "k", "concurrency_limit": 0}, ValueError),
        ({"concurrency_key": "k", "concurrency_limit": True}, ValueError),
        ({"concurrency_limit": 2}, ValueError),
        ({"overlap": "skip"}, ValueError),
        ({"concurrency_key": "k", "overlap": "buffer"}, ValueError),
    ],
)
def test_bad_keyed_starts_are_refused_before_anything_is_stored(
    options: dict[str, Any], error: type[Exception]
) -> None:
    with Engine("memory://", poll_interval=0.05) as engine:
        with pytest.raises(error, match=r"start\('keyed-gated', \.\.\.\)"):
            engine.start(gated_wf, "x", **options)
        assert engine.list_workflows() == []


def test_a_key_refuses_a_second_limit_while_it_has_live_runs() -> None:
    with Engine("memory://", queues=[], poll_interval=0.05) as engine:
        engine.start(gated_wf, "one", concurrency_key="lim", concurrency_limit=1)
        with pytest.raises(ValueError, match="must agree on its limit"):
            engine.start(gated_wf, "two", concurrency_key="lim", concurrency_limit=2)
        with pytest.raises(ValueError, match="did you mean 'queue_one'"):
            engine.start(gated_wf, "x", concurrency_key="lim", overlap="queue-one")


def test_a_keyed_start_times_out_from_the_start_waiting_included(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        first = engine.start(gated_wf, "first", concurrency_key="slow")
        late = engine.start(
            gated_wf, "late", concurrency_key="slow", timeout=timedelta(seconds=0.3)
        )
        wait_for(lambda: late.status() is Status.CANCELLED, timeout=20)
        GATE.set()
        assert first.result(timeout=30) == "first"


def test_known_concurrency_queue_reads_the_limit_from_the_name() -> None:
    queue = known_concurrency_queue(f"{CONCURRENCY_QUEUE_PREFIX}3")
    assert queue is not None and queue.partition_concurrency == 3
    for name in ("reports", f"{CONCURRENCY_QUEUE_PREFIX}0", f"{CONCURRENCY_QUEUE_PREFIX}03"):
        assert known_concurrency_queue(name) is None
