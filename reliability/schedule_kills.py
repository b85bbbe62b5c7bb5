"""Scenario: a schedule across kill -9, on SQLite and PostgreSQL.

A schedule ticks every second (`backfill=True`) in a worker that the driver SIGKILLs
at random moments and starts again, several times; then a last worker runs until every
tick up to a chosen instant has run. No tick may be lost or doubled: every second from
the first tick to that instant has exactly one run (the ticks missed while no worker
ran are started by the next one), each ends SUCCESS, and each run's step outcome came
from one execution (another only in a killed process).

    python -m reliability.schedule_kills [--smoke] [--seed N] [--kills N]
"""

from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

from reliability._apps import SCHEDULE_ENV
from reliability._check import Incident
from reliability._harness import (
    LEDGER_ENV,
    Ledger,
    Processes,
    Scenario,
    Verdict,
    postgres_schema,
    wait_until,
    worker_argv,
)
from reliability._kills import on_each_store, one_execution_each
from replaykit.stores.base import WorkflowFilter

__all__ = ["main"]

PREFIX = "schedule:rel-every-second:"


def main(argv: list[str] | None = None) -> int:
    return on_each_store("schedule_kills", __doc__ or "", run_part, argv)


def run_part(sc: Scenario, verdict: Verdict, store_kind: str) -> None:
    from replaykit.stores import open_store

    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    env = {LEDGER_ENV: str(ledger.path), SCHEDULE_ENV: "1"}
    kills = sc.args.kills if sc.args.kills is not None else sc.size(4, 20)
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("schedule_kills"))
        else:
            url = f"sqlite:///{work / 'schedule.db'}"
        procs = stack.enter_context(Processes(work, env=env))
        store = open_store(url)
        stack.callback(store.close)
        began = time.monotonic()
        incidents: list[Incident] = []
        for n in range(kills):
            proc = procs.spawn(worker_argv(url=url, executor_id="ticks"), name=f"w{n}")
            ready = wait_until(lambda p=proc: _said(ledger, p.pid, "ready"), 60)
            if not verdict.check(ready is not None, "every worker launches", procs.log_tail(proc)):
                return
            time.sleep(sc.rng.uniform(0.5, 2.5))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            incidents.append(
                Incident(time.time(), f"kill -9 of pid {proc.pid}", frozenset({proc.pid}))
            )
            time.sleep(sc.rng.uniform(0.0, 1.5))  # ticks come while no worker runs
        final = procs.spawn(worker_argv(url=url, executor_id="ticks"), name="final")
        # Every tick up to two seconds from now must run, the missed ones too.
        until = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
        first = _first_tick(store)
        if not verdict.check(first is not None, "the schedule started runs", ""):
            procs.kill(final)
            return
        expected = [first + timedelta(seconds=n) for n in range(int((until - first).seconds) + 1)]
        done = wait_until(lambda: _all_done(store, expected), sc.size(120, 600))
        final.send_signal(signal.SIGTERM)
        final.wait(timeout=60)
        verdict.check(
            done is not None, "every tick up to the end ran to SUCCESS", _missing(store, expected)
        )
        verdict.figure("kills", len(incidents))
        verdict.figure("ticks checked", len(expected))
        verdict.figure("seconds", round(time.monotonic() - began, 1))
        ticks = _ticks(store)
        doubled = len(ticks) - len(set(ticks))
        verdict.check(doubled == 0, "no tick ran twice", f"{doubled} ticks with two runs")
        gaps = sorted(set(expected) - set(ticks))
        verdict.check(not gaps, "no tick lost between the first and the last", str(gaps[:10]))
        recorded = {}
        for row in store.list_workflows(WorkflowFilter(name="rel-ticked")):
            if (
                row.workflow_id.startswith(PREFIX)
                and datetime.fromisoformat(row.workflow_id[len(PREFIX) :]) <= until
            ):
                steps = [r for r in store.load_log(row.workflow_id) if r.kind == "step"]
                if steps and steps[0].outcome is not None and hasattr(steps[0].outcome, "data"):
                    recorded[(row.workflow_id, "tick")] = steps[0].outcome.data["token"]
        lines = [line for line in ledger.read() if (_tick_of(line) or until) <= until]
        one_execution_each(verdict, recorded, lines, incidents)


def _said(ledger: Ledger, pid: int, event: str) -> bool:
    return any(line.get("pid") == pid and line.get("ev") == event for line in ledger.read())


def _tick_of(line: dict[str, Any]) -> datetime | None:
    wf = line.get("wf")
    if line.get("ev") not in ("start", "end") or not isinstance(wf, str):
        return None
    return datetime.fromisoformat(wf[len(PREFIX) :]) if wf.startswith(PREFIX) else None


def _ticks(store: Any) -> list[datetime]:
    return [
        datetime.fromisoformat(row.workflow_id[len(PREFIX) :])
        for row in store.list_workflows(WorkflowFilter(name="rel-ticked"))
        if row.workflow_id.startswith(PREFIX) and ":manual:" not in row.workflow_id
    ]


def _first_tick(store: Any) -> datetime | None:
    ticks = _ticks(store)
    return min(ticks) if ticks else None


def _all_done(store: Any, expected: list[datetime]) -> bool:
    from replaykit.log import Status

    for tick in expected:
        row = store.get_workflow(PREFIX + tick.isoformat())
        if row is None or row.status is not Status.SUCCESS:
            return False
    return True


def _missing(store: Any, expected: list[datetime]) -> str:
    from replaykit.log import Status

    missing = []
    for tick in expected:
        row = store.get_workflow(PREFIX + tick.isoformat())
        if row is None or row.status is not Status.SUCCESS:
            missing.append(f"{tick.time()}: {None if row is None else row.status.value}")
    return ", ".join(missing[:10])


if __name__ == "__main__":
    sys.exit(main())
