"""`Send(..., idempotency_key=k)`: one delivery per receiving run and key, on every store."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from replaykit import Engine, Recv, Send, Step, workflow
from replaykit.errors import NonDeterminismError
from replaykit.interpreter import command_digest
from replaykit.log import Log, Value
from replaykit.testing import replay

BEFORE_KEYS = Path(__file__).parent / "data" / "send_before_keys.json"


@workflow(name="send_keys.inbox")
def inbox():
    yield Recv("stop")


@workflow(name="send_keys.collector")
def collector():
    yield Recv("go")
    got = []
    while True:
        message = yield Recv("invoice", timeout=0.5)
        if message is None:
            return got
        got.append(message)


@workflow(name="send_keys.bills")
def bills(target: str, key: str | None, tag: str):
    return (yield Send(target, {"from": tag}, topic="invoice", idempotency_key=key))


@workflow(name="send_keys.twice")
def bills_twice(target: str, key: str):
    first = yield Send(target, "first", topic="invoice", idempotency_key=key)
    second = yield Send(target, "second", topic="invoice", idempotency_key=key)
    return [first, second]


@workflow(name="send_keys.then_waits")
def bills_then_waits(target: str, key: str):
    sent = yield Send(target, "late", topic="invoice", idempotency_key=key)
    yield Recv("stop")
    return sent


def label(n: int) -> str:
    return f"order-{n}"


# The code that recorded tests/data/send_before_keys.json, before Send had keys.
@workflow(name="send_keys.before")
def sends_before_keys(n: int):
    what = yield Step("label", label, n)
    first = yield Send("send-keys-inbox", {"order": what}, topic="orders")
    second = yield Send("send-keys-inbox", what)
    return [what, first, second]


def _collected(engine: Engine, target: str) -> Any:
    engine.send(target, None, "go")
    return engine.handle(target).result(timeout=30)


def test_two_runs_with_one_key_deliver_once(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-target")
    first = engine.run(bills, "inv-target", "invoice-7", "a", workflow_id="inv-a", timeout=30)
    second = engine.run(bills, "inv-target", "invoice-7", "b", workflow_id="inv-b", timeout=30)
    assert (first, second) == (True, False)
    assert _collected(engine, "inv-target") == [{"from": "a"}]
    # What each Send answered is its recorded outcome.
    assert engine.steps("inv-a")[0].outcome == Value(True)
    assert engine.steps("inv-b")[0].outcome == Value(False)


def test_one_run_two_positions_one_key(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-target-2")
    assert engine.run(bills_twice, "inv-target-2", "k", workflow_id="inv-2", timeout=30) == [
        True,
        False,
    ]
    assert _collected(engine, "inv-target-2") == ["first"]


def test_keys_are_per_receiving_run(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-x")
    engine.start(collector, workflow_id="inv-y")
    assert engine.run(bills, "inv-x", "same", "a", workflow_id="inv-to-x", timeout=30) is True
    assert engine.run(bills, "inv-y", "same", "a", workflow_id="inv-to-y", timeout=30) is True
    assert _collected(engine, "inv-x") == [{"from": "a"}]
    assert _collected(engine, "inv-y") == [{"from": "a"}]


def test_the_key_is_shared_with_engine_send(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-mixed")
    assert engine.send("inv-mixed", {"from": "webhook"}, "invoice", idempotency_key="evt-1")
    assert engine.run(bills, "inv-mixed", "evt-1", "run", workflow_id="inv-late", timeout=30) is (
        False
    )
    assert not engine.send("inv-mixed", {"from": "again"}, "invoice", idempotency_key="evt-1")
    assert _collected(engine, "inv-mixed") == [{"from": "webhook"}]


def test_without_a_key_each_position_delivers_and_answers_none(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-plain")
    assert engine.run(bills, "inv-plain", None, "a", workflow_id="inv-p1", timeout=30) is None
    assert engine.run(bills, "inv-plain", None, "b", workflow_id="inv-p2", timeout=30) is None
    assert _collected(engine, "inv-plain") == [{"from": "a"}, {"from": "b"}]


def test_a_duplicate_replays_as_recorded(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-replay")
    engine.run(bills_twice, "inv-replay", "k", workflow_id="inv-r", timeout=30)
    log = engine.export_log("inv-r")
    # The replay runs nothing and asks no store: both answers come from the log.
    assert replay(bills_twice, log).result == [True, False]


def test_a_recovered_run_replays_its_answer(store_url: str) -> None:
    """A new engine replays the log: the duplicate stays False, nothing is sent again."""
    if store_url.startswith("memory"):
        pytest.skip("a memory store does not outlive its engine")
    with Engine(store_url, poll_interval=0.1) as first:
        first.start(collector, workflow_id="inv-rec-target")
        first.run(bills, "inv-rec-target", "once", "a", workflow_id="inv-rec-a", timeout=30)
        first.start(bills_then_waits, "inv-rec-target", "once", workflow_id="inv-rec-b")
        deadline = time.monotonic() + 10
        while len(first.steps("inv-rec-b")) < 1:
            assert time.monotonic() < deadline, "the Send was never recorded"
            time.sleep(0.02)
    with Engine(store_url, poll_interval=0.1) as second:
        second.send("inv-rec-b", None, "stop")
        assert second.handle("inv-rec-b").result(timeout=30) is False
        assert _collected(second, "inv-rec-target") == [{"from": "a"}]


def test_a_log_recorded_before_keys_still_replays_strictly() -> None:
    recorded = json.loads(BEFORE_KEYS.read_text())
    result = replay(sends_before_keys, BEFORE_KEYS, strict=True)
    assert result.result == ["order-7", None, None]
    # The digests strict mode compares are the ones the old code wrote.
    digests = [r["digest"] for r in recorded["records"][1:]]
    assert digests == [
        command_digest(Send("send-keys-inbox", {"order": "order-7"}, topic="orders")),
        command_digest(Send("send-keys-inbox", "order-7")),
    ]


def test_the_key_is_part_of_the_digest() -> None:
    plain = command_digest(Send("t", 1))
    assert command_digest(Send("t", 1, idempotency_key="a")) != plain
    assert command_digest(Send("t", 1, idempotency_key="a")) != command_digest(
        Send("t", 1, idempotency_key="b")
    )


def test_a_changed_key_is_caught_on_strict_replay(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-strict")
    engine.run(bills, "inv-strict", "k1", "a", workflow_id="inv-s", timeout=30)
    log = json.loads(engine.export_log("inv-s").to_json())
    log["args"]["args"][1] = "k2"
    with pytest.raises(NonDeterminismError, match="position 0"):
        replay(bills, Log.from_json(json.dumps(log)), strict=True, check_result=False)


@pytest.mark.parametrize("key", ["", 7, b"k"])
def test_a_key_that_is_not_a_non_empty_str_is_refused(key: Any) -> None:
    with pytest.raises(TypeError, match="idempotency_key"):
        Send("t", 1, idempotency_key=key)


def test_a_key_too_long_for_the_store_is_the_sends_failure(engine: Engine) -> None:
    engine.start(inbox, workflow_id="inv-long-target")
    handle = engine.start(bills, "inv-long-target", "k" * 2000, "a", workflow_id="inv-long")
    with pytest.raises(ValueError, match=r"'inv-long'.*position 0.*idempotency_key"):
        handle.result(timeout=30)


def test_concurrent_senders_of_one_key_deliver_once(engine: Engine) -> None:
    engine.start(collector, workflow_id="inv-race")
    handles = [
        engine.start(bills, "inv-race", "race-key", str(i), workflow_id=f"inv-race-{i}")
        for i in range(8)
    ]
    answers = [h.result(timeout=30) for h in handles]
    assert sorted(answers) == [False] * 7 + [True]
    winner = answers.index(True)
    assert _collected(engine, "inv-race") == [{"from": str(winner)}]
