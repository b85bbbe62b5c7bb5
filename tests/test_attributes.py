"""Attributes: a run's typed, searchable key/values, given at its start (on every face)
or set by `yield SetAttributes(...)` (recorded, replayed without writing again), on
the three stores; kept in clear by a codec that encodes payloads."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from datetime import UTC, datetime
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    AsyncClient,
    AsyncEngine,
    Client,
    Engine,
    MemoryStore,
    QueueItem,
    Race,
    Recv,
    SetAttributes,
    Sleep,
    workflow,
)
from replaykit.commands import facts_of
from replaykit.runtime.handlers import handler_for
from replaykit.runtime.handlers.writing import SetAttributesHandler
from replaykit.stores.base import WorkflowFilter
from replaykit.stores.codec import CodecStore

DUE = datetime(2026, 12, 24, 9, 0, tzinfo=UTC)


@workflow(name="attr-order")
def order(n: int) -> Generator[Any, Any, int]:
    yield SetAttributes(stage="paid", amount=n)
    yield Recv("go")
    return n


@workflow(name="attr-plain")
def plain(n: int) -> Generator[Any, Any, int]:
    yield from ()
    return n


@workflow(name="attr-bad")
def bad() -> Generator[Any, Any, str]:
    try:
        yield SetAttributes(customer={"nested": 1})
    except TypeError as exc:
        return str(exc)
    return "accepted"


# -- the command ---------------------------------------------------------------------------


def test_set_attributes_is_named_by_its_names_and_alone() -> None:
    command = SetAttributes({"plan": "pro"}, customer="42", due=DUE)
    assert (command.kind, command.name) == ("set_attributes", "customer,due,plan")
    assert command.describe_args() == {
        "customer": "42",
        "due": "2026-12-24T09:00:00+00:00",
        "plan": "pro",
    }
    assert isinstance(handler_for(command), SetAttributesHandler)
    assert not facts_of(command).in_composite
    with pytest.raises(TypeError, match=r"Race\(\) cannot hold SetAttributes"):
        Race(command, Sleep(1))
    with pytest.raises(TypeError, match=r"SetAttributes\(\) sets nothing"):
        SetAttributes()
    with pytest.raises(TypeError, match="give a dict of name -> value"):
        SetAttributes(["customer"])  # type: ignore[arg-type]


# -- the engine, on every store ------------------------------------------------------------


def test_attributes_given_at_the_start_and_set_by_the_run(engine: Engine) -> None:
    handle = engine.start(
        order, 7, workflow_id="at-1", attributes={"customer": "42", "due": DUE, "tags": ["a"]}
    )
    wait_for_attribute(engine, "at-1", "stage")
    row = handle.row()
    assert row.attributes == {
        "customer": "42",
        "due": DUE,
        "tags": ["a"],
        "stage": "paid",
        "amount": 7,
    }
    engine.send("at-1", "now", topic="go")
    assert handle.result(timeout=20) == 7
    [listed] = engine.list_workflows(name="attr-order")
    assert listed.attributes["customer"] == "42"
    assert engine.steps("at-1")[0].kind == "set_attributes"


def test_a_replay_does_not_write_the_attributes_again(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05, executor_id="attr-replay") as first:
        first.start(order, 3, workflow_id="at-replay")
        wait_for_attribute(first, "at-replay", "stage")
        store = first.store
        # Changed from outside while the run waits: a replay of its SetAttributes must
        # leave the new value alone.
        assert store.set_attributes("at-replay", {"stage": "changed by an operator"})
    with Engine(shared, poll_interval=0.05, executor_id="attr-replay") as second:
        second.send("at-replay", "now", topic="go")
        assert second.handle("at-replay").result(timeout=20) == 3
        row = second.handle("at-replay").row()
        assert row.attributes["stage"] == "changed by an operator"
        assert [r.kind for r in second.steps("at-replay")].count("set_attributes") == 1


def test_a_bad_value_fails_the_yield_naming_the_run_and_the_attribute(engine: Engine) -> None:
    message = engine.run(bad, workflow_id="at-bad")
    assert "workflow 'attr-bad' (id 'at-bad') at position 0: SetAttributes" in message
    assert "attribute 'customer' is dict" in message
    assert engine.handle("at-bad").row().attributes == {}


@pytest.mark.parametrize(
    ("attributes", "error", "said"),
    [
        ({"customer": object()}, TypeError, "attribute 'customer' is object"),
        ({"due": datetime(2026, 1, 1)}, ValueError, "attribute 'due' is a naive datetime"),
        ({"status": "x"}, ValueError, "attribute name 'status' is a built-in field"),
        ({"tags": ["a", 1]}, TypeError, "attribute 'tags' is a list holding int"),
    ],
)
def test_a_start_with_a_bad_attribute_is_refused_naming_it(
    attributes: dict[str, Any], error: type[Exception], said: str
) -> None:
    with Engine("memory://") as engine:
        with pytest.raises(error, match=f"workflow 'attr-plain' \\(id 'at-x'\\): {said}"):
            engine.start(plain, 1, workflow_id="at-x", attributes=attributes)
        with pytest.raises(error, match=said):
            engine.enqueue("attr-q", plain, 1, workflow_id="at-x", attributes=attributes)
        assert engine.list_workflows() == []


def test_enqueue_and_enqueue_many_take_attributes(engine: Engine) -> None:
    engine.enqueue("attr-q", plain, 1, workflow_id="q-1", attributes={"customer": "1"})
    engine.enqueue_many(
        "attr-q",
        plain,
        [(2,), QueueItem(3, workflow_id="q-3", attributes={"customer": "3"})],
        attributes={"customer": "batch"},
    )
    by_id = {r.workflow_id: r.attributes for r in engine.list_workflows(queue="attr-q")}
    assert by_id.pop("q-1") == {"customer": "1"}
    assert by_id.pop("q-3") == {"customer": "3"}
    assert list(by_id.values()) == [{"customer": "batch"}]


def test_the_async_faces_and_the_clients_take_attributes(shared: Any) -> None:
    async def main() -> None:
        async with AsyncEngine(shared, poll_interval=0.05) as aio:
            done = await aio.start(plain, 5, workflow_id="aio-1", attributes={"n": 5})
            assert await done.result(timeout=20) == 5
            await aio.enqueue("attr-q", plain, 6, workflow_id="aio-2", attributes={"n": 6})
        async with AsyncClient(shared, app_version="v1") as client:
            await client.enqueue("attr-q", "attr-plain", 7, workflow_id="ac-1", attributes={"n": 7})

    asyncio.run(main())
    with Client(shared, app_version="v1", executor_id="nobody") as client:
        client.start("attr-plain", 8, workflow_id="c-1", attributes={"n": 8, "vip": True})
        by_id = {r.workflow_id: r.attributes for r in client.list_workflows()}
    assert by_id == {
        "aio-1": {"n": 5},
        "aio-2": {"n": 6},
        "ac-1": {"n": 7},
        "c-1": {"n": 8, "vip": True},
    }


class Reversed:
    """A codec that keeps payloads reversed at rest: enough to tell encoded from clear."""

    name = "reversed"

    def encode(self, data: bytes) -> bytes:
        return data[::-1]

    def decode(self, data: bytes) -> bytes:
        return data[::-1]


def test_a_codec_encodes_the_inputs_and_leaves_the_attributes_in_clear() -> None:
    inner = MemoryStore()
    with Engine(CodecStore(inner, Reversed()), poll_interval=0.05) as engine:
        assert engine.run(plain, 4141, workflow_id="enc-1") == 4141
        assert engine.store.set_attributes("enc-1", {"customer": "4242"})
        assert engine.handle("enc-1").row().inputs == {"args": [4141], "kwargs": {}}
    [stored] = inner.list_workflows(WorkflowFilter())
    assert "4141" not in str(stored.inputs)  # encoded at rest
    assert stored.attributes == {"customer": "4242"}  # in clear, so a filter finds it


def wait_for_attribute(engine: Engine, workflow_id: str, name: str) -> None:
    wait_for(
        lambda: name in engine.handle(workflow_id).row().attributes,
        f"{workflow_id} to have attribute {name!r}",
        timeout=20,
    )
