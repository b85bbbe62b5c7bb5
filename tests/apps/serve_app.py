"""A plain process that stops on SIGTERM with `engine.serve()` (tests/test_serve.py).

Every step body appends its name to the file LEDGER names, so the test can count how
often each ran across the stop and the restart."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Generator
from typing import Any

from replaykit import All, Engine, Step, workflow

LEDGER = os.environ.get("LEDGER", "")


def slow(name: str) -> str:
    time.sleep(1.0)
    with open(LEDGER, "a", encoding="utf-8") as ledger:
        ledger.write(f"{name}\n")
    return name


@workflow(name="serve-app")
def two_kinds() -> Generator[Any, Any, list[str]]:
    first = yield Step("alone", slow, "alone")
    rest = yield All(Step("a", slow, "a"), Step("b", slow, "b"), Step("c", slow, "c"))
    return [first, *rest]


if __name__ == "__main__":
    with Engine(sys.argv[1]) as engine:
        if sys.argv[2] == "start":
            engine.start(two_kinds, workflow_id="served")
            print("started", flush=True)
            engine.serve()
        else:
            print(engine.handle("served").result(timeout=30), flush=True)
