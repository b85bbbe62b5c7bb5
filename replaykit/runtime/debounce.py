"""Debounce: start a workflow once its key has been quiet for a while, with the last
arguments given (docs/queues.md, "Debounce").

A debounced key is a run of its own, the *debouncer*, under the id
`DEBOUNCER_PREFIX + key`. Each `debounce(...)` call is an update-with-start of it: the
call starts the debouncer if the key has none, and hands it the target workflow's name,
its arguments and the period; the debouncer answers with the id the target will run
under. It then waits for the next call with `ReceiveUpdate(timeout=period)` (shortened
so as not to pass `max_wait` after the window's first call); when a wait times out it
starts the target with the last arguments and continues as new, waiting for the next
window's first call.

Everything a window decides is in the debouncer's log, so a restart neither loses a
debounced start nor makes it twice: the target is a `Start` under an id derived from
the key and the debouncer's generation, which a replay does not start again. The cost
is one waiting run per key ever debounced (a row, no thread: a waiting run holds
none); delete it to forget the key.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit._durations import as_seconds
from replaykit.commands import ContinueAsNew, Now, ReceiveUpdate, Reply, Start, UpdateRequest
from replaykit.interpreter import context
from replaykit.registry import BoundWorkflow, Workflow, lookup, unbind, workflow

__all__ = [
    "DEBOUNCER_NAME",
    "DEBOUNCER_PREFIX",
    "DEBOUNCE_UPDATE",
    "DebounceCall",
    "debounce_call",
    "debouncer",
    "debouncer_id",
]

#: The registered name of the debouncer workflow.
DEBOUNCER_NAME = "replaykit.debouncer"
#: The debouncer of key `k` runs under the id `DEBOUNCER_PREFIX + k`.
DEBOUNCER_PREFIX = "replaykit.debounce:"
#: The update a `debounce(...)` call sends its debouncer.
DEBOUNCE_UPDATE = "debounce"


def debouncer_id(key: str) -> str:
    return DEBOUNCER_PREFIX + key


def target_id(key: str, generation: int) -> str:
    """The id the target of the key's `generation`-th window runs under."""
    return f"{key}:debounced:{generation}"


#: Keywords `Start` keeps for itself: none reaches the target as an argument.
_START_OPTIONS = frozenset({"workflow_id", "queue", "timeout", "deadline"})


@attrs.frozen
class DebounceCall:
    """One `debounce(...)` call: what its debouncer is handed (as JSON data)."""

    workflow: str
    args: list[Any]
    kwargs: dict[str, Any]
    period: float
    max_wait: float | None

    def update_args(self) -> tuple[Any, ...]:
        return (self.workflow, self.args, self.kwargs, self.period, self.max_wait)

    @classmethod
    def of(cls, request: UpdateRequest) -> DebounceCall:
        name, args, kwargs, period, max_wait = request.args
        return cls(str(name), list(args), dict(kwargs), float(period), max_wait)


def debounce_call(
    key: object,
    period: timedelta | float,
    wf: Workflow[..., Any] | BoundWorkflow[Any] | str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    max_wait: timedelta | float | None,
    *,
    registered_here: bool = True,
) -> DebounceCall:
    """Check a `debounce(...)` call's arguments (before anything is sent) and name its
    target; a `TypeError`/`ValueError` says what was wrong. An engine registers the
    workflows it runs (`registered_here`): a name it does not know is refused at once."""
    if not isinstance(key, str) or not key:
        raise TypeError(f"debounce(key=...) takes a non-empty str, got {key!r}")
    if isinstance(wf, str) and wf:
        # A client names a workflow it need not import: the debouncer looks it up where
        # it runs, and fails there, saying so, if that process does not register it.
        name = lookup(wf).workflow_name if registered_here else wf
    elif isinstance(wf, (Workflow, BoundWorkflow)):
        wf, args, kwargs = unbind(wf, tuple(args), dict(kwargs))
        name = wf.workflow_name
    else:
        raise TypeError(
            f"debounce({key!r}, ...) takes a workflow decorated with @workflow (or its "
            f"registered name), got {wf!r}"
        )
    taken = sorted(_START_OPTIONS & set(kwargs))
    if taken:
        raise TypeError(
            f"debounce({key!r}, ...): {', '.join(taken)} would be an option of the target's "
            "start, not an argument of it; a debounced run's id is derived from the key"
        )
    seconds = _positive(period, f"debounce({key!r}, period=...)")
    most = None if max_wait is None else _positive(max_wait, f"debounce({key!r}, max_wait=...)")
    if most is not None and most < seconds:
        raise ValueError(
            f"debounce({key!r}, ...): max_wait={most:g}s is shorter than period={seconds:g}s, "
            "so every start would come at max_wait; give a max_wait of at least the period, "
            "or none"
        )
    return DebounceCall(name, list(args), dict(kwargs), seconds, most)


def _positive(value: timedelta | float, what: str) -> float:
    seconds = as_seconds(value, what)
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be a positive number of seconds or timedelta, got {value!r}")
    return seconds


@workflow(name=DEBOUNCER_NAME, updates=[DEBOUNCE_UPDATE])
def debouncer(key: str) -> Generator[Any, Any, None]:
    """The run behind one debounced key: one window a generation."""
    target = target_id(key, context().generation)
    request: UpdateRequest = yield ReceiveUpdate(DEBOUNCE_UPDATE)
    latest = DebounceCall.of(request)
    yield Reply(request, target)
    opened: datetime = yield Now()
    while True:
        wait = latest.period
        if latest.max_wait is not None:
            now: datetime = yield Now()
            left = latest.max_wait - (now - opened).total_seconds()
            if left <= 0:
                break
            wait = min(wait, left)
        next_request: UpdateRequest | None = yield ReceiveUpdate(DEBOUNCE_UPDATE, timeout=wait)
        if next_request is None:
            break
        latest = DebounceCall.of(next_request)
        yield Reply(next_request, target)
    # The target outlives this generation, which continues as new at once ("abandon":
    # the default parent close policy would stop it).
    yield Start(
        lookup(latest.workflow),
        *latest.args,
        workflow_id=target,
        parent_close="abandon",
        **latest.kwargs,
    )
    yield ContinueAsNew(key)
