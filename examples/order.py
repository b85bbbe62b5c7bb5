"""The crash demonstration: kill an order workflow mid-run, start it again, it finishes.

    python examples/order.py --crash-after 3     # dies (SIGKILL) inside step 3
    python examples/order.py                      # recovers: steps 1-2 are not repeated

Options: --url (default: REPLAYKIT_URL, then sqlite:///replaykit.db), --order-id,
--side-file (every step body appends its name here, so you can count how often
each one ran; default order-steps.log).

Each step's effect happens, then its record commits. The step that was running
when the process died has no record, so it runs again on recovery (at least
once); every step that committed runs exactly once.
"""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Generator
from typing import Any

from replaykit import Engine, Step, workflow

STEPS = ["reserve-stock", "charge-card", "create-label", "notify-customer", "close-order"]

_side_file = "order-steps.log"
_crash_after: int | None = None


def do_step(index: int, name: str, order_id: str) -> str:
    with open(_side_file, "a", encoding="utf-8") as side:
        side.write(f"{name}\n")
        side.flush()
        os.fsync(side.fileno())
    if _crash_after is not None and index + 1 == _crash_after:
        print(f"  {name}: done its work, and now the process dies before it is recorded")
        os.kill(os.getpid(), signal.SIGKILL)
    print(f"  {name} ({order_id})")
    return f"{name}:ok"


@workflow
def order(order_id: str) -> Generator[Any, Any, list[str]]:
    results = []
    for index, name in enumerate(STEPS):
        results.append((yield Step(name, do_step, index, name, order_id)))
    return results


def main() -> None:
    global _side_file, _crash_after
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None)
    parser.add_argument("--order-id", default="order-42")
    parser.add_argument("--crash-after", type=int, default=None, metavar="N")
    parser.add_argument("--side-file", default="order-steps.log")
    args = parser.parse_args()
    _side_file, _crash_after = args.side_file, args.crash_after
    with Engine(args.url) as engine:
        # Engine() has already re-dispatched this executor's unfinished runs;
        # start() with the same id finds the existing run instead of a new one.
        handle = engine.start(order, args.order_id, workflow_id=args.order_id)
        print(f"{args.order_id}: {handle.result(timeout=60)}")


if __name__ == "__main__":
    main()
