"""Scenario: per-key limits (a partitioned queue's, and keyed starts') while workers are
killed.

A producer enqueues R runs over a handful of partition keys, most of them on one noisy
key, on `Queue("rel-partitioned", concurrency=total, partition_concurrency=k)`, and a
client makes a third as many keyed starts (`start(..., concurrency_key=...,
concurrency_limit=k)`, which no worker was told of: they find the keyed queue); W
`replaykit worker` processes drain it (lease 2 s). The driver SIGKILLs a worker that
holds runs now and then and starts a new one in its place; the dead worker's runs stay
PENDING, counted against their key, until a live worker takes them over when its lease
expires. A sampler counts each key's PENDING runs in the store every few milliseconds,
and the ledger gives each run's span (first step start to last step end). No key may
ever have more than k runs PENDING or under way, nor the queue more than `total`; every
run must finish; steps re-ran only when in flight at a kill. At the end the workers get
SIGTERM and must exit 0.

    python -m reliability.partition_kills [--smoke] [--seed N] [--kills N]
                                          [--stores postgres,sqlite]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
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
from reliability.queue_kills import peak_overlap

__all__ = ["main"]

PARTITION_K = "RELIABILITY_PARTITION_K"
PARTITION_TOTAL = "RELIABILITY_PARTITION_TOTAL"
QUEUE = "rel-partitioned"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kills", type=int, help="SIGKILLs (smoke 2, full 6)")
    parser.add_argument("--stores", default="postgres,sqlite")


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("partition_kills", __doc__ or "", add_arguments=_arguments, argv=argv)
    k, total = sc.size(1, 2), sc.size(4, 6)
    # Before the workflows module registers the queue, in this process and the workers.
    os.environ[PARTITION_K], os.environ[PARTITION_TOTAL] = str(k), str(total)
    for store in sc.args.stores.split(","):
        verdict = sc.report.part(store)
        if store == "postgres" and not sc.need_postgres(verdict):
            continue
        run_part(sc, verdict, store, k, total)
    return sc.finish()


def _worker_argv(url: str, name: str) -> list[str]:
    return [
        sys.executable, "-m", "replaykit", "worker", "reliability._apps", "--url", url,
        "--queue", QUEUE, "--executor-id", name, "--app-version", APP_VERSION,
        "--lease-seconds", "2", "--poll-interval", "0.2",
    ]  # fmt: skip


def _pending(store: Any) -> list[Any]:
    from replaykit import Status
    from replaykit.stores.base import WorkflowFilter

    rows: list[Any] = store.list_workflows(WorkflowFilter(status=Status.PENDING))
    return [row for row in rows if row.queue in (QUEUE, _keyed_queue())]


def _keyed_queue() -> str:
    from replaykit.runtime.overlaps import CONCURRENCY_QUEUE_PREFIX

    return f"{CONCURRENCY_QUEUE_PREFIX}{os.environ[PARTITION_K]}"


class _Sampler(threading.Thread):
    """Counts each key's PENDING runs in the store, as often as it can."""

    def __init__(self, store: Any) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.key_peak = 0
        self.queue_peak = 0
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                rows = _pending(self.store)
            except Exception:
                continue
            per_key = Counter(row.partition_key for row in rows)
            self.key_peak = max(self.key_peak, max(per_key.values(), default=0))
            self.queue_peak = max(self.queue_peak, sum(row.queue == QUEUE for row in rows))
            self.samples += 1
            self.stop.wait(0.005)


