"""Many sleeping runs spread over engine processes: what each sleeper costs in memory,
and how late they wake (issue "beyond one server": 1,000,000 sleepers in 512 MiB in
all, each woken within 1 s of due).

    python -m bench.bench_sleepers [--sleepers 100000] [--engines 2] [--spread 100]
                                   [--before PATH] [--pg URL]

S runs of bench.queue_app's `sleeper` (a `Now`, a `Sleep` until its instant, a step
that reads the wall clock) are enqueued by this process and claimed by E `replaykit
worker` processes; their instants are spread evenly over `--spread` seconds (0: one
instant, which measures the engines' throughput rather than their timers), far enough
ahead that every run is asleep first. Once all sleep, each process's resident set
(/proc/<pid>/status VmRSS) is read, and above what it was idle, divided by the
sleepers; once all have woken, each run's result says how late its step ran.

`--before PATH` measures the checkout at PATH the same way first (its workers import
its replaykit; this process enqueues with this one's, so the two must share a schema
version: against an older schema, run each checkout's own bench one after the other),
and prints the two side by side with their ratios: the way to show a change's effect
on the same machine under the same load (e.g. a `git worktree` of `main` before the
change).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs

from bench.bench_queues import ROOT, drop, stop, workers
from bench.fleet_probes import finished_runs, rss_kib, sleeping
from bench.queue_app import sleeper, sleepers
from replaykit import Engine, QueueItem

VERSION = "bench-sleepers"
BATCH = 1000


@attrs.frozen
class Figures:
    sleepers: int
    engines: int
    asleep_after: float  # seconds from the first enqueue until every run slept
    rss_mib: float  # the engines' resident sets, in all, with every run asleep
    grown_mib: float  # the same above the idle processes
    late: list[float]  # each run's lateness, sorted

    @property
    def per_sleeper(self) -> float:
        return self.grown_mib * 1024 * 1024 / self.sleepers

    @property
    def idle_mib(self) -> float:
        return self.rss_mib - self.grown_mib

    @property
    def at_a_million(self) -> float:
        return self.idle_mib + self.per_sleeper * 1_000_000 / 1024 / 1024

    def late_at(self, share: float) -> float:
        if not self.late:
            return float("nan")  # --no-wake: not measured
        return self.late[min(len(self.late) - 1, int(len(self.late) * share))]


def measure(
    pg: str,
    count: int,
    engines: int,
    *,
    spread: float,
    margin: float,
    root: Path = ROOT,
    wake: bool = True,
) -> Figures:
    schema = f"bench_sleepers_{uuid.uuid4().hex[:8]}"
    url = f"{pg}?schema={schema}"
    try:
        with Engine(url, queues=[], app_version=VERSION, executor_id="producer") as engine:
            procs = workers(
                url, engines, queue=sleepers.name, version=VERSION, prefix="sleepy-", root=root
            )
            time.sleep(3.0)
            baseline = {proc.pid: rss_kib(proc.pid) for proc in procs}
            # Far enough ahead for every run to be enqueued, claimed and asleep.
            due = datetime.now(UTC) + timedelta(seconds=margin + count / 2000)
            started = time.perf_counter()
            try:
                for first in range(0, count, BATCH):
                    items = [
                        QueueItem(due + timedelta(seconds=spread * i / count), workflow_id=f"z{i}")
                        for i in range(first, min(first + BATCH, count))
                    ]
                    engine.enqueue_many(sleepers, sleeper, items)
                while (asleep := sleeping(pg, schema)) < count:
                    check_alive(procs)
                    if datetime.now(UTC) >= due:
                        print(f"  only {asleep:,} of {count:,} runs were asleep at the due time")
                        break
                    time.sleep(2.0)
                asleep_after = time.perf_counter() - started
                time.sleep(2.0)  # the last suspensions settle
                rss = {proc.pid: rss_kib(proc.pid) for proc in procs}
                with finished_runs(pg, schema) as done:
                    while wake and done() < count:
                        check_alive(procs)
                        time.sleep(1.0)
            finally:
                stop(procs)
            late = sorted(lateness(engine, count)) if wake else []
        grown = sum(rss[pid] - baseline[pid] for pid in rss)
        return Figures(count, engines, asleep_after, sum(rss.values()) / 1024, grown / 1024, late)
    finally:
        drop(pg, schema)


def check_alive(procs: list[Any]) -> None:
    """A worker that exited (a schema newer than its checkout knows, say) would leave
    the bench waiting for ever: say so and stop."""
    dead = [proc for proc in procs if proc.poll() is not None]
    if dead:
        codes = ", ".join(f"pid {proc.pid}: exit {proc.returncode}" for proc in dead)
        raise SystemExit(f"a worker process exited ({codes}); see its output above")


def lateness(engine: Engine, count: int) -> list[float]:
    """Each sleeper's result: how late its step after the sleep ran, in seconds."""
    late: list[float] = []
    page = 50_000
    for offset in range(0, count, page):
        rows = engine.list_workflows(name="bench-sleeper", limit=page, offset=offset)
        late.extend(float(engine.outcome_value(row)) for row in rows)
    return late


