"""Torture report, issue 13, fault 4: errors that are not transient left runs PENDING
forever, retried at every sweep. A permanent error fails the run, or parks it when the
fault is in stored data, with the error named, once."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Generator
from typing import Any

import pytest

from conftest import wait_status
from replaykit import Engine, Recv, Send, Start, Status, Step, workflow


@workflow
def sends_to(target: str, topic: str) -> Generator[Any, Any, str]:
    yield Send(target, "hello", topic=topic)
    return "sent"


@workflow
def starts_child_named(child_id: str) -> Generator[Any, Any, str]:
    yield Start(sends_to, "x", "t", workflow_id=child_id)
    return "started"


@pytest.mark.parametrize(
    ("wf", "args", "what"),
    [
        (sends_to, ("target", "to\x00pic"), "NUL"),
        (sends_to, ("target", "t" * 2000), "bytes"),
        (starts_child_named, ("child\x00id",), "NUL"),
    ],
    ids=["nul-topic", "long-topic", "nul-child-id"],
)
def test_a_write_the_store_refuses_for_good_fails_the_run_once(
    store_url: str, wf: Any, args: tuple[Any, ...], what: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Engine(store_url, poll_interval=0.05) as engine:
        engine.start(sends_to, "nobody", "t", workflow_id="target")  # exists; fails alone
        # A refused child start is the parent's outcome (the workflow raises it), logged
        # as a warning when the run ends; a refused write fails the run with an error.
        with caplog.at_level("WARNING", logger="replaykit.engine"):
            engine.start(wf, *args, workflow_id="bad-write")
            row = wait_status(engine, "bad-write", Status.ERROR, Status.PARKED)
            time.sleep(0.3)  # several sweeps' worth: none tries it again
        assert row.status is Status.ERROR
        assert what in row.error and "'bad-write'" in row.error and "position 0" in row.error
        said = [r for r in caplog.records if "bad-write" in r.getMessage()]
        assert len(said) == 1, [r.getMessage() for r in said]


def hello() -> str:
    return "hello"


@workflow
def step_then_wait() -> Generator[Any, Any, str]:
    greeting: str = yield Step("greet", hello)
    yield Recv("go")
    return greeting


@pytest.mark.parametrize(
    "outcome", ["[1, 2]", "42", '{"value": '], ids=["list", "number", "truncated"]
)
def test_a_record_of_the_wrong_shape_parks_its_run_naming_it(tmp_path: Any, outcome: str) -> None:
    url = f"sqlite:///{tmp_path / 'shape.db'}"
    with Engine(url) as engine:
        engine.start(step_then_wait, workflow_id="shape")
        engine.start(step_then_wait, workflow_id="fine")
        assert engine.wait_idle(10)
    with sqlite3.connect(tmp_path / "shape.db") as conn:
        conn.execute(
            "UPDATE records SET outcome = ? WHERE workflow_id = 'shape' AND position = 0",
            (outcome,),
        )
    with Engine(url, poll_interval=0.05, max_cached_runs=0) as engine:
        row = wait_status(engine, "shape", Status.PARKED)
        assert "'shape'" in row.error and "position 0" in row.error
        engine.send("fine", None, "go")
        assert engine.handle("fine").result(timeout=20) == "hello"  # the others go on


def test_a_damaged_message_found_by_the_poller_parks_its_run_and_the_poller_goes_on(
    tmp_path: Any,
) -> None:
    """A message written by another process (no notification here) that does not decode
    used to kill the engine's poll thread: the run was neither parked nor woken, and
    every other run lost the poller's fallback."""
    import threading

    url = f"sqlite:///{tmp_path / 'poller.db'}"
    with Engine(url, poll_interval=0.05) as engine:
        engine.start(step_then_wait, workflow_id="damaged-inbox")
        engine.start(step_then_wait, workflow_id="healthy")
        assert engine.wait_idle(10)
        with sqlite3.connect(tmp_path / "poller.db") as conn:
            conn.execute(
                "INSERT INTO messages (workflow_id, topic, payload, created_at) "
                "VALUES ('damaged-inbox', 'go', '{not json', 0)"
            )
        row = wait_status(engine, "damaged-inbox", Status.PARKED)
        assert "message" in row.error and "damaged-inbox" in row.error
        assert any(t.name == "replaykit-poll" and t.is_alive() for t in threading.enumerate())
        engine.send("healthy", None, "go")
        assert engine.handle("healthy").result(timeout=20) == "hello"


def test_an_error_that_may_pass_does_not_fail_the_run(pg_url: str, pg_schema: str) -> None:
    """A server that refuses writes for a moment (SQLSTATE 25006, as a primary being
    demoted in a failover does) is not a permanent error: the run is tried again and
    finishes, rather than ending in ERROR."""
    import psycopg

    url = f"{pg_url}?schema={pg_schema}"
    with Engine(url, poll_interval=0.05) as engine:
        engine.start(step_then_wait, workflow_id="warm-up")  # the schema exists now
        assert engine.wait_idle(10)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                f"CREATE FUNCTION {pg_schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN RAISE EXCEPTION 'read-only for a moment' USING ERRCODE = '25006'; END $$"
            )
            conn.execute(
                f"CREATE TRIGGER refuse BEFORE INSERT ON {pg_schema}.records "
                f"FOR EACH ROW EXECUTE FUNCTION {pg_schema}.refuse()"
            )
            engine.start(step_then_wait, workflow_id="through-a-failover")
            time.sleep(0.3)
            conn.execute(f"DROP TRIGGER refuse ON {pg_schema}.records")
        deadline = time.monotonic() + 20
        while engine.store.get_workflow("through-a-failover").status is Status.PENDING:  # type: ignore[union-attr]
            if engine.steps("through-a-failover"):
                break
            assert time.monotonic() < deadline, "never recorded its step"
            time.sleep(0.05)
        row = engine.store.get_workflow("through-a-failover")
        assert row is not None and row.status is not Status.ERROR, row.error
