"""Scenario: kill -9 during continue-as-new, on SQLite and PostgreSQL.

Runs of `rel-generations` each run one step a generation and continue as new, many
generations in a row, while the driver SIGKILLs their worker at random moments and
starts another (same executor id, so it recovers them). Then a last worker runs
them to their end. No generation may be lost or doubled: each run ends SUCCESS under
its original id (where the start's handle finds it), with exactly one archived row per
earlier generation (`<id>#<n>`, CONTINUED), each generation's log holds its one step,
and each step's outcome came from one execution (another only in a killed process).

    python -m reliability.generations [--smoke] [--seed N] [--kills N] [--stores sqlite,postgres]
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


def main(argv: list[str] | None = None) -> int:
    return on_each_store("generations", __doc__ or "", run_part, argv)


def run_part(sc: Scenario, verdict: Verdict, store_kind: str) -> None:
    from replaykit.stores import open_store

    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    runs = [
        {
            "id": f"gen-{n}",
            "wf": "rel-generations",
            "args": [sc.rng.randint(*sc.size((8, 20), (30, 120))), sc.rng.uniform(0.0, 0.05)],
        }
        for n in range(sc.size(6, 20))
    ]
    plan_path = work / "plan.json"
    plan_path.write_text(json.dumps({"start": runs, "send": []}))
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("generations"))
        else:
            url = f"sqlite:///{work / 'generations.db'}"
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        began = time.monotonic()
        incidents = kill_and_finish(
            rng=sc.rng,
            verdict=verdict,
            procs=procs,
            ledger=ledger,
            url=url,
            executor_id="generations",
            plan=plan_path,
            kills=sc.args.kills if sc.args.kills is not None else sc.size(4, 20),
            finish_within=sc.size(120, 900),
            alive=(0.0, 0.8),
        )
        if incidents is None:
            return
        verdict.figure("kills", len(incidents))
        verdict.figure("runs", len(runs))
        verdict.figure("generations planned", sum(r["args"][0] for r in runs))
        verdict.figure("seconds", round(time.monotonic() - began, 1))
        store = open_store(url)
        try:
            recorded = _check_generations(verdict, store, runs)
        finally:
            store.close()
        one_execution_each(verdict, recorded, ledger.read(), incidents)


def _check_generations(
    verdict: Verdict, store: Any, runs: list[dict[str, Any]]
) -> dict[tuple[str, str], str]:
    """Check every run's generations; the token each generation's step recorded."""
    from replaykit.log import Status, Value
    from replaykit.stores.base import WorkflowFilter

    recorded: dict[tuple[str, str], str] = {}
    ended, archived_right, logs_right = [], [], []
    for run in runs:
        workflow_id, total = run["id"], run["args"][0]
        row = store.get_workflow(workflow_id)
        if row is None or row.status is not Status.SUCCESS:
            ended.append(f"{workflow_id}: {None if row is None else row.status.value}")
            continue
        archived = store.list_workflows(WorkflowFilter(continued_as=workflow_id))
        ids = sorted(r.workflow_id for r in archived)
        expected = sorted(f"{workflow_id}#{n}" for n in range(total - 1))
        if ids != expected or any(r.status is not Status.CONTINUED for r in archived):
            archived_right.append(f"{workflow_id}: {len(ids)} archived of {total - 1}")
        for n in range(total):
            log_id = workflow_id if n == total - 1 else f"{workflow_id}#{n}"
            records = store.load_log(log_id)
            steps = [r for r in records if r.kind == "step"]
            if len(steps) != 1 or steps[0].name != f"g{n}" or steps[0].position != 0:
                logs_right.append(f"{log_id}: {[(r.kind, r.name) for r in records]}")
                continue
            outcome = steps[0].outcome
            if isinstance(outcome, Value):
                recorded[(workflow_id, f"g{n}")] = outcome.data["token"]
            else:
                logs_right.append(f"{log_id}: step g{n} has no value ({outcome!r})")
    verdict.check(not ended, "every run ends SUCCESS under its original id", "; ".join(ended))
    verdict.check(
        not archived_right,
        "one archived row per earlier generation, none lost or doubled",
        "; ".join(archived_right[:10]),
    )
    verdict.check(
        not logs_right, "each generation's log holds its one step", "; ".join(logs_right[:10])
    )
    return recorded


if __name__ == "__main__":
    sys.exit(main())
