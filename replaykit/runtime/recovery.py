"""Who runs an executor id's unfinished runs: the one live engine that holds the id,
which recovers them at launch, parks the ones that crash again and again (and those
the books give up on), says
once which wait under other versions, sweeps up the ones resumed elsewhere, and reads
back the sleepers the wake-ups parked in the store.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

import attrs

from replaykit.errors import ExecutorIdInUse, StoreUnavailable
from replaykit.log import Status
from replaykit.runtime import admin
from replaykit.stores._holds import ExecutorHold
from replaykit.stores.base import Store, WorkflowFilter

__all__ = ["LocalRuns", "ParkedSleepers", "Recovery", "hold_executor_id"]

#: The timer scan reads the parked sleepers it brings back this many rows at a time.
SCAN_PAGE = 5_000

log = logging.getLogger("replaykit.engine")


def hold_executor_id(store: Store, executor_id: str, app_version: str, wait: float) -> ExecutorHold:
    """Hold an executor id, waiting up to `wait` seconds for its holder to stop.

    One live engine per executor id and application version: it owns the
    id's runs of that version and recovers them at launch, so a second one
    would run them at the same time.
    """
    deadline = time.monotonic() + wait
    told = False
    while True:
        # Through a dropped connection, as every launch-time store call.
        hold = store.hold_executor(executor_id, app_version)
        if hold is not None:
            if told:
                log.info("engine holds executor id %r now", executor_id)
            return hold
        holder = store.executor_holder(executor_id, app_version)
        left = deadline - time.monotonic()
        if left <= 0:
            raise ExecutorIdInUse(executor_id, app_version, holder, wait)
        if not told:
            told = True
            log.warning(
                "executor id %r (application version %r) is held by another live engine "
                "(%s); waiting up to %gs for it to stop (Engine(executor_wait=...))",
                executor_id,
                app_version,
                holder or "no details",
                wait,
            )
        time.sleep(min(0.2, left))


class LocalRuns(Protocol):
    """What recovery asks of the scheduler about the runs it tracks here."""

    def is_tracked(self, workflow_id: str) -> bool: ...

    def allow(self, workflow_id: str) -> None: ...

    def release(self, workflow_id: str) -> None: ...

    def drop_warm(self, workflow_id: str) -> None: ...

    def dispatch(self, workflow_id: str) -> None: ...


class ParkedSleepers(Protocol):
    """What recovery asks of the wake-ups about the sleepers left in the store."""

    def horizon(self) -> datetime | None: ...

    def parked_count(self) -> int: ...

    def waiting_beyond(self, instant: datetime) -> int: ...


class Recovery:
    """The PENDING runs of this executor id and version that nothing here runs yet."""

    def __init__(
        self,
        store: Store,
        runs: LocalRuns,
        *,
        executor_id: str,
        app_version: str,
        max_recovery_attempts: int,
        poke: Callable[[], None],
        tracked_count: Callable[[], int] | None = None,
        parked: ParkedSleepers | None = None,
    ) -> None:
        self.store = store
        self.runs = runs
        self.executor_id = executor_id
        self.app_version = app_version
        self.max_recovery_attempts = max_recovery_attempts
        # Tells the wake-ups that a run stopped being busy (a parked one never runs).
        self._poke = poke
        # How many runs this engine tracks at most (suspended and busy), for a sweep
        # at its turn on a store whose notes reach every sharer: where the store
        # counts no more PENDING runs of ours than that, the sweep reads no rows.
        self._tracked_count = tracked_count
        # Sleepers due past the wake-ups' horizon are left in the store: sweeps pass
        # over them, and the timer scan (`parked_due`) reads them back.
        self._parked = parked

    def _ours(self, **narrowed: Any) -> WorkflowFilter:
        """This executor id's PENDING runs of this version, narrowed by `narrowed`."""
        return WorkflowFilter(
            status=Status.PENDING,
            executor_id=self.executor_id,
            app_version=self.app_version,
            **narrowed,
        )

    def park(self, workflow_id: str, why: str, cause: BaseException | None = None) -> None:
        """`Engine.park`: park a run, saying why on it and once in the log."""
        self.store.set_status(workflow_id, Status.PARKED, only_from=(Status.PENDING,), error=why)
        exc_info = None if cause is None else (type(cause), cause, cause.__traceback__)
        log.error("workflow id %r parked: %s", workflow_id, why, exc_info=exc_info)
        self._poke()

    def recover(self) -> list[str]:
        """`Engine.recover`: re-dispatch the unfinished runs; park crash-loopers."""
        # Every one, parked sleepers too: the row does not tell a sleep from a wait for a
        # message with a timeout, which must listen again now, not at its timeout. A
        # sleeper past the horizon is parked again as its activation suspends.
        rows = self.store.list_workflows(self._ours())
        recovered: list[str] = []
        for row in rows:
            try:
                attempts = self.store.bump_recovery(row.workflow_id)
            except StoreUnavailable as exc:
                # Not retried (a lost answer would count one recovery twice): this
                # recovery goes uncounted, and the run is recovered all the same.
                log.warning("could not count the recovery of %r: %s", row.workflow_id, exc)
                attempts = 0
            if attempts > self.max_recovery_attempts:
                self.park(
                    row.workflow_id,
                    f"recovered {attempts - 1} times without finishing "
                    f"(max_recovery_attempts={self.max_recovery_attempts}); fix the cause and "
                    "resume it",
                )
                continue
            recovered.append(row.workflow_id)
            # A recovery runs again what an interrupt stopped here (as a new engine would).
            self.runs.release(row.workflow_id)
            self.runs.drop_warm(row.workflow_id)
            self.runs.dispatch(row.workflow_id)
        return recovered

    def sweep(self, *, thorough: bool = True) -> None:
        """Dispatch PENDING runs of ours that nothing here tracks (resumed elsewhere).

        Not `thorough` (a sweep at its turn, where notes reach every sharer: a
        fallback for a note lost), it first counts the PENDING runs of ours and reads
        them only if there are more than this engine tracks: a million sleepers are
        not listed every few minutes to find none. The rows are read without their
        payloads (only their ids are looked at)."""
        parked = self._parked
        horizon = parked.horizon() if parked is not None and parked.parked_count() else None
        # A parked sleeper is nobody's here, and needs no sweep.
        where = self._ours(payloads=False, wakes_by=horizon)
        try:
            tracked = None if thorough else self._tracked_count
            if tracked is not None:
                kept = tracked()
                if parked is not None and horizon is not None:
                    kept -= parked.waiting_beyond(horizon)  # not in the count either
                if self.store.count_workflows(where) <= kept:
                    return
            rows = self.store.list_workflows(where)
        except StoreUnavailable:
            return
        for row in rows:
            if not self.runs.is_tracked(row.workflow_id):
                # PENDING in the store, so resumed if this engine cancelled it (a resume
                # from another process on SQLite, which sends no notification across).
                self.runs.allow(row.workflow_id)
                self.runs.dispatch(row.workflow_id)

    def parked_due(self, after: datetime, until: datetime) -> list[tuple[str, datetime]]:
        """The timer scan's read: (id, instant) of the PENDING runs of ours asleep until
        an instant in (`after`, `until`] that nothing here tracks, a page at a time."""
        where = self._ours(wakes_after=after, wakes_by=until, payloads=False, limit=SCAN_PAGE)
        found: list[tuple[str, datetime]] = []
        while True:
            rows = self.store.list_workflows(where)
            for row in rows:
                if row.wake_at is not None and not self.runs.is_tracked(row.workflow_id):
                    found.append((row.workflow_id, row.wake_at))
            if len(rows) < SCAN_PAGE or rows[-1].created_at is None:
                return found
            where = attrs.evolve(where, after=(rows[-1].created_at, rows[-1].workflow_id))

    def parked_here(self, workflow_id: str) -> bool:
        """Whether `workflow_id` may be a sleeper parked in the store by this engine: a
        PENDING run of ours that nothing here tracks (asked only once runs were parked)."""
        if self._parked is None or not self._parked.parked_count():
            return False
        if self.runs.is_tracked(workflow_id):
            return False
        try:
            row = self.store.get_workflow(workflow_id)
        except StoreUnavailable:
            return False  # it wakes at its instant all the same
        return (
            row is not None
            and row.status is Status.PENDING
            and row.executor_id == self.executor_id
            and row.app_version == self.app_version
        )

    def revive(self, workflow_id: str) -> None:
        """A run wanted now (a cancel to deliver) that may be parked: run it if it is."""
        if self.parked_here(workflow_id):
            self.runs.dispatch(workflow_id)

    def warn_stranded(self) -> None:
        """Say once, at launch, that runs of this executor id wait under other versions.

        Recovery picks only this version's runs, so those wait without a word
        for an engine of their version: the usual cause is a default version (a
        digest of the workflows' source) that changed with an edit.
        """
        where = WorkflowFilter(
            status=Status.PENDING, executor_id=self.executor_id, limit=admin.STRANDED_SCAN
        )
        try:
            rows = self.store.list_workflows(where)
        except Exception as exc:  # a diagnostic: it must not fail the launch
            log.debug("could not look for stranded runs: %s", exc)
            return
        counts: dict[str, int] = {}
        for row in rows:
            if row.app_version != self.app_version:
                counts[row.app_version] = counts.get(row.app_version, 0) + 1
        if not counts:
            return
        total = sum(counts.values())
        versions = ", ".join(f"{v!r} ({n})" for v, n in sorted(counts.items()))
        log.warning(
            "%s%d PENDING run(s) of executor id %r wait under other application version(s): "
            "%s; this engine runs version %r and recovers only its own. If they are this "
            "same code under a version that changed with an edit, give every engine one "
            "fixed version (Engine(app_version='...'), e.g. the release name) and resume "
            "them onto it (engine.resume(id) or replaykit workflows resume ID --app-version "
            "%s); if they are an older release's, run an engine of that version to finish "
            "them. engine.list_workflows(stranded=True) lists them (docs/versioning.md)",
            "at least " if len(rows) >= admin.STRANDED_SCAN else "",
            total,
            self.executor_id,
            versions,
            self.app_version,
            self.app_version,
        )
