"""The testing kit runs preemptible steps, keyed sends, events and typed steps on
virtual time as an engine does (docs/testing.md)."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import pytest

from conftest import wait_for
from replaykit import (
    AwaitedWorkflowCancelled,
    Call,
    Engine,
    GetEvent,
    Race,
    Recv,
    Retry,
    Send,
    SetEvent,
    Sleep,
    Start,
    Status,
    Step,
    VirtualClock,
    Wait,
    step_context,
    testing,
    workflow,
)
from replaykit.stores.base import WorkflowFilter

RELEASE = threading.Event()
REPORTS: list[Any] = []


STARTED = threading.Event()


def long_report(order: str) -> str:
    REPORTS.append(step_context())
    STARTED.set()
    RELEASE.wait(30)  # a long job; the test releases it once the kit returned
    return f"report for {order}"


def wait_for_the_report() -> str:
    assert STARTED.wait(10), "the report never started"
    return "the customer left"


@workflow(name="kit_small.report")
def report(order: str) -> Generator[Any, Any, str]:
    text: str = yield Step("report", long_report, order, preemptible=True)
    return text


@workflow(name="kit_small.abort")
def abort() -> Generator[Any, Any, str]:
    why: str = yield Step("abort", wait_for_the_report)
    return why


@workflow(name="kit_small.report_or_abort")
def report_or_abort(order: str) -> Generator[Any, Any, list[Any]]:
    # The abort wins once the report's step runs: the losing child is cancelled then.
    index, value = yield Race(Call(report, order), Call(abort))
    return [index, value]


def test_a_preemptible_step_is_stopped_by_its_runs_cancel_and_the_kit_does_not_wait_for_it() -> (
    None
):
    REPORTS.clear()
    RELEASE.clear()
    STARTED.clear()
    try:
        started = time.monotonic()
        # The steps under test are the preemptible bodies themselves: they run for real.
        result = testing.run(report_or_abort, "o-1", real_steps=True)
        took = time.monotonic() - started
        # The losing child was cancelled while its step ran: the body was abandoned,
        # and the kit came back without waiting out the job.
        assert result.unwrap() == [1, "the customer left"]
        assert took < 10
        assert len(result.calls["report"]) == 1
        [context] = REPORTS
        assert (context.workflow_name, context.step_name, context.attempt) == (
            "kit_small.report",
            "report",
            1,
        )
        assert context.workflow_id == "kit_small.report_or_abort:test:0.0"
    finally:
        RELEASE.set()


def test_a_preemptible_step_that_is_not_cancelled_records_as_any_step() -> None:
    RELEASE.set()
    result = testing.run(report, "o-2", real_steps=True)
    assert result.unwrap() == "report for o-2"
    assert result.commands == [("step", "report")]
    testing.check_determinism(report, "o-2", real_steps=True)


def flaky_charge(order: str) -> str:
    attempt = step_context().attempt
    if attempt < 3:
        raise ConnectionError(f"attempt {attempt}: the service is down")
    return f"charged {order} on attempt {attempt}"


@workflow(name="kit_small.preemptible_retries")
def preemptible_retries(order: str) -> Generator[Any, Any, str]:
    value: str = yield Step(
        "charge",
        flaky_charge,
        order,
        preemptible=True,
        retry=Retry(
            max_attempts=3,
            interval=timedelta(hours=1),
            backoff=2.0,
            max_interval=timedelta(hours=4),
        ),
    )
    return value


def test_a_preemptible_steps_back_offs_pass_on_virtual_time() -> None:
    result = testing.run(preemptible_retries, "o-3", real_steps={"charge"})
    assert result.unwrap() == "charged o-3 on attempt 3"
    assert result.elapsed == timedelta(hours=3)  # one hour, then two
    assert result.log[0].attempts == 3
    # A crash at the second back-off's commit makes attempt 2 again, nothing else.
    crashed = testing.run(preemptible_retries, "o-3", crash_at=1, real_steps={"charge"})
    assert crashed.unwrap() == "charged o-3 on attempt 3"
    assert len(crashed.calls["charge"]) == 4


@workflow(name="kit_small.inbox")
def inbox() -> Generator[Any, Any, list[Any]]:
    yield Recv("open")
    got = []
    while True:
        message = yield Recv("invoice", timeout=timedelta(days=1))
        if message is None:
            return got
        got.append(message)


@workflow(name="kit_small.bills_twice")
def bills_twice() -> Generator[Any, Any, list[Any]]:
    target = yield Start(inbox)
    yield Sleep(60)  # the inbox waits for "open" by then: its commits come after ours
    first = yield Send(target, "invoice 7", topic="invoice", idempotency_key="invoice-7")
    again = yield Send(target, "invoice 7 again", topic="invoice", idempotency_key="invoice-7")
    other = yield Send(target, "invoice 8", topic="invoice", idempotency_key="invoice-8")
    yield Send(target, None, topic="open")
    received = yield Wait(target)
    return [first, again, other, received]


def test_a_keyed_send_delivers_once_per_key_in_the_kit() -> None:
    result = testing.run(bills_twice)
    assert result.unwrap() == [True, False, True, ["invoice 7", "invoice 8"]]
    assert result.elapsed == timedelta(days=1, minutes=1)  # the waits, on virtual time
    # A crash at the duplicate's commit: the send made again still finds the key used.
    crashed = testing.run(bills_twice, crash_at=5)
    assert [c.describe() for c in crashed.crashes] == [
        "send 'invoice' at position 3 of workflow id 'kit_small.bills_twice:test'"
    ]
    assert crashed.unwrap() == result.unwrap()


@workflow(name="kit_small.stages")
def stages(order: str) -> Generator[Any, Any, str]:
    yield SetEvent("stage", "charged")
    yield SetEvent("tracking", {"carrier": "dhl", "code": order})
    yield Sleep(timedelta(hours=4))
    yield SetEvent("stage", "shipped")
    return "done"


def test_the_result_holds_the_runs_events_as_get_events_answers() -> None:
    result = testing.run(stages, "o-4")
    assert result.events == {"stage": "shipped", "tracking": {"carrier": "dhl", "code": "o-4"}}
    waiting = testing.run(inbox, workflow_id="no-events")
    assert waiting.events == {}


def typed_total(prices: list[int]) -> int:
    return sum(prices)


@workflow(name="kit_small.typed")
def typed(prices: list[int]) -> Generator[Any, Any, int]:
    total = yield from Step("total", typed_total, prices)
    taxed = yield from Step("taxed", typed_total, [total, total // 10]).options(
        retry=Retry(max_attempts=2)
    )
    return taxed


def test_typed_steps_run_and_fake_in_the_kit() -> None:
    assert testing.run(typed, [10, 20], real_steps=True).unwrap() == 33
    faked = testing.run(typed, [10, 20], steps={"total": 100}, real_steps={"taxed"})
    assert faked.unwrap() == 110
    assert faked.status is Status.SUCCESS
    testing.check_determinism(typed, [10, 20], real_steps=True)


@workflow(name="kit_small.slow_order")
def slow_order(order: str) -> Generator[Any, Any, str]:
    yield Step("reserve", lambda: f"reserved {order}")
    yield Sleep(timedelta(days=3))
    shipped: str = yield Step("ship", lambda: f"shipped {order}")
    return shipped


def test_cancel_with_a_reason_and_fork_lineage_on_an_engine_on_virtual_time() -> None:
    """What the kit's `run` has no word for (an operator's cancel, a fork) is tested on an
    in-memory engine with a virtual clock, as docs/testing.md says."""
    clock = VirtualClock(autojump=False)
    with Engine("memory://", clock=clock) as engine:
        handle = engine.start(slow_order, "o-5", workflow_id="order-5")
        wait_for(lambda: len(engine.steps("order-5")) == 2, "the run sleeps")
        assert engine.cancel("order-5", reason="customer called")
        with pytest.raises(AwaitedWorkflowCancelled, match="was cancelled: customer called"):
            handle.result(timeout=5)
        row = engine.store.get_workflow("order-5")
        # The cancel reached the sleep as Cancelled, which the workflow let propagate.
        assert row is not None
        assert row.error == "customer called (a cancel it handled: the workflow raised)"

        fork = engine.fork("order-5", 1, workflow_id="order-5-again")
        wait_for(lambda: len(engine.steps("order-5-again")) == 2, "the fork sleeps")
        clock.advance(timedelta(days=3))
        assert fork.result(timeout=10) == "shipped o-5"
        [listed] = engine.store.list_workflows(WorkflowFilter(forked_from="order-5"))
        assert (listed.workflow_id, listed.forked_from, listed.fork_position) == (
            "order-5-again",
            "order-5",
            1,
        )


@workflow(name="kit_small.packer")
def packer() -> Generator[Any, Any, None]:
    yield Sleep(timedelta(hours=1))
    yield SetEvent("stage", "packed")


@workflow(name="kit_small.watches_the_packer")
def watches_the_packer() -> Generator[Any, Any, Any]:
    child = yield Start(packer)
    stage = yield GetEvent(child, "stage", timeout=timedelta(hours=2))
    yield SetEvent("seen", stage)
    return stage


def test_a_get_event_on_a_child_waits_on_virtual_time() -> None:
    result = testing.run(watches_the_packer)
    assert result.unwrap() == "packed"
    assert result.elapsed == timedelta(hours=1)
    assert result.events == {"seen": "packed"}


def test_a_crashed_process_cron_loop_finds_nothing_and_writes_nothing() -> None:
    """The cron loop of a crashed process's engine runs on its own thread until the
    engine closes: a quiet answer, not an exception that kills the thread (which
    pytest reports as a failure of whatever test was running)."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from replaykit.log import Record, Value
    from replaykit.stores import open_store
    from replaykit.testing._session import JournalStore, SimulatedCrash

    store = JournalStore(SimpleNamespace(store=open_store("memory://")), 0)  # type: ignore[arg-type]
    store.dead = True
    now = datetime.now(UTC)
    assert store.schedule_states() == {}
    assert store.register_schedules([], now) is None
    assert store.list_workflows(WorkflowFilter()) == []
    with pytest.raises(SimulatedCrash):
        store.record("some-run", Record(0, "step", "s", Value(1)))
