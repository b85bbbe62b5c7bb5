"""Starting runs, messaging them and operating them from a shell, on SQLite and PostgreSQL.

`workflows start|send|get-event` go through `replaykit.client.Client`;
`cancel|resume` through `replaykit.runtime.admin`, as the engine and the
client do. The application's engine (executor "app", version "v1", draining
queue "cli-approvals") runs what the command starts.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import error_line, ok, rk
from replaykit import Engine, Queue, Recv, SetEvent, Status, workflow
from replaykit.stores import open_store
from replaykit.stores.base import WorkflowRow

QUEUE = "cli-approvals"


@workflow(name="cli-approve")
def approve_wf(doc: str, *, reviewer: str = "anyone") -> Generator[Any, Any, str]:
    yield SetEvent("stage", {"waiting": doc, "reviewer": reviewer})
    decision = yield Recv("decision")
    yield SetEvent("stage", {"decided": decision})
    return f"{doc}: {decision}"


@pytest.fixture
def url(created_url: str) -> str:
    """The store each test runs on: SQLite and PostgreSQL, tables made."""
    return created_url


def app_engine(url: str, **options: Any) -> Engine:
    Queue(QUEUE)  # registered here: other tests' fixtures restore the queue registry
    return Engine(
        url, executor_id="app", app_version="v1", queues=[QUEUE], poll_interval=0.05, **options
    )


def row_of(url: str, workflow_id: str) -> WorkflowRow:
    store = open_store(url)
    try:
        row = store.get_workflow(workflow_id)
    finally:
        store.close()
    assert row is not None
    return row


def test_a_run_started_sent_to_and_read_from_the_shell(url: str) -> None:
    start = ("workflows", "start", "cli-approve", '["doc-1"]', "--url", url)
    out = ok(rk(*start, "--kwargs", '{"reviewer": "ann"}', "--queue", QUEUE,
                "--app-version", "v1", "--id", "doc-1"))  # fmt: skip
    assert out.startswith("doc-1 started: 'cli-approve' ENQUEUED on queue 'cli-approvals'")
    row = row_of(url, "doc-1")
    assert (row.status, row.queue, row.app_version) == (Status.ENQUEUED, QUEUE, "v1")
    assert row.inputs == {"args": ["doc-1"], "kwargs": {"reviewer": "ann"}}
    again = rk(*start, "--kwargs", '{"reviewer": "ann"}', "--queue", QUEUE,
               "--app-version", "v1", "--id", "doc-1", "--json")  # fmt: skip
    assert json.loads(ok(again))["created"] is False  # the same start is the same run
    conflict = rk("workflows", "start", "cli-approve", '["doc-2"]', "--queue", QUEUE,
                  "--app-version", "v1", "--id", "doc-1", "--url", url)  # fmt: skip
    assert "other arguments" in error_line(conflict, 1)

    with app_engine(url) as engine:
        got = rk("workflows", "get-event", "doc-1", "stage", "--timeout", "20s", "--url", url)
        assert json.loads(ok(got)) == {"waiting": "doc-1", "reviewer": "ann"}
        send = ("workflows", "send", "doc-1", '"approved"', "--topic", "decision", "--url", url)
        assert "sent to 'doc-1' (cli-approve) on topic 'decision'" in ok(rk(*send, "--key", "k1"))
        assert "not sent again: key 'k1' was used before" in ok(rk(*send, "--key", "k1"))
        assert engine.handle("doc-1").result(timeout=20) == "doc-1: approved"
    decided = rk("workflows", "get-event", "doc-1", "stage", "--url", url)
    assert json.loads(ok(decided)) == {"decided": "approved"}
    unread = ok(rk(*send, "--topic", "decision"))
    assert "the run is SUCCESS: nothing will read it" in unread


def test_a_start_for_an_executor_is_run_by_that_engine(url: str) -> None:
    out = ok(rk("workflows", "start", "cli-approve", '["doc-9"]', "--executor", "app",
                "--app-version", "v1", "--id", "doc-9", "--url", url))  # fmt: skip
    assert "PENDING" in out and "executor id 'app'" in out
    with app_engine(url) as engine:
        ok(rk("workflows", "send", "doc-9", '"no"', "--topic", "decision", "--url", url))
        assert engine.handle("doc-9").result(timeout=20) == "doc-9: no"


def test_start_send_and_get_event_refuse_bad_input(url: str) -> None:
    start = ("workflows", "start", "cli-approve", "--url", url)
    cases: list[tuple[tuple[str, ...], int, str]] = [
        ((*start, '["a"', "--queue", QUEUE, "--app-version", "v1"), 2, "ARGS_JSON is not JSON"),
        ((*start, '{"a": 1}', "--queue", QUEUE, "--app-version", "v1"), 2, "a JSON array"),
        ((*start, "[]", "--kwargs", "[1]", "--queue", QUEUE, "--app-version", "v1"), 2,
         "--kwargs must be a JSON object"),
        ((*start, '["a"]', "--queue", QUEUE), 2, "--app-version is required"),
        ((*start, '["a"]', "--app-version", "v1"), 2, "no engine would run it"),
        ((*start, '["a"]', "--executor", "app", "--app-version", "v1", "--delay", "1h"), 2,
         "needs --queue"),
        ((*start, '["a"]', "--queue", QUEUE, "--app-version", "v1", "--delay", "soon"), 2,
         "not a duration"),
        ((*start, '["a"]', "--executor", "app", "--app-version", "v1", "--partition-key", "t"),
         2, "--partition-key names a partition of a queue: it needs --queue"),
        ((*start, '["a"]', "--queue", QUEUE, "--app-version", "v1", "--partition-key", ""), 2,
         "--partition-key needs a key"),
        (("workflows", "send", "nope", "1", "--topic", "t", "--url", url), 1,
         "no workflow run with id 'nope'"),
        (("workflows", "send", "nope", "{bad", "--topic", "t", "--url", url), 2,
         "MESSAGE_JSON is not JSON"),
        (("workflows", "get-event", "nope", "k", "--url", url), 1,
         "no workflow run with id 'nope'"),
    ]  # fmt: skip
    for args, code, expected in cases:
        assert expected in error_line(rk(*args), code), args
    assert rk("workflows", "send", "x", "1", "--url", url).exit_code == 2  # --topic is required

    ok(rk(*start, '["d"]', "--queue", QUEUE, "--app-version", "v1", "--id", "d",
          "--delay", "1h30m"))  # fmt: skip
    keyed = ok(rk(*start, '["k"]', "--queue", QUEUE, "--app-version", "v1", "--id", "k",
                  "--partition-key", "tenant-7"))  # fmt: skip
    assert "ENQUEUED on queue 'cli-approvals' (partition 'tenant-7')" in keyed
    assert row_of(url, "k").partition_key == "tenant-7"
    wake = row_of(url, "d").wake_at
    assert wake is not None
    expected = datetime.now(UTC) + timedelta(hours=1, minutes=30)
    assert abs((wake - expected).total_seconds()) < 60
    unset = error_line(
        rk("workflows", "get-event", "d", "stage", "--url", url, "--timeout", "0.2"), 1
    )
    assert "has set no event 'stage' after waiting" in unset


def test_cancel_with_a_reason_then_resume_brings_the_children_back(url: str) -> None:
    store = open_store(url)
    try:
        for workflow_id, parent in (("parent", None), ("child", "parent"), ("grandchild", "child")):
            store.create_workflow(
                WorkflowRow(workflow_id, "cli-approve", Status.PENDING, executor_id="app",
                            app_version="v1", parent_id=parent,
                            inputs={"args": [workflow_id], "kwargs": {}})
            )  # fmt: skip
    finally:
        store.close()
    out = ok(rk("workflows", "terminate", "parent", "--reason", "wrong customer", "--url", url))
    assert "and the children this stop reached with it" in out
    assert "reason    wrong customer" in ok(rk("workflows", "show", "parent", "--url", url))
    assert row_of(url, "grandchild").status is Status.CANCELLED

    # gc never takes a run whose parent is unfinished: the parent may wait for it.
    store = open_store(url)
    try:
        store.create_workflow(WorkflowRow("done-child", "x", Status.PENDING, parent_id="parent"))
        store.finish_workflow("done-child", Status.CANCELLED, None)
    finally:
        store.close()
    ok(rk("workflows", "resume", "parent", "--url", url))  # the parent is live again
    dry = ok(rk("workflows", "gc", "--older-than", "0s", "--dry-run", "--url", url))
    assert "0 finished runs" in dry and "1 kept: their parents are unfinished" in dry

    resumed = [row_of(url, i).status for i in ("parent", "child", "grandchild")]
    assert resumed == [Status.PENDING] * 3
    ok(rk("workflows", "terminate", "parent", "--url", url))
    out = ok(rk("workflows", "resume", "parent", "--url", url))
    assert "With it, the children its cancel reached: child, grandchild." in out


def test_resume_of_an_enqueued_run_starts_it_on_the_named_engine(url: str) -> None:
    ok(rk("workflows", "start", "cli-approve", '["later"]', "--queue", QUEUE, "--app-version",
          "v1", "--id", "later", "--delay", "2d", "--url", url))  # fmt: skip
    refused = error_line(rk("workflows", "resume", "later", "--url", url), 1)
    assert "ENQUEUED on queue 'cli-approvals'" in refused and "--executor ID" in refused
    out = ok(rk("workflows", "resume", "later", "--executor", "app", "--url", url))
    assert "started now" in out
    row = row_of(url, "later")
    assert (row.status, row.executor_id) == (Status.PENDING, "app")
    with app_engine(url) as engine:
        ok(rk("workflows", "send", "later", '"ok"', "--topic", "decision", "--url", url))
        assert engine.handle("later").result(timeout=20) == "later: ok"


def test_keyed_starts_from_the_shell(url: str) -> None:
    start = ("workflows", "start", "cli-approve", "--url", url, "--app-version", "v1")
    cases = [
        ((*start, '["a"]', "--concurrency-key", "k", "--queue", QUEUE), "it takes no --queue"),
        ((*start, '["a"]', "--concurrency-key", ""), "--concurrency-key needs a key"),
        ((*start, '["a"]', "--executor", "app", "--concurrency-limit", "2"),
         "--concurrency-limit limits the runs of a key"),
        ((*start, '["a"]', "--executor", "app", "--overlap", "skip"),
         "--overlap skip applies to the live runs of a key"),
        ((*start, '["a"]', "--concurrency-key", "k", "--concurrency-limit", "0"),
         "--concurrency-limit"),
        ((*start, '["a"]', "--concurrency-key", "k", "--overlap", "buffer"), "--overlap"),
    ]  # fmt: skip
    for args, expected in cases:
        assert expected in error_line(rk(*args), 2), args
    assert row_of_or_none(url, "a") is None
    first = ok(
        rk(*start, '["k1"]', "--id", "k1", "--concurrency-key", "report", "--overlap", "skip")
    )
    assert "k1 started: 'cli-approve' ENQUEUED on queue 'replaykit.concurrency:1'" in first
    assert "(partition 'report')" in first
    again = ok(rk(*start, '["k2"]', "--concurrency-key", "report", "--overlap", "skip"))
    assert again.startswith("k1 not started again (overlap=skip): the key's live run is")
    answer = json.loads(
        ok(rk(*start, '["k3"]', "--concurrency-key", "report", "--overlap", "skip", "--json"))
    )
    assert (answer["workflow_id"], answer["created"]) == ("k1", False)
    row = row_of(url, "k1")
    assert (row.queue, row.partition_key, row.status) == (
        "replaykit.concurrency:1",
        "report",
        Status.ENQUEUED,
    )


def row_of_or_none(url: str, workflow_id: str) -> WorkflowRow | None:
    store = open_store(url)
    try:
        return store.get_workflow(workflow_id)
    finally:
        store.close()
