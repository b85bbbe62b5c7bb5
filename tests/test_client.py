"""The Client: starts by name, messages, reads and operates runs that engines run.

The engine of each test runs in a thread of its own (`serve`), as it would in a
worker process: the client never calls into it, they share only the store.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from replaykit import Engine, Queue, Recv, SetEvent, Sleep, Status, Step, workflow
from replaykit.client import AsyncClient, Client
from replaykit.errors import AwaitedWorkflowCancelled, WorkflowNotFound, WorkflowTimeout

VERSION = "client-v1"


@workflow(name="client-greet")
def greet(name: str, punctuation: str = "!"):
    text = yield Step("greet", lambda: f"hello {name}{punctuation}")
    return text


@workflow(name="client-approval")
def approval(order: str):
    yield SetEvent("state", "waiting")
    decision = yield Recv("decision")
    yield SetEvent("state", decision["verdict"])
    return f"{order}: {decision['verdict']}"


@workflow(name="client-slow")
def slow(seconds: float):
    yield Sleep(seconds)
    done = yield Step("done", lambda: "done")
    return done


@contextmanager
def engine_thread(target: Any, **options: Any) -> Iterator[Engine]:
    """An engine serving in another thread until the block ends."""
    options.setdefault("app_version", VERSION)
    options.setdefault("poll_interval", 0.05)
    engine = Engine(target, **options)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: engine.serve(stop=stop), daemon=True)
    thread.start()
    try:
        yield engine
    finally:
        stop.set()
        thread.join(timeout=20)


def test_a_start_by_name_for_an_executor_is_run_by_that_engine(shared: Any) -> None:
    with (
        engine_thread(shared, executor_id="worker-1"),
        Client(shared, app_version=VERSION, executor_id="worker-1", poll_interval=0.05) as client,
    ):
        handle = client.start("client-greet", "ada", punctuation="?", workflow_id="c-1")
        assert handle.result(timeout=20) == "hello ada?"
        assert handle.status() is Status.SUCCESS
        row = handle.row()
        assert (row.executor_id, row.app_version, row.queue) == ("worker-1", VERSION, None)
        assert [r.name for r in client.steps("c-1")] == ["greet"]


def test_a_start_on_a_queue_is_claimed_by_an_engine_listening_there(shared: Any) -> None:
    Queue("client-q")
    with Client(shared, app_version=VERSION, poll_interval=0.05) as client:
        handle = client.start("client-greet", "bob", workflow_id="c-q", queue="client-q")
        assert handle.status() is Status.ENQUEUED
        later = client.enqueue("client-q", "client-greet", "cy", priority=-1)
        with engine_thread(shared, executor_id="worker-q", queues=["client-q"]):
            assert handle.result(timeout=20) == "hello bob!"
            assert later.result(timeout=20) == "hello cy!"
        assert {r.executor_id for r in client.list_workflows(queue="client-q")} == {"worker-q"}


def test_a_start_no_engine_would_run_is_refused(shared: Any) -> None:
    with Client(shared, app_version=VERSION) as client:
        with pytest.raises(ValueError, match="no engine to run it: pass queue="):
            client.start("client-greet", "x", workflow_id="c-nowhere")
        with pytest.raises(ValueError, match="needs the application version"):
            Client(shared).start("client-greet", "x", queue="client-q")
        assert client.list_workflows() == []


def test_a_start_for_an_engine_that_is_down_says_so_and_runs_when_it_launches(
    shared: Any, caplog: pytest.LogCaptureFixture, store_url: str
) -> None:
    with Client(shared, app_version=VERSION, executor_id="worker-later") as client:
        with caplog.at_level(logging.WARNING, logger="replaykit.client"):
            handle = client.start("client-greet", "dee", workflow_id="c-later")
        if not store_url.startswith("sqlite"):  # a lock file of a dead engine reads as held
            assert "no live engine holds" in caplog.text and "'c-later'" in caplog.text
        with pytest.raises(WorkflowTimeout, match="still PENDING"):
            handle.result(timeout=0.2)
        with engine_thread(shared, executor_id="worker-later"):
            assert handle.result(timeout=20) == "hello dee!"


def test_send_and_get_event_reach_a_waiting_run(shared: Any) -> None:
    with (
        engine_thread(shared, executor_id="worker-m"),
        Client(shared, app_version=VERSION, executor_id="worker-m", poll_interval=0.05) as client,
    ):
        handle = client.start("client-approval", "o-7", workflow_id="c-approve")
        assert client.get_event("c-approve", "state", timeout=20) == "waiting"
        assert client.send("c-approve", {"verdict": "approved"}, topic="decision")
        assert handle.result(timeout=20) == "o-7: approved"
        assert client.get_event("c-approve", "state") == "approved"
        assert client.get_event("c-approve", "missing", timeout=0.1) is None


def test_cancel_with_a_reason_then_resume_and_fork(shared: Any) -> None:
    with (
        engine_thread(shared, executor_id="worker-c"),
        Client(shared, app_version=VERSION, executor_id="worker-c", poll_interval=0.05) as client,
    ):
        handle = client.start("client-approval", "o-8", workflow_id="c-cancel")
        assert client.get_event("c-cancel", "state", timeout=20) == "waiting"
        assert client.terminate("c-cancel", reason="customer called")
        assert handle.row().error == "customer called"
        with pytest.raises(AwaitedWorkflowCancelled, match="customer called"):
            handle.result(timeout=5)
        client.resume("c-cancel")
        client.send("c-cancel", {"verdict": "kept"}, topic="decision")
        assert handle.result(timeout=20) == "o-8: kept"
        fork = client.fork("c-cancel", 1, workflow_id="c-cancel-fork")
        client.send("c-cancel-fork", {"verdict": "again"}, topic="decision")
        assert fork.result(timeout=20) == "o-8: again"


def test_a_client_holds_nothing_of_an_engine(shared: Any) -> None:
    with Client(shared, app_version=VERSION, executor_id="worker-h") as client:
        client.start("client-greet", "eve", workflow_id="c-hold")
        assert client.store.executor_holder("worker-h", VERSION) == ""  # no hold taken
        # An engine with that id launches at once (no waiting for a holder) and runs it.
        with Engine(shared, executor_id="worker-h", app_version=VERSION, executor_wait=0) as eng:
            assert eng.handle("c-hold").result(timeout=20) == "hello eve!"
        with pytest.raises(WorkflowNotFound):
            client.handle("c-none")


def test_resume_of_an_enqueued_delayed_run_starts_it_now(shared: Any) -> None:
    Queue("client-delay")
    with (
        engine_thread(shared, executor_id="worker-d"),
        Client(shared, app_version=VERSION, executor_id="worker-d", poll_interval=0.05) as client,
    ):
        handle = client.enqueue("client-delay", "client-greet", "fay", delay=3600)
        assert handle.status() is Status.ENQUEUED
        client.resume(handle.workflow_id)
        assert handle.result(timeout=20) == "hello fay!"
        assert handle.row().executor_id == "worker-d"


def test_async_client_does_the_same_as_coroutines(shared: Any) -> None:
    async def main() -> None:
        async with AsyncClient(
            shared, app_version=VERSION, executor_id="worker-a", poll_interval=0.05
        ) as client:
            handle = await client.start("client-approval", "o-9", workflow_id="c-aio")
            assert await client.get_event("c-aio", "state", timeout=20) == "waiting"
            assert await client.send("c-aio", {"verdict": "fine"}, topic="decision")
            assert await handle.result(timeout=20) == "o-9: fine"
            assert await handle.status() is Status.SUCCESS
            assert [r.name for r in await client.steps("c-aio")][-1] == "state"
            listed = await client.list_workflows(name="client-approval")
            assert [r.workflow_id for r in listed] == ["c-aio"]
            slow_handle = await client.start("client-slow", 60, workflow_id="c-aio-slow")
            await client.terminate("c-aio-slow", reason="not needed")
            with pytest.raises(AwaitedWorkflowCancelled, match="not needed"):
                await client.handle("c-aio-slow").result(timeout=5)
            assert (await slow_handle.row()).error == "not needed"

    with engine_thread(shared, executor_id="worker-a"):
        asyncio.run(main())
