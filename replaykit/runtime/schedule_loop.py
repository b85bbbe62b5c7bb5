"""The cron loop of one engine: fires each schedule's ticks as they come, carries out
what operators asked through the store (a trigger, a backfill), and skips paused
schedules (runtime/schedules.py holds the definitions and the operations on them)."""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

import attrs

from replaykit.errors import ReplayKitError, ScheduleNotFound
from replaykit.log import Status
from replaykit.runtime.clock import Clock
from replaykit.runtime.loop_thread import LoopThread
from replaykit.runtime.schedules import (
    MAX_BACKFILL_TICKS,
    Schedule,
    ScheduleInfo,
    backfill_schedule,
    bounded_ticks,
    list_schedules,
    manual_run_id,
    pause_schedule,
    resume_schedule,
    ticks_between,
    trigger_schedule,
    triggered,
)
from replaykit.stores._checks import check_names
from replaykit.stores.base import ScheduleState, Store, WorkflowFilter

__all__ = ["READ_EVERY_WHEN_HEARD", "ScheduleLoop", "tick_starter"]

log = logging.getLogger("replaykit.engine")

#: Poll intervals between reads of the schedule states on a store whose notes reach
#: every sharer: an operator's change (a pause, a trigger, a backfill, a delete) is
#: heard at once (`wake`), as is a reconnected listener, so this read only catches a
#: note the server refused. Elsewhere (SQLite) the states are read at every poll.
READ_EVERY_WHEN_HEARD = 300


