"""Evolving code under runs in flight, and operating runs, on every store.

A "deploy" is simulated by swapping the registry entry of a workflow name for a
new function between two engines on one store: the first engine records part
of a run under v1 and stops; the next engine recovers the run under v2.
"""

from __future__ import annotations

import linecache
import threading
from collections.abc import Callable, Generator, Iterator
from datetime import timedelta
from typing import Any

import pytest

import replaykit
import replaykit.testing
from conftest import wait_for, wait_status
from replaykit import (
    Call,
    ContinueAsNew,
    DeprecatePatch,
    Engine,
    Patch,
    Recv,
    Start,
    Status,
    Step,
    Wait,
    Workflow,
    workflow,
)
from replaykit.errors import AwaitedWorkflowCancelled, WorkflowNotFound
from replaykit.log import Failure, Value
from replaykit.registry import app_version_of, registered

CALLS: dict[str, int] = {}
LOCK = threading.Lock()


def bump(name: str, *_args: Any) -> str:
    with LOCK:
        CALLS[name] = CALLS.get(name, 0) + 1
    return name


@pytest.fixture(autouse=True)
def _reset_calls() -> Iterator[None]:
    CALLS.clear()
    yield


Deploy = Callable[[str, Callable[..., Any]], Workflow[..., Any]]


@pytest.fixture
def deploy() -> Iterator[Deploy]:
    """Replace the code registered under a workflow name, as a deploy would.

    The registry refuses a second function under one name (a safety net against
    two modules claiming it); a deploy is a new process, so the test swaps the
    entry directly and restores the original afterwards.
    """
    saved: dict[str, Workflow[..., Any] | None] = {}

    def swap(name: str, fn: Callable[..., Any]) -> Workflow[..., Any]:
        saved.setdefault(name, replaykit.registry._registry.get(name))
        wf: Workflow[..., Any] = Workflow(fn, name)
        replaykit.registry._registry[name] = wf
        return wf

    yield swap
    for name, original in saved.items():
        if original is None:
            replaykit.registry._registry.pop(name, None)
        else:
            replaykit.registry._registry[name] = original


@pytest.fixture
def target(store_url: str) -> Any:
    """What successive engines open to see one store: the URL, or one shared MemoryStore."""
    if not store_url.startswith("memory"):
        return store_url
    store = replaykit.MemoryStore()
    store.close = lambda: None  # type: ignore[method-assign]  # outlive each engine
    return store


def engine_on(target: Any, **options: Any) -> Engine:
    """Patch-based deploys keep one pinned app version, so the new code recovers old runs."""
    options.setdefault("app_version", "prod")
    options.setdefault("poll_interval", 0.05)
    return Engine(target, **options)


def wait_waiting(eng: Engine, workflow_id: str, position: int) -> None:
    """Until the run has recorded the start of its timed Recv at `position`."""

    def waiting() -> bool:
        try:
            records = eng.steps(workflow_id)
        except WorkflowNotFound:  # a child its parent has not started yet
            return False
        return len(records) > position and records[position].is_pending

    wait_for(waiting, f"{workflow_id} to wait at position {position}")


def kinds(eng: Engine, workflow_id: str) -> list[tuple[str, str]]:
    return [(r.kind, r.name) for r in eng.steps(workflow_id)]


GO = Recv("go", timeout=3600)  # timed, so its start is recorded: the run visibly waits


# -- versions: the coarse tool -------------------------------------------------------------


@workflow(name="ver-versions")
def versions_v1(tag: str) -> Generator[Any, Any, str]:
    yield Step("first", bump, "first")
    yield GO
    return f"v1:{tag}"


def versions_v2(tag: str) -> Generator[Any, Any, str]:
    yield Step("first", bump, "first")
    yield GO
    yield Step("extra", bump, "extra")
    return f"v2:{tag}"


