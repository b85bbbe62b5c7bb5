"""Why a run waits, and which versions engines run: `workflows show`, `WorkflowTimeout`,
`workflows versions`, `start --app-version latest` and a start no engine may run.

On SQLite files and PostgreSQL schemas. The running engines are real engines
(they beat their heartbeats into the store); the command and the client only
read what they wrote.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import error_line, ok, rk, wait_for
from replaykit import Engine, Queue, Recv, Step, workflow
from replaykit._waiting import LiveEngine, live_engines, why_waiting
from replaykit.cli import cli
from replaykit.client import Client
from replaykit.errors import UnknownWorkflowError, WorkflowTimeout
from replaykit.log import Status
from replaykit.stores import open_store
from replaykit.stores.base import WorkflowRow


def echo(value: Any) -> Any:
    return value


@workflow(name="cli-wait-echo")
def echo_wf(value: Any) -> Generator[Any, Any, Any]:
    got = yield Step("echo", echo, value)
    return got


@workflow(name="cli-wait-recv")
def recv_wf() -> Generator[Any, Any, Any]:
    return (yield Recv("go"))


# Engines with queues=None listen to every declared queue: this module's starts use it.
QUEUE = Queue("cli-wait-q")


@pytest.fixture
def url(created_url: str) -> str:
    """The store each test runs on: SQLite and PostgreSQL, tables made."""
    return created_url


def engine(url: str, executor_id: str, app_version: str, **options: Any) -> Engine:
    return Engine(
        url, executor_id=executor_id, app_version=app_version, poll_interval=0.05, **options
    )


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def field(out: str, label: str) -> str:
    """The value of `show`'s `label  value` line (piped: one line)."""
    for line in out.splitlines():
        if line.startswith(label + " "):
            return line[len(label) :].strip()
    raise AssertionError(f"no {label!r} line in:\n{out}")


# -- why a PENDING run waits --------------------------------------------------------------------


def test_show_and_workflow_timeout_say_a_run_waits_for_an_engine_of_its_version(url: str) -> None:
    with engine(url, "web-1", "v2"), Client(url, app_version="v1", executor_id="web-1") as client:
        handle = client.start("cli-wait-echo", 1, workflow_id="old-1")
        out = ok(rk("workflows", "show", "old-1", "--url", url))
        why = field(out, "waiting")
        assert "waits for an engine of version 'v1'" in why
        assert "engines running: version 'v2' (web-1)" in why
        assert "workflows resume old-1 --app-version V" in why
        shown = json.loads(ok(rk("workflows", "show", "old-1", "--url", url, "--json")))
        assert shown["workflow"]["waiting"] == why
        with pytest.raises(WorkflowTimeout) as timed_out:
            handle.result(timeout=0.05)
        message = str(timed_out.value)
        assert "'old-1'" in message and "still PENDING after 0.05s" in message
        assert "waits for an engine of version 'v1'; engines running: version 'v2'" in message


def test_show_says_the_engine_of_the_version_cannot_run_an_unregistered_workflow(
    url: str,
) -> None:
    with engine(url, "web-1", "v1"), Client(url, app_version="v1", executor_id="web-1") as client:
        client.start("cli-wait-nobody-registered-this", workflow_id="unknown-1")
        wait_for(lambda: bool(client.handle("unknown-1").row().error), "the engine's note")
        why = field(ok(rk("workflows", "show", "unknown-1", "--url", url)), "waiting")
        assert "engine 'web-1' (version 'v1') cannot run workflow" in why
        assert "cli-wait-nobody-registered-this" in why


def test_show_says_a_runs_engine_is_not_running_and_a_live_one_waits_for_nothing(
    url: str,
) -> None:
    with engine(url, "web-1", "v1") as eng:
        with Client(url, app_version="v1", executor_id="web-gone") as client:
            client.start("cli-wait-echo", 1, workflow_id="orphan-1")
        why = field(ok(rk("workflows", "show", "orphan-1", "--url", url)), "waiting")
        assert "executor id 'web-gone' (version 'v1'), which is not running" in why
        assert "Engines of that version running: web-1" in why
        # A run its engine runs, waiting for a message, waits for nothing the store
        # knows of: its timeline says what it waits for.
        eng.start(recv_wf, workflow_id="listening-1")
        wait_for(lambda: bool(eng.steps("listening-1")), "the run to wait")
        out = ok(rk("workflows", "show", "listening-1", "--url", url))
        assert "waiting " not in out and "recv" in out


