"""`replaykit schedules ...` and `workflows list --stranded`, on SQLite and PostgreSQL.

The schedules are defined as an application defines them (`@schedule` above
`@workflow`) and registered in the store by a real Engine on a virtual clock
that never reaches a tick, so every run seen here was asked for through the
command. The command imports none of that code: it works on the store alone,
and the engine carries out what it asked for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import error_line, ok, rk, wait_for
from replaykit import Engine, Now, Queue, Status, VirtualClock, workflow
from replaykit.runtime import schedules as schedules_module
from replaykit.runtime.schedules import schedule
from replaykit.stores import open_store
from replaykit.stores.base import ScheduleSpec, ScheduleState, Store, WorkflowFilter, WorkflowRow

QUEUE = "cli-sched-queue"
BERLIN = "Europe/Berlin"


@workflow(name="cli-sched-tick")
def tick_wf(tick: datetime) -> Generator[Any, Any, str]:
    yield Now()
    return tick.isoformat()


@pytest.fixture
def url(created_url: str) -> str:
    """The store each test runs on: SQLite and PostgreSQL, tables made."""
    return created_url


@pytest.fixture
def app_schedules(monkeypatch: pytest.MonkeyPatch) -> None:
    """The application's @schedule definitions, in a registry of this test's own.

    Every Engine started with schedules=True takes this process's registered
    schedules; other tests' engines must not find these.
    """
    monkeypatch.setattr(schedules_module, "_schedules", {})
    Queue(QUEUE)  # registered here: other tests' fixtures restore the queue registry
    schedule("0 3 * * *", name="cli-nightly", tz=BERLIN, queue=QUEUE)(tick_wf)
    schedule("0 * * * *", name="cli-hourly")(tick_wf)
    # backfill=True, and no run yet: an engine has no tick to catch up from.
    schedule("0 0 1 1 *", name="cli-yearly", backfill=True)(tick_wf)


def app_engine(url: str) -> Engine:
    """The application's engine; its clock stays where no schedule has a tick."""
    clock = VirtualClock(datetime(2030, 2, 1, 0, 0, 30, tzinfo=UTC), autojump=False)
    return Engine(url, executor_id="app", clock=clock, poll_interval=0.05)


def with_store(url: str, read: Callable[[Store], Any]) -> Any:
    store = open_store(url)
    try:
        return read(store)
    finally:
        store.close()


def states(url: str) -> dict[str, ScheduleState]:
    found: dict[str, ScheduleState] = with_store(url, lambda store: store.schedule_states())
    return found


def row(url: str, workflow_id: str) -> WorkflowRow | None:
    found: WorkflowRow | None = with_store(url, lambda store: store.get_workflow(workflow_id))
    return found


def registered(url: str) -> None:
    """Start and stop the application once: its engine registers its schedules."""
    with app_engine(url):
        wait_for(lambda: len(states(url)) == 3, "the registration")


def schedule_runs(url: str, name: str) -> set[str]:
    rows = with_store(
        url, lambda store: store.list_workflows(WorkflowFilter(name="cli-sched-tick"))
    )
    return {r.workflow_id for r in rows if r.workflow_id.startswith(f"schedule:{name}:")}


