"""The `replaykit` command, against SQLite files and PostgreSQL schemas.

Runs are recorded by an application-side Engine (executor "app", version
"app-v1"), then inspected and operated through the command; resumed and forked
runs are finished by that application's engine on its next recovery, as the
command promises.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

import replaykit
from conftest import error_line, ok, rk, wait_for
from replaykit import Engine, Log, Recv, Status, Step, workflow
from replaykit.runtime import queues as queues_module
from replaykit.stores import open_store

REPO = Path(__file__).resolve().parent.parent
CALLS: dict[str, int] = {}
LOCK = threading.Lock()
SHIP_FIXED = {"on": False}


def bump(name: str) -> str:
    with LOCK:
        CALLS[name] = CALLS.get(name, 0) + 1
    return name


def ship(order_id: str) -> str:
    bump("ship")
    if order_id.startswith("bad") and not SHIP_FIXED["on"]:
        raise ValueError(f"no address for {order_id}")
    return f"parcel-{order_id}"


@workflow(name="cli-order")
def order_wf(order_id: str) -> Generator[Any, Any, dict[str, str]]:
    yield Step("charge", bump, "charge")
    yield Step("pack", bump, "pack")
    parcel = yield Step("ship", ship, order_id)
    return {"order": order_id, "parcel": parcel}


@workflow(name="cli-waiter")
def waiter_wf() -> Generator[Any, Any, str]:
    yield Step("prepare", bump, "prepare")
    message = yield Recv("go", timeout=3600)
    yield Step("finish", bump, "finish")
    return f"got {message}"


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    CALLS.clear()
    SHIP_FIXED["on"] = False
    yield


@pytest.fixture
def url(durable_url: str) -> str:
    """The store each test runs on: SQLite and PostgreSQL, empty."""
    return durable_url


def app_engine(url: str, **options: Any) -> Engine:
    """The application's engine: it has the code, so it is what runs resumed runs."""
    options.setdefault("executor_id", "app")
    options.setdefault("app_version", "app-v1")
    return Engine(url, poll_interval=0.05, **options)


@pytest.fixture
def runs(url: str) -> str:
    """ok-run SUCCESS, bad-run ERROR (at position 2), wait-run PENDING in a timed Recv."""
    with app_engine(url) as eng:
        eng.run(order_wf, "ok-1", workflow_id="ok-run", timeout=20)
        with pytest.raises(ValueError):
            eng.run(order_wf, "bad-1", workflow_id="bad-run", timeout=20)
        eng.start(waiter_wf, workflow_id="wait-run")
        wait_for(
            lambda: len(eng.steps("wait-run")) == 2 and eng.steps("wait-run")[1].is_pending,
            "wait-run to wait",
        )
    CALLS.clear()
    return url


def row_of(url: str, workflow_id: str) -> Any:
    store = open_store(url)
    try:
        return store.get_workflow(workflow_id)
    finally:
        store.close()


# -- listing and showing ---------------------------------------------------------------------


def test_list_filters_and_json(runs: str) -> None:
    out = ok(rk("workflows", "list", "--url", runs))
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "NAME", "STATUS", "CREATED", "VERSION", "EXECUTOR", "ERROR"]
    assert [line.split()[0] for line in lines[1:]] == ["ok-run", "bad-run", "wait-run"]
    assert "ValueError: no address for bad-1" in out

    errors = ok(rk("workflows", "list", "--url", runs, "--status", "error"))
    assert [line.split()[0] for line in errors.splitlines()[1:]] == ["bad-run"]
    two = ok(rk("workflows", "list", "--url", runs, "--status", "SUCCESS", "--status", "PENDING"))
    assert [line.split()[0] for line in two.splitlines()[1:]] == ["ok-run", "wait-run"]
    named = ok(rk("workflows", "list", "--url", runs, "--name", "cli-waiter"))
    assert [line.split()[0] for line in named.splitlines()[1:]] == ["wait-run"]
    assert "no workflow runs match" in ok(
        rk("workflows", "list", "--url", runs, "--since", "2999-01-01")
    )
    assert len(ok(rk("workflows", "list", "--url", runs, "--since", "1h")).splitlines()) == 4
    assert "no workflow runs match" in ok(
        rk("workflows", "list", "--url", runs, "--version", "other")
    )

    limited = rk("workflows", "list", "--url", runs, "--limit", "1")
    assert len(ok(limited).splitlines()) == 2
    assert "--offset 1" in limited.stderr  # says there may be more

    data = json.loads(ok(rk("workflows", "list", "--url", runs, "--json", "--status", "ERROR")))
    assert len(data) == 1
    assert data[0]["workflow_id"] == "bad-run" and data[0]["status"] == "ERROR"
    assert data[0]["app_version"] == "app-v1" and data[0]["executor_id"] == "app"
    assert "no address for bad-1" in data[0]["error"]


