"""What `replaykit workflows show|list` and `replaykit queues list` print.

The timeline on an 80- or 120-column terminal (one line per record, cut with an
ellipsis; `--wide` for everything), composite outcomes in words, the step
bodies' own tracebacks, durations, newest-first listing and queue counts.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import uuid
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

import replaykit
from conftest import ok, rk
from replaykit import All, Engine, Race, Sleep, Step, workflow
from replaykit.cli.options import parse_duration, parse_when
from replaykit.log import ErrorInfo, Failure, RaceOutcome, Record, Status, Value
from replaykit.runtime import queues as queues_module
from replaykit.stores import open_store
from replaykit.stores.base import WorkflowRow

LONG_NAME = "reconcile-the-ledger-with-the-bank-statement-for-the-month"
LONG_TEXT = "statement line " * 30


def echo(value: Any) -> Any:
    return value


def statement(n: int) -> dict[str, Any]:
    return {"n": n, "text": LONG_TEXT}


def deep_failure(order: str) -> str:
    raise LookupError(f"no stock for {order}")  # the frame --traceback must show


def reserve(order: str) -> str:
    return deep_failure(order)


@workflow(name="cli-views")
def views_wf(order: str) -> Generator[Any, Any, str]:
    yield Race(Step("quick", statement, 1), Sleep(3600))
    yield All(Step("left", statement, 2), Step("right", echo, "r"))
    yield Step(LONG_NAME, echo, LONG_TEXT)
    with contextlib.suppress(LookupError):  # the workflow goes on after this failure
        yield All(Step("reserve", reserve, order), Sleep(3600))
    return (yield Step("reserve-again", reserve, order))


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite store holding one ERROR run of views_wf, id 'views-1'."""
    url = f"sqlite:///{tmp_path_factory.mktemp('views') / 'views.db'}"
    engine = Engine(url, executor_id="app", app_version="v1", poll_interval=0.05)
    with engine, pytest.raises(LookupError):
        engine.run(views_wf, "o-1", workflow_id="views-1", timeout=30)
    return url


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def on_terminal(*args: str, columns: int) -> list[str]:
    """The lines the command prints on a (forced) terminal this wide, colour codes removed."""
    out = ok(rk(*args, env={"FORCE_COLOR": "1", "COLUMNS": str(columns)}))
    return ANSI.sub("", out).splitlines()


def timeline(lines: list[str]) -> list[str]:
    """The timeline's rows: the lines after its header (and rule), up to the blank line."""
    header = next(i for i, line in enumerate(lines) if line.startswith("POS"))
    rows: list[str] = []
    for line in lines[header + 1 :]:
        if line.startswith("\u2500"):
            continue  # rich's rule under the header
        if not line.strip():
            break
        rows.append(line)
    return rows


# -- the timeline on a terminal ----------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 120])
def test_the_timeline_fits_the_terminal_one_line_per_record(shown: str, columns: int) -> None:
    lines = on_terminal("workflows", "show", "views-1", "--url", shown, columns=columns)
    too_wide = [line for line in lines if cell_len(line) > columns]
    assert not too_wide, too_wide
    rows = timeline(lines)
    assert [row.split()[0] for row in rows] == ["0", "1", "2", "3", "4"]  # none folded
    assert all("\u2026" in row for row in rows[:3])  # cut, with an ellipsis
    assert LONG_TEXT not in "\n".join(lines)
    # The header's date says the day; the column keeps the time.
    assert re.search(r"\s\d\d:\d\d:\d\d\s", rows[0]) and "UTC" in lines[5]
    # The end of a call site (file:line) is what survives a cut.
    assert all(re.search(r"\.py:\d+\s*$", row) for row in rows), rows


def test_wide_shows_everything_in_full(shown: str) -> None:
    lines = on_terminal("workflows", "show", "views-1", "--url", shown, "--wide", columns=80)
    text = "\n".join(lines)
    assert LONG_NAME in text and json.dumps(LONG_TEXT) in text
    assert "\u2026" not in text
    rows = timeline(lines)
    assert len(rows) == 5 and cell_len(rows[2]) > 80  # long lines, for the terminal to wrap
    piped = ok(rk("workflows", "show", "views-1", "--url", shown, "--wide"))
    assert LONG_NAME in piped and json.dumps(LONG_TEXT) in piped and "..." not in piped


