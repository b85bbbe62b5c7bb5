"""The warm cache: suspended runs kept in memory, so a wake-up needs no read and no replay.

A run that suspends keeps its generator and interpreter here (a `WarmRun`), bounded by
`capacity` and evicted least recently kept first. When it wakes, the scheduler takes it
out and resumes it with the outcome it waited for. A run that is not here (evicted,
never seen by this engine, or dropped because its log may hold what the cache does
not) is rebuilt by replay from the store: the two are indistinguishable, which the
property tests check.

The cache owns its state under its own lock; it is handed to the scheduler by the
engine, and never calls anyone back.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime

import attrs

from replaykit.interpreter import Effect, Interpreter
from replaykit.log import Outcome, Record
from replaykit.runtime.clock import Clock
from replaykit.runtime.host import Suspend
from replaykit.stores.base import WorkflowRow

__all__ = [
    "DEFAULT_MAX_CACHED_RUNS",
    "WARM_HORIZON",
    "WarmCache",
    "WarmRun",
    "close_quietly",
    "kept_row",
]

log = logging.getLogger("replaykit.engine")

# A run that waits only for a deadline further away than this is not kept warm:
# the memory goes to runs likely to wake soon (loops, pollers, conversations); a
# replay when a day-long sleep ends costs nothing worth keeping 2 KiB for.
WARM_HORIZON = 600.0
# Suspended runs kept warm. A warm run costs its generator's frame and the
# interpreter around it: about 2.1 KiB of heap for a small workflow, against
# 0.6 KiB for an evicted sleeper (python -m bench.bench_aio --cases sleepers;
# docs/performance.md). 10,000 of them stay near 25 MiB of RSS.
DEFAULT_MAX_CACHED_RUNS = 10_000


@attrs.define(slots=True, eq=False)
class WarmRun:
    """A suspended run held in memory: resumed with the outcome of the effect its
    interpreter waits on (`effect()`)."""

    row: WorkflowRow
    interpreter: Interpreter
    #: The record its position holds (the wait's start): the effect is rebuilt with it
    #: on waking rather than kept twice (the interpreter holds the effect too).
    pending: Record | None
    #: A composite's step children that finished before it suspended (`Suspend.steps_done`).
    steps_done: Mapping[tuple[int, ...], Outcome] | None = None

    def effect(self) -> Effect:
        waiting = self.interpreter.waiting
        if waiting is None:  # pragma: no cover - only a waiting interpreter is kept
            raise AssertionError(f"workflow id {self.row.workflow_id!r}: kept not waiting")
        if waiting.pending is self.pending:
            return waiting
        return attrs.evolve(waiting, pending=self.pending)


class WarmCache:
    """Suspended runs by workflow id, at most `capacity` of them (0 keeps none).

    `jump_for(deadline)` asks the wake-ups whether an autojumping clock may move to
    `deadline` now (nothing else due first): a warm run alone on such a clock goes
    on at once instead of suspending.
    """

    def __init__(
        self, clock: Clock, *, capacity: int, jump_for: Callable[[datetime], bool]
    ) -> None:
        if capacity < 0:
            raise ValueError(f"max_cached_runs must be 0 or more, got {capacity}")
        self.clock = clock
        self.capacity = capacity
        self._jump_for = jump_for
        self._lock = threading.Lock()
        self._runs: collections.OrderedDict[str, WarmRun] = collections.OrderedDict()
        self._closed = False
        #: A testing hook: asked `(workflow_id, position)` as a run suspends; False
        #: evicts it at once (the testing kit draws evictions at random points).
        self.keep_if: Callable[[str, int], bool] | None = None
        #: Whether a warm run alone on an autojumping clock goes on past a Sleep at
        #: once (`would_stay`); the testing kit turns it off, so that its virtual
        #: timeline and its crash points stay those of a suspension and a wake-up.
        self.go_on_at_jumps = True

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def __contains__(self, workflow_id: str) -> bool:
        with self._lock:
            return workflow_id in self._runs

    def take(self, workflow_id: str) -> WarmRun | None:
        """The run kept for `workflow_id`, out of the cache (None if not kept)."""
        with self._lock:
            return self._runs.pop(workflow_id, None)

    def drop(self, workflow_id: str) -> None:
        """Forget the run kept for `workflow_id`: the store may hold what it does not."""
        with self._lock:
            run = self._runs.pop(workflow_id, None)
        if run is not None:
            close_quietly(run.interpreter)

    def keep(self, workflow_id: str, run: WarmRun) -> None:
        """Keep `run`, evicting the least recently kept past capacity (or `run` itself,
        once the cache is closed)."""
        evicted: list[WarmRun] = []
        with self._lock:
            if self._closed:
                evicted.append(run)
            else:
                self._runs[workflow_id] = run
                while len(self._runs) > self.capacity:
                    evicted.append(self._runs.popitem(last=False)[1])
        for old in evicted:
            close_quietly(old.interpreter)

    def close(self) -> None:
        """Drop every run and keep none from now on."""
        with self._lock:
            self._closed = True
            runs = list(self._runs.values())
            self._runs.clear()
        for run in runs:
            close_quietly(run.interpreter)

    # -- what stays warm ------------------------------------------------------------------

    def would_stay(self, workflow_id: str, position: int) -> bool:
        """Whether a run suspending at `position` now would keep its generator: if not
        (no cache, or the testing kit's replays), it must suspend, to be replayed."""
        if self.capacity == 0 or self._closed or not self.go_on_at_jumps:
            return False
        keep_if = self.keep_if
        return keep_if is None or keep_if(workflow_id, position)

    def stays(self, workflow_id: str, effect: Effect, suspend: Suspend) -> bool:
        """Whether a run suspending on `effect` as `suspend` says is kept."""
        if self.capacity == 0 or self._closed:
            return False
        if (
            not suspend.waits
            and not suspend.steps_done  # replayed, it would run its finished steps again
            and suspend.wake_at is not None
            and (suspend.wake_at - self.clock.now()).total_seconds() > WARM_HORIZON
        ):
            return False  # it will not wake for a long while: not worth its memory
        keep_if = self.keep_if
        return keep_if is None or keep_if(workflow_id, effect.position)

    def due_at_once(self, suspend: Suspend) -> bool:
        """A run that would be kept waits only for a deadline an autojumping clock may
        jump to now: it goes on at once (the timer loop would wake it right away)."""
        if suspend.waits or suspend.wake_at is None or not self.clock.autojump:
            return False
        return self._jump_for(suspend.wake_at)


def kept_row(row: WorkflowRow) -> WorkflowRow:
    """What a warm run keeps of its row: what its next activation reads (id, name,
    owner, queue, parent, deadline, recovery count, trace context). Its inputs went
    into the generator it keeps, and its times are read from the store by whoever
    shows them: kept, they would be only weight (every warm run holds its row)."""
    if row.inputs is None and row.created_at is row.updated_at is row.started_at is None:
        return row
    return attrs.evolve(row, inputs=None, created_at=None, updated_at=None, started_at=None)


def close_quietly(interp: Interpreter) -> None:
    """Drop a run's generator; one that misbehaves on close only costs a log line."""
    try:
        interp.close()
    except Exception:
        log.exception("workflow id %r: closing its generator failed", interp.workflow_id)
