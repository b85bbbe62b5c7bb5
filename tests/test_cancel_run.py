"""`yield CancelRun(workflow_id, reason=...)`: a durable cancel of another run from a
workflow — recorded once, never repeated by a replay, True again after a crash lost
its record — on the engine over every store and in the testing kit on virtual time."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any, cast

import pytest

from conftest import wait_for
from replaykit import (
    AwaitedWorkflowCancelled,
    CancelRun,
    Engine,
    Race,
    Recv,
    Sleep,
    Start,
    Status,
    Wait,
    WorkflowNotFound,
    testing,
    workflow,
)
from replaykit.commands import facts_of
from replaykit.log import Failure, Value
from replaykit.runtime.handlers import HANDLERS, Carrier, handler_for
from replaykit.runtime.handlers.instants import CancelRunHandler, cancel_detail
from replaykit.runtime.host import Host
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore

# -- the command -----------------------------------------------------------------------


def test_cancel_run_is_named_by_its_target_and_refuses_bad_input() -> None:
    command = CancelRun("order-7", "superseded")
    assert (command.kind, command.name) == ("cancel_run", "order-7")
    assert command.describe_args() == ["order-7", "superseded", True]
    assert CancelRun("order-7", children=False).children is False
    with pytest.raises(TypeError, match=r"CancelRun\(''\): the workflow id must be a non-empty"):
        CancelRun("")
    with pytest.raises(TypeError, match=r"CancelRun\(None\)"):
        CancelRun(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"reason=3\): the reason must be a str"):
        CancelRun("x", 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"children='yes'\): children must be True or False"):
        CancelRun("x", children="yes")  # type: ignore[arg-type]


def test_cancel_run_is_carried_out_alone_never_inside_a_composite() -> None:
    assert facts_of(CancelRun("x")).instant
    assert isinstance(handler_for(CancelRun("x")), CancelRunHandler)
    assert CancelRun in HANDLERS
    with pytest.raises(TypeError, match="Race\\(\\) cannot hold CancelRun: it cancels the other"):
        Race(CancelRun("x"), Sleep(1))


class _Host:
    """What the handler asks of its host: the engine's cancel, over a memory store."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.cancels: list[tuple[str, str]] = []

    def cancel(self, workflow_id: str, *, children: bool = True, reason: str = "") -> bool:
        from replaykit.runtime import admin

        admin.get_run(self.store, workflow_id)
        self.cancels.append((workflow_id, reason))
        return admin.cancel_run(self.store, workflow_id, children=children, reason=reason)


class _Carrier:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.host = cast(Host, _Host(self.store))


def test_carried_out_again_after_a_lost_record_it_answers_true_again() -> None:
    carrier = _Carrier()
    carrier.store.create_workflow(WorkflowRow("target", "wf", Status.PENDING))
    row = WorkflowRow("boss", "boss-wf", Status.PENDING)
    handler = CancelRunHandler()
    command = CancelRun("target", "superseded")
    first = handler.instant(cast(Carrier, carrier), row, 4, command)
    # The crash lost the record: the same position carries it out again.
    again = handler.instant(cast(Carrier, carrier), row, 4, command)
    elsewhere = handler.instant(cast(Carrier, carrier), row, 5, command)
    assert (first, again, elsewhere) == (Value(True), Value(True), Value(False))
    stored = carrier.store.get_workflow("target")
    assert stored is not None and stored.status is Status.CANCELLED
    assert stored.error == cancel_detail(row, 4, "superseded")
    assert stored.error == (
        "superseded (cancelled by workflow 'boss-wf' (id 'boss') at position 4)"
    )
    # A later generation's same position is another command: it does not pass for it.
    later = WorkflowRow("boss", "boss-wf", Status.PENDING, generation=1)
    assert handler.instant(cast(Carrier, carrier), later, 4, command) == Value(False)


# -- the engine, on every store ---------------------------------------------------------


@workflow(name="cancel-run.target")
def target() -> Generator[Any, Any, Any]:
    child = yield Start(target_child, workflow_id="cancel-run-grandchild")
    return [child, (yield Recv("never"))]


@workflow(name="cancel-run.target-child")
def target_child() -> Generator[Any, Any, Any]:
    return (yield Recv("never"))


@workflow(name="cancel-run.boss")
def boss(victim: str, children: bool) -> Generator[Any, Any, list[Any]]:
    changed = yield CancelRun(victim, reason="superseded", children=children)
    # The victim gets Cancelled at its yield and ends CANCELLED; a cancel of a run that
    # has finished changes nothing (a second cancel while it cleaned up would stop it).
    with contextlib.suppress(AwaitedWorkflowCancelled):
        yield Wait(victim)
    again = yield CancelRun(victim, children=children)
    try:
        yield CancelRun("nobody-has-this-id")
    except WorkflowNotFound as exc:
        missing = str(exc)
    try:
        yield CancelRun("cancel-run-boss")
    except ValueError as exc:
        itself = str(exc)
    # A replay (no warm runs here) must answer the cancels above from the log.
    resumed = yield Recv("go")
    return [changed, again, missing, itself, resumed]


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    with Engine(store_url, poll_interval=0.2, max_cached_runs=0) as eng:
        yield eng


