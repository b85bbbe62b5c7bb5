"""`# replaykit: ignore[...]` silences findings on its line, and only those."""

import os
import time

from replaykit import Step, workflow


def record(value: object) -> None:
    pass


@workflow
def ignored():
    a = time.time()  # replaykit: ignore[RK101]
    b = time.time()  # replaykit: ignore
    c = os.getenv("X")  # replaykit: ignore[RK101, RK104]
    d = time.time()  # replaykit: ignore[RK104]  # expect: RK101
    yield Step("record", record, [a, b, c, d])