def test_list_fits_the_terminal_too(shown: str) -> None:
    lines = on_terminal("workflows", "list", "--url", shown, columns=80)
    assert all(cell_len(line) <= 80 for line in lines), lines
    assert len(lines) == 3 and "views-1" in lines[2]  # header, rule, the run: not folded


# -- composites, tracebacks --------------------------------------------------------------------


def test_a_race_shows_its_winner_and_an_all_its_childrens_outcomes(shown: str) -> None:
    rows = timeline(ok(rk("workflows", "show", "views-1", "--url", shown)).splitlines())
    race, every, _, failed_all, _ = rows
    assert 'won by [0] step quick: ok {"n":1,' in race
    assert "index" not in race and "outcome" not in race  # no internal record
    assert '[0] step left: ok {"n":2,' in every and '; [1] step right: ok "r"' in every
    assert "outcomes" not in every
    assert "failed at [0] step reserve: error LookupError: no stock for o-1" in failed_all


def test_traceback_shows_the_step_bodys_own_frames(shown: str) -> None:
    out = ok(rk("workflows", "show", "views-1", "--url", shown, "--traceback"))
    step_part, _, run_part = out.partition("the workflow raised LookupError: no stock for o-1")
    assert run_part, out
    # The failing step's own traceback: the frames inside its body, where it began.
    assert "step 'reserve-again' at position 4 raised LookupError: no stock for o-1" in step_part
    assert "in deep_failure" in step_part and "raise LookupError" in step_part
    # A failure inside a composite has its traceback too.
    assert "at position 3, child [0] step 'reserve' raised LookupError" in step_part
    # The run's own traceback is where the body re-raised it.
    assert "in views_wf" in run_part and "in deep_failure" not in run_part


def test_composites_and_step_tracebacks_escape_stored_data(tmp_path: Path) -> None:
    red, title = "\x1b[31m", "\x1b]0;t\x07"
    url = f"sqlite:///{tmp_path / 'evil.db'}"
    error = ErrorInfo("app", "Bad", f"no{red}", [], f"Traceback:\n  boom{title}\napp.Bad: no\n")
    store = open_store(url)
    try:
        store.create_workflow(WorkflowRow("evil", "evil", Status.PENDING))
        race = RaceOutcome(0, Failure(error)).to_data()
        store.record("evil", Record(0, "race", f"step:a{red}|sleep:sleep", Value(race)))
        store.record("evil", Record(1, "step", "s", Value(f"[bold]{title}")))
    finally:
        store.close()
    for env in (None, {"FORCE_COLOR": "1", "COLUMNS": "120"}):
        result = rk("workflows", "show", "evil", "--url", url, "--traceback", env=env)
        out = ok(result)
        # On a terminal rich colours the failed race red itself: its own ESC only.
        for raw in (title, "\x07", "\x1b]") if env else (title, "\x07", "\x1b"):
            assert raw not in out, (raw, out)
        assert r"won by [0] step a\x1b[31m: error app.Bad: no\x1b[31m" in ANSI.sub("", out)
        assert r"boom\x1b]0;t\x07" in out and "[bold]" in out


# -- durations ---------------------------------------------------------------------------------


