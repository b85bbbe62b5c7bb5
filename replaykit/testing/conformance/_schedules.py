"""`check_store`'s checks of schedules: their stored states and the requests made of
them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from replaykit.stores.base import ScheduleSpec, Store
from replaykit.testing.conformance._support import _BAD_NAMES, _T0, _aware_utc, _equal, _raises

__all__ = ["check_schedule_requests", "check_schedule_states"]


def _schedule_fields(state: Any) -> tuple[Any, ...]:
    """A schedule state's fields a check compares: all but `updated_at`."""
    return (
        state.spec,
        state.paused,
        state.trigger_at,
        state.backfill_start,
        state.backfill_end,
    )


def _schedule_name_attempts(store: Store, bad: str) -> dict[str, Callable[[], Any]]:
    """Every schedule-state call, each given `bad` as the schedule's name."""
    hour = timedelta(hours=1)
    return {
        "register_schedules": lambda: store.register_schedules(
            [ScheduleSpec("sc-a", "wf", "* * * * *"), ScheduleSpec(bad, "wf", "* * * * *")], _T0
        ),
        "set_schedule_paused": lambda: store.set_schedule_paused(bad, True, _T0),
        "request_schedule_trigger": lambda: store.request_schedule_trigger(bad, _T0),
        "request_schedule_backfill": lambda: store.request_schedule_backfill(
            bad, _T0, _T0 + hour, _T0
        ),
        "clear_schedule_request": lambda: store.clear_schedule_request(bad, trigger_at=_T0),
        "delete_schedule_state": lambda: store.delete_schedule_state(bad),
    }


def check_schedule_states(store: Store) -> None:
    """Definitions are upserted, pausing is a flag every engine reads, and `updated_at`
    moves only when something changed."""
    _equal("schedule_states of an empty store", {}, store.schedule_states())
    minutely = ScheduleSpec("sc-a", "wf", "* * * * *")
    nightly = ScheduleSpec("sc-b", "wf.nightly", "0 3 * * *", "Europe/Berlin", "q", backfill=True)
    store.register_schedules([minutely, nightly], _T0)
    states = store.schedule_states()
    _equal("names of the registered schedules", {"sc-a", "sc-b"}, set(states))
    for spec in (minutely, nightly):
        state = states[spec.name]
        _equal(f"name {spec.name!r} keys its state", spec.name, state.name)
        _equal(
            f"a new schedule {spec.name!r}: its definition, unpaused, no requests",
            (spec, False, None, None, None),
            _schedule_fields(state),
        )
        _equal(f"updated_at of the new schedule {spec.name!r}", _T0, state.updated_at)
        _aware_utc(f"updated_at of {spec.name!r}", state.updated_at)
    store.register_schedules([minutely], _T0 + timedelta(days=1))
    _equal(
        "updated_at after registering the same definition again",
        _T0,
        store.schedule_states()["sc-a"].updated_at,
    )
    store.register_schedules([], _T0 + timedelta(days=1))
    _equal("states after registering no schedule", states, store.schedule_states())

    paused_at = _T0 + timedelta(days=2)
    _equal(
        "set_schedule_paused of a stored schedule",
        True,
        store.set_schedule_paused("sc-a", True, paused_at),
    )
    _equal(
        "set_schedule_paused of a paused schedule (idempotent)",
        True,
        store.set_schedule_paused("sc-a", True, _T0 + timedelta(days=3)),
    )
    state = store.schedule_states()["sc-a"]
    _equal("paused flag after pausing", True, state.paused)
    _equal("updated_at after pausing twice: the first pause's", paused_at, state.updated_at)
    _equal(
        "the other schedule after one was paused",
        states["sc-b"],
        store.schedule_states()["sc-b"],
    )
    faster = ScheduleSpec("sc-a", "wf", "*/2 * * * *", queue="fast")
    store.register_schedules([faster], _T0 + timedelta(days=4))
    state = store.schedule_states()["sc-a"]
    _equal(
        "a new definition of a paused schedule: replaced, still paused",
        (faster, True, None, None, None),
        _schedule_fields(state),
    )
    _equal("updated_at after a new definition", _T0 + timedelta(days=4), state.updated_at)
    store.set_schedule_paused("sc-a", False, _T0 + timedelta(days=5))
    _equal("paused flag after resuming", False, store.schedule_states()["sc-a"].paused)
    _equal(
        "set_schedule_paused of an unknown schedule",
        False,
        store.set_schedule_paused("sc-missing", True, _T0),
    )
    _equal(
        "names after pausing an unknown schedule", {"sc-a", "sc-b"}, set(store.schedule_states())
    )

    before = store.schedule_states()
    for kind, bad in _BAD_NAMES.items():
        for what, attempt in _schedule_name_attempts(store, bad).items():
            _raises(f"{what} of a schedule name that is {kind}", ValueError, attempt)
    _equal(
        "states after the refusals (a refused register_schedules writes none of its specs)",
        before,
        store.schedule_states(),
    )


