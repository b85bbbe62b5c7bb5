"""Schedules: start a workflow once per cron tick, across all engines.

Each tick's run has an id derived from the schedule and the tick's UTC
instant, so when several engines see the same tick only one of them creates
the run (the store's create is idempotent by id): a tick never runs twice.
Cron expressions are parsed by croniter (the `schedules` extra).

Schedules are defined in code; what operators change at run time lives in the
store's `schedules` table, shared by every engine on it: whether a schedule is
paused, and the runs asked of it by hand (a trigger, a backfill) that no engine
has started yet. The module-level functions (`list_schedules`,
`pause_schedule`, ...) take a store, so a client or the CLI, which import no
workflow code, can use them; an engine's `ScheduleLoop` offers the same with
its own schedules as the registered ones.

Time zones. A schedule with `tz=` reads its cron expression in that zone's wall
time. Where the wall clock jumps (DST), the rule is cron's (Vixie cron's, as
in Debian's cron(8)):

- a schedule whose minute or hour field starts with `*` (`*/15 * * * *`,
  `0 * * * *`, `@hourly`) follows real time: in the hour that is repeated in
  autumn it fires in both passes, and wall times skipped in spring do not
  happen;
- any other schedule (a fixed time, such as `30 2 * * *`) fires once per day
  it matches: a repeated wall time fires at its first occurrence only, and a
  skipped one fires at the end of the gap (02:30 on the spring-forward day in
  Europe/Berlin fires at 03:00 local, 01:00 UTC). Ticks that land on one
  instant fire once.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import attrs

from replaykit.errors import ScheduleNotFound
from replaykit.registry import Workflow
from replaykit.runtime.overlaps import check_policy
from replaykit.runtime.queues import Queue
from replaykit.stores._checks import check_names
from replaykit.stores.base import (
    MAX_NAME_BYTES,
    ScheduleSpec,
    ScheduleState,
    Store,
)

__all__ = [
    "HOLDING_POLICIES",
    "MAX_BACKFILL_TICKS",
    "OVERLAP_POLICIES",
    "Schedule",
    "ScheduleInfo",
    "ScheduleNotFound",
    "backfill_schedule",
    "delete_schedule",
    "list_schedules",
    "pause_schedule",
    "registered_schedules",
    "resume_schedule",
    "schedule",
    "ticks_between",
    "ticks_in",
    "trigger_schedule",
    "upcoming_ticks",
]

W = TypeVar("W", bound=Workflow[..., Any])

log = logging.getLogger("replaykit.engine")

#: The most ticks one backfill may start; a longer range is refused, not cut.
MAX_BACKFILL_TICKS = 10_000

_schedules: dict[str, Schedule] = {}
_lock = threading.Lock()

# Cron's words for a schedule that follows real time across DST changes.
_REAL_TIME_ALIASES = frozenset({"@hourly"})
# What a run id adds to a schedule's name: "schedule:", ":manual:" and an instant.
_RUN_ID_OVERHEAD = len("schedule::manual:2030-01-01T00:00:00.000000+00:00")


def _croniter() -> Any:
    try:
        from croniter import croniter
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise ImportError("schedules need croniter: pip install 'replaykit[schedules]'") from None
    return croniter


def _zone(schedule_name: str, tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        close = difflib.get_close_matches(tz, sorted(available_timezones()), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"schedule {schedule_name!r}: {tz!r} is not a time zone this system knows{hint} "
            "Give an IANA name such as 'Europe/Berlin' or 'America/New_York' "
            "(zoneinfo.available_timezones() lists them; `pip install tzdata` where the "
            "system has no zone database)"
        ) from None


def _jitter_seconds(value: timedelta | float) -> float:
    # Anything else goes through unchanged, for `_check_jitter` to refuse by name.
    return value.total_seconds() if isinstance(value, timedelta) else value


@attrs.frozen
class Schedule:
    """Start `workflow(tick)` at every tick of `cron`, read in time zone `tz` (default UTC).

    The workflow receives the tick as a UTC datetime (`tick.astimezone(ZoneInfo(tz))`
    gives the local time).
    """

    cron: str
    workflow: Workflow[..., Any] = attrs.field(eq=False)
    name: str
    backfill: bool = False
    queue: str | None = None
    tz: str | None = None
    #: What a tick does while a run of the schedule is live (`OVERLAP_POLICIES`).
    overlap: str = "allow_all"
    #: Seconds (given as a timedelta or seconds): each tick starts up to this much after
    #: its instant (`jitter_for`).
    jitter: float = attrs.field(default=0.0, converter=_jitter_seconds)

    def __attrs_post_init__(self) -> None:
        check_names(schedule_name=self.name)
        check_policy(self.overlap, OVERLAP_POLICIES, f"schedule {self.name!r}")
        if self.overlap in HOLDING_POLICIES:
            if self.queue is not None:
                raise ValueError(
                    f"schedule {self.name!r}: overlap={self.overlap!r} runs the schedule on a "
                    f"queue of its own ({hold_queue_name(self.name)!r}, one run at a time), so "
                    f"it takes no queue={self.queue!r}; drop one of them"
                )
            # Registered with the schedule, in every process whose code defines it: the
            # engines that fire its ticks claim its held runs.
            Queue(hold_queue_name(self.name), concurrency=1)
        if len(self.name.encode("utf-8")) + _RUN_ID_OVERHEAD > MAX_NAME_BYTES:
            raise ValueError(
                f"schedule name {self.name[:60]!r}... is too long: its runs' ids "
                f"(schedule:<name>:<instant>) must fit in {MAX_NAME_BYTES:,} bytes, so a name "
                f"may have at most {MAX_NAME_BYTES - _RUN_ID_OVERHEAD} bytes"
            )
        if not _croniter().is_valid(self.cron):
            raise ValueError(
                f"schedule {self.name!r}: {self.cron!r} is not a valid cron expression "
                "(five fields: minute hour day month weekday; a sixth for seconds)"
            )
        if self.tz is not None:
            _zone(self.name, self.tz)
        _check_fires(self.name, self.cron, self.tz)
        _check_jitter(self.name, self.cron, self.tz, self.jitter)

    @property
    def spec(self) -> ScheduleSpec:
        """The definition as the store keeps it (for listings and clients)."""
        return ScheduleSpec(
            self.name, self.workflow.workflow_name, self.cron, self.tz, self.queue, self.backfill
        )

    def run_id(self, tick: datetime) -> str:
        return _tick_run_id(self.name, tick)

    def next_tick(self, after: datetime) -> datetime:
        """The first tick strictly after `after` (an aware datetime), as a UTC datetime."""
        return _next_tick(self.cron, self.tz, after)

    @property
    def hold_queue(self) -> str | None:
        """The queue a schedule that holds ticks back runs them on; None for the others."""
        return hold_queue_name(self.name) if self.overlap in HOLDING_POLICIES else None

    @property
    def run_queue(self) -> str | None:
        """Where a tick's run goes: the hold queue, the schedule's `queue`, or none."""
        return self.hold_queue or self.queue

    def due(self, tick: datetime) -> datetime:
        """When `tick`'s run starts: the tick, plus its jitter."""
        return tick + self.jitter_for(tick)

    def jitter_for(self, tick: datetime) -> timedelta:
        """The tick's share of `jitter`: the same on every engine (a digest of the
        schedule's name and the tick), so that they agree on when it starts."""
        if not self.jitter:
            return timedelta(0)
        digest = hashlib.sha256(f"{self.name}|{tick.astimezone(UTC).isoformat()}".encode())
        fraction = int.from_bytes(digest.digest()[:8], "big") / 2**64
        return timedelta(seconds=self.jitter * fraction)


