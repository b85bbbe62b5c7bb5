"""The cron loop's overlap policies and jitter (runtime/schedule_loop.py).

A tick that comes while an earlier run of its schedule is live: `allow_all` starts it,
`skip` does not, `buffer_one` starts one of them when the live run ends, `buffer_all`
starts each in turn, `cancel_other` cancels the live run and starts the tick. Jitter
delays each tick's start by a share of it that every engine computes alike. On the
three stores, with two engines on one store where it matters, on a virtual clock.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import replaykit
from conftest import wait_for
from replaykit import Engine, Recv, Status, VirtualClock, workflow
from replaykit.runtime.schedules import OVERLAP_POLICIES, Schedule, schedule

START = datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC)


@workflow(name="overlap-job")
def job(tick: datetime) -> Generator[Any, Any, str]:
    yield Recv("done")  # live until the test says it is done
    return tick.isoformat()


def minute(n: int) -> datetime:
    return datetime(2030, 1, 1, 0, n, tzinfo=UTC)


def tick_id(name: str, tick: datetime) -> str:
    return f"schedule:{name}:{tick.isoformat()}"


@pytest.fixture
def shared(store_url: str) -> Any:
    return replaykit.MemoryStore() if store_url.startswith("memory") else store_url


def engine_on(target: Any, clock: VirtualClock, executor_id: str = "local") -> Engine:
    return Engine(target, executor_id=executor_id, clock=clock, poll_interval=0.03, schedules=False)


class Minutes:
    """A schedule that ticks every minute on a virtual clock, on one or two engines."""

    def __init__(self, target: Any, overlap: str, engines: int = 1) -> None:
        self.name = f"every-minute-{overlap}"
        self.clock = VirtualClock(START, autojump=False)
        self.engines = [engine_on(target, self.clock, f"e{i}") for i in range(engines)]
        for engine in self.engines:
            engine.schedules.add(Schedule("* * * * *", job, self.name, overlap=overlap))
        wait_for(lambda: self.name in self.engines[0].store.schedule_states(), "the schedule")

    @property
    def engine(self) -> Engine:
        return self.engines[0]

    def close(self) -> None:
        for engine in self.engines:
            engine.close()

    def to_minute(self, n: int) -> None:
        """Move the clock to 30 s past minute `n`, and let every loop see it."""
        self.clock.advance(minute(n) + timedelta(seconds=30) - self.clock.now())
        time.sleep(0.4)

    def runs(self) -> dict[str, Status]:
        prefix = f"schedule:{self.name}:"
        return {
            row.workflow_id[len(prefix) :]: row.status
            for row in self.engine.list_workflows(name="overlap-job")
            if row.workflow_id.startswith(prefix)
        }

    def started(self, *minutes: int) -> set[str]:
        return {minute(n).isoformat() for n in minutes}

    def begun(self) -> set[str]:
        """The ticks whose runs left their hold queue (or never waited on one)."""
        return {tick for tick, status in self.runs().items() if status is not Status.ENQUEUED}

    def held(self) -> set[str]:
        """The ticks held back: ENQUEUED on the schedule's hold queue."""
        return {tick for tick, status in self.runs().items() if status is Status.ENQUEUED}

    def finish(self, n: int) -> None:
        run_id = tick_id(self.name, minute(n))
        self.engine.send(run_id, None, "done")
        self.engine.handle(run_id).result(timeout=20)


