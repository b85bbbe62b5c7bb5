"""Scenario 1: kill -9 torture, on SQLite and PostgreSQL.

A worker process runs many workflows (scripts of steps, sleeps and `All`s;
ping-pong pairs that `Send` and `Recv` between runs; inboxes fed by keyed
`engine.send`). The driver SIGKILLs it at random moments, N times, starting a
new one (same executor id, so it recovers the runs) after each kill; then a last
worker runs everything to the end. The ledger must agree with the logs: every
position recorded once, every re-run step one that was in flight at a kill,
every message delivered once, every run SUCCESS.

    python -m reliability.kill9 [--smoke] [--seed N] [--kills N] [--stores sqlite,postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack

from reliability._check import Incident, check_runs, executions
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
from reliability._plan import mix

__all__ = ["main"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kills", type=int, help="SIGKILLs per store (smoke 4, full 25)")
    parser.add_argument("--stores", default="sqlite,postgres")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("kill9", __doc__ or "", add_arguments=_arguments, argv=argv)
    for store in sc.args.stores.split(","):
        verdict = sc.report.part(store)
        if store == "postgres" and not sc.need_postgres(verdict):
            continue
        run_part(sc, verdict, store)
    return sc.finish()


def run_part(sc: Scenario, verdict: Verdict, store_kind: str) -> None:
    from replaykit.stores import open_store

    rng = sc.rng
    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    plan = mix(
        rng,
        "",
        scripts=sc.size(6, 30),
        length=sc.size(16, 60),
        pairs=sc.size(2, 6),
        rounds=sc.size(6, 20),
        inboxes=sc.size(1, 3),
        messages=sc.size(10, 40),
        step_seconds=(0.02, 0.2),
        sleep_seconds=0.4,
    )
    plan_path = work / "plan.json"
    plan_path.write_text(json.dumps(plan))
    kills = sc.args.kills if sc.args.kills is not None else sc.size(4, 25)
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("kill9"))
        else:
            url = f"sqlite:///{work / 'kill9.db'}"
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        incidents: list[Incident] = []
        started = time.monotonic()
        mid_step = 0
        for n in range(kills):
            proc = procs.spawn(
                worker_argv(url=url, executor_id="kill9", plan=plan_path), name=f"w{n}"
            )
            if rng.random() < 0.2:
                time.sleep(rng.uniform(0.05, 0.8))  # during start-up, recovery or the plan
            else:
                ready = wait_until(lambda p=proc: _said(ledger, p.pid, "ready"), 60)
                if not verdict.check(
                    ready is not None, "every worker launches", procs.log_tail(proc)
                ):
                    return
                time.sleep(rng.uniform(0.0, 1.0))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            incidents.append(
                Incident(time.time(), f"kill -9 of pid {proc.pid}", frozenset({proc.pid}))
            )
            mid_step += _had_open_step(ledger, proc.pid)
        final = procs.spawn(
            worker_argv(url=url, executor_id="kill9", plan=plan_path, until_done=True),
            name="final",
        )
        try:
            code = final.wait(timeout=sc.size(90, 600))
        except subprocess.TimeoutExpired:
            code = None
            procs.kill(final)
        verdict.check(code == 0, "the last worker runs every run to its end", procs.log_tail(final))
        verdict.figure("kills", kills)
        verdict.figure("kills that landed mid-step", mid_step)
        verdict.figure("seconds", round(time.monotonic() - started, 1))
        store = open_store(url)
        try:
            check_runs(verdict, store, plan["start"], ledger.read(), incidents)
        finally:
            store.close()
        verdict.figure(
            "messages sent between runs",
            sum(r["args"][0] for r in plan["start"] if r["wf"] == "rel-pinger") * 2,
        )
        verdict.figure("messages sent from outside (keyed)", len(plan["send"]))


def _said(ledger: Ledger, pid: int, event: str) -> bool:
    return any(line.get("pid") == pid and line.get("ev") == event for line in ledger.read())


def _had_open_step(ledger: Ledger, pid: int) -> bool:
    """Whether `pid` died with a step body started and not ended."""
    lines = [line for line in ledger.read() if line.get("pid") == pid]
    ended = {line["token"] for line in lines if line.get("ev") == "end"}
    return any(line["token"] not in ended for line in executions(lines))


if __name__ == "__main__":
    sys.exit(main())
