"""Schedules at run time: time zones across DST, pause/resume/delete/trigger/backfill shared
by every engine on a store, and the store's `schedules` table (migration 4)."""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

import replaykit
from conftest import postgres_schema_at, wait_for
from replaykit import Engine, Now, Queue, Status, VirtualClock, workflow
from replaykit.runtime.schedules import (
    MAX_BACKFILL_TICKS,
    Schedule,
    ScheduleNotFound,
    backfill_schedule,
    delete_schedule,
    list_schedules,
    pause_schedule,
    resume_schedule,
    ticks_in,
    trigger_schedule,
)
from replaykit.stores import open_store
from replaykit.stores.base import ScheduleSpec, Store
from replaykit.stores.sqlite import SqliteStore

BERLIN = "Europe/Berlin"
# 2030's changes in Europe/Berlin: 02:00 CET -> 03:00 CEST on 31 March (01:00 UTC),
# 03:00 CEST -> 02:00 CET on 27 October (01:00 UTC).
SPRING = datetime(2030, 3, 31, 1, 0, tzinfo=UTC)
AUTUMN = datetime(2030, 10, 27, 1, 0, tzinfo=UTC)


@workflow(name="rt-tick")
def tick_wf(tick: datetime) -> Generator[Any, Any, str]:
    yield Now()
    return tick.isoformat()


sched_queue = Queue("rt-sched-queue")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def client_store(target: Any) -> Store:
    """The store as a client or the CLI opens it: no engine, no workflow code."""
    return target if isinstance(target, replaykit.MemoryStore) else open_store(target)


def close_client(store: Store, target: Any) -> None:
    if store is not target:
        store.close()


def run_ids(engine: Engine, name: str) -> set[str]:
    return {
        r.workflow_id
        for r in engine.list_workflows(name="rt-tick")
        if r.workflow_id.startswith(f"schedule:{name}:")
    }


def started(engine: Engine, run_id: str) -> bool:
    return engine.store.get_workflow(run_id) is not None


def tick_id(name: str, tick: datetime) -> str:
    return f"schedule:{name}:{tick.astimezone(UTC).isoformat()}"


def engine_on(target: Any, clock: VirtualClock, executor_id: str = "local") -> Engine:
    return Engine(target, executor_id=executor_id, clock=clock, poll_interval=0.03, schedules=False)


def add(engine: Engine, entry: Schedule) -> None:
    """Give the engine a schedule, and wait until its loop has taken it in."""
    engine.schedules.add(entry)
    wait_for(
        lambda: entry.name in engine.store.schedule_states(),
        f"schedule {entry.name!r} in the store",
    )
    settle()


def settle() -> None:
    """Long enough for every engine's loop to have read the store again (10 poll intervals)."""
    time.sleep(0.3)


# -- time zones: the ticks themselves -----------------------------------------------------


def local_times(ticks: list[datetime]) -> list[str]:
    return [t.astimezone(ZoneInfo(BERLIN)).strftime("%m-%d %H:%M %Z") for t in ticks]


def test_a_daily_time_skipped_by_spring_forward_fires_once_at_the_end_of_the_gap() -> None:
    entry = Schedule("30 2 * * *", tick_wf, "berlin-0230", tz=BERLIN)
    ticks = list(ticks_in(entry, utc(2030, 3, 29), utc(2030, 4, 2)))
    # 02:30 does not exist on 31 March: that day's run is at 03:00 CEST, 01:00 UTC.
    assert local_times(ticks) == [
        "03-29 02:30 CET",
        "03-30 02:30 CET",
        "03-31 03:00 CEST",
        "04-01 02:30 CEST",
    ]
    assert ticks[2] == SPRING


def test_a_daily_time_repeated_by_fall_back_fires_once_at_its_first_occurrence() -> None:
    entry = Schedule("30 2 * * *", tick_wf, "berlin-0230", tz=BERLIN)
    ticks = list(ticks_in(entry, utc(2030, 10, 25), utc(2030, 10, 29)))
    assert local_times(ticks) == [
        "10-25 02:30 CEST",
        "10-26 02:30 CEST",
        "10-27 02:30 CEST",
        "10-28 02:30 CET",
    ]
    assert ticks[2] == utc(2030, 10, 27, 0, 30)


