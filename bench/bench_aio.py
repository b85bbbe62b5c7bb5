"""Asyncio figures: AsyncEngine's concurrent throughput, the event loop's lag while it
works, and what sleeping runs hold — each against a baseline measured in the same run.

    python -m bench.bench_aio [--n 1000] [--steps 10] [--sleepers 10000] [--quick]
        [--repeat 3] [--cases throughput,lag,sleepers] [--stores sqlite,postgres]
        [--timeout 600] [--pg URL]

Nothing is asserted; the targets (from the issue) are printed beside the figures.
Every run gets a fresh PostgreSQL schema or database (dropped afterwards) or a fresh
SQLite file in a temporary folder.

1. concurrent throughput on PostgreSQL: `--n` workflows (default 1000; `--quick` 100)
   of `--steps` trivial steps (default 10), all started from one coroutine
   (`asyncio.gather` of `engine.start(...)`, then a gather of `handle.result()`),
   under `AsyncEngine`, once with `async def` step bodies and once with plain `def`
   ones: steps/s from the first start until the last result. Baselines: (a) the sync
   `Engine` doing the same work with plain bodies (every `start` from one thread, then
   every `result()`), and (b) DBOS Transact's async API
   (`DBOS.start_workflow_async` of an async workflow of `--steps` async `@DBOS.step()`s,
   then awaiting each `handle.get_result()`), in a process of its own on a fresh
   database of the same server. The replaykit runs repeat `--repeat` times (default 3;
   quick 1), in rotating order, and their medians are printed; DBOS runs once (it is
   the slow one). Each run first does a tenth of its size, untimed, on the same engine.
   Ratios: AsyncEngine / sync Engine (target >= 1x) and AsyncEngine / DBOS (target
   >= 10x).
2. event-loop lag: a ticker task on the loop that sleeps 1 ms in a loop and records how
   late each tick wakes (wake time - (sleep start + 1 ms)); p50, p99 and max in ms,
   while one more run of case 1 goes under AsyncEngine (each body kind; its steps/s
   printed too, as the ticker shares the loop), against the same ticker on an idle
   loop, and on a loop idle itself while the sync `Engine` does case 1's work on its
   threads (what the GIL alone costs the loop). Target: p99 <= 10 ms.
3. sleeping runs: `--sleepers` runs (default 10000; quick 1000) that each do one async
   step and then wait — in `Sleep(3600)` (past the warm horizon: evicted) and in
   `Recv` (kept warm) — started under AsyncEngine with a gather of `engine.start`,
   after 200 untimed ones, on SQLite and on PostgreSQL (`--stores`). Once every run is
   suspended (`AsyncEngine.wait_idle`: the scheduler is not busy), the asyncio tasks
   (`len(asyncio.all_tasks())`) and threads (`threading.active_count()`) before the
   sleepers (after the 200), with half of them and with all (the engine's thread pools
   may still be growing towards their sizes: a plateau, not a thread per sleeper), and
   the bytes per sleeper: RSS growth (/proc/self/statm, over the second half, no
   tracing) and Python heap growth (tracemalloc started before the engine), each in a
   process of its own (bench.measure.measure_sleepers, driven from a thread while the
   loop serves the engine). Target: no task and no thread per sleeper, <= 2 KiB per
   sleeper.

Progress goes to stderr, the figures to stdout, a JSON summary last.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
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
from pathlib import Path
from typing import Any

import replaykit
from bench.bench_runtime import ratio, rounded
from bench.measure import measure_sleepers
from bench.places import Places, check_postgres
from replaykit import AsyncEngine, Engine, Recv, Sleep, Step, workflow

__all__ = [
    "Ticker",
    "aio_throughput",
    "dbos_child",
    "dbos_throughput",
    "idle_lag",
    "lag_beside_sync",
    "main",
    "percentiles",
    "sleepers_child",
    "sync_throughput",
]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PG = os.environ.get(
    "REPLAYKIT_BENCH_PG",
    os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test"),
)
VERSION = "bench-aio"
TICK = 0.001
WARM_SLEEPERS = 200
SLEEP_SECONDS = 3600.0
STORES = ("sqlite", "postgres")
WAITS = ("sleep", "recv")
CASES = ("throughput", "lag", "sleepers")


# -- workflows ---------------------------------------------------------------------------


async def async_body(i: int) -> int:
    return i + 1


def sync_body(i: int) -> int:
    return i + 1


@workflow(name="bench-aio-async-steps")
def async_steps(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("s", async_body, i)
    return total


@workflow(name="bench-aio-sync-steps")
def sync_steps(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("s", sync_body, i)
    return total


@workflow(name="bench-aio-sleeper")
def sleeper() -> Generator[Any, Any, None]:
    yield Step("s", async_body, 0)
    yield Sleep(SLEEP_SECONDS)


@workflow(name="bench-aio-receiver")
def receiver() -> Generator[Any, Any, Any]:
    yield Step("s", async_body, 0)
    message = yield Recv("go")
    return message


BODIES = {"async": async_steps, "sync": sync_steps}
SLEEPERS = {"sleep": sleeper, "recv": receiver}


def expected_total(steps: int) -> int:
    """What a workflow of `steps` trivial steps returns: 1 + 2 + ... + steps."""
    return steps * (steps + 1) // 2


# -- arithmetic (tests/test_bench_aio.py) -------------------------------------------------


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max of `values` (nearest rank), and their count; NaN when empty."""
    if not values:
        nan = float("nan")
        return {"count": 0, "p50": nan, "p99": nan, "max": nan}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return {"count": len(ordered), "p50": rank(0.50), "p99": rank(0.99), "max": ordered[-1]}


