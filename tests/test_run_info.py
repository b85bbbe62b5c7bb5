"""Run information in a workflow: `context()`'s run id of this generation, its
generation number, the run's recovery count (`attempt`) and whether continuing as
new is suggested — from the interpreter alone, the testing kit, the engine on every
store and the AsyncEngine."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from datetime import UTC, datetime
from typing import Any

import pytest

import replaykit.interpreter as interpreter_module
from replaykit import (
    AsyncEngine,
    ContinueAsNew,
    Engine,
    Now,
    Status,
    Step,
    context,
    testing,
    workflow,
)
from replaykit.interpreter import SUGGEST_CONTINUE_AS_NEW_AT, Effect, Interpreter
from replaykit.log import Record, Value

SEEN: list[tuple[str, int, int, bool, bool]] = []


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()


def _note() -> None:
    ctx = context()
    SEEN.append(
        (ctx.run_id, ctx.generation, ctx.attempt, ctx.continue_as_new_suggested, ctx.is_replaying)
    )


# -- the interpreter alone --------------------------------------------------------------


def test_the_context_carries_what_the_runtime_knows_of_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(interpreter_module, "SUGGEST_CONTINUE_AS_NEW_AT", 2)

    def wf() -> Generator[Any, Any, None]:
        _note()
        yield Now()
        _note()
        yield Now()
        _note()
        yield Now()
        _note()

    stamp = datetime(2030, 1, 1, tzinfo=UTC).isoformat()
    records = [Record(0, "now", "now", Value(stamp)), Record(1, "now", "now", Value(stamp))]
    interp = Interpreter(
        wf(), records, workflow_name="wf", workflow_id="order-1", generation=3, attempt=2
    )
    effect = interp.start()
    assert isinstance(effect, Effect) and effect.position == 2
    # The suggestion depends on the position alone: replayed positions answer as live ones.
    assert SEEN == [
        ("order-1#3", 3, 2, False, True),
        ("order-1#3", 3, 2, False, True),
        ("order-1#3", 3, 2, True, False),
    ]


def test_a_fresh_run_is_generation_zero_never_recovered() -> None:
    def wf() -> Generator[Any, Any, None]:
        _note()
        yield Now()

    Interpreter(wf(), [], workflow_name="wf", workflow_id="w").start()
    assert SEEN == [("w#0", 0, 0, False, False)]
    assert SUGGEST_CONTINUE_AS_NEW_AT == 10_000  # the documented figure


# -- the testing kit, on virtual time ----------------------------------------------------


def noted() -> None:
    """A step (not the workflow body) would not see context(); the body notes instead."""


@workflow(name="info.generations")
def generations(left: int) -> Generator[Any, Any, list[Any]]:
    _note()
    yield Step("work", noted)
    if left:
        yield ContinueAsNew(left - 1)
    ctx = context()
    return [ctx.run_id, ctx.generation, ctx.workflow_id]


def test_the_kit_numbers_generations_and_names_each_run() -> None:
    result = testing.run(generations, 2, real_steps=True, workflow_id="gens")
    assert result.unwrap() == ["gens#2", 2, "gens"]
    live = [(run_id, gen) for run_id, gen, _, _, replaying in SEEN if not replaying]
    assert live == [("gens#0", 0), ("gens#1", 1), ("gens#2", 2)]
    assert [log.workflow_id for log in result.generations] == ["gens#0", "gens#1"]


@workflow(name="info.suggested")
def suggested(total: int) -> Generator[Any, Any, int]:
    done = 0
    while done < total:
        yield Step("work", noted)
        done += 1
        if context().continue_as_new_suggested:
            yield ContinueAsNew(total - done)
    return context().generation


def test_the_kit_suggests_continuing_as_new_past_the_log_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(interpreter_module, "SUGGEST_CONTINUE_AS_NEW_AT", 3)
    result = testing.run(suggested, 7, real_steps=True)
    # 3 + 3 + 1 steps: two generations ended by the suggestion, the third finished.
    assert result.unwrap() == 2
    assert [len(log) for log in result.generations] == [3, 3]
    assert len(result.log) == 1


@workflow(name="info.attempt")
def attempts() -> Generator[Any, Any, int]:
    yield Step("a", noted)
    yield Step("b", noted)
    _note()
    return 0


def test_the_kit_shows_the_recovery_count_after_a_crash() -> None:
    # Commit 1 is step b's record: the crash loses it, and a new engine recovers the run.
    result = testing.run(attempts, real_steps=True, crash_at=1)
    assert result.status is Status.SUCCESS
    assert len(result.crashes) == 1
    assert SEEN[-1][2] == 1  # recovered once, while executing


# -- the engine on every store, and the AsyncEngine -------------------------------------


def test_the_engine_fills_the_context_of_each_generation(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(interpreter_module, "SUGGEST_CONTINUE_AS_NEW_AT", 2)
    with Engine(store_url, poll_interval=0.1) as engine:
        assert engine.run(suggested, 5, workflow_id="eng", timeout=30) == 2
        # 2 + 2 + 1 steps: the two earlier generations are archived under their run ids.
        for run_id in ("eng#0", "eng#1"):
            row = engine.store.get_workflow(run_id)
            assert row is not None and row.status is Status.CONTINUED
        assert engine.run(generations, 1, workflow_id="eng-g", timeout=30) == [
            "eng-g#1",
            1,
            "eng-g",
        ]
        # The run id of an ended generation is the id its log is archived under.
        archived = engine.store.get_workflow("eng-g#0")
        assert archived is not None and archived.status is Status.CONTINUED
        assert archived.generation == 0
        assert [r.name for r in engine.store.load_log("eng-g#0")] == ["work"]
        seen = [(run_id, gen, attempt) for run_id, gen, attempt, _, replaying in SEEN]
        assert ("eng-g#0", 0, 0) in seen and ("eng-g#1", 1, 0) in seen


def test_the_async_engine_fills_the_context(store_url: str) -> None:
    async def main() -> Any:
        async with AsyncEngine(store_url) as engine:
            return await engine.run(generations, 1, workflow_id="aio-g", timeout=30)

    assert asyncio.run(main()) == ["aio-g#1", 1, "aio-g"]