def test_a_workflow_cancels_another_run_once(engine: Engine) -> None:
    victim = engine.start(target, workflow_id="cancel-run-victim")
    wait_for(
        lambda: engine.store.get_workflow("cancel-run-grandchild") is not None,
        "the victim started its child",
    )
    handle = engine.start(boss, "cancel-run-victim", True, workflow_id="cancel-run-boss")
    wait_for(lambda: victim.status() is Status.CANCELLED, "the victim is cancelled")
    with pytest.raises(AwaitedWorkflowCancelled, match="superseded"):
        victim.result(timeout=5)
    row = engine.store.get_workflow("cancel-run-victim")
    assert row is not None
    # Cancelled reached the victim at its yield; it let it propagate and ended CANCELLED.
    assert row.error == (
        "superseded (cancelled by workflow 'cancel-run.boss' (id 'cancel-run-boss') at "
        "position 0) (a cancel it handled: the workflow raised)"
    )
    # The cancel cascades to the victim's child just after the victim itself.
    wait_for(
        lambda: engine.handle("cancel-run-grandchild").status() is Status.CANCELLED,
        "the victim's child is cancelled with it",
    )

    # Brought back by an operator, the victim replays its log, where the cancel it was
    # delivered is history: it ends CANCELLED again by itself. The boss, rebuilt from
    # its log, answers its cancels from there and asks the victim nothing again.
    engine.resume("cancel-run-victim")
    assert engine.store.get_cancel_request("cancel-run-victim") is None
    engine.send("cancel-run-boss", "resumed", topic="go")
    changed, again, missing, itself, resumed = handle.result(timeout=10)
    assert (changed, again, resumed) == (True, False, "resumed")
    assert "CancelRun('nobody-has-this-id') found no workflow run with that id" in missing
    assert "'cancel-run.boss' (id 'cancel-run-boss') at position 3" in missing
    assert "CancelRun('cancel-run-boss') names this run itself" in itself
    wait_for(lambda: victim.status() is Status.CANCELLED, "the resumed victim replays its end")
    assert engine.store.get_cancel_request("cancel-run-victim") is None
    assert [r.kind for r in engine.store.load_log("cancel-run-victim")] == ["start", "recv"]
    log = engine.store.load_log("cancel-run-boss")
    assert [(r.kind, r.name) for r in log[:3]] == [
        ("cancel_run", "cancel-run-victim"),
        ("wait", "wait"),
        ("cancel_run", "cancel-run-victim"),
    ]
    assert [log[0].outcome, log[2].outcome] == [Value(True), Value(False)]
    assert isinstance(log[3].outcome, Failure)
    assert log[3].outcome.error.qualname == "WorkflowNotFound"


def test_a_handled_cancel_closes_the_runs_children_by_their_policy(engine: Engine) -> None:
    # `children=False` applies to a cancel that stops the run at once (the handler's
    # test above); a run that handles its cancel ends its children by their parent
    # close policy when it ends, here the default, "terminate".
    engine.start(target, workflow_id="cancel-run-victim")
    wait_for(
        lambda: engine.store.get_workflow("cancel-run-grandchild") is not None,
        "the victim started its child",
    )
    handle = engine.start(boss, "cancel-run-victim", False, workflow_id="cancel-run-boss")
    wait_for(lambda: len(engine.store.load_log("cancel-run-boss")) >= 6, "the boss's cancels")
    assert engine.handle("cancel-run-victim").status() is Status.CANCELLED
    # The policies apply once the victim's end has committed (runtime/books.py), so the
    # child ends just after it: on a loaded machine, after the boss's log has grown.
    wait_for(
        lambda: engine.handle("cancel-run-grandchild").status() is Status.CANCELLED,
        "the victim's child ended by its parent close policy",
    )
    child = engine.handle("cancel-run-grandchild").row()
    assert child.error.startswith("cancelled with its parent 'cancel-run-victim': it ended")
    assert handle.status() is Status.PENDING  # waiting for "go"


# -- the testing kit, on virtual time -----------------------------------------------------


@workflow(name="cancel-run.kit-target")
def sleeper() -> Generator[Any, Any, str]:
    yield Sleep(timedelta(days=1))
    return "slept a day"


@workflow(name="cancel-run.kit")
def supersede() -> Generator[Any, Any, list[Any]]:
    child = yield Start(sleeper, workflow_id="kit-sleeper")
    yield Sleep(timedelta(hours=1))
    changed = yield CancelRun(child, reason="a newer order came")
    try:
        yield Wait(child)
    except AwaitedWorkflowCancelled as exc:
        said = str(exc)
    else:
        said = "not cancelled"
    # Asked once it ended: a finished run is left as it is. (Asked while it cleaned up,
    # a second cancel would stop it hard.)
    again = yield CancelRun(child)
    return [changed, again, said]


def test_the_kit_cancels_on_virtual_time() -> None:
    result = testing.run(supersede)
    changed, again, said = result.unwrap()
    assert (changed, again) == (True, False)
    assert "'kit-sleeper'" in said and "was cancelled" in said
    assert result.elapsed == timedelta(hours=1)
    assert [kind for kind, _ in result.commands] == [
        "start",
        "sleep",
        "cancel_run",
        "wait",
        "cancel_run",
    ]


def test_a_crash_at_every_commit_gives_the_same_answers() -> None:
    # Among the crashes: after the cancel, before its record. The cancel carried out
    # again finds its own detail on the cancelled run and answers True again.
    testing.check_determinism(supersede)