def steps_per_s(workflows: int, steps: int, total_s: float) -> float:
    return workflows * steps / total_s if total_s > 0 else float("nan")


# -- places ------------------------------------------------------------------------------


@contextlib.contextmanager
def place(places: Places, store: str, case: str, system: str = "replaykit") -> Iterator[str]:
    """A fresh store for one run, as the URL its engine (or DBOS) takes; removed afterwards."""
    target, key = places.make(system, store, case)
    try:
        if store == "sqlite":
            yield f"sqlite:///{target['path']}"
        elif system == "dbos":
            yield str(target["url"])
        else:
            url: str = target["url"]
            yield url + ("&" if "?" in url else "?") + f"schema={target['schema']}"
    finally:
        places.remove(key)


def progress(text: str) -> None:
    print(f"  .. {text}", file=sys.stderr, flush=True)


# -- 2: the ticker -----------------------------------------------------------------------


class Ticker:
    """A task that sleeps `period` seconds in a loop and records how late each wake-up is.

    `async with Ticker() as ticker:` runs it for the body; `ticker.figures()` are the
    lags in milliseconds (see `percentiles`).
    """

    def __init__(self, period: float = TICK) -> None:
        self.period = period
        self.lags: list[float] = []
        self._stop = False
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        period, lags, clock = self.period, self.lags, time.perf_counter
        while not self._stop:
            began = clock()
            await asyncio.sleep(period)
            lags.append(max(0.0, clock() - began - period))

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)  # the first tick is under way before the body begins
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stop = True
        if self._task is not None:
            await self._task

    def figures(self) -> dict[str, float]:
        found = percentiles(self.lags)
        return {key: value if key == "count" else value * 1000 for key, value in found.items()}


async def idle_lag(seconds: float) -> dict[str, float]:
    """The ticker on a loop that does nothing else, for `seconds`."""
    async with Ticker() as ticker:
        await asyncio.sleep(seconds)
    return ticker.figures()


# -- 1: throughput -----------------------------------------------------------------------


