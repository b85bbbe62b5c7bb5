"""Continue-as-new: a poller's cost per iteration stays flat and its log stays bounded.

    python -m bench.bench_continue_as_new [--stores sqlite,postgres] [--iterations 100000]
        [--every 100] [--baseline 5000] [--baseline-replayed 2000] [--pg URL]

A poller does, per iteration, a `Step` then a `Sleep(60)` on an engine with
`VirtualClock(autojump=True)` (a minute of virtual time takes no wall time), and
continues as new every `--every` iterations (default 100). For `--iterations`
(default 100,000) it prints the wall time per 1,000 iterations over the first and
over the last thousand, their ratio (flat cost: about 1x), and the largest log a
generation held (bounded: 2 x every records).

Baseline, measured in the same run on the same store: the same poller never
continuing, for `--baseline` iterations (default 5,000) with the engine's warm cache
(a warm run resumes without reading its log), and for `--baseline-replayed`
iterations (default 2,000) with `max_cached_runs=0`: every wake-up replays the whole
log, as after an eviction or a restart, and the cost per iteration grows with the
log (quadratic in all), which the last/first ratio shows. The continue-as-new poller
is measured without the cache too, for as many iterations. Nothing is asserted;
figures go to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Generator, Iterator
from typing import Any

from bench.places import Places, check_postgres
from replaykit import ContinueAsNew, Engine, Sleep, Step, VirtualClock, workflow
from replaykit.stores.base import WorkflowFilter

__all__ = ["main", "per_thousand"]

DEFAULT_PG = os.environ.get(
    "REPLAYKIT_BENCH_PG",
    os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1/test"),
)
VERSION = "bench-continue-as-new"
THOUSAND = 1000

#: perf_counter() at each iteration's step body (a body runs once per iteration).
STAMPS: list[float] = []


def poll(done: int) -> int:
    STAMPS.append(time.perf_counter())
    return done + 1


@workflow(name="bench.can_poller")
def poller(done: int, total: int, every: int) -> Generator[Any, Any, int]:
    """`total` iterations of Step + Sleep(60); continues as new every `every` (0: never)."""
    while True:
        done = yield Step("poll", poll, done)
        yield Sleep(60)
        if done >= total:
            return done
        if every and done % every == 0:
            yield ContinueAsNew(done, total, every)


def per_thousand(stamps: list[float]) -> tuple[float, float]:
    """Milliseconds per 1,000 iterations over the first and over the last thousand."""
    window = min(THOUSAND, len(stamps) - 1)
    if window <= 0:
        return 0.0, 0.0
    scale = 1000.0 * THOUSAND / window
    first = (stamps[window] - stamps[0]) * scale
    last = (stamps[-1] - stamps[-1 - window]) * scale
    return first, last


@contextlib.contextmanager
def place(places: Places, store: str) -> Iterator[str]:
    target, key = places.make("replaykit", store, "can")
    try:
        if store == "sqlite":
            yield f"sqlite:///{target['path']}"
        else:
            url: str = target["url"]
            yield url + ("&" if "?" in url else "?") + f"schema={target['schema']}"
    finally:
        places.remove(key)


def measure(
    places: Places, store: str, iterations: int, every: int, *, cached: bool
) -> dict[str, Any]:
    with place(places, store) as url:
        options: dict[str, Any] = {} if cached else {"max_cached_runs": 0}
        with Engine(
            url, clock=VirtualClock(autojump=True), app_version=VERSION, **options
        ) as engine:
            STAMPS.clear()
            began = time.perf_counter()
            engine.start(poller, 0, iterations, every, workflow_id="poller").result(timeout=3600)
            wall = time.perf_counter() - began
            generations = engine.store.list_workflows(WorkflowFilter(continued_as="poller"))
            logs = [len(engine.store.load_log(g.workflow_id)) for g in generations]
            logs.append(len(engine.store.load_log("poller")))
    first, last = per_thousand(STAMPS)
    return {
        "iterations": iterations,
        "generations": len(generations) + 1,
        "wall_s": wall,
        "first_ms": first,
        "last_ms": last,
        "ratio": last / first if first else float("nan"),
        "largest_log": max(logs),
    }


def show(label: str, figures: dict[str, Any]) -> None:
    print(
        f"  {label:<44} {figures['iterations']:>7} it  {figures['generations']:>5} gen  "
        f"{figures['wall_s']:7.1f} s  first 1k {figures['first_ms']:8.1f} ms  "
        f"last 1k {figures['last_ms']:8.1f} ms  last/first {figures['ratio']:5.2f}x  "
        f"largest log {figures['largest_log']}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="sqlite")
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--baseline", type=int, default=5_000)
    parser.add_argument("--baseline-replayed", type=int, default=2_000)
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args()
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if "postgres" in stores:
        version, why = check_postgres(args.pg)
        if version is None:
            sys.exit(f"bench: {why}")
    baseline = min(args.baseline, args.iterations)
    replayed = min(args.baseline_replayed, args.iterations)
    places = Places(args.pg if "postgres" in stores else None)
    try:
        for store in stores:
            print(f"{store}: a poller, Step + Sleep(60) per iteration, virtual clock (autojump)")
            show(
                f"continue-as-new every {args.every}",
                measure(places, store, args.iterations, args.every, cached=True),
            )
            show(
                "baseline: never continuing, warm cache",
                measure(places, store, baseline, 0, cached=True),
            )
            show(
                "baseline: never continuing, no cache",
                measure(places, store, replayed, 0, cached=False),
            )
            show(
                f"continue-as-new every {args.every}, no cache",
                measure(places, store, replayed, args.every, cached=False),
            )
    finally:
        places.remove_all()


if __name__ == "__main__":
    main()