def check_schedule_requests(store: Store) -> None:
    """A trigger or a backfill is asked for once (a second request joins the first) and
    cleared only by the engine that carried out that very request."""
    store.register_schedules([ScheduleSpec("sr-a", "wf", "* * * * *")], _T0)
    at = _T0 + timedelta(hours=5, microseconds=7)
    _equal(
        "request_schedule_trigger of a stored schedule",
        at,
        store.request_schedule_trigger("sr-a", at),
    )
    _equal(
        "a second trigger request joins the pending one",
        at,
        store.request_schedule_trigger("sr-a", at + timedelta(seconds=1)),
    )
    _equal(
        "request_schedule_trigger of an unknown schedule",
        None,
        store.request_schedule_trigger("sr-missing", at),
    )
    _equal("the pending trigger's instant", at, store.schedule_states()["sr-a"].trigger_at)
    store.clear_schedule_request("sr-a", trigger_at=at + timedelta(seconds=1))
    _equal(
        "the trigger after clearing another instant",
        at,
        store.schedule_states()["sr-a"].trigger_at,
    )
    store.clear_schedule_request("sr-a", trigger_at=at)
    _equal("the trigger after clearing it", None, store.schedule_states()["sr-a"].trigger_at)
    newer = at + timedelta(minutes=1)
    store.request_schedule_trigger("sr-a", newer)
    store.clear_schedule_request("sr-a", trigger_at=at)  # an engine done with the old one, late
    _equal(
        "a trigger asked for after the one carried out is kept",
        newer,
        store.schedule_states()["sr-a"].trigger_at,
    )

    asked = (_T0, _T0 + timedelta(hours=1))
    _equal(
        "request_schedule_backfill of a stored schedule",
        asked,
        store.request_schedule_backfill("sr-a", *asked, _T0),
    )
    _equal(
        "a second backfill request answers the pending range, which is kept",
        asked,
        store.request_schedule_backfill("sr-a", _T0, _T0 + timedelta(hours=2), _T0),
    )
    _equal(
        "request_schedule_backfill of an unknown schedule",
        None,
        store.request_schedule_backfill("sr-missing", *asked, _T0),
    )
    store.set_schedule_paused("sr-a", True, _T0 + timedelta(hours=6))
    store.register_schedules([ScheduleSpec("sr-a", "wf", "*/5 * * * *")], _T0 + timedelta(hours=6))
    state = store.schedule_states()["sr-a"]
    _equal(
        "requests after pausing and a new definition",
        (newer, *asked),
        (state.trigger_at, state.backfill_start, state.backfill_end),
    )
    store.clear_schedule_request("sr-a", backfill=(asked[0], asked[1] + timedelta(hours=1)))
    state = store.schedule_states()["sr-a"]
    _equal(
        "the backfill after clearing another range",
        asked,
        (state.backfill_start, state.backfill_end),
    )
    store.clear_schedule_request("sr-a", backfill=asked)
    state = store.schedule_states()["sr-a"]
    _equal(
        "clearing the backfill keeps the trigger",
        (newer, None, None),
        (state.trigger_at, state.backfill_start, state.backfill_end),
    )
    later = (asked[1], asked[1] + timedelta(hours=1))
    store.request_schedule_backfill("sr-a", *later, _T0)
    store.clear_schedule_request("sr-a", trigger_at=newer, backfill=asked)
    state = store.schedule_states()["sr-a"]
    _equal(
        "one clear of both: the trigger carried out goes, a newer backfill is kept",
        (None, *later),
        (state.trigger_at, state.backfill_start, state.backfill_end),
    )
    _aware_utc("a backfill's start read back", state.backfill_start)

    _equal("delete_schedule_state of a stored schedule", True, store.delete_schedule_state("sr-a"))
    _equal("delete_schedule_state again", False, store.delete_schedule_state("sr-a"))
    _equal("schedule_states after the delete", {}, store.schedule_states())
    store.clear_schedule_request("sr-a", trigger_at=newer)  # gone: nothing to do
    _equal(
        "request_schedule_trigger of a deleted schedule",
        None,
        store.request_schedule_trigger("sr-a", at),
    )
    store.register_schedules([ScheduleSpec("sr-a", "wf", "* * * * *")], _T0 + timedelta(days=1))
    state = store.schedule_states()["sr-a"]
    _equal(
        "a deleted schedule registered again starts afresh",
        (False, None, None, None),
        (state.paused, state.trigger_at, state.backfill_start, state.backfill_end),
    )