#: `overlap=` of a schedule: what a tick does while an earlier run of it is live
#: (PENDING or ENQUEUED). `allow_all` starts it anyway; `skip` does not start it;
#: `buffer_one` starts it when the live runs end, keeping at most one so (later ticks
#: are skipped); `buffer_all` keeps every one, started one at a time in order;
#: `cancel_other` cancels the live runs and starts it once they end.
OVERLAP_POLICIES = ("allow_all", "skip", "buffer_one", "buffer_all", "cancel_other")
#: The policies that hold ticks back until the live run ends: their schedules run every
#: tick on a queue of their own with a concurrency of 1 (`hold_queue_name`).
HOLDING_POLICIES = frozenset({"buffer_one", "buffer_all", "cancel_other"})


def hold_queue_name(schedule_name: str) -> str:
    return f"replaykit.schedule:{schedule_name}"


def _check_jitter(name: str, cron: str, tz: str | None, jitter: float) -> None:
    """Refuse a jitter that is not a duration, or one as long as the gap between ticks
    (a tick would then start after the next one's instant)."""
    if not isinstance(jitter, (int, float)) or isinstance(jitter, bool):
        raise TypeError(
            f"schedule {name!r}: jitter must be a timedelta or a number of seconds, got {jitter!r}"
        )
    if not math.isfinite(jitter) or jitter < 0:
        raise ValueError(f"schedule {name!r}: jitter must be 0 or more seconds, got {jitter!r}")
    if not jitter:
        return
    first = _next_tick(cron, tz, datetime.now(UTC))
    gap = (_next_tick(cron, tz, first) - first).total_seconds()
    if jitter >= gap:
        raise ValueError(
            f"schedule {name!r}: a jitter of {jitter:g}s is not shorter than the {gap:g}s "
            f"between its ticks ({cron!r}); give a jitter under the interval"
        )


