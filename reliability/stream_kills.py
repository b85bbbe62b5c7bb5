"""Scenario: kill -9 while runs write streams, on SQLite and PostgreSQL.

Runs of `rel-streamer` run a step and write its result to their stream "out", many
times, then close it; the driver SIGKILLs their worker at random moments and starts
another (same executor id), and a last worker finishes them. Meanwhile a reader in the
driver (`Client.read_stream`, from outside) follows every stream from its first value.
Each value must be read once, in order: the reader sees 0..n-1 exactly, with the
token of the step execution the log recorded, and a fresh read after the end gives
the same; each step's outcome came from one execution (another only in a killed
process).

    python -m reliability.stream_kills [--smoke] [--seed N] [--kills N] [--stores sqlite,postgres]
"""

from __future__ import annotations

import json
import sys
import threading
import time
from contextlib import ExitStack
from typing import Any

from reliability._harness import LEDGER_ENV, Ledger, Processes, Scenario, Verdict, postgres_schema
from reliability._kills import kill_and_finish, on_each_store, one_execution_each

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    return on_each_store("stream_kills", __doc__ or "", run_part, argv)


class _Reader(threading.Thread):
    """Follows one run's stream from outside, as a client would, until it ends."""

    def __init__(self, url: str, workflow_id: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.workflow_id = workflow_id
        self.values: list[Any] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        from replaykit import Client
        from replaykit.errors import WorkflowNotFound

        try:
            with Client(self.url, poll_interval=0.05) as client:
                deadline = time.monotonic() + 120
                while True:  # the run exists once the first worker started it
                    try:
                        for value in client.read_stream(self.workflow_id, "out", timeout=300):
                            self.values.append(value)
                        return
                    except WorkflowNotFound:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.05)
        except BaseException as exc:  # reported by the scenario
            self.error = exc


def run_part(sc: Scenario, verdict: Verdict, store_kind: str) -> None:
    from replaykit import Client

    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    runs = [
        {
            "id": f"stream-{n}",
            "wf": "rel-streamer",
            "args": [sc.rng.randint(*sc.size((10, 30), (40, 150))), sc.rng.uniform(0.0, 0.05)],
        }
        for n in range(sc.size(4, 12))
    ]
    plan_path = work / "plan.json"
    plan_path.write_text(json.dumps({"start": runs, "send": []}))
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("stream_kills"))
        else:
            url = f"sqlite:///{work / 'streams.db'}"
        procs = stack.enter_context(Processes(work, env={LEDGER_ENV: str(ledger.path)}))
        readers = [_Reader(url, run["id"]) for run in runs]
        for reader in readers:
            reader.start()
        began = time.monotonic()
        incidents = kill_and_finish(
            rng=sc.rng,
            verdict=verdict,
            procs=procs,
            ledger=ledger,
            url=url,
            executor_id="streams",
            plan=plan_path,
            kills=sc.args.kills if sc.args.kills is not None else sc.size(4, 20),
            finish_within=sc.size(120, 900),
            alive=(0.0, 0.8),
        )
        for reader in readers:
            reader.join(timeout=60)
        if incidents is None:
            return
        verdict.figure("kills", len(incidents))
        verdict.figure("values written", sum(r["args"][0] for r in runs))
        verdict.figure("seconds", round(time.monotonic() - began, 1))
        wrong = []
        recorded: dict[tuple[str, str], str] = {}
        with Client(url) as client:
            for run, reader in zip(runs, readers, strict=True):
                count = run["args"][0]
                tokens = client.handle(run["id"]).result(timeout=30)
                for n in range(count):
                    recorded[(run["id"], f"s{n}")] = tokens[f"s{n}"]
                expected = [{"n": n, "token": tokens[f"s{n}"]} for n in range(count)]
                if reader.error is not None or reader.is_alive():
                    wrong.append(f"{run['id']}: the reader {reader.error or 'never ended'}")
                elif reader.values != expected:
                    wrong.append(f"{run['id']}: read {_shown(reader.values)}")
                again = list(client.read_stream(run["id"], "out", timeout=30))
                if again != expected:
                    wrong.append(f"{run['id']}: a read after the end gave {_shown(again)}")
        verdict.check(
            not wrong,
            "every stream value read once, in order, as the log recorded it",
            "; ".join(wrong[:5]),
        )
        one_execution_each(verdict, recorded, ledger.read(), incidents)


def _shown(values: list[Any]) -> str:
    return str([v.get("n") if isinstance(v, dict) else v for v in values][:40])


if __name__ == "__main__":
    sys.exit(main())
