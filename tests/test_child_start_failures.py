"""A child start that cannot start is the parent's outcome at its yield, recorded.

`Start`/`Call` under an id that holds a run of another workflow (or other arguments)
used to end the parent in ERROR with nothing recorded at that position: the parent
could not catch it. Now the parent receives `WorkflowIdConflict` at the yield, the
failure is recorded, and a replay raises the same.
"""

from __future__ import annotations

from typing import Any

import pytest

import replaykit
from replaykit import Call, Engine, Start, Status, Step, workflow
from replaykit.errors import WorkflowIdConflict


@workflow(name="csf-child")
def child(n: int):
    value = yield Step("double", lambda: n * 2)
    return value


@workflow(name="csf-other")
def other(n: int):
    yield Step("noop", lambda: n)
    return "other"


@workflow(name="csf-parent-call")
def parent_call(child_id: str):
    try:
        value = yield Call(child, 1, workflow_id=child_id)
    except WorkflowIdConflict as exc:
        after = yield Step("after", lambda: "recovered")
        return f"caught {type(exc).__name__}: {after}"
    return f"got {value}"


@workflow(name="csf-parent-start")
def parent_start(child_id: str):
    try:
        started = yield Start(child, 1, workflow_id=child_id)
    except WorkflowIdConflict:
        return "caught on start"
    return f"started {started}"


@pytest.fixture
def target(store_url: str) -> Any:
    if store_url.startswith("memory"):
        store = replaykit.MemoryStore()
        store.close = lambda: None  # type: ignore[method-assign]
        return store
    return store_url


@pytest.mark.parametrize("parent", [parent_call, parent_start])
def test_a_conflicting_child_id_is_caught_by_the_parent_and_replays_the_same(
    target: Any, parent: Any
) -> None:
    with Engine(target, poll_interval=0.05) as engine:
        # The id is taken by a run of another workflow.
        assert engine.run(other, 5, workflow_id="taken", timeout=10) == "other"
        handle = engine.start(parent, "taken", workflow_id="p-" + parent.workflow_name)
        result = handle.result(timeout=10)
        assert result.startswith("caught")
        assert handle.status() is Status.SUCCESS
        failed = engine.steps(handle.workflow_id)[0]
        assert failed.kind in ("call", "start")
        assert failed.outcome is not None and "WorkflowIdConflict" in repr(failed.outcome)
    # A fresh engine replays the recorded failure to the same result (no new start).
    with Engine(target, poll_interval=0.05) as engine:
        replayed = engine.fork(handle.workflow_id, len(engine.steps(handle.workflow_id)))
        assert replayed.result(timeout=10) == result