@pytest.mark.parametrize(
    ("day", "next_day", "hours"), [((3, 31), (4, 1), 23), ((10, 27), (10, 28), 25)]
)
def test_an_hourly_schedule_follows_real_time_through_both_changes(
    day: tuple[int, int], next_day: tuple[int, int], hours: int
) -> None:
    entry = Schedule("0 * * * *", tick_wf, "berlin-hourly", tz=BERLIN)
    zone = ZoneInfo(BERLIN)
    ticks = list(
        ticks_in(entry, datetime(2030, *day, tzinfo=zone), datetime(2030, *next_day, tzinfo=zone))
    )
    assert len(ticks) == hours  # the local day has that many hours, each fires once
    assert all(b - a == timedelta(hours=1) for a, b in itertools.pairwise(ticks))
    ids = [entry.run_id(t) for t in ticks]
    assert len(set(ids)) == hours  # the repeated hour's two 02:00s have ids of their own


def _reference(
    cron: str, tz: str, start: datetime, end: datetime, real_time: bool
) -> list[datetime]:
    """The DST rule, minute by minute in UTC: what the schedule must fire."""
    zone, minute, fired = ZoneInfo(tz), timedelta(minutes=1), []
    at = start
    while at < end:
        local, before = at.astimezone(zone), (at - minute).astimezone(zone)
        wall = local.replace(tzinfo=None)
        if croniter.match(cron, wall) and (real_time or local.fold == 0):
            fired.append(at)
        elif not real_time and local.utcoffset() > before.utcoffset():  # type: ignore[operator]
            skipped = before.replace(tzinfo=None) + minute
            while skipped < wall:
                if croniter.match(cron, skipped):
                    fired.append(at)  # the end of the gap
                    break
                skipped += minute
        at += minute
    return fired


@pytest.mark.parametrize(
    ("tz", "around"),
    [
        (BERLIN, SPRING),
        (BERLIN, AUTUMN),
        ("America/New_York", utc(2030, 3, 10, 7)),
        ("America/New_York", utc(2030, 11, 3, 6)),
        ("Australia/Lord_Howe", utc(2030, 10, 5, 15, 30)),  # a 30-minute change
        ("Europe/Dublin", AUTUMN),  # "negative" DST in winter
    ],
)
@pytest.mark.parametrize(
    ("cron", "real_time"),
    [
        ("30 2 * * *", False),
        ("0,30 1-3 * * *", False),
        ("*/20 * * * *", True),
        ("@hourly", True),
        ("10 * * * *", True),
    ],
)
def test_ticks_agree_with_the_rule_checked_minute_by_minute(
    tz: str, around: datetime, cron: str, real_time: bool
) -> None:
    start, end = around - timedelta(hours=4), around + timedelta(hours=4)
    entry = Schedule(cron, tick_wf, "ref", tz=tz)
    assert list(ticks_in(entry, start, end)) == _reference(cron, tz, start, end, real_time)


def test_run_ids_come_from_the_utc_instant() -> None:
    entry = Schedule("30 2 * * *", tick_wf, "ids", tz=BERLIN)
    tick = entry.next_tick(utc(2030, 6, 1))
    assert tick == utc(2030, 6, 1, 0, 30) and tick.tzinfo is UTC
    local = tick.astimezone(ZoneInfo(BERLIN))
    assert entry.run_id(local) == entry.run_id(tick) == "schedule:ids:2030-06-01T00:30:00+00:00"
    # A UTC schedule's ids are as they always were.
    assert Schedule("0 3 * * *", tick_wf, "u").run_id(utc(2030, 1, 1, 3)) == (
        "schedule:u:2030-01-01T03:00:00+00:00"
    )


def test_an_unknown_time_zone_is_refused_with_the_likely_name() -> None:
    with pytest.raises(ValueError, match=r"'Europe/Berlinn' is not a time zone.*'Europe/Berlin'"):
        Schedule("0 3 * * *", tick_wf, "typo", tz="Europe/Berlinn")
    with pytest.raises(ValueError, match="IANA name"):
        replaykit.schedule("0 3 * * *", tz="../../etc/passwd")(tick_wf)
    with pytest.raises(ValueError, match="no time zone"):
        list(ticks_in(Schedule("0 3 * * *", tick_wf, "n"), datetime(2030, 1, 1), utc(2030, 1, 2)))


