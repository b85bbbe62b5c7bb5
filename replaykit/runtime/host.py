"""What the effect runner needs from whoever hosts runs, and the values they exchange.

The effect runner (`effects.py`) carries out one command for one run. It never
imports the Engine: it is handed a `Host`, which the Engine implements and a
test may fake. The types here are the only ones both sides share.
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from datetime import datetime
from typing import Any, Protocol

import attrs

from replaykit.log import Outcome, Record
from replaykit.runtime.cancels import CancelRequests
from replaykit.runtime.clock import Clock
from replaykit.runtime.commits import LogMovedOn, RecordWriter
from replaykit.stores.base import Store, WorkflowRow

__all__ = [
    "CancelScope",
    "Entropy",
    "Host",
    "LogMovedOn",
    "Suspend",
    "Wake",
    "system_entropy",
]

#: Where a `Random()` or `Uuid()` draws from: called once per draw with the run's
#: id, the command's position and its kind ("random" or "uuid"). A hook for
#: tests that want reproducible draws; the default is the operating system's.
Entropy = Callable[[str, int, str], random.Random]

_system_random = random.SystemRandom()


def system_entropy(workflow_id: str, position: int, kind: str) -> random.Random:
    """The default `Entropy`: the operating system's randomness, for every draw."""
    return _system_random


Wake = tuple[str, str]  # (notification kind, key), as in Store.subscribe


class CancelScope:
    """Cancels what an attempt has in flight: async step tasks, pending waits.

    Sync step functions cannot be interrupted (Python cannot stop a thread);
    their result is dropped and no retry follows.
    """

    def __init__(self, parent: CancelScope | None = None) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []
        self.cancelled = False
        #: Cancelled because the run itself stopped (cancelled, or finished by
        #: another engine), not because this engine closes or a branch lost a race:
        #: a preemptible step cut short then records that it was (`StepPreempted`).
        self.run_stopped = False
        self._parent = parent
        if parent is not None:
            parent.on_cancel(self.cancel)

    def on_cancel(self, callback: Callable[[], object]) -> None:
        with self._lock:
            if not self.cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def discard(self, callback: Callable[[], object]) -> None:
        """Forget a callback whose wait is over.

        A scope lives as long as its activation, and each callback holds what it
        would cancel: kept after its step, they would pile up (one per step) and
        tie the step's task, coroutine and effect to the run in a reference cycle
        that only the garbage collector's slow full pass frees.
        """
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def stop_run(self) -> None:
        """Cancel because the run stopped; the flag is set before anyone is woken."""
        self.run_stopped = True
        self.cancel()

    def cancel(self) -> None:
        with self._lock:
            if self.cancelled:
                return
            self.cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        parent, self._parent = self._parent, None
        if parent is not None:  # nothing more to hear from it
            parent.discard(self.cancel)
        for callback in callbacks:
            callback()


@attrs.frozen
class Suspend:
    """The workflow waits: until `wake_at`, or until one of `waits` is notified."""

    wake_at: datetime | None
    waits: tuple[Wake, ...] = ()
    #: Checks the store for what it waits on; the poller's fallback for lost wake-ups.
    ready: Callable[[], bool] | None = attrs.field(default=None, eq=False)
    #: The pending record its position holds now; a warm run resumes from it.
    pending: Record | None = attrs.field(default=None, eq=False)
    #: A composite's step children that finished before it suspended, by their path
    #: in its tree: what a warm run's next attempt takes instead of running them again.
    #: They live in memory only, as every step outcome before its record commits.
    steps_done: Mapping[tuple[int, ...], Outcome] | None = attrs.field(default=None, eq=False)
    #: A Sleep's: its run's row in the store holds its instant, so the wake-ups may
    #: leave a far one there (parked) and read it back before it is due. A step's
    #: back-off is not: the retry decisions look for it among the suspended runs.
    parkable: bool = attrs.field(default=False, eq=False)


class Host(Protocol):
    """The runtime services one effect needs. `Engine` is the host in production."""

    store: Store
    #: The one writer of records (runtime/commits.py): every commit goes through it.
    records: RecordWriter
    clock: Clock
    executor_id: str
    entropy: Entropy
    max_payload_bytes: int
    step_overrides: Mapping[str, Callable[..., Any]]
    logger: Any
    #: The cancel requests of the runs it runs (runtime/cancels.py).
    cancels: CancelRequests

    @property
    def closed(self) -> bool:
        """The host is shutting down: no new attempt starts; running ones may finish."""
        ...

    @property
    def step_pool(self) -> Executor:
        """Where sync step bodies run when they must not hold the caller's thread."""
        ...

    def create_run(
        self,
        wf: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        workflow_id: str | None = None,
        parent_id: str | None = None,
        queue: str | None = None,
        timeout: float | None = None,
        deadline: datetime | None = None,
    ) -> tuple[WorkflowRow, bool]:
        """Store (or find) a child run and schedule it; `timeout` (seconds) and
        `deadline` bound the child run (`Engine.start`'s options)."""
        ...

    def cancel_child(self, workflow_id: str) -> None:
        """Cancel a child run a composite no longer needs (a losing `Call`).

        Called after the composite's record committed; a run that already
        finished is left as it is."""
        ...

    def cancel(
        self, workflow_id: str, *, grace: float = ..., reason: str = "", children: bool = True
    ) -> bool:
        """Ask a run to cancel as `engine.cancel` does (`CancelRun`): False if it had
        finished; `WorkflowNotFound` for an id no run has."""
        ...

    def terminate(self, workflow_id: str, *, children: bool = True, reason: str = "") -> bool:
        """Stop a run hard as `engine.terminate` does (a parent close policy)."""
        ...

    def check_cancelled(self, workflow_id: str) -> None:
        """Raise `Stopped` if the run was stopped or its host is closing."""
        ...

    def scope_of(self, workflow_id: str) -> CancelScope | None:
        """The cancel scope of the run's current activation."""
        ...

    def listen(self, wakes: Iterable[Wake], callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when any of `wakes` is notified, until unsubscribed."""
        ...

    def wait_for_change(
        self, changed: threading.Event, deadline: datetime | None, *, idle: bool
    ) -> None:
        """Hold the calling thread until `changed`, the deadline or a poll interval."""
        ...

    def keeps_warm(self, workflow_id: str, position: int) -> bool:
        """Whether a run suspending at `position` now would stay in memory, to be
        resumed rather than replayed (no cache, or the testing kit's replays: not)."""
        ...

    def jump_to(self, workflow_id: str, position: int, deadline: datetime) -> bool:
        """On an autojumping clock, with nothing else running and nothing due before
        `deadline`, move the clock there now; True if it has passed. The caller then
        goes on at once where it would suspend and be woken at `deadline`. False when
        the run, suspended there, would be replayed rather than kept warm."""
        ...
