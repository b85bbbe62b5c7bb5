"""Scenario 5: idempotent start from many processes.

P processes with T threads each start the same set of ids, all at one instant,
with the same workflow and arguments (`engine.start(once, id, ..., workflow_id=id)`).
There must be exactly one run per id, every handle must name its id, every run
must finish once (its one step executed once: no kill, no window), and no call
may fail. Phase `conflicts` then starts finished ids again with other arguments
and with another workflow: docs/design.md (section 5) says those raise
`WorkflowIdConflict`, and the stored run must stay as it was.

    python -m reliability.idempotent_start [--smoke] [--seed N] [--phase same,conflicts]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from contextlib import ExitStack
from typing import Any

from reliability._check import check_runs
from reliability._harness import (
    LEDGER_ENV,
    Ledger,
    Processes,
    Scenario,
    Verdict,
    postgres_schema,
    wait_until,
)

__all__ = ["CONFLICT", "PHASES", "main"]

PHASES = ("same", "conflicts")
CONFLICT = (
    "a start with other arguments or another workflow under a used id raises WorkflowIdConflict"
)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--processes", type=int, help="smoke 3, full 4")
    parser.add_argument("--threads", type=int, help="per process; smoke 4, full 8")
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--phase", default=",".join(PHASES), help="same, conflicts")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("idempotent_start", __doc__ or "", add_arguments=_arguments, argv=argv)
    phases = [p for p in sc.args.phase.split(",") if p]
    for store in sc.args.stores.split(","):
        verdict = sc.report.part(f"{store}: {'+'.join(phases)}")
        if store == "postgres" and not sc.need_postgres(verdict):
            continue
        run_part(sc, verdict, store, phases)
    return sc.finish()


def run_part(sc: Scenario, verdict: Verdict, store_kind: str, phases: list[str]) -> None:
    from replaykit.stores import open_store
    from replaykit.stores.base import WorkflowFilter

    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    processes = sc.args.processes or sc.size(3, 4)
    threads = sc.args.threads or sc.size(4, 8)
    ids = [f"same-{i}" for i in range(sc.size(30, 200))]
    ids_path = work / "ids.json"
    ids_path.write_text(json.dumps(ids))
    go = work / "go"
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("idem"))
        else:
            url = f"sqlite:///{work / 'idem.db'}"
        store = open_store(url)  # creates the schema before the starters race for it
        stack.callback(store.close)
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        starters = []
        for n in range(processes):
            argv = [sys.executable, "-m", "reliability._starter", "--url", url]
            argv += ["--executor-id", f"starter-{n}", "--ids", str(ids_path), "--go", str(go)]
            argv += ["--threads", str(threads), "--seed", str(sc.rng.randrange(1 << 20))]
            if "conflicts" in phases:
                argv.append("--conflicts")
            starters.append(procs.spawn(argv, name=f"starter-{n}"))
        armed = wait_until(
            lambda: sum(1 for line in ledger.read() if line.get("ev") == "armed") >= processes, 60
        )
        if not verdict.check(
            armed is not None, "every starter launches", procs.log_tail(starters[0])
        ):
            return
        began = time.monotonic()
        go.touch()
        codes = []
        for proc in starters:
            try:
                codes.append(proc.wait(timeout=sc.size(60, 300)))
            except subprocess.TimeoutExpired:
                codes.append(None)
        verdict.check(all(c == 0 for c in codes), "every starter exits 0", f"exit codes {codes}")
        verdict.figure("processes x threads", f"{processes} x {threads}")
        verdict.figure("ids", len(ids))
        verdict.figure("start calls", processes * threads * len(ids))
        verdict.figure("seconds", round(time.monotonic() - began, 1))
        lines = ledger.read()
        seen = [line["seen"] for line in lines if line.get("ev") == "starter"]
        verdict.check(
            len(seen) == processes * threads,
            "every thread reports",
            f"{len(seen)} of {processes * threads} threads reported",
        )
        for report in seen:
            verdict.check(
                report["ok"] == len(ids) and not report["wrong_id"] and not report["errors"],
                "every start returns the run of its id, and no call fails",
                f"ok {report['ok']}/{len(ids)}, wrong ids {report['wrong_id'][:3]}, "
                f"errors {report['errors'][:3]}",
            )
        rows = store.list_workflows(WorkflowFilter())
        verdict.check(
            sorted(row.workflow_id for row in rows) == sorted(ids),
            "exactly one run per id",
            f"{len(rows)} runs for {len(ids)} ids",
        )
        runs = [{"wf": "rel-once", "id": wid, "args": [wid, 0.01]} for wid in ids]
        for row in rows:
            verdict.check(
                row.name == "rel-once"
                and row.inputs == {"args": [row.workflow_id, 0.01], "kwargs": {}},
                "each run holds the workflow and arguments it was started with",
                f"run {row.workflow_id!r}: {row.name} {row.inputs}",
            )
        check_runs(verdict, store, runs, lines, [])
        if "conflicts" in phases:
            _conflicts(verdict, seen)


def _conflicts(verdict: Verdict, seen: list[dict[str, Any]]) -> None:
    accepted = [text for report in seen for text in report.get("accepted", [])]
    refused: dict[str, int] = {}
    for report in seen:
        for name, count in report.get("refused", {}).items():
            refused[name] = refused.get(name, 0) + count
    verdict.figure("conflicting starts refused, by error", refused)
    verdict.figure("conflicting starts accepted silently", len(accepted))
    verdict.check(
        not accepted and set(refused) <= {"WorkflowIdConflict"},
        CONFLICT,
        f"{len(accepted)} such starts returned the existing run without a word (e.g. "
        f"{accepted[:2]}); refused: {refused}",
    )


if __name__ == "__main__":
    sys.exit(main())