def test_each_version_recovers_only_its_own_runs(target: Any) -> None:
    with engine_on(target, app_version="v1") as old:
        old.start(versions_v1, "a", workflow_id="run-v1")
        wait_waiting(old, "run-v1", 1)
    with engine_on(target, app_version="v2") as new:
        new.start(versions_v1, "b", workflow_id="run-v2")
        wait_waiting(new, "run-v2", 1)
    # Old and new code side by side on one store, as during a rolling deploy.
    with (
        engine_on(target, app_version="v1", recover=False) as old,
        engine_on(target, app_version="v2", recover=False) as new,
    ):
        assert [r.workflow_id for r in old.list_workflows(version="v1")] == ["run-v1"]
        assert [r.workflow_id for r in new.list_workflows(version="v2")] == ["run-v2"]
        assert old.list_workflows(version="v3") == []
        assert old.recover() == ["run-v1"]
        assert new.recover() == ["run-v2"]
        old.send("run-v1", "ok", topic="go")
        new.send("run-v2", "ok", topic="go")
        assert old.handle("run-v1").result(timeout=20) == "v1:a"
        assert new.handle("run-v2").result(timeout=20) == "v1:b"
        assert old.handle("run-v1").row().app_version == "v1"
        assert new.handle("run-v2").row().app_version == "v2"


def test_default_version_follows_the_code_so_old_code_drains_old_runs(
    target: Any, deploy: Deploy
) -> None:
    with engine_on(target, app_version=None) as old:
        v1_version = old.app_version
        assert v1_version == app_version_of(registered().values())
        old.start(versions_v1, "a", workflow_id="drain-me")
        wait_waiting(old, "drain-me", 1)
    new_wf = deploy("ver-versions", versions_v2)
    with engine_on(target, app_version=None) as new:
        assert new.app_version != v1_version  # the code changed, so did the version
        assert new.recover() == []  # the v1 run is not v2's to replay
        new.start(new_wf, "b", workflow_id="fresh")
        new.send("fresh", "ok", topic="go")
        assert new.handle("fresh").result(timeout=20) == "v2:b"
        assert new.handle("drain-me").status() is Status.PENDING
    deploy("ver-versions", versions_v1.fn)  # an old-code process comes back to drain
    with engine_on(target, app_version=None) as old:
        assert old.app_version == v1_version
        old.send("drain-me", "ok", topic="go")
        assert old.handle("drain-me").result(timeout=20) == "v1:a"
    assert CALLS == {"first": 2, "extra": 1}


# -- Patch: inserting a step -----------------------------------------------------------------


@workflow(name="ver-insert")
def insert_v1(order: str) -> Generator[Any, Any, str]:
    yield Step("a", bump, "a")
    yield GO
    yield Step("c", bump, "c")
    return "without-b"


def insert_v2(order: str) -> Generator[Any, Any, str]:
    yield Step("a", bump, "a")
    if (yield Patch("add-b")):
        yield Step("b", bump, "b")
        yield GO
        yield Step("c", bump, "c")
        return "with-b"
    yield GO
    yield Step("c", bump, "c")
    return "without-b"


def test_patch_inserting_a_step(target: Any, deploy: Deploy) -> None:
    with engine_on(target) as eng:
        eng.start(insert_v1, "o-1", workflow_id="old")
        wait_waiting(eng, "old", 1)
    v2 = deploy("ver-insert", insert_v2)
    with engine_on(target) as eng:  # recovers "old" under v2
        eng.start(v2, "o-2", workflow_id="new")
        eng.send("old", 1, topic="go")
        eng.send("new", 1, topic="go")
        assert eng.handle("old").result(timeout=20) == "without-b"
        assert eng.handle("new").result(timeout=20) == "with-b"
        # The old run replays without a marker: no position is taken, nothing shifts.
        assert kinds(eng, "old") == [("step", "a"), ("recv", "go"), ("step", "c")]
        assert kinds(eng, "new") == [
            ("step", "a"),
            ("patch", "add-b"),
            ("step", "b"),
            ("recv", "go"),
            ("step", "c"),
        ]
    assert CALLS == {"a": 2, "b": 1, "c": 2}


