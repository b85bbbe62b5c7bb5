"""The rows of runs this engine finished lately, so `handle.result()` here needs no read.

`FinishedRuns` is the books' cache, under its own lock: a finish keeps its run's row
once its commit is in, a delete forgets it (the store may no longer hold the run), and
the oldest rows go first past `FINISHED_CACHE`.
"""

from __future__ import annotations

import collections
import threading

from replaykit.stores.base import WorkflowRow

__all__ = ["FINISHED_CACHE", "FinishedRuns"]

# Runs this engine finished, kept so handle.result() needs no read.
FINISHED_CACHE = 4096


class FinishedRuns:
    """The rows of runs finished here lately, the oldest dropped first."""

    def __init__(self, size: int = FINISHED_CACHE) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._rows: collections.OrderedDict[str, WorkflowRow] = collections.OrderedDict()
        # Counts `forget` calls: a finish that saw it change while its commit was in
        # flight keeps no row (the delete it heard of may be of that run).
        self._forgotten = 0

    def get(self, workflow_id: str) -> WorkflowRow | None:
        with self._lock:
            return self._rows.get(workflow_id)

    def peek(self, workflow_id: str) -> WorkflowRow | None:
        """`get` without the lock, for a caller on an event loop that looks again if it
        misses: a contended lock would stall its loop behind the GIL."""
        return self._rows.get(workflow_id)

    def forget(self, workflow_id: str | None = None) -> None:
        """Forget the row kept of `workflow_id` (of every run if None): the store may no
        longer hold it (deleted)."""
        with self._lock:
            self._forgotten += 1
            if workflow_id is None:
                self._rows.clear()
            else:
                self._rows.pop(workflow_id, None)

    def mark(self) -> int:
        """What a finish reads before its commit, and hands to `keep` after it."""
        return self._forgotten

    def keep(self, row: WorkflowRow, mark: int) -> None:
        """Keep a finished run's row, unless a run was forgotten since `mark`."""
        with self._lock:
            if self._forgotten == mark:
                self._rows[row.workflow_id] = row
                while len(self._rows) > self._size:
                    self._rows.popitem(last=False)
