"""Scenario 4: competing recoverers.

The driver writes R runs as `PENDING` for one executor id and version, as a
process that died would leave them, and then starts P processes with that same
executor id and version at one instant (they wait on a go file). One of them
holds the id and recovers the runs; the others wait for the id (as a rolling
deploy's new process waits for the old one) and find nothing left to run.
Every position must still run at most once beyond the at-least-once window (no
process is killed, so there is no window): two live engines must never execute
one run at once (docs/design.md, "Recovery").

In a second part (`--ids many`), the runs belong to a dead executor whose
heartbeat is old, and P processes with ids of their own take them over at
once: each run moves to one of them only.

    python -m reliability.recoverers [--smoke] [--seed N] [--processes P] [--stores ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
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
    worker_argv,
)
from reliability._plan import random_script

__all__ = ["main", "pending_runs"]

EXECUTOR = "rel-shared"
DEAD = "rel-dead"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--processes", type=int, help="recoverers at once (smoke 3, full 4)")
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--ids", default="one,many", help="one shared id, many ids, or both")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("recoverers", __doc__ or "", add_arguments=_arguments, argv=argv)
    for store in sc.args.stores.split(","):
        for ids in sc.args.ids.split(","):
            verdict = sc.report.part(f"{store}, {ids} executor id(s)")
            if store == "postgres" and not sc.need_postgres(verdict):
                continue
            run_part(sc, verdict, store, shared_id=ids == "one")
    return sc.finish()


def pending_runs(store: Any, runs: list[dict[str, Any]], executor_id: str) -> None:
    """Write `runs` as PENDING rows of `executor_id`, with no log: a died engine's runs."""
    import reliability._apps  # noqa: F401 - registers the workflows
    from replaykit import Status
    from replaykit.registry import lookup
    from replaykit.runtime.clock import SystemClock
    from replaykit.stores.base import WorkflowRow

    now = SystemClock().now()
    for run in runs:
        row = WorkflowRow(
            workflow_id=run["id"],
            name=run["wf"],
            status=Status.PENDING,
            inputs=lookup(run["wf"]).encode_inputs(tuple(run["args"]), {}),
            executor_id=executor_id,
            app_version=APP_VERSION,
            created_at=now,
        )
        store.create_workflow(row)


def run_part(sc: Scenario, verdict: Verdict, store_kind: str, *, shared_id: bool) -> None:
    from datetime import timedelta

    from replaykit.runtime.clock import SystemClock
    from replaykit.stores import open_store

    work = sc.workdir / f"{store_kind}-{'one' if shared_id else 'many'}"
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    processes = sc.args.processes or sc.size(3, 4)
    runs = [
        {
            "wf": "rel-script",
            "id": f"pending-{i}",
            "args": [random_script(sc.rng, sc.size(6, 20), (0.01, 0.08), 0.2)],
        }
        for i in range(sc.size(8, 40))
    ]
    plan_path = work / "plan.json"
    plan_path.write_text(json.dumps({"start": runs}))
    go = work / "go"
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("recoverers"))
        else:
            url = f"sqlite:///{work / 'recoverers.db'}"
        store = open_store(url)
        stack.callback(store.close)
        if shared_id:
            pending_runs(store, runs, EXECUTOR)
        else:
            # A dead engine's runs: its heartbeat stopped long ago and nothing holds its id.
            pending_runs(store, runs, DEAD)
            store.heartbeat(DEAD, APP_VERSION, SystemClock().now() - timedelta(hours=1))
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        workers = [
            procs.spawn(
                worker_argv(
                    url=url,
                    executor_id=EXECUTOR if shared_id else f"{EXECUTOR}-{n}",
                    plan=plan_path,
                    until_done=True,
                    go=go,
                    queues=None if shared_id else ["*"],
                    # Taking over is what this part is about: a lease of a second.
                    lease_seconds=30.0 if shared_id else 1.0,
                    poll_interval=0.2 if shared_id else 0.05,
                    # The ones that find the id held wait for it to come free.
                    executor_wait=sc.size(60, 300),
                ),
                name=f"recoverer-{n}",
            )
            for n in range(processes)
        ]
        armed = wait_until(
            lambda: sum(1 for line in ledger.read() if line.get("ev") == "armed") >= processes, 60
        )
        if not verdict.check(
            armed is not None, "every recoverer starts", procs.log_tail(workers[0])
        ):
            return
        started = time.monotonic()
        go.touch()
        codes = []
        for worker in workers:
            try:
                codes.append(worker.wait(timeout=sc.size(60, 300)))
            except subprocess.TimeoutExpired:
                codes.append(None)
        verdict.check(
            all(code == 0 for code in codes),
            "every recoverer ends with every run finished",
            f"exit codes {codes}",
        )
        verdict.figure(
            "recoverers (one executor id)" if shared_id else "recoverers (an id each)", processes
        )
        verdict.figure("seconds", round(time.monotonic() - started, 1))
        lines = ledger.read()
        check_runs(verdict, store, runs, lines, [])
        ran = Counter((line["wf"], line["key"]) for line in executions(lines))
        twice = [key for key, count in ran.items() if count > 1]
        pids_per_run: dict[str, set[int]] = {}
        for line in executions(lines):
            pids_per_run.setdefault(line["wf"], set()).add(line["pid"])
        verdict.figure("steps that ran more than once", len(twice))
        verdict.figure(
            "runs executed by more than one process",
            sum(1 for pids in pids_per_run.values() if len(pids) > 1),
        )
        if twice:
            verdict.note(
                f"{WINDOW!r} broke {len(twice)} times with no kill and no crash: {processes} live "
                + (
                    f"engines with executor id {EXECUTOR!r} each recovered the same PENDING runs"
                    if shared_id
                    else f"engines each took over the same runs of dead executor {DEAD!r}"
                )
                + " and executed them at once"
            )


if __name__ == "__main__":
    sys.exit(main())
