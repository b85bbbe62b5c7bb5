"""Cancel, resume and garbage collection as one story.

A cancel that cascades to children marks each with the parent's cancel; a
resume of the parent brings exactly those back, so the resumed parent finishes
instead of failing on a cancelled child; `gc` and `delete` spare runs a live
parent may still wait for; a cancel's reason is kept for `workflows show`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_status
from replaykit import Call, Engine, Queue, Recv, Start, Status, Step, Wait, workflow
from replaykit.runtime import admin


@workflow(name="story-child")
def child(tag: str):
    message = yield Recv("go")
    value = yield Step("child", lambda: f"{tag}:{message}")
    return value


@workflow(name="story-parent")
def parent(tag: str):
    first = yield Call(child, tag + "-a", workflow_id=f"{tag}-child-a")
    return first


@workflow(name="story-two-children")
def two_children(tag: str):
    started = yield Start(child, tag + "-b", workflow_id=f"{tag}-child-b")
    first = yield Call(child, tag + "-a", workflow_id=f"{tag}-child-a")
    second = yield Wait(started)
    return [first, second]


@workflow(name="story-starter")
def starter(tag: str):
    child_id = yield Start(child, tag, workflow_id=f"{tag}-child")
    end = yield Recv("end")
    return f"{child_id}:{end}"


def test_resume_brings_back_the_children_its_cancel_cascaded_to(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        handle = engine.start(parent, "r1", workflow_id="r1")
        wait_status(engine, "r1-child-a", Status.PENDING)
        assert engine.terminate("r1", reason="paused by ops")
        parent_row = engine.handle("r1").row()
        child_row = engine.handle("r1-child-a").row()
        assert parent_row.status is Status.CANCELLED and parent_row.error == "paused by ops"
        assert child_row.status is Status.CANCELLED
        assert child_row.error == "cancelled with its parent 'r1': paused by ops"
        engine.resume("r1")
        assert engine.handle("r1-child-a").status() is Status.PENDING
        engine.send("r1-child-a", "now", topic="go")
        assert handle.result(timeout=20) == "r1-a:now"  # not ERROR on a cancelled child
        assert engine.handle("r1").row().error == ""


def test_resume_leaves_children_cancelled_on_their_own(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        engine.start(two_children, "r2", workflow_id="r2")
        wait_status(engine, "r2-child-a", Status.PENDING)
        engine.terminate("r2-child-b", reason="not this one")
        engine.terminate("r2")
        engine.resume("r2")
        assert engine.handle("r2-child-a").status() is Status.PENDING
        own = engine.handle("r2-child-b").row()
        assert own.status is Status.CANCELLED and own.error == "not this one"


def test_a_cascade_to_a_queued_child_puts_it_back_on_its_queue(shared: Any) -> None:
    Queue("story-q")

    @workflow(name="story-queued-parent", replace=True)
    def queued_parent(tag: str):
        value = yield Call(child, tag, workflow_id=f"{tag}-qchild", queue="story-q")
        return value

    with Engine(shared, queues=[], poll_interval=0.05) as engine:
        engine.start(queued_parent, "r3", workflow_id="r3")
        wait_status(engine, "r3-qchild", Status.ENQUEUED)
        engine.terminate("r3")
        assert engine.handle("r3-qchild").status() is Status.CANCELLED
        resumed = admin.resume_run(
            engine.store, "r3", executor_id=engine.executor_id, app_version=engine.app_version
        )
        assert resumed == ["r3", "r3-qchild"]
        assert engine.handle("r3-qchild").status() is Status.ENQUEUED


def test_gc_and_delete_spare_a_child_that_a_live_parent_waits_for(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        handle = engine.start(starter, "g1", workflow_id="g1")
        wait_status(engine, "g1-child", Status.PENDING)
        engine.send("g1-child", "x", topic="go")
        wait_status(engine, "g1-child", Status.SUCCESS)
        # The parent is PENDING and may still Wait for its finished child: it stays.
        assert engine.garbage_collect(older_than=timedelta(0)) == 0
        with pytest.raises(ValueError, match=r"its parent 'story-starter' \(id 'g1'\) is PENDING"):
            engine.delete("g1-child")
        engine.send("g1", "done", topic="end")
        assert handle.result(timeout=20) == "g1-child:done"
        # The parent finished: both go now.
        assert engine.garbage_collect(older_than=timedelta(0)) == 2
        assert engine.list_workflows() == []


def test_delete_with_children_takes_a_live_parent_and_its_children(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        engine.start(parent, "d1", workflow_id="d1")
        wait_status(engine, "d1-child-a", Status.PENDING)
        assert engine.delete("d1", children=True)
        assert engine.list_workflows() == []


def test_resume_of_an_enqueued_run_starts_it_now_on_this_engine(shared: Any) -> None:
    Queue("story-delayed")
    with Engine(shared, queues=[], poll_interval=0.05) as engine:
        handle = engine.enqueue("story-delayed", child, "e1", workflow_id="e1", delay=3600)
        engine.resume("e1")
        row = handle.row()
        assert row.status is Status.PENDING and row.executor_id == engine.executor_id
        engine.send("e1", "x", topic="go")
        assert handle.result(timeout=20) == "e1:x"


def test_gc_passes_over_spared_runs_to_the_deletable_ones_behind_them(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        engine.start(starter, "g2", workflow_id="g2")
        wait_status(engine, "g2-child", Status.PENDING)
        engine.terminate("g2-child")  # finished, but its parent still runs
        done = engine.start(child, "later", workflow_id="g2-later")
        engine.send("g2-later", "y", topic="go")
        done.result(timeout=20)
        assert engine.garbage_collect(older_than=timedelta(0)) == 1
        assert {r.workflow_id for r in engine.list_workflows()} == {"g2", "g2-child"}