@pytest.mark.usefixtures("app_schedules")
def test_list_shows_each_schedule_and_pause_resume_delete_change_the_store(url: str) -> None:
    registered(url)
    listed = {
        entry["name"]: entry
        for entry in json.loads(ok(rk("schedules", "list", "--url", url, "--json")))
    }
    nightly = listed["cli-nightly"]
    assert {k: nightly[k] for k in ("workflow", "cron", "tz", "queue", "backfill", "paused")} == {
        "workflow": "cli-sched-tick",
        "cron": "0 3 * * *",
        "tz": BERLIN,
        "queue": QUEUE,
        "backfill": False,
        "paused": False,
    }
    # The next 03:00 in Berlin after now, as a UTC instant (01:00 or 02:00 UTC).
    next_tick = datetime.fromisoformat(nightly["next_tick"])
    assert next_tick > datetime.now(UTC) and next_tick.astimezone(UTC).hour in (1, 2)
    assert nightly["trigger_requested_at"] is None and nightly["backfill_requested"] is None
    assert (listed["cli-hourly"]["tz"], listed["cli-hourly"]["backfill"]) == (None, False)
    assert listed["cli-yearly"]["backfill"] is True

    table = ok(rk("schedules", "list", "--url", url)).splitlines()
    assert table[0].split() == [
        "NAME",
        "WORKFLOW",
        "CRON",
        "TZ",
        "QUEUE",
        "PAUSED",
        "NEXT",
        "(UTC)",
        "REQUESTS",
    ]
    hourly_line = next(line for line in table if line.startswith("cli-hourly"))
    assert hourly_line.split()[:9] == [
        "cli-hourly",
        "cli-sched-tick",
        "0",
        "*",
        "*",
        "*",
        "*",
        "UTC",
        "-",
    ]

    with app_engine(url) as engine:
        paused = ok(rk("schedules", "pause", "cli-nightly", "--url", url))
        assert "paused schedule 'cli-nightly'" in paused
        assert states(url)["cli-nightly"].paused and not states(url)["cli-hourly"].paused
        assert "paused already" in ok(rk("schedules", "pause", "cli-nightly", "--url", url))
        wait_for(
            lambda: [s.paused for s in engine.schedules.list()] == [False, True, False],
            "the engine to see the pause",
        )
        assert json.loads(ok(rk("schedules", "list", "--json", "--url", url)))[1]["paused"]

        resumed = ok(rk("schedules", "resume", "cli-nightly", "--url", url))
        assert "resumed schedule 'cli-nightly'" in resumed and "are not started" in resumed
        assert not states(url)["cli-nightly"].paused
        assert "was not paused" in ok(rk("schedules", "resume", "cli-nightly", "--url", url))
        ok(rk("schedules", "pause", "cli-yearly", "--url", url))
        catching_up = ok(rk("schedules", "resume", "cli-yearly", "--url", url))
        assert "engines start the ticks missed" in catching_up  # backfill=True

        # Without --yes and without a terminal to answer, nothing is deleted.
        assert rk("schedules", "delete", "cli-nightly", "--url", url).exit_code == 1
        assert "cli-nightly" in states(url)
        deleted = ok(rk("schedules", "delete", "cli-nightly", "--yes", "--url", url))
        assert "registers it again, unpaused" in deleted
        assert "cli-nightly" not in states(url)
        # The running engine drops it rather than writing it back.
        wait_for(lambda: len(engine.schedules.list()) == 2, "the engine to drop it")
        time.sleep(0.3)
        assert set(states(url)) == {"cli-hourly", "cli-yearly"}

    for command in ("pause", "resume", "trigger", "delete"):
        extra = ("--yes",) if command == "delete" else ()
        line = error_line(rk("schedules", command, "cli-nighty", *extra, "--url", url), 1)
        assert "no schedule named 'cli-nighty'" in line
        assert "known: 'cli-hourly', 'cli-yearly'" in line
    assert "no schedule named" in error_line(
        rk(
            "schedules",
            "backfill",
            "gone",
            "--from",
            "2030-01-01",
            "--to",
            "2030-01-02",
            "--url",
            url,
        ),
        1,
    )


