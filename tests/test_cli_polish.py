"""What the command does at its edges: a closed pipe, `--json` on every operation, a stream
key the run never wrote, a confirmation with no terminal, a run's inputs, and tracebacks
on a narrow terminal.

On SQLite files and PostgreSQL schemas, with an application's engine (executor "app",
version "v1") recording the runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import error_line, ok, rk, wait_for
from replaykit import Engine, Recv, Step, WriteStream, workflow
from replaykit.log import Status
from replaykit.stores import open_store
from replaykit.stores.base import WorkflowRow
from replaykit.stores.codec import CodecStore

REPO = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SECRET = "the-secret-order-7"


class Reversed:
    """A payload codec for the tests: `--codec test_cli_polish:Reversed` reads it."""

    name = "reversed"

    def encode(self, data: bytes) -> bytes:
        return data[::-1]

    def decode(self, data: bytes) -> bytes:
        return data[::-1]


def a_frame_deep_in_a_module_with_a_long_name_so_its_file_line_is_wide(order: str) -> str:
    raise LookupError(f"no stock for {order}")


@workflow(name="cli-polish")
def polish_wf(order: str, *, note: str = "") -> Generator[Any, Any, str]:
    yield WriteStream("progress", {"at": "start"})
    message = yield Recv("go")
    if message == "fail":
        yield Step(
            "reserve", a_frame_deep_in_a_module_with_a_long_name_so_its_file_line_is_wide, order
        )
    return f"{order}: {message}"


@pytest.fixture
def url(created_url: str) -> str:
    """The store each test runs on: SQLite and PostgreSQL, tables made."""
    return created_url


def app_engine(url: str, **options: Any) -> Engine:
    return Engine(url, executor_id="app", app_version="v1", poll_interval=0.05, **options)


@pytest.fixture
def waiting(url: str) -> Iterator[str]:
    """'w-1', a run that wrote to its stream 'progress' and waits for a message on 'go'."""
    with app_engine(url) as engine:
        engine.start(polish_wf, SECRET, note="gift", workflow_id="w-1")
        wait_for(lambda: len(engine.steps("w-1")) == 2, "w-1 to wait")
    yield url


# -- a closed pipe --------------------------------------------------------------------------


def test_a_closed_pipe_ends_the_command_quietly(url: str) -> None:
    store = open_store(url)
    now = datetime.now(UTC)
    store.create_workflows(
        [
            WorkflowRow(f"run-{n:05d}", "cli-polish", Status.SUCCESS, created_at=now)
            for n in range(3000)
        ]
    )
    store.close()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "replaykit", "workflows", "list", "--limit", "5000"]
    # `replaykit workflows list | head -1`: the reader takes one line and goes.
    with subprocess.Popen(
        [*command, "--url", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        stderr = process.stderr.read().decode()
        process.wait(timeout=60)
    assert first.split()[0] == b"ID"
    assert stderr == "", stderr  # no "Error: BrokenPipeError", no traceback
    assert process.returncode == 1


# -- --json on every operation ------------------------------------------------------------------


def test_operations_print_json_for_scripts(waiting: str) -> None:
    url = waiting
    sent = json.loads(ok(rk("workflows", "send", "w-1", '"x"', "--topic", "elsewhere",
                            "--key", "k-1", "--url", url, "--json")))  # fmt: skip
    assert sent == {
        "workflow_id": "w-1",
        "name": "cli-polish",
        "status": "PENDING",
        "topic": "elsewhere",
        "key": "k-1",
        "delivered": True,
    }
    again = json.loads(ok(rk("workflows", "send", "w-1", '"x"', "--topic", "elsewhere",
                             "--key", "k-1", "--url", url, "--json")))  # fmt: skip
    assert again["delivered"] is False

    cancelled = json.loads(ok(rk("workflows", "terminate", "w-1", "--reason", "why not",
                                 "--url", url, "--json")))  # fmt: skip
    assert cancelled["workflow_id"] == "w-1" and cancelled["status"] == "CANCELLED"
    assert cancelled["cancelled"] is True and cancelled["error"] == "why not"

    resumed = json.loads(ok(rk("workflows", "resume", "w-1", "--url", url, "--json")))
    assert resumed["status"] == "PENDING" and resumed["resumed"] == ["w-1"]
    assert resumed["replayed_positions"] == 1

    forked = json.loads(ok(rk("workflows", "fork", "w-1", "--from", "1", "--url", url, "--json")))
    assert forked["workflow_id"].startswith("w-1-fork-")  # the new run's id
    assert forked["forked_from"] == "w-1" and forked["kept_positions"] == 1

    deleted = json.loads(
        ok(rk("workflows", "delete", forked["workflow_id"], "--yes", "--url", url, "--json"))
    )
    assert deleted["deleted"] is True and deleted["workflow_id"] == forked["workflow_id"]
    # A prompt would be mixed into the JSON: --json takes --yes.
    assert "--yes" in error_line(rk("workflows", "delete", "w-1", "--url", url, "--json"), 2)

    dry = json.loads(ok(rk("workflows", "gc", "--older-than", "0s", "--include-unfinished",
                           "--dry-run", "--url", url, "--json")))  # fmt: skip
    assert dry["matching"] == 1 and dry["deleted"] == 0 and dry["dry_run"] is True
    collected = json.loads(ok(rk("workflows", "gc", "--older-than", "0s", "--include-unfinished",
                                 "--yes", "--url", url, "--json")))  # fmt: skip
    assert collected["deleted"] == 1 and collected["dry_run"] is False


def test_a_confirmation_with_no_terminal_says_to_pass_yes(waiting: str) -> None:
    # CliRunner's standard input is no terminal, and holds nothing to read.
    gc = error_line(rk("workflows", "gc", "--older-than", "0s", "--include-unfinished",
                  "--url", waiting))  # fmt: skip
    assert "pass --yes" in gc and "not a terminal" in gc
    assert "pass --yes" in error_line(rk("workflows", "delete", "w-1", "--url", waiting))
    assert open_store(waiting).get_workflow("w-1") is not None
    # An answer on standard input is still taken; "no" aborts as before.
    assert rk("workflows", "delete", "w-1", "--url", waiting, input="n\n").exit_code == 1
    ok(rk("workflows", "delete", "w-1", "--url", waiting, input="y\n"))


# -- streams -------------------------------------------------------------------------------------


def test_a_stream_key_the_run_never_wrote_exits_1_naming_its_streams(waiting: str) -> None:
    assert '{"at": "start"}' in ok(rk("workflows", "stream", "w-1", "progress", "--url", waiting))
    typo = error_line(rk("workflows", "stream", "w-1", "progres", "--url", waiting))
    assert "has written nothing to stream 'progres'" in typo
    assert "its streams: 'progress'" in typo and "--follow waits" in typo
    with app_engine(waiting) as engine:
        engine.send("w-1", "ok", topic="go")
        assert engine.handle("w-1").result(timeout=20) == f"{SECRET}: ok"
    # Finished: --follow has nothing to wait for either.
    finished = error_line(rk("workflows", "stream", "w-1", "progres", "--follow", "--url", waiting))
    assert "its streams: 'progress'" in finished and "--follow waits" not in finished


# -- show: inputs and tracebacks ----------------------------------------------------------------


def test_show_prints_the_inputs_escaped_and_encoded_ones_as_such(url: str) -> None:
    with app_engine(url) as engine:
        engine.start(polish_wf, "o-\x1b[31m", note="gift", workflow_id="plain")
        wait_for(lambda: len(engine.steps("plain")) == 2, "the run to wait")
    out = ok(rk("workflows", "show", "plain", "--url", url))
    assert 'inputs    ["o-\\u001b[31m"], kwargs {"note":"gift"}' in out
    assert "\x1b" not in out

    store = CodecStore(open_store(url), Reversed())
    store.create_workflow(
        WorkflowRow("sealed", "cli-polish", Status.PENDING, executor_id="app", app_version="v1",
                    inputs={"args": [SECRET], "kwargs": {}}, created_at=datetime.now(UTC))
    )  # fmt: skip
    store.close()
    sealed = ok(rk("workflows", "show", "sealed", "--url", url))
    assert re.search(r"inputs +<encoded by reversed, \d+ bytes>", sealed), sealed
    assert SECRET not in sealed
    decoded = ok(rk("--codec", "test_cli_polish:Reversed", "workflows", "show", "sealed",
                    "--url", url))  # fmt: skip
    assert f'inputs    ["{SECRET}"]' in decoded


def test_a_traceback_on_a_narrow_terminal_keeps_each_line_whole(url: str) -> None:
    with app_engine(url) as engine:
        handle = engine.start(polish_wf, "o-1", workflow_id="fails")
        wait_for(lambda: len(engine.steps("fails")) == 2, "the run to wait")
        engine.send("fails", "fail", topic="go")
        with pytest.raises(LookupError):
            handle.result(timeout=20)
    out = ok(rk("workflows", "show", "fails", "--traceback", "--url", url,
                env={"FORCE_COLOR": "1", "COLUMNS": "80"}))  # fmt: skip
    lines = ANSI.sub("", out).splitlines()
    frame = [line for line in lines if "a_frame_deep_in_a_module_with_a_long_name" in line]
    # The frame's `File "...", line N, in function` line is one line, however wide.
    assert any(
        line.lstrip().startswith('File "') and line.rstrip().endswith("_is_wide") for line in frame
    ), frame
    assert any(len(line) > 80 for line in frame)
