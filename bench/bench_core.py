"""The in-memory core: steps executed and positions replayed per second.

Also the suite's concurrent case (100 workflows x 10 steps started at once) on
the memory store: the engine's threads and interpreter with no database under
them, the ceiling of that case on any store; and the same with every checkpoint
group-committed through a batch that waits `--latency` seconds (a simulated
round trip): what the threads' hand-offs cost without a driver's own work.

    python -m bench.bench_core [--steps 20000] [--repeat 5] [--latency 0.0003]

The executed and replayed rates are printed with their ratio to a plain Python
loop calling the same step function, measured in the same run (the baseline).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

from replaykit import Engine, MemoryStore, Step, workflow
from replaykit.interpreter import Completed, Interpreter
from replaykit.log import Record
from replaykit.stores._group import GroupCommit, Slot


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


class DelayedStore(MemoryStore):
    """A memory store whose checkpoints share batches that each wait `latency` s."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self._latency = latency
        self._group: GroupCommit[tuple[str, Record, dict[str, Any]]] = GroupCommit(
            self._write_batch
        )

    def record(self, workflow_id: str, record: Record, **options: Any) -> Record:
        stored: Record = self._group.submit((workflow_id, record, options))
        return stored

    def _write_batch(self, slots: Sequence[Slot[tuple[str, Record, dict[str, Any]]]]) -> None:
        time.sleep(self._latency)  # the round trip, with the GIL released as a driver would
        for slot in slots:
            workflow_id, record, options = slot.item
            try:
                slot.set_result(MemoryStore.record(self, workflow_id, record, **options))
            except Exception as exc:
                slot.set_error(exc)


def concurrent_steps_per_s(engine: Engine, repeat: int, tags: Iterator[int]) -> tuple[float, float]:
    """The suite's concurrent case, 100 workflows x 10 steps started at once.

    Returns (steps/s, CPU microseconds per step of this process, all threads).
    """
    cpu: list[float] = []

    def run() -> None:
        tag = next(tags)
        before = time.process_time()
        handles = [engine.start(many_steps, 10, workflow_id=f"conc-{tag}-{w}") for w in range(100)]
        for handle in handles:
            handle.result(timeout=600)
        cpu.append((time.process_time() - before) / 1000 * 1e6)

    run()  # warm the worker threads
    cpu.clear()
    return 1000 / best_of(repeat, run), statistics.median(cpu)


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
    parser.add_argument(
        "--latency", type=float, default=0.0003, help="simulated commit round trip, s"
    )
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
        concurrent = concurrent_steps_per_s(engine, args.repeat, counter)

    with Engine(DelayedStore(args.latency), app_version="bench") as engine:
        delayed = concurrent_steps_per_s(engine, args.repeat, counter)

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
        f"concurrent:      {concurrent[0]:>12,.0f} steps/s    {concurrent[1]:.0f} us CPU per step "
        "(100 workflows x 10 steps started at once: the suite's concurrent case, no database)"
    )
    print(
        f"  with commits:  {delayed[0]:>12,.0f} steps/s    {delayed[1]:.0f} us CPU per step "
        f"(the same, checkpoints group-committed in batches that wait {args.latency * 1000:g} ms)"
    )


if __name__ == "__main__":
    main()