@pytest.mark.usefixtures("app_schedules")
def test_a_trigger_waits_in_the_store_until_an_engine_that_defines_it_runs_it(url: str) -> None:
    registered(url)
    ok(rk("schedules", "pause", "cli-nightly", "--url", url))  # a trigger runs paused or not
    asked = json.loads(ok(rk("schedules", "trigger", "cli-nightly", "--json", "--url", url)))
    run_id = asked["run_id"]
    assert run_id.startswith("schedule:cli-nightly:manual:") and not asked["joined"]
    pending_at = states(url)["cli-nightly"].trigger_at
    assert (
        pending_at is not None and run_id == f"schedule:cli-nightly:manual:{pending_at.isoformat()}"
    )
    again = ok(rk("schedules", "trigger", "cli-nightly", "--url", url))
    assert "still pending, and this one joins it" in again and run_id in again
    listed = ok(rk("schedules", "list", "--url", url))
    assert f"trigger asked {pending_at:%Y-%m-%d %H:%M:%S}" in listed
    assert row(url, run_id) is None  # no engine yet: the command runs nothing

    with app_engine(url) as engine:
        wait_for(lambda: row(url, run_id) is not None, "the engine to start the triggered run")
        assert engine.handle(run_id).result(timeout=20) == pending_at.isoformat()
        wait_for(lambda: states(url)["cli-nightly"].trigger_at is None, "the request cleared")
    done = row(url, run_id)
    assert done is not None and (done.status, done.queue) == (Status.SUCCESS, QUEUE)
    assert schedule_runs(url, "cli-nightly") == {run_id}
    assert states(url)["cli-nightly"].paused  # the trigger did not resume it


@pytest.mark.usefixtures("app_schedules")
def test_backfill_asks_for_each_tick_once_and_refuses_bad_ranges(url: str) -> None:
    registered(url)
    backfill = ("schedules", "backfill", "cli-hourly", "--url", url)
    # No engine runs: the first range stays pending, and another one is refused.
    first = json.loads(
        ok(rk(*backfill, "--from", "2030-01-01T00:00", "--to", "2030-01-01T03:00", "--json"))
    )
    ids = [f"schedule:cli-hourly:2030-01-01T0{h}:00:00+00:00" for h in range(3)]
    assert first["run_ids"] == ids  # [from, to), a naive time read as UTC
    state = states(url)["cli-hourly"]
    assert (state.backfill_start, state.backfill_end) == (
        datetime(2030, 1, 1, tzinfo=UTC),
        datetime(2030, 1, 1, 3, tzinfo=UTC),
    )
    assert "backfill 2030-01-01 00:00:00 to 2030-01-01 03:00:00" in ok(
        rk("schedules", "list", "--url", url)
    )
    busy = error_line(rk(*backfill, "--from", "2030-01-02T00:00", "--to", "2030-01-02T01:00"), 1)
    assert "has a backfill from 2030-01-01 00:00:00 to 2030-01-01 03:00:00 UTC pending" in busy
    same = ok(rk(*backfill, "--from", "2030-01-01T01:00+01:00", "--to", "2030-01-01T03:00Z"))
    assert "asked for the 3 tick(s)" in same  # the same range, written another way

    with app_engine(url) as engine:
        wait_for(lambda: schedule_runs(url, "cli-hourly") == set(ids), "the backfill's runs")
        for run_id in ids:
            assert engine.handle(run_id).result(timeout=20) == run_id.split(":", 2)[2]
        wait_for(lambda: states(url)["cli-hourly"].backfill_start is None, "the request cleared")
        # Idempotent: a wider range runs only the ticks that have no run yet.
        wider = json.loads(
            ok(
                rk(
                    *backfill,
                    "--from",
                    "2030-01-01T02:00+01:00",
                    "--to",
                    "2030-01-01T05:00+01:00",
                    "--json",
                )
            )
        )
        assert wider["run_ids"] == [*ids[1:], "schedule:cli-hourly:2030-01-01T03:00:00+00:00"]
        wait_for(lambda: len(schedule_runs(url, "cli-hourly")) == 4, "the one new run")
        time.sleep(0.3)
        assert len(schedule_runs(url, "cli-hourly")) == 4

    backwards = error_line(rk(*backfill, "--from", "2030-01-02", "--to", "2030-01-01"), 2)
    assert "is not after --from" in backwards and "[--from, --to)" in backwards
    not_a_time = error_line(rk(*backfill, "--from", "last tuesday", "--to", "2030-01-01"), 2)
    assert "--from" in not_a_time and "ISO 8601 time (2024-06-01T12:00)" in not_a_time
    too_long = error_line(rk(*backfill, "--from", "2030-01-01", "--to", "2032-01-01"), 2)
    assert "more than 10,000 ticks" in too_long and "shorter ranges" in too_long
    no_start = error_line(
        rk("schedules", "backfill", "cli-hourly", "--to", "2030-01-01", "--url", url), 2
    )
    assert "Missing option '--from'" in no_start
    assert len(schedule_runs(url, "cli-hourly")) == 4


