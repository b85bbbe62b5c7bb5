"""replaykit's side of every case, through its public Engine API.

The engine is opened once per worker (one case on one store) on a fresh SQLite
file or PostgreSQL schema, with the library's default settings.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Generator, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

import replaykit
from bench.measure import measure_sleepers, per_step, timed, timed_cpu
from bench.worker import Worker
from replaykit import Engine, Queue, Sleep, Status, Step, workflow
from replaykit.interpreter import Completed, Interpreter

__all__ = ["Replaykit"]

#: Step bodies run, so the replay measurements can prove that nothing re-ran.
CALLS = [0]


def trivial(i: int) -> int:
    CALLS[0] += 1
    return i + 1


@workflow(name="bench-steps")
def steps_wf(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("trivial", trivial, i)
    return total


@workflow(name="bench-sleeper")
def sleeper(seconds: float) -> Generator[Any, Any, None]:
    yield Sleep(seconds)


#: The queue the queue case drains (creating a Queue registers it; the engine
#: listens to every registered queue).
BENCH_QUEUE = Queue("bench")


class Replaykit(Worker):
    engine: Engine

    def setup(self) -> dict[str, Any]:
        if self.mode == "traced":
            tracemalloc.start()  # before the engine exists: every block it keeps is seen
        self.engine = Engine(
            self.engine_target(), executor_id=f"bench-{self.case}", app_version="bench"
        )
        self.warm_up()
        return {
            "version": getattr(replaykit, "__version__", None) or _dist_version(),
            "store": type(self.engine.store).__name__,
        }

    def engine_target(self) -> Any:
        """The store URL, as a user would pass it to `Engine(...)`."""
        if self.store == "postgres":
            url: str = self.target["url"]
            return url + ("&" if "?" in url else "?") + f"schema={self.target['schema']}"
        return f"sqlite:///{self.target['path']}"

    def teardown(self) -> None:
        if self.case != "sleepers":  # thousands of timers: the process simply ends
            self.engine.close()

    # -- cases -----------------------------------------------------------------------

    def case_sequential(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        engine, workflows, steps = self.engine, sizes["workflows"], sizes["steps"]

        def go() -> None:
            for w in range(workflows):
                engine.run(steps_wf, steps, workflow_id=f"seq-{tag}-{w}", timeout=self.timeout)

        total, cpu, _ = timed_cpu(self.local_server, go)
        return {"metrics": per_step(total, workflows, steps, cpu)}

    def case_concurrent(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        engine, workflows, steps = self.engine, sizes["workflows"], sizes["steps"]

        def go() -> None:
            handles = [
                engine.start(steps_wf, steps, workflow_id=f"conc-{tag}-{w}")
                for w in range(workflows)
            ]
            for handle in handles:
                handle.result(timeout=self.timeout)

        total, cpu, _ = timed_cpu(self.local_server, go)
        return {"metrics": per_step(total, workflows, steps, cpu)}

    def case_long(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        engine, store, steps = self.engine, self.engine.store, sizes["steps"]
        run_id = f"long-{tag}"
        execute_s, expected = timed(
            lambda: engine.run(steps_wf, steps, workflow_id=run_id, timeout=self.timeout)
        )
        calls = CALLS[0]

        # 1. The sans-IO core: load the log in one query, drive a fresh generator over it.
        def interpret() -> Any:
            records = store.load_log(run_id)
            interp = Interpreter(
                steps_wf.fn(steps),
                records,
                workflow_name=steps_wf.workflow_name,
                workflow_id=run_id,
            )
            decision = interp.start()
            if not isinstance(decision, Completed) or decision.value != expected:
                raise AssertionError(f"replay ended in {decision!r}, expected {expected!r}")
            return records

        replay_interp_s, records = timed(interpret)
        load_log_s, _ = timed(lambda: store.load_log(run_id))
        if len(records) != steps:
            raise AssertionError(f"the log has {len(records)} records, expected {steps}")

        # 2. The engine: a new run holding a copy of the log (as `Engine.fork` makes
        # one), activated; it replays every position and finishes without a step.
        row = store.get_workflow(run_id)
        assert row is not None
        replay_id = f"{run_id}-replay"
        fork_row = attrs.evolve(
            row,
            workflow_id=replay_id,
            status=Status.PENDING,
            result=None,
            created_at=datetime.now(UTC),
            updated_at=None,
            recovery_attempts=0,
            wake_at=None,
            error="",
        )
        fork_copy_s, _ = timed(lambda: store.create_workflow(fork_row, records=records))

        def activate() -> Any:
            engine.dispatch(replay_id)
            return engine.wait_finished(replay_id, self.timeout)

        replay_engine_s, finished = timed(activate)
        if finished.status is not Status.SUCCESS or engine.outcome_value(finished) != expected:
            raise AssertionError(f"the replayed run ended {finished.status}: {finished.result}")
        if CALLS[0] != calls:
            raise AssertionError(f"{CALLS[0] - calls} step bodies ran during replay")
        return {
            "metrics": {
                "steps": steps,
                "execute_s": execute_s,
                "replay_interp_s": replay_interp_s,
                "load_log_s": load_log_s,
                "fork_copy_s": fork_copy_s,
                "replay_engine_s": replay_engine_s,
            }
        }

    def case_queue(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        workflows = sizes["workflows"]
        engine = self.engine
        handles = []

        def enqueue() -> None:
            for w in range(workflows):
                handles.append(engine.enqueue(BENCH_QUEUE, steps_wf, 1, workflow_id=f"q-{tag}-{w}"))

        def go() -> float:
            enqueue_s, _ = timed(enqueue)
            for handle in handles:
                handle.result(timeout=self.timeout)
            return enqueue_s

        total, enqueue_s = timed(go)
        return {
            "variant": "Engine.enqueue",
            "metrics": {
                "workflows": workflows,
                "total_s": total,
                "enqueue_s": enqueue_s,
                "workflows_per_s": workflows / total,
            },
        }

    def case_sleepers(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        engine = self.engine

        def start(prefix: str, count: int) -> float:
            began = time.perf_counter()
            for i in range(count):
                engine.start(sleeper, 3600.0, workflow_id=f"sleep-{tag}-{prefix}-{i}")
            # Idle = every activation has run to its Sleep, recorded it, and suspended.
            if not engine.wait_idle(timeout=self.timeout):
                raise TimeoutError("the sleepers did not all fall asleep")
            return time.perf_counter() - began

        traced = self.mode == "traced"
        count = sizes["traced_sleepers" if traced else "sleepers"]
        metrics = measure_sleepers(start, count, warm=200, mode=self.mode)
        pending = len(engine.list_workflows(status="PENDING"))
        if pending != metrics["total_started"]:
            raise AssertionError(f"{pending} runs are PENDING, expected {metrics['total_started']}")
        return {"metrics": metrics}


def _dist_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("replaykit")
    except PackageNotFoundError:
        return "unknown"
