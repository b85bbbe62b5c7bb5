"""What a batch commit or a batch of finishes does when part of it goes wrong.

Found by a review of the batch paths: a finish whose answer was lost kept its run's
queue slot for good; one run's payload the codec refused failed every run finished
beside it; and a batch commit that fell back to the one-write path on the scheduler's
own thread, while a new run arrived, delivered a write twice.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Generator, Sequence
from typing import Any

import pytest

from conftest import wait_for
from replaykit import Engine, Queue, Step, workflow
from replaykit.errors import StoreUnavailable
from replaykit.stores import open_store
from replaykit.stores.base import FinishWrite, RecordWrite, Store

# -- a finish_many answer lost after its commit ------------------------------------------


class LosesFinishAnswers:
    """Commits the finishes of the "slot-" runs, then answers StoreUnavailable for each
    of them, once."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.lost: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        answers = list(self.inner.finish_many(finishes))
        for index, finish in enumerate(finishes):
            if finish.workflow_id.startswith("slot-") and finish.workflow_id not in self.lost:
                self.lost.append(finish.workflow_id)
                answers[index] = StoreUnavailable("test: the answer was lost")
        return answers


meeting = threading.Barrier(2)


def meet(i: int) -> int:
    # Both runs finish together, so their finishes share a batch.
    with contextlib.suppress(threading.BrokenBarrierError):
        meeting.wait(5)
    return i


@workflow
def met(i: int) -> Generator[Any, Any, int]:
    value = yield Step("meet", meet, i)
    return int(value)


def plain(i: int) -> int:
    return i


@workflow
def one_step(i: int) -> Generator[Any, Any, int]:
    value = yield Step("plain", plain, i)
    return int(value)


SLOTS = Queue("fallback-slots", worker_concurrency=2)


def test_a_lost_finish_answer_releases_its_queue_slot(store_url: str) -> None:
    meeting.reset()
    store = LosesFinishAnswers(open_store(store_url))
    with Engine(store, queues=[SLOTS.name], poll_interval=0.1) as engine:  # type: ignore[arg-type]
        first = [engine.enqueue(SLOTS, met, i, workflow_id=f"slot-{i}") for i in range(2)]
        assert [h.result(timeout=20) for h in first] == [0, 1]
        # A run that ended alone finished on its own path; those that ended side by
        # side went through finish_many, whose answers were lost.
        assert store.lost, "no finish went through finish_many"
        wait_for(lambda: not engine.claims._held.get(SLOTS.name), "the slots back", timeout=10)
        # What this engine holds of the queue (its slots): nothing, both runs ended.
        assert not engine.claims._held.get(SLOTS.name)
        # Both slots of the queue must be free again: each run's finish is tried again
        # alone, which finds it finished and lets the slot go.
        later = [engine.enqueue(SLOTS, one_step, i, workflow_id=f"later-{i}") for i in range(3)]
        assert [h.result(timeout=10) for h in later] == [0, 1, 2]


# -- one payload the codec refuses --------------------------------------------------------


# Built, so that no source line a traceback quotes holds it (the failure's traceback is
# itself encoded by the codec).
MARK = "".join(("ref", "used-", "by-", "the-", "codec"))


class RefusesPoison:
    name = "refuses-poison"

    def encode(self, data: bytes) -> bytes:
        if MARK.encode() in data:
            raise ValueError("test codec: this payload is refused")
        return data[::-1]

    def decode(self, data: bytes) -> bytes:
        return data[::-1]


three = threading.Barrier(3)


def meet_three(i: int) -> int:
    with contextlib.suppress(threading.BrokenBarrierError):
        three.wait(5)
    return i


@workflow
def maybe_poison(i: int) -> Generator[Any, Any, str]:
    value = yield Step("meet", meet_three, i)
    return MARK if value == 0 else f"fine-{value}"


def test_a_refused_payload_fails_only_its_own_run(store_url: str) -> None:
    three.reset()
    with Engine(store_url, codec=RefusesPoison(), poll_interval=0.2) as engine:
        handles = [engine.start(maybe_poison, i, workflow_id=f"poison-{i}") for i in range(3)]
        with pytest.raises(Exception, match="this payload is refused"):
            handles[0].result(timeout=20)
        assert [h.result(timeout=20) for h in handles[1:]] == ["fine-1", "fine-2"]


# -- a batch commit's fallback while the scheduler is handed over ---------------------------


calls: Counter[str] = Counter()


class FlakyBatch:
    """The first batch holding run A fails; A's one-record write then takes half a
    second, during which another run is started (the scheduler is handed over)."""

    def __init__(self, inner: Store, start_meanwhile: Any) -> None:
        self.inner = inner
        self.failed = False
        self.slowed = False
        self.start_meanwhile = start_meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Any]:
        if not self.failed and any(w.workflow_id == "A" for w in writes):
            self.failed = True
            raise StoreUnavailable("test: the batch was lost")
        return self.inner.record_many(writes)

    def record(self, workflow_id: str, record: Any, **kwargs: Any) -> Any:
        if workflow_id == "A" and not self.slowed:
            self.slowed = True
            threading.Thread(target=self.start_meanwhile).start()
            time.sleep(0.5)
        return self.inner.record(workflow_id, record, **kwargs)


def counted(name: str, seconds: float) -> str:
    calls[name] += 1
    time.sleep(seconds)
    return name


@workflow
def three_steps(n: int) -> Generator[Any, Any, str]:
    yield Step("s1", counted, "A.s1", 0.6)
    yield Step("s2", counted, "A.s2", 0.0)
    yield Step("s3", counted, "A.s3", 0.0)
    return "A done"


@workflow
def quick(n: int) -> Generator[Any, Any, int]:
    yield Step("q", counted, f"q{n}", 0.3 if n == 1 else 0.0)
    return n


def test_a_batch_fallback_during_a_hand_over_writes_once() -> None:
    calls.clear()
    engine_box: list[Engine] = []
    store = FlakyBatch(
        open_store("memory://"),
        lambda: engine_box[0].start(quick, 7, workflow_id="C"),
    )
    with Engine(store, poll_interval=0.2) as engine:  # type: ignore[arg-type]
        engine_box.append(engine)
        b = engine.start(quick, 1, workflow_id="B")
        time.sleep(0.05)
        a = engine.start(three_steps, 0, workflow_id="A")
        assert a.result(timeout=20) == "A done"
        assert b.result(timeout=20) == 1
        assert engine.handle("C").result(timeout=20) == 7
        wait_for(lambda: not engine.scheduler.busy, "every activation to end", timeout=5)
        # Every activation ended once: a write delivered twice ended one twice (-1).
        assert engine.scheduler.busy == 0
        log = [(r.position, r.name) for r in store.inner.load_log("A")]
    assert log == [(0, "s1"), (1, "s2"), (2, "s3")]
    assert calls == {"A.s1": 1, "A.s2": 1, "A.s3": 1, "q1": 1, "q7": 1}