def _check_fires(name: str, cron: str, tz: str | None) -> None:
    """Refuse an expression that is valid cron but names no date that exists.

    `0 0 31 2 *` (31 February) parses; accepted, it would fail at every round
    of the schedule loop instead of at its declaration.
    """
    try:
        _next_tick(cron, tz, datetime.now(UTC))
    except (ValueError, OverflowError) as exc:
        zone = f" in {tz}" if tz else ""
        raise ValueError(
            f"schedule {name!r}: the cron expression {cron!r} is valid but never fires{zone}: "
            "no date matches it (a day its month does not have, such as 31 February or "
            "30 February, or a year that has passed). Correct its day-of-month, month or "
            f"year field ({type(exc).__name__}: {exc})"
        ) from exc


def _tick_run_id(name: str, tick: datetime) -> str:
    # The UTC instant: unique and stable however the zone's offsets change.
    return f"schedule:{name}:{tick.astimezone(UTC).isoformat()}"


def manual_run_id(name: str, at: datetime) -> str:
    return f"schedule:{name}:manual:{at.astimezone(UTC).isoformat()}"


class _Triggered(Schedule):
    """A schedule as the engine's `fire` sees it for a run asked for by hand.

    The engine names a fired run `entry.run_id(tick)`; this gives a manual run
    an id of its own, so it never takes the id of the tick at the same instant.
    """

    def __attrs_post_init__(self) -> None:
        # Checked when its schedule was declared; a cron that has run out since
        # (a year field) is still triggered by hand.
        pass

    def run_id(self, tick: datetime) -> str:
        return manual_run_id(self.name, tick)


def triggered(entry: Schedule) -> Schedule:
    return _Triggered(
        entry.cron,
        entry.workflow,
        entry.name,
        entry.backfill,
        entry.queue,
        entry.tz,
        entry.overlap,
        entry.jitter,
    )


# -- ticks ------------------------------------------------------------------------------


def _aware(label: str, value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{label} {value.isoformat()} has no time zone; give an aware datetime, e.g. "
            "datetime(..., tzinfo=UTC) or one with a ZoneInfo"
        )
    return value.astimezone(UTC)


def _follows_real_time(cron: str) -> bool:
    fields = cron.split()
    if fields and fields[0].startswith("@"):
        return fields[0].lower() in _REAL_TIME_ALIASES
    return len(fields) >= 2 and (fields[0].startswith("*") or fields[1].startswith("*"))


def _next_tick(cron: str, tz: str | None, after: datetime) -> datetime:
    after = _aware("a tick's start", after)
    if tz is None or tz == "UTC":
        naive = _croniter()(cron, after.replace(tzinfo=None)).get_next(datetime)
        return naive.replace(tzinfo=UTC)  # type: ignore[no-any-return]
    return _next_local_tick(cron, ZoneInfo(tz), _follows_real_time(cron), after)


def _offset_change(before: datetime, after: datetime, zone: tzinfo) -> datetime:
    """The instant between `before` and `after` (UTC, on either side of one change of
    `zone`'s offset) at which the offset changes."""
    # Transitions are on whole seconds, so a search over seconds finds it exactly.
    lo = before.replace(microsecond=0)
    target = after.astimezone(zone).utcoffset()
    low, high = 0, int((after - lo).total_seconds()) + 1
    while low < high:
        mid = (low + high) // 2
        if (lo + timedelta(seconds=mid)).astimezone(zone).utcoffset() == target:
            high = mid
        else:
            low = mid + 1
    return lo + timedelta(seconds=low)


def _repeated(wall: datetime, zone: tzinfo) -> bool:
    """Does the wall time happen twice (the hour the autumn change repeats)?"""
    first = wall.replace(tzinfo=zone, fold=0)
    if first.utcoffset() == wall.replace(tzinfo=zone, fold=1).utcoffset():
        return False
    return first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall


def _instants(wall: datetime, zone: tzinfo, real_time: bool) -> list[datetime]:
    """The UTC instants a tick at local wall time `wall` fires at (see the module's rule)."""
    first = wall.replace(tzinfo=zone, fold=0)
    second = wall.replace(tzinfo=zone, fold=1)
    if first.utcoffset() == second.utcoffset():
        return [first.astimezone(UTC)]
    if _repeated(wall, zone):
        # fold=0 is the first occurrence, fold=1 the second.
        if real_time:
            return [first.astimezone(UTC), second.astimezone(UTC)]
        return [first.astimezone(UTC)]
    # A wall time the spring change skips: fold=1 reads it with the offset after
    # the jump, fold=0 with the one before, so the jump lies between the two.
    if real_time:
        return []
    return [_offset_change(second.astimezone(UTC), first.astimezone(UTC), zone)]


def _next_local_tick(cron: str, zone: ZoneInfo, real_time: bool, after: datetime) -> datetime:
    croniter = _croniter()
    local = after.astimezone(zone)
    wall = local.replace(tzinfo=None)
    best: datetime | None = None
    start = wall
    if _repeated(wall, zone):
        # `after` falls in the repeated hour. Its second pass runs at offset
        # `later`: a real-time schedule's tick at wall time n fires again at
        # n - later, which is after `after` for the first n past after + later.
        earlier = wall.replace(tzinfo=zone, fold=0).utcoffset() or timedelta(0)
        later = wall.replace(tzinfo=zone, fold=1).utcoffset() or timedelta(0)
        if real_time:
            tick: datetime = croniter(cron, (after + later).replace(tzinfo=None)).get_next(datetime)
            if _repeated(tick, zone):
                best = tick.replace(tzinfo=zone, fold=1).astimezone(UTC)
        if local.fold == 1:
            # In the second pass the first pass's instants are behind us: the
            # other ticks start where the repeated hour ends.
            began = _offset_change(after - (earlier - later), after, zone)
            start = (began + earlier).replace(tzinfo=None) - timedelta(microseconds=1)
    ticks = croniter(cron, start)
    # Bounded: a real-time schedule of every second crosses a one-hour gap in
    # 3,600 steps; nothing legitimate needs more than a few days of them.
    for _ in range(1_000_000):
        candidate: datetime = ticks.get_next(datetime)
        instants = _instants(candidate, zone, real_time)
        for instant in instants:
            if instant > after and (best is None or instant < best):
                best = instant
        # Later wall times fire no earlier than this one's first instant.
        if best is not None and instants and instants[0] >= best:
            return best
    raise ValueError(f"cron {cron!r} in {zone.key}: no tick found after {after.isoformat()}")


def ticks_between(entry: Schedule, start: datetime, end: datetime) -> Iterator[datetime]:
    """Ticks t with start < t <= end, as UTC datetimes."""
    tick = entry.next_tick(start)
    while tick <= end:
        yield tick
        tick = entry.next_tick(tick)


def ticks_in(entry: Schedule, start: datetime, end: datetime) -> Iterator[datetime]:
    """Ticks t with start <= t < end, as UTC datetimes (the range a backfill takes)."""
    return _ticks_in(entry.cron, entry.tz, start, end)


def _ticks_in(cron: str, tz: str | None, start: datetime, end: datetime) -> Iterator[datetime]:
    start, end = _aware("start", start), _aware("end", end)
    tick = _next_tick(cron, tz, start - timedelta(microseconds=1))
    while tick < end:
        yield tick
        tick = _next_tick(cron, tz, tick)


def upcoming_ticks(cron: str, tz: str | None, after: datetime, count: int) -> list[datetime]:
    """The next `count` ticks of `cron` (read in `tz`) after `after`, as UTC datetimes;
    [] for a definition that does not parse here (a tool shows what it can)."""
    ticks: list[datetime] = []
    try:
        tick = _aware("after", after)
        for _ in range(count):
            tick = _next_tick(cron, tz, tick)
            ticks.append(tick)
    except (ValueError, KeyError, LookupError):
        return ticks
    return ticks


def bounded_ticks(
    name: str, cron: str, tz: str | None, start: datetime, end: datetime
) -> list[datetime]:
    """The ticks of a backfill of [start, end); refused if there are too many."""
    start, end = _aware("start", start), _aware("end", end)
    if end <= start:
        raise ValueError(
            f"backfill of schedule {name!r}: end {end.isoformat()} is not after start "
            f"{start.isoformat()}; the range is [start, end)"
        )
    ticks = []
    for tick in _ticks_in(cron, tz, start, end):
        ticks.append(tick)
        if len(ticks) > MAX_BACKFILL_TICKS:
            raise ValueError(
                f"backfill of schedule {name!r} ({cron!r}) from {start.isoformat()} to "
                f"{end.isoformat()} has more than {MAX_BACKFILL_TICKS:,} ticks; nothing was "
                "started. Backfill shorter ranges, one after another"
            )
    return ticks