def test_durations_take_several_units() -> None:
    assert parse_duration("1h30m") == timedelta(hours=1, minutes=30)
    assert parse_duration("2d") == timedelta(days=2)
    assert parse_duration("90s") == timedelta(seconds=90)
    assert parse_duration("1w2d12h") == timedelta(days=9, hours=12)
    assert parse_duration("1.5h") == timedelta(minutes=90)
    assert parse_duration("45") == timedelta(seconds=45)
    for bad, why in [
        ("30m1h", "largest first"),
        ("1m1m", "each unit once"),
        ("1x", "not a duration"),
        ("1ms", "not a duration"),
        ("", "not a duration"),
        ("-5", "cannot be negative"),
        ("inf", "not a duration"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_duration(bad)
    now = datetime(2024, 6, 1, 12, tzinfo=UTC)
    assert parse_when("1h30m", now) == datetime(2024, 6, 1, 10, 30, tzinfo=UTC)


def test_duration_options_accept_them_and_refuse_bad_ones(shown: str) -> None:
    assert "views-1" in ok(rk("workflows", "list", "--since", "1h30m", "--url", shown))
    assert "0 finished runs" in ok(
        rk("workflows", "gc", "--older-than", "1d12h", "--dry-run", "--url", shown)
    )
    for args in (
        ("workflows", "gc", "--older-than", "1x", "--dry-run"),
        ("workflows", "list", "--since", "30m1h"),
    ):
        result = rk(*args, "--url", shown)
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
        assert "1h30m" in lines[0]  # says what to write instead


# -- listing newest first, by queue; queues ------------------------------------------------------


@pytest.fixture
def url(durable_url: str) -> str:
    """The store each test runs on: SQLite and PostgreSQL, empty."""
    return durable_url


T0 = datetime(2024, 6, 1, 12, tzinfo=UTC)


def make_runs(url: str) -> None:
    """r0..r5, a minute apart; r1, r3, r5 on queue 'mail' (r5 delayed), r2 running from it."""
    store = open_store(url)
    try:
        for n in range(6):
            queue = "mail" if n in (1, 2, 3, 5) else None
            status = Status.ENQUEUED if n in (1, 3, 5) else Status.PENDING
            if n == 0:
                status = Status.SUCCESS
            wake = datetime.now(UTC) + timedelta(hours=1) if n == 5 else None
            store.create_workflow(
                WorkflowRow(
                    f"r{n}",
                    "job",
                    status,
                    inputs={"args": [], "kwargs": {}},
                    created_at=T0 + timedelta(minutes=n),
                    queue=queue,
                    wake_at=wake,
                )
            )
        store.create_workflow(WorkflowRow("other", "job", Status.ENQUEUED, queue="other"))
    finally:
        store.close()


def ids(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines()[1:]]


def test_list_newest_first_and_by_queue(url: str) -> None:
    make_runs(url)
    assert ids(ok(rk("workflows", "list", "--url", url, "--until", "2024-06-01T13:00"))) == [
        "r0", "r1", "r2", "r3", "r4", "r5",
    ]  # fmt: skip
    newest = rk("workflows", "list", "--url", url, "--newest", "--limit", "2", "--name", "job")
    assert ids(ok(newest))[:2] == ["other", "r5"]
    assert "5 more match: --offset 2" in newest.stderr
    page = ok(rk("workflows", "list", "--url", url, "--newest", "--limit", "2", "--offset", "2"))
    assert ids(page) == ["r4", "r3"]
    assert ids(ok(rk("workflows", "list", "--url", url, "--newest", "--offset", "6"))) == ["r0"]
    assert "no workflow runs match" in ok(
        rk("workflows", "list", "--url", url, "--newest", "--offset", "7")
    )
    queued = ok(rk("workflows", "list", "--url", url, "--queue", "mail", "--newest"))
    assert ids(queued) == ["r5", "r3", "r2", "r1"]
    data = json.loads(ok(rk("workflows", "list", "--url", url, "--queue", "other", "--json")))
    assert [row["workflow_id"] for row in data] == ["other"] and data[0]["queue"] == "other"


QUEUE_MODULE = """
from replaykit import Queue

mail = Queue("mail", concurrency=5, worker_concurrency=2, rate_limit=(10, 60))
idle = Queue("idle-{suffix}")
tenants = Queue("tenants-{suffix}", partition_concurrency=2, partition_rate_limit=(10, 60))
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory for an application module; sys.path, modules and queues restored."""
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    queues_before = dict(queues_module._queues)
    registry_before = dict(replaykit.registry._registry)
    yield tmp_path
    sys.path[:] = path_before
    for name in set(sys.modules) - modules_before:
        del sys.modules[name]
    queues_module._queues.clear()
    queues_module._queues.update(queues_before)
    replaykit.registry._registry.clear()
    replaykit.registry._registry.update(registry_before)


def test_queues_list_counts_from_the_store_and_limits_from_the_app(url: str, app_dir: Path) -> None:
    make_runs(url)
    plain = rk("queues", "list", "--url", url)
    lines = ok(plain).splitlines()
    assert lines[0].split() == ["QUEUE", "DEPTH", "DELAYED", "RUNNING"]
    assert lines[1].split() == ["mail", "3", "1", "1"]  # r1, r3, r5 enqueued, r5 delayed; r2
    assert lines[2].split() == ["other", "1", "0", "0"]
    assert "--app MODULE" in plain.stderr

    suffix = uuid.uuid4().hex[:8]
    module = f"rk_queues_{suffix}"
    (app_dir / f"{module}.py").write_text(QUEUE_MODULE.format(suffix=suffix))
    args = ("queues", "list", "--url", url, "--app", module, "--app-dir", str(app_dir))
    lines = ok(rk(*args)).splitlines()
    assert lines[0].split() == [
        "QUEUE", "DEPTH", "DELAYED", "RUNNING", "CONCURRENCY", "PER", "WORKER", "RATE", "LIMIT",
        "PER", "KEY",
    ]  # fmt: skip
    by_name = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert by_name[f"idle-{suffix}"] == ["0", "0", "0", "-", "-", "-", "-"]  # nothing in it
    assert by_name["mail"] == ["3", "1", "1", "5", "2", "10/1m", "-"]
    assert by_name[f"tenants-{suffix}"][3:] == ["-", "-", "-", "2", "running,", "10/1m"]
    assert by_name["other"][3:] == ["(not", "in", "--app)"]

    data = json.loads(ok(rk(*args, "--json")))
    mail = next(q for q in data["queues"] if q["queue"] == "mail")
    assert (mail["depth"], mail["delayed"], mail["running"]) == (3, 1, 1)
    assert mail["limits"] == {
        "concurrency": 5,
        "worker_concurrency": 2,
        "rate_limit": {"count": 10, "per_seconds": 60.0},
        "partitioned": False,
        "partition_concurrency": None,
        "partition_rate_limit": None,
    }
    assert mail["partitions"] is None  # no run of it has a key
    assert data["partial"] is False

    missing = rk("queues", "list", "--url", url, "--app", "no_such_module_xyz")
    assert missing.exit_code == 2 and "cannot import 'no_such_module_xyz'" in missing.stderr


def test_queues_list_shows_how_many_keys_wait_and_the_busiest(url: str) -> None:
    store = open_store(url)
    try:
        runs = [("acme", Status.ENQUEUED)] * 4 + [("acme", Status.PENDING)]
        runs += [("globex", Status.ENQUEUED)] * 2 + [("initech", Status.PENDING)]
        runs += [(None, Status.ENQUEUED), ("umbrella", Status.ENQUEUED)]
        store.create_workflows(
            [
                WorkflowRow(f"t{n}", "job", status, queue="reports", partition_key=key)
                for n, (key, status) in enumerate(runs)
            ]
        )
    finally:
        store.close()
    lines = ok(rk("queues", "list", "--url", url)).splitlines()
    assert lines[0].split() == [
        "QUEUE", "DEPTH", "DELAYED", "RUNNING", "KEYS", "BUSIEST", "KEYS", "(WAITING/RUNNING)",
    ]  # fmt: skip
    # Four keys wait (runs with no key count as one); the three with most waiting.
    assert lines[1].split() == ["reports", "8", "0", "2", "4", "acme", "4/1,", "globex", "2/0,",
                                "(no", "key)", "1/0"]  # fmt: skip
    listed = ok(rk("workflows", "list", "--url", url, "--partition-key", "globex"))
    assert ids(listed) == ["t5", "t6"]
    data = json.loads(ok(rk("queues", "list", "--url", url, "--json")))
    (reports,) = data["queues"]
    assert reports["partitions"] == {
        "keys_waiting": 4,
        "busiest": [
            {"key": "acme", "waiting": 4, "running": 1},
            {"key": "globex", "waiting": 2, "running": 0},
            {"key": None, "waiting": 1, "running": 0},
        ],
    }
