"""A module no scenario imports: stored data naming it must not import it either.

Importing it, or building its exception, leaves a marker file in
`$RELIABILITY_CANARY_DIR`, which the bad-input scenario looks for afterwards, in
its own process and after every CLI command it ran.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CanaryError"]


def _mark(what: str) -> None:
    folder = os.environ.get("RELIABILITY_CANARY_DIR")
    if folder:
        (Path(folder) / f"{what}-{os.getpid()}").touch()


_mark("imported")


class CanaryError(Exception):
    def __init__(self, *args: object) -> None:
        _mark("constructed")
        super().__init__(*args)
