"""A process of the idempotent-start scenario: `python -m reliability._starter ...`.

T threads start the same ids (shuffled per thread) with the same workflow and
arguments, at one instant across processes (a go file, then a barrier). Once
every id has finished, with `--conflicts` each thread also starts some of the
ids again with other arguments and with another workflow, which must be refused
(`WorkflowIdConflict`, docs/design.md section 5). What each thread saw goes to
the ledger as one `starter` line.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

from reliability._harness import APP_VERSION, LEDGER_ENV, Ledger

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(prog="python -m reliability._starter")
    parser.add_argument("--url", required=True)
    parser.add_argument("--executor-id", required=True)
    parser.add_argument("--ids", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--go", type=Path, required=True)
    parser.add_argument("--conflicts", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import reliability._apps  # noqa: F401 - registers the workflows
    from replaykit import Engine
    from replaykit.registry import lookup

    ledger = Ledger(os.environ[LEDGER_ENV])
    ids: list[str] = json.loads(args.ids.read_text())
    once, script = lookup("rel-once"), lookup("rel-script")
    engine = Engine(
        args.url, executor_id=args.executor_id, app_version=APP_VERSION, poll_interval=0.2
    )
    ledger.write(ev="armed", who=args.executor_id)
    while not args.go.exists():
        time.sleep(0.002)
    barrier = threading.Barrier(args.threads)

    def thread(n: int) -> None:
        rng = random.Random(args.seed * 1000 + n)
        mine = ids[:]
        rng.shuffle(mine)
        seen: dict[str, Any] = {"ok": 0, "wrong_id": [], "errors": []}
        barrier.wait()
        for wid in mine:
            try:
                handle = engine.start(once, wid, 0.01, workflow_id=wid)
                if handle.workflow_id == wid:
                    seen["ok"] += 1
                else:
                    seen["wrong_id"].append([wid, handle.workflow_id])
            except Exception as exc:
                seen["errors"].append(f"start {wid!r}: {type(exc).__name__}: {exc}"[:300])
        for wid in mine:
            try:
                engine.handle(wid).result(timeout=120)
            except Exception as exc:
                seen["errors"].append(f"result {wid!r}: {type(exc).__name__}: {exc}"[:300])
        if args.conflicts:
            refused: dict[str, int] = {}
            accepted: list[str] = []
            for wid in mine[: max(1, len(mine) // 4)]:
                for attempt, call in (
                    ("other arguments", lambda w=wid: engine.start(once, w, 9.0, workflow_id=w)),
                    (
                        "another workflow",
                        lambda w=wid: engine.start(script, [], workflow_id=w),
                    ),
                ):
                    try:
                        call()
                        accepted.append(f"{attempt} under {wid!r}")
                    except Exception as exc:
                        name = type(exc).__name__
                        refused[name] = refused.get(name, 0) + 1
            seen["refused"] = refused
            seen["accepted"] = accepted
        ledger.write(ev="starter", who=f"{args.executor_id}/{n}", seen=seen)

    threads = [threading.Thread(target=thread, args=(n,)) for n in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
