"""A step body that raises KeyboardInterrupt or SystemExit stops its run, once.

It used to loop: the run stayed PENDING with nothing said, was dispatched again at
every sweep, and logged "activation failed unexpectedly" each time, while the caller
of `run()` saw only a timeout. Now the run stops in this engine with nothing recorded
for the step, says why in its status detail, counts a recovery attempt (so one that
does it every time is parked), and the interrupt reaches the thread that waits on it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from replaykit import Engine, MemoryStore, Status, Step, workflow

RAISES: list[BaseException] = []
CALLS: list[str] = []


def interrupting_body() -> str:
    CALLS.append("body")
    if RAISES:
        raise RAISES.pop(0)
    return "went through"


@workflow(name="int-wf")
def interrupted(tag: str):
    first = yield Step("before", lambda: tag)
    second = yield Step("interrupting", interrupting_body)
    return f"{first}:{second}"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAISES.clear()
    CALLS.clear()


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), SystemExit(3)])
def test_an_interrupt_reaches_the_waiter_and_the_run_says_why(
    store_url: str, interrupt: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    RAISES.append(interrupt)
    with Engine(store_url, poll_interval=0.05) as engine:
        handle = engine.start(interrupted, "x", workflow_id="int-1")
        with caplog.at_level(logging.INFO, logger="replaykit"):
            with pytest.raises(type(interrupt)) as raised:
                handle.result(timeout=10)
            assert raised.value.__cause__ is interrupt
            # Sweeps go by (every 0.05 s): nothing runs it again, nothing is logged again.
            time.sleep(0.6)
        row = engine.store.get_workflow("int-1")
        assert row is not None and row.status is Status.PENDING
        assert type(interrupt).__name__ in row.error
        assert "'interrupting' at position 1" in row.error
        assert row.recovery_attempts == 1
        assert CALLS == ["body"]
        assert [r.name for r in engine.store.load_log("int-1")] == ["before"]
        said = [r for r in caplog.records if "int-1" in r.getMessage()]
        assert len(said) == 1, [r.getMessage() for r in said]
        assert "unexpectedly" not in said[0].getMessage()
        # A resume runs the step again, here, and the run finishes.
        assert engine.resume("int-1").result(timeout=10) == "x:went through"
        assert CALLS == ["body", "body"]


def test_a_run_interrupted_at_every_recovery_is_parked(store_url: str) -> None:
    # Each engine start recovers the run (one count) and the interrupt counts one more:
    # past max_recovery_attempts it is parked, saying why. (A resume is an operator's
    # decision and resets the count.)
    target: Any = MemoryStore() if store_url.startswith("memory") else store_url
    for launch in range(3):
        RAISES.append(KeyboardInterrupt())
        with Engine(target, poll_interval=0.05, max_recovery_attempts=2) as engine:
            if launch == 0:
                engine.start(interrupted, "y", workflow_id="int-2")
            deadline = time.monotonic() + 10
            # This launch's interrupt has been noted: the run is parked, or counts one.
            while (row := engine.store.get_workflow("int-2")) is not None and not (
                len(CALLS) == launch + 1
                and (row.status is Status.PARKED or row.recovery_attempts == 1)
            ):
                assert time.monotonic() < deadline, row
                time.sleep(0.02)
            if row.status is Status.PARKED:
                break
    assert row.status is Status.PARKED, row
    assert "max_recovery_attempts=2" in row.error
    assert "KeyboardInterrupt" in row.error
    assert launch == 1


def test_a_waiter_on_another_run_is_not_interrupted(store_url: str) -> None:
    RAISES.append(KeyboardInterrupt())
    with Engine(store_url, poll_interval=0.05) as engine:
        bad = engine.start(interrupted, "a", workflow_id="int-3")
        with pytest.raises(KeyboardInterrupt):
            bad.result(timeout=10)
        good = engine.start(interrupted, "b", workflow_id="int-4")
        assert good.result(timeout=10) == "b:went through"
        # The stopped run still hands its interrupt to a new waiter here.
        with pytest.raises(KeyboardInterrupt):
            bad.result(timeout=0.2)
