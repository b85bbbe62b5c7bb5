"""The warm cache built alone, with a virtual clock and no engine (runtime/warm.py)."""

from __future__ import annotations

from collections.abc import Generator
from datetime import datetime, timedelta
from typing import Any

import pytest

from replaykit import Recv
from replaykit.interpreter import Effect, Interpreter
from replaykit.log import Record, Status
from replaykit.runtime.clock import VirtualClock
from replaykit.runtime.host import Suspend
from replaykit.runtime.warm import WARM_HORIZON, WarmCache, WarmRun, kept_row
from replaykit.stores.base import WorkflowRow

CLOSED: list[str] = []


def _waiting(workflow_id: str) -> Generator[Any, Any, None]:
    try:
        yield Recv("go")
    finally:
        CLOSED.append(workflow_id)


def _run(workflow_id: str) -> tuple[WarmRun, Effect]:
    interp = Interpreter(_waiting(workflow_id), [], workflow_name="wf", workflow_id=workflow_id)
    effect = interp.start()
    assert isinstance(effect, Effect)
    row = WorkflowRow(workflow_id, "wf", Status.PENDING, inputs={"args": [1]})
    return WarmRun(kept_row(row), interp, None), effect


@pytest.fixture(autouse=True)
def _fresh() -> None:
    CLOSED.clear()


def _cache(capacity: int = 2, *, autojump: bool = False, jump: bool = True) -> WarmCache:
    clock = VirtualClock(autojump=autojump)
    return WarmCache(clock, capacity=capacity, jump_for=lambda _: jump)


def test_a_kept_run_is_taken_once_and_keeps_no_inputs() -> None:
    cache = _cache()
    run, effect = _run("a")
    cache.keep("a", run)
    assert "a" in cache and len(cache) == 1
    taken = cache.take("a")
    assert taken is run and taken.row.inputs is None
    assert taken.effect() is effect
    assert cache.take("a") is None


def test_past_capacity_the_least_recently_kept_is_evicted_and_closed() -> None:
    cache = _cache(capacity=2)
    for workflow_id in ("a", "b", "c"):
        cache.keep(workflow_id, _run(workflow_id)[0])
    assert "a" not in cache and "b" in cache and "c" in cache
    assert CLOSED == ["a"]
    cache.drop("b")
    assert CLOSED == ["a", "b"] and len(cache) == 1


def test_a_closed_cache_keeps_nothing() -> None:
    cache = _cache()
    cache.keep("a", _run("a")[0])
    cache.close()
    assert len(cache) == 0 and CLOSED == ["a"]
    cache.keep("b", _run("b")[0])
    assert "b" not in cache and CLOSED == ["a", "b"]
    assert not cache.would_stay("c", 0)


def test_what_stays_warm() -> None:
    cache = _cache()
    _, effect = _run("a")
    now = cache.clock.now()
    near = Suspend(now + timedelta(seconds=WARM_HORIZON / 2))
    far = Suspend(now + timedelta(seconds=WARM_HORIZON * 2))
    waiting = Suspend(None, (("message", "a"),))
    assert cache.stays("a", effect, near)
    assert not cache.stays("a", effect, far)  # a long sleep is not worth its memory
    assert cache.stays("a", effect, waiting)
    cache.keep_if = lambda workflow_id, position: position != 0
    assert not cache.stays("a", effect, near) and not cache.would_stay("a", 0)
    assert not _cache(capacity=0).stays("a", effect, near)


def test_a_run_goes_on_at_once_only_on_an_autojumping_clock_with_nothing_due_first() -> None:
    soon = Suspend(datetime(2030, 1, 1).astimezone())
    assert not _cache(autojump=False).due_at_once(soon)
    assert _cache(autojump=True, jump=True).due_at_once(soon)
    assert not _cache(autojump=True, jump=False).due_at_once(soon)
    assert not _cache(autojump=True).due_at_once(Suspend(None, (("message", "a"),)))


def test_a_negative_capacity_is_refused() -> None:
    with pytest.raises(ValueError, match="max_cached_runs"):
        _cache(capacity=-1)


def test_the_effect_is_rebuilt_with_the_pending_record_it_kept() -> None:
    run, effect = _run("a")
    pending = Record(effect.position, "recv", "go", None, started_at=datetime(2030, 1, 1))
    run.pending = pending
    rebuilt = run.effect()
    assert rebuilt.pending is pending and rebuilt.command is effect.command
