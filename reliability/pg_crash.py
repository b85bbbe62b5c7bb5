"""Scenario 2: PostgreSQL crash-restart under load, on a private cluster.

The scenario makes a cluster of its own on a free port (`pg_createcluster`, or
`initdb` when not root; see `reliability._cluster`) and removes it at the end,
also when something fails. One worker process runs a mix of workflows against
it; the driver crashes the server (`pg_ctlcluster ... stop -m immediate`)
several times while the worker runs, each time keeping it down for a while
(once, in the full run, longer than the engine's retry budget for a store call)
before starting it again. The worker is never restarted: it must ride the
crashes out and finish every run itself. Then the ledger is checked against the
logs: steps re-ran only when in flight at a crash; nothing lost or doubled.

`--face asyncio` runs the worker's plan on an `AsyncEngine` in an asyncio loop.

    python -m reliability.pg_crash [--smoke] [--seed N] [--crashes N] [--face asyncio]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from reliability._check import Incident, check_runs
from reliability._cluster import ClusterUnavailable, PrivateCluster
from reliability._harness import (
    IN_CI,
    LEDGER_ENV,
    Ledger,
    Processes,
    Scenario,
    Verdict,
    wait_until,
    worker_argv,
)
from reliability._plan import mix

__all__ = ["main"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--crashes", type=int, help="server crashes (smoke 2, full 8)")
    parser.add_argument(
        "--face",
        choices=("engine", "asyncio"),
        default="engine",
        help="the worker's engine: Engine, or AsyncEngine in an asyncio loop",
    )


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("pg_crash", __doc__ or "", add_arguments=_arguments, argv=argv)
    face = "" if sc.args.face == "engine" else ", AsyncEngine"
    verdict = sc.report.part(f"postgres, private cluster{face}")
    try:
        cluster = PrivateCluster(sc.workdir)
    except ClusterUnavailable as exc:
        if IN_CI:
            sc.report.setup_error = str(exc)
        else:
            verdict.skip(str(exc))
        return sc.finish()
    try:
        cluster.create()
        run(sc, verdict, cluster)
    except ClusterUnavailable as exc:
        sc.report.setup_error = str(exc)
        verdict.check(False, "the private cluster works", str(exc))
    finally:
        cluster.drop()
    return sc.finish()


def run(sc: Scenario, verdict: Verdict, cluster: PrivateCluster) -> None:
    from replaykit.stores import open_store

    rng = sc.rng
    ledger = Ledger(sc.workdir / "ledger.jsonl")
    url = f"{cluster.url}?schema=rk_chaos"
    plan = mix(
        rng,
        "",
        scripts=sc.size(6, 20),
        length=sc.size(30, 200),
        pairs=sc.size(2, 6),
        rounds=sc.size(8, 60),
        inboxes=sc.size(1, 3),
        messages=sc.size(10, 40),
        step_seconds=(0.02, 0.15),
        sleep_seconds=sc.size(0.6, 1.0),
    )
    plan_path = sc.workdir / "plan.json"
    plan_path.write_text(json.dumps(plan))
    crashes = sc.args.crashes if sc.args.crashes is not None else sc.size(2, 8)
    long_outage = None if sc.smoke else rng.randrange(crashes)
    incidents: list[Incident] = []
    downtime = 0.0
    started = time.monotonic()
    with Processes(sc.workdir, env={LEDGER_ENV: str(ledger.path)}) as procs:
        worker = procs.spawn(
            worker_argv(
                url=url,
                executor_id="pg-crash",
                plan=plan_path,
                until_done=True,
                asyncio=sc.args.face == "asyncio",
            ),
            name="worker",
        )
        ready = wait_until(
            lambda: any(line.get("ev") == "ready" for line in ledger.read()), timeout=60
        )
        if not verdict.check(ready is not None, "the worker launches", procs.log_tail(worker)):
            return
        for n in range(crashes):
            time.sleep(rng.uniform(0.3, 1.5))
            if worker.poll() is not None:
                verdict.note(f"the worker had finished before crash {n + 1} of {crashes}")
                break
            cluster.crash()
            incidents.append(Incident(time.time(), f"crash {n + 1} of the server"))
            down = rng.uniform(9.0, 12.0) if n == long_outage else rng.uniform(0.2, 2.0)
            time.sleep(down)
            began = time.monotonic()
            cluster.start()
            downtime += down + (time.monotonic() - began)
        try:
            code = worker.wait(timeout=sc.size(90, 400))
        except subprocess.TimeoutExpired:
            code = None
        finished = verdict.check(
            code == 0,
            "the worker that lived through the crashes finishes every run",
            f"exit {code}; " + procs.log_tail(worker, 6),
        )
        if not finished:
            # Tell "stuck in a live engine" from "lost": does a new engine finish them?
            procs.kill(worker)
            worker.wait()
            incidents.append(Incident(time.time(), f"kill -9 of pid {worker.pid}"))
            fresh = procs.spawn(
                worker_argv(url=url, executor_id="pg-crash", plan=plan_path, until_done=True),
                name="fresh-worker",
            )
            try:
                fresh_code = fresh.wait(timeout=120)
            except subprocess.TimeoutExpired:
                fresh_code = None
            verdict.note(
                "a fresh worker (same executor id, recovering) "
                + ("then finished them" if fresh_code == 0 else f"did not either ({fresh_code})")
            )
    verdict.figure("crashes", len(incidents))
    verdict.figure("seconds the server was down (incl. crash recovery)", round(downtime, 1))
    verdict.figure("seconds", round(time.monotonic() - started, 1))
    store = open_store(url)
    try:
        check_runs(verdict, store, plan["start"], ledger.read(), incidents)
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
