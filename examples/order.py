"""The crash demonstration: kill an order workflow mid-run, start it again, it finishes.

    python examples/order.py --crash-after 3     # dies (SIGKILL) inside step 3
    python examples/order.py                      # recovers: steps 1-2 are not repeated

Options: --url (default: REPLAYKIT_URL, then replaykit.db in the demo's directory),
--order-id, --side-file (every step body appends its name here, so you can count how
often each one ran; default order-steps.log in the demo's directory). The demo's
directory is replaykit-order-example under the system's temporary directory, so that
the two commands above share a store wherever they are run from, and nothing is left
in the directory they are run from; the script prints where it is.

Each step's effect happens, then its record commits. The step that was running
when the process died has no record, so it runs again on recovery (at least
once); every step that committed runs exactly once.
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

from replaykit import Engine, Step, workflow

STEPS = ["reserve-stock", "charge-card", "create-label", "notify-customer", "close-order"]

#: Where the demo keeps its store and side file between its two commands.
DEMO_DIR = Path(tempfile.gettempdir()) / "replaykit-order-example"

_side_file = str(DEMO_DIR / "order-steps.log")
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
    parser.add_argument("--side-file", default=str(DEMO_DIR / "order-steps.log"))
    args = parser.parse_args()
    _side_file, _crash_after = args.side_file, args.crash_after
    url = args.url or os.environ.get("REPLAYKIT_URL")
    if url is None:
        DEMO_DIR.mkdir(exist_ok=True)
        url = f"sqlite:///{DEMO_DIR / 'replaykit.db'}"
        print(f"store: {url}")
    print(f"side file: {_side_file}")
    with Engine(url) as engine:
        # Engine() has already re-dispatched this executor's unfinished runs;
        # start() with the same id finds the existing run instead of a new one.
        handle = engine.start(order, args.order_id, workflow_id=args.order_id)
        print(f"{args.order_id}: {handle.result(timeout=60)}")


if __name__ == "__main__":
    main()
