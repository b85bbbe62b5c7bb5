"""Bad arguments to an Engine are refused before it takes anything (the rule itself:
replaykit/_limits.py, tests/test_limits.py).

`Engine(max_cached_runs=-1)` or `Engine(max_workers=0)` used to raise after the engine
had taken its executor hold, and never released it: every later engine with that id
waited for ever or got `ExecutorIdInUse`. `poll_interval=0` made an idle engine burn a
core; `queues=["x"]` naming a queue nobody declared started without a word, then logged
a traceback at every poll.
"""

from __future__ import annotations

import asyncio
import math
import time
from datetime import timedelta
from typing import Any

import pytest

from replaykit import AsyncEngine, Client, Engine, Queue, Recv, WorkflowFilter, workflow
from replaykit.errors import WorkflowTimeout

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


# -- every face takes waits and limits by the same rule ---------------------------------------


@workflow(name="args-waits")
def waits_for_go():
    yield Recv("go")
    return "done"


BAD_WAITS = [math.nan, -1, 1e300, timedelta.max]


@pytest.mark.parametrize("timeout", BAD_WAITS)
def test_engine_waits_refuse_nonsense_at_once(timeout: Any) -> None:
    with Engine("memory://", poll_interval=0.05) as engine:
        handle = engine.start(waits_for_go, workflow_id="w")
        with pytest.raises(ValueError, match=r"result\(timeout=\.\.\.\)"):
            handle.result(timeout=timeout)
        with pytest.raises(ValueError, match=r"get_event\(timeout=\.\.\.\)"):
            engine.get_event("w", "k", timeout=timeout)


@pytest.mark.parametrize("timeout", BAD_WAITS)
def test_client_waits_refuse_nonsense_at_once(tmp_path: Any, timeout: Any) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with Engine(url, poll_interval=0.05) as engine, Client(url) as client:
        engine.start(waits_for_go, workflow_id="w")
        with pytest.raises(ValueError, match=r"result\(timeout=\.\.\.\)"):
            client.handle("w").result(timeout=timeout)
        with pytest.raises(ValueError, match=r"get_event\(timeout=\.\.\.\)"):
            client.get_event("w", "k", timeout=timeout)


def test_async_faces_time_out_at_zero_and_refuse_negatives() -> None:
    async def main() -> None:
        async with AsyncEngine("memory://", poll_interval=0.05) as engine:
            handle = await engine.start(waits_for_go, workflow_id="w")
            started = time.monotonic()
            with pytest.raises(WorkflowTimeout):
                await handle.result(timeout=0)
            assert time.monotonic() - started < 2
            with pytest.raises(ValueError, match="timeout"):
                await handle.result(timeout=-1)
            with pytest.raises(ValueError, match="timeout"):
                await engine.get_event("w", "k", timeout=math.nan)

    asyncio.run(main())


def test_a_listing_limit_past_what_a_store_counts_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        WorkflowFilter(limit=10**30)
    with Engine("memory://") as engine, pytest.raises(ValueError, match="limit"):
        engine.list_workflows(limit=10**30)


def test_a_client_start_of_no_name_is_refused(tmp_path: Any) -> None:
    with Client(f"sqlite:///{tmp_path / 'n.db'}") as client:
        for name in ("", "   "):
            with pytest.raises(ValueError, match="workflow name"):
                client.start(name, workflow_id="x", executor_id="local", app_version="v")
        assert client.list_workflows() == []


@pytest.mark.parametrize("interval", [0, -1, math.nan])
def test_a_client_refuses_a_poll_interval_that_would_spin(tmp_path: Any, interval: float) -> None:
    with pytest.raises(ValueError, match="poll_interval"):
        Client(f"sqlite:///{tmp_path / 'p.db'}", poll_interval=interval)