def test_a_schedule_name_that_no_run_id_could_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="too long"):
        Schedule("0 3 * * *", tick_wf, "x" * 990)
    with pytest.raises(ValueError, match="NUL"):
        Schedule("0 3 * * *", tick_wf, "a\x00b")


# -- the store's schedule states, on every store -------------------------------------------


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    yield opened
    opened.close()


T0 = utc(2030, 1, 1)


def test_schedule_states_are_stored_alike_by_every_store(store: Store) -> None:
    assert store.schedule_states() == {}
    store.register_schedules(
        [
            ScheduleSpec("a", "wf", "* * * * *"),
            ScheduleSpec("b", "wf", "0 3 * * *", BERLIN, "q", backfill=True),
        ],
        T0,
    )
    states = store.schedule_states()
    assert list(states) == ["a", "b"]
    assert states["b"].spec == ScheduleSpec("b", "wf", "0 3 * * *", BERLIN, "q", True)
    assert not states["a"].paused and states["a"].updated_at == T0
    # The same definition again writes nothing; a new one is written, the state kept.
    store.register_schedules([ScheduleSpec("a", "wf", "* * * * *")], T0 + timedelta(days=1))
    assert store.schedule_states()["a"].updated_at == T0
    assert store.set_schedule_paused("a", True, T0 + timedelta(days=2))
    assert store.set_schedule_paused("a", True, T0 + timedelta(days=3))  # idempotent
    assert store.schedule_states()["a"].updated_at == T0 + timedelta(days=2)
    store.register_schedules([ScheduleSpec("a", "wf", "*/2 * * * *")], T0 + timedelta(days=4))
    a = store.schedule_states()["a"]
    assert a.cron == "*/2 * * * *" and a.paused and a.updated_at == T0 + timedelta(days=4)
    assert not store.set_schedule_paused("missing", True, T0)


def test_requests_join_and_are_cleared_only_as_carried_out(store: Store) -> None:
    store.register_schedules([ScheduleSpec("a", "wf", "* * * * *")], T0)
    at = T0 + timedelta(hours=5, microseconds=7)
    assert store.request_schedule_trigger("a", at) == at
    assert store.request_schedule_trigger("a", at + timedelta(seconds=1)) == at  # joins
    assert store.request_schedule_trigger("missing", at) is None
    store.clear_schedule_request("a", trigger_at=at + timedelta(seconds=1))  # not that one
    assert store.schedule_states()["a"].trigger_at == at
    store.clear_schedule_request("a", trigger_at=at)
    assert store.schedule_states()["a"].trigger_at is None

    asked = (T0, T0 + timedelta(hours=1))
    assert store.request_schedule_backfill("a", *asked, T0) == asked
    assert store.request_schedule_backfill("a", T0, T0 + timedelta(hours=2), T0) == asked
    assert store.request_schedule_backfill("missing", *asked, T0) is None
    store.clear_schedule_request("a", backfill=asked)
    state = store.schedule_states()["a"]
    assert state.backfill_start is None and state.backfill_end is None

    assert store.delete_schedule_state("a")
    assert not store.delete_schedule_state("a")
    assert store.schedule_states() == {}
    store.clear_schedule_request("a", trigger_at=at)  # gone: nothing to do


def test_schedule_names_are_refused_as_other_names_are(store: Store) -> None:
    with pytest.raises(ValueError, match=r"schedule name .* NUL"):
        store.set_schedule_paused("a\x00", True, T0)
    with pytest.raises(ValueError, match=r"schedule name .* bytes"):
        store.delete_schedule_state("x" * 1001)
    with pytest.raises(ValueError, match="schedule name"):
        store.register_schedules([ScheduleSpec("\ud800", "wf", "* * * * *")], T0)
    assert store.schedule_states() == {}


def test_a_sqlite_database_of_version_3_gets_the_schedules_table(tmp_path: Path) -> None:
    from replaykit.stores.sqlite import _MIGRATIONS

    path = tmp_path / "v3.db"
    with sqlite3.connect(path) as db:
        for migration in _MIGRATIONS[:3]:
            for statement in migration:
                db.execute(statement)
        db.execute("PRAGMA user_version = 3")
    migrated = SqliteStore(path)
    try:
        assert migrated.schema_status() == (len(_MIGRATIONS), len(_MIGRATIONS))
        migrated.register_schedules([ScheduleSpec("a", "wf", "* * * * *")], T0)
        assert migrated.set_schedule_paused("a", True, T0)
    finally:
        migrated.close()
    again = SqliteStore(path)
    try:
        assert again.schedule_states()["a"].paused  # durable
    finally:
        again.close()


