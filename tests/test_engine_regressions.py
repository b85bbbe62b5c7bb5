"""Regressions found by the testing kit's property tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import All, Engine, Now, Race, Recv, Sleep, Status, Step, workflow
from replaykit.testing import Message, run

GATE = threading.Event()


def wait_for_gate() -> str:
    GATE.wait(5)
    return "opened"


@workflow(name="regress-sends-during-step")
def sends_during_step_wf() -> Generator[Any, Any, list[Any]]:
    yield Step("gate", wait_for_gate)
    return [(yield Recv("in")), (yield Recv("in")), (yield Recv("in"))]


def test_messages_sent_while_a_step_runs_do_not_make_the_run_spin() -> None:
    GATE.clear()
    with Engine("memory://", poll_interval=0.1) as engine:
        handle = engine.start(sends_during_step_wf, workflow_id="spin")
        time.sleep(0.1)
        engine.send("spin", 1, topic="in")
        engine.send("spin", 2, topic="in")
        GATE.set()
        time.sleep(0.3)
        # Waiting for the third message: suspended, not re-activated in a loop.
        assert handle.status() is Status.PENDING
        assert engine.wait_idle(timeout=2)
        engine.send("spin", 3, topic="in")
        assert handle.result(timeout=10) == [1, 2, 3]


@workflow(name="regress-all-step-sleep")
def all_step_sleep_wf() -> Generator[Any, Any, Any]:
    values = yield All(Step("quick", lambda: "q"), Sleep(timedelta(days=3)))
    when = yield Now()
    return values, when


def test_all_of_a_step_and_a_long_sleep_finishes_on_virtual_time() -> None:
    started = time.monotonic()
    result = run(all_step_sleep_wf, timeout=20, real_steps=True)
    assert result.status is Status.SUCCESS
    assert result.unwrap()[0] == ["q", None]
    assert result.elapsed >= timedelta(days=3)
    assert time.monotonic() - started < 10


@workflow(name="regress-race-then-now")
def race_then_now_wf() -> Generator[Any, Any, Any]:
    start = yield Now()
    winner, _ = yield Race(Recv("go"), Sleep(timedelta(days=1)))
    end = yield Now()
    return winner, (end - start).total_seconds()


def test_a_won_race_leaves_no_stale_timer_to_move_virtual_time() -> None:
    result = run(race_then_now_wf, messages=[Message("go", None, at=timedelta(hours=3))])
    winner, seconds = result.unwrap()
    assert winner == 0
    assert seconds == timedelta(hours=3).total_seconds()


SEEN: list[int] = []


@workflow(name="regress-log-once")
def log_once_wf(n: int) -> Generator[Any, Any, int]:
    from replaykit import context

    for i in range(n):
        yield Recv("tick")
        if not context().is_replaying:
            SEEN.append(i)
    return n


def test_code_after_a_wait_runs_live_once_per_wait(store_url: str) -> None:
    SEEN.clear()
    with Engine(store_url, poll_interval=0.1) as engine:
        handle = engine.start(log_once_wf, 5, workflow_id="log-once")
        for _ in range(5):
            time.sleep(0.05)
            engine.send("log-once", None, topic="tick")
        assert handle.result(timeout=20) == 5
    assert SEEN == [0, 1, 2, 3, 4]


@workflow(name="regress-resumable")
def resumable_wf() -> Generator[Any, Any, str]:
    yield Step("first", lambda: "one")
    yield Recv("go", timeout=0.01)
    return "done"


def test_a_run_resumed_by_another_process_is_picked_up_by_the_running_engine(
    store_url: str,
) -> None:
    import replaykit

    shared: Any = replaykit.MemoryStore() if store_url.startswith("memory") else store_url
    with Engine(shared, poll_interval=0.05) as engine:
        handle = engine.start(resumable_wf, workflow_id="resume-me")
        handle.result(timeout=20)
        engine.store.set_status("resume-me", Status.PARKED)  # as if it had been parked
        # An operator elsewhere (the CLI) resumes it through its own store handle.
        operator = shared if not isinstance(shared, str) else replaykit.stores.open_store(shared)
        try:
            assert operator.set_status(
                "resume-me",
                Status.PENDING,
                only_from=(Status.PARKED,),
                executor_id=engine.executor_id,
            )
        finally:
            if operator is not shared:
                operator.close()
        wait_for(
            lambda: handle.status() is Status.SUCCESS, "the resumed run to be picked up", timeout=10
        )


SWALLOWED: list[str] = []


async def swallows_its_cancellation() -> str:
    import asyncio

    try:
        await asyncio.sleep(5)
    except asyncio.CancelledError:
        SWALLOWED.append("swallowed")
        return "finished anyway"
    return "slept"


@workflow
def times_out_a_stubborn_step() -> Generator[Any, Any, str]:
    try:
        yield Step("stubborn", swallows_its_cancellation, timeout=0.1)
    except TimeoutError as exc:
        return f"timed out: {exc}"
    return "recorded as a success"


@workflow
def times_out_a_stubborn_step_in_all() -> Generator[Any, Any, str]:
    try:
        yield All(Step("stubborn", swallows_its_cancellation, timeout=0.1), Now())
    except TimeoutError as exc:
        return f"timed out: {exc}"
    return "recorded as a success"


def test_an_async_step_that_swallows_its_cancellation_still_timed_out() -> None:
    """Past its deadline an attempt failed with a timeout, whatever the body did with
    its cancellation (asyncio.wait_for would hand back the body's late value)."""
    SWALLOWED.clear()
    with Engine("memory://") as engine:
        assert engine.run(times_out_a_stubborn_step, timeout=20) == (
            "timed out: step 'stubborn' timed out after 0.1s"
        )
        assert engine.run(times_out_a_stubborn_step_in_all, timeout=20).startswith("timed out")
    assert SWALLOWED == ["swallowed", "swallowed"]  # the bodies were cancelled, and said so


INTERRUPTS: list[int] = []


def interrupted_once() -> str:
    INTERRUPTS.append(1)
    if len(INTERRUPTS) == 1:
        raise KeyboardInterrupt("as if Ctrl-C reached the step")
    return "ran again"


@workflow
def interrupted_step() -> Generator[Any, Any, str]:
    value = yield Step("interrupted", interrupted_once)
    return value


@pytest.mark.parametrize("how", ["recover", "resume"])
def test_a_base_exception_from_a_step_leaves_the_run_runnable_in_that_engine(
    how: str, tmp_path: Any
) -> None:
    """Torture report, issue 13, fault 12: after a KeyboardInterrupt inside a step the
    engine listed the run in recover() but nothing ran it, nor did resume."""
    INTERRUPTS.clear()
    with Engine(f"sqlite:///{tmp_path / 'kb.db'}", poll_interval=0.1) as engine:
        handle = engine.start(interrupted_step, workflow_id="kb")
        wait_for(lambda: INTERRUPTS, "the interrupt", timeout=10)
        assert engine.wait_idle(10)
        assert engine.steps("kb") == []  # the interrupted attempt recorded nothing
        if how == "recover":
            assert engine.recover() == ["kb"]
        else:
            engine.resume("kb")
        assert handle.result(timeout=10) == "ran again"
    assert len(INTERRUPTS) == 2


def test_a_run_no_engine_can_run_says_why(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Torture report, issue 13, fault 15: a run whose workflow this engine has not
    registered stayed PENDING with an empty error, and result() only timed out."""
    from datetime import UTC, datetime

    from replaykit.errors import WorkflowTimeout
    from replaykit.stores.base import WorkflowRow

    with Engine(f"sqlite:///{tmp_path / 'unknown.db'}", poll_interval=0.05) as engine:
        row = WorkflowRow(
            workflow_id="orphan",
            name="defined-in-a-module-nobody-imported",
            status=Status.PENDING,
            inputs={"args": [], "kwargs": {}},
            executor_id=engine.executor_id,
            app_version=engine.app_version,
            created_at=datetime.now(UTC),
        )
        engine.store.create_workflow(row)
        with caplog.at_level("WARNING", logger="replaykit.engine"):
            for _ in range(3):  # as sweeps and recoveries would
                engine.dispatch("orphan")
                assert engine.wait_idle(10)
        stored = engine.store.get_workflow("orphan")
        assert stored is not None and stored.status is Status.PENDING
        assert "defined-in-a-module-nobody-imported" in stored.error
        assert "is registered" in stored.error and "orphan" in stored.error
        warnings = [r for r in caplog.records if "cannot run workflow" in r.getMessage()]
        assert len(warnings) == 1  # said once, not at every sweep
        with pytest.raises(WorkflowTimeout, match="Import the module"):
            engine.handle("orphan").result(timeout=0.2)


def test_an_engine_whose_launch_fails_leaves_nothing_behind() -> None:
    """Torture report, issue 13, fault 18: an Engine() whose recovery raised left its
    threads running, and one of them raised later in the process."""
    import replaykit

    class FailingRecovery(replaykit.MemoryStore):
        closed = False

        def bump_recovery(self, workflow_id: str) -> int:
            raise RuntimeError("a bad row, say")

        def close(self) -> None:
            self.closed = True
            super().close()

    store = FailingRecovery()
    with Engine(store, recover=False) as first:
        first.start(waits_forever, workflow_id="stays-pending")
        assert first.wait_idle(10)
    store.closed = False
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(RuntimeError, match="a bad row"):
        Engine(store)
    deadline = time.monotonic() + 10
    while True:
        left = [
            t.name
            for t in threading.enumerate()
            if t.ident not in before and t.name.startswith("replaykit") and t.is_alive()
        ]
        if not left:
            break
        assert time.monotonic() < deadline, f"threads left running: {left}"
        time.sleep(0.05)
    assert store.closed


@workflow
def waits_forever() -> Generator[Any, Any, None]:
    yield Recv("never")


def kilobytes(n: int) -> str:
    return "x" * (n * 1000)


@workflow
def three_big_children() -> Generator[Any, Any, str]:
    try:
        yield All(Step("a", kilobytes, 6), Step("b", kilobytes, 6), Step("c", kilobytes, 6))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "recorded"


@workflow
def inbox_only() -> Generator[Any, Any, int]:
    message = yield Recv("in")
    return len(message)


def test_every_write_path_checks_the_payload_limit(store_url: str) -> None:
    """Torture report, issue 13, fault 8: engine.send accepted 100 MB messages, and an
    All of three 1.5 MB steps recorded one 4.7 MB record."""
    from replaykit import serde
    from replaykit.errors import PayloadTooLarge
    from replaykit.log import Failure

    with Engine(store_url, max_payload_bytes=10_000) as engine:
        handle = engine.start(inbox_only, workflow_id="inbox")
        with pytest.raises(PayloadTooLarge, match="the message to 'inbox'"):
            engine.send("inbox", kilobytes(11), "in")
        engine.send("inbox", kilobytes(9), "in")  # within the limit: delivered
        assert handle.result(timeout=20) == 9000

        outcome = engine.run(three_big_children, workflow_id="big-all", timeout=20)
        assert outcome.startswith("PayloadTooLarge: the record of All in workflow")
        assert "(id 'big-all') at position 0" in outcome
        (record,) = engine.steps("big-all")
        assert isinstance(record.outcome, Failure)
        assert len(serde.dumps(record.outcome.error.message)) < 1000  # small, not the children's


def _acknowledgement_lost_once(method: Any, when: Any = lambda *args: True) -> Any:
    """`method` commits, then its caller hears a dropped connection, the first time
    `when(*args)` holds."""
    from replaykit.errors import StoreUnavailable

    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        answer = method(*args, **kwargs)
        if not calls and when(*args):
            calls.append(1)
            raise StoreUnavailable("connection lost after COMMIT (as a cutting proxy does)")
        return answer

    return flaky


def test_a_lost_acknowledgement_neither_duplicates_a_send_nor_strands_a_start(
    store_url: str,
) -> None:
    """Torture report, issue 13, faults 2 and 3: the retry of an unkeyed send inserted the
    message again; the retry of a create found the run and left it undispatched."""
    from replaykit.stores import open_store

    store = open_store(store_url)
    with Engine(store, poll_interval=30) as engine:  # no sweep comes to the rescue
        store.create_workflow = _acknowledgement_lost_once(store.create_workflow)  # type: ignore[method-assign]
        handle = engine.start(inbox_only, workflow_id="lost-ack")
        store.send_message = _acknowledgement_lost_once(store.send_message)  # type: ignore[method-assign]
        assert engine.send("lost-ack", "one", "in") is True
        assert handle.result(timeout=20) == 3
        assert store.peek_message("lost-ack", "in") is None  # delivered once, consumed
        # A child started by a workflow goes through the same path.
        store.create_workflow = _acknowledgement_lost_once(  # type: ignore[method-assign]
            store.create_workflow, when=lambda row, *rest: row.parent_id is not None
        )
        assert engine.run(starts_a_child, timeout=20) == "child:done"


def test_a_keyed_send_whose_acknowledgement_was_lost_reports_its_delivery(
    store_url: str,
) -> None:
    """Torture report, issue 13, fault 2: with a key, the retry of a send whose first
    attempt committed answered "duplicate"; the caller was told nothing was delivered."""
    from replaykit.stores import open_store

    store = open_store(store_url)
    with Engine(store, poll_interval=30) as engine:
        handle = engine.start(inbox_only, workflow_id="keyed-lost-ack")
        store.send_message = _acknowledgement_lost_once(store.send_message)  # type: ignore[method-assign]
        assert engine.send("keyed-lost-ack", "one", "in", idempotency_key="order-7") is True
        # Another call with that key is the duplicate, and delivers nothing.
        assert engine.send("keyed-lost-ack", "again", "in", idempotency_key="order-7") is False
        assert handle.result(timeout=20) == 3  # "one"
        assert store.peek_message("keyed-lost-ack", "in") is None  # "again" never arrived


@workflow
def child_says_done() -> Generator[Any, Any, str]:
    yield Now()
    return "child:done"


@workflow
def starts_a_child() -> Generator[Any, Any, str]:
    from replaykit import Call

    value: str = yield Call(child_says_done)
    return value


RAN: list[str] = []


def takes_a_moment(name: str) -> str:
    time.sleep(0.4)
    RAN.append(name)
    return name


@workflow
def three_children_then_wait() -> Generator[Any, Any, Any]:
    done = yield All(
        Step("a", takes_a_moment, "a"),
        Step("b", takes_a_moment, "b"),
        Step("c", takes_a_moment, "c"),
    )
    yield Recv("go")
    return list(done)


@workflow
def a_step_beside_a_wait() -> Generator[Any, Any, Any]:
    done = yield All(Step("a", takes_a_moment, "a"), Recv("never-before-close"))
    return list(done)


def test_a_graceful_close_lets_an_alls_running_children_finish_and_commit(
    tmp_path: Any,
) -> None:
    """Torture report, issue 13, fault 7: on SIGTERM an All's three children finished in
    the stopping worker, nothing was recorded, and the next worker ran all three again."""
    url = f"sqlite:///{tmp_path / 'all.db'}"
    RAN.clear()
    engine = Engine(url)
    engine.start(three_children_then_wait, workflow_id="all-3")
    time.sleep(0.15)  # the three children are under way
    engine.close()
    assert sorted(RAN) == ["a", "b", "c"]
    with Engine(url) as again:
        records = again.steps("all-3")
        assert records[0].kind == "all"  # committed before the close returned
        assert records[0].outcome is not None
        again.send("all-3", None, "go")
        assert again.handle("all-3").result(timeout=20) == ["a", "b", "c"]
    assert sorted(RAN) == ["a", "b", "c"]  # none ran twice

    # An All that the running children cannot decide records nothing; the close still
    # waits for them, then returns (it does not wait for the message).
    RAN.clear()
    engine = Engine(url)
    engine.start(a_step_beside_a_wait, workflow_id="all-wait")
    time.sleep(0.15)
    started = time.monotonic()
    engine.close()
    assert time.monotonic() - started < 5
    assert RAN == ["a"]
    with Engine(url, recover=False) as again:
        assert again.steps("all-wait") == []


def sleeps_three_seconds(tag: str) -> str:
    time.sleep(3)
    return tag


@workflow
def one_long_sync_step(tag: str) -> Generator[Any, Any, str]:
    value: str = yield Step("long", sleeps_three_seconds, tag)
    return value


def test_close_with_a_timeout_does_not_wait_for_sync_steps_past_it(tmp_path: Any) -> None:
    """close(timeout=) bounds the close: a sync body still running then is abandoned
    (no thread can be stopped) and records nothing; recovery runs it again."""
    url = f"sqlite:///{tmp_path / 'bounded.db'}"
    engine = Engine(url)
    for tag in ("a", "b", "c"):  # several, so that some run on the pool
        engine.start(one_long_sync_step, tag, workflow_id=f"long-{tag}")
    time.sleep(0.2)
    started = time.monotonic()
    engine.close(timeout=0.3)
    assert time.monotonic() - started < 2.0
    with Engine(url, recover=False) as again:
        for tag in ("a", "b", "c"):
            assert again.handle(f"long-{tag}").status() is Status.PENDING


BACKING_OFF: list[int] = []


def fails_the_first_time() -> str:
    BACKING_OFF.append(1)
    if len(BACKING_OFF) == 1:
        raise ConnectionError("the first attempt fails")
    return "second attempt"


@workflow
def retries_after_a_long_back_off() -> Generator[Any, Any, str]:
    from replaykit import Retry

    value: str = yield Step("flaky", fails_the_first_time, retry=Retry(max_attempts=3, interval=30))
    return value


def test_a_close_does_not_wait_out_a_retry_back_off(tmp_path: Any) -> None:
    """The review of issue 13's fixes: a sync step's retry back-off was a plain sleep, so
    a graceful close waited out all of it (30 s here). The attempt that would follow is
    not made anyway: the back-off ends with the close, and the run stays resumable."""
    url = f"sqlite:///{tmp_path / 'backoff.db'}"
    BACKING_OFF.clear()
    engine = Engine(url)
    engine.start(retries_after_a_long_back_off, workflow_id="backing-off")
    wait_for(lambda: BACKING_OFF, "the first attempt to fail", timeout=10)
    time.sleep(0.1)  # in its back-off now
    started = time.monotonic()
    engine.close()
    assert time.monotonic() - started < 5
    with Engine(url) as again:
        # The back-off is a durable timer: the recovered run waits for the recorded due
        # time (30 s after the first attempt failed), with its one attempt counted.
        time.sleep(0.3)
        [record] = again.store.load_log("backing-off")
        assert record.outcome is None and record.attempts == 1
        assert record.wake_at is not None and record.started_at is not None
        assert (record.wake_at - record.started_at).total_seconds() >= 30
        assert len(BACKING_OFF) == 1
        assert again.handle("backing-off").status() is Status.PENDING
