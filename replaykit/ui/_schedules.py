"""The UI's schedules page: each schedule the store knows, its next fire times and its
last runs, and the operator's pause, resume and trigger (as `replaykit schedules` does
them, through `replaykit.runtime.schedules`; the UI runs no workflow code)."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from replaykit.runtime.schedules import (
    list_schedules,
    pause_schedule,
    resume_schedule,
    trigger_schedule,
    upcoming_ticks,
)
from replaykit.stores.base import Store, WorkflowFilter

__all__ = ["ACTIONS", "ScheduleView", "act", "schedules_page"]

#: Fire times shown for each schedule, and its last runs.
NEXT_TICKS = 3
LAST_RUNS = 5
# Runs of a schedule's workflow read to find its last ones (its own ids among them).
_RUNS_READ = 200


@attrs.frozen
class LastRun:
    workflow_id: str
    status: str
    created: str


@attrs.frozen
class ScheduleView:
    name: str
    workflow_name: str
    cron: str
    tz: str
    queue: str
    paused: bool
    next_ticks: list[str]
    last_runs: list[LastRun]
    trigger_asked: str
    defined_here: bool


def _when(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _last_runs(store: Store, name: str, workflow_name: str) -> list[LastRun]:
    prefix = f"schedule:{name}:"
    rows = store.list_workflows(
        WorkflowFilter(name=workflow_name, limit=_RUNS_READ, payloads=False)
    )
    mine = [row for row in rows if row.workflow_id.startswith(prefix)]
    return [
        LastRun(row.workflow_id, row.status.value, _when(row.created_at))
        for row in mine[:LAST_RUNS]
    ]


def schedules_page(store: Store, *, now: datetime | None = None) -> list[ScheduleView]:
    """Every schedule the store knows (the UI imports no workflow code)."""
    now = now or datetime.now(UTC)
    views = []
    for info in list_schedules(store, registered=(), now=now):
        views.append(
            ScheduleView(
                name=info.name,
                workflow_name=info.workflow_name,
                cron=info.cron,
                tz=info.tz or "UTC",
                queue=info.queue or "",
                paused=info.paused,
                next_ticks=[_when(t) for t in upcoming_ticks(info.cron, info.tz, now, NEXT_TICKS)],
                last_runs=_last_runs(store, info.name, info.workflow_name),
                trigger_asked=_when(info.trigger_requested_at),
                defined_here=info.defined_here,
            )
        )
    return views


#: What each action does to the schedule, and the notice shown after it (chosen by the
#: action's name, never taken from the address).
ACTIONS = {
    "pause": "Paused: no engine starts its ticks until it is resumed.",
    "resume": "Resumed: its next tick starts as usual (missed ticks start only for a "
    "schedule defined with backfill=True).",
    "trigger": "Triggered: an engine that defines the schedule starts one run of it now, "
    "outside its cron; it is listed below once started.",
}


def act(store: Store, action: str, name: str) -> None:
    """Pause, resume or trigger `name` for every engine on the store."""
    if action == "pause":
        pause_schedule(store, name, registered=())
    elif action == "resume":
        resume_schedule(store, name, registered=())
    elif action == "trigger":
        trigger_schedule(store, name, registered=())
    else:
        raise ValueError(f"no schedule action {action!r}; use one of {', '.join(ACTIONS)}")
