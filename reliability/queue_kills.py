"""Scenario 6: a queue's concurrency limit while workers are killed.

A producer enqueues R runs on `Queue("rel-limited", concurrency=k)`; W
`replaykit worker` processes drain it (lease 2 s). The driver SIGKILLs a random
worker now and then and starts a new one in its place; the dead worker's runs
move to a live one when its lease expires. A sampler counts the queue's PENDING
runs in the store every few milliseconds, and the ledger gives each run's span
(first step start to last step end). Neither may ever exceed k; every run must
finish; steps re-ran only when in flight at a kill. At the end the workers get
SIGTERM and must exit 0.

    python -m reliability.queue_kills [--smoke] [--seed N] [--kills N] [--stores postgres,sqlite]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from typing import Any

from reliability._check import Incident, check_runs, executions
from reliability._harness import (
    APP_VERSION,
    LEDGER_ENV,
    Ledger,
    Processes,
    Scenario,
    Verdict,
    postgres_schema,
)
from reliability._plan import random_script

__all__ = ["main", "peak_overlap"]

QUEUE_K = "RELIABILITY_QUEUE_K"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kills", type=int, help="SIGKILLs (smoke 2, full 6)")
    parser.add_argument("--stores", default="postgres,sqlite")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("queue_kills", __doc__ or "", add_arguments=_arguments, argv=argv)
    k = sc.size(3, 4)
    os.environ[QUEUE_K] = str(k)  # before the workflows module registers the queue
    for store in sc.args.stores.split(","):
        verdict = sc.report.part(store)
        if store == "postgres" and not sc.need_postgres(verdict):
            continue
        run_part(sc, verdict, store, k)
    return sc.finish()


def peak_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans holding one instant (a span ending as another starts: not both)."""
    events = sorted([(a, 1) for a, _b in spans] + [(b, -1) for _a, b in spans])
    peak = now = 0
    for _t, delta in events:
        now += delta
        peak = max(peak, now)
    return peak


def _worker_argv(url: str, name: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "replaykit",
        "worker",
        "reliability._apps",
        "--url",
        url,
        "--queue",
        "rel-limited",
        "--executor-id",
        name,
        "--app-version",
        APP_VERSION,
        "--lease-seconds",
        "2",
        "--poll-interval",
        "0.2",
    ]


def _finished(store: Any, workflow_id: str) -> bool:
    row = store.get_workflow(workflow_id)
    return row is not None and bool(row.status.is_terminal)


def _pending(store: Any) -> list[Any]:
    from replaykit import Status
    from replaykit.stores.base import WorkflowFilter

    return [
        row
        for row in store.list_workflows(WorkflowFilter(status=Status.PENDING))
        if row.queue == "rel-limited"
    ]


class _Sampler(threading.Thread):
    """Counts the queue's PENDING runs in the store, as often as it can."""

    def __init__(self, store: Any) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.peak = 0
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                rows = _pending(self.store)
            except Exception:
                continue
            self.peak = max(self.peak, len(rows))
            self.samples += 1
            self.stop.wait(0.005)


