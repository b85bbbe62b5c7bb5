"""Messages, events, Race, All, child workflows and cancellation, on every store."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator, Iterator
from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    All,
    AwaitedWorkflowCancelled,
    Call,
    Engine,
    GetEvent,
    Race,
    Recv,
    Send,
    SetEvent,
    Sleep,
    Start,
    Status,
    Step,
    Wait,
    workflow,
)
from replaykit.errors import WorkflowNotFound

RUNS: dict[str, int] = {}
LOCK = threading.Lock()


def count(name: str) -> str:
    with LOCK:
        RUNS[name] = RUNS.get(name, 0) + 1
    return name


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    RUNS.clear()
    yield


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    with Engine(store_url, poll_interval=0.2) as eng:
        yield eng


# -- messages ---------------------------------------------------------------------


@workflow(name="comm-inbox")
def inbox_wf(n: int) -> Generator[Any, Any, list[Any]]:
    got = []
    for _ in range(n):
        got.append((yield Recv("orders")))
    got.append((yield Recv("other", timeout=0.2)))
    return got


def test_messages_arrive_fifo_per_topic_and_recv_times_out(engine: Engine) -> None:
    handle = engine.start(inbox_wf, 3, workflow_id="inbox")
    engine.send("inbox", {"n": 1}, topic="orders")
    engine.send("inbox", "ignored-topic", topic="elsewhere")
    engine.send("inbox", {"n": 2}, topic="orders")
    engine.send("inbox", {"n": 3}, topic="orders")
    assert handle.result(timeout=20) == [{"n": 1}, {"n": 2}, {"n": 3}, None]
    # The message on another topic is still waiting; nothing else is.
    assert engine.store.peek_message("inbox", "elsewhere") is not None
    assert engine.store.peek_message("inbox", "orders") is None


def test_send_idempotency_key_delivers_once(engine: Engine) -> None:
    handle = engine.start(inbox_wf, 2, workflow_id="idem")
    assert engine.send("idem", "a", topic="orders", idempotency_key="k1")
    assert not engine.send("idem", "a-again", topic="orders", idempotency_key="k1")
    engine.send("idem", "b", topic="orders")
    assert handle.result(timeout=20) == ["a", "b", None]


def test_sending_to_a_missing_workflow_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(WorkflowNotFound, match="no-such"):
        engine.send("no-such", "hello")


@workflow(name="comm-ping")
def ping_wf(target: str) -> Generator[Any, Any, Any]:
    yield Send(target, {"from": "ping"}, topic="orders")
    yield Send(target, {"from": "ping-2"}, topic="orders")
    return (yield Recv("reply"))


@workflow(name="comm-pong")
def pong_wf() -> Generator[Any, Any, Any]:
    first = yield Recv("orders")
    second = yield Recv("orders")
    yield Send("ping", [first, second], topic="reply")
    return "ponged"


def test_workflows_message_each_other(engine: Engine) -> None:
    pong = engine.start(pong_wf, workflow_id="pong")
    ping = engine.start(ping_wf, "pong", workflow_id="ping")
    assert pong.result(timeout=20) == "ponged"
    assert ping.result(timeout=20) == [{"from": "ping"}, {"from": "ping-2"}]


@workflow(name="comm-send-missing")
def send_missing_wf() -> Generator[Any, Any, str]:
    try:
        yield Send("nobody-home", 1)
    except WorkflowNotFound as exc:
        return str(exc)
    return "sent?"


def test_send_inside_a_workflow_to_a_missing_id_fails_that_position(engine: Engine) -> None:
    message = engine.run(send_missing_wf, timeout=20)
    assert "nobody-home" in message and "position 0" in message


# -- events -----------------------------------------------------------------------------


@workflow(name="comm-publisher")
def publisher_wf() -> Generator[Any, Any, None]:
    yield SetEvent("stage", "charging")
    yield Recv("go")
    yield SetEvent("stage", "shipped")


@workflow(name="comm-watcher")
def watcher_wf(target: str) -> Generator[Any, Any, list[Any]]:
    first = yield GetEvent(target, "stage")
    missing = yield GetEvent(target, "never-set", timeout=0.2)
    return [first, missing]


def test_events_latest_wins_inside_and_outside(engine: Engine) -> None:
    pub = engine.start(publisher_wf, workflow_id="pub")
    assert engine.get_event("pub", "stage", timeout=10) == "charging"
    watcher = engine.start(watcher_wf, "pub")
    assert watcher.result(timeout=20) == ["charging", None]
    engine.send("pub", None, topic="go")
    pub.result(timeout=20)
    assert engine.get_event("pub", "stage") == "shipped"
    assert engine.get_event("pub", "absent", timeout=0.1) is None


@workflow(name="comm-waiting-watcher")
def waiting_watcher_wf(target: str) -> Generator[Any, Any, Any]:
    return (yield GetEvent(target, "late"))


@workflow(name="comm-late-publisher")
def late_publisher_wf() -> Generator[Any, Any, None]:
    yield Recv("go")
    yield SetEvent("late", {"ready": True})


def test_get_event_waits_for_the_event(engine: Engine) -> None:
    engine.start(late_publisher_wf, workflow_id="late-pub")
    watcher = engine.start(waiting_watcher_wf, "late-pub")
    time.sleep(0.3)
    assert watcher.status() is Status.PENDING
    engine.send("late-pub", None, topic="go")
    assert watcher.result(timeout=20) == {"ready": True}


# -- Race -----------------------------------------------------------------------------------


def slow_step(seconds: float) -> str:
    time.sleep(seconds)
    return count("slow")


async def slow_async(seconds: float) -> str:
    count("async-started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        count("async-cancelled")
        raise
    return count("async-finished")


@workflow(name="comm-approval")
def approval_wf(deadline: float) -> Generator[Any, Any, Any]:
    winner, value = yield Race(Recv("approve"), Sleep(deadline))
    return ["approved", value] if winner == 0 else ["expired", value]


def test_race_recv_wins_and_the_sleep_leaves_no_trace(engine: Engine) -> None:
    handle = engine.start(approval_wf, 30, workflow_id="approve-1")
    engine.send("approve-1", "yes", topic="approve")
    assert handle.result(timeout=20) == ["approved", "yes"]
    (record,) = engine.steps("approve-1")
    assert record.kind == "race" and record.name == "recv:approve|sleep:sleep"


def test_race_deadline_wins_and_the_losing_recv_consumes_nothing(engine: Engine) -> None:
    handle = engine.start(approval_wf, 0.3, workflow_id="approve-2")
    assert handle.result(timeout=20) == ["expired", None]
    engine.send("approve-2", "too late", topic="approve")
    message = engine.store.peek_message("approve-2", "approve")
    assert message is not None and message.payload == "too late"


@workflow(name="comm-step-timeout")
def step_timeout_wf() -> Generator[Any, Any, Any]:
    return (yield Race(Step("slow", slow_async, 5), Sleep(0.2)))


def test_race_step_against_sleep_cancels_the_losing_async_step(engine: Engine) -> None:
    assert engine.run(step_timeout_wf, timeout=20) == [1, None]
    # On a loaded machine the sleep may win before the engine's loop got to the step:
    # then it never starts, which is as good (a loser leaves no trace). Once started,
    # it must be cancelled, never finish.
    if RUNS.get("async-started"):
        wait_for(lambda: RUNS.get("async-cancelled") == 1)
    assert RUNS.get("async-started", 0) <= 1
    assert "async-finished" not in RUNS


@workflow(name="comm-step-wins")
def step_wins_wf() -> Generator[Any, Any, Any]:
    return (yield Race(Sleep(30), Step("quick", count, "quick")))


def test_race_step_wins_and_replays_without_running_children(engine: Engine) -> None:
    assert engine.run(step_wins_wf, workflow_id="quick-race", timeout=20) == [1, "quick"]
    assert RUNS == {"quick": 1}


# -- All -----------------------------------------------------------------------------------


def ms_step(i: int) -> int:
    time.sleep(0.1)
    return i * i


@workflow(name="comm-fanout")
def fanout_wf(n: int) -> Generator[Any, Any, list[int]]:
    return (yield All(*[Step(f"square-{i}", ms_step, i) for i in range(n)]))


def test_all_runs_children_concurrently_in_argument_order(engine: Engine) -> None:
    start = time.monotonic()
    assert engine.run(fanout_wf, 20, workflow_id="fan", timeout=30) == [i * i for i in range(20)]
    # Twenty 100 ms steps in sequence take two seconds; concurrently, far less
    # (the margin leaves room for a loaded CI machine).
    assert time.monotonic() - start < 1.2
    (record,) = engine.steps("fan")
    assert record.kind == "all"


def failing(i: int) -> int:
    raise ValueError(f"child {i} failed")


@workflow(name="comm-all-fails")
def all_fails_wf(return_exceptions: bool) -> Generator[Any, Any, Any]:
    try:
        values = yield All(
            Step("ok", ms_step, 2), Step("bad", failing, 1), return_exceptions=return_exceptions
        )
    except ValueError as exc:
        return f"raised: {exc}"
    return [v if isinstance(v, int) else f"{type(v).__name__}: {v}" for v in values]


def test_all_raises_the_first_failure_or_returns_exceptions(engine: Engine) -> None:
    assert engine.run(all_fails_wf, False, timeout=20) == "raised: child 1 failed"
    assert engine.run(all_fails_wf, True, timeout=20) == [4, "ValueError: child 1 failed"]


@workflow(name="comm-all-messages")
def all_messages_wf() -> Generator[Any, Any, Any]:
    return (yield All(Recv("a"), Recv("b"), Step("s", count, "s")))


def test_all_with_waiting_children_consumes_each_message_once(engine: Engine) -> None:
    handle = engine.start(all_messages_wf, workflow_id="all-msgs")
    engine.send("all-msgs", "A", topic="a")
    engine.send("all-msgs", "B", topic="b")
    assert handle.result(timeout=20) == ["A", "B", "s"]
    assert engine.store.peek_message("all-msgs", "a") is None
    assert engine.store.peek_message("all-msgs", "b") is None


# -- child workflows ----------------------------------------------------------------------------


@workflow(name="comm-child")
def child_wf(x: int) -> Generator[Any, Any, int]:
    yield Step("child-work", count, f"child-{x}")
    if x < 0:
        raise KeyError("negative")
    return x * 10


@workflow(name="comm-parent")
def parent_wf() -> Generator[Any, Any, list[Any]]:
    child_id = yield Start(child_wf, 1)
    called = yield Call(child_wf, 2)
    waited = yield Wait(child_id)
    try:
        yield Call(child_wf, -1)
    except KeyError as exc:
        failure = f"KeyError {exc.args[0]}"
    return [child_id, called, waited, failure]


def test_child_workflows_start_call_and_wait(engine: Engine) -> None:
    result = engine.run(parent_wf, workflow_id="parent", timeout=30)
    assert result == ["parent:0", 20, 10, "KeyError negative"]
    children = engine.list_workflows(parent_id="parent")
    assert sorted(c.workflow_id for c in children) == ["parent:0", "parent:1", "parent:3"]
    assert RUNS == {"child-1": 1, "child-2": 1, "child--1": 1}


@workflow(name="comm-waits-on-sleeper")
def waits_on_sleeper_wf() -> Generator[Any, Any, Any]:
    return (yield Call(sleepy_child_wf))


@workflow(name="comm-sleepy-child")
def sleepy_child_wf() -> Generator[Any, Any, str]:
    yield Sleep(30)
    return "slept"


def test_cancelled_child_raises_awaited_workflow_cancelled(engine: Engine) -> None:
    parent = engine.start(waits_on_sleeper_wf, workflow_id="p2")
    wait_for(lambda: engine.store.get_workflow("p2:0") is not None)
    engine.cancel("p2:0")
    with pytest.raises(AwaitedWorkflowCancelled, match="p2:0"):
        parent.result(timeout=20)
    assert parent.status() is Status.ERROR


def test_cancelling_a_parent_cancels_its_children(engine: Engine) -> None:
    parent = engine.start(waits_on_sleeper_wf, workflow_id="p3")
    wait_for(lambda: engine.store.get_workflow("p3:0") is not None)
    engine.terminate("p3", children=True)
    assert parent.status() is Status.CANCELLED
    assert engine.handle("p3:0").status() is Status.CANCELLED


# -- cancellation ------------------------------------------------------------------------------


@workflow(name="comm-cancel-step")
def cancel_step_wf() -> Generator[Any, Any, str]:
    yield Step("long", slow_step, 0.5)
    yield Step("after", count, "after")
    return "finished"


def test_a_cancel_during_a_step_lets_its_record_land_and_stops_the_run(engine: Engine) -> None:
    handle = engine.start(cancel_step_wf, workflow_id="c1")
    time.sleep(0.1)
    engine.terminate("c1")
    time.sleep(0.8)
    assert handle.status() is Status.CANCELLED
    # The body ran to its end: its record landed in the cancelled run, nothing after it ran.
    assert [step.name for step in engine.steps("c1")] == ["long"]
    assert "after" not in RUNS
    engine.resume("c1")
    assert handle.result(timeout=20) == "finished"
    assert RUNS == {"slow": 1, "after": 1}  # the resume went on after the landed step


@workflow(name="comm-swallow")
def swallow_wf() -> Generator[Any, Any, str]:
    try:
        yield Recv("never")
    except Exception:
        return "swallowed"
    return "received"


def test_cancellation_cannot_be_swallowed(engine: Engine) -> None:
    handle = engine.start(swallow_wf, workflow_id="swallow")
    time.sleep(0.2)
    engine.cancel("swallow")
    with pytest.raises(AwaitedWorkflowCancelled):
        handle.result(timeout=5)
    assert handle.status() is Status.CANCELLED


@workflow(name="comm-all-sleeps")
def all_sleeps_wf() -> Generator[Any, Any, Any]:
    yield Step("before", count, "before")
    values = yield All(Sleep(0.1), Sleep(0.4))
    yield Step("after", count, "after")
    return values


def test_all_of_sleeps_waits_for_the_longest_without_spinning(engine: Engine) -> None:
    start = time.monotonic()
    assert engine.run(all_sleeps_wf, workflow_id="all-sleeps", timeout=20) == [None, None]
    assert time.monotonic() - start >= 0.4
    assert RUNS == {"before": 1, "after": 1}


# -- nested composites ------------------------------------------------------------------------


def ms_step_named(name: str) -> str:
    time.sleep(0.05)
    return count(name)


@workflow(name="comm-race-of-all")
def race_of_all_wf(deadline: float) -> Generator[Any, Any, Any]:
    return (
        yield Race(
            All(Step("a", ms_step_named, "a"), Step("b", ms_step_named, "b")), Sleep(deadline)
        )
    )


def test_a_race_of_an_all_is_one_record_and_replays(engine: Engine) -> None:
    assert engine.run(race_of_all_wf, 60, workflow_id="roa", timeout=20) == [0, ["a", "b"]]
    (record,) = engine.steps("roa")
    assert record.kind == "race" and record.name == "all(step:a|step:b)|sleep:sleep"
    assert record.to_json()["outcome"] == {
        "value": {
            "index": 0,
            "outcome": {
                "value": {"outcomes": [{"value": "a"}, {"value": "b"}], "first_failure": None}
            },
        }
    }
    assert RUNS == {"a": 1, "b": 1}


@workflow(name="comm-all-of-race")
def all_of_race_wf(deadline: float) -> Generator[Any, Any, Any]:
    raced, stepped = yield All(Race(Recv("x"), Sleep(deadline)), Step("s", count, "s"))
    later = yield Recv("x", timeout=0.2)
    return [raced, stepped, later]


def test_an_all_of_a_race_times_out_the_inner_recv(engine: Engine) -> None:
    handle = engine.start(all_of_race_wf, 0.2, workflow_id="aor-1")
    assert handle.result(timeout=20) == [[1, None], "s", None]
    records = engine.steps("aor-1")
    assert [r.kind for r in records] == ["all", "recv"]
    assert records[0].name == "race(recv:x|sleep:sleep)|step:s"


def test_an_all_of_a_race_takes_the_message(engine: Engine) -> None:
    handle = engine.start(all_of_race_wf, 30, workflow_id="aor-2")
    engine.send("aor-2", "hello", topic="x")
    assert handle.result(timeout=20) == [[0, "hello"], "s", None]
    assert engine.store.peek_message("aor-2", "x") is None


@workflow(name="comm-losing-inner-recv")
def losing_inner_recv_wf() -> Generator[Any, Any, Any]:
    raced = yield Race(All(Recv("x"), Recv("y")), Recv("z"))
    later = yield Recv("x")
    return [raced, later]


def test_a_losing_inner_recv_leaves_its_message_for_a_later_recv(engine: Engine) -> None:
    handle = engine.start(losing_inner_recv_wf, workflow_id="lir")
    engine.send("lir", "X", topic="x")
    time.sleep(0.3)  # the inner Recv("x") sees it, but its All is not decided
    engine.send("lir", "Z", topic="z")
    assert handle.result(timeout=20) == [[1, "Z"], "X"]
    assert engine.store.peek_message("lir", "x") is None


@workflow(name="comm-losing-recv-to-step")
def losing_recv_to_step_wf() -> Generator[Any, Any, Any]:
    raced = yield Race(All(Recv("x"), Recv("y")), Step("slow", slow_step, 0.4))
    later = yield Recv("x")
    return [raced, later]


def test_a_recv_losing_to_a_step_leaves_its_message(engine: Engine) -> None:
    handle = engine.start(losing_recv_to_step_wf, workflow_id="lrs")
    engine.send("lrs", "X", topic="x")
    assert handle.result(timeout=20) == [[1, "slow"], "X"]


@workflow(name="comm-call-loses")
def call_loses_wf() -> Generator[Any, Any, Any]:
    raced = yield Race(Call(sleepy_child_wf), Sleep(0.3))
    yield Step("after", count, "after")
    return raced


def test_a_call_losing_to_a_sleep_is_cancelled_and_the_parent_goes_on(engine: Engine) -> None:
    assert engine.run(call_loses_wf, workflow_id="cl", timeout=20) == [1, None]
    assert RUNS == {"after": 1}
    assert engine.handle("cl:0.0").status() is Status.CANCELLED
    (child,) = engine.list_workflows(parent_id="cl")
    assert child.workflow_id == "cl:0.0"


@workflow(name="comm-two-calls")
def two_calls_wf() -> Generator[Any, Any, Any]:
    return (yield Race(Call(child_wf, 1), All(Call(child_wf, 2), Call(sleepy_child_wf))))


def test_calls_inside_composites_get_distinct_ids_and_losers_are_cancelled(
    engine: Engine,
) -> None:
    assert engine.run(two_calls_wf, workflow_id="tc", timeout=20) == [0, 10]
    children = {c.workflow_id: c.status for c in engine.list_workflows(parent_id="tc")}
    assert set(children) == {"tc:0.0", "tc:0.1.0", "tc:0.1.1"}
    assert children["tc:0.0"] is Status.SUCCESS
    wait_for(lambda: engine.handle("tc:0.1.1").status() is Status.CANCELLED)


@workflow(name="comm-start-in-a-losing-branch")
def start_in_a_losing_branch_wf() -> Generator[Any, Any, Any]:
    # The All starts its child at once, then waits for a message that never comes.
    return (yield Race(All(Start(sleepy_child_wf), Recv("never")), Sleep(0.3)))


@workflow(name="comm-start-in-a-winning-branch")
def start_in_a_winning_branch_wf() -> Generator[Any, Any, Any]:
    # "abandon": the child outlives this run, which returns at once (the default
    # parent close policy would stop it then); what is tested is the race's part.
    return (yield Race(All(Start(sleepy_child_wf, parent_close="abandon"), Sleep(0.1)), Sleep(30)))


def test_a_child_started_in_a_losing_branch_is_cancelled(engine: Engine) -> None:
    assert engine.run(start_in_a_losing_branch_wf, workflow_id="slb", timeout=20) == [1, None]
    (child,) = engine.list_workflows(parent_id="slb")
    wait_for(lambda: engine.handle(child.workflow_id).status() is Status.CANCELLED)


@workflow(name="comm-attach-in-a-losing-branch")
def attach_in_a_losing_branch_wf() -> Generator[Any, Any, Any]:
    shared = Start(sleepy_child_wf, workflow_id="shared-singleton")
    return (yield Race(All(shared, Recv("never")), Sleep(0.3)))


def test_a_run_started_elsewhere_is_not_cancelled_by_a_losing_branch(engine: Engine) -> None:
    # A child id that names a run started elsewhere attaches to it: a losing branch
    # takes back only what its own run started.
    singleton = engine.start(sleepy_child_wf, workflow_id="shared-singleton")
    assert engine.run(attach_in_a_losing_branch_wf, workflow_id="alb", timeout=20) == [1, None]
    time.sleep(0.3)  # a cancel would have been sent right after the record committed
    assert singleton.status() is Status.PENDING


def test_a_child_started_in_a_winning_branch_runs_on(engine: Engine) -> None:
    winner, (child_id, _slept) = engine.run(
        start_in_a_winning_branch_wf, workflow_id="swb", timeout=20
    )
    assert winner == 0
    time.sleep(0.3)  # a cancel would have been sent right after the record committed
    assert engine.handle(child_id).status() is Status.PENDING


@workflow(name="comm-all-fails-cancels")
def all_fails_cancels_wf() -> Generator[Any, Any, Any]:
    try:
        yield All(Call(sleepy_child_wf), Step("bad", failing, 1))
    except ValueError as exc:
        return str(exc)
    return "no failure"


def test_a_failing_all_cancels_its_calls_still_running(engine: Engine) -> None:
    assert engine.run(all_fails_cancels_wf, workflow_id="afc", timeout=20) == "child 1 failed"
    assert engine.handle("afc:0.0").status() is Status.CANCELLED


def test_a_nested_composite_suspended_over_a_restart_keeps_its_deadlines(
    store_url: str,
) -> None:
    if store_url.startswith("memory"):
        pytest.skip("a memory store does not outlive its engine")
    with Engine(store_url, poll_interval=0.2) as first:
        first.start(losing_deadline_wf, workflow_id="restart")
        wait_for(lambda: bool(first.steps("restart")))
        (pending,) = first.steps("restart")
        assert pending.outcome is None and pending.wake_at is not None
    with Engine(store_url, poll_interval=0.2) as second:
        second.recover()
        assert second.handle("restart").result(timeout=20) == [[1, [None, None]], None]
        (record,) = second.steps("restart")
        assert record.started_at == pending.started_at


@workflow(name="comm-losing-deadline")
def losing_deadline_wf() -> Generator[Any, Any, Any]:
    return [(yield Race(Recv("never"), All(Sleep(0.5), Sleep(0.8)))), None]


# -- nested composites across crashes (the testing kit: virtual time, a crash per commit) ------


@workflow(name="comm-kit-nested")
def kit_nested_wf() -> Generator[Any, Any, Any]:
    first = yield Race(All(Recv("go"), Sleep(10)), Sleep(60))
    second = yield All(Race(Recv("x"), Sleep(5)), Step("s", count, "s"))
    third = yield Race(Call(sleepy_child_wf), All(Sleep(10), Recv("y", timeout=20)))
    return [first, second, third]


@pytest.mark.parametrize("crash", [None, *range(7), [1, 3]])
def test_nested_composites_survive_a_crash_at_every_commit(crash: int | list[int] | None) -> None:
    from replaykit import testing as rt
    from replaykit.testing import Message

    result = rt.run(
        kit_nested_wf,
        steps={"s": "S"},
        messages=[Message("go", "GO", at=30), Message("x", "X", at=90)],
        crash_at=crash,
    )
    assert result.status is Status.SUCCESS, result
    # go came before the minute; x after the inner 5 s (counted from that All's start).
    assert result.result == [[0, ["GO", None]], [[1, None], "S"], [1, [None, None]]]
    assert [r.kind for r in result.log] == ["race", "all", "race"]
    # Every deadline counts from its composite's recorded start, crash or not.
    assert result.elapsed.total_seconds() == 30 + 5 + 20
    assert result.log[1].started_at == result.started_at + timedelta(seconds=30)
    in_flight = [c.position for c in result.crashes if c.kind in ("race", "all") and c.completes]
    assert len(result.calls["s"]) == 1 + in_flight.count(1)
    if crash is not None:
        assert result.crashes
