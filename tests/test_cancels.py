"""Cancels a workflow can handle (runtime/cancels.py): `cancel(id, grace=, reason=)` raises
`Cancelled` at the run's current yield, recorded there; the workflow cleans up and the
run ends CANCELLED; a second cancel or the grace's end stops it as `terminate` does; and
parent close policies decide what becomes of a run's children when it ends. On the
engine over every store, and in the testing kit on virtual time."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    AwaitedWorkflowCancelled,
    Client,
    ContinueAsNew,
    Engine,
    Recv,
    Sleep,
    Start,
    Status,
    Step,
    WorkflowNotFound,
    step_context,
    testing,
    workflow,
)
from replaykit.errors import Cancelled, Stopped
from replaykit.log import Failure
from replaykit.testing import Cancel

UNDONE: list[str] = []


def undo(what: str) -> str:
    UNDONE.append(what)
    return what


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    UNDONE.clear()
    yield


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    with Engine(store_url, poll_interval=0.1) as eng:
        yield eng


@workflow(name="cancels.booking")
def booking(order: str) -> Generator[Any, Any, str]:
    try:
        yield Step("reserve", undo, f"reserve {order}")
        yield Recv("paid")
        return "booked"
    except Cancelled as exc:
        yield Step("release", undo, f"release {order} ({exc.reason})")
        raise


def _waits(engine: Engine, workflow_id: str, records: int) -> None:
    wait_for(lambda: len(engine.steps(workflow_id)) >= records, f"{workflow_id} to wait")
    engine.wait_idle(timeout=10)


def test_a_cancel_is_raised_at_the_yield_and_the_cleanup_is_recorded(engine: Engine) -> None:
    handle = engine.start(booking, "o-1", workflow_id="b1")
    _waits(engine, "b1", 2)
    assert engine.cancel("b1", reason="customer asked") is True
    with pytest.raises(AwaitedWorkflowCancelled, match="was cancelled: customer asked"):
        handle.result(timeout=10)
    row = handle.row()
    assert row.status is Status.CANCELLED
    assert row.error == "customer asked (a cancel it handled: the workflow raised)"
    log = engine.steps("b1")
    assert [(r.kind, r.name) for r in log] == [
        ("step", "reserve"),
        ("recv", "paid"),
        ("step", "release"),
    ]
    delivered = log[1].outcome
    assert isinstance(delivered, Failure) and delivered.error.qualname == "Cancelled"
    assert "at position 1 (Recv): customer asked" in delivered.error.message
    assert UNDONE == ["reserve o-1", "release o-1 (customer asked)"]
    # A finished run is left as it is.
    assert engine.cancel("b1") is False
    assert engine.terminate("b1") is False
    # The log replays as it ran: Cancelled raised at the same yield, the same cleanup.
    replayed = testing.replay(booking, engine.export_log("b1"), check_result=False)
    assert [command[1] for command in replayed.commands] == ["step", "recv", "step"]


@workflow(name="cancels.stubborn")
def stubborn() -> Generator[Any, Any, str]:
    try:
        yield Recv("never")
    except Cancelled:
        yield Step("release", undo, "started")
        yield Recv("cleanup-never-ends")
    return "unreachable"


def test_a_second_cancel_stops_a_cleanup_hard(engine: Engine) -> None:
    handle = engine.start(stubborn, workflow_id="s2")
    _waits(engine, "s2", 1)
    assert engine.cancel("s2", reason="first") is True
    wait_for(lambda: len(engine.steps("s2")) >= 3, "the cleanup to wait")
    assert handle.status() is Status.PENDING
    assert engine.cancel("s2", reason="again") is True
    assert handle.status() is Status.CANCELLED
    assert handle.row().error == "again; cancelled a second time"


def test_the_graces_end_stops_a_cleanup_hard(engine: Engine) -> None:
    handle = engine.start(stubborn, workflow_id="s3")
    _waits(engine, "s3", 1)
    assert engine.cancel("s3", grace=0.5, reason="late") is True
    wait_for(lambda: handle.status() is Status.CANCELLED, "the grace to run out")
    assert handle.row().error == (
        "cancelled: late; its cleanup did not end within the grace of 0.5 s, so it was stopped"
    )
    assert UNDONE == ["started"]


def test_terminate_is_the_hard_stop_with_no_cleanup(engine: Engine) -> None:
    handle = engine.start(booking, "o-4", workflow_id="b4")
    _waits(engine, "b4", 2)
    assert engine.terminate("b4", reason="stuck") is True
    assert handle.status() is Status.CANCELLED
    assert handle.row().error == "stuck"
    time.sleep(0.2)
    assert [r.kind for r in engine.steps("b4")] == ["step", "recv"]
    assert UNDONE == ["reserve o-4"]


def test_a_run_not_yet_running_is_cancelled_at_once(engine: Engine) -> None:
    handle = engine.enqueue("cancels-q", booking, "o-5", workflow_id="b5", delay=3600)
    assert handle.status() is Status.ENQUEUED
    assert engine.cancel("b5", reason="never mind") is True
    assert handle.status() is Status.CANCELLED
    assert handle.row().error == "never mind"


def test_bad_cancels_are_refused_naming_the_run(engine: Engine) -> None:
    engine.start(booking, "o-6", workflow_id="b6")
    for grace in (0, -1, float("nan"), "10", True):
        with pytest.raises(ValueError, match=r"cancel\('b6', grace=.*\): the grace must be"):
            engine.cancel("b6", grace=grace)  # type: ignore[arg-type]
    with pytest.raises(WorkflowNotFound):
        engine.cancel("nobody")
    with pytest.raises(ValueError, match=r"cancel\('nobody', grace=0\)"):
        Client(engine.store).cancel("nobody", grace=0)
    assert engine.store.get_cancel_request("b6") is None


def test_a_client_keeps_the_request_and_the_engine_delivers_it(
    engine: Engine, store_url: str
) -> None:
    if store_url.startswith("sqlite"):
        pytest.skip("SQLite's notes do not cross store instances: the next activation reads it")
    handle = engine.start(booking, "o-7", workflow_id="b7")
    _waits(engine, "b7", 2)
    client = Client(engine.store)
    assert client.cancel("b7", grace=30, reason="by the client") is True
    with pytest.raises(AwaitedWorkflowCancelled, match="by the client"):
        handle.result(timeout=10)
    assert UNDONE[-1] == "release o-7 (by the client)"


GATE = threading.Event()


def beating(tag: str) -> str:
    context = step_context()
    for _ in range(500):
        context.heartbeat(tag)
        GATE.set()
        time.sleep(0.01)
    return "never cancelled"


@workflow(name="cancels.beating")
def beating_wf() -> Generator[Any, Any, str]:
    try:
        return (yield Step("long", beating, "x"))
    except Cancelled:
        yield Step("release", undo, "after the beat")
        raise


def test_a_cancel_reaches_a_heartbeating_step_at_its_next_beat(engine: Engine) -> None:
    GATE.clear()
    handle = engine.start(beating_wf, workflow_id="hb")
    assert GATE.wait(10)
    assert engine.cancel("hb", reason="stop beating")
    with pytest.raises(AwaitedWorkflowCancelled, match="stop beating"):
        handle.result(timeout=10)
    log = engine.steps("hb")
    assert [r.name for r in log] == ["long", "release"]
    assert isinstance(log[0].outcome, Failure) and log[0].outcome.error.qualname == "Cancelled"
    assert log[0].attempts == 1  # never retried


# -- parent close policies ---------------------------------------------------------------


@workflow(name="cancels.child")
def child_wf() -> Generator[Any, Any, str]:
    try:
        return (yield Recv("never"))
    except Cancelled:
        yield Step("child-cleanup", undo, "child")
        raise


@workflow(name="cancels.parent")
def parent_wf(policy: str, how: str) -> Generator[Any, Any, str]:
    if how == "continued":  # the next generation waits: the first one's child was closed
        yield Recv("never")
    yield Start(child_wf, workflow_id=f"child-{policy}-{how}", parent_close=policy)
    if how == "succeed":
        return "done"
    if how == "fail":
        raise ValueError("the parent failed")
    if how == "continue":
        yield ContinueAsNew(policy, "continued")
    yield Recv("never")  # cancelled or terminated from outside
    return "unreachable"


@pytest.mark.parametrize("how", ["succeed", "fail", "cancel", "terminate", "continue"])
@pytest.mark.parametrize("policy", ["terminate", "cancel", "abandon"])
def test_each_parent_close_policy_applies_however_the_parent_ends(
    engine: Engine, policy: str, how: str
) -> None:
    parent_id, child_id = f"parent-{policy}-{how}", f"child-{policy}-{how}"
    parent = engine.start(parent_wf, policy, how, workflow_id=parent_id)
    wait_for(lambda: engine.store.get_workflow(child_id) is not None, "the child started")
    child = engine.handle(child_id)
    if how == "cancel":
        _waits(engine, parent_id, 2)
        engine.cancel(parent_id)
    elif how == "terminate":
        _waits(engine, parent_id, 2)
        engine.terminate(parent_id)
    if how == "continue":
        wait_for(lambda: parent.row().generation == 1, "the parent continued")
    else:
        wait_for(lambda: parent.status().is_terminal, "the parent ended")
    if policy == "abandon":
        engine.wait_idle(timeout=10)
        assert child.status() is Status.PENDING
        assert engine.store.get_cancel_request(child_id) is None
        return
    wait_for(lambda: child.status() is Status.CANCELLED, "the child closed")
    error = child.row().error
    if policy == "terminate":
        assert error.startswith(f"cancelled with its parent {parent_id!r}"), error
        assert "child" not in UNDONE
    else:  # asked to cancel: its cleanup ran
        assert error.endswith("(a cancel it handled: the workflow raised)"), error
        assert f"cancelled with its parent {parent_id!r}" in error
        assert UNDONE == ["child"]


def test_a_bad_parent_close_policy_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match=r"Start\('cancels.child', \.\.\.\): parent_close='kill'"):
        Start(child_wf, parent_close="kill")
    with pytest.raises(ValueError, match="use one of 'terminate', 'cancel', 'abandon'"):
        Start(child_wf, parent_close=None)  # type: ignore[arg-type]
    assert Start(child_wf).parent_close == "terminate"
    # The default leaves the command's digest as it was before the option.
    assert Start(child_wf).describe_args() == [[], {}, None]
    assert Start(child_wf, parent_close="abandon").describe_args()[-1] == {
        "parent_close": "abandon"
    }


# -- the testing kit, on virtual time ------------------------------------------------------


@workflow(name="cancels.kit")
def kit_booking(order: str) -> Generator[Any, Any, str]:
    try:
        yield Step("reserve", lambda: f"reserved {order}")
        yield Sleep(timedelta(days=1))
        return "booked"
    except Cancelled:
        yield Step("release", lambda: f"released {order}")
        yield Sleep(timedelta(seconds=20))  # the cleanup takes time, within the grace
        raise


def test_the_kit_delivers_a_cancel_at_a_chosen_time() -> None:
    result = testing.run(
        kit_booking, "o-8", cancels=[Cancel(at=timedelta(hours=2), reason="no")], real_steps=True
    )
    assert result.status is Status.CANCELLED
    assert result.elapsed == timedelta(hours=2, seconds=20)
    assert [c for c in result.commands] == [
        ("step", "reserve"),
        ("sleep", "sleep"),
        ("step", "release"),
        ("sleep", "sleep"),
    ]
    # Every crash and resumption agrees with the uninterrupted run.
    testing.check_determinism(
        kit_booking, "o-8", cancels=[Cancel(at=timedelta(hours=2), reason="no")], real_steps=True
    )


def test_the_kit_runs_the_grace_out_on_virtual_time() -> None:
    result = testing.run(kit_booking, "o-9", cancels=[Cancel(at=60, grace=10)], real_steps=True)
    assert result.status is Status.CANCELLED
    assert result.elapsed == timedelta(seconds=70)
    assert "did not end within the grace of 10 s" in str(result.error)
    second = testing.run(
        kit_booking, "o-9", cancels=[Cancel(at=60), Cancel(at=65)], real_steps=True
    )
    assert second.elapsed == timedelta(seconds=65)
    assert "cancelled a second time" in str(second.error)


def test_the_kits_cancel_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="the grace must be a number of seconds above 0"):
        Cancel(at=1, grace=0)
    with pytest.raises(TypeError, match=r"Cancel\(at=\.\.\.\) takes a timedelta"):
        Cancel(at="soon")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"cancels= takes replaykit\.testing\.Cancel"):
        testing.run(kit_booking, "x", cancels=["now"])  # type: ignore[list-item]
    # A cancel of a run that does not exist is listed as undelivered.
    done = testing.run(kit_booking, "o-10", cancels=[Cancel(at=60, to="nobody")], real_steps=True)
    assert done.status is Status.SUCCESS
    [(cancel, why)] = done.undelivered
    assert isinstance(cancel, Cancel) and "no workflow run with id 'nobody'" in why


def test_the_internal_stop_is_not_the_cancel_a_workflow_catches() -> None:
    assert issubclass(Stopped, BaseException) and not issubclass(Stopped, Exception)
    assert issubclass(Cancelled, Exception)
    assert Cancelled("x", "why").reason == "why"
    assert getattr(Cancelled, "non_retryable", False) is True
