"""Stranded runs are loud: runs waiting under another application version are told of.

An engine recovers and claims only its own version's runs. At launch it warns,
once, when PENDING runs of its executor id wait under other versions; and
`list_workflows(stranded=True)` (`admin.stranded_runs`, for the CLI) lists them.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from replaykit import Engine, Queue, Recv, Status, workflow
from replaykit.client import Client
from replaykit.runtime import admin


@workflow(name="stranded-wait")
def waiter(tag: str):
    message = yield Recv()
    return f"{tag}:{message}"


def leave_pending(shared: Any, version: str, ids: list[str]) -> None:
    """Runs of executor 'local' left PENDING by an engine of `version` that stopped."""
    with Engine(shared, app_version=version, poll_interval=0.05) as old:
        for workflow_id in ids:
            old.start(waiter, workflow_id, workflow_id=workflow_id)
        old.wait_idle(timeout=10)


def test_launch_warns_once_naming_counts_versions_and_the_fix(
    shared: Any, caplog: pytest.LogCaptureFixture
) -> None:
    leave_pending(shared, "v1", ["s-1", "s-2"])
    leave_pending(shared, "v2", ["s-3"])  # (its launch warned of v1's)
    caplog.clear()
    with (
        caplog.at_level(logging.WARNING, logger="replaykit.engine"),
        Engine(shared, app_version="v3", poll_interval=0.05) as engine,
    ):
        engine.recover()  # a later recovery says nothing more
    warnings = [
        r.getMessage() for r in caplog.records if "other application version" in r.getMessage()
    ]
    assert len(warnings) == 1
    text = warnings[0]
    assert "3 PENDING run(s) of executor id 'local'" in text
    assert "'v1' (2), 'v2' (1)" in text and "runs version 'v3'" in text
    assert "Engine(app_version=" in text and "--app-version v3" in text


def test_no_warning_when_every_run_is_of_this_version(
    shared: Any, caplog: pytest.LogCaptureFixture
) -> None:
    leave_pending(shared, "v1", ["t-1"])
    with (
        caplog.at_level(logging.WARNING, logger="replaykit.engine"),
        Engine(shared, app_version="v1", poll_interval=0.05) as engine,
    ):
        engine.send("t-1", "hi")
        assert engine.handle("t-1").result(timeout=20) == "t-1:hi"
    assert "other application version" not in caplog.text


def test_list_stranded_lists_pending_and_enqueued_runs_of_other_versions(shared: Any) -> None:
    leave_pending(shared, "v1", ["u-1"])
    Queue("stranded-q")
    with Client(shared, app_version="v1") as client:
        client.enqueue("stranded-q", "stranded-wait", "u-2", workflow_id="u-2")
    with Engine(shared, app_version="v2", queues=[], poll_interval=0.05) as engine:
        engine.start(waiter, "u-3", workflow_id="u-3")  # this version's: not stranded
        stranded = engine.list_workflows(stranded=True)
        assert [(r.workflow_id, r.status, r.app_version) for r in stranded] == [
            ("u-1", Status.PENDING, "v1"),
            ("u-2", Status.ENQUEUED, "v1"),
        ]
        assert [r.workflow_id for r in engine.list_workflows(stranded=True, limit=1)] == ["u-1"]
        # The function the CLI calls, for any version and executor.
        rows = admin.stranded_runs(engine.store, app_version="v1")
        assert [r.workflow_id for r in rows] == ["u-3"]
        with pytest.raises(ValueError, match="no status= or version="):
            engine.list_workflows(stranded=True, status="PENDING")
        # A resume restamps a stranded run onto this engine's version and runs it.
        engine.resume("u-1")
        engine.send("u-1", "back")
        assert engine.handle("u-1").result(timeout=20) == "u-1:back"
        assert [r.workflow_id for r in engine.list_workflows(stranded=True)] == ["u-2"]
    with Client(shared, app_version="v2") as client:
        assert [r.workflow_id for r in client.list_workflows(stranded=True)] == ["u-2"]
