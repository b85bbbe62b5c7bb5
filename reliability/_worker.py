"""A worker process of the scenarios: `python -m reliability._worker --url URL ...`.

It imports the scenarios' workflows, waits for the go file if told to (so that
several processes start at one moment), opens an engine, starts the runs and
sends the messages of its plan (both idempotent: a restarted worker does it all
again), and then either waits for every planned run to finish (`--until-done`)
or runs until SIGTERM. The ledger names every launch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from reliability._harness import APP_VERSION, LEDGER_ENV, Ledger

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability._worker")
    parser.add_argument("--url", required=True)
    parser.add_argument("--executor-id", required=True)
    parser.add_argument("--plan", type=Path, help="JSON: {'start': [...], 'send': [...]}")
    parser.add_argument("--until-done", action="store_true")
    parser.add_argument("--go", type=Path, help="wait for this file before opening the engine")
    parser.add_argument(
        "--queues", help="comma-separated queues to drain, or * for all (default: none)"
    )
    parser.add_argument("--poll-interval", type=float, default=0.2)
    parser.add_argument("--lease-seconds", type=float, default=30.0)
    parser.add_argument("--no-recover", action="store_true")
    parser.add_argument(
        "--asyncio",
        action="store_true",
        help="run the plan on an AsyncEngine in an asyncio loop (the Engine's async face)",
    )
    parser.add_argument("--done-timeout", type=float, default=600.0)
    parser.add_argument(
        "--executor-wait", type=float, default=10.0, help="how long to wait for a held id"
    )
    args = parser.parse_args(argv)

    import reliability._apps  # noqa: F401 - registers the workflows and queues
    from replaykit import Engine
    from replaykit.registry import lookup
    from replaykit.stores import open_store

    ledger = Ledger(os.environ[LEDGER_ENV])
    stop = threading.Event()

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    plan: dict[str, Any] = json.loads(args.plan.read_text()) if args.plan else {}
    store = open_store(args.url)
    ledger.write(ev="armed", who=args.executor_id)
    if args.go is not None:
        while not args.go.exists():
            time.sleep(0.002)
    # "*": every registered queue, and the takeovers of dead engines' runs that
    # only an engine taking queue work does; none: a producer.
    queues = None if args.queues == "*" else [] if not args.queues else args.queues.split(",")
    if args.asyncio:
        return asyncio.run(_serve_async(args, plan, queues, ledger, stop))
    engine = Engine(
        store,
        executor_id=args.executor_id,
        app_version=APP_VERSION,
        poll_interval=args.poll_interval,
        lease_seconds=args.lease_seconds,
        queues=queues,
        recover=not args.no_recover,
        executor_wait=args.executor_wait,
    )
    ledger.write(ev="launch", who=args.executor_id)
    try:
        for run in plan.get("start", []):
            # A run's timeout counts from its first start; a later worker's start finds it.
            options = {"timeout": run["timeout"]} if "timeout" in run else {}
            if "queue" in run:  # enqueued: whichever engine claims it runs it
                engine.enqueue(
                    run["queue"], lookup(run["wf"]), *run["args"], workflow_id=run["id"], **options
                )
                continue
            engine.start(lookup(run["wf"]), *run["args"], workflow_id=run["id"], **options)
        for message in plan.get("send", []):
            engine.send(
                message["to"],
                message["message"],
                topic=message["topic"],
                idempotency_key=message.get("key"),
            )
        ledger.write(ev="ready", who=args.executor_id)
        if args.until_done and not _wait_done(engine, plan, stop, args.done_timeout):
            return 1
        if not args.until_done:
            stop.wait()
    finally:
        engine.close(wait=True)
    ledger.write(ev="exit", who=args.executor_id)
    return 0


async def _serve_async(
    args: argparse.Namespace,
    plan: dict[str, Any],
    queues: list[str] | None,
    ledger: Ledger,
    stop: threading.Event,
) -> int:
    """The plan on an `AsyncEngine`: its starts gathered (stored as batches), its sends
    awaited, and the wait for the runs' ends off the loop."""
    from replaykit import AsyncEngine
    from replaykit.registry import lookup

    async with AsyncEngine(
        args.url,
        executor_id=args.executor_id,
        app_version=APP_VERSION,
        poll_interval=args.poll_interval,
        lease_seconds=args.lease_seconds,
        queues=queues,
        recover=not args.no_recover,
        executor_wait=args.executor_wait,
    ) as engine:
        ledger.write(ev="launch", who=args.executor_id)
        await asyncio.gather(
            *(
                engine.start(
                    lookup(run["wf"]),
                    *run["args"],
                    workflow_id=run["id"],
                    **({"timeout": run["timeout"]} if "timeout" in run else {}),
                )
                for run in plan.get("start", [])
            )
        )
        for message in plan.get("send", []):
            await engine.send(
                message["to"],
                message["message"],
                topic=message["topic"],
                idempotency_key=message.get("key"),
            )
        ledger.write(ev="ready", who=args.executor_id)
        if args.until_done:
            done = await asyncio.to_thread(_wait_done, engine.engine, plan, stop, args.done_timeout)
            if not done:
                return 1
        else:
            await asyncio.to_thread(stop.wait)
    ledger.write(ev="exit", who=args.executor_id)
    return 0


def _wait_done(engine: Any, plan: dict[str, Any], stop: threading.Event, timeout: float) -> bool:
    """Wait until every planned run is finished (or PARKED, said on stdout); False on timeout."""
    from replaykit import Status
    from replaykit.errors import StoreUnavailable

    ids = [run["id"] for run in plan.get("start", [])]
    deadline = time.monotonic() + timeout
    while ids and not stop.is_set():
        try:
            row = engine.store.get_workflow(ids[-1])
        except StoreUnavailable:  # the database is down for a while: keep asking
            row = None
        if row is not None and (row.status.is_terminal or row.status is Status.PARKED):
            if row.status is not Status.SUCCESS:
                print(f"run {row.workflow_id} is {row.status.value}: {row.error}", flush=True)
            ids.pop()
            continue
        if time.monotonic() > deadline:
            print(f"runs still unfinished after {timeout}s: {ids}", flush=True)
            return False
        time.sleep(0.05)
    return True


if __name__ == "__main__":
    sys.exit(main())