# -- definitions ------------------------------------------------------------------------


def schedule(
    cron: str,
    *,
    name: str | None = None,
    backfill: bool = False,
    queue: str | None = None,
    tz: str | None = None,
    overlap: str = "allow_all",
    jitter: timedelta | float = 0.0,
) -> Callable[[W], W]:
    """Register a workflow to start once per tick of `cron`; it receives the tick (a datetime).

    Put it above `@workflow`. `backfill=True` starts the ticks missed while no
    engine ran (since the latest tick that did run), and those missed while the
    schedule was paused. `tz` (an IANA name, e.g. "Europe/Berlin") reads `cron`
    in that zone's wall time; the default is UTC. `overlap` says what a tick does
    while an earlier run is live (`OVERLAP_POLICIES`); `jitter` spreads each tick's
    start over that long after its instant.
    """

    def register(wf: W) -> W:
        if not isinstance(wf, Workflow):
            raise TypeError("@schedule goes above @workflow: the function must be a workflow")
        entry = Schedule(cron, wf, name or wf.workflow_name, backfill, queue, tz, overlap, jitter)
        with _lock:
            _schedules[entry.name] = entry
        return wf

    return register


def registered_schedules() -> list[Schedule]:
    with _lock:
        return list(_schedules.values())


# -- operating schedules through a store (a client, the CLI, an engine) -----------------


@attrs.frozen
class ScheduleInfo:
    """One schedule as `list_schedules` shows it: its definition and its durable state."""

    name: str
    workflow_name: str
    cron: str
    tz: str | None
    queue: str | None
    backfill: bool
    paused: bool
    #: The next tick after the listing's `now` (UTC), paused or not; None if the
    #: stored definition does not parse here.
    next_tick: datetime | None
    #: Defined in the code given as `registered` (else known from the store only).
    defined_here: bool
    #: Has a row in the store's `schedules` table (an engine has registered it).
    stored: bool
    trigger_requested_at: datetime | None = None
    backfill_requested: tuple[datetime, datetime] | None = None
    updated_at: datetime | None = None


def _registered(registered: Iterable[Schedule] | None) -> dict[str, Schedule]:
    entries = registered_schedules() if registered is None else registered
    return {entry.name: entry for entry in entries}


