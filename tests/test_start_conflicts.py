"""Starts under a used id: the same start is idempotent, any other start is a conflict.

Every way of starting a run compares the stored run's workflow name and encoded
arguments with what the new start asks for: `Engine.start`, `Engine.enqueue`,
`enqueue_many`, `AsyncEngine.start` (batched), the `Client`, and children started
by `Start`/`Call` inside workflows.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import replaykit
from replaykit import AsyncEngine, Call, Engine, Queue, Start, Status, Step, Wait, workflow
from replaykit.client import Client
from replaykit.errors import WorkflowIdConflict
from replaykit.log import Failure
from replaykit.stores.base import WorkflowFilter


@workflow(name="conflict-echo")
def echo(text: str, times: int = 1):
    value = yield Step("echo", lambda: text * times)
    return value


@workflow(name="conflict-other")
def other(text: str):
    value = yield Step("other", lambda: text.upper())
    return value


@workflow(name="conflict-parent-same")
def parent_same(text: str):
    first = yield Call(echo, text, workflow_id="conflict-child-1")
    # The same child id again with the same arguments: the same run.
    again = yield Start(echo, text, workflow_id="conflict-child-1")
    second = yield Wait(again)
    return [first, second]


@workflow(name="conflict-parent-other")
def parent_other(text: str):
    yield Call(echo, text, workflow_id="conflict-child-2")
    # The same child id with other arguments: refused.
    yield Start(echo, text + "!", workflow_id="conflict-child-2")
    return "unreachable"


def test_the_same_start_returns_the_existing_run(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        first = engine.start(echo, "a", times=2, workflow_id="same-1")
        assert first.result(timeout=10) == "aa"
        # kwargs in another order are the same arguments
        again = engine.start(echo, "a", times=2, workflow_id="same-1")
        assert again.workflow_id == "same-1" and again.result(timeout=10) == "aa"
        assert len(engine.list_workflows()) == 1


def test_other_arguments_under_a_used_id_raise_naming_both(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        engine.start(echo, "a", workflow_id="args-1").result(timeout=10)
        with pytest.raises(WorkflowIdConflict) as info:
            engine.start(echo, "b", workflow_id="args-1")
        message = str(info.value)
        assert "'args-1'" in message and "other arguments" in message
        assert '"a"' in message and '"b"' in message  # both sides, briefly
        assert info.value.existing_name == info.value.new_name == "conflict-echo"
        assert info.value.same_workflow
        # The stored run is untouched.
        row = engine.handle("args-1").row()
        assert row.inputs == {"args": ["a"], "kwargs": {}} and row.status is Status.SUCCESS


def test_another_workflow_under_a_used_id_raises_naming_both(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        engine.start(echo, "a", workflow_id="wf-1")
        with pytest.raises(WorkflowIdConflict) as info:
            engine.start(other, "a", workflow_id="wf-1")
        assert "'conflict-other'" in str(info.value) and "'conflict-echo'" in str(info.value)
        assert info.value.workflow_id == "wf-1" and not info.value.same_workflow
        assert engine.handle("wf-1").result(timeout=10) == "a"


def test_enqueue_and_enqueue_many_compare_too(shared: Any) -> None:
    Queue("q-conflicts")
    with Engine(shared, queues=[], poll_interval=0.05) as producer:
        producer.enqueue("q-conflicts", echo, "a", workflow_id="q-1")
        assert producer.enqueue("q-conflicts", echo, "a", workflow_id="q-1").workflow_id == "q-1"
        with pytest.raises(WorkflowIdConflict, match="other arguments"):
            producer.enqueue("q-conflicts", echo, "z", workflow_id="q-1")
        with pytest.raises(WorkflowIdConflict, match="'conflict-other'"):
            producer.enqueue("q-conflicts", other, "a", workflow_id="q-1")
        # A plain start under an enqueued run's id with its arguments is that run.
        assert producer.start(echo, "a", workflow_id="q-1").status() is Status.ENQUEUED
        with pytest.raises(WorkflowIdConflict, match=r"item 1: .*'q-1'"):
            producer.enqueue_many(
                "q-conflicts",
                echo,
                [
                    replaykit.QueueItem("new", workflow_id="q-2"),
                    replaykit.QueueItem("b", workflow_id="q-1"),
                ],
            )


def test_a_batch_with_one_id_twice_refuses_the_second_start(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        answers = engine.start_batch(
            [
                (echo, ("a",), {}, "batch-1"),
                (echo, ("a",), {}, "batch-1"),
                (echo, ("b",), {}, "batch-1"),
                (other, ("a",), {}, "batch-1"),
            ]
        )
        assert [type(a).__name__ for a in answers] == [
            "WorkflowRow",
            "WorkflowRow",
            "WorkflowIdConflict",
            "WorkflowIdConflict",
        ]
        assert engine.handle("batch-1").result(timeout=10) == "a"


def test_async_engine_batched_starts_raise_for_their_caller_only(shared: Any) -> None:
    async def main() -> None:
        async with AsyncEngine(shared, poll_interval=0.05) as engine:
            await (await engine.start(echo, "a", workflow_id="aio-1")).result(timeout=10)
            results = await asyncio.gather(
                engine.start(echo, "a", workflow_id="aio-1"),
                engine.start(echo, "b", workflow_id="aio-1"),
                engine.start(echo, "c", workflow_id="aio-2"),
                return_exceptions=True,
            )
            assert results[0].workflow_id == "aio-1"  # type: ignore[union-attr]
            assert isinstance(results[1], WorkflowIdConflict)
            assert await results[2].result(timeout=10) == "c"  # type: ignore[union-attr]

    asyncio.run(main())


def test_the_client_compares_with_runs_the_engine_started(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05, app_version="v1") as engine:
        engine.start(echo, "a", times=3, workflow_id="cl-1").result(timeout=10)
        with Client(shared, app_version="v1", executor_id=engine.executor_id) as client:
            # The client encodes by name, without the code: the same data.
            assert (
                client.start("conflict-echo", "a", times=3, workflow_id="cl-1").result(5) == "aaa"
            )
            with pytest.raises(WorkflowIdConflict, match="other arguments"):
                client.start("conflict-echo", "a", times=4, workflow_id="cl-1")
            with pytest.raises(WorkflowIdConflict, match="'conflict-other'"):
                client.enqueue("q-conflicts", "conflict-other", "a", workflow_id="cl-1")


def test_a_child_id_reused_with_the_same_arguments_is_the_same_child(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        assert engine.run(parent_same, "x", workflow_id="p-same", timeout=20) == ["x", "x"]
        children = engine.list_workflows(parent_id="p-same")
        assert [c.workflow_id for c in children] == ["conflict-child-1"]


def test_a_child_id_reused_with_other_arguments_fails_the_parent_there(shared: Any) -> None:
    """The parent ends in ERROR at the `Start` with the conflict named: a run started
    with other arguments under a used id would silently wait on the wrong child."""
    with Engine(shared, poll_interval=0.05) as engine:
        handle = engine.start(parent_other, "y", workflow_id="p-other")
        with pytest.raises(WorkflowIdConflict, match=r"'conflict-child-2'.*other arguments"):
            handle.result(timeout=20)
        row = engine.handle("p-other").row()
        assert row.status is Status.ERROR
        # The stored failure says where: the parent, its id, the position and the command.
        assert isinstance(row.result, Failure)
        assert "'p-other') at position 1 (Start)" in row.result.error.message
        # The first child is untouched and nothing was started in its place.
        rows = engine.store.list_workflows(WorkflowFilter(parent_id="p-other"))
        assert [(r.workflow_id, r.inputs["args"]) for r in rows] == [("conflict-child-2", ["y"])]
