"""A step's back-off made durable: the run holds no thread while a step waits for its
next attempt, and a restart keeps the count and the due time.

`record_backoff` writes the back-off as the step's pending record; `settle_backoff`
brings that record up to date, once, from the inbox entries that earlier builds wrote
for each back-off. The driver that hands a back-off back is `StepRunner.run_attempts`
(steps.py, with `durable=True`).
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from replaykit.commands import Step
from replaykit.interpreter import Effect
from replaykit.log import Record
from replaykit.runtime.attempts import Backoff
from replaykit.runtime.host import Host, Suspend
from replaykit.runtime.steps import StepRunner
from replaykit.stores.base import WorkflowRow

__all__ = ["RETRY_TOPIC", "record_backoff", "settle_backoff"]

#: Topic prefix of the inbox entries in which earlier builds kept each back-off of a
#: retried step after its first (before the pending record held the count); read only
#: to resume runs that were backing off across the upgrade (`settle_backoff`).
RETRY_TOPIC = "replaykit.retry:"


def _instant(when: datetime | None) -> str:
    """One spelling per instant, whatever time zone a store reads it back in."""
    return "" if when is None else when.astimezone(UTC).isoformat()


def record_backoff(
    runner: StepRunner, row: WorkflowRow, effect: Effect, backoff: Backoff
) -> Record | Suspend:
    """Record that a step waits for its next attempt, and suspend the run until then.

    The step's pending record is the back-off: the attempts made, the instant
    the next is due (`wake_at`, which also moves the run's deadline) and the
    first attempt's start. The first back-off inserts it; each later one
    writes its greater count over it (`Store.record` writes a pending record
    over a pending one that has fewer attempts, in one transaction with the
    run's deadline). Nothing is written when the store already holds this
    back-off (a run rebuilt while it waits)."""
    pending = effect.pending
    if (
        pending is not None
        and pending.outcome is None
        and (pending.attempts, pending.wake_at) == (backoff.attempts, backoff.due)
    ):
        return Suspend(backoff.due, (), None, pending)
    written = runner.record_for(
        effect,
        None,
        started_at=backoff.started_at,
        attempts=backoff.attempts,
        wake_at=backoff.due,
    )
    stored = runner.host.records.write(row, written, wake_at=backoff.due)
    if stored.outcome is not None:
        return stored  # another writer completed the step meanwhile
    # The store keeps a count higher than ours (a stale writer of this run):
    # wait for its due time, and the replay then goes on from its count.
    return Suspend(stored.wake_at or backoff.due, (), None, stored)


def settle_backoff(host: Host, workflow_id: str, records: list[Record]) -> list[Record]:
    """`records` (a log just read) with a retried step's pending record brought up
    to date from the inbox entries that earlier builds of replaykit wrote for
    each back-off after the first (topic `replaykit.retry:<position>:<attempts>`,
    payload: the due time and the first attempt's start).

    This version writes no such entry: its back-offs are the pending record
    itself (`record_backoff`). A run that was backing off when the engine was
    upgraded still has them, and without them would repeat the attempts they
    count. So they are read once: the count they give is written over the
    pending record (with the run's deadline), and from then on the record
    counts past every entry. Costs one store read where a run is rebuilt from
    a log ending in a step's pending record; called where the log is read,
    never on an event loop. An entry of another generation of the run (same
    position, another first start) is not this one's."""
    if not records:
        return records
    pending = records[-1]
    if pending.outcome is not None or pending.kind != Step.kind:
        return records
    since = _instant(pending.started_at)
    made, due = pending.attempts, pending.wake_at
    while True:
        topic = f"{RETRY_TOPIC}{pending.position}:{made + 1}"
        found = host.store.peek_message(workflow_id, topic)
        payload = found.payload if found is not None else None
        if not isinstance(payload, dict) or payload.get("since") != since:
            break
        made, due = made + 1, datetime.fromisoformat(str(payload["due"]))
    if made == pending.attempts:
        return records
    settled = host.store.record(
        workflow_id,
        attrs.evolve(pending, attempts=made, wake_at=due),
        executor_id=host.executor_id,
        wake_at=due,
    )
    return [*records[:-1], settled]
