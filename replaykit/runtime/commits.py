"""The record writer: the one room that writes a run's records.

Every record the runtime writes goes through a `RecordWriter`: alone (an effect's
commit, a step that ran on the scheduler's thread), in a group (the scheduler's batch
of the steps that finished in one round), or through a caller's own transaction
(`Transaction`). It applies the three rules that decide what a write came to, so that
no other room decides them:

- **A lost acknowledgement** is resolved by reading the log back
  (`retries.write_with_retries`): the position holding our record means it committed.
- **The log moved on** when the position holds a completed record that is not ours:
  another writer got there first, and the caller gets `LogMovedOn` (the run is
  rebuilt from the store).
- **A record is never lost to a cancel.** A step's effect happens, then its record
  commits. When a cancel lands in between, the store refuses the write
  (`RunNotPending`); the writer then lands the record anyway with
  `Store.record_late` — the effect happened, and a resume must find it — and the
  refusal still reaches the caller, which stops the run. A finish refused for the
  same reason lands its last record the same way (`finish_refused`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Unpack

import attrs

from replaykit.errors import ControlSignal, RecordConflict, RunNotPending, StoreUnavailable
from replaykit.log import Outcome, Record, Status
from replaykit.runtime.fence import Fence
from replaykit.runtime.retries import call_with_retries, write_with_retries
from replaykit.stores._holds import ExecutorHold
from replaykit.stores.base import RecordWrite, Store, WorkflowRow
from replaykit.stores.options import SideWrites

__all__ = ["LogMovedOn", "RecordWriter", "same_write"]

log = logging.getLogger("replaykit.engine")

# Records that only say how another run ended (a `Wait`, a `Call`'s wait): written after
# their own run was cancelled, they would record that cancel's cascade to the child as
# the parent's answer, and a resume that brings the child back would replay it.
_OTHER_RUNS_ENDINGS = frozenset({"wait", "call"})


class LogMovedOn(ControlSignal):
    """A position this run was about to record had been completed by another writer.

    The run's log moved on without this activation: what it holds in memory may
    be behind the store, so it stops and is rebuilt by replay.
    """


def same_write(stored: Record, written: Record) -> bool:
    """Is `stored` the record we wrote, read back (after a lost acknowledgement)?"""
    return (
        stored.kind == written.kind
        and stored.name == written.name
        and stored.outcome == written.outcome
        and stored.completed_at == written.completed_at
    )


class RecordWriter:
    """Writes records for one engine (its `executor_id` fences every write).

    Stateless between calls, so it needs no lock: any thread may write through it.
    `stop()` says the engine is closing (a write then stops retrying an outage).
    """

    def __init__(self, store: Store, *, executor_id: str, stop: Callable[[], bool]) -> None:
        self.store = store
        self.executor_id = executor_id
        self._stop = stop
        #: The engine's executor hold, checked before each write (fence.py); None: unfenced.
        self.fence: Fence | None = None

    def fence_with(self, hold: ExecutorHold, app_version: str) -> Fence:
        """Check `hold` before each write from now on (fence.py); the fence."""
        executor_id = self.executor_id
        self.fence = Fence(
            hold,
            executor_id=executor_id,
            app_version=app_version,
            holder=lambda: self.store.executor_holder(executor_id, app_version),
        )
        return self.fence

    def fenced(self, workflow_id: str) -> None:
        """Raise `Fenced` if this engine lost its executor hold to another engine (then
        it writes nothing more into `workflow_id`, which that engine runs now).

        Asking the hold may meet the outage that made it ask: the check waits it out
        as a record write does (until the engine closes), so it never ends an
        activation that the write after it would have carried through the outage: a
        finish carries the run's last record, an `All` watches its running children
        through it, and ending either there would run those steps again."""
        fence = self.fence
        if fence is None:
            return
        delay = 0.05
        while True:
            try:
                fence.check(workflow_id)
                return
            except StoreUnavailable:
                if self._stop():
                    raise
                time.sleep(delay)
                # At most half a second: after a failover this is what every write
                # waits on, and each try is one connection attempt.
                delay = min(delay * 2, 0.5)

    # -- writing ------------------------------------------------------------------------

    def write(self, row: WorkflowRow, record: Record, **options: Unpack[SideWrites]) -> Record:
        """Commit `record` alone; the record its position now holds (ours).

        Raises `LogMovedOn` if another writer completed the position first, and the
        store's refusal (`RunNotPending`, `RecordConflict`) otherwise — after landing
        a completed plain record late when the refusal was a cancel."""
        workflow_id = row.workflow_id

        def once() -> Record:
            self.fenced(workflow_id)  # again on each try: an outage may have lost the hold
            return self.store.record(workflow_id, record, executor_id=self.executor_id, **options)

        try:
            stored = write_with_retries(
                self.store, workflow_id, record.position, once, stop=self._stop
            )
        except RunNotPending as refusal:
            if not any(options.get(side) is not None for side in ("consume", "send", "event")):
                self.land_late(row, record, refusal)
            raise
        send = options.get("send")
        also = None if send is None else send.if_duplicate
        return self.check_written(row, record, stored, also=also)

    def write_many(
        self, writes: Sequence[tuple[WorkflowRow, Record]]
    ) -> list[Record | BaseException]:
        """Commit plain records of distinct runs together (one group commit); answer
        each in order: the record written, `LogMovedOn`, or the store's refusal
        (`StoreUnavailable` for a write that may or may not have committed, which the
        caller resolves with `write`)."""
        if writes:
            try:
                self.fenced(writes[0][0].workflow_id)
            except (RecordConflict, StoreUnavailable) as exc:
                return [exc for _ in writes]
        answers = self.store.record_many(
            [
                RecordWrite(row.workflow_id, record, executor_id=self.executor_id)
                for row, record in writes
            ]
        )
        results: list[Record | BaseException] = []
        for (row, record), answer in zip(writes, answers, strict=True):
            if isinstance(answer, Record):
                try:
                    results.append(self.check_written(row, record, answer))
                except LogMovedOn as exc:
                    results.append(exc)
                continue
            if isinstance(answer, RunNotPending):
                self.land_late(row, record, answer)
            results.append(answer)
        return results

    def through(self, row: WorkflowRow, position: int, write: Callable[[], Record]) -> Record:
        """A write the caller shapes itself (a `Transaction`'s, in its own database
        transaction), resolved after a lost acknowledgement like any other."""

        def once() -> Record:
            self.fenced(row.workflow_id)
            return write()

        return write_with_retries(self.store, row.workflow_id, position, once, stop=self._stop)

    # -- what a write came to ----------------------------------------------------------

    def check_written(
        self, row: WorkflowRow, written: Record, stored: Record, *, also: Outcome | None = None
    ) -> Record:
        """`stored` as the store answered a write of `written`; `LogMovedOn` if another
        writer had completed that position first. `also`: another outcome the store
        may have written in place of `written`'s (a keyed `Send` found a duplicate)."""
        if (
            written.outcome is not None
            and stored is not written
            and not same_write(stored, written)
            and not (also is not None and same_write(stored, attrs.evolve(written, outcome=also)))
        ):
            raise LogMovedOn(
                f"workflow {row.name!r} (id {row.workflow_id!r}): position {written.position} "
                f"was already completed by another writer ({stored.describe()})"
            )
        return stored

    # -- records that land after a cancel ------------------------------------------------

    def land_late(self, row: WorkflowRow, record: Record, refusal: RunNotPending) -> None:
        """The store refused `record` because the run stopped: if a cancel stopped it and
        the record is complete, land it anyway (its effect happened)."""
        if refusal.status != Status.CANCELLED.value or record.outcome is None:
            return
        if record.kind in _OTHER_RUNS_ENDINGS:
            return
        workflow_id = row.workflow_id
        try:
            call_with_retries(
                lambda: self.store.record_late(workflow_id, record, executor_id=self.executor_id),
                stop=self._stop,
            )
        except Exception as exc:
            log.warning(
                "workflow %r (id %r) was cancelled while %s ran, and its record at position "
                "%d could not be landed (%s): a resume will run it again",
                row.name,
                workflow_id,
                record.describe(),
                record.position,
                exc,
            )
            return
        log.info(
            "workflow %r (id %r) was cancelled while %s ran; its record landed at position %d, "
            "so a resume goes on after it",
            row.name,
            workflow_id,
            record.describe(),
            record.position,
        )

    def finish_refused(self, row: WorkflowRow, last: Record | None) -> None:
        """A finish that carried the run's last record was refused (the run is no longer
        PENDING): if a cancel is why, the record lands on its own."""
        if last is None or last.outcome is None:
            return
        try:
            current = call_with_retries(
                lambda: self.store.get_workflow(row.workflow_id), stop=self._stop
            )
        except Exception:
            return
        if current is None or current.status is not Status.CANCELLED:
            return
        self.land_late(row, last, RunNotPending("cancelled", Status.CANCELLED.value))