def test_patch_after_the_last_recorded_position_is_taken_by_old_runs_too(
    target: Any, deploy: Deploy
) -> None:
    # A run that reaches the patch only after the deploy has no history there to
    # contradict: it takes the new branch, which is what "True for runs that reach
    # it after the patch shipped" means.
    def v2(order: str) -> Generator[Any, Any, str]:
        yield Step("a", bump, "a")
        yield GO
        if (yield Patch("add-d")):
            yield Step("d", bump, "d")
        yield Step("c", bump, "c")
        return "late"

    with engine_on(target) as eng:
        eng.start(insert_v1, "o-1", workflow_id="late")
        wait_waiting(eng, "late", 1)
    deploy("ver-insert", v2)
    with engine_on(target) as eng:
        eng.send("late", 1, topic="go")
        assert eng.handle("late").result(timeout=20) == "late"
        assert [k for k, _ in kinds(eng, "late")] == ["step", "recv", "patch", "step", "step"]
    assert CALLS == {"a": 1, "d": 1, "c": 1}


@workflow(name="ver-twice")
def twice_v1(order: str) -> Generator[Any, Any, str]:
    yield Step("a", bump, "a")
    yield GO
    yield Step("c", bump, "c")
    return "old"


def twice_v2(order: str) -> Generator[Any, Any, str]:
    # One change guarded at two sites, the second past where a run in flight waits.
    first = "a2" if (yield Patch("two-sites")) else "a"
    yield Step(first, bump, first)
    yield GO
    if (yield Patch("two-sites")):
        yield Step("c2", bump, "c2")
        return f"new after {first}"
    yield Step("c", bump, "c")
    return f"old after {first}"


def test_a_run_in_flight_takes_the_old_branch_at_every_site_of_a_patch(
    target: Any, deploy: Deploy
) -> None:
    with engine_on(target) as eng:
        eng.start(twice_v1, "o-1", workflow_id="in-flight")
        wait_waiting(eng, "in-flight", 1)
    v2 = deploy("ver-twice", twice_v2)
    with engine_on(target) as eng:
        eng.start(v2, "o-2", workflow_id="fresh")
        eng.send("in-flight", 1, topic="go")
        eng.send("fresh", 1, topic="go")
        # The first site answered False (its log holds `a` there); the second, past the
        # log, answers False too, instead of recording a marker and mixing the branches.
        assert eng.handle("in-flight").result(timeout=20) == "old after a"
        assert kinds(eng, "in-flight") == [("step", "a"), ("recv", "go"), ("step", "c")]
        assert eng.handle("fresh").result(timeout=20) == "new after a2"
        assert [k for k, _ in kinds(eng, "fresh")] == [
            "patch",
            "step",
            "recv",
            "patch",
            "step",
        ]
    with engine_on(target, recover=False) as eng:
        # Replay of the finished logs, from nothing, agrees with what the runs did.
        for run_id in ("in-flight", "fresh"):
            log = eng.export_log(run_id)
            assert replaykit.testing.replay(v2, log).finished
    assert CALLS == {"a": 1, "c": 1, "a2": 1, "c2": 1}


# -- Patch: removing a step, then DeprecatePatch ---------------------------------------------


@workflow(name="ver-remove")
def remove_v1(order: str) -> Generator[Any, Any, str]:
    yield Step("a", bump, "a")
    yield Step("b", bump, "b")
    yield GO
    yield Step("c", bump, "c")
    return "done"


def remove_v2(order: str) -> Generator[Any, Any, str]:
    yield Step("a", bump, "a")
    if not (yield Patch("drop-b")):
        yield Step("b", bump, "b")  # only runs recorded before the patch still do this
    yield GO
    yield Step("c", bump, "c")
    return "done"


def remove_v3(order: str) -> Generator[Any, Any, str]:
    # Every run recorded before "drop-b" has finished: the old branch is gone.
    yield Step("a", bump, "a")
    yield DeprecatePatch("drop-b")
    yield GO
    yield Step("c", bump, "c")
    return "done"


