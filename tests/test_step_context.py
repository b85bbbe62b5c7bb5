"""replaykit.step_context() inside step bodies, and context().parent_id in workflows."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

from replaykit import (
    Call,
    Engine,
    Retry,
    Step,
    StepContext,
    VirtualClock,
    context,
    step_context,
    testing,
    workflow,
)


def where_am_i(tag: str) -> dict[str, Any]:
    ctx = step_context()
    return {
        "tag": tag,
        "workflow_id": ctx.workflow_id,
        "workflow_name": ctx.workflow_name,
        "step": ctx.step_name,
        "position": ctx.position,
        "attempt": ctx.attempt,
        "key": ctx.idempotency_key,
    }


async def where_am_i_async(tag: str) -> dict[str, Any]:
    await asyncio.sleep(0)
    # A task the body starts sees the attempt's context too.
    return await asyncio.create_task(asyncio.to_thread(lambda: where_am_i(tag)))


FAILS_FIRST: dict[str, int] = {}


def fails_twice(tag: str) -> dict[str, Any]:
    seen = where_am_i(tag)
    if seen["attempt"] < 3:
        raise ConnectionError(f"attempt {seen['attempt']} fails")
    return seen


@workflow(name="ctx.everywhere")
def everywhere() -> Generator[Any, Any, list[Any]]:
    inline = yield Step("inline", where_am_i, "inline")
    pooled = yield Step("pooled", where_am_i, "pooled", timeout=30)
    preempt = yield Step("preempt", where_am_i, "preempt", preemptible=True)
    in_task = yield Step("in-task", where_am_i_async, "async")
    timed = yield Step("timed-task", where_am_i_async, "async-timed", timeout=30)
    retried = yield Step(
        "retried", fails_twice, "retried", retry=Retry(max_attempts=3, interval=60)
    )
    return [inline, pooled, preempt, in_task, timed, retried]


def check_everywhere(results: list[dict[str, Any]], workflow_id: str) -> None:
    names = ["inline", "pooled", "preempt", "in-task", "timed-task", "retried"]
    for position, (seen, name) in enumerate(zip(results, names, strict=True)):
        assert seen["workflow_id"] == workflow_id
        assert seen["workflow_name"] == "ctx.everywhere"
        assert seen["step"] == name
        assert seen["position"] == position
        assert seen["key"] == f"{workflow_id}:{position}"
    assert [seen["attempt"] for seen in results] == [1, 1, 1, 1, 1, 3]


def test_every_kind_of_step_body_sees_its_attempt(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1, clock=VirtualClock()) as engine:
        handle = engine.start(everywhere, workflow_id="ctx-1")
        check_everywhere(handle.result(timeout=30), "ctx-1")


def test_the_testing_kit_runs_step_bodies_in_their_context() -> None:
    result = testing.run(everywhere, real_steps=True)
    check_everywhere(result.unwrap(), "ctx.everywhere:test")


def test_a_callable_fake_reads_the_context() -> None:
    seen: list[StepContext] = []

    def fake(tag: str) -> dict[str, Any]:
        seen.append(step_context())
        if len(seen) < 3:
            raise ConnectionError("flaky")
        return {"faked": tag}

    result = testing.run(everywhere, steps={"retried": fake}, real_steps=True)
    assert result.unwrap()[5] == {"faked": "retried"}
    assert [(c.step_name, c.position, c.attempt) for c in seen] == [
        ("retried", 5, 1),
        ("retried", 5, 2),
        ("retried", 5, 3),
    ]


def test_outside_a_step_body_it_says_where_it_may_be_called() -> None:
    with pytest.raises(RuntimeError, match=r"outside a step.*inside the function a Step runs"):
        step_context()


@workflow(name="ctx.in-body")
def asks_in_its_body() -> Generator[Any, Any, str]:
    try:
        step_context()
    except RuntimeError as exc:
        message = str(exc)
    yield Step("noop", where_am_i, "noop")
    return message


def test_in_a_workflow_body_it_points_to_context() -> None:
    message = testing.run(asks_in_its_body, real_steps=True).unwrap()
    assert "in a workflow body" in message
    assert "replaykit.context()" in message


@workflow(name="ctx.child")
def child() -> Generator[Any, Any, Any]:
    yield Step("noop", where_am_i, "child")
    return context().parent_id


@workflow(name="ctx.parent")
def parent() -> Generator[Any, Any, Any]:
    from_child = yield Call(child)
    return [context().parent_id, from_child]


def test_context_names_the_parent_run(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1) as engine:
        assert engine.start(parent, workflow_id="mum").result(timeout=30) == [None, "mum"]


def test_context_names_the_parent_run_in_the_kit() -> None:
    assert testing.run(parent, real_steps=True).unwrap() == [None, "ctx.parent:test"]


@workflow(name="ctx.composite-keys")
def composite_keys() -> Generator[Any, Any, list[Any]]:
    from replaykit import All, Race

    alone = yield Step("alone", where_am_i, "alone")
    both = yield All(
        Step("left", where_am_i, "left"),
        Race(Step("inner", where_am_i, "inner"), Step("other", where_am_i_async, "other")),
    )
    return [alone, both[0], both[1][1]]


def test_the_steps_of_one_composite_get_keys_of_their_own(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1) as engine:
        alone, left, inner = engine.run(composite_keys, workflow_id="ctx-keys", timeout=30)
    assert alone["key"] == "ctx-keys:0"
    assert left["key"] == "ctx-keys:1/0"
    assert inner["key"] in ("ctx-keys:1/1.0", "ctx-keys:1/1.1")  # whichever won the race
    assert left["position"] == inner["position"] == 1
