"""DBOS Transact's side of every case: the same workload shapes with `@DBOS.step`,
`@DBOS.workflow`, `DBOS.sleep` and a registered queue.

Each worker launches DBOS once (it is a process-wide singleton) on its own
system database: a fresh database on the same PostgreSQL server, or a fresh
SQLite file. Settings are DBOS's defaults except where noted:

- Handles of enqueued or forked workflows find their result by polling the
  database (every second by default); we poll every `RESULT_POLL` seconds so a
  figure is not rounded up to DBOS's polling period.
- The queue's dispatch polling interval is DBOS's default (1 s) unless
  `--dbos-queue-poll` says otherwise.
"""

from __future__ import annotations

import sqlite3
import time
import tracemalloc
from collections.abc import Mapping
from typing import Any

from dbos import DBOS, DBOSConfig, SetWorkflowID

from bench.measure import measure_sleepers, per_step, timed, timed_cpu, wait_until
from bench.worker import Worker

__all__ = ["Dbos"]

RESULT_POLL = 0.01

#: Step bodies run, so the replay measurement can prove that nothing re-ran.
CALLS = [0]
#: When each workflow's body was (last) entered, by workflow id: a fork's replay
#: is timed from here, after DBOS's queue has dispatched it.
ENTERED: dict[str, float] = {}


@DBOS.step()
def trivial(i: int) -> int:
    CALLS[0] += 1
    return i + 1


@DBOS.workflow()
def steps_wf(n: int) -> int:
    ENTERED[DBOS.workflow_id or ""] = time.perf_counter()
    total = 0
    for i in range(n):
        total += trivial(i)
    return total


@DBOS.workflow()
def sleeper(seconds: float) -> None:
    DBOS.sleep(seconds)