def test_show_prints_the_timeline_and_the_error(runs: str) -> None:
    out = ok(rk("workflows", "show", "bad-run", "--url", runs))
    assert "status    ERROR" in out
    assert "error     ValueError: no address for bad-1" in out
    header = next(line for line in out.splitlines() if line.startswith("POS"))
    assert header.split() == [
        "POS",
        "KIND",
        "NAME",
        "STARTED",
        "DURATION",
        "OUTCOME",
        "CALL",
        "SITE",
    ]
    timeline = out.splitlines()[out.splitlines().index(header) + 1 :]
    assert timeline[0].split()[:3] == ["0", "step", "charge"]
    assert '"charge"' in timeline[0] and "tests/test_cli.py:" in timeline[0]
    assert timeline[2].split()[:3] == ["2", "step", "ship"]
    assert "error ValueError: no address for bad-1" in timeline[2]

    waiting = ok(rk("workflows", "show", "wait-run", "--url", runs))
    assert "pending until" in waiting and "recv" in waiting

    traced = ok(rk("workflows", "show", "bad-run", "--url", runs, "--traceback"))
    assert "Traceback" in traced and "no address for bad-1" in traced

    data = json.loads(ok(rk("workflows", "show", "ok-run", "--url", runs, "--json")))
    assert data["workflow"]["status"] == "SUCCESS"
    assert data["workflow"]["result"] == {"value": {"order": "ok-1", "parcel": "parcel-ok-1"}}
    assert [s["name"] for s in data["steps"]] == ["charge", "pack", "ship"]
    assert all(s["call_site"] and s["started_at"] and s["completed_at"] for s in data["steps"])


def test_rich_tables_on_a_terminal(runs: str) -> None:
    out = ok(rk("workflows", "list", "--url", runs, env={"FORCE_COLOR": "1", "COLUMNS": "200"}))
    assert "\x1b[" in out  # coloured
    assert "━" in out or "─" in out  # a rich table rule
    assert "ok-run" in out and "bad-run" in out
    shown = ok(rk("workflows", "show", "bad-run", "--url", runs, env={"FORCE_COLOR": "1"}))
    assert "\x1b[" in shown and "no address for bad-1" in shown


def test_url_comes_from_the_environment(runs: str) -> None:
    out = ok(rk("workflows", "list", env={"REPLAYKIT_URL": runs}))
    assert "ok-run" in out


# -- export and replay -----------------------------------------------------------------------


def test_export_writes_a_log_that_replays(runs: str, tmp_path: Path) -> None:
    text = ok(rk("workflows", "export", "ok-run", "--url", runs))
    log = Log.from_json(text)
    assert log.workflow_name == "cli-order" and log.workflow_id == "ok-run"
    assert [r.name for r in log] == ["charge", "pack", "ship"]
    target = tmp_path / "run.json"
    result = rk("workflows", "export", "ok-run", "--url", runs, "-o", str(target))
    assert result.exit_code == 0 and "wrote" in result.stderr
    assert Log.from_json(target.read_text()) == log
    replayed = rk("replay", f"{__name__}:order_wf", str(target))
    assert "OK, 3 recorded position(s)" in ok(replayed)
    assert CALLS == {}  # replay ran no step