def test_patch_removing_a_step_then_deprecating_it(target: Any, deploy: Deploy) -> None:
    with engine_on(target) as eng:
        eng.start(remove_v1, "1", workflow_id="v1-run")
        eng.start(remove_v1, "2", workflow_id="straggler")
        wait_waiting(eng, "v1-run", 2)
        wait_waiting(eng, "straggler", 2)
    assert CALLS == {"a": 2, "b": 2}

    v2 = deploy("ver-remove", remove_v2)
    with engine_on(target) as eng:
        eng.start(v2, "3", workflow_id="v2-run")
        wait_waiting(eng, "v2-run", 2)
        eng.send("v1-run", 1, topic="go")
        assert eng.handle("v1-run").result(timeout=20) == "done"
        assert kinds(eng, "v1-run") == [("step", "a"), ("step", "b"), ("recv", "go"), ("step", "c")]
        assert kinds(eng, "v2-run")[:2] == [("step", "a"), ("patch", "drop-b")]
    assert CALLS["b"] == 2  # the old run replayed b; the new run skipped it

    v3 = deploy("ver-remove", remove_v3)
    with engine_on(target) as eng:
        # "straggler" was not drained: under v3 it cannot replay, and is parked.
        wait_status(eng, "straggler", Status.PARKED)
        error = eng.handle("straggler").row().error
        assert "position 1" in error and "step 'b'" in error and "Patch" in error
        eng.start(v3, "4", workflow_id="v3-run")
        eng.send("v2-run", 1, topic="go")
        eng.send("v3-run", 1, topic="go")
        assert eng.handle("v2-run").result(timeout=20) == "done"
        assert eng.handle("v3-run").result(timeout=20) == "done"
        # DeprecatePatch consumed v2-run's marker and records nothing for new runs.
        assert kinds(eng, "v2-run") == [
            ("step", "a"),
            ("patch", "drop-b"),
            ("recv", "go"),
            ("step", "c"),
        ]
        assert kinds(eng, "v3-run") == [("step", "a"), ("recv", "go"), ("step", "c")]

    deploy("ver-remove", remove_v2)  # the way out: the code that still knows old runs
    with engine_on(target, recover=False) as eng:
        eng.resume("straggler")
        eng.send("straggler", 1, topic="go")
        assert eng.handle("straggler").result(timeout=20) == "done"
    assert CALLS == {"a": 4, "b": 2, "c": 4}


# -- changing a step's arguments ---------------------------------------------------------------


@workflow(name="ver-args")
def args_v1(order: str) -> Generator[Any, Any, str]:
    yield Step("price", bump, "price", 100)
    yield GO
    return "charged"


def args_v2(order: str) -> Generator[Any, Any, str]:
    yield Step("price", bump, "price", 120)  # same step, new arguments
    yield GO
    return "charged"


def test_changed_step_arguments_replay_unless_strict(target: Any, deploy: Deploy) -> None:
    with engine_on(target, executor_id="lenient") as eng:
        eng.start(args_v1, "1", workflow_id="lenient-run")
        wait_waiting(eng, "lenient-run", 1)
    with engine_on(target, executor_id="picky") as eng:
        eng.start(args_v1, "2", workflow_id="picky-run")
        wait_waiting(eng, "picky-run", 1)
    deploy("ver-args", args_v2)
    with engine_on(target, executor_id="lenient") as eng:
        eng.send("lenient-run", 1, topic="go")
        assert eng.handle("lenient-run").result(timeout=20) == "charged"
    with engine_on(target, executor_id="picky", strict=True) as eng:
        wait_status(eng, "picky-run", Status.PARKED)
        error = eng.handle("picky-run").row().error
        assert "different arguments (strict mode)" in error and "position 0" in error
    assert CALLS == {"price": 2}  # recorded once per run, never re-run


# -- renaming a step ---------------------------------------------------------------------------


@workflow(name="ver-rename")
def rename_v1(order: str) -> Generator[Any, Any, str]:
    yield Step("charge", bump, "charge")
    yield GO
    yield Step("ship", bump, "ship")
    return "shipped"


def rename_v2(order: str) -> Generator[Any, Any, str]:
    yield Step("charge-card", bump, "charge")  # renamed without a Patch
    yield GO
    yield Step("ship", bump, "ship")
    return "shipped"