def _now(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else _aware("now", now)


def _info(
    name: str, code: Schedule | None, state: ScheduleState | None, now: datetime
) -> ScheduleInfo:
    spec = code.spec if code is not None else state.spec  # type: ignore[union-attr]
    try:
        upcoming: datetime | None = _next_tick(spec.cron, spec.tz, now)
    except Exception:  # a stored definition this croniter or zone database cannot read
        upcoming = None
    backfill = None
    if state is not None and state.backfill_start is not None and state.backfill_end is not None:
        backfill = (state.backfill_start, state.backfill_end)
    return ScheduleInfo(
        name,
        spec.workflow_name,
        spec.cron,
        spec.tz,
        spec.queue,
        spec.backfill,
        paused=state is not None and state.paused,
        next_tick=upcoming,
        defined_here=code is not None,
        stored=state is not None,
        trigger_requested_at=None if state is None else state.trigger_at,
        backfill_requested=backfill,
        updated_at=None if state is None else state.updated_at,
    )


def list_schedules(
    store: Store, *, registered: Iterable[Schedule] | None = None, now: datetime | None = None
) -> list[ScheduleInfo]:
    """Every schedule the code (`registered`, default: this process's @schedule ones) or
    the store knows, by name, with its next tick after `now` and whether it is paused."""
    code = _registered(registered)
    states = store.schedule_states()
    at = _now(now)
    return [_info(name, code.get(name), states.get(name), at) for name in sorted({*code, *states})]


def _stored(
    store: Store, name: str, registered: Iterable[Schedule] | None, now: datetime
) -> tuple[Schedule | None, ScheduleState]:
    """The schedule's code (if given) and its stored state, registering it if only in code."""
    check_names(schedule_name=name)
    code = _registered(registered)
    states = store.schedule_states()
    if name in states:
        return code.get(name), states[name]
    if name not in code:
        raise ScheduleNotFound(name, [*code, *states])
    store.register_schedules([code[name].spec], now)
    return code[name], store.schedule_states()[name]


def _set_paused(
    store: Store,
    name: str,
    paused: bool,
    registered: Iterable[Schedule] | None,
    now: datetime | None,
) -> bool:
    at = _now(now)
    _code, state = _stored(store, name, registered, at)
    if not store.set_schedule_paused(name, paused, at):
        raise ScheduleNotFound(name, store.schedule_states())  # deleted meanwhile
    return state.paused != paused


def pause_schedule(
    store: Store,
    name: str,
    *,
    registered: Iterable[Schedule] | None = None,
    now: datetime | None = None,
) -> bool:
    """Pause a schedule for every engine on the store; True if it was not paused.

    Engines skip its ticks from their next look at the store (within one poll
    interval). Runs already started go on. Durable: it stays paused across
    restarts and deploys until resumed. Raises `ScheduleNotFound` for a name
    neither the code nor the store knows.
    """
    return _set_paused(store, name, True, registered, now)


def resume_schedule(
    store: Store,
    name: str,
    *,
    registered: Iterable[Schedule] | None = None,
    now: datetime | None = None,
) -> bool:
    """Resume a paused schedule; True if it was paused.

    Ticks missed while it was paused are not started, unless the schedule has
    `backfill=True` (then engines start them, as after downtime).
    """
    return _set_paused(store, name, False, registered, now)


def delete_schedule(store: Store, name: str) -> bool:
    """Remove a schedule's durable state (paused flag, pending requests) from the store.

    A schedule is defined in code, so this does not undefine it: engines
    running now drop it from their loops when they next look at the store,
    and an engine that starts with the schedule in its code registers it
    again, unpaused. To stop a schedule for good, remove it from the code
    (and pause it until that deploy is out). Raises `ScheduleNotFound` if
    the store holds no state of that name.
    """
    check_names(schedule_name=name)
    if not store.delete_schedule_state(name):
        raise ScheduleNotFound(name, store.schedule_states())
    return True


def trigger_schedule(
    store: Store,
    name: str,
    *,
    registered: Iterable[Schedule] | None = None,
    now: datetime | None = None,
) -> str:
    """Ask for one run of the schedule now, outside its cron; returns the run's id.

    Recorded in the store: the next engine whose code defines the schedule
    starts the run within a poll interval (paused or not: a trigger is an
    explicit ask), on the schedule's queue, with the id
    `schedule:<name>:manual:<UTC instant>` and that instant as its tick. A
    trigger asked for while another is pending joins it (one run, whose id is
    returned). Works without workflow code, from a client or the CLI.
    """
    at = _now(now)
    _stored(store, name, registered, at)
    pending = store.request_schedule_trigger(name, at)
    if pending is None:
        raise ScheduleNotFound(name, store.schedule_states())
    return manual_run_id(name, pending)


def backfill_schedule(
    store: Store,
    name: str,
    start: datetime,
    end: datetime,
    *,
    registered: Iterable[Schedule] | None = None,
    now: datetime | None = None,
) -> list[str]:
    """Ask the engines to run every tick of the schedule in [start, end); returns their ids.

    Idempotent: ticks already run (by the cron or an earlier backfill) are not
    run again, as their ids are taken. Bounded: a range of more than
    `MAX_BACKFILL_TICKS` ticks is refused with `ValueError`. One backfill may
    be pending per schedule; asking for another range while one is pending
    raises `ValueError` (the same range again is accepted). Recorded in the
    store and carried out by the next engine whose code defines the schedule,
    paused or not.
    """
    at = _now(now)
    code, state = _stored(store, name, registered, at)
    # The ticks the engines will run: counted here so that a range too long is
    # refused now, not found out by an engine later.
    spec = code.spec if code is not None else state.spec
    ticks = bounded_ticks(name, spec.cron, spec.tz, start, end)
    wanted = (_aware("start", start), _aware("end", end))
    pending = store.request_schedule_backfill(name, *wanted, at)
    if pending is None:
        raise ScheduleNotFound(name, store.schedule_states())
    if pending != wanted:
        raise ValueError(
            f"schedule {name!r} has a backfill pending from {pending[0].isoformat()} to "
            f"{pending[1].isoformat()}, not yet run by an engine that defines it; ask for "
            "this range once that one is done (list_schedules shows it)"
        )
    return [_tick_run_id(name, tick) for tick in ticks]


# -- the cron loop of one engine --------------------------------------------------------
