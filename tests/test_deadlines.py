"""Workflow deadlines: `timeout=` / `deadline=` cancel a run when they pass, saying so."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    AsyncClient,
    AsyncEngine,
    AwaitedWorkflowCancelled,
    Call,
    Client,
    Engine,
    Queue,
    QueueItem,
    Recv,
    Sleep,
    Start,
    Status,
    Step,
    VirtualClock,
    Wait,
    WorkflowDeadlineExceeded,
    workflow,
)
from replaykit.testing import check_determinism, run

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DAY = timedelta(days=1)

Queue("deadlines-q")
Queue("deadlines-late")

STEP_STARTED = threading.Event()
STEP_STOPPED = threading.Event()
STEP_FINISHED = threading.Event()
RELEASE = threading.Event()
CLAIMED_RAN = threading.Event()


@pytest.fixture(autouse=True)
def _reset() -> Generator[None, None, None]:
    for event in (STEP_STARTED, STEP_STOPPED, STEP_FINISHED, RELEASE, CLAIMED_RAN):
        event.clear()
    yield
    RELEASE.set()  # let an abandoned sync body's thread end


def detail(deadline: datetime, timeout: str | None) -> str:
    at = deadline.isoformat().replace("+00:00", "Z")
    return f"timed out: its deadline {at} passed" + (f" (timeout {timeout})" if timeout else "")


# -- workflows -------------------------------------------------------------------------------


@workflow(name="deadlines.month_sleeper")
def month_sleeper() -> Generator[Any, Any, str]:
    yield Sleep(timedelta(days=30))
    return "woke"


@workflow(name="deadlines.listener")
def listener() -> Generator[Any, Any, Any]:
    message = yield Recv("never")
    return message


@workflow(name="deadlines.calls_a_sleeper")
def calls_a_sleeper() -> Generator[Any, Any, str]:
    started = yield Start(month_sleeper, workflow_id="deadlines-started-child", timeout=3600)
    value: str = yield Call(month_sleeper, workflow_id="deadlines-called-child")
    return f"{started} {value}"


@workflow(name="deadlines.catches_a_timed_out_child")
def catches_a_timed_out_child() -> Generator[Any, Any, str]:
    try:
        yield Call(month_sleeper, workflow_id="deadlines-short-child", timeout=DAY)
    except WorkflowDeadlineExceeded as exc:
        child = yield Start(listener, workflow_id="deadlines-after-child")
        try:
            yield Wait(child, timeout=timedelta(hours=1))
        except TimeoutError:
            return f"child timed out ({'timed out' in str(exc)}), then waited an hour"
    return "the child finished"


async def naps_half_a_minute() -> str:
    STEP_STARTED.set()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        STEP_STOPPED.set()
        raise
    STEP_FINISHED.set()
    return "napped"


def blocks_until_released() -> str:
    STEP_STARTED.set()
    RELEASE.wait(30)
    STEP_FINISHED.set()
    return "released"


async def naps_until_released() -> str:
    STEP_STARTED.set()
    try:
        while not RELEASE.is_set():
            await asyncio.sleep(0.01)
    except asyncio.CancelledError:
        STEP_STOPPED.set()
        raise
    STEP_FINISHED.set()
    return "released"


@workflow(name="deadlines.async_step")
def async_step() -> Generator[Any, Any, str]:
    value: str = yield Step("nap", naps_until_released)
    return value


@workflow(name="deadlines.preemptible_async_step")
def preemptible_async_step() -> Generator[Any, Any, str]:
    value: str = yield Step("nap", naps_half_a_minute, preemptible=True)
    return value


@workflow(name="deadlines.sync_step")
def sync_step() -> Generator[Any, Any, str]:
    value: str = yield Step("block", blocks_until_released)
    return value


def shout(text: str) -> str:
    return text.upper()


@workflow(name="deadlines.listens_then_steps")
def listens_then_steps() -> Generator[Any, Any, str]:
    message = yield Recv("go")
    loud: str = yield Step("shout", shout, message)
    return loud


def note_it_ran() -> str:
    CLAIMED_RAN.set()
    return "ran"


@workflow(name="deadlines.claimed_late")
def claimed_late() -> Generator[Any, Any, str]:
    value: str = yield Step("note", note_it_ran)
    return value


def virtual_engine(url: str, **options: Any) -> Engine:
    options.setdefault("poll_interval", 0.05)
    return Engine(url, clock=VirtualClock(T0, autojump=True), **options)


# -- starting with a deadline ----------------------------------------------------------------


def test_a_timeout_cancels_the_run_at_its_deadline_with_a_detail_saying_so(store_url: str) -> None:
    with virtual_engine(store_url) as engine:
        handle = engine.start(month_sleeper, timeout=DAY)
        row = handle.row()
        assert (row.deadline, row.timeout) == (T0 + DAY, 86400.0)
        with pytest.raises(WorkflowDeadlineExceeded) as raised:
            handle.result(timeout=10)
        row = handle.row()
    assert row.status is Status.CANCELLED
    assert row.error == detail(T0 + DAY, "86400s")
    assert str(raised.value) == (
        f"workflow 'deadlines.month_sleeper' (id {handle.workflow_id!r}) was cancelled: it "
        f"{detail(T0 + DAY, '86400s')}"
    )
    # Code that catches cancellations keeps working.
    assert isinstance(raised.value, AwaitedWorkflowCancelled)


def test_an_absolute_deadline_and_a_timeout_the_earlier_wins(store_url: str) -> None:
    with virtual_engine(store_url) as engine:
        soon = T0 + timedelta(hours=2)
        handle = engine.start(month_sleeper, timeout=DAY, deadline=soon)
        with pytest.raises(WorkflowDeadlineExceeded):
            handle.result(timeout=10)
        assert handle.row().error == detail(soon, "86400s")
        alone = engine.start(month_sleeper, deadline=soon + timedelta(minutes=30))
        with pytest.raises(WorkflowDeadlineExceeded):
            alone.result(timeout=10)
        assert alone.row().error == detail(soon + timedelta(minutes=30), None)
        # Not in the way: a run that ends before its deadline is left alone.
        assert engine.run(month_sleeper, timeout=10) == "woke"


@pytest.mark.parametrize(
    ("options", "error", "says"),
    [
        ({"timeout": 0}, ValueError, "timeout must be more than zero"),
        ({"timeout": -5}, ValueError, "timeout must be more than zero"),
        ({"timeout": "1h"}, TypeError, "a timedelta or a number of seconds"),
        ({"deadline": datetime(2026, 12, 1, 10)}, ValueError, "is naive .no time zone."),
        ({"deadline": 30}, TypeError, "for a duration pass timeout= instead"),
    ],
)
def test_nonsense_is_refused_saying_what_to_pass(
    options: dict[str, Any], error: type[Exception], says: str
) -> None:
    with Engine("memory://") as engine:
        with pytest.raises(error, match="start\\('deadlines.month_sleeper'.*" + says):
            engine.start(month_sleeper, **options)
        with pytest.raises(error, match="enqueue\\('deadlines-q'.*" + says):
            engine.enqueue("deadlines-q", month_sleeper, **options)
        assert engine.list_workflows() == []
    with pytest.raises(error, match="Start\\('deadlines.month_sleeper'.*" + says):
        Start(month_sleeper, **options)
    with pytest.raises(error, match="Call\\('deadlines.month_sleeper'.*" + says):
        Call(month_sleeper, **options)


def test_the_start_options_leave_old_digests_alone() -> None:
    assert Start(month_sleeper, workflow_id="c").describe_args() == [[], {}, "c"]
    assert Call(month_sleeper, timeout=5).describe_args() == [
        [],
        {},
        None,
        {"timeout": 5.0, "deadline": None},
    ]


# -- queues: when the clock starts -------------------------------------------------------------


def test_an_enqueued_timeout_counts_from_the_claim(store_url: str) -> None:
    clock = VirtualClock(T0, autojump=False)
    with Engine(store_url, clock=clock, poll_interval=0.05, queues=["deadlines-q"]) as engine:
        handle = engine.enqueue("deadlines-q", listener, timeout=60, delay=3600)
        queued = handle.row()
        assert (queued.status, queued.deadline, queued.timeout) == (Status.ENQUEUED, None, 60.0)
        clock.advance(3600)  # an hour in the queue does not count
        engine.claim_now()
        wait_for(lambda: handle.status() is Status.PENDING, "the claim")
        claimed_at = handle.row().started_at
        assert claimed_at is not None
        assert handle.row().deadline == claimed_at + timedelta(seconds=60)
        clock.advance(59)
        time.sleep(0.2)
        assert handle.status() is Status.PENDING
        clock.advance(2)
        wait_for(lambda: handle.status() is Status.CANCELLED, "the run to time out")
        assert handle.row().error == detail(claimed_at + timedelta(seconds=60), "60s")


def test_an_enqueued_deadline_can_pass_while_the_run_waits_in_the_queue(store_url: str) -> None:
    clock = VirtualClock(T0, autojump=False)
    with Engine(store_url, clock=clock, poll_interval=0.05, queues=[]) as producer:
        handle = producer.enqueue(
            "deadlines-q", listener, deadline=T0 + timedelta(minutes=10), delay=3600
        )
        many = producer.enqueue_many(
            "deadlines-q",
            listener,
            [QueueItem(timeout=30), QueueItem(deadline=T0 + timedelta(minutes=5))],
            delay=3600,
        )
        assert [(h.row().deadline, h.row().timeout) for h in many] == [
            (None, 30.0),
            (T0 + timedelta(minutes=5), None),
        ]
        clock.advance(timedelta(minutes=11))
        wait_for(lambda: handle.status() is Status.CANCELLED, "the queued runs to time out")
        wait_for(lambda: many[1].status() is Status.CANCELLED, "the batch's run to time out")
        assert handle.row().error == detail(T0 + timedelta(minutes=10), None)
        assert many[0].status() is Status.ENQUEUED  # its timeout has not started


def test_a_run_claimed_past_its_deadline_is_cancelled_without_running(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'late.db'}"
    with Client(url, app_version="v1") as client:
        # Enqueued by a client: no engine watched it while it was queued.
        handle = client.enqueue(
            "deadlines-late", "deadlines.claimed_late", deadline=datetime.now(UTC)
        )
    time.sleep(0.01)
    with Engine(url, app_version="v1", queues=["deadlines-late"], poll_interval=0.05) as worker:
        wait_for(lambda: worker.handle(handle.workflow_id).status().is_terminal, "the claim")
        row = worker.handle(handle.workflow_id).row()
        assert row.status is Status.CANCELLED
        assert row.error.startswith("timed out: its deadline ")
        assert worker.steps(handle.workflow_id) == []
    assert not CLAIMED_RAN.is_set()


# -- children --------------------------------------------------------------------------------


def test_children_inherit_the_remaining_deadline_and_go_with_their_parent(
    store_url: str,
) -> None:
    with virtual_engine(store_url) as engine:
        parent = engine.start(calls_a_sleeper, timeout=DAY)
        with pytest.raises(WorkflowDeadlineExceeded):
            parent.result(timeout=10)
        # The cancel reaches the children just after the parent.
        called_child = engine.handle("deadlines-called-child")
        wait_for(lambda: called_child.status() is Status.CANCELLED, "the cascade")
        started = engine.handle("deadlines-started-child").row()
        called = called_child.row()
        parent_row = parent.row()
    # Its own hour is earlier than what remained of the parent's day.
    assert started.deadline == T0 + timedelta(hours=1)
    assert started.error == detail(T0 + timedelta(hours=1), "3600s")
    # The called child inherited the parent's deadline; the parent timed out, and its
    # cancel reached the child as any cancel does (a resume of the parent brings it back).
    assert called.deadline == T0 + DAY
    assert called.status is Status.CANCELLED
    assert called.error == (
        f"cancelled with its parent {parent.workflow_id!r}: {detail(T0 + DAY, '86400s')}"
    )
    assert parent_row.error == detail(T0 + DAY, "86400s")


def test_a_parent_catches_its_child_timing_out(store_url: str) -> None:
    with virtual_engine(store_url) as engine:
        result = engine.run(catches_a_timed_out_child, timeout=10)
        after = engine.handle("deadlines-after-child").row()
    assert result == "child timed out (True), then waited an hour"
    # A Wait's own timeout is how long the parent waits, not the child's deadline.
    assert after.deadline is None


# -- what is in flight at the deadline ---------------------------------------------------------


def test_an_async_step_in_flight_runs_to_its_end_and_its_record_lands() -> None:
    with Engine("memory://", poll_interval=0.05) as engine:
        handle = engine.start(async_step, timeout=0.5)
        assert STEP_STARTED.wait(5)
        began = time.monotonic()
        with pytest.raises(WorkflowDeadlineExceeded):
            handle.result(timeout=10)
        assert time.monotonic() - began < 5  # the run did not wait for its step
        assert not STEP_STOPPED.is_set(), "an ordinary step's task was cancelled"
        RELEASE.set()
        assert STEP_FINISHED.wait(5)
        wait_for(lambda: bool(engine.steps(handle.workflow_id)), "its record to land")
        (step,) = engine.steps(handle.workflow_id)
        assert step.name == "nap"
        assert handle.status() is Status.CANCELLED


def test_a_preemptible_async_step_in_flight_is_interrupted() -> None:
    with Engine("memory://", poll_interval=0.05) as engine:
        handle = engine.start(preemptible_async_step, timeout=0.5)
        assert STEP_STARTED.wait(5)
        began = time.monotonic()
        with pytest.raises(WorkflowDeadlineExceeded):
            handle.result(timeout=10)
        assert time.monotonic() - began < 5
        assert STEP_STOPPED.wait(5), "the step's task was not cancelled"
        assert not STEP_FINISHED.is_set()
        assert engine.steps(handle.workflow_id) == []


def test_a_sync_step_in_flight_is_abandoned_and_its_outcome_kept_for_a_resume() -> None:
    with Engine("memory://", poll_interval=0.05) as engine:
        handle = engine.start(sync_step, timeout=0.5)
        assert STEP_STARTED.wait(5)
        with pytest.raises(WorkflowDeadlineExceeded):
            handle.result(timeout=10)
        assert not STEP_FINISHED.is_set()  # its thread runs on; the run did not wait for it
        RELEASE.set()
        assert STEP_FINISHED.wait(5)
        # Its effect happened: the record lands in the cancelled run (Store.record_late),
        # so a resume goes on after it instead of running the body again.
        deadline = time.monotonic() + 5
        while not engine.steps(handle.workflow_id):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        (step,) = engine.steps(handle.workflow_id)
        assert step.name == "block"
        time.sleep(0.2)
        assert handle.status() is Status.CANCELLED


# -- restarts and resumes ----------------------------------------------------------------------


def test_a_restarted_engine_re_arms_deadlines_and_cancels_runs_found_past_them(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'restart.db'}"
    clock = VirtualClock(T0, autojump=False)
    with Engine(url, clock=clock, poll_interval=0.05) as first:
        armed = first.start(listener, timeout=3600).workflow_id
        late = first.start(listener, timeout=60).workflow_id
        wait_for(lambda: len(first.steps(armed)) == len(first.steps(late)) == 1, "both to wait")
    clock.advance(120)  # the engine is down when the minute passes
    with Engine(url, clock=clock, poll_interval=0.05) as second:
        wait_for(lambda: second.handle(late).status().is_terminal, "the late run to be cancelled")
        assert second.handle(late).row().error == detail(T0 + timedelta(seconds=60), "60s")
        wait_for(lambda: second.wakeups.watched_deadline(armed) is not None, "the deadline armed")
        assert second.handle(armed).status() is Status.PENDING
        clock.advance(3600)
        wait_for(lambda: second.handle(armed).status().is_terminal, "the armed run to time out")
        assert second.handle(armed).row().error == detail(T0 + timedelta(hours=1), "3600s")


def test_a_resume_drops_a_deadline_that_passed_or_sets_a_new_one(store_url: str) -> None:
    clock = VirtualClock(T0, autojump=False)
    with Engine(store_url, clock=clock, poll_interval=0.05) as engine:
        handle = engine.start(listener, timeout=60)
        clock.advance(61)
        wait_for(lambda: handle.status() is Status.CANCELLED, "the timeout")
        engine.resume(handle.workflow_id)
        assert (handle.row().deadline, handle.row().timeout) == (None, None)
        time.sleep(0.2)
        assert handle.status() is Status.PENDING  # not cancelled again at once
        engine.terminate(handle.workflow_id)
        engine.resume(handle.workflow_id, timeout=30)
        assert handle.row().deadline == clock.now() + timedelta(seconds=30)
        clock.advance(31)
        wait_for(lambda: handle.status() is Status.CANCELLED, "the new timeout")
        assert handle.row().error.startswith("timed out: ")


def test_a_run_timed_out_here_and_resumed_from_elsewhere_runs_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    with Engine(url, app_version="v1", poll_interval=0.05, queues=[]) as engine:
        handle = engine.start(listens_then_steps, timeout=0.3)
        with pytest.raises(WorkflowDeadlineExceeded):
            handle.result(timeout=10)
        with Client(url, app_version="v1") as client:  # an operator's process, say
            client.resume(handle.workflow_id, timeout=60)
            client.send(handle.workflow_id, "hello", topic="go")
        assert handle.result(timeout=10) == "HELLO"


# -- the other front doors ---------------------------------------------------------------------


def test_the_client_forms(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'client.db'}"
    worker = Engine(
        url, app_version="v1", executor_id="deadlines-worker", poll_interval=0.05, queues=[]
    )
    with worker:
        with Client(url, app_version="v1", executor_id="deadlines-worker") as client:
            handle = client.start("deadlines.listener", timeout=0.5)
            row = handle.row()
            assert row.timeout == 0.5 and row.deadline is not None
            with pytest.raises(WorkflowDeadlineExceeded):
                handle.result(timeout=10)
            deadline = datetime.now(UTC) + DAY
            queued = client.enqueue("deadlines-q", "deadlines.listener", timeout=60)
            absolute = client.start("deadlines.listener", queue="deadlines-q", deadline=deadline)
            assert (queued.row().deadline, queued.row().timeout) == (None, 60.0)
            assert (absolute.row().deadline, absolute.row().timeout) == (deadline, None)
            with pytest.raises(ValueError, match="naive"):
                client.start("deadlines.listener", deadline=datetime(2030, 1, 1))

        async def from_a_loop() -> None:
            async with AsyncClient(url, app_version="v1", executor_id="deadlines-worker") as aio:
                started = await aio.start("deadlines.listener", timeout=0.5)
                with pytest.raises(WorkflowDeadlineExceeded):
                    await started.result(timeout=10)
                enqueued = await aio.enqueue("deadlines-q", "deadlines.listener", timeout=5)
                assert (await enqueued.row()).timeout == 5.0

        asyncio.run(from_a_loop())


def test_the_async_engine_forms() -> None:
    async def main() -> None:
        async with AsyncEngine("memory://", poll_interval=0.05) as engine:
            handles = await asyncio.gather(
                engine.start(listener, timeout=0.5), engine.start(listener)
            )
            with pytest.raises(WorkflowDeadlineExceeded):
                await handles[0].result(timeout=10)
            assert (await handles[1].status()) is Status.PENDING
            queued = await engine.enqueue("deadlines-q", listener, timeout=7)
            assert (await queued.row()).timeout == 7.0
            many = await engine.enqueue_many("deadlines-q", listener, [()], timeout=8)
            assert (await many[0].row()).timeout == 8.0

    asyncio.run(main())


# -- the testing kit ---------------------------------------------------------------------------


def test_the_testing_kit_runs_a_deadline_on_virtual_time() -> None:
    began = time.monotonic()
    result = run(month_sleeper, workflow_timeout=DAY)
    assert time.monotonic() - began < 5  # a day of virtual time, in no wall time
    assert result.status is Status.CANCELLED
    assert result.elapsed == DAY
    assert isinstance(result.error, WorkflowDeadlineExceeded)
    assert "timed out: its deadline" in str(result.error)
    parent = run(calls_a_sleeper, deadline=result.started_at + timedelta(hours=2))
    assert parent.status is Status.CANCELLED
    assert parent.elapsed == timedelta(hours=2)
    assert parent.error is not None and "deadline" in str(parent.error)
    check_determinism(month_sleeper, workflow_timeout=DAY)


def test_the_cli_shows_a_runs_deadline_and_why_it_was_cancelled(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from replaykit.cli import cli

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with Engine(url, poll_interval=0.05) as engine:
        handle = engine.start(listener, workflow_id="dl-cli", timeout=0.3)
        with pytest.raises(WorkflowDeadlineExceeded):
            handle.result(timeout=20)
        engine.enqueue("later", listener, workflow_id="dl-cli-queued", timeout=60)
    runner = CliRunner()
    shown = runner.invoke(cli, ["workflows", "show", "dl-cli", "--url", url])
    assert shown.exit_code == 0, shown.output
    assert "deadline" in shown.output and "(timeout 0.3s)" in shown.output
    assert "timed out: its deadline" in shown.output
    queued = runner.invoke(cli, ["workflows", "show", "dl-cli-queued", "--url", url])
    assert "60s, from when it is claimed" in queued.output
    data = json.loads(
        runner.invoke(cli, ["workflows", "show", "dl-cli", "--url", url, "--json"]).output
    )
    assert data["workflow"]["timeout"] == 0.3 and data["workflow"]["deadline"] is not None
