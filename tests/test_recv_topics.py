"""`yield Recv(("a", "b"))`: the oldest message of any of several topics, once, saying
which — on the engine over every store (woken by a message on any of them, replayed
alike, timed out, inside Race and All), and in the testing kit on virtual time."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    All,
    Engine,
    Race,
    Received,
    Recv,
    Sleep,
    Status,
    Step,
    testing,
    workflow,
)
from replaykit.testing import Message

# -- the command ---------------------------------------------------------------------


def test_a_recv_of_several_topics_is_named_by_them_in_order() -> None:
    both = Recv(("approve", "reject"))
    assert both.topics == ("approve", "reject")
    assert both.name == "(approve,reject)"
    assert Recv(["approve", "reject"], timeout=5).topics == ("approve", "reject")
    assert Recv(("reject", "approve")).name != both.name
    assert Recv(("a",)).name == "(a)" != Recv("a").name  # a one-topic tuple still says which
    assert Recv("a").topics is None and Recv().name == ""
    assert both.describe() == "Recv(('approve', 'reject'))"


@pytest.mark.parametrize(
    ("topic", "error", "words"),
    [
        ((), ValueError, r"Recv\(\(\)\): no topic to receive on"),
        (("a", 3), TypeError, r"topic 1 is 3, not a str"),
        (("a", None), TypeError, r"topic 1 is None, not a str"),
        (("a", "a"), ValueError, r"topic 'a' is listed twice"),
        (frozenset({"a", "b"}), TypeError, r"a set has no fixed order"),
        (5, TypeError, r"must be a str, None \(the default topic\), or a tuple of str"),
    ],
)
def test_a_recv_refuses_topics_it_cannot_take(
    topic: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        Recv(topic)


def test_received_is_a_named_pair() -> None:
    got = Received("reject", {"why": "no stock"})
    topic, value = got
    assert (topic, value) == (got.topic, got.value) == ("reject", {"why": "no stock"})
    assert got == ("reject", {"why": "no stock"})


# -- the engine, on every store ------------------------------------------------------


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    # A long poll: what wakes a waiting run here is the message's notification.
    with Engine(store_url, poll_interval=30) as eng:
        yield eng


@workflow(name="topics.decide")
def decide(n: int) -> Generator[Any, Any, list[Any]]:
    got = []
    for _ in range(n):
        received = yield Recv(("approve", "reject"))
        got.append([received.topic, received.value])
    got.append((yield Recv(("approve", "reject"), timeout=0.2)))
    return got


def test_the_oldest_message_of_any_topic_is_taken_once_and_says_which(engine: Engine) -> None:
    handle = engine.start(decide, 3, workflow_id="decide")
    engine.send("decide", {"by": "ann"}, topic="reject")
    engine.send("decide", "elsewhere", topic="other")
    engine.send("decide", {"by": "bob"}, topic="approve")
    engine.send("decide", {"by": "cy"}, topic="reject")
    assert handle.result(timeout=20) == [
        ["reject", {"by": "ann"}],
        ["approve", {"by": "bob"}],
        ["reject", {"by": "cy"}],
        None,  # the timeout passed with nothing more on either topic
    ]
    assert engine.store.peek_message("decide", ("approve", "reject")) is None
    other = engine.store.peek_message("decide", "other")
    assert other is not None and other.payload == "elsewhere"
    records = engine.store.load_log("decide")
    assert [r.name for r in records] == ["(approve,reject)"] * 4
    assert records[0].outcome is not None
    assert records[0].outcome.data == {"topic": "reject", "value": {"by": "ann"}}


@workflow(name="topics.wait")
def waits() -> Generator[Any, Any, Any]:
    received = yield Recv(("left", "right"))
    return [received.topic, received.value]


@pytest.mark.parametrize("topic", ["left", "right"])
def test_a_message_on_any_topic_wakes_the_waiting_run(engine: Engine, topic: str) -> None:
    handle = engine.start(waits, workflow_id=f"wake-{topic}")
    wait_for(lambda: engine.wakeups.is_suspended(f"wake-{topic}"), "the run waits")
    started = time.monotonic()
    engine.send(f"wake-{topic}", "go", topic=topic)
    assert handle.result(timeout=10) == [topic, "go"]
    assert time.monotonic() - started < 5  # woken by the message, not a 30 s poll


@workflow(name="topics.replayed")
def replayed() -> Generator[Any, Any, list[Any]]:
    first = yield Recv(("a", "b"))
    yield Step("between", lambda: "ok")
    second = yield Recv(("a", "b"))
    return [list(first), list(second)]


def test_a_cold_run_replays_what_it_took(store_url: str) -> None:
    # No warm cache: each wake-up rebuilds the run by replay from its log.
    with Engine(store_url, poll_interval=30, max_cached_runs=0) as engine:
        handle = engine.start(replayed, workflow_id="cold")
        wait_for(lambda: engine.wakeups.is_suspended("cold"), "the run waits")
        engine.send("cold", 1, topic="b")
        wait_for(lambda: len(engine.store.load_log("cold")) == 3, "the second Recv waits")
        engine.send("cold", 2, topic="a")
        assert handle.result(timeout=10) == [["b", 1], ["a", 2]]
        assert engine.store.peek_message("cold", ("a", "b")) is None
        assert handle.status() is Status.SUCCESS


@workflow(name="topics.composites")
def in_composites() -> Generator[Any, Any, list[Any]]:
    raced = yield Race(Recv(("a", "b")), Sleep(30))
    timed = yield Race(Recv(("a", "b")), Sleep(0.2))
    both = yield All(Recv(("a", "b")), Recv(("c", "d")))
    return [[raced[0], list(raced[1])], list(timed), [list(r) for r in both]]


def test_in_race_and_all_each_message_is_taken_once(engine: Engine) -> None:
    engine.start(in_composites, workflow_id="comp")
    wait_for(lambda: engine.wakeups.is_suspended("comp"), "the race waits")
    engine.send("comp", "first", topic="b")
    wait_for(lambda: len(engine.store.load_log("comp")) >= 2, "the second race waits")
    wait_for(lambda: len(engine.store.load_log("comp")) >= 3, "the second race lost to its Sleep")
    engine.send("comp", "for-all-1", topic="d")
    engine.send("comp", "for-all-0", topic="a")
    engine.send("comp", "left", topic="c")
    result = engine.handle("comp").result(timeout=10)
    assert result == [
        [0, ["b", "first"]],
        [1, None],
        [["a", "for-all-0"], ["d", "for-all-1"]],
    ]
    left = engine.store.peek_message("comp", ("a", "b", "c", "d"))
    assert left is not None and (left.topic, left.payload) == ("c", "left")


# -- the testing kit, on virtual time ---------------------------------------------------


@workflow(name="topics.kit")
def approval(order: str) -> Generator[Any, Any, str]:
    decided = yield Recv(("approve", "reject"), timeout=timedelta(days=2))
    if decided is None:
        return f"{order}: no answer in two days"
    if decided.topic == "reject":
        return f"{order}: rejected by {decided.value}"
    shipped = yield Step("ship", lambda: f"parcel-{order}")
    return f"{order}: {shipped}, approved by {decided.value}"


def test_the_kit_delivers_either_topic_at_its_virtual_time() -> None:
    approved = testing.run(
        approval,
        "o-1",
        steps={"ship": "p-1"},
        messages=[Message("approve", "ann", at=timedelta(hours=5))],
    )
    assert approved.unwrap() == "o-1: p-1, approved by ann"
    assert approved.elapsed == timedelta(hours=5)
    rejected = testing.run(
        approval,
        "o-2",
        messages=[
            Message("reject", "bob", at=timedelta(hours=3)),
            Message("approve", "ann", at=timedelta(hours=4)),
        ],
    )
    assert rejected.unwrap() == "o-2: rejected by bob"
    silent = testing.run(approval, "o-3", messages=[Message("other", 1, at=60)])
    assert silent.unwrap() == "o-3: no answer in two days"
    assert silent.elapsed == timedelta(days=2)


def test_the_kit_replays_a_recv_of_several_topics_alike() -> None:
    messages = [Message("reject", "bob", at=10), Message("approve", "ann", at=10)]
    testing.check_determinism(approval, "o-4", messages=messages)
    result = testing.run(approval, "o-4", messages=messages)
    again = testing.replay(approval, result.log)
    assert again.result == result.result == "o-4: rejected by bob"