def test_a_postgres_schema_of_version_3_gets_the_schedules_table(
    pg_url: str, pg_schema: str
) -> None:
    from replaykit.stores.postgres import MIGRATIONS, PostgresStore

    postgres_schema_at(pg_url, pg_schema, 3)
    store = PostgresStore(pg_url, schema=pg_schema)
    try:
        assert store.schema_status() == (len(MIGRATIONS), len(MIGRATIONS))
        store.register_schedules([ScheduleSpec("a", "wf", "* * * * *")], T0)
        assert store.set_schedule_paused("a", True, T0)
        assert store.schedule_states()["a"].paused
    finally:
        store.close()


# -- engines on one store --------------------------------------------------------------


def test_a_tz_schedule_fires_once_per_day_across_both_changes_in_an_engine(
    shared: Any,
) -> None:
    target = shared
    for change in (SPRING, AUTUMN):
        clock = VirtualClock(change - timedelta(days=1, hours=1), autojump=False)
        name = f"berlin-{change.month}"
        with engine_on(target, clock) as engine:
            add(engine, Schedule("30 2 * * *", tick_wf, name, tz=BERLIN))
            settle()
            for _ in range(12):  # three days, in steps of six hours
                clock.advance(timedelta(hours=6))
                time.sleep(0.1)
            wait_for(lambda: len(run_ids(engine, name)) >= 3, "three daily runs")  # noqa: B023
            settle()
            ids = run_ids(engine, name)
            day_of_change = SPRING if change is SPRING else utc(2030, 10, 27, 0, 30)
            assert tick_id(name, day_of_change) in ids
            assert len(ids) == 3, sorted(ids)  # once a day, not twice on the long day
            for run_id in ids:
                assert engine.handle(run_id).result(timeout=10) == run_id.split(":", 2)[2]


def test_pause_in_one_engine_stops_another_and_resume_skips_what_was_missed(
    shared: Any,
) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 1, 1, 0, 0, 30), autojump=False)
    with engine_on(target, clock, "runner") as runner, engine_on(target, clock, "ops") as ops:
        add(runner, Schedule("0 * * * *", tick_wf, "hourly"))
        wait_for(lambda: "hourly" in ops.store.schedule_states(), "the schedule's state")
        clock.advance(timedelta(hours=1))  # 01:00:30
        wait_for(
            lambda: tick_id("hourly", utc(2030, 1, 1, 1)) in run_ids(runner, "hourly"),
            "the 01:00 run",
        )

        # The operator's engine does not define the schedule; the store knows it.
        assert ops.schedules.pause("hourly") is True
        assert ops.schedules.pause("hourly") is False  # already paused
        settle()
        clock.advance(timedelta(hours=2))  # 03:00:30: 02:00 and 03:00 come while paused
        settle()
        assert run_ids(runner, "hourly") == {tick_id("hourly", utc(2030, 1, 1, 1))}
        [listed] = ops.schedules.list()
        assert listed.paused and listed.stored and not listed.defined_here

        assert ops.schedules.resume("hourly") is True
        settle()
        clock.advance(timedelta(hours=1))  # 04:00:30
        wait_for(
            lambda: tick_id("hourly", utc(2030, 1, 1, 4)) in run_ids(runner, "hourly"),
            "the 04:00 run",
        )
        settle()
        assert run_ids(runner, "hourly") == {
            tick_id("hourly", utc(2030, 1, 1, 1)),
            tick_id("hourly", utc(2030, 1, 1, 4)),
        }
    # Durable: a new engine on the store sees what was done (here: resumed).
    if not isinstance(target, replaykit.MemoryStore):
        reopened = open_store(target)
        try:
            assert not reopened.schedule_states()["hourly"].paused
        finally:
            reopened.close()