@pytest.fixture
def minutes(shared: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    made: list[Minutes] = []

    def make(overlap: str, engines: int = 1) -> Minutes:
        made.append(Minutes(shared, overlap, engines))
        return made[-1]

    yield make
    for m in made:
        m.close()


def test_allow_all_starts_every_tick(minutes: Any) -> None:
    m = minutes("allow_all")
    m.to_minute(1)
    m.to_minute(2)
    wait_for(lambda: set(m.runs()) == m.started(1, 2), "both ticks' runs")


def test_skip_starts_no_tick_while_a_run_is_live_on_either_engine(minutes: Any) -> None:
    m = minutes("skip", engines=2)
    m.to_minute(1)
    wait_for(lambda: set(m.runs()) == m.started(1), "the first run")
    m.to_minute(2)
    m.to_minute(3)
    assert set(m.runs()) == m.started(1)  # skipped by both engines
    m.finish(1)
    m.to_minute(4)
    wait_for(lambda: set(m.runs()) == m.started(1, 4), "the next tick after the run ended")
    time.sleep(0.3)
    assert set(m.runs()) == m.started(1, 4)  # the skipped ticks stay skipped


def test_buffer_one_starts_one_held_tick_when_the_live_run_ends(minutes: Any) -> None:
    m = minutes("buffer_one", engines=2)
    m.to_minute(1)
    wait_for(lambda: m.begun() == m.started(1), "the first run")
    m.to_minute(2)
    m.to_minute(3)
    # The first tick that came is held (a run waiting on the hold queue); the second
    # was skipped, one tick waiting already.
    wait_for(lambda: m.held() == m.started(2), "the held tick")
    time.sleep(0.3)
    assert m.begun() == m.started(1)
    assert set(m.runs()) == m.started(1, 2)
    m.finish(1)
    wait_for(lambda: m.begun() == m.started(1, 2), "the held tick's run")
    m.finish(2)
    m.to_minute(4)
    wait_for(lambda: m.begun() == m.started(1, 2, 4), "the next tick")


def test_buffer_all_starts_every_held_tick_in_turn(minutes: Any) -> None:
    m = minutes("buffer_all")
    m.to_minute(1)
    wait_for(lambda: m.begun() == m.started(1), "the first run")
    m.to_minute(2)
    m.to_minute(3)
    wait_for(lambda: m.held() == m.started(2, 3), "both ticks held")
    assert m.begun() == m.started(1)
    m.finish(1)
    wait_for(lambda: m.begun() == m.started(1, 2), "the first held tick")
    time.sleep(0.3)
    assert m.held() == m.started(3)  # one at a time
    m.finish(2)
    wait_for(lambda: m.begun() == m.started(1, 2, 3), "the second held tick")


def test_held_ticks_outlive_the_engines_that_held_them(shared: Any) -> None:
    clock = VirtualClock(START, autojump=False)
    entry = Schedule("* * * * *", job, "held-durably", overlap="buffer_all")
    prefix = "schedule:held-durably:"

    def statuses(engine: Engine) -> dict[str, Status]:
        return {
            row.workflow_id[len(prefix) :]: row.status
            for row in engine.list_workflows(name="overlap-job")
            if row.workflow_id.startswith(prefix)
        }

    with engine_on(shared, clock, "first") as first:
        first.schedules.add(entry)
        wait_for(lambda: "held-durably" in first.store.schedule_states(), "the schedule")
        for n in (1, 2, 3):
            clock.advance(minute(n) + timedelta(seconds=30) - clock.now())
            time.sleep(0.4)
        wait_for(lambda: len(statuses(first)) == 3, "three ticks' runs")
        assert sorted(statuses(first).values(), key=str) == sorted(
            [Status.PENDING, Status.ENQUEUED, Status.ENQUEUED], key=str
        )
    # Another engine (another process, as far as the store knows) takes over.
    with engine_on(shared, clock, "second") as second:
        second.schedules.add(entry)
        for n in (1, 2, 3):
            run_id = tick_id("held-durably", minute(n))
            wait_for(
                lambda r=run_id: second.store.get_workflow(r).status is Status.PENDING,  # type: ignore[union-attr]
                f"tick {n} runs",
            )
            assert [s for s in statuses(second).values() if s is Status.PENDING] == [
                Status.PENDING
            ]  # one at a time
            second.send(run_id, None, "done")
            second.handle(run_id).result(timeout=20)
        assert set(statuses(second).values()) == {Status.SUCCESS}


def test_cancel_other_cancels_the_live_run_and_starts_the_tick(minutes: Any) -> None:
    m = minutes("cancel_other")
    m.to_minute(1)
    wait_for(lambda: m.begun() == m.started(1), "the first run")
    m.to_minute(2)
    wait_for(lambda: m.begun() == m.started(1, 2), "the new tick's run")
    runs = m.runs()
    assert runs[minute(1).isoformat()] is Status.CANCELLED
    assert runs[minute(2).isoformat()] is Status.PENDING
    row = m.engine.handle(tick_id(m.name, minute(1))).row()
    assert "overlap='cancel_other'" in row.error, row.error  # the reason, kept as its detail


def test_jitter_delays_each_tick_by_a_share_every_engine_agrees_on(shared: Any) -> None:
    clock = VirtualClock(START, autojump=False)
    entry = Schedule("* * * * *", job, "jittered", jitter=40.0)
    again = Schedule("* * * * *", job, "jittered", jitter=40.0)
    shares = [entry.jitter_for(minute(n)) for n in range(1, 30)]
    assert shares == [again.jitter_for(minute(n)) for n in range(1, 30)]
    assert all(timedelta(0) <= s < timedelta(seconds=40) for s in shares)
    assert len(set(shares)) > 20  # spread, not one offset
    share = entry.jitter_for(minute(1))
    with engine_on(shared, clock) as engine:
        engine.schedules.add(entry)
        wait_for(lambda: "jittered" in engine.store.schedule_states(), "the schedule")
        clock.advance(minute(1) + share - timedelta(seconds=1) - clock.now())
        time.sleep(0.4)
        assert engine.store.get_workflow(tick_id("jittered", minute(1))) is None
        clock.advance(timedelta(seconds=1))
        wait_for(
            lambda: engine.store.get_workflow(tick_id("jittered", minute(1))) is not None,
            "the jittered start",
        )
        row = engine.handle(tick_id("jittered", minute(1))).row()
        assert row.created_at >= minute(1) + share
        assert engine.handle(tick_id("jittered", minute(1))).row().name == "overlap-job"


@pytest.mark.parametrize(
    ("options", "error", "says"),
    [
        ({"overlap": "buffer"}, ValueError, "did you mean 'buffer_one'"),
        ({"overlap": "SKIP_ALL"}, ValueError, "not a policy"),
        ({"jitter": -1}, ValueError, "0 or more"),
        ({"jitter": float("nan")}, ValueError, "0 or more"),
        ({"jitter": "1m"}, TypeError, "timedelta or a number"),
        ({"jitter": 60}, ValueError, "not shorter than the 60s"),
        ({"jitter": timedelta(minutes=5)}, ValueError, "not shorter than"),
        ({"overlap": "buffer_all", "queue": "reports"}, ValueError, "queue of its own"),
    ],
)
def test_bad_overlap_and_jitter_are_refused_at_declaration(
    options: dict[str, Any], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        schedule("* * * * *", name="bad-options", **options)(job)
    assert set(OVERLAP_POLICIES) == {
        "allow_all",
        "skip",
        "buffer_one",
        "buffer_all",
        "cancel_other",
    }
