"""A process that starts runs from an `AsyncEngine`, a gathered batch at a time, until
it is killed (the `batch_kills` scenario).

Each batch is `gather`ed in one loop iteration, so the engine stores it in one
statement: the ledger says when a batch began (`batch`) and when its starts returned
(`batched`). The runs are `rel-once`, which this engine also runs.

    python -m reliability._batcher --url URL --size N
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from reliability._harness import APP_VERSION, LEDGER_ENV, Ledger

__all__ = ["main"]


async def _serve(url: str, size: int) -> None:
    import reliability._apps as apps
    from replaykit import AsyncEngine

    ledger = Ledger(os.environ[LEDGER_ENV])
    async with AsyncEngine(
        url, executor_id="batcher", app_version=APP_VERSION, poll_interval=0.2
    ) as engine:
        ledger.write(ev="ready")
        batch = 0
        while True:
            ledger.write(ev="batch", batch=batch)
            name = f"{os.getpid()}.{batch}"  # a batch: this process, its number
            await asyncio.gather(
                *(
                    engine.start(apps.once, name, 0.0, workflow_id=f"{name}-{n}")
                    for n in range(size)
                )
            )
            ledger.write(ev="batched", batch=batch)
            batch += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability._batcher")
    parser.add_argument("--url", required=True)
    parser.add_argument("--size", type=int, required=True)
    args = parser.parse_args(argv)
    asyncio.run(_serve(args.url, args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
