"""Updates: the round trip of a request and its reply, against a send and a get_event poll.

    python -m bench.bench_updates [--rounds 1000] [--warmup 100] [--stores postgres,sqlite]
        [--pg URL]

One engine, one store; two runs that each answer N requests, kept warm (the engine's
cache holds their generators between requests, so no request replays a log):

- **update**: `engine.update(id, "echo", i)` against a run that loops on
  `ReceiveUpdate("echo")` then `Reply(req, i)`: from the call to the reply in hand.
- **send + get_event** (the baseline, what a caller did before updates): `engine.send(id,
  {"i": i}, "ask")` against a run that loops on `Recv("ask")` then `SetEvent("answer:i",
  i)`, then `engine.get_event(id, "answer:i", timeout=...)`, which waits on the store's
  notification as `update` does.

Both are measured in the same run, alternating one round of each, so the machine's
state weighs on both alike; the first `--warmup` rounds of each are not counted. Per
store: p50, p99 and the mean of each in milliseconds, and the ratios update / baseline
(below 1x: the update is faster). Each round is two commits on the run's side in both
cases (the request's or message's consumption, the reply's or event's record) and one
write on the caller's; the update also reads the reply once before sending (a retried
id's stored answer) and the run's row each round of its wait. Nothing is asserted;
figures go to stdout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

from bench.places import Places, check_postgres
from replaykit import Engine, ReceiveUpdate, Recv, Reply, SetEvent, workflow

__all__ = ["main", "measure", "percentile"]

DEFAULT_PG = os.environ.get(
    "REPLAYKIT_BENCH_PG",
    os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1/test"),
)
VERSION = "bench-updates"
WAIT = 30.0  # seconds a round may take before the bench gives up on it


@workflow(name="bench.updates_echo", updates=["echo"])
def echo(rounds: int) -> Generator[Any, Any, int]:
    for _ in range(rounds):
        req = yield ReceiveUpdate("echo")
        yield Reply(req, req.args[0])
    return rounds


@workflow(name="bench.updates_polled")
def polled(rounds: int) -> Generator[Any, Any, int]:
    for _ in range(rounds):
        message = yield Recv("ask")
        yield SetEvent(f"answer:{message['i']}", message["i"])
    return rounds


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))
    return ordered[index]


@contextmanager
def _engine(store: str, places: Places) -> Iterator[Engine]:
    target, key = places.make("replaykit", store, "updates")
    try:
        if store == "sqlite":
            url = f"sqlite:///{target['path']}"
        else:
            url = f"{target['url']}?schema={target['schema']}"
        with Engine(url, app_version=VERSION, executor_id="bench-updates") as engine:
            yield engine
    finally:
        places.remove(key)


def measure(engine: Engine, rounds: int, warmup: int) -> dict[str, list[float]]:
    """Milliseconds per round trip of each kind, alternating, warm-up rounds left out."""
    total = rounds + warmup
    engine.start(echo, total, workflow_id="echo")
    engine.start(polled, total, workflow_id="polled")
    times: dict[str, list[float]] = {"update": [], "send + get_event": []}
    for i in range(total):
        start = time.perf_counter()
        answer = engine.update("echo", "echo", i, timeout=WAIT)
        took = time.perf_counter() - start
        if answer != i:
            raise AssertionError(f"round {i}: the update answered {answer!r}")
        if i >= warmup:
            times["update"].append(took * 1000)
        start = time.perf_counter()
        engine.send("polled", {"i": i}, "ask")
        answer = engine.get_event("polled", f"answer:{i}", timeout=WAIT)
        took = time.perf_counter() - start
        if answer != i:
            raise AssertionError(f"round {i}: the event held {answer!r}")
        if i >= warmup:
            times["send + get_event"].append(took * 1000)
    return times


def _report(store: str, times: dict[str, list[float]]) -> None:
    print(f"{store}: {len(times['update'])} round trips of each kind, run warm")
    figures = {}
    for kind, values in times.items():
        p50, p99, mean = percentile(values, 50), percentile(values, 99), statistics.fmean(values)
        figures[kind] = (p50, p99, mean)
        print(f"  {kind:<17} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   mean {mean:7.2f} ms")
    update, baseline = figures["update"], figures["send + get_event"]
    print(
        f"  update / send + get_event: p50 {update[0] / baseline[0]:.2f}x   "
        f"p99 {update[1] / baseline[1]:.2f}x   mean {update[2] / baseline[2]:.2f}x"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--stores", default="postgres")
    parser.add_argument("--pg", default=DEFAULT_PG)
    args = parser.parse_args(argv)
    stores = [s for s in args.stores.split(",") if s]
    unknown = sorted(set(stores) - {"postgres", "sqlite"})
    if unknown:
        parser.error(f"--stores takes postgres and sqlite, got {unknown}")
    if "postgres" in stores:
        version, why = check_postgres(args.pg)
        if version is None:
            print(f"PostgreSQL: {why}", file=sys.stderr)
            raise SystemExit(1)
        print(f"PostgreSQL {version} at {args.pg}")
    places = Places(args.pg if "postgres" in stores else None)
    try:
        for store in stores:
            with _engine(store, places) as engine:
                _report(store, measure(engine, args.rounds, args.warmup))
    finally:
        places.remove_all()


if __name__ == "__main__":
    main()