# Modules for replay, written to a temporary directory and imported by name, as a
# user's application module would be.
MODULE = """
from replaykit import Recv, Step, workflow

def work(name, *args):
    return name

def helper():
    return 1

@workflow(name={name!r})
def flow(n: int):
    yield Step("fetch", work, "fetch", {fetch_arg})
    yield Step({pack!r}, work, "pack")
    return n * 2
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory for throwaway modules; sys.path, sys.modules and the registry restored."""
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    registry_before = dict(replaykit.registry._registry)
    queues_before = dict(queues_module._queues)
    yield tmp_path
    sys.path[:] = path_before
    for name in set(sys.modules) - modules_before:
        del sys.modules[name]
    replaykit.registry._registry.clear()
    replaykit.registry._registry.update(registry_before)
    queues_module._queues.clear()
    queues_module._queues.update(queues_before)


def write_module(directory: Path, wf_name: str, *, fetch_arg: str = "n", pack: str = "pack") -> str:
    module = f"rk_cli_{uuid.uuid4().hex[:10]}"
    source = MODULE.format(name=wf_name, fetch_arg=fetch_arg, pack=pack)
    (directory / f"{module}.py").write_text(textwrap.dedent(source))
    return module


def record_log(directory: Path, module: str, path: Path, n: int = 3) -> Log:
    """Run `module:flow` on an in-memory engine and export its log to `path`."""
    sys.path.insert(0, str(directory))
    wf = importlib.import_module(module).flow
    with Engine(f"sqlite:///{directory / 'replay.db'}", poll_interval=0.05) as eng:
        assert eng.run(wf, n, workflow_id=f"run-{module}", timeout=20) == n * 2
        log = eng.export_log(f"run-{module}")
    path.write_text(log.to_json())
    # A deploy is a new process: forget the module so the command imports the new code.
    del sys.modules[module]
    replaykit.registry._registry.pop(wf.workflow_name)
    return log


def test_replay_passes_and_catches_a_renamed_step(app_dir: Path) -> None:
    name = f"cli-replay-{uuid.uuid4().hex[:6]}"
    v1 = write_module(app_dir, name)
    record_log(app_dir, v1, app_dir / "run.json")
    v2 = write_module(app_dir, name, pack="pack-box")

    passed = rk("replay", f"{v1}:flow", str(app_dir / "run.json"), "--app-dir", str(app_dir))
    assert (
        "OK, 2 recorded position(s)" in ok(passed) and "ends SUCCESS as recorded" in passed.stdout
    )
    replaykit.registry._registry.pop(name)

    failed = rk("replay", f"{v2}:flow", str(app_dir / "run.json"), "--app-dir", str(app_dir))
    assert failed.exit_code == 1, failed.output
    lines = failed.stdout.splitlines()
    assert "DIVERGES at position 1" in lines[0] and repr(name) in lines[0]
    assert lines[1].split()[:5] == ["the", "code", "yielded", "step", "'pack-box'"]
    assert f"{v2}.py:" in lines[1]  # where the new code yields it
    assert lines[2].split()[:5] == ["the", "log", "recorded", "step", "'pack'"]
    assert f"{v1}.py:" in lines[2]  # where the recorded run yielded it
    assert "Patch" in lines[3]

    # The same check against the store, as a deploy gate reading production's runs.
    from_store = rk(
        "replay", f"{v2}:flow", "--id", f"run-{v1}", "--url", f"sqlite:///{app_dir / 'replay.db'}"
    )
    assert from_store.exit_code == 1
    assert from_store.stdout.startswith(f"run run-{v1}: DIVERGES at position 1")


def test_replay_strict_mode_compares_arguments(app_dir: Path) -> None:
    name = f"cli-strict-{uuid.uuid4().hex[:6]}"
    v1 = write_module(app_dir, name)
    record_log(app_dir, v1, app_dir / "run.json")
    v2 = write_module(app_dir, name, fetch_arg="n + 1")  # same commands, new arguments
    log = str(app_dir / "run.json")

    strict = rk("replay", f"{v2}:flow", log, "--app-dir", str(app_dir))
    assert strict.exit_code == 1 and "different arguments (strict mode)" in strict.stdout
    lenient = rk("replay", v2, log, "--no-strict", "--app-dir", str(app_dir))  # module only
    assert "OK, 2" in ok(lenient) and "kind and name only" in lenient.stdout