def run_part(sc: Scenario, verdict: Verdict, store_kind: str, k: int) -> None:
    import reliability._apps as apps
    from replaykit import Engine, QueueItem
    from replaykit.stores import open_store

    rng = sc.rng
    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    workers_at_once = sc.size(3, 4)
    kills = sc.args.kills if sc.args.kills is not None else sc.size(2, 6)
    runs: list[dict[str, Any]] = [
        {
            "wf": "rel-script",
            "id": f"q-{i}",
            "args": [random_script(rng, rng.randint(3, 5), (0.05, 0.2), 0.3)],
        }
        for i in range(sc.size(24, 150))
    ]
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("queue"))
        else:
            url = f"sqlite:///{work / 'queue.db'}"
        store = open_store(url)
        stack.callback(store.close)
        env = {LEDGER_ENV: str(ledger.path), QUEUE_K: str(k)}
        procs = stack.enter_context(Processes(work, env=env))
        producer = Engine(url, queues=[], executor_id="producer", app_version=APP_VERSION)
        stack.callback(producer.close)
        producer.enqueue_many(
            apps.LIMITED, apps.script, [QueueItem(*r["args"], workflow_id=r["id"]) for r in runs]
        )
        sampler = _Sampler(store)
        sampler.start()
        began = time.monotonic()
        live: dict[str, subprocess.Popen[bytes]] = {}
        spawned = 0

        def spawn() -> None:
            nonlocal spawned
            name = f"qw-{spawned}"
            live[name] = procs.spawn(_worker_argv(url, name), name=name)
            spawned += 1

        for _ in range(workers_at_once):
            spawn()
        incidents: list[Incident] = []
        holding = 0
        ids = [r["id"] for r in runs]
        deadline = time.monotonic() + sc.size(120, 600)
        kill_at = sorted(rng.uniform(0.1, 0.8) for _ in range(kills))
        while time.monotonic() < deadline:
            done = sum(1 for wid in ids if _finished(store, wid))
            if done == len(ids):
                break
            if kill_at and done >= kill_at[0] * len(ids):
                kill_at.pop(0)
                # A worker that holds runs, when one does: killing an idle one proves little.
                owners = sorted({row.executor_id for row in _pending(store)} & set(live))
                holding += bool(owners)
                victim = live.pop(rng.choice(owners or sorted(live)))
                os.kill(victim.pid, signal.SIGKILL)
                victim.wait()
                incidents.append(
                    Incident(time.time(), f"kill -9 of pid {victim.pid}", frozenset({victim.pid}))
                )
                spawn()
            time.sleep(0.05)
        drained = time.monotonic() - began
        sampler.stop.set()
        sampler.join()
        # A worker spawned late (after the last kill) may still be importing, before its
        # SIGTERM handler: the signal would kill it (exit -15) and prove nothing. Each is
        # signalled once its log says it serves.
        ready_by = time.monotonic() + 60
        while time.monotonic() < ready_by and not all(
            "draining" in procs.log_tail(w, 200) or w.poll() is not None for w in live.values()
        ):
            time.sleep(0.05)
        for worker in live.values():
            worker.send_signal(signal.SIGTERM)
        codes: list[int | None] = []
        for worker in live.values():
            try:
                codes.append(worker.wait(timeout=30))
            except subprocess.TimeoutExpired:
                codes.append(None)
        verdict.check(
            all(code == 0 for code in codes),
            "workers exit 0 on SIGTERM",
            f"exit codes {codes}: " + "; ".join(procs.log_tail(w, 3) for w in live.values()),
        )
        lines = ledger.read()
        spans: dict[str, list[float]] = {}
        for line in lines:
            if line.get("ev") in ("start", "end"):
                span = spans.setdefault(line["wf"], [line["t"], line["t"]])
                span[0], span[1] = min(span[0], line["t"]), max(span[1], line["t"])
        ledger_peak = peak_overlap([(a, b) for a, b in spans.values()])
        verdict.figure("runs", len(runs))
        verdict.figure("queue concurrency k", k)
        verdict.figure("workers at once", workers_at_once)
        verdict.figure("kills", len(incidents))
        verdict.figure("kills of a worker holding runs", holding)
        verdict.figure("peak PENDING runs of the queue (store, sampled)", sampler.peak)
        verdict.figure("store samples", sampler.samples)
        verdict.figure("peak runs under way at once (ledger spans)", ledger_peak)
        verdict.figure("seconds to drain", round(drained, 1))
        verdict.check(
            sampler.peak <= k,
            "the queue never had more than k runs PENDING (store)",
            f"peak {sampler.peak} > k = {k}",
        )
        verdict.check(
            ledger_peak <= k,
            "never more than k runs under way at once (ledger)",
            f"peak {ledger_peak} > k = {k}",
        )
        check_runs(verdict, store, runs, lines, incidents)
        verdict.figure(
            "step executions by killed workers",
            sum(
                1
                for line in executions(lines)
                if any(line["pid"] in (i.pids or ()) for i in incidents)
            ),
        )


if __name__ == "__main__":
    sys.exit(main())