def rename_v3(order: str) -> Generator[Any, Any, str]:
    # The rename done right: runs recorded before it keep the old name.
    name = "charge-card" if (yield Patch("rename-charge")) else "charge"
    yield Step(name, bump, "charge")
    yield GO
    yield Step("ship", bump, "ship")
    return "shipped"


def test_renaming_a_step_without_patch_parks_the_run(target: Any, deploy: Deploy) -> None:
    with engine_on(target) as eng:
        eng.start(rename_v1, "1", workflow_id="renamed")
        wait_waiting(eng, "renamed", 1)
    deploy("ver-rename", rename_v2)
    with engine_on(target) as eng:
        wait_status(eng, "renamed", Status.PARKED)
        error = eng.handle("renamed").row().error
        assert "position 0" in error
        assert "'charge-card'" in error and "step 'charge'" in error
        assert "test_versioning.py:" in error  # both call sites are named
        assert "Patch" in error and "fork" in error
    v3 = deploy("ver-rename", rename_v3)
    with engine_on(target) as eng:
        assert eng.recover() == []  # parked runs wait for an operator
        eng.resume("renamed")
        eng.send("renamed", 1, topic="go")
        assert eng.handle("renamed").result(timeout=20) == "shipped"
        eng.start(v3, "2", workflow_id="renamed-new")
        eng.send("renamed-new", 1, topic="go")
        assert eng.handle("renamed-new").result(timeout=20) == "shipped"
        assert kinds(eng, "renamed")[0] == ("step", "charge")
        assert kinds(eng, "renamed-new")[:2] == [
            ("patch", "rename-charge"),
            ("step", "charge-card"),
        ]
    assert CALLS == {"charge": 2, "ship": 2}


# -- fork: re-run a fixed version of a failed run ---------------------------------------------


def broken_ship(order: str) -> str:
    bump("ship-broken")
    raise ValueError(f"no address for {order}")


def fixed_ship(order: str) -> str:
    bump("ship-fixed")
    return f"parcel-{order}"


@workflow(name="ver-fork")
def fork_v1(order: str) -> Generator[Any, Any, str]:
    yield Step("charge", bump, "charge")
    yield Step("pack", bump, "pack")
    parcel: str = yield Step("ship", broken_ship, order)
    return parcel


def fork_v2(order: str) -> Generator[Any, Any, str]:
    yield Step("charge", bump, "charge")
    yield Step("pack", bump, "pack")
    parcel: str = yield Step("ship", fixed_ship, order)
    return parcel


def test_fork_reruns_a_fixed_version_without_repeating_completed_steps(
    target: Any, deploy: Deploy
) -> None:
    with engine_on(target) as eng:
        with pytest.raises(ValueError, match="no address for o-9"):
            eng.run(fork_v1, "o-9", workflow_id="failed", timeout=20)
        assert eng.handle("failed").status() is Status.ERROR
        failed_steps = eng.steps("failed")
        assert isinstance(failed_steps[2].outcome, Failure)
    deploy("ver-fork", fork_v2)
    with engine_on(target, app_version="prod-2") as eng:
        with pytest.raises(ValueError, match=r"positions 0\.\.2"):
            eng.fork("failed", 4)
        handle = eng.fork("failed", 2, workflow_id="failed-fixed")
        assert handle.result(timeout=20) == "parcel-o-9"
        forked = eng.steps("failed-fixed")
        assert [r.name for r in forked] == ["charge", "pack", "ship"]
        assert forked[:2] == failed_steps[:2]  # copied, not re-run
        assert forked[2].outcome == Value("parcel-o-9")
        row = eng.handle("failed-fixed").row()
        assert row.app_version == "prod-2" and row.executor_id == "local"
        assert eng.handle("failed").status() is Status.ERROR  # the source is left alone
        with pytest.raises(ValueError, match="taken"):
            eng.fork("failed", 2, workflow_id="failed-fixed")
        with pytest.raises(WorkflowNotFound):
            eng.fork("no-such-run", 0)
    assert CALLS == {"charge": 1, "pack": 1, "ship-broken": 1, "ship-fixed": 1}