def test_replay_of_a_run_in_flight_and_of_several_logs(runs: str, tmp_path: Path) -> None:
    waiting = tmp_path / "waiting.json"
    ok(rk("workflows", "export", "wait-run", "--url", runs, "-o", str(waiting)))
    out = ok(rk("replay", f"{__name__}:waiter_wf", str(waiting)))
    assert "OK, 2 recorded position(s)" in out and "waits at" in out

    done, failed = tmp_path / "done.json", tmp_path / "failed.json"
    ok(rk("workflows", "export", "ok-run", "--url", runs, "-o", str(done)))
    ok(rk("workflows", "export", "bad-run", "--url", runs, "-o", str(failed)))
    both = ok(rk("replay", __name__, str(done), str(failed)))
    assert both.count(": OK,") == 2 and "ends ERROR as recorded" in both

    by_id = ok(rk("replay", f"{__name__}:waiter_wf", "--id", "wait-run", "--url", runs))
    assert by_id.startswith("run wait-run: OK, 2 recorded position(s)")
    # Every run in flight of the workflows the module defines: only wait-run is.
    in_flight = ok(rk("replay", __name__, "--in-flight", "--url", runs))
    assert in_flight.count(": OK,") == 1 and "run wait-run" in in_flight
    assert "nothing to replay" in error_line(rk("replay", __name__), code=2)


def test_replay_refuses_bad_input_with_exit_2(runs: str, tmp_path: Path) -> None:
    good = tmp_path / "run.json"
    ok(rk("workflows", "export", "ok-run", "--url", runs, "-o", str(good)))
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"hello": "world"}')
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    spec = f"{__name__}:order_wf"
    cases = {
        "no such file": ("replay", spec, str(tmp_path / "missing.json")),
        "invalid JSON": ("replay", spec, str(tmp_path / "garbage.json")),
        "not a replaykit log": ("replay", spec, str(tmp_path / "other.json")),
        "cannot read": ("replay", spec, str(tmp_path / "binary.json")),
        "not a workflow spec": ("replay", "not a spec", str(good)),
        "cannot import 'no_such_module_xyz'": ("replay", "no_such_module_xyz:wf", str(good)),
        "has no attribute 'nope'": ("replay", f"{__name__}:nope", str(good)),
        "not a workflow; decorate": ("replay", f"{__name__}:bump", str(good)),
        "the log is of workflow 'cli-order'": ("replay", f"{__name__}:waiter_wf", str(good)),
    }
    for expected, args in cases.items():
        assert expected in error_line(rk(*args), code=2), args


# -- operating runs: cancel, resume, fork, delete, gc -----------------------------------------


def test_cancel_then_resume_is_finished_by_the_applications_engine(runs: str) -> None:
    out = ok(rk("workflows", "terminate", "wait-run", "--url", runs))
    assert "terminated 'wait-run'" in out
    assert row_of(runs, "wait-run").status is Status.CANCELLED
    assert "already CANCELLED" in error_line(rk("workflows", "cancel", "wait-run", "--url", runs))
    assert "already CANCELLED" in error_line(
        rk("workflows", "terminate", "wait-run", "--url", runs)
    )

    resumed = ok(rk("workflows", "resume", "wait-run", "--url", runs))
    assert "executor id 'app'" in resumed and "'app-v1'" in resumed
    row = row_of(runs, "wait-run")
    assert row.status is Status.PENDING and row.executor_id == "app"
    with app_engine(runs) as eng:  # its next recovery takes the run
        eng.send("wait-run", "hi", topic="go")
        assert eng.handle("wait-run").result(timeout=20) == "got hi"
    assert CALLS == {"finish": 1}  # "prepare" was replayed, not re-run

    assert "fork" in error_line(rk("workflows", "resume", "ok-run", "--url", runs))


def test_resume_a_parked_run_on_another_executor(runs: str) -> None:
    with app_engine(runs, recover=False) as eng:
        eng.park("wait-run", "stuck for the test")
    shown = ok(rk("workflows", "show", "wait-run", "--url", runs))
    assert "parked    stuck for the test" in shown
    ok(rk("workflows", "resume", "wait-run", "--url", runs, "--executor", "app-2"))
    row = row_of(runs, "wait-run")
    assert row.status is Status.PENDING and row.executor_id == "app-2"
    with app_engine(runs, executor_id="app-2") as eng:
        eng.send("wait-run", "again", topic="go")
        assert eng.handle("wait-run").result(timeout=20) == "got again"

    # Resuming onto newer code restamps the run with that version.
    with app_engine(runs, recover=False) as eng:
        eng.start(waiter_wf, workflow_id="wait-2")
        wait_for(lambda: len(eng.steps("wait-2")) == 2, "wait-2 to wait")
        eng.park("wait-2", "for the version test")
    ok(rk("workflows", "resume", "wait-2", "--url", runs, "--app-version", "app-v2"))
    resumed = row_of(runs, "wait-2")
    assert resumed.app_version == "app-v2" and resumed.status is Status.PENDING