def test_show_folds_why_a_run_waits_on_a_narrow_terminal(url: str) -> None:
    with engine(url, "web-1", "v2"), Client(url, app_version="v1", executor_id="web-1") as client:
        client.start("cli-wait-echo", 1, workflow_id="old-narrow")
        out = CliRunner().invoke(
            cli,
            ["workflows", "show", "old-narrow", "--url", url],
            env={"FORCE_COLOR": "1", "COLUMNS": "80"},
        )
    lines = ANSI.sub("", ok(out)).splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    start = next(i for i, line in enumerate(lines) if line.startswith("waiting "))
    assert lines[start + 1].startswith(" " * 10)  # folded under its value column
    text = " ".join(" ".join(lines[start:]).split())
    assert "engines running: version 'v2' (web-1)" in text  # folded, not cut
    assert "--app-version V`)" in text


# -- versions, latest, and starts no engine may run -----------------------------------------------


def test_versions_lists_the_live_engines_and_the_unfinished_runs_of_each(url: str) -> None:
    with Client(url, app_version="v0", executor_id="gone") as client:
        client.start("cli-wait-echo", 1, workflow_id="v0-run")
    with engine(url, "web-1", "v1"), engine(url, "worker-1", "v1", queues=[]):
        with Client(url, app_version="v1", executor_id="web-1") as client:
            client.start("cli-wait-recv", workflow_id="v1-run")
        listed = json.loads(ok(rk("workflows", "versions", "--url", url, "--json")))
        table = ok(rk("workflows", "versions", "--url", url))
    by_version = {entry["app_version"]: entry for entry in listed}
    assert set(by_version) == {"v0", "v1"}
    assert [e["executor_id"] for e in by_version["v1"]["engines"]] == ["web-1", "worker-1"]
    assert by_version["v1"]["unfinished"] == 1 and by_version["v1"]["pending"] == 1
    assert by_version["v0"]["engines"] == [] and by_version["v0"]["pending"] == 1
    assert listed[0]["app_version"] == "v1"  # versions with engines first
    rows = {line.split()[0]: line for line in table.splitlines()[1:]}
    assert "web-1, worker-1" in rows["v1"] and "none running" in rows["v0"]


def test_start_app_version_latest_takes_the_running_engines_version(url: str) -> None:
    start = ("workflows", "start", "cli-wait-echo", "[1]", "--url", url, "--executor", "web-1")
    latest = ("--app-version", "latest")
    assert "no engine is running" in error_line(rk(*start, *latest))
    with engine(url, "web-1", "v7"):
        started = json.loads(ok(rk(*start, *latest, "--id", "l-1", "--json")))
        assert started["app_version"] == "v7"
        with engine(url, "web-2", "v8"):
            two = error_line(rk(*start, *latest))
            assert "'v7'" in two and "'v8'" in two and "pass one" in two


