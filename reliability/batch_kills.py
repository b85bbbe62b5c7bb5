"""Scenario: kill -9 an `AsyncEngine` inside a batch start, on SQLite and PostgreSQL.

A process gathers batches of starts on an `AsyncEngine` (one statement a batch) as fast
as it can, and runs them; the driver SIGKILLs it at random moments, many times,
starting another after each. A batch is all or nothing: after the kills every batch
that began has all of its runs or none, every batch whose starts returned has all,
and a last worker (the same executor id) runs every stored run to SUCCESS, each step
from one execution (another only in a killed process).

    python -m reliability.batch_kills [--smoke] [--seed N] [--kills N] [--stores sqlite,postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from contextlib import ExitStack

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

__all__ = ["main"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", type=int, help="starts per batch (smoke 20, full 200)")


def main(argv: list[str] | None = None) -> int:
    return on_each_store(
        "batch_kills",
        __doc__ or "",
        run_part,
        argv,
        kills="smoke 4, full 25",
        add_arguments=_arguments,
    )


def run_part(sc: Scenario, verdict: Verdict, store_kind: str) -> None:
    from replaykit.log import Status, Value
    from replaykit.stores import open_store
    from replaykit.stores.base import WorkflowFilter

    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    size = sc.args.size if sc.args.size is not None else sc.size(20, 200)
    kills = sc.args.kills if sc.args.kills is not None else sc.size(4, 25)
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("batch_kills"))
        else:
            url = f"sqlite:///{work / 'batches.db'}"
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        incidents: list[Incident] = []
        began = time.monotonic()
        for n in range(kills):
            argv = [sys.executable, "-m", "reliability._batcher", "--url", url]
            proc = procs.spawn([*argv, "--size", str(size)], name=f"b{n}")
            ready = wait_until(
                lambda p=proc: any(
                    line.get("pid") == p.pid and line.get("ev") == "batch" for line in ledger.read()
                ),
                60,
            )
            if not verdict.check(ready is not None, "every batcher launches", procs.log_tail(proc)):
                return
            time.sleep(sc.rng.uniform(0.05, sc.size(0.5, 1.5)))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            incidents.append(
                Incident(time.time(), f"kill -9 of pid {proc.pid}", frozenset({proc.pid}))
            )
        store = open_store(url)
        stack.callback(store.close)
        rows = store.list_workflows(WorkflowFilter(name="rel-once", payloads=False))
        lines = ledger.read()
        by_batch: dict[str, int] = {}
        for row in rows:
            name = row.workflow_id.split("-", 1)[0]
            by_batch[name] = by_batch.get(name, 0) + 1
        begun = {f"{line['pid']}.{line['batch']}" for line in lines if line.get("ev") == "batch"}
        returned = {
            f"{line['pid']}.{line['batch']}" for line in lines if line.get("ev") == "batched"
        }
        partial = sorted(
            f"{name}: {count} of {size}" for name, count in by_batch.items() if count != size
        )
        verdict.check(
            not partial, "every batch stored all of its runs or none", ", ".join(partial[:10])
        )
        lost = sorted(name for name in returned if by_batch.get(name, 0) != size)
        verdict.check(
            not lost, "every batch whose starts returned has all its runs", ", ".join(lost[:10])
        )
        strays = sorted(set(by_batch) - begun)
        verdict.check(not strays, "no run of a batch that never began", ", ".join(strays[:10]))
        verdict.figure("kills", len(incidents))
        verdict.figure("batches begun", len(begun))
        verdict.figure("batches whose starts returned", len(returned))
        verdict.figure("runs stored", len(rows))
        plan = work / "plan.json"
        plan.write_text(
            json.dumps(
                {
                    "start": [
                        {
                            "id": row.workflow_id,
                            "wf": "rel-once",
                            "args": [row.workflow_id.split("-", 1)[0], 0.0],
                        }
                        for row in rows
                    ],
                    "send": [],
                }
            )
        )
        final = procs.spawn(
            worker_argv(url=url, executor_id="batcher", plan=plan, until_done=True), name="final"
        )
        code = final.wait(timeout=sc.size(120, 900))
        verdict.check(
            code == 0, "a last worker runs every stored run to its end", procs.log_tail(final)
        )
        unfinished = [
            row.workflow_id
            for row in store.list_workflows(WorkflowFilter(name="rel-once", payloads=False))
            if row.status is not Status.SUCCESS
        ]
        verdict.check(not unfinished, "every stored run ends SUCCESS", ", ".join(unfinished[:10]))
        recorded = {}
        for row in rows:
            for record in store.load_log(row.workflow_id):
                if record.kind == "step" and isinstance(record.outcome, Value):
                    recorded[(row.workflow_id, "only")] = record.outcome.data["token"]
        one_execution_each(verdict, recorded, ledger.read(), incidents)
        verdict.figure("seconds", round(time.monotonic() - began, 1))


if __name__ == "__main__":
    sys.exit(main())