async def aio_throughput(
    url: str,
    body: str,
    workflows: int,
    steps: int,
    *,
    timeout: float,
    lag: bool = False,
    warm: bool = True,
) -> dict[str, Any]:
    """`workflows` runs of `steps` steps with `body` ("async"/"sync") bodies under one
    AsyncEngine: every start gathered, then every result. With `lag`, the ticker runs
    on the loop meanwhile and its figures come back as "lag_ms"."""
    wf = BODIES[body]
    async with AsyncEngine(url, app_version=VERSION) as engine:
        if warm:
            await _aio_batch(engine, wf, "warm", max(1, workflows // 10), steps, timeout)
        ticker = Ticker() if lag else None
        async with ticker if ticker is not None else contextlib.nullcontext():
            figures = await _aio_batch(engine, wf, "run", workflows, steps, timeout)
    if ticker is not None:
        figures["lag_ms"] = ticker.figures()
    return figures


async def _aio_batch(
    engine: AsyncEngine, wf: Any, tag: str, workflows: int, steps: int, timeout: float
) -> dict[str, Any]:
    async def go() -> float:
        handles = await asyncio.gather(
            *(
                # Each body has ids of its own: one id names one run, of one workflow.
                engine.start(wf, steps, workflow_id=f"{tag}-{wf.workflow_name}-{w}")
                for w in range(workflows)
            )
        )
        started = time.perf_counter()
        results = await asyncio.gather(*(handle.result() for handle in handles))
        if results != [expected_total(steps)] * workflows:
            raise AssertionError(f"unexpected results, e.g. {results[:3]}")
        return started

    began = time.perf_counter()
    started = await asyncio.wait_for(go(), timeout)
    total = time.perf_counter() - began
    return _figures(workflows, steps, total, started - began)


def sync_throughput(
    url: str, workflows: int, steps: int, *, timeout: float, warm: bool = True
) -> dict[str, Any]:
    """The same work under the sync Engine (plain bodies): every start from this
    thread, then every result."""
    with Engine(url, app_version=VERSION) as engine:
        if warm:
            _sync_batch(engine, "warm", max(1, workflows // 10), steps, timeout)
        return _sync_batch(engine, "run", workflows, steps, timeout)


def _sync_batch(
    engine: Engine, tag: str, workflows: int, steps: int, timeout: float
) -> dict[str, Any]:
    began = time.perf_counter()
    handles = [
        engine.start(sync_steps, steps, workflow_id=f"{tag}-{sync_steps.workflow_name}-{w}")
        for w in range(workflows)
    ]
    started = time.perf_counter()
    deadline = began + timeout
    for handle in handles:
        value = handle.result(timeout=max(deadline - time.perf_counter(), 0.1))
        if value != expected_total(steps):
            raise AssertionError(f"{handle.workflow_id} returned {value!r}")
    total = time.perf_counter() - began
    return _figures(workflows, steps, total, started - began)


def _figures(workflows: int, steps: int, total: float, start_s: float) -> dict[str, Any]:
    return {
        "workflows": workflows,
        "steps": workflows * steps,
        "total_s": total,
        "start_s": start_s,
        "steps_per_s": steps_per_s(workflows, steps, total),
    }


async def lag_beside_sync(
    url: str, workflows: int, steps: int, *, timeout: float
) -> dict[str, Any]:
    """The ticker on this loop while the sync Engine does case 1's work on other threads."""
    async with Ticker() as ticker:
        figures = await asyncio.to_thread(sync_throughput, url, workflows, steps, timeout=timeout)
    figures["lag_ms"] = ticker.figures()
    return figures


# -- 1b: DBOS, in a process of its own -----------------------------------------------------


def dbos_child(spec: dict[str, Any]) -> dict[str, Any]:
    """DBOS's async API doing case 1's work (DBOS is a process-wide singleton)."""
    from importlib.metadata import version

    from dbos import DBOS, DBOSConfig, SetWorkflowID

    @DBOS.step()
    async def dbos_body(i: int) -> int:
        return i + 1

    @DBOS.workflow()
    async def dbos_steps(n: int) -> int:
        total = 0
        for i in range(n):
            total += await dbos_body(i)
        return total

    workflows, steps, timeout = spec["workflows"], spec["steps"], float(spec["timeout"])

    async def batch(tag: str, count: int) -> dict[str, Any]:
        async def start(w: int) -> Any:
            with SetWorkflowID(f"{tag}-{w}"):
                return await DBOS.start_workflow_async(dbos_steps, steps)

        async def go() -> float:
            handles = await asyncio.gather(*(start(w) for w in range(count)))
            started = time.perf_counter()
            results = await asyncio.gather(*(handle.get_result() for handle in handles))
            if results != [expected_total(steps)] * count:
                raise AssertionError(f"unexpected results, e.g. {results[:3]}")
            return started

        began = time.perf_counter()
        started = await asyncio.wait_for(go(), timeout)
        return _figures(count, steps, time.perf_counter() - began, started - began)

    async def run() -> dict[str, Any]:
        config: DBOSConfig = {
            "name": "replaykit-bench",
            "system_database_url": spec["url"],
            "log_level": "WARNING",
            "application_version": "bench",
        }
        DBOS(config=config)
        DBOS.launch()
        try:
            if spec.get("warm", True):
                await batch("warm", max(1, workflows // 10))
            figures = await batch("run", workflows)
        finally:
            DBOS.destroy()
        figures["version"] = version("dbos")
        return figures

    return asyncio.run(run())


def run_child(flag: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """`python -m bench.bench_aio <flag> <spec>` in a process of its own: its last line."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_aio", flag, json.dumps(spec)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the {flag[2:]} process exited with {proc.returncode}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def dbos_throughput(url: str, workflows: int, steps: int, *, timeout: float) -> dict[str, Any]:
    spec = {"url": url, "workflows": workflows, "steps": steps, "timeout": timeout}
    return run_child("--dbos-child", spec, timeout + 60)


# -- 3: sleepers -----------------------------------------------------------------------------


def sleepers_child(spec: dict[str, Any]) -> dict[str, Any]:
    """In a process of its own: what suspended runs hold under AsyncEngine."""
    if spec["mode"] == "traced":
        tracemalloc.start()  # before the engine exists: every block it keeps is seen
    return asyncio.run(_sleepers(spec))


async def _sleepers(spec: dict[str, Any]) -> dict[str, Any]:
    wf = SLEEPERS[spec["wait"]]
    timeout = float(spec["timeout"])
    loop = asyncio.get_running_loop()
    counts: dict[str, dict[str, int]] = {}

    def count(label: str) -> None:
        counts[label] = {"tasks": len(asyncio.all_tasks()), "threads": threading.active_count()}

    count("before_engine")
    async with AsyncEngine(spec["url"], app_version=VERSION) as engine:
        count("engine_open")
        started: list[str] = []

        async def start_batch(prefix: str, how_many: int) -> float:
            count(f"before_{prefix}")
            ids = [f"{spec['wait']}-{prefix}-{i}" for i in range(how_many)]
            began = time.perf_counter()
            await asyncio.gather(*(engine.start(wf, workflow_id=wid) for wid in ids))
            # Idle = every run has done its step, reached its wait and suspended.
            if not await engine.wait_idle(timeout=timeout):
                raise TimeoutError(f"the {prefix} batch did not all suspend")
            took = time.perf_counter() - began
            started.extend(ids)
            await asyncio.sleep(0)  # the gathered tasks are done: let them go
            count(f"after_{prefix}")
            return took

        def start(prefix: str, how_many: int) -> float:
            # measure_sleepers is blocking: it runs on a thread, and each batch on the loop.
            return asyncio.run_coroutine_threadsafe(start_batch(prefix, how_many), loop).result()

        metrics: dict[str, Any] = await asyncio.to_thread(
            measure_sleepers, start, spec["sleepers"], WARM_SLEEPERS, spec["mode"]
        )
        # Checked after the readings, so the checks' own allocations are not counted.
        pending = await engine.list_workflows(status="PENDING")
        if len(pending) != len(started):
            raise AssertionError(f"{len(pending)} runs are PENDING, expected {len(started)}")
        metrics["counts"] = counts
        metrics["warm_runs"] = engine.engine.scheduler.warm_count()
        await engine.close(wait=False)
    return metrics


def case_sleepers(
    args: argparse.Namespace, places: Places, store: str, wait: str
) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for mode in ("rss", "traced"):
        with place(places, store, "aio_sleep") as url:
            spec = {
                "url": url,
                "mode": mode,
                "wait": wait,
                "sleepers": args.sleepers,
                "timeout": args.timeout,
            }
            progress(f"{store} {wait}: {args.sleepers} sleepers, {mode}")
            try:
                figures = run_child("--sleepers-child", spec, args.timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                entry.setdefault("error", []).append(f"{mode}: {exc}")
                continue
            counts = figures.pop("counts")
            entry.update(figures)
            entry[f"counts_{mode}"] = counts
    return entry


def print_sleepers(store: str, wait: str, entry: dict[str, Any], sleepers: int) -> dict[str, Any]:
    label = f"{store:8} {'Sleep(3600)' if wait == 'sleep' else 'Recv':11}"
    if "error" in entry:
        print(f"  {label} failed: {'; '.join(entry['error'])}")
    rss, py = entry.get("bytes_per_sleeper_rss"), entry.get("bytes_per_sleeper_py")
    counts = entry.get("counts_rss", {})
    summary: dict[str, Any] = {"rss": rss, "py": py, "warm_runs": entry.get("warm_runs")}
    if rss is not None or py is not None:
        print(
            f"  {label} RSS {_kib(rss)} per sleeper (over the second "
            f"{sleepers - sleepers // 2}; {_kib(entry.get('bytes_per_sleeper_rss_all'))} over "
            f"all {sleepers})   Python heap {_kib(py)} per sleeper   "
            f"{entry.get('ms_per_start', float('nan')):.2f} ms per start   "
            f"{entry.get('warm_runs', '?')} warm runs"
        )
    before, half, after = counts.get("before_a"), counts.get("after_a"), counts.get("after_b")
    if before and half and after:
        tasks = after["tasks"] - before["tasks"]
        threads = after["threads"] - before["threads"]
        summary.update(tasks_added=tasks, threads_added=threads)
        print(
            f"  {label} asyncio tasks {before['tasks']} -> {half['tasks']} -> {after['tasks']} "
            f"({tasks:+d}), threads {before['threads']} -> {half['threads']} -> "
            f"{after['threads']} ({threads:+d}) from before the sleepers to half of them to "
            f"all {sleepers}   (before the engine: {_counts(counts, 'before_engine')}; engine "
            f"open: {_counts(counts, 'engine_open')})"
        )
    for key, name in ((rss, "RSS"), (py, "Python heap")):
        if key is not None:
            print(f"  {label} {name} per sleeper <= 2 KiB: {_met(key <= 2048)}")
    return summary


def _counts(counts: dict[str, dict[str, int]], key: str) -> str:
    found = counts.get(key)
    return "?" if found is None else f"{found['tasks']} tasks, {found['threads']} threads"


def _kib(value: float | None) -> str:
    return "    n/a" if value is None else f"{value / 1024:6.2f} KiB"


def _met(met: bool) -> str:
    return "met" if met else "MISSED"


# -- printing cases 1 and 2 ------------------------------------------------------------------


LABELS = {
    "aio-async": "AsyncEngine, async def bodies",
    "aio-sync": "AsyncEngine, def bodies",
    "sync": "sync Engine, def bodies",
    "dbos": "DBOS async API, async steps",
}


def case_throughput(args: argparse.Namespace, places: Places) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {key: [] for key in LABELS}
    order = ["aio-async", "aio-sync", "sync"]
    for rep in range(args.repeat):
        shift = rep % len(order)
        for system in order[shift:] + order[:shift]:  # rotate who goes first
            progress(f"rep {rep + 1}/{args.repeat}: {LABELS[system]}")
            with place(places, "postgres", "aio_conc") as url:
                runs[system].append(_one(args, system, url))
    progress(f"{LABELS['dbos']} (a process of its own)")
    with place(places, "postgres", "aio_conc", system="dbos") as url:
        try:
            runs["dbos"].append(dbos_throughput(url, args.n, args.steps, timeout=args.timeout))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            runs["dbos"].append({"error": str(exc)})
    return runs


def _one(args: argparse.Namespace, system: str, url: str) -> dict[str, Any]:
    try:
        if system == "sync":
            return sync_throughput(url, args.n, args.steps, timeout=args.timeout)
        body = system.removeprefix("aio-")
        return asyncio.run(aio_throughput(url, body, args.n, args.steps, timeout=args.timeout))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def print_throughput(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> Any:
    medians: dict[str, float | None] = {}
    for system, reps in runs.items():
        good = [r for r in reps if "error" not in r]
        for r in reps:
            if "error" in r:
                print(f"  {LABELS[system]:32} failed: {r['error']}")
        if not good:
            medians[system] = None
            continue
        rates = [r["steps_per_s"] for r in good]
        medians[system] = median = statistics.median(rates)
        spread = f"  (runs: {', '.join(f'{x:.0f}' for x in rates)})" if len(rates) > 1 else ""
        mid = min(good, key=lambda r: abs(r["steps_per_s"] - median))
        print(
            f"  {LABELS[system]:32} {median:8.0f} steps/s   {mid['total_s']:6.2f} s for "
            f"{mid['steps']} steps, the starts done after {mid['start_s']:.2f} s{spread}"
        )
    summary: dict[str, Any] = {"steps_per_s": medians}
    for body in ("async", "sync"):
        aio = medians.get(f"aio-{body}")
        to_sync, to_dbos = ratio(aio, medians.get("sync")), ratio(aio, medians.get("dbos"))
        summary[f"aio_{body}_to_sync"], summary[f"aio_{body}_to_dbos"] = to_sync, to_dbos
        print(
            f"  AsyncEngine ({body} bodies) / sync Engine: {_x(to_sync)} (target >= 1x: "
            f"{_judge(to_sync, 1.0)})   / DBOS: {_x(to_dbos)} (target >= 10x: "
            f"{_judge(to_dbos, 10.0)})"
        )
    version = next((r.get("version") for r in runs["dbos"] if "version" in r), None)
    if version:
        print(f"  (DBOS Transact {version}, one run; replaykit: median of {args.repeat})")
    return summary


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _judge(value: float | None, target: float) -> str:
    return "n/a" if value is None else _met(value >= target)


def case_lag(args: argparse.Namespace, places: Places) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    progress(f"idle loop, {args.idle:.1f} s")
    found["idle"] = {"lag_ms": asyncio.run(idle_lag(args.idle))}
    for body in ("async", "sync"):
        progress(f"lag: AsyncEngine, {body} bodies")
        with place(places, "postgres", "aio_lag") as url:
            found[f"aio-{body}"] = _guard(
                functools.partial(_run_lagged, url, body, args.n, args.steps, timeout=args.timeout)
            )
    progress("lag: the loop idle while the sync Engine works")
    with place(places, "postgres", "aio_lag") as url:
        found["beside-sync"] = _guard(
            lambda: asyncio.run(lag_beside_sync(url, args.n, args.steps, timeout=args.timeout))
        )
    return found


def _run_lagged(
    url: str, body: str, workflows: int, steps: int, *, timeout: float
) -> dict[str, Any]:
    """`aio_throughput` with the lag ticker, on a loop of its own."""
    return asyncio.run(aio_throughput(url, body, workflows, steps, timeout=timeout, lag=True))


def _guard(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return fn()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


LAG_LABELS = {
    "idle": "idle loop (baseline)",
    "aio-async": "AsyncEngine, async def bodies",
    "aio-sync": "AsyncEngine, def bodies",
    "beside-sync": "idle loop, sync Engine on threads",
}


def print_lag(found: dict[str, dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for key, entry in found.items():
        label = LAG_LABELS[key]
        if "error" in entry:
            print(f"  {label:34} failed: {entry['error']}")
            continue
        lag = entry["lag_ms"]
        summary[key] = {k: lag[k] for k in ("p50", "p99", "max")}
        rate = (
            f"   during {entry['steps']} steps at {entry['steps_per_s']:.0f} steps/s"
            if "steps_per_s" in entry
            else ""
        )
        target = "" if key == "idle" else f"   p99 <= 10 ms: {_met(lag['p99'] <= 10.0)}"
        print(
            f"  {label:34} p50 {lag['p50']:6.2f} ms  p99 {lag['p99']:6.2f} ms  "
            f"max {lag['max']:7.2f} ms  ({lag['count']} ticks){rate}{target}"
        )
    return summary


# -- main ------------------------------------------------------------------------------------


def header(args: argparse.Namespace) -> None:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    cpus = os.cpu_count() or 1
    print(f"replaykit from {Path(replaykit.__file__).parent}")
    print(
        f"Python {platform.python_version()}, {cpus} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(
        f"sizes: {args.n} workflows x {args.steps} steps, {args.sleepers} sleepers, "
        f"{args.repeat} repeat(s)"
    )
    if load[0] > cpus / 2:
        print(f"warning: the machine is busy (load {load[0]:.2f} on {cpus} CPUs)")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] in ("--dbos-child", "--sleepers-child"):
        child = dbos_child if sys.argv[1] == "--dbos-child" else sleepers_child
        result = child(json.loads(sys.argv[2]))
        print(json.dumps(result), flush=True)
        sys.stderr.flush()
        os._exit(0)  # leave without joining threads (thousands of suspended runs, DBOS's)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 workflows, 1000 sleepers")
    parser.add_argument("--n", type=int, help="concurrent workflows (default 1000; quick 100)")
    parser.add_argument("--steps", type=int, default=10, help="steps per workflow")
    parser.add_argument("--sleepers", type=int, help="sleeping runs (default 10000; quick 1000)")
    parser.add_argument("--repeat", type=int, help="replaykit runs per system (3; quick 1)")
    parser.add_argument("--idle", type=float, default=2.0, help="s the idle ticker runs")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--stores", default=",".join(STORES), help="stores of case 3")
    parser.add_argument("--waits", default=",".join(WAITS), help="waits of case 3")
    parser.add_argument("--timeout", type=float, default=600.0, help="s a run may take")
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args()
    args.n = args.n or (100 if args.quick else 1000)
    args.sleepers = args.sleepers or (1000 if args.quick else 10_000)
    args.repeat = args.repeat or (1 if args.quick else 3)
    cases = [c for c in args.cases.split(",") if c]
    stores = [s for s in args.stores.split(",") if s]
    waits = [w for w in args.waits.split(",") if w]
    for given, known, what in ((cases, CASES, "cases"), (stores, STORES, "stores")):
        unknown = set(given) - set(known)
        if unknown:
            parser.error(f"unknown {what}: {', '.join(sorted(unknown))}")
    if set(waits) - set(WAITS):
        parser.error(f"unknown waits: {', '.join(sorted(set(waits) - set(WAITS)))}")

    began = time.perf_counter()
    header(args)
    version, why = check_postgres(args.pg)
    if version is None:
        print(f"postgres: unavailable ({why}); cases 1 and 2 need it")
        cases = [c for c in cases if c == "sleepers"]
        stores = [s for s in stores if s != "postgres"]
    else:
        print(f"PostgreSQL {version} at {args.pg}")
    places = Places(args.pg)
    summary: dict[str, Any] = {}
    try:
        if "throughput" in cases:
            print(
                f"\n1. concurrent throughput on PostgreSQL: {args.n} workflows x {args.steps} "
                "steps started at once (steps/s from the first start to the last result)"
            )
            summary["throughput"] = print_throughput(case_throughput(args, places), args)
        if "lag" in cases:
            print(
                f"\n2. event-loop lag: a {TICK * 1000:.0f} ms ticker on the loop, how late "
                f"each tick wakes (case 1's work, once more)"
            )
            summary["lag"] = print_lag(case_lag(args, places))
        if "sleepers" in cases:
            print(
                f"\n3. sleeping runs under AsyncEngine: {args.sleepers} runs that did one async "
                f"step and wait (+{WARM_SLEEPERS} before the first reading), a process per "
                "reading"
            )
            for store in stores:
                for wait in waits:
                    entry = case_sleepers(args, places, store, wait)
                    summary.setdefault("sleepers", {})[f"{store}-{wait}"] = print_sleepers(
                        store, wait, entry, args.sleepers
                    )
    finally:
        places.remove_all()
    print(f"\nwall time: {time.perf_counter() - began:.0f} s")
    print("\nsummary (json):")
    print(json.dumps(rounded(summary), sort_keys=True))


if __name__ == "__main__":
    main()
