"""The async steps room built alone: a loop in a thread, a runner that answers, a list
as the scheduler's inbox (runtime/async_steps.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from replaykit import Step
from replaykit.errors import Stopped
from replaykit.interpreter import Effect
from replaykit.log import Status, Value
from replaykit.runtime.async_steps import LAUNCH_CHUNK, AsyncSteps
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.effects import EffectRunner
from replaykit.runtime.events import Activation, Carried, Event, Stepped
from replaykit.runtime.host import CancelScope
from replaykit.runtime.pool import WorkPool
from replaykit.stores.base import WorkflowRow


async def _body(value: int) -> int:
    return value


class _Runner:
    """What the room asks of the effect runner: its loop, and an async step's attempts."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop
        self.gate = asyncio.Event() if loop is not None else None

    def async_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            raise RuntimeError("the application's loop is gone")
        return self.loop

    async def run_step_async(
        self, row: WorkflowRow, position: int, command: Step[Any], scope: Any, fn: Any, pending: Any
    ) -> tuple[Value, int]:
        if command.name == "held":
            await asyncio.sleep(3600)
        return Value(await fn(*command.args)), 1


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def _activation(workflow_id: str) -> Activation:
    row = WorkflowRow(workflow_id, "wf", Status.PENDING)
    return Activation(workflow_id, row, False, scope=CancelScope())


def _effect(name: str, value: int, *, preemptible: bool = False) -> Effect:
    return Effect(0, Step(name, _body, value, preemptible=preemptible), "here.py:1", "digest")


def _room(runner: _Runner) -> tuple[AsyncSteps, list[Event], WorkPool]:
    inbox: list[Event] = []
    lock = threading.Lock()

    def post_many(events: list[Event]) -> None:
        with lock:
            inbox.extend(events)

    pool = WorkPool(2, thread_name_prefix="test-offload")
    room = AsyncSteps(cast(EffectRunner, runner), VirtualClock(), post_many=post_many, offload=pool)
    return room, inbox, pool


def _wait_for(inbox: list[Event], count: int) -> None:
    deadline = time.monotonic() + 10
    while len(inbox) < count:
        assert time.monotonic() < deadline, inbox
        time.sleep(0.01)


def test_steps_started_in_a_round_go_to_the_loop_together_and_post_their_outcomes(
    loop: asyncio.AbstractEventLoop,
) -> None:
    room, inbox, pool = _room(_Runner(loop))
    count = LAUNCH_CHUNK * 2 + 3  # more than one loop iteration's worth
    for i in range(count):
        effect = _effect("add", i)
        room.start(_activation(f"r{i}"), effect, cast(Step[Any], effect.command), _body)
    assert inbox == []  # nothing goes to the loop before the round ends
    room.launch()
    _wait_for(inbox, count)
    assert all(isinstance(event, Stepped) for event in inbox)
    values = sorted(cast(Value, cast(Stepped, e).outcome).data for e in inbox)
    assert values == list(range(count))
    pool.shutdown(wait=True)


def test_a_preemptible_step_cancelled_before_its_task_exists_never_runs(
    loop: asyncio.AbstractEventLoop,
) -> None:
    room, inbox, pool = _room(_Runner(loop))
    activation = _activation("c1")
    effect = _effect("held", 1, preemptible=True)
    room.start(activation, effect, cast(Step[Any], effect.command), _body)
    assert activation.scope is not None
    activation.scope.cancel()
    room.launch()
    _wait_for(inbox, 1)
    (event,) = inbox
    assert isinstance(event, Carried) and isinstance(event.result, Stopped)
    pool.shutdown(wait=True)


def test_a_gone_loop_cancels_the_step_unrecorded() -> None:
    room, inbox, pool = _room(_Runner(None))
    effect = _effect("add", 1)
    room.start(_activation("g1"), effect, cast(Step[Any], effect.command), _body)
    (event,) = inbox
    assert isinstance(event, Carried) and isinstance(event.result, Stopped)
    pool.shutdown(wait=True)


def test_an_ordinary_step_runs_to_its_end_through_a_cancel(
    loop: asyncio.AbstractEventLoop,
) -> None:
    # Cut short, its effect might half happen and the resume would run it again: an
    # ordinary step's outcome comes back, for its record to land in the cancelled run.
    room, inbox, pool = _room(_Runner(loop))
    activation = _activation("c2")
    effect = _effect("add", 7)
    room.start(activation, effect, cast(Step[Any], effect.command), _body)
    assert activation.scope is not None
    activation.scope.cancel()
    room.launch()
    _wait_for(inbox, 1)
    (event,) = inbox
    assert isinstance(event, Stepped) and event.outcome == Value(7)
    pool.shutdown(wait=True)
