"""The UI's workers page: the engines heard from lately, their versions and heartbeats,
what they said they run, and how many runs each holds."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from replaykit._waiting import LIVE_WITHIN, live_engines
from replaykit.log import Status
from replaykit.stores.base import Store, WorkflowFilter

__all__ = ["HEARD_WITHIN", "WorkerView", "workers_page"]

#: Engines heard from within this many seconds are listed (a live one beats every
#: lease_seconds / 3; one silent past LIVE_WITHIN is shown as silent).
HEARD_WITHIN = 3600.0
#: How many registered names a row shows before "and N more".
_NAMES_SHOWN = 8


@attrs.frozen
class WorkerView:
    executor_id: str
    app_version: str
    seen_at: str
    seconds_ago: int
    live: bool
    holds: int
    workflows: str
    queues: str


def _names(names: tuple[str, ...] | None, more: int) -> str:
    if names is None:
        return "(not said)"
    shown = list(names[:_NAMES_SHOWN])
    left = len(names) - len(shown) + more
    return ", ".join(shown) + (f" and {left} more" if left else "") if shown else "-"


def workers_page(store: Store, *, now: datetime | None = None) -> list[WorkerView] | None:
    """The engines heard from within HEARD_WITHIN, newest beat first; None when the store
    keeps no heartbeats it can list."""
    now = now or datetime.now(UTC)
    engines = live_engines(store, now=now, within=HEARD_WITHIN)
    if engines is None:
        return None
    views = []
    for engine in sorted(engines, key=lambda e: e.seen_at, reverse=True):
        ago = max(int((now - engine.seen_at).total_seconds()), 0)
        holds = store.count_workflows(
            WorkflowFilter(status=Status.PENDING, executor_id=engine.executor_id)
        )
        registered = engine.registered
        views.append(
            WorkerView(
                executor_id=engine.executor_id,
                app_version=engine.app_version,
                seen_at=engine.seen_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
                seconds_ago=ago,
                live=ago <= LIVE_WITHIN,
                holds=holds,
                workflows="(not said)"
                if registered is None
                else _names(registered.workflows, registered.more_workflows),
                queues="(not said)"
                if registered is None
                else _names(registered.queues, registered.more_queues),
            )
        )
    return views
