"""The testing kit's cancels: `Cancel(at=..., grace=..., reason=...)` in `run(cancels=...)`.

A `Cancel` asks the run (`to`, default the run under test) to cancel at a virtual time,
as `engine.cancel(workflow_id, grace=..., reason=...)` does: the request is kept in the
store, the engine running the run delivers `Cancelled` at its current yield, and the
grace runs out on the kit's clock (virtual time: a 60 s grace takes no wall time). A
second cancel, or one of a run that is not running, stops the run as `terminate` does;
one of a finished run is listed in `RunResult.undelivered` with the reason.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import attrs

from replaykit.errors import WorkflowNotFound
from replaykit.log import Status
from replaykit.runtime.cancels import DEFAULT_GRACE, checked_grace, second_cancel
from replaykit.stores.base import CancelRequest, Store
from replaykit.testing._arrivals import Arrives

if TYPE_CHECKING:
    from replaykit.runtime.engine import Engine

__all__ = ["Cancel", "deliver_cancel"]


def _as_at(value: timedelta | datetime | float) -> timedelta | datetime:
    if isinstance(value, (timedelta, datetime)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timedelta(seconds=value)
    raise TypeError(
        f"Cancel(at=...) takes a timedelta after the start, a number of seconds, or an aware "
        f"datetime; got {value!r}"
    )


def _as_grace(value: float) -> float:
    return checked_grace(value, "the run under test")


@attrs.frozen
class Cancel(Arrives):
    """The test cancels a run at a virtual time, as `engine.cancel` would.

    `at` is when (a `timedelta` or seconds after the start, or an aware `datetime`);
    `grace` (seconds, default 60) is the time the workflow has to clean up after
    `Cancelled` before it is stopped; `reason` is kept as the cancel's reason; `to` is
    a workflow id (default: the run under test). At one instant, messages and updates
    are delivered first, then cancels, each in the order given.
    """

    at: timedelta | datetime = attrs.field(default=timedelta(0), converter=_as_at)
    grace: float = attrs.field(default=DEFAULT_GRACE, converter=_as_grace, kw_only=True)
    reason: str = attrs.field(default="", kw_only=True)
    to: str | None = attrs.field(default=None, kw_only=True)


def deliver_cancel(
    store: Store, engine: Engine | None, cancel: Cancel, target: str, at: datetime
) -> CancelRequest | str:
    """Ask `target` to cancel at `at`: the request kept (returned, for the session's
    journal), or why nothing was asked (a finished run: the kit lists it undelivered).
    A second cancel, or one of a run that does not run, stops it through the engine."""
    row = store.get_workflow(target)
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {target!r}")
    if row.status.is_terminal:
        return f"workflow {target!r} had finished ({row.status.value}): nothing to cancel"
    if row.status is Status.PENDING:
        request = CancelRequest(cancel.reason, at + timedelta(seconds=cancel.grace), at)
        if store.request_cancel(target, request) == request:
            if engine is not None:
                engine.cancels.deliver(target)
            return request
        detail = second_cancel(cancel.reason)
    else:
        detail = cancel.reason
    if engine is not None:
        engine.terminate(target, reason=detail)
    return f"workflow {target!r} was stopped at once ({detail or 'not running'})"