def test_a_fork_for_another_version_runs_on_an_engine_of_that_version(
    target: Any, deploy: Deploy
) -> None:
    """Torture report, issue 13, fault 19: the doc said `engine.fork(..., app_version=)`
    ran the fork at once on that engine; an engine never runs another version's code."""
    with engine_on(target) as eng:
        with pytest.raises(ValueError, match="no address for o-7"):
            eng.run(fork_v1, "o-7", workflow_id="failed-7", timeout=20)
        handle = eng.fork("failed-7", 2, workflow_id="fixed-7", app_version="prod-3")
        assert eng.wait_idle(10)
        assert handle.status() is Status.PENDING  # not this engine's version
        assert handle.row().app_version == "prod-3"
    deploy("ver-fork", fork_v2)
    with engine_on(target, app_version="prod-3") as eng:
        assert eng.handle("fixed-7").result(timeout=20) == "parcel-o-7"
    assert CALLS == {"charge": 1, "pack": 1, "ship-broken": 1, "ship-fixed": 1}


# -- resume ------------------------------------------------------------------------------------


def test_resume_continues_a_cancelled_run_from_its_log(target: Any) -> None:
    with engine_on(target) as eng:
        handle = eng.start(insert_v1, "o", workflow_id="stop-me")
        wait_waiting(eng, "stop-me", 1)
        assert eng.terminate("stop-me")
        assert handle.status() is Status.CANCELLED
        eng.send("stop-me", 1, topic="go")  # a cancelled run consumes nothing
        with pytest.raises(AwaitedWorkflowCancelled):
            handle.result(timeout=5)
        assert not eng.terminate("stop-me")  # already cancelled
    with engine_on(target) as eng:
        assert eng.recover() == []  # a cancelled run is not recovered
        eng.resume("stop-me")
        assert eng.handle("stop-me").result(timeout=20) == "without-b"
        eng.resume("stop-me")  # a finished run: nothing to do
        assert eng.handle("stop-me").status() is Status.SUCCESS
        with pytest.raises(WorkflowNotFound):
            eng.resume("no-such-run")
    assert CALLS == {"a": 1, "c": 1}


# -- inspection, deletion and retention --------------------------------------------------------


@workflow(name="ver-child")
def child_wf(n: int) -> Generator[Any, Any, int]:
    yield GO
    return n


@workflow(name="ver-parent")
def parent_wf(n: int) -> Generator[Any, Any, str]:
    yield Step("prepare", bump, "prepare")
    child: str = yield Start(child_wf, n)
    yield GO
    return child


def _yield_line(record_site: str) -> str:
    path, _, line = record_site.rpartition(":")
    return linecache.getline(path, int(line)) if path.endswith(".py") else ""


