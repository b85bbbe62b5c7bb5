"""Queues in one process, on every store: order, dedup, limits, delay, leases."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import replaykit
from conftest import wait_for
from replaykit import Client, Engine, Queue, QueueItem, Sleep, Start, Status, Step, Wait, workflow
from replaykit.errors import DuplicateDedupId, WorkflowIdConflict
from replaykit.stores.base import ClaimLimits

ORDER: list[str] = []
RUNNING = 0
PEAK = 0
LOCK = threading.Lock()


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    global RUNNING, PEAK
    ORDER.clear()
    RUNNING = PEAK = 0
    yield


def note(label: str) -> str:
    with LOCK:
        ORDER.append(label)
    return label


def busy(label: str, seconds: float) -> str:
    global RUNNING, PEAK
    with LOCK:
        RUNNING += 1
        PEAK = max(PEAK, RUNNING)
    time.sleep(seconds)
    with LOCK:
        RUNNING -= 1
        ORDER.append(label)
    return label


@workflow(name="queue-note")
def note_wf(label: str) -> Generator[Any, Any, str]:
    return (yield Step("note", note, label))


@workflow(name="queue-busy")
def busy_wf(label: str, seconds: float) -> Generator[Any, Any, str]:
    return (yield Step("busy", busy, label, seconds))


def wait_all(engine: Engine, ids: list[str], timeout: float = 30) -> list[Any]:
    return [engine.handle(i).result(timeout=timeout) for i in ids]


def test_enqueued_runs_wait_until_an_engine_listens(shared: Any) -> None:
    Queue("q-wait")
    with Engine(shared, queues=[], poll_interval=0.1) as producer:
        handle = producer.enqueue("q-wait", note_wf, "x", workflow_id="w1")
        time.sleep(0.3)
        assert handle.status() is Status.ENQUEUED
        assert producer.list_workflows(status=Status.ENQUEUED)[0].queue == "q-wait"
    with Engine(shared, queues=["q-wait"], poll_interval=0.1, recover=False) as worker:
        assert worker.handle("w1").result(timeout=20) == "x"


def test_lower_priority_numbers_run_first(shared: Any) -> None:
    Queue("q-prio", worker_concurrency=1)
    with Engine(shared, queues=[], poll_interval=0.1) as producer:
        ids = []
        for label, priority in (("low", 9), ("high", 0), ("mid", 5), ("high-2", 0)):
            ids.append(producer.enqueue("q-prio", note_wf, label, priority=priority).workflow_id)
    with Engine(shared, queues=["q-prio"], poll_interval=0.1) as worker:
        wait_all(worker, ids)
    assert ORDER == ["high", "high-2", "mid", "low"]


def test_dedup_id_refused_while_live_or_returns_existing(shared: Any) -> None:
    Queue("q-dedup")
    with Engine(shared, queues=[], poll_interval=0.1) as eng:
        first = eng.enqueue("q-dedup", note_wf, "a", dedup_id="user-7")
        with pytest.raises(DuplicateDedupId, match="user-7") as info:
            eng.enqueue("q-dedup", note_wf, "b", dedup_id="user-7")
        assert info.value.existing_id == first.workflow_id
        again = eng.enqueue("q-dedup", note_wf, "c", dedup_id="user-7", if_exists="return")
        assert again.workflow_id == first.workflow_id
        # Another queue, or no dedup id, is not affected.
        Queue("q-dedup-other")
        eng.enqueue("q-dedup-other", note_wf, "d", dedup_id="user-7")
    # Once the run finished, the id is free again.
    with Engine(shared, queues=["q-dedup"], poll_interval=0.1) as worker:
        assert worker.handle(first.workflow_id).result(timeout=20) == "a"
        worker.enqueue("q-dedup", note_wf, "e", dedup_id="user-7")


def test_worker_concurrency_caps_one_engine(store_url: str) -> None:
    Queue("q-worker", worker_concurrency=2)
    with Engine(store_url, queues=["q-worker"], poll_interval=0.05) as eng:
        ids = [eng.enqueue("q-worker", busy_wf, str(i), 0.1).workflow_id for i in range(8)]
        wait_all(eng, ids)
    assert PEAK <= 2 and len(ORDER) == 8


def test_global_concurrency_caps_all_engines(shared: Any) -> None:
    Queue("q-global", concurrency=3)
    engines = [
        Engine(shared, queues=["q-global"], executor_id=f"e{i}", poll_interval=0.05)
        for i in range(3)
    ]
    try:
        ids = [engines[0].enqueue("q-global", busy_wf, str(i), 0.1).workflow_id for i in range(12)]
        wait_all(engines[0], ids)
    finally:
        for eng in engines:
            eng.close()
    assert PEAK <= 3 and len(ORDER) == 12


def test_rate_limit_caps_starts_per_period(store_url: str) -> None:
    Queue("q-rate", rate_limit=(3, timedelta(seconds=1)))
    with Engine(store_url, queues=["q-rate"], poll_interval=0.05) as eng:
        ids = [eng.enqueue("q-rate", note_wf, str(i)).workflow_id for i in range(6)]
        time.sleep(0.5)
        started = [r for r in eng.list_workflows() if r.started_at is not None]
        assert len(started) == 3
        wait_all(eng, ids)
        starts = sorted(r.started_at for r in eng.list_workflows() if r.started_at is not None)
        assert (starts[3] - starts[0]).total_seconds() >= 0.9


def test_delay_holds_a_run_back(store_url: str) -> None:
    Queue("q-delay")
    with Engine(store_url, queues=["q-delay"], poll_interval=0.05) as eng:
        handle = eng.enqueue("q-delay", note_wf, "later", delay=0.5)
        time.sleep(0.2)
        assert handle.status() is Status.ENQUEUED
        assert handle.result(timeout=20) == "later"


@workflow(name="queue-parent")
def parent_wf() -> Generator[Any, Any, Any]:
    child = yield Start(note_wf, "child", queue="q-children")
    return (yield Wait(child))


def test_start_with_a_queue_enqueues_the_child(store_url: str) -> None:
    Queue("q-children")
    with Engine(store_url, queues=["q-children"], poll_interval=0.05) as eng:
        assert eng.run(parent_wf, workflow_id="qp", timeout=20) == "child"
        (child,) = eng.list_workflows(parent_id="qp")
        assert child.queue == "q-children" and child.status is Status.SUCCESS


@workflow(name="queue-sleeper")
def sleeper_wf() -> Generator[Any, Any, str]:
    yield Sleep(3600)
    return "never"


def test_dead_engines_runs_are_taken_over_and_fenced(shared: Any) -> None:
    dead = Engine(shared, executor_id="dead", poll_interval=0.05, lease_seconds=0.3)
    dead.start(sleeper_wf, workflow_id="orphan")
    time.sleep(0.2)
    # Like a crash: it stops heartbeating and releases nothing.
    dead.close(wait=False)
    time.sleep(0.5)
    with Engine(shared, executor_id="alive", poll_interval=0.05, lease_seconds=0.3) as alive:
        wait_for(
            lambda: alive.store.get_workflow("orphan").executor_id == "alive",  # type: ignore[union-attr]
            "the orphan to be taken over",
            timeout=10,
        )
        # The old owner can no longer record into it.
        record = replaykit.Record(1, "step", "late", replaykit.log.Value(1))
        with pytest.raises(replaykit.errors.RecordConflict, match="owned by executor 'alive'"):
            alive.store.record("orphan", record, executor_id="dead")


def test_claim_limits_are_enforced_by_the_store(store_url: str) -> None:
    Queue("q-store")
    with Engine(store_url, queues=[], poll_interval=0.1) as eng:
        for i in range(5):
            eng.enqueue("q-store", note_wf, str(i))
        now = datetime.now(UTC)
        first = eng.store.claim(
            "q-store",
            executor_id="x",
            app_version=eng.app_version,
            limits=ClaimLimits(10, concurrency=2),
            now=now,
        )
        assert len(first) == 2 and all(r.status is Status.PENDING for r in first)
        assert (
            eng.store.claim(
                "q-store",
                executor_id="y",
                app_version=eng.app_version,
                limits=ClaimLimits(10, concurrency=2),
                now=now,
            )
            == []
        )
        other_version = eng.store.claim(
            "q-store", executor_id="y", app_version="other", limits=ClaimLimits(10), now=now
        )
        assert other_version == []
        rest = eng.store.claim(
            "q-store",
            executor_id="y",
            app_version=eng.app_version,
            limits=ClaimLimits(10),
            now=now,
        )
        assert len(rest) == 3


def test_a_worker_says_when_a_queue_holds_runs_of_a_version_it_never_claims(
    shared: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The usual cause: a producer and a worker importing different workflows
    # compute different default versions. The worker cannot take those runs,
    # but it can say why the queue does not drain.
    Queue("q-strand")
    long_ago = replaykit.VirtualClock(datetime.now(UTC) - timedelta(minutes=2))
    with Engine(shared, queues=[], app_version="web-1", clock=long_ago) as producer:
        stranded = producer.enqueue("q-strand", note_wf, "old", workflow_id="stranded")
    with Engine(shared, queues=[], app_version="worker-1") as producer:
        producer.enqueue("q-strand", note_wf, "new", workflow_id="fresh")
    worker = Engine(shared, queues=["q-strand"], app_version="worker-1", poll_interval=0.05)
    with caplog.at_level("WARNING", logger="replaykit.engine"), worker:
        assert worker.handle("fresh").result(timeout=20) == "new"
        deadline = time.monotonic() + 10
        while "never claims" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # more claim rounds: the warning is not repeated
        assert worker.handle(stranded.workflow_id).status() is Status.ENQUEUED
    warnings = [r.getMessage() for r in caplog.records if "never claims" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "'q-strand'" in warnings[0] and "'web-1'" in warnings[0]
    assert "'worker-1'" in warnings[0] and "app_version" in warnings[0]


def test_enqueue_many_enqueues_in_one_commit_and_claims_in_order(shared: Any) -> None:
    Queue("q-many", worker_concurrency=1)
    with Engine(shared, queues=[], poll_interval=0.1) as producer:
        handles = producer.enqueue_many(
            "q-many",
            note_wf,
            [("a",), ("b",), replaykit.QueueItem("first", priority=-1, workflow_id="many-1")],
        )
        assert [h.workflow_id for h in handles][2] == "many-1"
        assert all(h.status() is Status.ENQUEUED for h in handles)
        # An id that exists already answers with its run for the same arguments, as
        # enqueue does; other arguments under it are a conflict.
        again = producer.enqueue_many(
            "q-many", note_wf, [replaykit.QueueItem("first", workflow_id="many-1")]
        )
        assert [h.workflow_id for h in again] == ["many-1"]
        with pytest.raises(WorkflowIdConflict, match=r"item 0: .*'many-1'.*other arguments"):
            producer.enqueue_many(
                "q-many", note_wf, [replaykit.QueueItem("x", workflow_id="many-1")]
            )
        assert producer.enqueue_many("q-many", note_wf, []) == []
    with Engine(shared, queues=["q-many"], poll_interval=0.1) as worker:
        assert wait_all(worker, [h.workflow_id for h in handles]) == ["a", "b", "first"]
    assert ORDER == ["first", "a", "b"]


def test_enqueue_many_is_all_or_nothing_on_dedup_ids(shared: Any) -> None:
    Queue("q-many-dedup")
    with Engine(shared, queues=[], poll_interval=0.1) as eng:
        held = eng.enqueue("q-many-dedup", note_wf, "held", dedup_id="d-1")
        with pytest.raises(DuplicateDedupId, match="d-1") as info:
            eng.enqueue_many(
                "q-many-dedup",
                note_wf,
                [
                    replaykit.QueueItem("fresh", workflow_id="dd-fresh"),
                    replaykit.QueueItem("dup", dedup_id="d-1"),
                ],
            )
        assert info.value.existing_id == held.workflow_id
        assert [r.workflow_id for r in eng.list_workflows(status=Status.ENQUEUED)] == [
            held.workflow_id
        ]


def test_enqueue_many_can_return_the_runs_that_hold_dedup_ids(shared: Any) -> None:
    Queue("q-many-return")
    with Engine(shared, queues=[], poll_interval=0.1) as eng:
        held = eng.enqueue("q-many-return", note_wf, "held", dedup_id="d-held")
        handles = eng.enqueue_many(
            "q-many-return",
            note_wf,
            [
                replaykit.QueueItem("fresh", workflow_id="dr-fresh"),
                replaykit.QueueItem("dup of a stored run", dedup_id="d-held"),
                replaykit.QueueItem("first", workflow_id="dr-first", dedup_id="d-new"),
                replaykit.QueueItem("dup of an item", dedup_id="d-new"),
                ("plain",),
            ],
            if_exists="return",
        )
        ids = [h.workflow_id for h in handles]
        assert ids[:4] == ["dr-fresh", held.workflow_id, "dr-first", "dr-first"]
        enqueued = {r.workflow_id for r in eng.list_workflows(status=Status.ENQUEUED)}
        # The three items not turned away are enqueued, beside the run that was there.
        assert enqueued == {held.workflow_id, "dr-fresh", "dr-first", ids[4]}
        with pytest.raises(ValueError, match="if_exists must be 'raise' or 'return'"):
            eng.enqueue_many("q-many-return", note_wf, [("x",)], if_exists="ignore")


def test_enqueue_many_refuses_items_that_are_not_argument_tuples(store_url: str) -> None:
    Queue("q-many-bad")
    with Engine(store_url, queues=[], poll_interval=0.1) as eng:
        with pytest.raises(TypeError, match="item 1 is 'b'"):
            eng.enqueue_many("q-many-bad", note_wf, [("a",), "b"])  # type: ignore[list-item]
        assert eng.list_workflows() == []


def _slow_stamp(seconds: float) -> float:
    time.sleep(seconds)
    return time.monotonic()


@workflow(name="queues.slow-stamp")
def slow_stamp(seconds: float) -> Generator[Any, Any, float]:
    stamped = yield Step("slow", _slow_stamp, seconds)
    return float(stamped)


def test_a_delayed_run_in_a_busy_drained_queue_starts_soon_after_it_is_due() -> None:
    """A queue its last claim found drained calls no round per finished run, but one
    every `DRAINED_RECHECK` at most: a run that comes due meanwhile is not left for
    the poll interval."""
    Queue("q-drained-delay")
    with Engine("memory://", queues=["q-drained-delay"], poll_interval=30) as engine:
        began = time.monotonic()
        busy = [engine.enqueue("q-drained-delay", slow_stamp, 0.3 * i) for i in range(1, 11)]
        delayed = engine.enqueue("q-drained-delay", slow_stamp, 0.0, delay=0.5)
        ran_at = delayed.result(timeout=20) - began
        for handle in busy:
            handle.result(timeout=20)
    assert 0.5 <= ran_at < 2.0, f"the delayed run started {ran_at:.2f}s in"


# -- partition keys ----------------------------------------------------------------------

BY_KEY: dict[str, int] = {}
KEY_PEAK: dict[str, int] = {}


def busy_key(key: str, seconds: float) -> str:
    with LOCK:
        BY_KEY[key] = BY_KEY.get(key, 0) + 1
        KEY_PEAK[key] = max(KEY_PEAK.get(key, 0), BY_KEY[key])
    time.sleep(seconds)
    with LOCK:
        BY_KEY[key] -= 1
    return key


@workflow(name="queue-busy-key")
def busy_key_wf(key: str, seconds: float) -> Generator[Any, Any, str]:
    return (yield Step("busy", busy_key, key, seconds))


def test_partition_keys_are_stored_listed_and_filtered(shared: Any) -> None:
    Queue("q-keys")
    with Engine(shared, queues=[], poll_interval=0.1) as producer:
        producer.enqueue("q-keys", note_wf, "a", workflow_id="k-1", partition_key="tenant-7")
        producer.enqueue("q-keys", note_wf, "b", workflow_id="k-2")
        producer.enqueue_many(
            "q-keys",
            note_wf,
            [("c",), QueueItem("d", workflow_id="k-4", partition_key="tenant-8")],
            partition_key="tenant-7",
        )
        with Client(shared, app_version=producer.app_version) as client:
            client.enqueue("q-keys", "queue-note", "e", workflow_id="k-5", partition_key="tenant-7")
            listed = client.list_workflows(partition_key="tenant-7")
        assert [r.workflow_id for r in listed if not r.workflow_id.startswith("k-")] != []
        ids = {r.workflow_id for r in producer.list_workflows(partition_key="tenant-7")}
        assert {"k-1", "k-5"} < ids and len(ids) == 3  # and the enqueue_many tuple
        assert producer.store.get_workflow("k-2").partition_key is None  # type: ignore[union-attr]
        assert producer.store.get_workflow("k-4").partition_key == "tenant-8"  # type: ignore[union-attr]
        assert {r.workflow_id for r in listed} == ids


def test_a_partition_key_is_a_non_empty_string(store_url: str) -> None:
    Queue("q-bad-key")
    with Engine(store_url, queues=[], poll_interval=0.1) as eng:
        for bad in ("", 7):
            with pytest.raises(TypeError, match=r"enqueue\('q-bad-key', .*partition_key="):
                eng.enqueue("q-bad-key", note_wf, "x", partition_key=bad)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="partition_key="):
                eng.enqueue_many("q-bad-key", note_wf, [("x",)], partition_key=bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="QueueItem: partition_key=''"):
            QueueItem("x", partition_key="")
        assert eng.list_workflows() == []


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"partition_concurrency": 0}, "partition_concurrency=0: must be a positive integer"),
        ({"partition_concurrency": True}, "partition_concurrency=True"),
        ({"partition_rate_limit": (0, 1)}, "partition_rate_limit .*at least 1 start"),
        ({"partition_rate_limit": (5, 0)}, "partition_rate_limit .*positive period"),
        ({"partition_rate_limit": 5}, "partition_rate_limit must be \\(starts, period\\)"),
        ({"partitioned": "yes"}, "partitioned='yes': must be True or False"),
        ({"partition_weights": {"gold": 0}}, "partition_weights\\['gold'\\]=0: .*1 or more"),
        ({"partition_weights": {"gold": 1.5}}, "partition_weights\\['gold'\\]=1.5"),
        ({"partition_weights": {7: 2}}, "key 7 is not a string"),
        ({"partition_weights": [("gold", 2)]}, "must map partition keys to weights"),
    ],
)
def test_bad_partition_limits_are_refused_when_the_queue_is_declared(
    options: dict[str, Any], error: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=error):
        Queue("q-bad-limits", **options)
    declared = Queue("q-good-limits", partition_rate_limit=(3, timedelta(seconds=2)))
    assert declared.partitioned and declared.partition_rate_limit == (3, 2.0)
    weighed = Queue("q-good-weights", partition_weights={"gold": 3, "bronze": 1})
    assert weighed.partitioned and weighed.partition_weights == (("bronze", 1), ("gold", 3))


def test_partition_concurrency_holds_across_engines(shared: Any) -> None:
    BY_KEY.clear()
    KEY_PEAK.clear()
    Queue("q-per-key", partition_concurrency=1, concurrency=3)
    engines = [
        Engine(shared, queues=["q-per-key"], executor_id=f"pk{i}", poll_interval=0.05)
        for i in range(2)
    ]
    try:
        ids = [
            engines[0].enqueue("q-per-key", busy_key_wf, key, 0.05, partition_key=key).workflow_id
            for key in ("a", "b", "c", "d")
            for _ in range(4)
        ]
        wait_all(engines[0], ids)
    finally:
        for eng in engines:
            eng.close()
    assert KEY_PEAK == {"a": 1, "b": 1, "c": 1, "d": 1}


def test_a_lone_key_waits_one_claim_behind_a_backlog(shared: Any) -> None:
    Queue("q-fair", partitioned=True, worker_concurrency=1)
    with Engine(shared, queues=[], poll_interval=0.1) as producer:
        producer.enqueue_many(
            "q-fair", note_wf, [(f"big-{i}",) for i in range(30)], partition_key="big"
        )
        lone = producer.enqueue("q-fair", note_wf, "lone", partition_key="lone")
    with Engine(shared, queues=["q-fair"], poll_interval=0.05, recover=False) as worker:
        assert worker.handle(lone.workflow_id).result(timeout=30) == "lone"
    # One claim a run (worker_concurrency=1): the backlog's oldest, then the lone key.
    assert ORDER[:2] == ["big-0", "lone"]


def test_partition_rate_limit_caps_each_keys_starts(store_url: str) -> None:
    Queue("q-key-rate", partition_rate_limit=(2, timedelta(seconds=1)))
    with Engine(store_url, queues=["q-key-rate"], poll_interval=0.05) as eng:
        ids = [
            eng.enqueue("q-key-rate", note_wf, f"{key}{i}", partition_key=key).workflow_id
            for key in ("a", "b")
            for i in range(3)
        ]
        time.sleep(0.5)
        started = [r for r in eng.list_workflows() if r.started_at is not None]
        assert sorted(r.partition_key or "" for r in started) == ["a", "a", "b", "b"]
        wait_all(eng, ids)


def test_a_dead_engines_runs_still_count_against_their_key(shared: Any) -> None:
    # The running count per key is read from the runs' rows: a crashed engine's runs
    # stay PENDING, counted, before and after a live engine takes them over.
    Queue("q-key-crash", partition_concurrency=1)
    dead = Engine(
        shared, queues=["q-key-crash"], executor_id="dead", poll_interval=0.05, lease_seconds=0.3
    )
    dead.enqueue("q-key-crash", sleeper_wf, workflow_id="held", partition_key="a")
    wait_for(lambda: dead.handle("held").status() is Status.PENDING, "the first run claimed")
    dead.close(wait=False)  # like a crash: it stops heartbeating and releases nothing
    with Engine(
        shared, queues=["q-key-crash"], executor_id="alive", poll_interval=0.05, lease_seconds=0.3
    ) as alive:
        second = alive.enqueue("q-key-crash", note_wf, "a-2", partition_key="a")
        other = alive.enqueue("q-key-crash", note_wf, "b-1", partition_key="b")
        assert other.result(timeout=20) == "b-1"
        wait_for(
            lambda: alive.store.get_workflow("held").executor_id == "alive",  # type: ignore[union-attr]
            "the crashed engine's run to be taken over",
            timeout=10,
        )
        time.sleep(0.3)  # claim rounds pass: key "a" is still at its limit
        assert second.status() is Status.ENQUEUED
        alive.cancel("held")
        assert second.result(timeout=20) == "a-2"  # its key's slot is free again


def test_partition_counts_name_the_busiest_keys_of_each_keyed_queue() -> None:
    from replaykit.runtime.queues import KeyCount, partition_counts
    from replaykit.stores.base import WorkflowRow

    def row(queue: str | None, key: str | None, status: Status) -> WorkflowRow:
        return WorkflowRow("x", "wf", status, queue=queue, partition_key=key)

    rows = [row("q", "a", Status.ENQUEUED)] * 3 + [row("q", "a", Status.PENDING)]
    rows += [row("q", "b", Status.PENDING), row("q", None, Status.ENQUEUED)]
    rows += [row("q", "c", Status.SUCCESS), row("plain", None, Status.ENQUEUED)]
    rows += [row(None, "z", Status.PENDING)]
    counts = partition_counts(rows, top=2)
    assert set(counts) == {"q"}  # "plain" holds no keyed run
    assert counts["q"].keys_waiting == 2  # "a" and the runs with no key; "b" only runs
    assert counts["q"].busiest == (KeyCount("a", 3, 1), KeyCount(None, 1, 0))


class CountedClaims:
    """The store as an engine's claims see it, counting its claims."""

    def __init__(self, store: Any) -> None:
        self.inner = store
        self.claims = 0

    def claim(self, *args: Any, **kwargs: Any) -> Any:
        self.claims += 1
        return self.inner.claim(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_idle_engine_claims_from_an_empty_queue_only_when_told(
    shared: Any, store_url: str
) -> None:
    """Issue "beyond one server": an idle worker must not claim every poll where notes
    reach it (PostgreSQL's LISTEN, one process's memory store); SQLite, whose other
    processes send nothing, keeps polling."""
    Queue("q-idle")
    with Engine(shared, queues=["q-idle"], poll_interval=0.05, executor_id="idle") as worker:
        time.sleep(0.3)  # the first round finds the queue empty
        counted = CountedClaims(worker.claims.store)
        worker.claims.store = counted  # type: ignore[assignment]
        time.sleep(1.0)  # twenty polls
        if store_url.startswith("sqlite"):
            assert counted.claims >= 5
        else:
            assert counted.claims == 0
        with Engine(shared, queues=[], executor_id="producer") as producer:
            handle = producer.enqueue("q-idle", note_wf, "told", workflow_id="idle-1")
            assert handle.result(timeout=5) == "told"  # the note woke the claims
        assert counted.claims >= 1


def test_a_run_put_back_on_its_queue_is_announced(store_url: str) -> None:
    if store_url.startswith("sqlite"):
        pytest.skip("SQLite's engines poll their queues: nothing waits for this note")
    with Engine(store_url, queues=[], executor_id="producer") as engine:
        Queue("q-back")
        handle = engine.enqueue("q-back", note_wf, "x", workflow_id="back-1")
        assert engine.store.set_status("back-1", Status.CANCELLED)
        heard: list[tuple[str, str]] = []
        unsubscribe = engine.store.subscribe(lambda kind, key: heard.append((kind, key)))
        try:
            changed = engine.store.set_status(
                "back-1", Status.ENQUEUED, only_from=(Status.CANCELLED,)
            )
            assert changed and handle.status() is Status.ENQUEUED
            wait_for(lambda: ("enqueued", "q-back") in heard, "the queue's note")
        finally:
            unsubscribe()


_GATE = threading.Event()


def held_at_gate(label: str) -> str:
    _GATE.wait(30)
    return label


@workflow(name="queue-gated")
def gated_wf(label: str) -> Generator[Any, Any, str]:
    return (yield Step("gated", held_at_gate, label))


def test_claims_stop_at_a_bounded_number_of_runs_in_flight(store_url: str) -> None:
    """An engine claims no more than `IN_FLIGHT_ROUNDS` claim rounds of runs while they
    are under way: the rest wait in the store, not in its memory (a queue of 200,000
    sleepers put 8,700 activations in flight in one engine), and go on as room frees."""
    from replaykit.runtime.claims import IN_FLIGHT_ROUNDS

    Queue("q-in-flight")
    _GATE.clear()
    # max_workers=1: claim rounds of 2, so at most 2 * IN_FLIGHT_ROUNDS runs in flight.
    with Engine(store_url, queues=["q-in-flight"], max_workers=1, poll_interval=0.05) as eng:
        room = eng.claims.capacity * IN_FLIGHT_ROUNDS
        ids = [eng.enqueue("q-in-flight", gated_wf, str(i)).workflow_id for i in range(30)]

        def claimed() -> int:
            return sum(1 for row in eng.list_workflows() if row.status is not Status.ENQUEUED)

        wait_for(lambda: claimed() == room, "the room filled")
        time.sleep(0.3)  # thirty rechecks of the room: none claims past it
        assert claimed() == room and eng.scheduler.busy == room
        _GATE.set()
        assert wait_all(eng, ids) == [str(i) for i in range(30)]
