"""The in-memory core: steps executed and positions replayed per second.

Also the suite's concurrent case (100 workflows x 10 steps started at once) on
the memory store: the engine's threads and interpreter with no database under
them, the ceiling of that case on any store.

    python -m bench.bench_core [--steps 20000] [--repeat 5]

The executed and replayed rates are printed with their ratio to a plain Python
loop calling the same step function, measured in the same run (the baseline).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Generator
from typing import Any

from replaykit import Engine, MemoryStore, Step, workflow
from replaykit.interpreter import Completed, Interpreter


def trivial(i: int) -> int:
    return i + 1


@workflow(name="bench-core-steps")
def many_steps(n: int) -> Generator[Any, Any, int]:
    total = 0
    for i in range(n):
        total += yield Step("trivial", trivial, i)
    return total


def plain_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += trivial(i)
    return total


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.steps

    baseline = best_of(args.repeat, lambda: plain_loop(n))

    store = MemoryStore()
    counter = iter(range(1_000_000))
    with Engine(store, app_version="bench") as engine:

        def execute() -> None:
            engine.run(many_steps, n, workflow_id=f"run-{next(counter)}", timeout=600)

        executed = best_of(args.repeat, execute)
        records = store.load_log("run-0")
        assert len(records) == n

        def replay() -> None:
            interp = Interpreter(
                many_steps.fn(n), records, workflow_name="bench", workflow_id="run-0"
            )
            decision = interp.start()
            assert isinstance(decision, Completed)

        replayed = best_of(args.repeat, replay)

        # The suite's concurrent case without a database: what the engine's own
        # threads and interpreter allow, the ceiling for any store under it.
        def concurrent() -> None:
            tag = next(counter)
            handles = [
                engine.start(many_steps, 10, workflow_id=f"conc-{tag}-{w}") for w in range(100)
            ]
            for handle in handles:
                handle.result(timeout=600)

        concurrent_s = best_of(args.repeat, concurrent)

    print(f"plain loop:      {n / baseline:>12,.0f} calls/s")
    print(
        f"steps executed:  {n / executed:>12,.0f} steps/s    "
        f"({executed / baseline:,.0f}x the plain loop's time; target >= 50,000 steps/s)"
    )
    print(
        f"positions replayed: {n / replayed:>9,.0f} positions/s "
        f"({replayed / baseline:,.0f}x the plain loop's time; target >= 200,000 positions/s)"
    )
    print(
        f"concurrent:      {1000 / concurrent_s:>12,.0f} steps/s    "
        "(100 workflows x 10 steps started at once: the suite's concurrent case, no database)"
    )


if __name__ == "__main__":
    main()
