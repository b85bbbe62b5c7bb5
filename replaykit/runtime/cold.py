"""Cold wake-ups read together: runs that must be read from the store before they go on
(evicted from the warm cache, recovered, swept up) are gathered over a scheduler round
and read in batches, one `load_runs` call per `BATCH` runs, instead of three round trips
a run (its row, its log, its cancel request).

A wave of sleepers coming due at once is the case that needs it: each wake-up was a
full read on a bookkeeping thread, and 32 threads queued for a handful of connections
(docs/performance.md, "Sleepers"). A run alone, or a store without `load_runs` (a
user's own), is read as before, one run at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from replaykit.runtime.events import Activation, Event
from replaykit.runtime.pool import WorkPool

__all__ = ["BATCH", "ColdReads"]

#: Runs read in one batch: big enough that a wave of wake-ups costs a few statements
#: a hundred runs, small enough that the first of them does not wait long for the rest.
BATCH = 100


class ColdReads:
    """Activations that wait for their first read, gathered until `flush()`.

    `add` is called from the scheduler's thread as it begins activations; `flush` at
    the end of each of its rounds hands the gathered runs to the bookkeeping pool in
    batches, each read by `prepare_many`, whose events go back through `post_many`.
    """

    def __init__(
        self,
        *,
        prepare_many: Callable[[list[Activation]], list[Event]],
        pool: WorkPool,
        post_many: Callable[[list[Event]], None],
        ended: Callable[[Activation], None],
    ) -> None:
        self._prepare_many = prepare_many
        self._pool = pool
        self._post_many = post_many
        # Told of each activation that cannot be read any more (the pool shut down).
        self._ended = ended
        self._lock = threading.Lock()
        self._waiting: list[Activation] = []

    def add(self, activation: Activation) -> None:
        with self._lock:
            self._waiting.append(activation)

    def flush(self) -> None:
        """Hand what was gathered to the pool, `BATCH` runs per call."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for first in range(0, len(waiting), BATCH):
            batch = waiting[first : first + BATCH]
            try:
                self._pool.submit(self._read, batch)
            except RuntimeError:  # the pool shut down: these activations end here
                for activation in batch:
                    self._ended(activation)

    def _read(self, batch: list[Activation]) -> None:
        self._post_many(self._prepare_many(batch))