def test_a_paused_schedule_stays_paused_across_a_restart(shared: Any) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 1, 1, 0, 0, 30), autojump=False)
    entry = Schedule("0 * * * *", tick_wf, "restarted")
    with engine_on(target, clock) as engine:
        add(engine, entry)
        engine.schedules.pause("restarted")
    with engine_on(target, clock) as engine:
        add(engine, entry)
        settle()
        clock.advance(timedelta(hours=3))
        settle()
        assert run_ids(engine, "restarted") == set()
        assert [s.paused for s in engine.schedules.list()] == [True]


def test_resume_of_a_backfill_schedule_starts_the_ticks_missed_while_paused(
    shared: Any,
) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 1, 1, 0, 0, 30), autojump=False)
    with engine_on(target, clock) as engine:
        add(engine, Schedule("0 * * * *", tick_wf, "catch-up", backfill=True))
        clock.advance(timedelta(hours=1))
        wait_for(lambda: len(run_ids(engine, "catch-up")) == 1, "the 01:00 run")
        pause_schedule(engine.store, "catch-up")  # as a client would, on the same store
        settle()
        clock.advance(timedelta(hours=2))
        settle()
        assert len(run_ids(engine, "catch-up")) == 1
        resume_schedule(engine.store, "catch-up")
        expected = {tick_id("catch-up", utc(2030, 1, 1, h)) for h in (1, 2, 3)}
        wait_for(lambda: run_ids(engine, "catch-up") == expected, "the missed ticks")
        for run_id in expected:
            assert engine.handle(run_id).result(timeout=10) == run_id.split(":", 2)[2]


def test_trigger_from_a_client_runs_in_the_engine_on_the_schedules_queue(
    shared: Any,
) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 1, 1, 0, 0, 30), autojump=False)
    with engine_on(target, clock) as engine:
        add(engine, Schedule("0 3 * * *", tick_wf, "nightly", queue=sched_queue.name))
        engine.schedules.pause("nightly")  # a trigger is an explicit ask: paused or not
        client = client_store(target)
        try:
            asked_at = utc(2030, 1, 1, 0, 5)
            run_id = trigger_schedule(client, "nightly", registered=(), now=asked_at)
            assert run_id == "schedule:nightly:manual:2030-01-01T00:05:00+00:00"
            wait_for(lambda: started(engine, run_id), "the engine to start it")
            assert engine.handle(run_id).result(timeout=15) == asked_at.isoformat()
            row = engine.handle(run_id).row()
            assert row.queue == sched_queue.name and row.status is Status.SUCCESS
            wait_for(
                lambda: client.schedule_states()["nightly"].trigger_at is None,
                "the request to be cleared",
            )
            # Another trigger is another run; the cron's own ticks are untouched.
            again = trigger_schedule(client, "nightly", registered=(), now=asked_at + timedelta(1))
            assert again != run_id
            wait_for(lambda: started(engine, again), "the engine to start it")
            engine.handle(again).result(timeout=15)
        finally:
            close_client(client, target)
        # From the engine itself: started here and now.
        here = engine.schedules.trigger("nightly")
        assert here.startswith("schedule:nightly:manual:")
        assert engine.handle(here).result(timeout=15) == clock.now().isoformat()
        assert run_ids(engine, "nightly") == {run_id, again, here}


class CountedStates:
    """The store as a schedule loop sees it, counting its reads of the states."""

    def __init__(self, store: Store) -> None:
        self.inner = store
        self.reads = 0

    def schedule_states(self) -> Any:
        self.reads += 1
        return self.inner.schedule_states()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_idle_loop_reads_seldom_where_notes_reach_it_and_hears_a_trigger_at_once(
    shared: Any, store_url: str
) -> None:
    clock = VirtualClock(utc(2030, 1, 1, 0, 0, 30), autojump=False)
    with Engine(
        shared, executor_id="local", clock=clock, poll_interval=1.0, schedules=False
    ) as engine:
        add(engine, Schedule("0 3 * * *", tick_wf, "seldom", queue=sched_queue.name))
        counted = CountedStates(engine.schedules.store)
        engine.schedules.store = counted  # type: ignore[assignment]
        time.sleep(3.5)  # three polls and a half
        if store_url.startswith("sqlite"):
            # Another process's change reaches it by no note: it reads at every poll.
            assert counted.reads >= 2
        else:
            assert counted.reads == 0
        client = client_store(shared)
        try:
            asked_at = utc(2030, 1, 1, 0, 5)
            run_id = trigger_schedule(client, "seldom", registered=(), now=asked_at)
            # Well within the next slow read (300 polls away): the note woke the loop.
            wait_for(lambda: started(engine, run_id), "the engine to start it", timeout=5)
        finally:
            close_client(client, shared)