def test_fork_reruns_a_fixed_failure_without_repeating_steps(runs: str) -> None:
    out = ok(rk("workflows", "fork", "bad-run", "--from", "2", "--id", "bad-fixed", "--url", runs))
    assert "into 'bad-fixed'" in out and "keeping positions 0..1" in out
    row = row_of(runs, "bad-fixed")
    assert row.status is Status.PENDING
    assert (row.executor_id, row.app_version) == ("app", "app-v1")
    SHIP_FIXED["on"] = True  # the fix is deployed
    with app_engine(runs) as eng:
        result = eng.handle("bad-fixed").result(timeout=20)
        assert result == {"order": "bad-1", "parcel": "parcel-bad-1"}
    assert CALLS == {"ship": 1}  # charge and pack were copied, not repeated
    assert "forked from bad-run at position 2" in ok(
        rk("workflows", "show", "bad-fixed", "--url", runs)
    )
    source_page = ok(rk("workflows", "show", "bad-run", "--url", runs))
    assert "forks: bad-fixed (at position 2, SUCCESS)" in source_page
    assert "forked from" not in source_page

    taken = error_line(
        rk("workflows", "fork", "bad-run", "--from", "2", "--id", "bad-fixed", "--url", runs)
    )
    assert "taken" in taken
    assert "pick a position from 0 to 3" in error_line(
        rk("workflows", "fork", "bad-run", "--from", "9", "--url", runs)
    )
    ok(
        rk(
            "workflows", "fork", "ok-run", "--from", "0", "--id", "ok-again",
            "--executor", "e2", "--app-version", "v2", "--url", runs,
        )
    )  # fmt: skip
    again = row_of(runs, "ok-again")
    assert (again.executor_id, again.app_version, again.status) == ("e2", "v2", Status.PENDING)


def test_delete_asks_first_and_gc_keeps_unfinished_runs(runs: str) -> None:
    aborted = rk("workflows", "delete", "ok-run", "--url", runs, input="n\n")
    assert aborted.exit_code == 1 and row_of(runs, "ok-run") is not None
    assert "deleted 'ok-run'" in ok(rk("workflows", "delete", "ok-run", "--url", runs, input="y\n"))
    assert row_of(runs, "ok-run") is None

    assert "0 finished runs" in ok(rk("workflows", "gc", "--older-than", "1d", "--url", runs))
    assert "1 finished runs" in ok(
        rk("workflows", "gc", "--older-than", "0s", "--dry-run", "--url", runs)
    )
    assert row_of(runs, "bad-run") is not None  # a dry run deletes nothing
    assert "deleted 1 finished runs" in ok(
        rk("workflows", "gc", "--older-than", "0s", "--yes", "--url", runs)
    )
    assert row_of(runs, "bad-run") is None and row_of(runs, "wait-run") is not None
    assert "deleted 1 runs" in ok(
        rk("workflows", "gc", "--older-than", "0s", "--include-unfinished", "-y", "--url", runs)
    )
    assert "no workflow runs match" in ok(rk("workflows", "list", "--url", runs))


# -- the schema --------------------------------------------------------------------------------


def test_db_migrate_and_status(url: str) -> None:
    if url.startswith("sqlite"):
        # No database yet: reading commands refuse rather than create an empty one.
        assert "no SQLite database" in error_line(rk("db", "status", "--url", url))
    else:
        assert "no schema yet" in ok(rk("db", "status", "--url", url))
        assert "replaykit db migrate" in error_line(rk("workflows", "list", "--url", url))
        behind = rk("db", "status", "--url", url, "--check")
        assert behind.exit_code == 1
    migrated = ok(rk("db", "migrate", "--url", url))
    assert "up to date" in migrated
    assert "up to date" in ok(rk("db", "migrate", "--url", url))  # idempotent
    data = json.loads(ok(rk("db", "status", "--url", url, "--json", "--check")))
    assert data["up_to_date"] is True and data["version"] == data["latest"] >= 1
    assert "no workflow runs match" in ok(rk("workflows", "list", "--url", url))


