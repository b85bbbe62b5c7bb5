"""Stored data reaches the operator's terminal as text, never as commands to it.

The store is written directly (as a hostile or corrupted row would be): ids,
names, errors and tracebacks carrying escape sequences, C1 controls, bidi
overrides and rich markup. Whatever the command prints, piped or on a terminal,
holds none of them raw and shows each in a visible escaped form.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from conftest import rk
from replaykit.log import ErrorInfo, Failure, Record, Status
from replaykit.stores import open_store
from replaykit.stores.base import WorkflowRow

REPO = Path(__file__).resolve().parent.parent

RED = "\x1b[31m"
TITLE = "\x1b]0;title\x07"
EVIL_ID = f"run{RED}-{TITLE}-[bold]x[/bold]-\u202eabc-\x9b2J-\x7f-:smile:"
EVIL_NAME = "checkout\x1b[2J"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 3, in charge\n'
    "    raise Declined('card declined')\n"
    f"app.Declined: {RED}card declined{TITLE}\n"
)
ERROR = ErrorInfo("app", "Declined", f"{RED}card declined{TITLE}", [], TRACEBACK)

# What no output may hold raw: ESC starts every sequence, BEL ends OSC ones, C1
# CSI (0x9b) is ESC [ to some terminals, DEL, and a bidi override.
RAW = ["\x1b", "\x07", "\x9b", "\x7f", "\u202e"]


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'evil.db'}"
    store = open_store(url)
    try:
        store.create_workflow(
            WorkflowRow(EVIL_ID, EVIL_NAME, Status.PENDING, executor_id=f"app{TITLE}")
        )
        step = Record(0, "step", f"charge{RED}", Failure(ERROR), call_site=f"app.py:3{RED}")
        store.record(EVIL_ID, step, executor_id=f"app{TITLE}")
        store.finish_workflow(EVIL_ID, Status.ERROR, Failure(ERROR))
        child = f"child{RED}"
        store.create_workflow(WorkflowRow(child, EVIL_NAME, Status.PENDING, parent_id=EVIL_ID))
        store.set_status(child, Status.PARKED, error=f"drifted{TITLE}")
    finally:
        store.close()
    return url


def assert_clean(result: Result, code: int = 0) -> str:
    assert result.exit_code == code, (result.output, result.exception)
    text = result.output + result.stderr
    for raw in RAW:
        assert raw not in text, (raw, text)
    return text


def test_list_escapes_ids_names_and_errors(url: str) -> None:
    out = assert_clean(rk("workflows", "list", "--url", url))
    assert r"run\x1b[31m-\x1b]0;title\x07-[bold]x[/bold]-\u202eabc-\x9b2J-\x7f" in out
    assert r"checkout\x1b[2J" in out and r"app\x1b]0;title\x07" in out
    assert r"Declined: \x1b[31mcard declined" in out
    assert r"child\x1b[31m" in out


def test_show_and_its_traceback_escape_everything_but_the_tracebacks_lines(url: str) -> None:
    out = assert_clean(rk("workflows", "show", EVIL_ID, "--url", url, "--traceback"))
    assert r"run\x1b[31m-\x1b]0;title\x07-[bold]x[/bold]" in out
    assert r"charge\x1b[31m" in out and r"app.py:3\x1b[31m" in out
    assert r"children: child\x1b[31m (PARKED)" in out
    lines = out.splitlines()
    assert r"app.Declined: \x1b[31mcard declined\x1b]0;title\x07" in lines
    assert "Traceback (most recent call last):" in lines  # newlines stay newlines
    parked = assert_clean(rk("workflows", "show", f"child{RED}", "--url", url))
    assert r"drifted\x1b]0;title\x07" in parked


def test_rich_output_on_a_terminal_escapes_and_takes_no_markup(url: str) -> None:
    env = {"FORCE_COLOR": "1", "COLUMNS": "400"}
    for args in (["list"], ["show", EVIL_ID, "--traceback"]):
        result = rk("workflows", *args, "--url", url, env=env)
        assert result.exit_code == 0, (result.output, result.exception)
        out = result.output
        assert "\x1b[" in out  # rich colours it: ESC is allowed, but only rich's own
        for raw in [TITLE, "\x07", "\x9b", "\x7f", "\u202e", "\x1b[2J"]:
            assert raw not in out, (raw, out)
        assert r"\x1b]0;title\x07" in out and "[bold]x[/bold]" in out and ":smile:" in out


def test_json_output_is_valid_json_of_the_same_data_with_nothing_raw(url: str) -> None:
    listed = assert_clean(rk("workflows", "list", "--url", url, "--json"))
    assert EVIL_ID in [row["workflow_id"] for row in json.loads(listed)]
    shown = assert_clean(rk("workflows", "show", EVIL_ID, "--url", url, "--json"))
    data = json.loads(shown)
    assert data["workflow"]["workflow_id"] == EVIL_ID
    assert data["workflow"]["result"]["error"]["traceback"] == TRACEBACK
    exported = assert_clean(rk("workflows", "export", EVIL_ID, "--url", url))
    assert json.loads(exported)["workflow_id"] == EVIL_ID


def test_messages_about_a_run_escape_its_stored_fields(url: str) -> None:
    resumed = assert_clean(rk("workflows", "resume", f"child{RED}", "--url", url))
    assert r"checkout\x1b[2J" in resumed
    # A bare module: the workflow is the one each log names, which is unknown here.
    replayed = assert_clean(rk("replay", "json", "--id", EVIL_ID, "--url", url), code=2)
    assert r"run\x1b[31m" in replayed
    refused = assert_clean(rk("workflows", "cancel", EVIL_ID, "--url", url), code=1)
    assert "already ERROR" in refused


def test_piped_output_of_a_real_process_holds_no_escape_byte(url: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("FORCE_COLOR", None)
    for args in (["list"], ["show", EVIL_ID, "--traceback"]):
        done = subprocess.run(
            [sys.executable, "-m", "replaykit", "workflows", *args, "--url", url],
            capture_output=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert b"\x1b" not in done.stdout + done.stderr
        assert b"\\x1b]0;title\\x07" in done.stdout