def test_backfill_runs_each_tick_once_however_often_it_is_asked(shared: Any) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 2, 1), autojump=False)
    start, end = utc(2030, 1, 1), utc(2030, 1, 1, 6)
    with engine_on(target, clock) as engine:
        add(engine, Schedule("0 * * * *", tick_wf, "filled"))
        ids = engine.schedules.backfill("filled", start, end)
        assert ids == [tick_id("filled", utc(2030, 1, 1, h)) for h in range(6)]  # [start, end)
        for run_id in ids:
            engine.handle(run_id).result(timeout=15)
        assert engine.schedules.backfill("filled", start, end) == ids
        settle()
        assert run_ids(engine, "filled") == set(ids)

        # Through the store, as a client asks: an engine that defines it runs it.
        client = client_store(target)
        try:
            wider = backfill_schedule(client, "filled", start, utc(2030, 1, 1, 8), registered=())
            assert wider == [
                *ids,
                tick_id("filled", utc(2030, 1, 1, 6)),
                tick_id("filled", utc(2030, 1, 1, 7)),
            ]
            wait_for(lambda: run_ids(engine, "filled") == set(wider), "the backfill")
            wait_for(
                lambda: client.schedule_states()["filled"].backfill_start is None,
                "the request to be cleared",
            )
            assert backfill_schedule(client, "filled", start, end, registered=()) == ids
            settle()
            assert run_ids(engine, "filled") == set(wider)
        finally:
            close_client(client, target)
        for run_id in wider:
            assert engine.handle(run_id).result(timeout=15) == run_id.split(":", 2)[2]
        assert all(engine.handle(i).status() is Status.SUCCESS for i in run_ids(engine, "filled"))


def test_a_backfill_too_long_or_backwards_starts_nothing(shared: Any) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 2, 1), autojump=False)
    with engine_on(target, clock) as engine:
        add(engine, Schedule("* * * * * *", tick_wf, "every-second"))
        with pytest.raises(ValueError, match=f"more than {MAX_BACKFILL_TICKS:,} ticks"):
            engine.schedules.backfill("every-second", utc(2030, 1, 1), utc(2030, 1, 2))
        with pytest.raises(ValueError, match="more than 10,000 ticks"):
            backfill_schedule(engine.store, "every-second", utc(2030, 1, 1), utc(2030, 1, 2))
        with pytest.raises(ValueError, match=r"not after start.*\[start, end\)"):
            engine.schedules.backfill("every-second", utc(2030, 1, 2), utc(2030, 1, 1))
        with pytest.raises(ValueError, match="no time zone"):
            engine.schedules.backfill("every-second", datetime(2030, 1, 1), utc(2030, 1, 2))
        assert run_ids(engine, "every-second") == set()
        assert engine.store.schedule_states()["every-second"].backfill_start is None


def test_one_backfill_may_be_pending_per_schedule(shared: Any) -> None:
    # No engine runs here: the request stays pending.
    target = shared
    store = client_store(target)
    try:
        entry = Schedule("0 * * * *", tick_wf, "pending")
        first = backfill_schedule(
            store, "pending", utc(2030, 1, 1), utc(2030, 1, 1, 2), registered=[entry]
        )
        assert len(first) == 2
        assert (
            backfill_schedule(store, "pending", utc(2030, 1, 1), utc(2030, 1, 1, 2), registered=())
            == first
        )
        with pytest.raises(ValueError, match="has a backfill pending from 2030-01-01T00:00:00"):
            backfill_schedule(store, "pending", utc(2030, 1, 2), utc(2030, 1, 3), registered=())
        [info] = list_schedules(store, registered=(), now=utc(2030, 1, 1))
        assert info.backfill_requested == (utc(2030, 1, 1), utc(2030, 1, 1, 2))
    finally:
        close_client(store, target)


