"""Scenario 7: SIGTERM to a `replaykit worker` mid-step and mid-`All`.

A run waits, PENDING, for a worker; the worker (`replaykit worker
reliability._apps`) picks it up and gets SIGTERM while a step body runs, or, in
the `all` phases, while an `All` of three steps runs and one of them has already
finished. Graceful shutdown (docs/queues.md, "Workers") must let the running
steps finish and commit: the worker exits 0 and the log holds the step's (the
`All`'s) record. A second worker then finishes the run; no step may run twice,
since nothing was killed. In the `queued-` phases the run comes from a queue:
the first worker puts it back (ENQUEUED) as it stops, and a worker with another
executor id claims it; in the others the second worker has the same executor id
and recovers it.

    python -m reliability.sigterm [--smoke] [--seed N] [--phase step,all,...] [--stores ...]
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from typing import Any

from reliability._check import WINDOW, check_runs, executions
from reliability._harness import (
    APP_VERSION,
    LEDGER_ENV,
    Ledger,
    Processes,
    Scenario,
    Verdict,
    postgres_schema,
    wait_until,
)
from reliability.recoverers import pending_runs

__all__ = ["COMMITS", "PHASES", "main"]

PHASES = ("step", "all", "queued-step", "queued-all")
COMMITS = "the steps running at SIGTERM commit before the worker exits"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--phase", default=",".join(PHASES), help=", ".join(PHASES))
    parser.add_argument("--stores", default="sqlite,postgres")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("sigterm", __doc__ or "", add_arguments=_arguments, argv=argv)
    for store in sc.args.stores.split(","):
        for phase in sc.args.phase.split(","):
            if phase not in PHASES:
                print(f"unknown phase {phase!r}; the phases are {', '.join(PHASES)}")
                return 2
            verdict = sc.report.part(f"{store}: {phase}")
            if store == "postgres" and not sc.need_postgres(verdict):
                continue
            run_phase(sc, verdict, store, phase)
    return sc.finish()


def _worker_argv(url: str, executor_id: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "replaykit",
        "worker",
        "reliability._apps",
        "--url",
        url,
        "--queue",
        "rel-graceful",
        "--executor-id",
        executor_id,
        "--app-version",
        APP_VERSION,
        "--poll-interval",
        "0.2",
    ]


def _finished(store: Any, workflow_id: str) -> bool:
    row = store.get_workflow(workflow_id)
    return row is not None and bool(row.status.is_terminal)


def _script(phase: str, slow: float) -> list[Any]:
    if phase.endswith("step"):
        return [["step", "before", 0.01], ["step", "slow", slow], ["step", "after", 0.01]]
    children = [["c0", 0.2], ["c1", slow * 0.6], ["c2", slow]]
    return [["step", "before", 0.01], ["all", children], ["step", "after", 0.01]]


def run_phase(sc: Scenario, verdict: Verdict, store_kind: str, phase: str) -> None:
    import reliability._apps as apps
    from replaykit import Engine
    from replaykit.stores import open_store

    work = sc.workdir / f"{store_kind}-{phase}"
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    slow = sc.size(1.0, 2.0)
    items = _script(phase, slow)
    run: dict[str, Any] = {"wf": "rel-script", "id": f"sigterm-{phase}", "args": [items]}
    queued = phase.startswith("queued")
    # In flight at the signal: the slow step, or the All with c0 already done.
    signal_after = ("start", "slow") if phase.endswith("step") else ("end", "c0")
    position = 1
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("sigterm"))
        else:
            url = f"sqlite:///{work / 'sigterm.db'}"
        store = open_store(url)
        stack.callback(store.close)
        if queued:
            with Engine(url, queues=[], executor_id="producer", app_version=APP_VERSION) as eng:
                eng.enqueue(apps.GRACEFUL, apps.script, items, workflow_id=run["id"])
        else:
            pending_runs(store, [run], "w7")
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        first = procs.spawn(_worker_argv(url, "w7" if not queued else "qa"), name="first")
        hit = wait_until(
            lambda: any(
                line.get("ev") == signal_after[0] and line.get("key") == signal_after[1]
                for line in ledger.read()
            ),
            60,
        )
        if not verdict.check(hit is not None, "the worker runs the run", procs.log_tail(first)):
            return
        time.sleep(0.1)
        signalled = time.monotonic()
        first.send_signal(signal.SIGTERM)
        try:
            code = first.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        stopped = time.monotonic() - signalled
        verdict.figure("seconds from SIGTERM to exit", round(stopped, 2))
        verdict.check(
            code == 0, "the worker exits 0 on SIGTERM", f"exit {code}: {procs.log_tail(first)}"
        )
        lines = ledger.read()
        in_flight = [
            line["key"]
            for line in executions(lines)
            if line["pos"] == position and line["pid"] == first.pid
        ]
        ended = {line["token"] for line in lines if line.get("ev") == "end"}
        unfinished = [
            line["key"]
            for line in executions(lines)
            if line["pid"] == first.pid and line["token"] not in ended
        ]
        verdict.check(
            not unfinished,
            "graceful shutdown lets running steps finish",
            f"step bodies {unfinished} were still running when the worker exited",
        )
        records = store.load_log(run["id"])
        committed = len(records) > position and records[position].outcome is not None
        verdict.figure(f"steps of position {position} the stopping worker ran", in_flight)
        verdict.figure(
            f"position {position} ({records[position].kind if len(records) > position else '-'}) "
            "committed by the stopping worker",
            committed,
        )
        verdict.check(
            committed,
            COMMITS,
            f"after the worker's exit the log holds {len(records)} record(s), position {position} "
            + (
                "pending (no outcome)"
                if len(records) > position
                else "absent: what the steps did is not recorded"
            ),
        )
        second = procs.spawn(_worker_argv(url, "w7" if not queued else "qb"), name="second")
        done = wait_until(lambda: _finished(store, run["id"]), 60)
        verdict.check(done is not None, "the next worker finishes the run", procs.log_tail(second))
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            procs.kill(second)
        lines = ledger.read()
        check_runs(verdict, store, [run], lines, [])
        reran = sorted(
            {
                line["key"]
                for line in executions(lines)
                if line["pid"] == second.pid and line["pos"] <= position
            }
        )
        verdict.figure("steps the next worker ran again", reran)
        if reran:
            verdict.note(
                f"{WINDOW!r}: the next worker re-ran {reran}, which the SIGTERMed worker had "
                "finished"
                + (
                    " (issue 13, known fault 7: the finished children of an All)"
                    if phase.endswith("all")
                    else ""
                )
            )


if __name__ == "__main__":
    sys.exit(main())
