"""What the feature scenarios share: a worker on a plan, SIGKILLed at random moments
and started again under the same executor id, then a last worker that runs the plan to
its end; and the check that each step's recorded outcome came from one execution, any
other execution having run in a process that was killed.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reliability._check import Incident, executions
from reliability._harness import Ledger, Processes, Scenario, Verdict, wait_until, worker_argv

__all__ = ["kill_and_finish", "on_each_store", "one_execution_each"]


def on_each_store(
    name: str,
    doc: str,
    run_part: Callable[[Scenario, Verdict, str], None],
    argv: list[str] | None,
    *,
    kills: str = "smoke 4, full 20",
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> int:
    """A feature scenario's `main`: `--kills` and `--stores` (and `add_arguments`'), then
    `run_part` once per store, PostgreSQL's part skipped (or, in CI, failed) when it is
    unreachable; the exit code."""

    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--kills", type=int, help=f"SIGKILLs per store ({kills})")
        parser.add_argument("--stores", default="sqlite,postgres")
        if add_arguments is not None:
            add_arguments(parser)

    sc = Scenario(name, doc, add_arguments=arguments, argv=argv)
    for store in sc.args.stores.split(","):
        verdict = sc.report.part(store)
        if store == "postgres" and not sc.need_postgres(verdict):
            continue
        run_part(sc, verdict, store)
    return sc.finish()


def kill_and_finish(
    *,
    rng: random.Random,
    verdict: Verdict,
    procs: Processes,
    ledger: Ledger,
    url: str,
    executor_id: str,
    plan: Path,
    kills: int,
    finish_within: float,
    alive: tuple[float, float] = (0.0, 1.0),
    env: dict[str, str] | None = None,
) -> list[Incident] | None:
    """SIGKILL `kills` workers in turn (each after it said it was ready and lived a while
    in `alive` seconds, or now and then during its start-up), then let a last worker run
    the plan to its end. The incidents; None if a worker never launched or the last one
    did not finish (the verdict says which)."""
    incidents: list[Incident] = []
    for n in range(kills):
        proc = procs.spawn(
            worker_argv(url=url, executor_id=executor_id, plan=plan), name=f"w{n}", env=env
        )
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0.05, 0.8))  # during start-up, recovery or the plan
        else:
            ready = wait_until(lambda p=proc: _said(ledger, p.pid, "ready"), 60)
            if not verdict.check(ready is not None, "every worker launches", procs.log_tail(proc)):
                return None
            time.sleep(rng.uniform(*alive))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        incidents.append(Incident(time.time(), f"kill -9 of pid {proc.pid}", frozenset({proc.pid})))
    final = procs.spawn(
        worker_argv(url=url, executor_id=executor_id, plan=plan, until_done=True),
        name="final",
        env=env,
    )
    try:
        code = final.wait(timeout=finish_within)
    except subprocess.TimeoutExpired:
        code = None
        procs.kill(final)
    if not verdict.check(
        code == 0, "the last worker runs every run to its end", procs.log_tail(final)
    ):
        return None
    return incidents


def one_execution_each(
    verdict: Verdict,
    recorded: dict[tuple[str, str], str],
    lines: Sequence[dict[str, Any]],
    incidents: Sequence[Incident],
) -> None:
    """Each (run, step key)'s recorded token came from exactly one execution, and every
    other execution of it ran in a process a kill hit; a step with no record ran only in
    a killed process."""
    killed = {pid for incident in incidents for pid in incident.pids or ()}
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for line in executions(lines):
        runs.setdefault((line["wf"], line["key"]), []).append(line)
    unmatched = []
    outside = []
    for (workflow_id, key), token in sorted(recorded.items()):
        started = runs.get((workflow_id, key), [])
        if sum(1 for line in started if line["token"] == token) != 1:
            unmatched.append(f"{workflow_id}/{key}")
        outside += [
            f"{workflow_id}/{key} in pid {line['pid']}"
            for line in started
            if line["token"] != token and line["pid"] not in killed
        ]
    verdict.check(
        not unmatched,
        "every recorded step outcome came from exactly one execution",
        ", ".join(unmatched[:10]),
    )
    verdict.check(
        not outside,
        "a step ran again only when its process was killed",
        ", ".join(outside[:10]),
    )
    # A step in flight at a kill whose run never ran it again (it ended first: a deadline,
    # a cancel) has no record: only an execution in a live process must have one.
    phantom = sorted(
        f"{wf}/{key} in pid {line['pid']}"
        for (wf, key), started in runs.items()
        if (wf, key) not in recorded
        for line in started
        if line["pid"] not in killed
    )
    verdict.check(
        not phantom,
        "no execution of a step the logs do not have, but in a killed process",
        ", ".join(phantom[:10]),
    )
    verdict.figure("step executions", sum(len(v) for v in runs.values()))
    verdict.figure("steps recorded", len(recorded))


def _said(ledger: Ledger, pid: int, event: str) -> bool:
    return any(line.get("pid") == pid and line.get("ev") == event for line in ledger.read())
