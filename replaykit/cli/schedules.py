"""`replaykit schedules list|pause|resume|trigger|backfill|delete`, through the store.

The module-level functions of `runtime.schedules` do the work; no Engine starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import click

from replaykit._text import printable, when_text
from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import CliError, Group, UsageError
from replaykit.cli.fit import Fit
from replaykit.cli.options import datetime_option, json_option, url_option, wide_option
from replaykit.cli.printer import Printer
from replaykit.cli.rows import iso
from replaykit.cli.store import store_at
from replaykit.runtime.schedules import (
    ScheduleInfo,
    ScheduleNotFound,
    backfill_schedule,
    delete_schedule,
    list_schedules,
    pause_schedule,
    resume_schedule,
    trigger_schedule,
)
from replaykit.stores.base import ScheduleState, Store

__all__ = [
    "schedules_backfill_command",
    "schedules_delete_command",
    "schedules_group",
    "schedules_list_command",
    "schedules_pause_command",
    "schedules_resume_command",
    "schedules_trigger_command",
]


@contextmanager
def _schedule_errors() -> Iterator[None]:
    """A name the store does not know exits 1 with its message; a bad range or time, 2."""
    try:
        yield
    except ScheduleNotFound as exc:
        raise CliError(str(exc)) from exc
    except ValueError as exc:
        raise UsageError(" ".join(str(exc).split())) from exc


def _schedule_state(store: Store, name: str) -> ScheduleState | None:
    return store.schedule_states().get(name)


def _schedule_requests(info: ScheduleInfo) -> str:
    asked: list[str] = []
    if info.trigger_requested_at is not None:
        asked.append(f"trigger asked {when_text(info.trigger_requested_at)}")
    if info.backfill_requested is not None:
        start, end = info.backfill_requested
        asked.append(f"backfill {when_text(start)} to {when_text(end)}")
    return "; ".join(asked) or "-"


def _schedule_json(info: ScheduleInfo) -> dict[str, Any]:
    backfill = info.backfill_requested
    return {
        "name": info.name,
        "workflow": info.workflow_name,
        "cron": info.cron,
        "tz": info.tz,
        "queue": info.queue,
        "backfill": info.backfill,
        "paused": info.paused,
        "next_tick": iso(info.next_tick),
        "trigger_requested_at": iso(info.trigger_requested_at),
        "backfill_requested": (
            None if backfill is None else {"start": iso(backfill[0]), "end": iso(backfill[1])}
        ),
        "updated_at": iso(info.updated_at),
    }


def _scheduler_pickup(what: str, state: ScheduleState | None) -> str:
    queue = f" on queue {state.queue!r}" if state is not None and state.queue else ""
    return (
        f"The next engine whose code defines the schedule starts {what}{queue} within its "
        "poll interval (paused or not); this command runs no workflow code"
    )


@click.group("schedules", cls=Group)
def schedules_group() -> None:
    """List, pause, resume, trigger, backfill and delete schedules, through the store.

    Schedules are defined in your code (@schedule); engines keep their state
    in the store, where these commands change it without importing that code.
    Engines see a change at their next look at the store (one poll interval).
    """


@schedules_group.command("list")
@url_option
@wide_option
@json_option
def schedules_list_command(url: str, wide: bool, as_json: bool) -> None:
    """Each schedule the store knows: its workflow, cron, zone, queue, state and next tick.

    A schedule is in the store once an engine whose code defines it has run on
    it. REQUESTS are the triggers and backfills asked for that no engine has
    carried out yet. NEXT is the next tick after now (UTC), paused or not.
    """
    with store_at(url) as store:
        # registered=(): the store's schedules only. Whatever this process has
        # imported is not the application's code, whose engines define them.
        infos = list_schedules(store, registered=())
    if as_json:
        echo_json([_schedule_json(info) for info in infos])
        return
    if not infos:
        click.echo(
            "no schedules in the store (an engine registers the schedules its code defines "
            "when it starts)"
        )
        return
    Printer(wide=wide).table(
        ["NAME", "WORKFLOW", "CRON", "TZ", "QUEUE", "PAUSED", "NEXT (UTC)", "REQUESTS"],
        [
            [
                info.name,
                info.workflow_name,
                info.cron,
                info.tz or "UTC",
                info.queue or "-",
                "yes" if info.paused else "no",
                when_text(info.next_tick) if info.next_tick is not None else "?",
                _schedule_requests(info),
            ]
            for info in infos
        ],
        [{5: "bold yellow"} if info.paused else {} for info in infos],
        # PAUSED and NEXT are never cut; at 80 columns the others share what is
        # left, none narrower than its header.
        fit={
            0: Fit(8, weight=3),
            1: Fit(8, weight=2),
            2: Fit(7),
            3: Fit(5),
            4: Fit(5),
            7: Fit(8, weight=3),
        },
    )


@schedules_group.command("pause")
@click.argument("name")
@url_option
def schedules_pause_command(name: str, url: str) -> None:
    """Pause schedule NAME for every engine on the store, until it is resumed.

    Engines skip its ticks from their next look at the store; runs already
    started go on. Durable across restarts and deploys.
    """
    with store_at(url) as store, _schedule_errors():
        changed = pause_schedule(store, name, registered=())
    if changed:
        echo(
            f"paused schedule {name!r}: engines skip its ticks from their next look at the "
            f"store; runs already started go on. `replaykit schedules resume {name}` undoes it"
        )
    else:
        echo(f"schedule {name!r} was paused already; nothing changed")


@schedules_group.command("resume")
@click.argument("name")
@url_option
def schedules_resume_command(name: str, url: str) -> None:
    """Resume paused schedule NAME.

    The ticks missed while it was paused are not started, unless the schedule
    has backfill=True: then engines start them, as after downtime.
    """
    with store_at(url) as store, _schedule_errors():
        changed = resume_schedule(store, name, registered=())
        state = _schedule_state(store, name)
    if not changed:
        echo(f"schedule {name!r} was not paused; nothing changed")
        return
    missed = (
        "engines start the ticks missed while it was paused (it has backfill=True)"
        if state is not None and state.backfill
        else "the ticks missed while it was paused are not started (`replaykit schedules "
        f"backfill {name} --from T --to T` starts them)"
    )
    echo(f"resumed schedule {name!r}: engines fire its ticks again from their next look; {missed}")


@schedules_group.command("trigger")
@click.argument("name")
@url_option
@json_option
def schedules_trigger_command(name: str, url: str, as_json: bool) -> None:
    """Ask for one run of schedule NAME now, outside its cron.

    The run's id is schedule:NAME:manual:<UTC instant>, and its tick that
    instant. A trigger asked for while another is pending joins it: one run.
    """
    with store_at(url) as store, _schedule_errors():
        before = _schedule_state(store, name)
        run_id = trigger_schedule(store, name, registered=())
    pending_since = None if before is None else before.trigger_at
    if as_json:
        echo_json({"schedule": name, "run_id": run_id, "joined": pending_since is not None})
        return
    if pending_since is not None:
        asked = (
            f"a trigger of schedule {name!r} asked at {when_text(pending_since)} UTC is "
            f"still pending, and this one joins it: {run_id}"
        )
    else:
        asked = f"asked for a run of schedule {name!r} now: {run_id}"
    echo(f"{asked}. {_scheduler_pickup('it', before)}.")


@schedules_group.command("backfill")
@click.argument("name")
@datetime_option(
    "--from",
    "start",
    required=True,
    help="The first instant of the range: ISO 8601 (2030-01-01T00:00, or with an offset, "
    "2030-01-01T02:00+01:00; without one it is UTC), or a duration ago (7d).",
)
@datetime_option(
    "--to", "end", required=True, help="The end of the range, not included; written as --from is."
)
@url_option
@json_option
def schedules_backfill_command(
    name: str, start: datetime, end: datetime, url: str, as_json: bool
) -> None:
    """Ask for a run of every tick of schedule NAME in [--from, --to).

    Ticks that already have a run (from the cron or an earlier backfill) are
    not run again. At most 10,000 ticks per backfill, and one backfill pending
    per schedule at a time. The next engine whose code defines the schedule
    starts the runs, paused or not.
    """
    if end <= start:
        raise UsageError(
            f"--to {end.isoformat()} is not after --from {start.isoformat()}: a backfill takes "
            "the ticks in [--from, --to); write the earlier time as --from"
        )
    with store_at(url) as store:
        state = _schedule_state(store, name)
        # The library refuses this too, but as a ValueError, which would exit 2:
        # it is the store's state that stands in the way, not what was written.
        if (
            state is not None
            and state.backfill_start is not None
            and state.backfill_end is not None
            and (state.backfill_start, state.backfill_end) != (start, end)
        ):
            raise CliError(
                f"schedule {name!r} has a backfill from {when_text(state.backfill_start)} to "
                f"{when_text(state.backfill_end)} UTC pending, not yet run by an engine that "
                "defines it; ask for this range once that one is done (`replaykit schedules "
                "list` shows it)"
            )
        with _schedule_errors():
            run_ids = backfill_schedule(store, name, start, end, registered=())
    if as_json:
        echo_json({"schedule": name, "start": iso(start), "end": iso(end), "run_ids": run_ids})
        return
    span = f"from {when_text(start)} to {when_text(end)} UTC"
    if not run_ids:
        echo(f"schedule {name!r} has no tick {span}; nothing to run")
        return
    echo(
        f"asked for the {len(run_ids)} tick(s) of schedule {name!r} {span} (the first "
        f"{run_ids[0]}, the last {run_ids[-1]}); ticks that already have a run keep it. "
        + _scheduler_pickup("the others", state)
        + "."
    )


@schedules_group.command("delete")
@click.argument("name")
@url_option
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def schedules_delete_command(name: str, url: str, yes: bool) -> None:
    """Remove schedule NAME's state from the store: its paused flag and pending requests.

    Its definition lives in your code: engines running now drop the schedule at
    their next look, and an engine that starts with it in its code registers it
    again, unpaused. To stop it for good, remove it from the code, and pause it
    until that deploy is out.
    """
    with store_at(url) as store, _schedule_errors():
        states = store.schedule_states()
        if name not in states:
            raise ScheduleNotFound(name, states)
        if not yes:
            click.confirm(
                printable(
                    f"delete schedule {name!r} ({states[name].workflow_name}) from the store, "
                    "with its paused flag and pending requests?"
                ),
                abort=True,
            )
        delete_schedule(store, name)
    echo(
        f"deleted schedule {name!r} from the store. Engines running now drop it at their next "
        "look; an engine whose code defines it registers it again, unpaused, when it starts: "
        "remove it from the code to stop it for good"
    )
