"""A cancel between a step's return and its record's commit loses nothing.

A step's effect happens, then its record commits. A cancel that lands in between
used to make the store refuse the record, and a later resume ran the step's body
again: a side effect done twice with no crash. The record writer now lands the record
anyway (`Store.record_late`), and the run stops. These tests cancel from inside the
step body — the latest moment before the record — on every store, for a step in the
middle, the last step (whose record commits with the finish), a run among many (the
group commit), and a cancel from another process's `Client`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from conftest import wait_for, wait_status
from replaykit import Client, Engine, Recv, Status, Step, workflow

BODIES: list[str] = []
CANCEL: list[Any] = []  # what cancels: engine.cancel or client.cancel
_lock = threading.Lock()


def _ran(name: str) -> int:
    with _lock:
        BODIES.append(name)
        return BODIES.count(name)


def cancelling_body(tag: str) -> str:
    # The body's work is done; the cancel lands before its record commits.
    if _ran(f"{tag}:cancelling") == 1:
        CANCEL[0](tag)
    return "done"


def plain_body(tag: str) -> str:
    _ran(f"{tag}:plain")
    return "plain"


def slow_body(tag: str) -> str:
    time.sleep(0.05)
    return tag


@workflow(name="cw-middle")
def cancelled_in_the_middle(tag: str):
    first = yield Step("cancelling", cancelling_body, tag)
    second = yield Step("plain", plain_body, tag)
    return f"{first}+{second}"


@workflow(name="cw-last")
def cancelled_at_the_end(tag: str):
    first = yield Step("plain", plain_body, tag)
    last = yield Step("cancelling", cancelling_body, tag)
    return f"{first}+{last}"


@workflow(name="cw-busy")
def busy(tag: str):
    total = []
    for index in range(3):
        total.append((yield Step(f"slow-{index}", slow_body, f"{tag}-{index}")))
    return len(total)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    BODIES.clear()
    CANCEL.clear()


def _cancel_then_resume(engine: Engine, wf: Any, tag: str, expected: str) -> None:
    engine.start(wf, tag, workflow_id=tag)
    wait_status(engine, tag, Status.CANCELLED)
    # Nothing more runs while cancelled; then the resume goes on after the step.
    time.sleep(0.2)
    assert BODIES.count(f"{tag}:cancelling") == 1
    assert engine.resume(tag).result(timeout=15) == expected
    assert BODIES.count(f"{tag}:cancelling") == 1, "the cancelled step's body ran twice"
    assert BODIES.count(f"{tag}:plain") == 1


def test_a_cancel_after_a_middle_step_keeps_its_record(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1) as engine:
        CANCEL.append(engine.terminate)
        _cancel_then_resume(engine, cancelled_in_the_middle, "cw-mid", "done+plain")
        steps = [record.name for record in engine.store.load_log("cw-mid")]
        assert steps == ["cancelling", "plain"]


def test_a_cancel_after_the_last_step_keeps_its_record(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1) as engine:
        CANCEL.append(engine.terminate)
        _cancel_then_resume(engine, cancelled_at_the_end, "cw-end", "plain+done")


def test_a_cancel_in_a_busy_round_keeps_its_record(store_url: str) -> None:
    # Other runs keep the scheduler busy: the cancelled run's record goes through the
    # group commit (record_many), not the lone run's path.
    with Engine(store_url, poll_interval=0.1, max_workers=8) as engine:
        CANCEL.append(engine.terminate)
        others = [engine.start(busy, f"cw-b{i}", workflow_id=f"cw-b{i}") for i in range(12)]
        _cancel_then_resume(engine, cancelled_in_the_middle, "cw-busy", "done+plain")
        assert [handle.result(timeout=30) for handle in others] == [3] * 12


@pytest.mark.parametrize("where", ["sqlite", "postgres"])
def test_a_cancel_from_another_process_keeps_its_record(
    where: str, tmp_path: Any, pg_url_or_skip: str | None
) -> None:
    if where == "sqlite":
        url = f"sqlite:///{tmp_path / 'cw.db'}"
    else:
        assert pg_url_or_skip is not None
        url = pg_url_or_skip
    with Engine(url, poll_interval=0.1) as engine, Client(url) as client:
        CANCEL.append(client.terminate)
        _cancel_then_resume(engine, cancelled_in_the_middle, "cw-client", "done+plain")


@pytest.fixture
def pg_url_or_skip(request: pytest.FixtureRequest) -> Any:
    if "postgres" not in request.node.name:
        yield None
        return
    from conftest import PG_URL, drop_schema, fresh_schema_name, require_postgres

    require_postgres()
    schema = fresh_schema_name("cw_client")
    yield f"{PG_URL}?schema={schema}"
    drop_schema(schema)


# (The record writer alone, on each store: tests/test_commits.py.)


# -- a cancel while an async body runs -------------------------------------------------------


async def cancelling_async_body(tag: str) -> str:
    # The body's side effect is done; the cancel lands while it still awaits.
    if _ran(f"{tag}:cancelling") == 1:
        CANCEL[0](tag)
    await asyncio.sleep(0.01)
    return "done"


@workflow(name="cw-async-middle")
def cancelled_in_an_async_body(tag: str):
    first = yield Step("cancelling", cancelling_async_body, tag)
    second = yield Step("plain", plain_body, tag)
    return f"{first}+{second}"


def test_a_cancel_while_an_async_body_runs_lets_it_finish_and_record(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.1) as engine:
        CANCEL.append(engine.terminate)
        _cancel_then_resume(engine, cancelled_in_an_async_body, "cw-async", "done+plain")
        steps = [record.name for record in engine.store.load_log("cw-async")]
        assert steps == ["cancelling", "plain"]


@workflow(name="cw-gate")
def waits_at_a_gate(tag: str):
    message = yield Recv("go")
    return message


def test_a_run_cancelled_while_it_waits_keeps_nothing_here(store_url: str) -> None:
    # A cancel that lands as the run looks at its wait again used to leave it kept warm
    # and suspended here though CANCELLED: memory and a timer held, and a sweep took it
    # for tracked after a resume elsewhere.
    with Engine(store_url, poll_interval=0.05) as engine:
        for i in range(20):
            workflow_id = f"cw-gate-{i}"
            engine.start(waits_at_a_gate, workflow_id, workflow_id=workflow_id)
            engine.send(workflow_id, "early?", topic="other")  # makes it look again
            engine.terminate(workflow_id)
        wait_for(
            lambda: not any(engine.scheduler.is_tracked(f"cw-gate-{i}") for i in range(20)),
            "the cancelled runs to be tracked no more",
            timeout=10,
        )
        assert not any(engine.scheduler.is_warm(f"cw-gate-{i}") for i in range(20))
        engine.send("cw-gate-0", "go!", topic="go")
        assert engine.resume("cw-gate-0").result(timeout=10) == "go!"
