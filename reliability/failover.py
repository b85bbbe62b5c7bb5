"""Scenario: failover to a standby under load, on a private high-availability cluster.

The scenario builds a pg_auto_failover cluster of its own on loopback (a monitor, a
primary and a standby with synchronous replication; `reliability._ha`) and removes it
at the end, also when something fails. Engine processes (two; each with an executor
id of its own) connect with a multi-host URL (`target_session_attrs=read-write`) and
run a mix of workflows with steps, sleeps, `All`s, sends between runs, messages from
outside and runs from a queue that either may claim. The driver then kills the
primary's machine (kill -9 of its keeper and postmaster) and lets the monitor promote
the standby, starts the dead node again (it rejoins as the standby), and does it again
the other way. The engines are never restarted: each must carry on by itself.

Measured at each failover, from a sampler that asks the cluster every 0.1 s: seconds
until the standby took writes, until each engine committed again, and until each held
its executor id again on the new primary. Checked: every record committed before the
kill is still there after it (synchronous replication: no loss), every run ends once
with its steps run once each outside the at-least-once window (a step in flight at
the kill may run again), every message arrives once.

`--replication async` turns the standby's replication quorum off (asynchronous
replication) and measures what is lost at each failover: records committed before
the kill and gone after it, and what the checker then finds. Nothing is asserted of
losses there: losing the last commits is what asynchronous replication allows.

    python -m reliability.failover [--smoke] [--seed N] [--failovers N] [--replication async]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from reliability._check import WINDOW, Incident, check_runs
from reliability._cluster import ClusterUnavailable
from reliability._ha import HACluster, install_hint
from reliability._harness import (
    IN_CI,
    LEDGER_ENV,
    Ledger,
    Processes,
    Scenario,
    Verdict,
    wait_until,
    worker_argv,
)
from reliability._plan import mix

__all__ = ["main"]

SCHEMA = "rk_failover"
ZERO_LOSS = "no record committed before a failover is missing after it"
RESUMED = "every engine commits again on the new primary"
HELD = "every engine holds its executor id again on the new primary"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--failovers", type=int, help="failovers (smoke 1, full 2)")
    parser.add_argument("--engines", type=int, default=2, help="engine processes (2)")
    parser.add_argument(
        "--replication",
        choices=("sync", "async"),
        default="sync",
        help="synchronous (losses asserted zero) or asynchronous (losses measured)",
    )


def main(argv: list[str] | None = None) -> int:
    sc = Scenario("failover", __doc__ or "", add_arguments=_arguments, argv=argv)
    verdict = sc.report.part(f"pg_auto_failover, {sc.args.replication} replication")
    try:
        cluster = HACluster(synchronous=sc.args.replication == "sync")
    except ClusterUnavailable as exc:
        if IN_CI:
            sc.report.setup_error = str(exc)
        else:
            verdict.skip(f"{exc} ({install_hint()})")
        return sc.finish()
    try:
        began = time.monotonic()
        cluster.create()
        verdict.figure("seconds to build the cluster", round(time.monotonic() - began, 1))
        run(sc, verdict, cluster)
    except ClusterUnavailable as exc:
        sc.report.setup_error = str(exc)
        verdict.check(False, "the HA cluster works", str(exc))
    finally:
        cluster.drop()
    return sc.finish()


@dataclass
class Sample:
    at: float
    port: int
    committed: dict[str, int]  # executor id -> records completed in its runs
    holders: set[int]  # pids of engine processes holding an executor id


@dataclass
class Sampler:
    """Asks the cluster, through the multi-host URL, what each engine has committed and
    who holds an executor id, every 0.1 s, reconnecting through the failovers."""

    url: str
    samples: list[Sample] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        import psycopg

        while not self.stop.is_set():
            try:
                with psycopg.connect(self.url, connect_timeout=1, autocommit=True) as conn:
                    while not self.stop.is_set():
                        self.samples.append(_sample(conn))
                        self.stop.wait(0.1)
            except psycopg.Error:
                self.stop.wait(0.05)

    def after(self, at: float, port: int) -> list[Sample]:
        return [s for s in list(self.samples) if s.at > at and s.port == port]


_HOLDER = re.compile(r"pid (\d+)")


def _sample(conn: Any) -> Sample:
    rows = conn.execute(
        f"SELECT w.executor_id, count(*) FROM {SCHEMA}.records r JOIN {SCHEMA}.workflows w "
        "ON w.workflow_id = r.workflow_id WHERE r.outcome IS NOT NULL GROUP BY 1"
    ).fetchall()
    names = conn.execute(
        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted "
        "AND a.application_name LIKE 'replaykit engine:%'"
    ).fetchall()
    port_row = conn.execute("SELECT inet_server_port()").fetchone()
    holders = {int(m.group(1)) for (name,) in names if (m := _HOLDER.search(name))}
    return Sample(time.time(), int(port_row[0]), {e: int(n) for e, n in rows}, holders)


def _lsn(text: str) -> int:
    """A WAL position ('16/B374D848') as a number of bytes; 0 if there is none."""
    high, sep, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16) if sep else 0


def _committed_keys(url: str) -> set[tuple[str, int]]:
    import psycopg

    with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
        rows = conn.execute(
            f"SELECT workflow_id, position FROM {SCHEMA}.records WHERE outcome IS NOT NULL"
        ).fetchall()
    return {(str(w), int(p)) for w, p in rows}


def _plans(sc: Scenario, engines: int) -> list[dict[str, list[dict[str, Any]]]]:
    plans = []
    for e in range(engines):
        plan = mix(
            sc.rng,
            f"e{e}-",
            scripts=sc.size(4, 12),
            length=sc.size(25, 120),
            pairs=sc.size(1, 3),
            rounds=sc.size(8, 40),
            inboxes=sc.size(1, 2),
            messages=sc.size(8, 30),
            step_seconds=(0.02, 0.12),
            sleep_seconds=sc.size(0.6, 1.0),
        )
        # Runs from a queue: the engines claim them, whichever has room.
        for q in range(sc.size(3, 10)):
            items = [["step", f"k{i}", round(sc.rng.uniform(0.02, 0.1), 3)] for i in range(8)]
            plan["start"].append(
                {
                    "wf": "rel-script",
                    "id": f"e{e}-queued-{q}",
                    "args": [items],
                    "queue": "rel-graceful",
                }
            )
        plans.append(plan)
    return plans


def run(sc: Scenario, verdict: Verdict, cluster: HACluster) -> None:
    from replaykit.stores import open_store

    synchronous = sc.args.replication == "sync"
    url = f"{cluster.url}&schema={SCHEMA}&connect_timeout=3"
    ledger = Ledger(sc.workdir / "ledger.jsonl")
    engines = sc.args.engines
    plans = _plans(sc, engines)
    failovers = sc.args.failovers if sc.args.failovers is not None else sc.size(1, 2)
    store = open_store(url)  # creates the schema before the engines race to
    store.close()
    sampler = Sampler(cluster.url)
    incidents: list[Incident] = []
    lost_total = 0
    checked_total = 0
    started = time.monotonic()
    with Processes(sc.workdir, env={LEDGER_ENV: str(ledger.path)}) as procs:
        workers = {}
        for e, plan in enumerate(plans):
            path = sc.workdir / f"plan-{e}.json"
            path.write_text(json.dumps(plan))
            executor = f"failover-{e}"
            workers[executor] = procs.spawn(
                worker_argv(
                    url=url, executor_id=executor, plan=path, until_done=True, queues=["*"]
                ),
                name=executor,
            )
        ready = wait_until(
            lambda: sum(1 for line in ledger.read() if line.get("ev") == "ready") >= engines,
            timeout=90,
        )
        tails = "; ".join(procs.log_tail(w, 4) for w in workers.values())
        if not verdict.check(ready is not None, "every engine launches", tails):
            return
        sampler.start()
        for n in range(failovers):
            time.sleep(sc.rng.uniform(1.5, 3.0))
            if all(w.poll() is not None for w in workers.values()):
                verdict.note(f"the engines had finished before failover {n + 1} of {failovers}")
                break
            before = _committed_keys(cluster.node_url(cluster.primary()))
            replication = cluster.replication()  # the last moment before the kill
            killed_at = time.time()
            dead = cluster.kill_primary()
            incidents.append(Incident(killed_at, f"failover {n + 1}: kill -9 of {dead.name}"))
            promoted = cluster.wait_promoted(dead, timeout=90)
            promoted_at = time.time()
            label = f"failover {n + 1} ({dead.name} -> {promoted.name})"
            verdict.figure(
                f"{label}: seconds from the kill until the standby took writes",
                round(promoted_at - killed_at, 2),
            )
            verdict.figure(
                f"{label}: replication at the kill", replication["sync"] or "asynchronous"
            )
            verdict.figure(
                f"{label}: bytes of WAL the standby had not flushed just before the kill",
                _lsn(replication["wal"]) - _lsn(replication["standby_flushed"]),
            )
            _measure(verdict, label, sampler, workers, killed_at, promoted_at, promoted.port)
            after = _committed_keys(cluster.node_url(promoted))
            lost = sorted(before - after)
            lost_total += len(lost)
            checked_total += len(before)
            verdict.figure(
                f"{label}: records committed before the kill, checked after", len(before)
            )
            if synchronous:
                verdict.check(not lost, ZERO_LOSS, f"{label}: {lost[:10]}")
            else:
                verdict.figure(f"{label}: records lost (asynchronous replication)", len(lost))
            cluster.revive(dead)
        sampler.close()
        timeout = sc.size(120, 400)
        codes = {}
        for executor, worker in workers.items():
            try:
                codes[executor] = worker.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                codes[executor] = None
                procs.kill(worker)
        finished = all(code == 0 for code in codes.values())
        detail = "; ".join(
            f"{e} exit {c}: {procs.log_tail(workers[e], 4)}" for e, c in codes.items()
        )
        if synchronous:
            verdict.check(finished, "every engine finishes every run by itself", detail)
        elif not finished:
            verdict.note(f"not every engine finished its runs: {detail}")
    verdict.figure("failovers", len(incidents))
    verdict.figure("records checked across the failovers", checked_total)
    verdict.figure("records lost", lost_total)
    verdict.figure("seconds", round(time.monotonic() - started, 1))
    starts = [run for plan in plans for run in plan["start"]]
    target = verdict if synchronous else Verdict("asynchronous replication, measured")
    store = open_store(url)
    try:
        check_runs(target, store, starts, ledger.read(), incidents)
    finally:
        store.close()
    if not synchronous:
        for name, value in target.figures.items():
            verdict.figure(name, value)
        for invariant, details in target.broken.items():
            verdict.note(f"with asynchronous replication, broken: {invariant} ({details})")
    verdict.figure(
        "steps run twice outside the at-least-once window", len(target.broken.get(WINDOW, []))
    )


def _measure(
    verdict: Verdict,
    label: str,
    sampler: Sampler,
    workers: dict[str, subprocess.Popen[bytes]],
    killed_at: float,
    promoted_at: float,
    port: int,
) -> None:
    """Per engine: seconds from the promotion until it committed again, and until it
    held its executor id again, on the new primary (waiting up to 60 s for both)."""
    deadline = time.monotonic() + 60
    resumed: dict[str, float] = {}
    held: dict[str, float] = {}
    while time.monotonic() < deadline and (len(resumed) < len(workers) or len(held) < len(workers)):
        after = sampler.after(killed_at, port)
        for executor, worker in workers.items():
            if worker.poll() is not None:  # finished already: nothing left to commit
                resumed.setdefault(executor, float("nan"))
                held.setdefault(executor, float("nan"))
                continue
            # Counted from the first look at the new primary: the last look at the old
            # one may be up to a sample older than the kill.
            base = after[0].committed.get(executor, 0) if after else 0
            for sample in after:
                # The sampler and the driver's own look at the new primary race: a
                # sample taken a moment before the driver saw it take writes counts as 0.
                if executor not in resumed and sample.committed.get(executor, 0) > base:
                    resumed[executor] = max(0.0, sample.at - promoted_at)
                if executor not in held and worker.pid in sample.holders:
                    held[executor] = max(0.0, sample.at - promoted_at)
        time.sleep(0.1)
    for executor in workers:
        verdict.check(executor in resumed, RESUMED, f"{label}: {executor} did not within 60 s")
        verdict.check(executor in held, HELD, f"{label}: {executor} did not within 60 s")
    verdict.figure(
        f"{label}: seconds from then until each engine committed again (0.1 s samples)",
        {e: round(s, 2) for e, s in sorted(resumed.items())},
    )
    verdict.figure(
        f"{label}: seconds from then until each engine held its id again",
        {e: round(s, 2) for e, s in sorted(held.items())},
    )


if __name__ == "__main__":
    sys.exit(main())