def test_list_steps_delete_and_garbage_collect(target: Any) -> None:
    with engine_on(target, executor_id="insp", app_version="iv") as eng:
        with pytest.raises(ValueError):
            eng.run(fork_v1, "x", workflow_id="insp-failed", timeout=20)
        parent = eng.start(parent_wf, 7, workflow_id="insp-parent")
        wait_waiting(eng, "insp-parent", 2)
        wait_waiting(eng, "insp-parent:1", 0)
        late = eng.start(insert_v1, "z", workflow_id="insp-late")
        wait_waiting(eng, "insp-late", 1)

        ids = [r.workflow_id for r in eng.list_workflows()]
        assert ids == ["insp-failed", "insp-parent", "insp-parent:1", "insp-late"]
        assert [r.workflow_id for r in eng.list_workflows(status=Status.ERROR)] == ["insp-failed"]
        assert [r.workflow_id for r in eng.list_workflows(name="ver-parent")] == ["insp-parent"]
        assert [r.workflow_id for r in eng.list_workflows(parent_id="insp-parent")] == [
            "insp-parent:1"
        ]
        assert len(eng.list_workflows(version="iv", executor_id="insp")) == 4
        assert eng.list_workflows(executor_id="someone-else") == []
        assert [r.workflow_id for r in eng.list_workflows(limit=2, offset=1)] == [
            "insp-parent",
            "insp-parent:1",
        ]
        late_row = late.row()
        assert late_row.created_at is not None
        assert [r.workflow_id for r in eng.list_workflows(since=late_row.created_at)] == [
            "insp-late"
        ]
        assert "insp-late" not in [
            r.workflow_id for r in eng.list_workflows(until=late_row.created_at)
        ]

        steps = eng.steps("insp-failed")
        assert [(r.position, r.kind, r.name) for r in steps] == [
            (0, "step", "charge"),
            (1, "step", "pack"),
            (2, "step", "ship"),
        ]
        for record in steps:
            assert record.started_at is not None and record.completed_at is not None
            assert record.started_at <= record.completed_at
        assert isinstance(steps[0].outcome, Value) and isinstance(steps[2].outcome, Failure)
        assert steps[2].outcome.error.qualname == "ValueError"
        # The call site is this file's line that yields the command.
        assert 'Step("ship", broken_ship' in _yield_line(steps[2].call_site)
        assert eng.steps("insp-parent")[2].is_pending
        with pytest.raises(WorkflowNotFound):
            eng.steps("no-such-run")

        # delete: a running parent is cancelled first; children stay unless asked.
        assert eng.delete("insp-parent", children=False)
        assert eng.store.get_workflow("insp-parent") is None
        assert eng.handle("insp-parent:1").status() is Status.PENDING
        assert not eng.delete("insp-parent")  # already gone
        parent2 = eng.start(parent_wf, 8, workflow_id="insp-parent2")
        wait_waiting(eng, "insp-parent2:1", 0)
        assert eng.delete("insp-parent2", children=True)
        assert eng.store.get_workflow("insp-parent2:1") is None
        del parent, parent2

        # Retention: finished runs older than the cutoff go; running ones stay.
        cutoff = late_row.created_at
        assert eng.garbage_collect(older_than=cutoff) == 1  # insp-failed
        assert eng.store.get_workflow("insp-failed") is None
        assert eng.handle("insp-parent:1").status() is Status.PENDING
        assert eng.garbage_collect(older_than=timedelta(days=1)) == 0  # nothing that old
        assert eng.garbage_collect(older_than=cutoff, keep_running=False) == 1  # the child
        assert [r.workflow_id for r in eng.list_workflows()] == ["insp-late"]
        assert eng.garbage_collect(older_than=timedelta(0), keep_running=False) == 1
        assert eng.list_workflows() == []


# -- resuming onto a version moves the whole unfinished family ---------------------------------


@workflow(name="ver-family-leaf")
def family_leaf(tag: str) -> Generator[Any, Any, str]:
    message = yield GO
    return f"{tag}:{message}"


@workflow(name="ver-family-middle")
def family_middle(base: str) -> Generator[Any, Any, str]:
    below = yield Call(family_leaf, "leaf", workflow_id=f"{base}-leaf")
    return f"middle({below})"


@workflow(name="ver-family-parent")
def family_parent(base: str, generation: int = 0) -> Generator[Any, Any, str]:
    if generation == 0:
        # A child of an earlier generation: it names the live id as its parent, and
        # outlives the generation that started it ("abandon": the default stops it).
        yield Start(family_leaf, "early", workflow_id=f"{base}-early", parent_close="abandon")
        yield ContinueAsNew(base, 1)
    middle = yield Call(family_middle, base, workflow_id=f"{base}-middle")
    early = yield Wait(f"{base}-early")
    return f"{middle}+{early}"


FAMILY = ("-middle", "-leaf", "-early")


def _strand_a_family(target: Any, base: str) -> None:
    """Runs a family under version v1 until every member waits, then stops (a crash)."""
    with engine_on(target, app_version="v1", executor_id="fam") as old:
        old.start(family_parent, base, workflow_id=base)
        wait_waiting(old, f"{base}-leaf", 0)
        wait_waiting(old, f"{base}-early", 0)
        wait_for(lambda: old.handle(base).row().generation == 1, "the parent to continue")