class Dbos(Worker):
    def setup(self) -> dict[str, Any]:
        if self.mode == "traced":
            tracemalloc.start()  # before DBOS exists: every block it keeps is seen
        url = self.target["url"] if self.store == "postgres" else f"sqlite:///{self.target['path']}"
        config: DBOSConfig = {
            "name": "replaykit-bench",
            "system_database_url": url,
            "log_level": "WARNING",
            "application_version": "bench",
        }
        DBOS(config=config)
        DBOS.launch()
        if self.case == "queue":
            self.queue = DBOS.register_queue(
                "bench", polling_interval_sec=float(self.options.get("dbos_queue_poll", 1.0))
            )
        self.warm_up()
        from importlib.metadata import version

        return {"version": version("dbos"), "system_database": url.split("@")[-1]}

    def teardown(self) -> None:
        if self.case != "sleepers":  # sleeping threads cannot be woken; the process just ends
            DBOS.destroy()

    # -- cases -----------------------------------------------------------------------

    def case_sequential(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        workflows, steps = sizes["workflows"], sizes["steps"]

        def go() -> None:
            for w in range(workflows):
                with SetWorkflowID(f"seq-{tag}-{w}"):
                    handle = DBOS.start_workflow(steps_wf, steps)
                handle.get_result()

        total, cpu, _ = timed_cpu(self.local_server, go)
        return {"metrics": per_step(total, workflows, steps, cpu)}

    def case_concurrent(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        workflows, steps = sizes["workflows"], sizes["steps"]

        def go() -> None:
            handles = []
            for w in range(workflows):
                with SetWorkflowID(f"conc-{tag}-{w}"):
                    handles.append(DBOS.start_workflow(steps_wf, steps))
            for handle in handles:
                handle.get_result()

        total, cpu, _ = timed_cpu(self.local_server, go)
        return {"metrics": per_step(total, workflows, steps, cpu)}

    def case_long(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        steps = sizes["steps"]
        run_id = f"long-{tag}"

        def execute() -> int:
            with SetWorkflowID(run_id):
                handle = DBOS.start_workflow(steps_wf, steps)
            return handle.get_result()

        execute_s, expected = timed(execute)
        calls = CALLS[0]

        # DBOS replays by re-executing the workflow function: each step call finds
        # its recorded output in the system database and returns it without running.
        # Recovery and fork both do this through DBOS's internal queue; fork is the
        # public way to re-execute a finished run. Steps are numbered from 1, so
        # start_step = steps + 1 copies every recorded output into the fork.
        replay_id = f"{run_id}-replay"
        started = time.perf_counter()
        with SetWorkflowID(replay_id):
            handle = DBOS.fork_workflow(run_id, steps + 1)
        forked = time.perf_counter()
        value = handle.get_result(polling_interval_sec=RESULT_POLL)
        done = time.perf_counter()
        if value != expected:
            raise AssertionError(f"the replay returned {value!r}, expected {expected!r}")
        if CALLS[0] != calls:
            raise AssertionError(f"{CALLS[0] - calls} step bodies ran during replay")
        recorded = len(DBOS.list_workflow_steps(replay_id, load_output=False))
        if recorded < steps:
            raise AssertionError(f"the fork holds {recorded} steps, expected {steps}")
        return {
            "metrics": {
                "steps": steps,
                "execute_s": execute_s,
                "fork_copy_s": forked - started,
                # From the moment DBOS's queue dispatched the fork and its body began.
                "replay_s": done - ENTERED[replay_id],
                # From the fork call: includes waiting for the internal queue's poll.
                "replay_e2e_s": done - started,
            }
        }

    def case_queue(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        workflows = sizes["workflows"]
        handles = []

        def enqueue() -> None:
            for w in range(workflows):
                with SetWorkflowID(f"q-{tag}-{w}"):
                    handles.append(self.queue.enqueue(steps_wf, 1))

        def go() -> float:
            enqueue_s, _ = timed(enqueue)
            for handle in handles:
                handle.get_result(polling_interval_sec=RESULT_POLL)
            return enqueue_s

        total, enqueue_s = timed(go)
        return {
            "variant": "Queue.enqueue",
            "metrics": {
                "workflows": workflows,
                "total_s": total,
                "enqueue_s": enqueue_s,
                "workflows_per_s": workflows / total,
            },
        }

    def case_sleepers(self, tag: str, sizes: Mapping[str, int]) -> dict[str, Any]:
        count_sleeping = self._sleep_counter()
        started = [0]

        def start(prefix: str, count: int) -> float:
            began = time.perf_counter()
            for i in range(count):
                with SetWorkflowID(f"sleep-{tag}-{prefix}-{i}"):
                    DBOS.start_workflow(sleeper, 3600.0)
            started[0] += count
            # Asleep = DBOS has recorded the sleep's wake-up time; it then blocks its thread.
            wait_until(lambda: count_sleeping() >= started[0], self.timeout, "the sleepers")
            elapsed = time.perf_counter() - began
            time.sleep(0.2)  # the last few threads go from that commit into time.sleep
            return elapsed

        traced = self.mode == "traced"
        count = sizes["dbos_traced_sleepers" if traced else "dbos_sleepers"]
        metrics = measure_sleepers(start, count, warm=20, mode=self.mode)
        return {
            "metrics": metrics,
            "notes": ["DBOS.sleep blocks the workflow's thread (time.sleep) for the whole sleep"],
        }

    def _sleep_counter(self) -> Any:
        """Counts the sleeps DBOS has recorded, on a connection of our own."""
        query = "SELECT count(*) FROM {}operation_outputs WHERE function_name = 'DBOS.sleep'"
        if self.store == "postgres":
            import psycopg

            pg = psycopg.connect(self.target["url"], autocommit=True)
            sql = query.format("dbos.")
            return lambda: pg.execute(sql).fetchone()[0]  # type: ignore[index]
        lite = sqlite3.connect(self.target["path"], check_same_thread=False)
        sql = query.format("")
        return lambda: lite.execute(sql).fetchone()[0]