def run_part(sc: Scenario, verdict: Verdict, store_kind: str, k: int, total: int) -> None:
    import reliability._apps as apps
    from replaykit import Client, Engine, QueueItem
    from replaykit.stores import open_store

    rng = sc.rng
    work = sc.workdir / store_kind
    work.mkdir()
    ledger = Ledger(work / "ledger.jsonl")
    workers_at_once = sc.size(3, 4)
    kills = sc.args.kills if sc.args.kills is not None else sc.size(2, 6)
    keys = ["noisy"] * 6 + ["t1", "t2", "t3"]  # the noisy key holds most runs
    runs: list[dict[str, Any]] = [
        {
            "wf": "rel-script",
            "id": f"p-{i}",
            "key": rng.choice(keys),
            "args": [random_script(rng, rng.randint(3, 5), (0.05, 0.2), 0.3)],
        }
        for i in range(sc.size(24, 120))
    ]
    # Keyed starts: their own keys (the key's limit is k too), a quarter of the runs.
    keyed: list[dict[str, Any]] = [
        {
            "wf": "rel-script",
            "id": f"c-{i}",
            "key": rng.choice(["keyed-busy"] * 3 + ["keyed-1", "keyed-2"]),
            "args": [random_script(rng, rng.randint(3, 5), (0.05, 0.2), 0.3)],
        }
        for i in range(sc.size(8, 40))
    ]
    runs += keyed
    key_of = {r["id"]: r["key"] for r in runs}
    with ExitStack() as stack:
        if store_kind == "postgres":
            url = stack.enter_context(postgres_schema("partition"))
        else:
            url = f"sqlite:///{work / 'partition.db'}"
        store = open_store(url)
        stack.callback(store.close)
        env = {LEDGER_ENV: str(ledger.path), PARTITION_K: str(k), PARTITION_TOTAL: str(total)}
        procs = stack.enter_context(Processes(work, env=env))
        producer = Engine(url, queues=[], executor_id="producer", app_version=APP_VERSION)
        stack.callback(producer.close)
        producer.enqueue_many(
            apps.PARTITIONED,
            apps.script,
            [
                QueueItem(*r["args"], workflow_id=r["id"], partition_key=r["key"])
                for r in runs
                if r not in keyed
            ],
        )
        client = Client(url, app_version=APP_VERSION)
        stack.callback(client.close)
        for r in keyed:
            client.start(
                r["wf"],
                *r["args"],
                workflow_id=r["id"],
                concurrency_key=r["key"],
                concurrency_limit=k,
            )
        sampler = _Sampler(store)
        sampler.start()
        began = time.monotonic()
        live: dict[str, subprocess.Popen[bytes]] = {}
        spawned = 0

        def spawn() -> None:
            nonlocal spawned
            name = f"pw-{spawned}"
            live[name] = procs.spawn(_worker_argv(url, name), name=name)
            spawned += 1

        def finished(workflow_id: str) -> bool:
            row = store.get_workflow(workflow_id)
            return row is not None and bool(row.status.is_terminal)

        for _ in range(workers_at_once):
            spawn()
        incidents: list[Incident] = []
        holding = 0
        ids = [r["id"] for r in runs]
        deadline = time.monotonic() + sc.size(150, 600)
        kill_at = sorted(rng.uniform(0.1, 0.8) for _ in range(kills))
        while time.monotonic() < deadline:
            done = sum(1 for wid in ids if finished(wid))
            if done == len(ids):
                break
            if kill_at and done >= kill_at[0] * len(ids):
                kill_at.pop(0)
                # A worker that holds runs (its keys at their limit), when one does.
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
        by_key: dict[str, list[tuple[float, float]]] = {}
        for workflow_id, (a, b) in spans.items():
            by_key.setdefault(key_of.get(workflow_id, "?"), []).append((a, b))
        ledger_key_peak = max((peak_overlap(s) for s in by_key.values()), default=0)
        verdict.figure("runs", len(runs))
        verdict.figure("runs of the noisy key", sum(r["key"] == "noisy" for r in runs))
        verdict.figure("keyed starts (concurrency_key, limit k)", len(keyed))
        verdict.figure("partition_concurrency k", k)
        verdict.figure("queue concurrency", total)
        verdict.figure("workers at once", workers_at_once)
        verdict.figure("kills", len(incidents))
        verdict.figure("kills of a worker holding runs", holding)
        verdict.figure("peak PENDING runs of one key (store, sampled)", sampler.key_peak)
        verdict.figure("peak PENDING runs of the queue (store, sampled)", sampler.queue_peak)
        verdict.figure("store samples", sampler.samples)
        verdict.figure("peak runs of one key under way at once (ledger)", ledger_key_peak)
        verdict.figure("seconds to drain", round(drained, 1))
        verdict.check(
            sampler.key_peak <= k,
            "no key (partition or concurrency key) ever had more than k runs PENDING (store)",
            f"peak {sampler.key_peak} > k = {k}",
        )
        verdict.check(
            sampler.queue_peak <= total,
            "the queue never had more than its concurrency PENDING (store)",
            f"peak {sampler.queue_peak} > {total}",
        )
        verdict.check(
            ledger_key_peak <= k,
            "never more than k runs of one key under way at once (ledger)",
            f"peak {ledger_key_peak} > k = {k}",
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
