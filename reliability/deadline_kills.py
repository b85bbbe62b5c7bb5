"""Scenario: kill -9 while run deadlines expire, on SQLite and PostgreSQL.

Runs of `rel-script` (steps and sleeps) start with a `timeout` shorter than some of
their scripts take, while the driver SIGKILLs their worker at random moments and starts
another (same executor id); a last worker finishes what is left. Each run must end
SUCCESS before its deadline or CANCELLED at it, saying so; no step may begin after its
run's deadline; and each step's outcome came from one execution (another only in a
killed process).

    python -m reliability.deadline_kills [--smoke] [--seed N] [--kills N] [--stores sqlite,postgres]
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from typing import Any

from reliability._harness import LEDGER_ENV, Ledger, Processes, Scenario, Verdict, postgres_schema
from reliability._kills import kill_and_finish, on_each_store, one_execution_each

__all__ = ["main"]

#: How much later than its run's deadline a step may be seen to begin: the engine checks
#: the deadline, then calls the body, and the ledger line is written inside the body.
START_SLACK = 0.05


def main(argv: list[str] | None = None) -> int:
    return on_each_store("deadline_kills", __doc__ or "", run_part, argv)


def _script(rng: Any, n: int) -> list[Any]:
    items: list[Any] = []
    for i in range(n):
        if rng.random() < 0.2:
            items.append(["sleep", rng.uniform(0.1, 0.4)])
        else:
            items.append(["step", f"k{i}", rng.uniform(0.02, 0.15)])
    return items


def run_part(sc: Scenario, verdict: Verdict, store_kind: str) -> None:
    from replaykit.log import Status, Value

    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    runs = [
        {
            "id": f"deadline-{n}",
            "wf": "rel-script",
            "args": [_script(sc.rng, sc.rng.randint(*sc.size((10, 30), (20, 80))))],
            "timeout": sc.rng.uniform(*sc.size((2.0, 14.0), (3.0, 20.0))),
        }
        for n in range(sc.size(8, 30))
    ]
    plan_path = work / "plan.json"
    plan_path.write_text(json.dumps({"start": runs, "send": []}))
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("deadline_kills"))
        else:
            url = f"sqlite:///{work / 'deadlines.db'}"
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        began = time.monotonic()
        incidents = kill_and_finish(
            rng=sc.rng,
            verdict=verdict,
            procs=procs,
            ledger=ledger,
            url=url,
            executor_id="deadlines",
            plan=plan_path,
            kills=sc.args.kills if sc.args.kills is not None else sc.size(4, 20),
            finish_within=sc.size(120, 900),
            alive=(0.0, 0.8),
        )
        if incidents is None:
            return
        from replaykit.stores import open_store

        store = open_store(url)
        try:
            lines = ledger.read()
            wrong, late, ended = [], [], {"SUCCESS": 0, "CANCELLED": 0}
            recorded: dict[tuple[str, str], str] = {}
            for run in runs:
                row = store.get_workflow(run["id"])
                if row is None or row.status not in (Status.SUCCESS, Status.CANCELLED):
                    wrong.append(f"{run['id']}: {None if row is None else row.status.value}")
                    continue
                ended[row.status.value] += 1
                if row.status is Status.CANCELLED and "deadline" not in row.error:
                    wrong.append(f"{run['id']}: CANCELLED saying {row.error!r}")
                if row.status is Status.SUCCESS and row.updated_at > row.deadline:
                    wrong.append(f"{run['id']}: SUCCESS after its deadline")
                deadline = row.deadline.timestamp()
                late += [
                    f"{run['id']}/{line['key']} {line['t'] - deadline:+.3f}s"
                    for line in lines
                    if line.get("ev") == "start"
                    and line.get("wf") == run["id"]
                    and line["t"] > deadline + START_SLACK
                ]
                for record in store.load_log(run["id"]):
                    if record.kind == "step" and isinstance(record.outcome, Value):
                        recorded[(run["id"], record.name)] = record.outcome.data["token"]
        finally:
            store.close()
        verdict.figure("kills", len(incidents))
        verdict.figure("runs ended SUCCESS in time", ended["SUCCESS"])
        verdict.figure("runs CANCELLED at their deadline", ended["CANCELLED"])
        verdict.figure("seconds", round(time.monotonic() - began, 1))
        verdict.check(
            not wrong,
            "every run ends SUCCESS before its deadline or CANCELLED at it",
            "; ".join(wrong[:10]),
        )
        verdict.check(not late, "no step begins after its run's deadline", "; ".join(late[:10]))
        one_execution_each(verdict, recorded, lines, incidents)


if __name__ == "__main__":
    sys.exit(main())