class ScheduleLoop(LoopThread):
    """The cron loop of one engine: fires each schedule's ticks as they come.

    `fire(entry, tick)` creates the run `entry.run_id(tick)` (idempotent by
    its id, so engines that see the same tick start it once between them).
    The loop reads the store's schedule states at most once per poll interval
    (one query), or, where the store's notes reach every sharer, when one says a
    schedule changed (`wake`) and otherwise every `READ_EVERY_WHEN_HEARD` polls:
    paused schedules' ticks are skipped, and requests (a trigger, a backfill)
    made through the store are carried out. Its methods `list`,
    `pause`, `resume`, `delete`, `trigger` and `backfill` are the engine's
    (`engine.schedules.pause("nightly")`).
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        entries: Iterable[Schedule],
        *,
        poll_interval: float,
        fire: Callable[[Schedule, datetime], None],
        cancel: Callable[[str, str], object] | None = None,
        claim_from: Callable[[str], None] | None = None,
        notes_reach_every_sharer: bool = False,
    ) -> None:
        self.store = store
        self.clock = clock
        self.poll_interval = poll_interval
        self._read_every = poll_interval * (
            READ_EVERY_WHEN_HEARD if notes_reach_every_sharer else 1
        )
        self._fire = fire
        self._cancel = cancel
        # Told the hold queue of each schedule that holds ticks back, so that this
        # engine claims the ticks it holds (`Claims.also_claim`).
        self._claim_from = claim_from or (lambda queue_name: None)
        self._lock = threading.Lock()
        self._entries = {entry.name: entry for entry in entries}
        for entry in self._entries.values():
            if entry.hold_queue:
                self._claim_from(entry.hold_queue)
        self._unregistered = set(self._entries)
        self._states: dict[str, ScheduleState] = {}
        self._states_read_at: float | None = None  # time.monotonic() of the last read
        self._paused_seen: set[str] = set()
        # What failed, by schedule (None: the loop as a whole), and the type of its
        # error: logged when it starts failing, or fails otherwise, not every round.
        self._failing: dict[str | None, str] = {}
        super().__init__("replaykit-schedules")

    def add(self, entry: Schedule) -> None:
        if entry.hold_queue:
            self._claim_from(entry.hold_queue)
        with self._lock:
            self._entries[entry.name] = entry
            self._unregistered.add(entry.name)
        self._wanted.set()

    def wake(self) -> None:
        """Look at the store and the clock now rather than at the next poll."""
        with self._lock:
            self._states_read_at = None
        self._wanted.set()

    # -- what the engine offers ---------------------------------------------------------

    def entries(self) -> list[Schedule]:
        with self._lock:
            return list(self._entries.values())

    def list(self) -> list[ScheduleInfo]:
        """This engine's schedules and the store's, with their state (see `list_schedules`)."""
        return list_schedules(self.store, registered=self.entries(), now=self.clock.now())

    def pause(self, name: str) -> bool:
        """`pause_schedule` for every engine on the store; this one stops at once."""
        changed = pause_schedule(self.store, name, registered=self.entries(), now=self.clock.now())
        self._refresh()
        return changed

    def resume(self, name: str) -> bool:
        """`resume_schedule`; this engine resumes at once."""
        changed = resume_schedule(self.store, name, registered=self.entries(), now=self.clock.now())
        self._refresh()
        return changed

    def delete(self, name: str) -> bool:
        """Remove the schedule from this engine's loop and its state from the store.

        Other engines drop it when they next read the store. Defined in code,
        it comes back at the next start of an engine that defines it (unpaused):
        pause it to keep it from firing until the code no longer has it.
        """
        check_names(schedule_name=name)
        with self._lock:
            here = self._entries.pop(name, None) is not None
            self._unregistered.discard(name)
        stored = self.store.delete_schedule_state(name)
        if not (here or stored):
            raise ScheduleNotFound(name, [*self._names(), *self.store.schedule_states()])
        self._refresh()
        return True

    def trigger(self, name: str) -> str:
        """Start one run of the schedule now, outside its cron; returns its id.

        A schedule this engine defines is started here and now (on its queue,
        with the id `schedule:<name>:manual:<UTC instant>`); one only the store
        knows is recorded for an engine that defines it (`trigger_schedule`).
        """
        check_names(schedule_name=name)
        entry = self._entry(name)
        if entry is None:
            return trigger_schedule(self.store, name, registered=(), now=self.clock.now())
        at = self.clock.now().astimezone(UTC)
        self._fire(triggered(entry), at)
        run_id = manual_run_id(name, at)
        if self.store.get_workflow(run_id) is None:
            raise ReplayKitError(
                f"schedule {name!r}: the triggered run {run_id!r} was not created; the "
                "engine's log says why"
            )
        return run_id

    def backfill(self, name: str, start: datetime, end: datetime) -> builtins.list[str]:
        """Start the runs of every tick in [start, end) that has none; returns all their ids.

        Idempotent (ticks already run keep their run) and bounded by
        `MAX_BACKFILL_TICKS`. A schedule only the store knows is recorded for
        an engine that defines it (`backfill_schedule`).
        """
        check_names(schedule_name=name)
        entry = self._entry(name)
        if entry is None:
            return backfill_schedule(
                self.store, name, start, end, registered=(), now=self.clock.now()
            )
        ticks = bounded_ticks(name, entry.cron, entry.tz, start, end)
        for tick in ticks:
            self._fire(entry, tick)
        return [entry.run_id(tick) for tick in ticks]

    def _refresh(self) -> None:
        """Read the states now, for a change made here to count here at once."""
        read_at = time.monotonic()
        self._keep_states(self.store.schedule_states(), read_at)
        self._wanted.set()

    def _entry(self, name: str) -> Schedule | None:
        with self._lock:
            return self._entries.get(name)

    def _names(self) -> builtins.list[str]:
        with self._lock:
            return list(self._entries)

    # -- the loop ---------------------------------------------------------------------

    def _latest_tick(self, entry: Schedule) -> datetime | None:
        prefix = f"schedule:{entry.name}:"
        latest: datetime | None = None
        for row in self.store.list_workflows(WorkflowFilter(name=entry.workflow.workflow_name)):
            if row.workflow_id.startswith(prefix):
                try:
                    tick = datetime.fromisoformat(row.workflow_id[len(prefix) :])
                except ValueError:  # a manual run's id, or another schedule's
                    continue
                latest = tick if latest is None or tick > latest else latest
        return latest

    def _loop(self) -> None:
        upcoming: dict[str, datetime] = {}
        while not self._closed:
            try:
                self._round(upcoming)
            except Exception as exc:
                if self._starts_failing(None, exc):
                    log.exception(
                        "schedule loop failed; retrying every %ss (logged again only if it "
                        "fails otherwise)",
                        self.poll_interval,
                    )
            else:
                self._recovered(None)
            wait = self.poll_interval
            if upcoming:
                due = min(self._due(name, tick) for name, tick in upcoming.items())
                wait = min(wait, (due - self.clock.now()).total_seconds())
            self._wanted.wait(max(wait, 0.005))
            self._wanted.clear()

    def _read_states(self, entries: dict[str, Schedule], now: datetime) -> dict[str, ScheduleState]:
        """The stored states, read again once they are older than `_read_every` or a
        note said a schedule changed (`wake`); registers new entries.

        An engine that defines no schedule reads nothing: the states are for carrying
        out what was asked of its own schedules (an idle engine's one statement in
        four was this read, for nothing)."""
        if not entries:
            return {}
        with self._lock:
            unregistered = [entries[n] for n in self._unregistered if n in entries]
            fresh = (
                self._states_read_at is not None
                and time.monotonic() - self._states_read_at < self._read_every
            )
        if unregistered:
            self.store.register_schedules([entry.spec for entry in unregistered], now)
            with self._lock:
                for entry in unregistered:
                    if self._entries.get(entry.name) is entry:  # not replaced meanwhile
                        self._unregistered.discard(entry.name)
            fresh = False
        if fresh:
            with self._lock:
                return self._states
        read_at = time.monotonic()
        return self._keep_states(self.store.schedule_states(), read_at)

    def _keep_states(
        self, states: dict[str, ScheduleState], read_at: float
    ) -> dict[str, ScheduleState]:
        with self._lock:
            for name in list(self._entries):
                if name in self._states and name not in states and name not in self._unregistered:
                    # Stored before and gone now, without being given to us
                    # again: an operator deleted it (`delete_schedule`).
                    log.info("schedule %r was deleted from the store; this engine drops it", name)
                    del self._entries[name]
            self._states = states
            self._states_read_at = read_at
            return states

    def _round(self, upcoming: dict[str, datetime]) -> None:
        now = self.clock.now()
        with self._lock:
            entries = dict(self._entries)
        states = self._read_states(entries, now)
        with self._lock:
            entries = dict(self._entries)  # less what was deleted
        for name in [n for n in upcoming if n not in entries]:
            del upcoming[name]
        failed: set[str] = set()
        for name, entry in entries.items():
            try:
                self._look_at(entry, states.get(name), upcoming, now)
            except Exception as exc:
                failed.add(name)
                self._schedule_failed(entry, exc, upcoming)
        for name, tick in list(upcoming.items()):
            if entries[name].due(tick) <= now:
                state = states.get(name)
                try:
                    if state is not None and state.paused:
                        log.debug("schedule %r is paused; tick %s skipped", name, tick)
                    else:
                        self._start_tick(entries[name], tick)
                    upcoming[name] = entries[name].next_tick(tick)
                except Exception as exc:
                    failed.add(name)
                    self._schedule_failed(entries[name], exc, upcoming)
        for name in entries.keys() - failed:
            self._recovered(name)

    def _look_at(
        self,
        entry: Schedule,
        state: ScheduleState | None,
        upcoming: dict[str, datetime],
        now: datetime,
    ) -> None:
        """One schedule's part of a round: its requests, its pause, its next tick."""
        name = entry.name
        paused = state is not None and state.paused
        if state is not None:
            self._carry_out_requests(entry, state)
        if paused:
            self._paused_seen.add(name)
        elif name in self._paused_seen:
            self._paused_seen.discard(name)
            if entry.backfill:
                self._catch_up(entry, now)
        if name in upcoming:
            return
        if entry.backfill and not paused:
            self._catch_up(entry, now)
        # A tick whose instant passed but whose jittered start has not is still to come.
        upcoming[name] = entry.next_tick(now - timedelta(seconds=entry.jitter))

    def _schedule_failed(
        self, entry: Schedule, exc: Exception, upcoming: dict[str, datetime]
    ) -> None:
        """One schedule failed: the others go on; it is tried again next round, quietly."""
        upcoming.pop(entry.name, None)  # its next tick is computed again next round
        if self._starts_failing(entry.name, exc):
            log.error(
                "schedule %r (cron %r) failed, so its ticks are skipped until it works again; "
                "the engine's other schedules go on. Logged once: trying again every %ss",
                entry.name,
                entry.cron,
                self.poll_interval,
                exc_info=exc,
            )

    def _starts_failing(self, name: str | None, exc: Exception) -> bool:
        """Record that `name` fails; whether to log it (it did not, or failed otherwise)."""
        kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
        with self._lock:
            known = self._failing.get(name)
            self._failing[name] = kind
        return known != kind

    def _recovered(self, name: str | None) -> None:
        with self._lock:
            was = self._failing.pop(name, None)
        if was is not None:
            log.info("schedule %s works again", "loop" if name is None else repr(name))

    def _catch_up(self, entry: Schedule, now: datetime) -> None:
        """Start the ticks missed since the latest that ran (a `backfill=True` schedule)."""
        latest = self._latest_tick(entry)
        if latest is None:
            return
        for missed, tick in enumerate(ticks_between(entry, latest, now), start=1):
            if missed > MAX_BACKFILL_TICKS:
                log.warning(
                    "schedule %r missed more than %d ticks since %s; started the first %d. "
                    "backfill(%r, start, end) starts the rest",
                    entry.name,
                    MAX_BACKFILL_TICKS,
                    latest,
                    MAX_BACKFILL_TICKS,
                    entry.name,
                )
                return
            self._start_tick(entry, tick)

    def _carry_out_requests(self, entry: Schedule, state: ScheduleState) -> None:
        """Start what was asked of the schedule through the store, then clear the ask.

        An ask is cleared only once its runs exist: the engine's `fire` logs a
        failure rather than raising it, and an ask whose runs could not be
        created is tried again at the next look.
        """
        if state.trigger_at is not None:
            self._fire(triggered(entry), state.trigger_at)
            if self.store.get_workflow(manual_run_id(entry.name, state.trigger_at)) is not None:
                self.store.clear_schedule_request(entry.name, trigger_at=state.trigger_at)
                state = attrs.evolve(state, trigger_at=None)
        if state.backfill_start is not None and state.backfill_end is not None:
            asked = (state.backfill_start, state.backfill_end)
            try:
                ticks = bounded_ticks(entry.name, entry.cron, entry.tz, *asked)
            except ValueError as exc:  # the definition changed since the ask was checked
                log.error("schedule %r: backfill not run: %s", entry.name, exc)
                ticks = []
            for tick in ticks:
                self._fire(entry, tick)
            missing = {entry.run_id(tick) for tick in ticks} - self._run_ids(entry)
            if missing:
                log.warning(
                    "schedule %r: %d run(s) of the backfill from %s to %s could not be "
                    "created yet; trying again",
                    entry.name,
                    len(missing),
                    *asked,
                )
            else:
                self.store.clear_schedule_request(entry.name, backfill=asked)
                state = attrs.evolve(state, backfill_start=None, backfill_end=None)
        with self._lock:
            if entry.name in self._states:
                self._states[entry.name] = state

    # -- overlap -----------------------------------------------------------------------

    def _due(self, name: str, tick: datetime) -> datetime:
        entry = self._entry(name)
        return tick if entry is None else entry.due(tick)

    def _start_tick(self, entry: Schedule, tick: datetime) -> None:
        """Start a tick's run, or do what the schedule's `overlap` says while an earlier
        run of it is live.

        A schedule that holds ticks back (`buffer_one`, `buffer_all`, `cancel_other`)
        runs every tick on its hold queue, whose concurrency of 1 starts them one at a
        time, in tick order, as the runs before end: the held ticks are ENQUEUED runs
        in the store, which any engine claims, whatever happened to the one that saw
        the tick come."""
        policy = entry.overlap
        if policy == "allow_all":
            self._fire(entry, tick)
            return
        if policy == "buffer_one" and self._waiting_runs(entry):
            self._skipped(entry, tick, "a tick waits already")
            return
        if policy == "skip":
            live = self._live_runs(entry)
            if live:
                self._skipped(entry, tick, ", ".join(live) + " live")
                return
        if policy == "cancel_other":
            for workflow_id in self._live_runs(entry):
                self._cancel_live(entry, workflow_id, tick)
        self._fire(entry, tick)

    def _skipped(self, entry: Schedule, tick: datetime, why: str) -> None:
        log.info(
            "schedule %r: tick %s skipped (overlap=%r): %s", entry.name, tick, entry.overlap, why
        )

    def _cancel_live(self, entry: Schedule, workflow_id: str, tick: datetime) -> None:
        reason = (
            f"schedule {entry.name!r}: cancelled for tick {tick.isoformat()} "
            "(overlap='cancel_other')"
        )
        if self._cancel is None:
            raise RuntimeError(
                f"schedule {entry.name!r} has overlap='cancel_other' but this loop was given "
                "no way to cancel a run"
            )
        self._cancel(workflow_id, reason)

    def _live_runs(self, entry: Schedule) -> builtins.list[str]:
        """The ids of the schedule's runs that are under way (PENDING; or ENQUEUED for a
        schedule that holds no ticks: its queue's runs that wait count as live): its
        ticks' and those asked for by hand."""
        live = (Status.PENDING,) if entry.hold_queue else (Status.PENDING, Status.ENQUEUED)
        return self._runs_of(entry, live)

    def _waiting_runs(self, entry: Schedule) -> builtins.list[str]:
        """The ticks a holding schedule keeps back: its runs ENQUEUED on its hold queue."""
        return self._runs_of(entry, (Status.ENQUEUED,))

    def _runs_of(self, entry: Schedule, statuses: tuple[Status, ...]) -> builtins.list[str]:
        prefix = f"schedule:{entry.name}:"
        rows = self.store.list_workflows(
            WorkflowFilter(name=entry.workflow.workflow_name, status=statuses, payloads=False)
        )
        return [row.workflow_id for row in rows if row.workflow_id.startswith(prefix)]

    def _run_ids(self, entry: Schedule) -> set[str]:
        prefix = f"schedule:{entry.name}:"
        rows = self.store.list_workflows(WorkflowFilter(name=entry.workflow.workflow_name))
        return {row.workflow_id for row in rows if row.workflow_id.startswith(prefix)}


def tick_starter(create_run: Callable[..., object]) -> Callable[[Schedule, datetime], None]:
    """What fires a schedule's tick: start its run through `create_run` (the run's id
    says which tick, so two engines start it once), or log why not."""

    def fire(entry: Schedule, tick: datetime) -> None:
        try:
            create_run(
                entry.workflow, (tick,), {}, workflow_id=entry.run_id(tick), queue=entry.run_queue
            )
        except Exception:
            log.exception("schedule %r could not start its run for %s", entry.name, tick)

    return fire