def _finish_the_family(eng: Engine, base: str) -> None:
    for leaf in ("-leaf", "-early"):
        eng.send(f"{base}{leaf}", "ok", topic="go")
    assert eng.handle(base).result(timeout=30) == "middle(leaf:ok)+early:ok"


def test_resume_onto_a_version_moves_the_unfinished_family(
    target: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from replaykit import Client

    _strand_a_family(target, "fam-api")
    with caplog.at_level("WARNING", logger="replaykit"):
        new = engine_on(target, app_version="v2", executor_id="fam")
    with new:
        # The launch warning names the runs that wait and the resume that moves them.
        warned = [r.getMessage() for r in caplog.records if "wait under other" in r.getMessage()]
        assert warned and "4 PENDING run(s)" in warned[0], warned
        assert "--app-version 'v2'" in warned[0] or "--app-version v2" in warned[0], warned
        client = Client(new.store, app_version="v2", executor_id="fam")
        handle = client.resume("fam-api", app_version="v2")
        # The whole family moved with the parent, parents before children, and says so.
        assert handle.moved == ("fam-api-early", "fam-api-middle", "fam-api-leaf")
        assert handle.resumed == ("fam-api", *handle.moved)
        for member in ("fam-api", *(f"fam-api{m}" for m in FAMILY)):
            row = new.handle(member).row()
            assert (row.app_version, row.status, row.executor_id) == ("v2", Status.PENDING, "fam")
        # The archived generation is finished history: it stays as it was.
        assert new.handle("fam-api#0").row().app_version == "v1"
        _finish_the_family(new, "fam-api")
        # Once moved, a resume onto the same version moves nothing more.
        assert client.resume("fam-api", app_version="v2").moved == ()


def test_the_cli_resume_moves_the_family_and_prints_what_it_moved(store_url: str) -> None:
    if store_url.startswith("memory"):
        pytest.skip("the CLI opens its own store: a memory store is not shared with it")
    from click.testing import CliRunner

    from replaykit.cli import cli

    _strand_a_family(store_url, "fam-cli")
    done = CliRunner().invoke(
        cli, ["workflows", "resume", "fam-cli", "--url", store_url, "--app-version", "v2"]
    )
    assert done.exit_code == 0, done.output
    assert "Moved onto version 'v2' with it" in done.output, done.output
    assert "fam-cli-early, fam-cli-middle, fam-cli-leaf." in done.output, done.output
    with engine_on(store_url, app_version="v2", executor_id="fam") as new:
        _finish_the_family(new, "fam-cli")


def test_move_family_is_one_store_call_that_leaves_other_versions_runs_alone(
    target: Any,
) -> None:
    """A member already on the version, and runs outside the family, are not touched."""
    _strand_a_family(target, "fam-store")
    with engine_on(target, app_version="v2", executor_id="other", recover=False) as eng:
        store = eng.store
        eng.start(family_leaf, "outsider", workflow_id="fam-outsider")
        assert store.set_status("fam-store-leaf", Status.PENDING, app_version="v2")
        moved = store.move_family("fam-store", app_version="v2", executor_id="new-owner")
        assert moved == ["fam-store", "fam-store-early", "fam-store-middle"]
        assert eng.handle("fam-store-leaf").row().executor_id == "fam"  # it was on v2
        assert eng.handle("fam-outsider").row().executor_id == "other"
        assert store.move_family("fam-store", app_version="v2") == []
        with pytest.raises(WorkflowNotFound):
            store.move_family("no-such-run", app_version="v2")


def test_the_launch_warnings_engine_resume_moves_the_family(target: Any) -> None:
    """The launch warning's advice, `engine.resume(id)` on the new engine, as written."""
    _strand_a_family(target, "fam-eng")
    with engine_on(target, app_version="v2", executor_id="fam") as new:
        assert new.recover() == []  # nothing of v2 to recover: the family waits under v1
        new.resume("fam-eng")
        for member in ("fam-eng", *(f"fam-eng{m}" for m in FAMILY)):
            assert new.handle(member).row().app_version == "v2"
        _finish_the_family(new, "fam-eng")
