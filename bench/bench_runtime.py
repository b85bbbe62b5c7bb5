"""Runtime figures: waking up, holding a suspended run, enqueueing — each against a
baseline measured in the same run.

    python -m bench.bench_runtime [--stores sqlite,postgres,memory] [--quick] [--n 250,2000]
        [--sleepers 2000] [--enqueue 500] [--repeat 3] [--budget 120] [--timeout 600] [--pg URL]

Every figure is printed per store with its absolute times; nothing is asserted.
Each case gets a fresh SQLite file in a temporary folder, a fresh PostgreSQL schema
(dropped afterwards) or a fresh memory store.

1. sleep loop, virtual clock: one workflow doing N x (`Step` then `Sleep(60)`) on an
   engine with `VirtualClock(autojump=True)`, against one workflow of N plain steps on
   the same engine: the ratio of wall times, for each N of `--n` (default 250 and 2000;
   `--quick` 250 and 500). A runtime that replays the whole log on every wake-up grows
   quadratically: the growth exponent between the sizes says which it is (1 linear,
   2 quadratic).
2. sleep loop, system clock: the same loop with `Sleep(0.001)` on the system clock, the
   largest N against the smallest: the growth ratio, beside what linear would be
   (2000 / 250 = 8x).
3. concurrent (100 workflows x 10 steps started at once) is not repeated here: it is
   the suite's case ('concurrent' in bench/cases.py: `python -m bench --cases
   concurrent`), and bench/bench_core.py runs it on the memory store.
4. warm run memory: K workflows (`--sleepers`, default 2000) that each do one `Step`
   and then wait in `Recv("go")`, started after 200 untimed ones; once the engine is
   idle, the growth per run of RSS (/proc/self/statm, over the second half of K, no
   tracing) and of the Python heap (tracemalloc, started before the engine) in
   processes of their own. When `Engine` takes `max_cached_runs`, twice: with 0 (the
   suspended runs evicted) and with a cache that holds them all (warm runs), and their
   ratio; otherwise once, "bytes per sleeper" with no cache.
5. enqueue_many drain: `--enqueue` (default 500) one-step workflows put on a queue by a
   producer engine that listens to no queue, then drained by one engine that listens to
   it (from its construction until every run is SUCCESS): workflows/s, with
   `Engine.enqueue_many(queue, wf, [(i,) for i in ...])` when the engine has it and with
   one `Engine.enqueue` per workflow, and their ratio; the median of `--repeat`. "Every
   run is SUCCESS" is seen two ways, in drains of their own: by a caller that takes
   `consumer.handle(id).result()` of each run in turn (its reads and waits share the
   machine with the drain), and by watching the store (`list_workflows` of the
   ENQUEUED and PENDING runs, every 5 ms from the producer, until there are none): the
   engine's own drain rate.

A size that takes longer than `--budget` seconds skips the larger ones (and says so); a
run that takes longer than `--timeout` is cancelled and reported as such. Progress goes
to stderr every 10 s, the figures to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import replaykit
from bench.measure import measure_sleepers
from bench.places import Places, check_postgres
from replaykit import (
    Engine,
    MemoryStore,
    Queue,
    Recv,
    Sleep,
    Status,
    Step,
    VirtualClock,
    workflow,
)
from replaykit.stores.base import Store

__all__ = [
    "Outcome",
    "cache_variants",
    "growth",
    "main",
    "parse_sizes",
    "ratio",
    "rounded",
    "run_sizes",
]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = os.environ.get(
    "REPLAYKIT_BENCH_PG",
    os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
)
VERSION = "bench-runtime"
STORES = ("sqlite", "postgres", "memory")
WARM_SLEEPERS = 200
ENQUEUE_MANY = "enqueue_many"
#: enqueue_many, the drain seen by watching the store rather than each run's result.
WATCHED = "enqueue_many, store watched"
PROGRESS_EVERY = 10.0

#: Step bodies executed (never on replay): the progress of a sleep loop.
EXECUTED = [0]
_EXECUTED_LOCK = threading.Lock()


def tick(i: int) -> int:
    with _EXECUTED_LOCK:
        EXECUTED[0] += 1
    return i


@workflow(name="bench-rt-plain")
def plain_steps(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("s", tick, i)
    return total


@workflow(name="bench-rt-sleep-loop")
def sleep_loop(n: int, seconds: float) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("s", tick, i)
        yield Sleep(seconds)
    return total


@workflow(name="bench-rt-waiter")
def waiter() -> Generator[Any, Any, Any]:
    yield Step("s", tick, 0)
    message = yield Recv("go")
    return message


@workflow(name="bench-rt-one-step")
def one_step(i: int) -> Generator[Any, Any, int]:
    value: int = yield Step("s", tick, i)
    return value


#: The queue of case 5 (creating a Queue registers it).
RT_QUEUE = Queue("bench-runtime")


# -- arithmetic (tests/test_bench.py) ----------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    """ "250,2000" -> [250, 2000]: positive, distinct, ascending."""
    sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    if not sizes or sizes[0] <= 0:
        raise ValueError(f"sizes must be positive integers, got {text!r}")
    return sizes


def ratio(num: float | None, den: float | None) -> float | None:
    """num / den, or None when either is missing or den is not positive."""
    if num is None or den is None or den <= 0:
        return None
    return num / den


def growth(small_n: int, small_s: float, big_n: int, big_s: float) -> tuple[float, float, float]:
    """(time ratio, what linear growth would give, the exponent k in time ~ N^k)."""
    if not (0 < small_n < big_n) or small_s <= 0 or big_s <= 0:
        raise ValueError("growth needs 0 < small_n < big_n and positive times")
    times = big_s / small_s
    linear = big_n / small_n
    return times, linear, math.log(times) / math.log(linear)


@dataclass
class Outcome:
    """The sizes a case measured, and why the rest were not."""

    results: dict[int, Any] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)
    why: str = ""


def run_sizes(
    sizes: Sequence[int],
    measure: Callable[[int], tuple[float, Any]],
    budget: float,
) -> Outcome:
    """`measure(n)` for each size in turn -> (seconds it took, result).

    Once one size took more than `budget` seconds, or raised TimeoutError, the
    larger sizes are skipped.
    """
    outcome = Outcome()
    for index, n in enumerate(sizes):
        try:
            took, result = measure(n)
        except TimeoutError as exc:
            outcome.skipped = list(sizes[index:])
            outcome.why = f"N={n}: {exc}"
            return outcome
        outcome.results[n] = result
        if took > budget and index + 1 < len(sizes):
            outcome.skipped = list(sizes[index + 1 :])
            outcome.why = f"N={n} took {took:.0f} s, over the {budget:.0f} s budget"
            return outcome
    return outcome


def cache_variants(engine_cls: Any, runs: int) -> list[tuple[str, dict[str, int]]]:
    """The engine settings the memory case compares: [(label, Engine keywords)].

    With a `max_cached_runs` keyword: evicted (0) and a cache holding all `runs`
    (the default when it is large enough). Without: the engine as it is.
    """
    parameter = inspect.signature(engine_cls).parameters.get("max_cached_runs")
    if parameter is None:
        return [("no cache", {})]
    default = parameter.default
    warm: tuple[str, dict[str, int]]
    if isinstance(default, int) and default >= runs:
        warm = ("warm (default cache)", {})
    else:
        warm = (f"warm (max_cached_runs={runs})", {"max_cached_runs": runs})
    return [("evicted (max_cached_runs=0)", {"max_cached_runs": 0}), warm]


# -- places and engines ------------------------------------------------------------------


@contextlib.contextmanager
def place(places: Places, store: str, case: str) -> Iterator[str]:
    """A fresh store for one case, as the URL an Engine takes; removed afterwards."""
    if store == "memory":
        yield "memory://"
        return
    target, key = places.make("replaykit", store, case)
    try:
        if store == "sqlite":
            yield f"sqlite:///{target['path']}"
        else:
            url: str = target["url"]
            yield url + ("&" if "?" in url else "?") + f"schema={target['schema']}"
    finally:
        places.remove(key)


def progress(text: str) -> None:
    print(f"  .. {text}", file=sys.stderr, flush=True)


def timed_run(
    engine: Engine,
    wf: Any,
    args: tuple[Any, ...],
    workflow_id: str,
    label: str,
    timeout: float,
) -> float:
    """Wall seconds from `start` until the run finished, telling stderr how far it is.

    A run still going after `timeout` is cancelled and TimeoutError raised.
    """
    n = args[0]
    base = EXECUTED[0]
    began = time.perf_counter()
    handle = engine.start(wf, *args, workflow_id=workflow_id)
    while True:
        left = timeout - (time.perf_counter() - began)
        if left <= 0:
            with contextlib.suppress(Exception):
                engine.terminate(workflow_id)
            raise TimeoutError(f"not finished after {timeout:.0f} s ({EXECUTED[0] - base}/{n})")
        try:
            handle.result(timeout=min(PROGRESS_EVERY, left))
            return time.perf_counter() - began
        except TimeoutError:
            elapsed = time.perf_counter() - began
            progress(f"{label}: {EXECUTED[0] - base}/{n} steps after {elapsed:.0f} s")


# -- 1 and 2: sleep loops ----------------------------------------------------------------


def case_virtual(args: argparse.Namespace, places: Places, store: str) -> Outcome:
    def measure(n: int) -> tuple[float, dict[str, float]]:
        with place(places, store, "rt_virtual") as url:
            engine = Engine(url, clock=VirtualClock(autojump=True), app_version=VERSION)
            try:
                engine.run(plain_steps, 10, workflow_id="warm", timeout=args.timeout)
                plain = timed_run(
                    engine, plain_steps, (n,), f"plain-{n}", f"{store} plain N={n}", args.timeout
                )
                sleeping = timed_run(
                    engine,
                    sleep_loop,
                    (n, 60.0),
                    f"sleep-{n}",
                    f"{store} virtual sleep loop N={n}",
                    args.timeout,
                )
            finally:
                engine.close()
        return sleeping, {"plain_s": plain, "sleep_s": sleeping}

    return run_sizes(args.sizes, measure, args.budget)


def case_system(args: argparse.Namespace, places: Places, store: str) -> Outcome:
    def measure(n: int) -> tuple[float, dict[str, float]]:
        with place(places, store, "rt_system") as url:
            engine = Engine(url, app_version=VERSION)
            try:
                engine.run(plain_steps, 10, workflow_id="warm", timeout=args.timeout)
                took = timed_run(
                    engine,
                    sleep_loop,
                    (n, 0.001),
                    f"sleep-{n}",
                    f"{store} system sleep loop N={n}",
                    args.timeout,
                )
            finally:
                engine.close()
        return took, {"sleep_s": took}

    return run_sizes(args.sizes, measure, args.budget)


def print_virtual(store: str, outcome: Outcome) -> dict[str, Any]:
    rows = outcome.results
    summary: dict[str, Any] = {}
    for n, r in rows.items():
        value = ratio(r["sleep_s"], r["plain_s"])
        summary[f"N={n}"] = value
        print(
            f"  {store:8} N={n:<5} sleep loop {r['sleep_s']:8.3f} s   plain steps "
            f"{r['plain_s']:7.3f} s   ratio {value:7.1f}x   "
            f"({r['sleep_s'] / n * 1000:.2f} ms per Step+Sleep)"
        )
    sizes = sorted(rows)
    if len(sizes) >= 2:
        small, big = sizes[0], sizes[-1]
        times, linear, k = growth(small, rows[small]["sleep_s"], big, rows[big]["sleep_s"])
        summary.update(growth=times, linear=linear, exponent=k)
        print(
            f"  {store:8} sleep loop N={big} / N={small}: {times:.1f}x the time "
            f"(linear {linear:.0f}x; time ~ N^{k:.2f})"
        )
    skipped(store, outcome)
    return summary


def print_system(store: str, outcome: Outcome) -> dict[str, Any]:
    rows = outcome.results
    for n, r in rows.items():
        print(
            f"  {store:8} N={n:<5} {r['sleep_s']:8.3f} s   "
            f"({r['sleep_s'] / n * 1000:.2f} ms per Step+Sleep(0.001))"
        )
    summary: dict[str, Any] = {}
    sizes = sorted(rows)
    if len(sizes) >= 2:
        small, big = sizes[0], sizes[-1]
        times, linear, k = growth(small, rows[small]["sleep_s"], big, rows[big]["sleep_s"])
        summary = {"growth": times, "linear": linear, "exponent": k, "small": small, "big": big}
        print(
            f"  {store:8} N={big} / N={small}: {times:.1f}x the time "
            f"(linear would be {linear:.0f}x; time ~ N^{k:.2f})"
        )
    skipped(store, outcome)
    return summary


def skipped(store: str, outcome: Outcome) -> None:
    if outcome.skipped:
        sizes = ", ".join(f"N={n}" for n in outcome.skipped)
        print(f"  {store:8} skipped {sizes}: {outcome.why}")


# -- 4: memory per suspended run -----------------------------------------------------------


def memory_child(spec: dict[str, Any]) -> dict[str, Any]:
    """In a process of its own: what a suspended run holds (see bench.measure)."""
    mode = spec["mode"]
    if mode == "traced":
        tracemalloc.start()  # before the engine exists: every block it keeps is seen
    engine = Engine(spec["url"], app_version=VERSION, **spec["engine"])
    timeout = float(spec["timeout"])
    started: list[str] = []

    def start(prefix: str, count: int) -> float:
        began = time.perf_counter()
        for i in range(count):
            workflow_id = f"wait-{prefix}-{i}"
            engine.start(waiter, workflow_id=workflow_id)
            started.append(workflow_id)
        # Idle = every activation has run its step, reached its Recv and suspended.
        if not engine.wait_idle(timeout=timeout):
            raise TimeoutError("the runs did not all suspend")
        return time.perf_counter() - began

    metrics = measure_sleepers(start, spec["sleepers"], warm=spec["warm"], mode=mode)
    # Checked after the readings, so the checks' own allocations are not counted.
    pending = len(engine.list_workflows(status="PENDING"))
    if pending != len(started):
        raise AssertionError(f"{pending} runs are PENDING, expected {len(started)}")
    without = [wid for wid in started if not engine.steps(wid)]
    if without:
        raise AssertionError(f"{len(without)} suspended runs have no record, e.g. {without[0]}")
    engine.close(wait=False)
    return metrics


def run_memory_child(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_runtime", "--memory-child", json.dumps(spec)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the memory worker exited with {proc.returncode}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def case_memory(args: argparse.Namespace, places: Places, store: str) -> dict[str, Any]:
    runs = WARM_SLEEPERS + args.sleepers
    figures: dict[str, Any] = {}
    for label, keywords in cache_variants(Engine, runs):
        entry: dict[str, Any] = {}
        for mode in ("rss", "traced"):
            with place(places, store, "rt_memory") as url:
                spec = {
                    "url": url,
                    "mode": mode,
                    "engine": keywords,
                    "sleepers": args.sleepers,
                    "warm": WARM_SLEEPERS,
                    "timeout": args.timeout,
                }
                try:
                    entry.update(run_memory_child(spec, args.timeout))
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    entry.setdefault("error", []).append(f"{mode}: {exc}")
        figures[label] = entry
    return figures


def print_memory(store: str, figures: dict[str, Any], sleepers: int) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for label, entry in figures.items():
        if "error" in entry:
            print(f"  {store:8} {label}: failed ({'; '.join(entry['error'])})")
        rss = entry.get("bytes_per_sleeper_rss")
        py = entry.get("bytes_per_sleeper_py")
        summary[label] = {"rss": rss, "py": py}
        print(
            f"  {store:8} {label:30} RSS {_kib(rss)} per run (over the second "
            f"{sleepers - sleepers // 2}; {_kib(entry.get('bytes_per_sleeper_rss_all'))} over "
            f"all {sleepers})   Python heap {_kib(py)} per run   "
            f"threads +{entry.get('threads_per_sleeper', 0):.3f} per run   "
            f"{entry.get('ms_per_start', float('nan')):.2f} ms per start"
        )
    labels = list(figures)
    if len(labels) == 2:
        evicted, warm = (summary[label] for label in labels)
        for key, name in (("rss", "RSS"), ("py", "Python heap")):
            value = ratio(warm[key], evicted[key])
            if value is not None:
                print(f"  {store:8} warm / evicted, {name}: {value:.2f}x")
    else:
        print(f"  {store:8} (this Engine has no max_cached_runs: bytes per sleeper, no cache)")
    return summary


def _kib(value: float | None) -> str:
    return "    n/a" if value is None else f"{value / 1024:6.2f} KiB"


# -- 5: enqueue and drain ----------------------------------------------------------------


def drain_once(
    args: argparse.Namespace, url: str, many: bool, watch_store: bool = False
) -> dict[str, float]:
    count = args.enqueue
    # Two engines on one memory store share the store object, not a URL.
    target: str | Store = MemoryStore() if url == "memory://" else url
    producer = Engine(target, queues=[], executor_id="producer", app_version=VERSION)
    try:
        began = time.perf_counter()
        if many:
            enqueue_many = getattr(producer, ENQUEUE_MANY)  # today's Engine has none
            enqueue_many(RT_QUEUE, one_step, [(i,) for i in range(count)])
        else:
            for i in range(count):
                producer.enqueue(RT_QUEUE, one_step, i)
        enqueue_s = time.perf_counter() - began
        ids = [row.workflow_id for row in producer.list_workflows(name=one_step.workflow_name)]
        if len(ids) != count:
            raise AssertionError(f"{len(ids)} runs enqueued, expected {count}")
        began = time.perf_counter()
        consumer = Engine(target, queues=[RT_QUEUE], executor_id="consumer", app_version=VERSION)
        open_s = time.perf_counter() - began
        try:
            deadline = began + args.timeout
            if watch_store:
                unfinished = [Status.ENQUEUED, Status.PENDING]
                while producer.list_workflows(status=unfinished, limit=1):
                    if time.perf_counter() > deadline:
                        raise TimeoutError(f"the queue was not drained in {args.timeout}s")
                    time.sleep(0.005)
                drain_s = time.perf_counter() - began
                if len(producer.list_workflows(status=Status.SUCCESS, limit=count)) != count:
                    raise AssertionError("the drained runs did not all succeed")
            else:
                for workflow_id in ids:
                    consumer.handle(workflow_id).result(
                        timeout=max(deadline - time.perf_counter(), 0.1)
                    )
                drain_s = time.perf_counter() - began
        finally:
            consumer.close()
    finally:
        producer.close()
    return {
        "enqueue_s": enqueue_s,
        "enqueue_per_s": count / enqueue_s,
        "open_s": open_s,
        "drain_s": drain_s,
        "drain_per_s": count / drain_s,
    }


def case_enqueue(args: argparse.Namespace, places: Places, store: str) -> dict[str, Any]:
    modes = ["enqueue"] + ([ENQUEUE_MANY, WATCHED] if hasattr(Engine, ENQUEUE_MANY) else [])
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for rep in range(args.repeat):
        for mode in modes if rep % 2 == 0 else modes[::-1]:  # alternate who goes first
            with place(places, store, "rt_enqueue") as url:
                samples[mode].append(
                    drain_once(args, url, many=mode != "enqueue", watch_store=mode == WATCHED)
                )
    return {
        mode: {key: statistics.median(s[key] for s in reps) for key in reps[0]}
        for mode, reps in samples.items()
    }


def print_enqueue(store: str, figures: dict[str, Any], count: int) -> dict[str, Any]:
    for mode, f in figures.items():
        call = {
            "enqueue": f"{count} x enqueue(queue, wf, i)",
            ENQUEUE_MANY: f"enqueue_many(queue, wf, [(i,) ... x{count}])",
            WATCHED: "the same, drain seen in the store",
        }[mode]
        print(
            f"  {store:8} {call:42} enqueue {f['enqueue_s']:6.2f} s ({f['enqueue_per_s']:7.0f}/s)"
            f"   drain {f['drain_s']:6.2f} s = {f['drain_per_s']:6.0f} wf/s "
            f"(engine opened in {f['open_s'] * 1000:.0f} ms)"
        )
    summary = {mode: f["drain_per_s"] for mode, f in figures.items()}
    if "enqueue_many" in figures:
        e, m = figures["enqueue"], figures["enqueue_many"]
        print(
            f"  {store:8} enqueue_many / enqueue: enqueue rate "
            f"{ratio(m['enqueue_per_s'], e['enqueue_per_s']):.2f}x, "
            f"enqueue+drain wf/s {ratio(_total_rate(m, count), _total_rate(e, count)):.2f}x"
        )
    else:
        print(f"  {store:8} (this Engine has no enqueue_many: one enqueue call per workflow)")
    return summary


def _total_rate(f: dict[str, float], count: int) -> float:
    return count / (f["enqueue_s"] + f["drain_s"])


# -- main ------------------------------------------------------------------------------


Report = Callable[[argparse.Namespace, Places, str], dict[str, Any]]


def report_virtual(args: argparse.Namespace, places: Places, store: str) -> dict[str, Any]:
    return print_virtual(store, case_virtual(args, places, store))


def report_system(args: argparse.Namespace, places: Places, store: str) -> dict[str, Any]:
    return print_system(store, case_system(args, places, store))


def report_memory(args: argparse.Namespace, places: Places, store: str) -> dict[str, Any]:
    return print_memory(store, case_memory(args, places, store), args.sleepers)


def report_enqueue(args: argparse.Namespace, places: Places, store: str) -> dict[str, Any]:
    return print_enqueue(store, case_enqueue(args, places, store), args.enqueue)


def titles(args: argparse.Namespace) -> dict[str, tuple[str, Report | None]]:
    """Each case: (its heading, what measures and prints it on one store, or None)."""
    return {
        "virtual": (
            "1. sleep loop, virtual clock: N x (Step + Sleep(60)), VirtualClock(autojump),\n"
            "   against N plain steps on the same engine (ratio of wall times)",
            report_virtual,
        ),
        "system": (
            "2. sleep loop, system clock: N x (Step + Sleep(0.001)), largest N / smallest",
            report_system,
        ),
        "concurrent": (
            "3. concurrent: the suite's case (python -m bench --cases concurrent), not here",
            None,
        ),
        "memory": (
            f"4. warm run memory: {args.sleepers} runs suspended in Recv after one Step "
            f"(+{WARM_SLEEPERS} before the first reading), a process per reading",
            report_memory,
        ),
        "enqueue": (
            f"5. enqueue and drain: {args.enqueue} one-step workflows, one draining engine, "
            f"median of {args.repeat}",
            report_enqueue,
        ),
    }


def guarded(report: Report, args: argparse.Namespace, places: Places, store: str) -> Any:
    """Run and print one case on one store; a failure is printed, and the next store runs."""
    try:
        return report(args, places, store)
    except Exception as exc:
        print(f"  {store:8} failed: {type(exc).__name__}: {exc}")
        return {"failed": f"{type(exc).__name__}: {exc}"}


def header(stores: Sequence[str]) -> None:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    cpus = os.cpu_count() or 1
    print(f"replaykit from {Path(replaykit.__file__).parent}")
    print(
        f"Python {platform.python_version()}, {cpus} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; stores: {', '.join(stores)}"
    )
    cache = inspect.signature(Engine).parameters.get("max_cached_runs")
    print(
        f"Engine.enqueue_many: {'yes' if hasattr(Engine, ENQUEUE_MANY) else 'no'};  "
        "Engine(max_cached_runs=...): "
        + ("no" if cache is None else f"yes, default {cache.default!r}")
    )
    if load[0] > cpus / 2:
        print(f"warning: the machine is busy (load {load[0]:.2f} on {cpus} CPUs)")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--memory-child":
        print(json.dumps(memory_child(json.loads(sys.argv[2]))), flush=True)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--quick", action="store_true", help="N=250,500, 500 sleepers, 1 repeat")
    parser.add_argument("--n", help="sleep-loop sizes (default 250,2000; quick 250,500)")
    parser.add_argument("--sleepers", type=int, help="suspended runs (default 2000; quick 500)")
    parser.add_argument("--enqueue", type=int, default=500, help="workflows enqueued")
    parser.add_argument("--repeat", type=int, help="drains per mode (default 3; quick 1)")
    parser.add_argument("--budget", type=float, default=120.0, help="s a size may take")
    parser.add_argument("--timeout", type=float, default=600.0, help="s a run may take")
    parser.add_argument("--cases", default="virtual,system,memory,enqueue")
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args()
    args.sizes = parse_sizes(args.n or ("250,500" if args.quick else "250,2000"))
    args.sleepers = args.sleepers or (500 if args.quick else 2000)
    args.repeat = args.repeat or (1 if args.quick else 3)
    stores = [s for s in args.stores.split(",") if s]
    unknown = set(stores) - set(STORES)
    if unknown:
        parser.error(f"unknown stores: {', '.join(sorted(unknown))}")
    cases = [c for c in args.cases.split(",") if c]

    header(stores)
    if "postgres" in stores:
        version, why = check_postgres(args.pg)
        if version is None:
            print(f"postgres: unavailable ({why})")
            stores.remove("postgres")
        else:
            print(f"PostgreSQL {version} at {args.pg}")
    places = Places(args.pg)
    summary: dict[str, dict[str, Any]] = {}
    try:
        for name, (title, report) in titles(args).items():
            if name not in cases and report is not None:
                continue
            print(f"\n{title}")
            if report is None:
                continue
            for store in stores:
                summary.setdefault(name, {})[store] = guarded(report, args, places, store)
    finally:
        places.remove_all()
    print("\nsummary (json):")
    print(json.dumps(rounded(summary), sort_keys=True))


def rounded(value: Any, digits: int = 3) -> Any:
    """`value` with every float rounded to `digits` significant digits (for the summary)."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item, digits) for item in value]
    return value


if __name__ == "__main__":
    main()
