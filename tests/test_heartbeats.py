"""Step heartbeats: progress a step body reports (`step_context().heartbeat(details)`),
kept durable and throttled, read by the next attempt, by the faces, the CLI and the UI;
`Step(heartbeat_timeout=)` failing an attempt whose beats stop; a cancel reaching a
heartbeating body at its next beat."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from conftest import ok, rk, wait_for
from replaykit import (
    All,
    AsyncEngine,
    Client,
    Engine,
    HeartbeatTimeout,
    MemoryStore,
    Race,
    Retry,
    SerializationError,
    Status,
    Step,
    StepContext,
    StepHeartbeat,
    StepPreempted,
    step_context,
    testing,
    workflow,
)
from replaykit.errors import Stopped
from replaykit.log import Failure
from replaykit.runtime.beats import WRITE_INTERVAL
from replaykit.runtime.engine import open_store_for
from replaykit.ui import create_app
from replaykit.ui._server import running

# -- what a step may be told, and where heartbeat() may be called ------------------------------


def test_heartbeat_timeout_is_checked_when_the_step_is_built() -> None:
    assert Step("s", print, heartbeat_timeout=timedelta(minutes=2)).heartbeat_timeout == 120.0
    assert Step("s", print).options(heartbeat_timeout=3).heartbeat_timeout == 3.0
    assert Step("s", print).heartbeat_timeout is None
    with pytest.raises(ValueError, match=r"Step\('s', \.\.\.\): heartbeat_timeout must be more"):
        Step("s", print, heartbeat_timeout=0)
    with pytest.raises(ValueError, match="heartbeat_timeout must be zero or positive"):
        Step("s", print, heartbeat_timeout=-1)
    with pytest.raises(ValueError, match="heartbeat_timeout must be more than zero"):
        Step("s", print, heartbeat_timeout=float("inf"))
    with pytest.raises(TypeError, match="heartbeat_timeout must be a timedelta or a number"):
        Step("s", print, heartbeat_timeout="1m")


def test_a_heartbeat_outside_a_step_says_where_it_may_be_called() -> None:
    with pytest.raises(RuntimeError, match=r"step_context\(\) was called outside a step"):
        step_context().heartbeat(1)
    by_hand = StepContext("w", "wf", "s", 0, 1)
    assert by_hand.heartbeat_details is None
    with pytest.raises(RuntimeError, match="built by hand, so no engine records its heartbeats"):
        by_hand.heartbeat(1)


# -- bodies that beat, on every store ---------------------------------------------------------

GO = threading.Event()


def counts_to(name: str, n: int) -> str:
    ctx = step_context()
    for done in range(n):
        ctx.heartbeat({"done": done + 1, "of": n, "who": name})
        if GO.wait(0.005):
            break
    return name


@workflow(name="beats.pair")
def pair() -> Generator[Any, Any, list[str]]:
    yield Step("warm-up", lambda: 1)
    both: list[str] = yield All(Step("a", counts_to, "a", 3), Step("b", counts_to, "b", 100_000))
    return both


@pytest.fixture(autouse=True)
def _released() -> Iterator[None]:
    GO.clear()
    yield
    GO.set()  # an abandoned or blocked body's thread ends


@contextlib.contextmanager
def released() -> Iterator[None]:
    """Inside an engine's `with`: its blocked bodies end before it closes, even on a
    failed assertion (a close waits for running steps)."""
    try:
        yield
    finally:
        GO.set()


def test_every_face_reads_each_steps_latest_heartbeat(store_url: str) -> None:
    with Engine(store_url) as engine, Client(engine.store) as client, released():
        engine.start(pair, workflow_id="pair-1")

        def a_done_b_beating() -> bool:
            beats = {beat.name: beat.details for beat in engine.get_heartbeats("pair-1")}
            return "b" in beats and beats.get("a", {}).get("done") == 3

        wait_for(a_done_b_beating, "step a's last beat and step b's first")
        [a, b] = client.get_heartbeats("pair-1")
        # Composite children under their parent's position, by their argument index.
        assert (a.position, a.child_path, a.name, a.attempt) == (1, (0,), "a", 1)
        assert a.details == {"done": 3, "of": 3, "who": "a"}  # its last beat, at its end
        assert (b.position, b.child_path, b.details["who"]) == (1, (1,), "b")
        GO.set()
        assert engine.handle("pair-1").result(timeout=15) == ["a", "b"]
        # Kept after the steps are done; the last beat of each, written at its end.
        final = {beat.name: beat.details["done"] for beat in engine.get_heartbeats("pair-1")}
        assert final["a"] == 3 and final["b"] >= b.details["done"]
        assert engine.store.get_step_heartbeats("pair-1")[1].at >= b.at


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.beats: list[StepHeartbeat] = []

    def record_step_heartbeat(self, workflow_id: str, beat: StepHeartbeat, **kw: Any) -> bool:
        self.beats.append(beat)
        return super().record_step_heartbeat(workflow_id, beat, **kw)


def tight_loop() -> int:
    ctx = step_context()
    deadline = time.monotonic() + 2.5 * WRITE_INTERVAL
    beats = 0
    while time.monotonic() < deadline:
        beats += 1
        ctx.heartbeat(beats)
    return beats


@workflow(name="beats.tight")
def tight() -> Generator[Any, Any, int]:
    beats: int = yield Step("loop", tight_loop)
    return beats


def test_a_tight_loop_of_beats_writes_about_once_a_second_and_its_last_one() -> None:
    store = CountingStore()
    with Engine(store) as engine:
        beats = engine.start(tight, workflow_id="tight-1").result(timeout=20)
    assert beats > 10_000
    written = [beat.details for beat in store.beats]
    # The first at once (the latest beat when the writer gets to it), then one a second
    # at most, then the last at the attempt's end.
    assert written == sorted(written) and written[0] < beats // 2 and written[-1] == beats
    assert 3 <= len(written) <= 5, written
    assert store.get_step_heartbeats("tight-1")[0].details == beats


# -- heartbeat timeouts ---------------------------------------------------------------------------

SEEN: list[tuple[int, Any]] = []


def resumable(n: int) -> int:
    """Counts to n from where the attempt before it got; the first attempt stalls at 3."""
    ctx = step_context()
    SEEN.append((ctx.attempt, ctx.heartbeat_details))
    start = ctx.heartbeat_details["next"] if ctx.heartbeat_details else 0
    for i in range(start, n):
        if ctx.attempt == 1 and i == 3:
            GO.wait(10)  # stalls past its heartbeat timeout
        ctx.heartbeat({"next": i + 1})
    return n * 10


async def resumable_async(n: int) -> int:
    ctx = step_context()
    SEEN.append((ctx.attempt, ctx.heartbeat_details))
    start = ctx.heartbeat_details["next"] if ctx.heartbeat_details else 0
    for i in range(start, n):
        if ctx.attempt == 1 and i == 3:
            await asyncio.sleep(10)
        ctx.heartbeat({"next": i + 1})
        await asyncio.sleep(0)
    return n * 10


RETRY = Retry(max_attempts=3, interval=0.05)


@workflow(name="beats.resume")
def resumes(n: int) -> Generator[Any, Any, int]:
    value: int = yield Step("count", resumable, n, heartbeat_timeout=0.3, retry=RETRY)
    return value


@workflow(name="beats.resume-async")
def resumes_async(n: int) -> Generator[Any, Any, int]:
    value: int = yield Step("count", resumable_async, n, heartbeat_timeout=0.3, retry=RETRY)
    return value


@pytest.mark.parametrize("wf", [resumes, resumes_async], ids=["sync", "async"])
def test_a_stalled_attempt_times_out_and_its_retry_goes_on_from_its_details(
    store_url: str, wf: Any
) -> None:
    SEEN.clear()
    with Engine(store_url) as engine, released():
        started = time.monotonic()
        assert engine.start(wf, 6, workflow_id="resume-1").result(timeout=20) == 60
        assert time.monotonic() - started < 5  # not the stall's ten seconds
        [record] = engine.steps("resume-1")
        assert record.attempts == 2
        [beat] = engine.get_heartbeats("resume-1")
        assert (beat.attempt, beat.details) == (2, {"next": 6})
    # The first attempt started afresh; the retry from the last details the first beat.
    assert SEEN == [(1, None), (2, {"next": 3})]


def never_beats() -> str:
    GO.wait(10)
    return "late"


@workflow(name="beats.silent")
def silent() -> Generator[Any, Any, str]:
    value: str = yield Step("silent", never_beats, heartbeat_timeout=0.2)
    return value


def test_a_step_that_never_beats_times_out_from_its_start_naming_where() -> None:
    with Engine("memory://") as engine, released():
        with pytest.raises(HeartbeatTimeout) as info:
            engine.start(silent, workflow_id="silent-1").result(timeout=10)
        message = str(info.value)
        for part in (
            "step 'silent' of workflow 'beats.silent' (id 'silent-1') at position 0",
            "went more than 0.2s without a heartbeat on attempt 1",
            "it never beat after it started at",
            "Call step_context().heartbeat() more often than that",
        ):
            assert part in message, message
        assert isinstance(info.value, TimeoutError)
        [record] = engine.steps("silent-1")
        assert isinstance(record.outcome, Failure)
        assert record.outcome.error.type_name == "replaykit.errors.HeartbeatTimeout"


ZOMBIE: dict[str, Any] = {}


def stalls_then_wakes() -> str:
    ctx = step_context()
    if ctx.attempt == 1:
        ctx.heartbeat("attempt 1")
        time.sleep(0.6)  # past the timeout: abandoned meanwhile
        try:
            ctx.heartbeat("attempt 1, too late")
        except Stopped as exc:
            ZOMBIE["stopped"] = str(exc)
            raise
        ZOMBIE["went on"] = True
        return "zombie"
    for _ in range(16):  # the first attempt's thread wakes meanwhile
        ctx.heartbeat("attempt 2")
        time.sleep(0.05)
    return "second"


@workflow(name="beats.zombie")
def zombie() -> Generator[Any, Any, str]:
    value: str = yield Step(
        "z", stalls_then_wakes, heartbeat_timeout=0.25, retry=Retry(max_attempts=2, interval=0)
    )
    return value


def test_an_abandoned_attempt_is_stopped_at_its_next_beat_and_hides_nothing() -> None:
    ZOMBIE.clear()
    with Engine("memory://") as engine:
        assert engine.start(zombie, workflow_id="zombie-1").result(timeout=10) == "second"
        [beat] = engine.get_heartbeats("zombie-1")
        assert (beat.attempt, beat.details) == (2, "attempt 2")
    assert "went on" not in ZOMBIE
    assert "attempt 1 was abandoned after its heartbeat timeout" in ZOMBIE["stopped"]


def stalls_in_a_composite(name: str) -> str:
    ctx = step_context()
    ctx.heartbeat(f"{name} {ctx.attempt}")
    if name == "slow" and ctx.attempt == 1:
        GO.wait(10)
    return f"{name} on attempt {ctx.attempt} after {ctx.heartbeat_details}"


@workflow(name="beats.composite")
def composite() -> Generator[Any, Any, list[str]]:
    options = {"heartbeat_timeout": 0.3, "retry": Retry(max_attempts=2, interval=0)}
    both: list[str] = yield All(
        Step("fast", stalls_in_a_composite, "fast", **options),
        Step("slow", stalls_in_a_composite, "slow", **options),
    )
    return both


def test_a_composite_child_times_out_alone_and_is_retried(store_url: str) -> None:
    with Engine(store_url) as engine, released():
        assert engine.start(composite, workflow_id="all-1").result(timeout=15) == [
            "fast on attempt 1 after None",
            "slow on attempt 2 after slow 1",
        ]
        beats = engine.get_heartbeats("all-1")
        assert {beat.child_path: (beat.attempt, beat.details) for beat in beats} == {
            (0,): (1, "fast 1"),
            (1,): (2, "slow 2"),
        }


def beats_too_long() -> str:
    ctx = step_context()
    while not GO.is_set():
        ctx.heartbeat("alive")
        time.sleep(0.02)
    return "late"


@workflow(name="beats.both-timeouts")
def both_timeouts() -> Generator[Any, Any, str]:
    value: str = yield Step("long", beats_too_long, timeout=0.4, heartbeat_timeout=0.2)
    return value


def test_a_step_timeout_still_bounds_a_body_that_keeps_beating() -> None:
    with Engine("memory://") as engine, released():
        with pytest.raises(TimeoutError, match=r"step 'long' timed out after 0.4s") as info:
            engine.start(both_timeouts, workflow_id="both-1").result(timeout=10)
        assert not isinstance(info.value, HeartbeatTimeout)


def unencodable() -> None:
    step_context().heartbeat({"handle": object()})


@workflow(name="beats.unencodable")
def bad_details() -> Generator[Any, Any, None]:
    yield Step("bad", unencodable)


def test_details_that_cannot_be_encoded_fail_the_body_where_it_beat() -> None:
    with Engine("memory://") as engine:
        with pytest.raises(SerializationError, match="the heartbeat details of step 'bad'"):
            engine.start(bad_details, workflow_id="bad-1").result(timeout=10)
        assert engine.get_heartbeats("bad-1") == []


# -- cancels reach a beating body ----------------------------------------------------------------

BEATEN = {"count": 0}


def beats_until_stopped() -> str:
    ctx = step_context()
    while not GO.is_set():
        BEATEN["count"] += 1
        ctx.heartbeat(BEATEN["count"])
        time.sleep(0.01)
    return "never stopped"


async def beats_until_stopped_async() -> str:
    ctx = step_context()
    while not GO.is_set():
        BEATEN["count"] += 1
        ctx.heartbeat(BEATEN["count"])
        await asyncio.sleep(0.01)
    return "never stopped"


@workflow(name="beats.until-cancelled")
def until_cancelled(use_async: bool = False) -> Generator[Any, Any, str]:
    body = beats_until_stopped_async if use_async else beats_until_stopped
    try:
        value: str = yield Step("forever", body)
    except StepPreempted:
        value = yield Step("instead", lambda: "caught the preemption")
    return value


def assert_stopped(engine: Engine, workflow_id: str) -> None:
    wait_for(lambda: len(engine.steps(workflow_id)) == 1, "the step's record lands")
    [record] = engine.steps(workflow_id)
    assert isinstance(record.outcome, Failure)
    assert record.outcome.error.type_name == "replaykit.errors.StepPreempted"
    assert_no_more_beats()


def assert_no_more_beats() -> None:
    """The body stopped at a beat: the count moves no more (past the beat that raised)."""
    time.sleep(0.1)
    count = BEATEN["count"]
    time.sleep(0.2)
    assert BEATEN["count"] == count, "the body went on beating"


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_cancel_here_reaches_a_step_at_its_next_heartbeat(
    store_url: str, use_async: bool
) -> None:
    BEATEN["count"] = 0
    with Engine(store_url) as engine, released():
        engine.start(until_cancelled, use_async, workflow_id="stop-1")
        wait_for(lambda: BEATEN["count"] > 3, "the body beats")
        assert engine.terminate("stop-1")
        assert_stopped(engine, "stop-1")
        wait_for(lambda: not engine.scheduler.is_tracked("stop-1"), "its activation ends")
        assert engine.handle("stop-1").status() is Status.CANCELLED
        # A resume finds the stop recorded at the step's yield: the body never reruns.
        assert engine.resume("stop-1").result(timeout=10) == "caught the preemption"


def quick_after_beats_start() -> str:
    wait_for(lambda: BEATEN["count"] > 3, "the other branch beats")
    return "fast"


@workflow(name="beats.race")
def race() -> Generator[Any, Any, Any]:
    won = yield Race(Step("slow", beats_until_stopped), Step("fast", quick_after_beats_start))
    return won


def test_a_losing_branch_stops_at_its_next_heartbeat() -> None:
    BEATEN["count"] = 0
    with Engine("memory://") as engine, released():
        assert engine.start(race, workflow_id="race-1").result(timeout=10) == [1, "fast"]
        assert_no_more_beats()


@pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)
def test_a_cancel_made_elsewhere_reaches_it_through_its_next_written_beat(
    store_url: str,
) -> None:
    BEATEN["count"] = 0
    with Engine(store_url) as engine, released():
        engine.start(until_cancelled, workflow_id="stop-2")
        wait_for(lambda: BEATEN["count"] > 3, "the body beats")
        with Engine(store_url, executor_id="operator", recover=False, queues=[]) as other:
            assert other.terminate("stop-2")
        cancelled_at = time.monotonic()
        assert_stopped(engine, "stop-2")
        # A write at most every WRITE_INTERVAL finds the run cancelled.
        assert time.monotonic() - cancelled_at < 2 * WRITE_INTERVAL + 1
        assert engine.handle("stop-2").status() is Status.CANCELLED


# -- the asyncio faces ---------------------------------------------------------------------------


async def async_beats() -> str:
    ctx = step_context()
    for i in range(5):
        ctx.heartbeat(i)
        await asyncio.sleep(0)
    return "done"


@workflow(name="beats.async-face")
def async_face() -> Generator[Any, Any, str]:
    value: str = yield Step("beats", async_beats, heartbeat_timeout=5)
    return value


def test_the_async_engine_reads_heartbeats_an_async_step_beat() -> None:
    async def main() -> list[StepHeartbeat]:
        async with AsyncEngine("memory://") as engine:
            handle = await engine.start(async_face, workflow_id="af-1")
            assert await handle.result(timeout=10) == "done"
            return await engine.get_heartbeats("af-1")

    [beat] = asyncio.run(main())
    assert (beat.name, beat.details) == ("beats", 4)


# -- the testing kit, on virtual time -------------------------------------------------------------


def download(n: int) -> int:
    raise AssertionError("faked in the tests")


@workflow(name="beats.fetch")
def fetch(n: int) -> Generator[Any, Any, int]:
    value: int = yield Step(
        "download",
        download,
        n,
        heartbeat_timeout=timedelta(minutes=1),
        retry=Retry(max_attempts=3, interval=30),
    )
    return value


def stalling_download(n: int) -> int:
    ctx = step_context()
    start = ctx.heartbeat_details or 0
    for i in range(start, n):
        if ctx.attempt == 1 and i == 3:
            testing.elapse(timedelta(minutes=5))  # stuck: no beat for five minutes
        ctx.heartbeat(i + 1)
    return n * 10


def test_a_heartbeat_timeout_on_virtual_time_in_no_wall_time() -> None:
    started = time.monotonic()
    results = [testing.run(fetch, 6, steps={"download": stalling_download}) for _ in range(3)]
    assert time.monotonic() - started < 10
    for result in results:
        assert (result.status, result.result) == (Status.SUCCESS, 60)
        # Five minutes stuck, then the thirty-second back-off: all virtual.
        assert result.elapsed == timedelta(minutes=5, seconds=30)
        assert [(b.attempt, b.details) for b in result.heartbeats] == [(2, 6)]
        assert len(result.calls["download"]) == 2
        assert result.log[0].attempts == 2
    testing.check_determinism(fetch, 6, steps={"download": stalling_download})


def test_a_fake_that_beats_is_seen_by_the_run_result() -> None:
    def fake(n: int) -> int:
        for i in range(n):
            step_context().heartbeat({"at": i})
        return n

    result = testing.run(fetch, 3, steps={"download": fake})
    assert [(b.position, b.name, b.details) for b in result.heartbeats] == [
        (0, "download", {"at": 2})
    ]


def test_a_crashed_attempt_run_again_goes_on_from_its_details() -> None:
    """A crash after the body (its record lost): the recovered run's attempt 1 reads what
    the lost one beat."""
    seen: list[Any] = []

    def fake(n: int) -> int:
        ctx = step_context()
        seen.append(ctx.heartbeat_details)
        ctx.heartbeat(n)
        return n

    result = testing.run(fetch, 4, steps={"download": fake}, crash_at=0)
    assert result.ok and len(result.crashes) == 1
    assert seen == [None, 4]


def test_elapse_needs_a_step_body_on_virtual_time() -> None:
    with pytest.raises(RuntimeError, match="outside a step"):
        testing.elapse(1)

    def on_the_wall_clock() -> None:
        testing.elapse(1)

    @workflow(name="beats.wall-elapse")
    def wall() -> Generator[Any, Any, None]:
        yield Step("elapse", on_the_wall_clock)

    with (
        Engine("memory://") as engine,
        pytest.raises(RuntimeError, match="runs on the wall clock"),
    ):
        engine.start(wall, workflow_id="wall-1").result(timeout=10)


# -- seen from the outside: the CLI and the UI ------------------------------------------------


def test_workflows_show_lists_the_beats_of_steps_under_way(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'show.db'}"
    with Engine(url) as engine, released():
        engine.start(pair, workflow_id="show-1")
        wait_for(
            lambda: (
                [beat.details["done"] for beat in engine.get_heartbeats("show-1")][:1] == [3]
                and len(engine.get_heartbeats("show-1")) == 2
            ),
            "step a's last beat and step b's first",
        )
        text = ok(rk("workflows", "show", "show-1", "--url", url))
        data = json.loads(ok(rk("workflows", "show", "show-1", "--url", url, "--json")))
        page = _run_page(url, "show-1")
        GO.set()
        engine.handle("show-1").result(timeout=15)
        after = ok(rk("workflows", "show", "show-1", "--url", url))
    assert "heartbeats of the steps under way" in text
    [line] = [line for line in text.splitlines() if line.startswith("1.1 ")]
    assert " b " in line and "running" in line and '"who":"b"' in line
    # Step a is done (its All is not recorded yet, so its beat is shown too).
    assert any(line.startswith("1.0 ") for line in text.splitlines())
    beats = {tuple(b["child_path"]): b for b in data["heartbeats"]}
    assert beats[(1,)]["step"] == "b" and beats[(1,)]["running"] is True
    assert beats[(0,)]["details"] == {"done": 3, "of": 3, "who": "a"}
    assert 'id="heartbeats"' in page and "<td>b</td>" in page and "running" in page
    # Once the composite is recorded, its steps are no longer under way.
    assert "heartbeats of the steps under way" not in after


def _run_page(url: str, workflow_id: str) -> str:
    store = open_store_for(url)
    try:
        with running(create_app(store)) as base, httpx.Client(base_url=base) as client:
            return client.get("/run", params={"id": workflow_id}).text
    finally:
        store.close()


def test_a_recovered_run_reads_the_details_for_the_step_it_was_at_only() -> None:
    """The step under way when the process died (and a composite's siblings at its
    position) may go on from its details; the run's later steps do not cost a read."""
    from replaykit.runtime.beats import StepBeats
    from replaykit.runtime.clock import SystemClock
    from replaykit.stores.base import WorkflowRow

    room = StepBeats(MemoryStore(), SystemClock(), executor_id="e", max_payload_bytes=1000)
    step = Step("s", print)
    fresh = WorkflowRow("r", "wf", Status.PENDING)
    recovered = WorkflowRow("r", "wf", Status.PENDING, recovery_attempts=1)
    again = WorkflowRow("r", "wf", Status.PENDING, recovery_attempts=2)

    def reads(row: WorkflowRow, position: int, attempt: int = 1) -> bool:
        return room.begin(row, step, position, attempt, (), None, None).needs_earlier

    assert not reads(fresh, 3)
    assert [reads(recovered, 3), reads(recovered, 3), reads(recovered, 4)] == [True, True, False]
    assert [reads(again, 5), reads(again, 6), reads(again, 6, attempt=2)] == [True, False, True]