def test_a_start_no_running_engine_may_run_warns_and_strict_refuses(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    start = ("workflows", "start", "cli-wait-echo", "[1]", "--url", url, "--queue", QUEUE.name)
    with engine(url, "web-1", "v1"):
        warned = rk(*start, "--app-version", "v9", "--id", "w-1")
        assert warned.exit_code == 0, warned.output
        assert "Warning: start of workflow 'cli-wait-echo' (id 'w-1')" in warned.stderr
        assert "no engine of that version runs (engines running: version 'v1'" in warned.stderr
        refused = error_line(rk(*start, "--app-version", "v9", "--id", "w-2", "--strict"))
        assert "refused (strict)" in refused
        assert open_store(url).get_workflow("w-2") is None  # nothing was written
        quiet = rk(*start, "--app-version", "v1", "--id", "w-3", "--strict")
        assert quiet.exit_code == 0 and "Warning" not in quiet.stderr

        # A name the engine of the version has not registered: the client warns too,
        # from the names the engine records with its heartbeat (no earlier run needed).
        with Client(url, app_version="v1", executor_id="web-1") as client:
            with caplog.at_level(logging.WARNING, logger="replaykit.client"):
                client.start("cli-wait-unregistered", workflow_id="u-2")
            assert (
                "the engine with executor id 'web-1' (version 'v1') has not registered "
                "workflow 'cli-wait-unregistered' (it runs: " in caplog.text
            )
        with Client(url, app_version="v1", executor_id="web-1", strict=True) as client:
            with pytest.raises(UnknownWorkflowError, match="has not registered"):
                client.start("cli-wait-unregistered", workflow_id="u-3")
            assert client.handle("u-2").status() is Status.PENDING
            assert client.store.get_workflow("u-3") is None


def test_every_store_reads_the_heartbeats_of_the_last_30_seconds(store_url: str) -> None:
    store = open_store(store_url)
    try:
        now = datetime.now(UTC)
        store.heartbeat("gone", "v1", now - timedelta(seconds=31))
        store.heartbeat("web-2", "v2", now - timedelta(seconds=29))
        store.heartbeat("web-1", "v2", now)
        found = live_engines(store, now=now)
        assert found is not None
        assert [(e.executor_id, e.app_version) for e in found] == [("web-1", "v2"), ("web-2", "v2")]
        assert all(isinstance(e, LiveEngine) and e.seen_at.tzinfo is not None for e in found)
        row = WorkflowRow("r", "n", Status.PENDING, executor_id="gone", app_version="v1")
        assert "engines running: version 'v2' (web-1, web-2)" in why_waiting(store, row, now=now)
    finally:
        store.close()


# -- what engines record they run: the workflows they registered, the queues they drain -----------


def test_a_start_of_a_name_no_live_engine_registered_warns_though_one_of_its_version_runs(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    start = ("workflows", "start", "cli-wait-nobody-has-this", "[]", "--url", url)
    on_queue = ("--queue", QUEUE.name, "--app-version", "v1")
    with engine(url, "web-1", "v1"):
        warned = rk(*start, *on_queue, "--id", "n-1")
        assert warned.exit_code == 0, warned.output
        text = " ".join(warned.stderr.split())
        assert "Warning: start of workflow 'cli-wait-nobody-has-this' (id 'n-1')" in text
        assert (
            "no live engine of version 'v1' has registered workflow 'cli-wait-nobody-has-this' "
            "(engines running 'v1': web-1; they run: " in text
        )
        # What they do run: the first names, alphabetically, and how many more (a test
        # session registers hundreds, so this module's own may be past the first few).
        assert re.search(r"they run: [\w.-]+(, [\w.-]+)*( and \d+ more)?\)", text), text
        refused = error_line(rk(*start, *on_queue, "--id", "n-2", "--strict"))
        assert "refused (strict): no live engine of version 'v1' has registered" in refused
        assert open_store(url).get_workflow("n-2") is None  # nothing was written
        # The run's page says so at once: queued (no wait for it to look idle), or
        # claimed by the engine, which cannot run it.
        why = field(ok(rk("workflows", "show", "n-1", "--url", url)), "waiting")
        assert re.search(
            r"(no live engine of version 'v1' has|the engine with executor id 'web-1' "
            r"\(version 'v1'\) has not) registered workflow 'cli-wait-nobody-has-this'",
            why,
        ), why
        with (
            Client(url, app_version="v1", strict=True) as client,
            pytest.raises(UnknownWorkflowError, match="cli-wait-nobody-has-this"),
        ):
            client.enqueue(QUEUE.name, "cli-wait-nobody-has-this", workflow_id="n-3")


def test_show_and_start_say_no_live_engine_of_the_version_listens_to_the_queue(url: str) -> None:
    elsewhere = "cli-wait-elsewhere"  # no engine's queue: the client imports no Queue
    start = ("workflows", "start", "cli-wait-echo", "[1]", "--url", url, "--app-version", "v1")
    with engine(url, "web-1", "v1", queues=[QUEUE.name]), engine(url, "web-2", "v2"):
        warned = rk(*start, "--queue", elsewhere, "--id", "q-1")
        assert warned.exit_code == 0, warned.output
        expected = (
            "queue 'cli-wait-elsewhere' has no live engine of version 'v1' listening "
            "(engines of 'v1' listen to: cli-wait-q)"
        )
        assert expected in " ".join(warned.stderr.split())
        assert "refused (strict): " + expected in error_line(
            rk(*start, "--queue", elsewhere, "--id", "q-2", "--strict")
        )
        why = field(ok(rk("workflows", "show", "q-1", "--url", url)), "waiting")
        assert expected in why
        # A queue the engine listens to: nothing stops the run, nothing is said.
        quiet = rk(*start, "--queue", QUEUE.name, "--id", "q-3", "--strict")
        assert quiet.exit_code == 0 and "Warning" not in quiet.stderr, quiet.stderr


def test_versions_lists_what_the_engines_of_each_version_run(url: str) -> None:
    with engine(url, "web-1", "v1", queues=[QUEUE.name]), engine(url, "prod-1", "v1", queues=[]):
        listed = json.loads(ok(rk("workflows", "versions", "--url", url, "--json")))
        table = ok(rk("workflows", "versions", "--url", url))
    engines = {e["executor_id"]: e for e in listed[0]["engines"]}
    assert engines["web-1"]["queues"] == ["cli-wait-q"]
    assert engines["prod-1"]["queues"] == []  # a producer drains none
    for one in engines.values():
        assert {"cli-wait-echo", "cli-wait-recv"} <= set(one["workflows"])
    header, v1 = table.splitlines()[0], table.splitlines()[1]
    assert "WORKFLOWS" in header and "QUEUES" in header
    # The table shows the first names and how many more (the JSON above has them all).
    assert "cli-wait-q" in v1
    assert "cli-wait-echo" in v1 or re.search(r"and \d+ more", v1), v1


def test_engines_of_an_older_replaykit_record_no_names_and_the_old_inference_stays(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(url)
    try:
        now = datetime.now(UTC)
        store.heartbeat("old-1", "v1", now)  # as an engine from before schema version 10
        [beat] = store.read_heartbeats(now - timedelta(seconds=1))  # type: ignore[attr-defined]
        assert beat.registered is None
        store.create_workflow(
            WorkflowRow(
                "late-1",
                "cli-wait-echo",
                Status.ENQUEUED,
                queue="cli-wait-anywhere",
                app_version="v1",
                created_at=now - timedelta(minutes=5),
            )
        )
        why = why_waiting(store, store.get_workflow("late-1"), now=now)  # type: ignore[arg-type]
        assert "none of them may listen to 'cli-wait-anywhere'" in why
        assert "has no live engine" not in why and "has not registered" not in why
        store.create_workflow(
            WorkflowRow(
                "note-1",
                "cli-wait-gone",
                Status.PENDING,
                executor_id="old-1",
                app_version="v1",
                error="engine 'old-1' (version 'v1') cannot run workflow 'cli-wait-gone': ...",
            )
        )
    finally:
        store.close()
    with (
        Client(url, app_version="v1", executor_id="old-1") as client,
        caplog.at_level(logging.WARNING, logger="replaykit.client"),
    ):
        client.start("cli-wait-gone", workflow_id="note-2")
    assert "could not run an earlier run of workflow 'cli-wait-gone' ('note-1')" in caplog.text


def test_every_store_says_from_the_recorded_names_why_a_run_waits(store_url: str) -> None:
    store = open_store(store_url)
    try:
        now = datetime.now(UTC)
        store.heartbeat("web-1", "v1", now, workflows=["pay", "ship"], queues=["orders"])
        store.heartbeat("web-2", "v1", now, workflows=["pay"], queues=[])

        def why(**fields: Any) -> str:
            fields = {"name": "pay", "app_version": "v1", "created_at": now, **fields}
            row = WorkflowRow("r", **fields)
            return why_waiting(store, row, now=now)

        assert why(status=Status.ENQUEUED, queue="emails") == (
            "queue 'emails' has no live engine of version 'v1' listening (engines of 'v1' "
            "listen to: orders); start one with Engine(queues=['emails', ...]) or queues=None "
            "(every declared queue)"
        )
        assert why(status=Status.ENQUEUED, queue="orders") == ""  # claimed in a moment
        assert why(status=Status.PENDING, executor_id="web-2", name="ship").startswith(
            "the engine with executor id 'web-2' (version 'v1') has not registered workflow "
            "'ship' (it runs: pay)"
        )
        assert why(status=Status.ENQUEUED, queue="orders", name="refund").startswith(
            "no live engine of version 'v1' has registered workflow 'refund' (engines running "
            "'v1': web-1, web-2; they run: pay, ship)"
        )
        late = now - timedelta(minutes=2)
        assert "they may be at their limits" in why_waiting(
            store,
            WorkflowRow(
                "r", "pay", Status.ENQUEUED, queue="orders", app_version="v1", created_at=late
            ),
            now=now,
        )
    finally:
        store.close()