def test_delete_drops_the_schedule_everywhere_until_an_engine_defines_it_again(
    shared: Any,
) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 1, 1, 0, 0, 30), autojump=False)
    entry = Schedule("0 * * * *", tick_wf, "doomed")
    with engine_on(target, clock, "a") as first, engine_on(target, clock, "b") as second:
        add(first, entry)
        add(second, entry)
        wait_for(lambda: "doomed" in first.store.schedule_states(), "the state")
        settle()
        first.schedules.pause("doomed")
        assert first.schedules.delete("doomed") is True
        assert "doomed" not in first.store.schedule_states()
        wait_for(lambda: second.schedules.entries() == [], "the other engine to drop it")
        assert first.schedules.entries() == []
        assert first.schedules.list() == []
        clock.advance(timedelta(hours=2))
        settle()
        assert run_ids(first, "doomed") == set()
        with pytest.raises(ScheduleNotFound, match="no schedule named 'doomed'"):
            first.schedules.delete("doomed")
    with engine_on(target, clock) as restarted:
        add(restarted, entry)  # still in the code: back, unpaused
        wait_for(lambda: "doomed" in restarted.store.schedule_states(), "the state")
        assert not restarted.store.schedule_states()["doomed"].paused
        clock.advance(timedelta(hours=1))
        wait_for(lambda: len(run_ids(restarted, "doomed")) == 1, "a run")


def test_list_shows_what_a_client_can_know_without_workflow_code(shared: Any) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 3, 30, 12), autojump=False)
    with engine_on(target, clock) as engine:
        add(engine, Schedule("30 2 * * *", tick_wf, "listed", tz=BERLIN, queue="q1"))
        wait_for(lambda: "listed" in engine.store.schedule_states(), "the state")
        client = client_store(target)
        try:
            [info] = list_schedules(client, registered=(), now=clock.now())
        finally:
            close_client(client, target)
        assert (info.name, info.workflow_name, info.cron, info.tz, info.queue) == (
            "listed",
            "rt-tick",
            "30 2 * * *",
            BERLIN,
            "q1",
        )
        assert info.next_tick == SPRING  # tomorrow's 02:30 does not exist: 03:00 CEST
        assert info.stored and not info.defined_here and not info.paused
        [here] = engine.schedules.list()
        assert here.defined_here and here.stored


KNOWN_NIGHTLY = r"'nighty' \(known: 'nightly'\)\. Did you mean 'nightly'\?"


def test_unknown_names_say_what_is_known(shared: Any) -> None:
    target = shared
    clock = VirtualClock(utc(2030, 1, 1), autojump=False)
    with engine_on(target, clock) as engine:
        add(engine, Schedule("0 * * * *", tick_wf, "nightly"))
        wait_for(lambda: "nightly" in engine.store.schedule_states(), "the state")
        store = engine.store
        for call in (
            lambda: pause_schedule(store, "nighty", registered=()),
            lambda: resume_schedule(store, "nighty", registered=()),
            lambda: trigger_schedule(store, "nighty", registered=()),
            lambda: backfill_schedule(
                store, "nighty", utc(2030, 1, 1), utc(2030, 1, 2), registered=()
            ),
            lambda: delete_schedule(store, "nighty"),
            lambda: engine.schedules.pause("nighty"),
            lambda: engine.schedules.trigger("nighty"),
            lambda: engine.schedules.backfill("nighty", utc(2030, 1, 1), utc(2030, 1, 2)),
            lambda: engine.schedules.delete("nighty"),
        ):
            with pytest.raises(ScheduleNotFound, match=KNOWN_NIGHTLY):
                call()
        with pytest.raises(LookupError):
            pause_schedule(store, "", registered=())
        assert run_ids(engine, "nighty") == set()


def test_a_schedule_known_only_to_the_code_given_is_registered_when_operated_on(
    store_url: str,
) -> None:
    store = open_store(store_url)
    try:
        entry = Schedule("0 * * * *", tick_wf, "from-code", tz=BERLIN)
        assert pause_schedule(store, "from-code", registered=[entry], now=T0) is True
        state = store.schedule_states()["from-code"]
        assert state.paused and state.tz == BERLIN and state.workflow_name == "rt-tick"
        [info] = list_schedules(store, registered=[entry], now=T0)
        assert info.defined_here and info.paused
        # Now is 01:00 in Berlin; the next tick is strictly later: 02:00, 01:00 UTC.
        assert info.next_tick == utc(2030, 1, 1, 1)
    finally:
        store.close()
