"""Bad arguments to an Engine are refused before it takes anything (replaykit/_limits.py).

`Engine(max_cached_runs=-1)` or `Engine(max_workers=0)` used to raise after the engine
had taken its executor hold, and never released it: every later engine with that id
waited for ever or got `ExecutorIdInUse`. `poll_interval=0` made an idle engine burn a
core; `queues=["x"]` naming a queue nobody declared started without a word, then logged
a traceback at every poll.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from replaykit import Engine, Queue
from replaykit._limits import MAX_WAIT, checked_count, checked_interval, checked_wait

BAD = [
    ({"max_cached_runs": -1}, ValueError, "max_cached_runs"),
    ({"max_workers": 0}, ValueError, "max_workers"),
    ({"step_workers": 0}, ValueError, "step_workers"),
    ({"max_recovery_attempts": -1}, ValueError, "max_recovery_attempts"),
    ({"max_payload_bytes": 0}, ValueError, "max_payload_bytes"),
    ({"poll_interval": 0}, ValueError, "poll_interval"),
    ({"poll_interval": -1}, ValueError, "poll_interval"),
    ({"poll_interval": math.nan}, ValueError, "poll_interval"),
    ({"lease_seconds": math.inf}, ValueError, "lease_seconds"),
    ({"executor_wait": math.nan}, ValueError, "executor_wait"),
    ({"max_workers": 2.5}, TypeError, "max_workers"),
    ({"queues": ["nobody-declared-this"]}, LookupError, "nobody-declared-this"),
]


@pytest.mark.parametrize(("kwargs", "error", "named"), BAD)
def test_a_bad_argument_is_refused_and_leaves_no_hold(
    tmp_path: Any, kwargs: dict[str, Any], error: type[Exception], named: str
) -> None:
    url = f"sqlite:///{tmp_path / 'args.db'}"
    with pytest.raises(error, match=named):
        Engine(url, **kwargs)
    # The same executor id starts at once: nothing of the refused engine holds it.
    with Engine(url, executor_wait=0) as engine:
        assert engine.executor_id == "local"


def test_a_failure_after_the_hold_releases_it(tmp_path: Any, monkeypatch: Any) -> None:
    url = f"sqlite:///{tmp_path / 'late.db'}"
    import replaykit.runtime.engine as engine_module

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a room failed to build")

    monkeypatch.setattr(engine_module, "WarmCache", broken)
    with pytest.raises(RuntimeError, match="failed to build"):
        Engine(url)
    monkeypatch.undo()
    with Engine(url, executor_wait=0) as engine:
        assert engine.executor_id == "local"


def test_a_declared_queue_is_taken() -> None:
    Queue("args-declared")
    with Engine("memory://", queues=["args-declared"]) as engine:
        assert [q.name for q in engine.claims.listened()] == ["args-declared"]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (math.nan, ValueError),
        (-1, ValueError),
        (1e300, ValueError),
        (timedelta.max, ValueError),
        (math.inf, ValueError),
        (True, TypeError),
        ("5", TypeError),
    ],
)
def test_one_rule_for_waits(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="timeout"):
        checked_wait(value, "timeout")


def test_what_waits_take() -> None:
    assert checked_wait(None, "timeout") is None
    assert checked_wait(0, "timeout") == 0.0
    assert checked_wait(timedelta(minutes=2), "timeout") == 120.0
    assert checked_wait(MAX_WAIT, "timeout") == MAX_WAIT
    assert checked_interval(0.5, "poll_interval") == 0.5
    assert checked_count(10, "limit") == 10
    with pytest.raises(ValueError, match="limit"):
        checked_count(10**30, "limit")