def table(figures: list[tuple[str, Figures]]) -> str:
    """The figures of each side in a column, and the last against the first's."""
    rows: list[tuple[str, Any]] = [
        ("asleep after (s)", lambda f: f"{f.asleep_after:.0f}"),
        ("RSS of the engines, all asleep (MiB)", lambda f: f"{f.rss_mib:.0f}"),
        ("  above the idle processes (MiB)", lambda f: f"{f.grown_mib:.0f}"),
        ("per sleeper (B)", lambda f: f"{f.per_sleeper:.0f}"),
        ("at 1,000,000, growing linearly (MiB; target 512)", lambda f: f"{f.at_a_million:.0f}"),
        ("woken after due, p50 (s)", lambda f: f"{f.late_at(0.5):.2f}"),
        ("woken after due, p99 (s; target 1)", lambda f: f"{f.late_at(0.99):.2f}"),
        ("woken after due, max (s)", lambda f: f"{f.late_at(1.0):.2f}"),
    ]
    ratios: list[Any] = [
        None,
        lambda a, b: b.rss_mib / a.rss_mib,
        lambda a, b: b.grown_mib / a.grown_mib,
        lambda a, b: b.per_sleeper / a.per_sleeper,
        lambda a, b: b.at_a_million / a.at_a_million,
        lambda a, b: b.late_at(0.5) / max(a.late_at(0.5), 1e-9),
        lambda a, b: b.late_at(0.99) / max(a.late_at(0.99), 1e-9),
        lambda a, b: b.late_at(1.0) / max(a.late_at(1.0), 1e-9),
    ]
    names = [name for name, _ in figures]
    compare = len(figures) == 2
    head = "| | " + " | ".join(names) + (" | ratio |" if compare else " |")
    lines = [head, "|" + " --- |" * (len(names) + 1 + compare)]
    for (label, show), ratio in zip(rows, ratios, strict=True):
        cells = [show(f) for _, f in figures]
        if compare:
            cells.append("" if ratio is None else f"{ratio(figures[0][1], figures[1][1]):.2f}x")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_sleepers")
    parser.add_argument("--sleepers", type=int, default=100_000)
    parser.add_argument("--engines", type=int, default=2)
    parser.add_argument(
        "--spread",
        type=float,
        default=100.0,
        help="seconds over which the due instants are spread evenly (0: one instant)",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=60.0,
        help="seconds (beyond one per 2,000 sleepers) before the first due instant",
    )
    parser.add_argument("--before", type=Path, help="a checkout to measure first, for ratios")
    parser.add_argument(
        "--no-wake",
        action="store_true",
        help="stop the engines once the memory is read: no lateness (a big size's memory)",
    )
    parser.add_argument(
        "--pg",
        default=os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    args = parser.parse_args(argv)
    print(
        f"{args.sleepers:,} sleepers on {args.engines} worker process(es), due over "
        f"{args.spread:g} s, PostgreSQL, {os.cpu_count()} cores; load average before: "
        f"{os.getloadavg()[0]:.1f}"
    )
    sides = [("before", args.before.resolve())] if args.before else []
    sides.append(("this checkout" if not sides else "after", ROOT))
    measured: list[tuple[str, Figures]] = []
    for name, root in sides:
        figures = measure(
            args.pg,
            args.sleepers,
            args.engines,
            spread=args.spread,
            margin=args.margin,
            root=root,
            wake=not args.no_wake,
        )
        measured.append((name, figures))
        print(f"  {name} ({root}) measured; load average {os.getloadavg()[0]:.1f}", flush=True)
    print(table(measured))


if __name__ == "__main__":
    main()
