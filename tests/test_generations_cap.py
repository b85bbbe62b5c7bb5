"""A ContinueAsNew loop with no wait between generations is parked, once, saying why.

It used to write a thousand generations a second for ever. An engine-wide cap
(`Engine(max_generations_in_a_row=...)`, default 10,000) parks such a run with a clear
error; a loop that waits between generations is never parked by it.
"""

from __future__ import annotations

import time

from replaykit import ContinueAsNew, Engine, Sleep, Status, Step, workflow


@workflow(name="gcap-spin")
def spins(n: int):
    yield Step("tick", lambda: n)
    yield ContinueAsNew(n + 1)


@workflow(name="gcap-waits")
def waits(n: int):
    if n >= 30:
        return n
    yield Sleep(0.001)
    yield ContinueAsNew(n + 1)


def _settled(engine: Engine, workflow_id: str) -> Status:
    deadline = time.monotonic() + 20
    while True:
        row = engine.store.get_workflow(workflow_id)
        if row is not None and row.status in (Status.PARKED, Status.SUCCESS, Status.ERROR):
            return row.status
        assert time.monotonic() < deadline, row
        time.sleep(0.02)


def test_a_loop_of_generations_with_no_wait_is_parked(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.05, max_generations_in_a_row=20) as engine:
        engine.start(spins, 0, workflow_id="spin")
        assert _settled(engine, "spin") is Status.PARKED
        row = engine.store.get_workflow("spin")
        assert row is not None
        assert "max_generations_in_a_row=20" in row.error and "without waiting" in row.error
        assert 20 <= row.generation <= 22


def test_generations_that_wait_between_are_not_parked(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.05, max_generations_in_a_row=5) as engine:
        assert engine.run(waits, 0, workflow_id="waits", timeout=30) == 30