def test_stored_schedule_fields_reach_the_terminal_escaped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'evil.db'}"
    red, title = "\x1b[31m", "\x1b]0;title\x07"
    name = f"evil{red}[bold]x[/bold]"
    spec = ScheduleSpec(name, f"wf{title}", "0 3 * * *", queue="q\u202eabc")
    with_store(url, lambda store: store.register_schedules([spec], datetime.now(UTC)))
    for env in (None, {"FORCE_COLOR": "1", "COLUMNS": "300"}):
        result = rk("schedules", "list", "--url", url, env=env)
        out = ok(result)
        for raw in ("\x07", "\u202e", red, "\x1b]"):
            assert raw not in out, (raw, out)
        assert r"evil\x1b[31m[bold]x[/bold]" in out and r"wf\x1b]0;title\x07" in out
        assert r"q\u202eabc" in out
    listed = ok(rk("schedules", "list", "--json", "--url", url))
    assert "\x1b" not in listed and json.loads(listed)[0]["name"] == name
    paused = ok(rk("schedules", "pause", name, "--url", url))
    assert "\x1b" not in paused and r"evil\x1b[31m" in paused
    assert with_store(url, lambda store: store.schedule_states()[name].paused)


# -- workflows list --stranded ----------------------------------------------------------------


def test_list_stranded_shows_the_runs_no_engine_of_the_version_picks_up(url: str) -> None:
    def seed(store: Store) -> None:
        for workflow_id, status, version, executor, queue in [
            ("old-pending", Status.PENDING, "v1", "web-1", None),
            ("new-pending", Status.PENDING, "v2", "web-1", None),
            ("old-elsewhere", Status.PENDING, "v1", "web-2", None),
            ("old-queued", Status.ENQUEUED, "v1", "", "jobs"),
            ("new-queued", Status.ENQUEUED, "v2", "", "jobs"),
            ("old-done", Status.PENDING, "v1", "web-1", None),
        ]:
            store.create_workflow(
                WorkflowRow(
                    workflow_id,
                    "job",
                    status,
                    app_version=version,
                    executor_id=executor,
                    queue=queue,
                )
            )
            time.sleep(0.01)  # created_at orders the listing
        store.finish_workflow("old-done", Status.SUCCESS, None)

    with_store(url, seed)
    stranded = ("workflows", "list", "--stranded", "--app-version", "v2", "--url", url)
    listed = json.loads(ok(rk(*stranded, "--json")))
    assert [r["workflow_id"] for r in listed] == ["old-pending", "old-elsewhere", "old-queued"]
    # --executor narrows the PENDING runs; ENQUEUED ones belong to no engine yet.
    mine = json.loads(ok(rk(*stranded, "--executor", "web-1", "--json")))
    assert [r["workflow_id"] for r in mine] == ["old-pending", "old-queued"]
    newest = json.loads(ok(rk(*stranded, "--newest", "--limit", "2", "--json")))
    assert [r["workflow_id"] for r in newest] == ["old-queued", "old-elsewhere"]

    result = rk(*stranded, "--limit", "2")
    table = ok(result)
    assert "old-pending" in table and "old-elsewhere" in table and "old-queued" not in table
    assert "1 more match: --offset 2" in result.stderr
    assert "workflows resume ID --app-version v2" in result.stderr
    assert "no stranded runs match" in ok(rk(*stranded, "--name", "other"))

    needs_version = error_line(rk("workflows", "list", "--stranded", "--url", url), 2)
    assert "--stranded needs --app-version V" in needs_version
    assert "cannot compute the default one" in needs_version
    alone = error_line(rk("workflows", "list", "--app-version", "v2", "--url", url), 2)
    assert "--app-version goes with --stranded" in alone and "--version V" in alone
    mixed = error_line(rk(*stranded, "--status", "PENDING"), 2)
    assert "takes no --status or --version" in mixed