# -- errors --------------------------------------------------------------------------------------


def test_unknown_ids_are_one_line_errors(runs: str) -> None:
    for args in (
        ("workflows", "show", "nope"),
        ("workflows", "export", "nope"),
        ("workflows", "cancel", "nope"),
        ("workflows", "resume", "nope"),
        ("workflows", "fork", "nope", "--from", "0"),
        ("workflows", "delete", "nope", "--yes"),
    ):
        assert "no workflow run with id 'nope'" in error_line(rk(*args, "--url", runs)), args


def test_bad_urls_and_usage_are_one_line_errors(tmp_path: Path) -> None:
    assert "unknown scheme 'nosuch'" in error_line(rk("workflows", "list", "--url", "nosuch://x"))
    assert "name a file, not a host" in error_line(
        rk("workflows", "list", "--url", "sqlite://host/x.db")
    )
    assert "no SQLite database" in error_line(
        rk("workflows", "list", "--url", f"sqlite:///{tmp_path / 'absent.db'}")
    )
    assert "cannot open SQLite database" in error_line(
        rk("db", "migrate", "--url", f"sqlite:///{tmp_path / 'no' / 'dir' / 'x.db'}")
    )
    assert "Missing argument" in error_line(rk("workflows", "show"), code=2)
    assert "is neither an ISO 8601 time" in error_line(
        rk("workflows", "list", "--since", "yesterday"), code=2
    )
    assert "No such command" in error_line(rk("workflows", "frobnicate"), code=2)


def test_unreachable_database_in_a_real_process(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REPLAYKIT_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "replaykit", "workflows", "list", "--url",
         "postgresql://nobody@127.0.0.1:1/x?connect_timeout=1"],
        capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot connect to PostgreSQL" in lines[0], proc.stderr
    assert "nobody@127.0.0.1:1" in lines[0]


def test_console_script_replays_in_a_real_process(runs: str, tmp_path: Path) -> None:
    log = tmp_path / "run.json"
    ok(rk("workflows", "export", "ok-run", "--url", runs, "-o", str(log)))
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}"}
    proc = subprocess.run(
        [sys.executable, "-m", "replaykit", "replay", "test_cli:order_wf", str(log)],
        capture_output=True, text=True, env=env, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "OK, 3 recorded position(s)" in proc.stdout


WORKER_MODULE = """
from replaykit import Queue, Step, workflow

jobs = Queue({queue!r})

def double(n):
    return n * 2

@workflow(name={name!r})
def job(n: int):
    return (yield Step("double", double, n))
"""


def test_worker_drains_its_queue_until_sigterm(app_dir: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    module, queue = f"rk_worker_{suffix}", f"jobs-{suffix}"
    (app_dir / f"{module}.py").write_text(WORKER_MODULE.format(queue=queue, name=f"job-{suffix}"))
    url = f"sqlite:///{app_dir / 'worker.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "replaykit", "worker", module, "--url", url,
         "--queue", queue, "--poll-interval", "0.05", "--executor-id", "w-1",
         "--app-version", "v1"],
        cwd=app_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        sys.path.insert(0, str(app_dir))
        job = importlib.import_module(module).job
        # Claims match app versions, and the default version digests every workflow
        # a process registered: this process registered more than the worker did.
        with Engine(url, queues=[], app_version="v1", poll_interval=0.05) as producer:
            handle = producer.enqueue(queue, job, 21, workflow_id="job-1")
            assert handle.result(timeout=30) == 42
            assert handle.row().executor_id == "w-1"  # the worker process ran it
    finally:
        worker.terminate()  # SIGTERM: a graceful drain
        _out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert "draining" in err and "Traceback" not in err

    missing = rk("worker", "no_such_module_xyz", "--url", url)
    assert "cannot import 'no_such_module_xyz'" in error_line(missing)
