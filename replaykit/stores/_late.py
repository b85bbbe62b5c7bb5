"""Records that land after their run was cancelled (`Store.record_late`).

A step's effect happens, then its record commits. A cancel that arrives between the
two used to refuse the record, and a later resume ran the step's body again: a side
effect done twice with no crash. So a completed record whose effect is already done
may still land in a CANCELLED run, by the executor that ran it, at the run's next
position (or completing the pending record there). Nothing else may: a PENDING run
takes records through `record()`, a finished one takes none, and a write that carries
a side effect of its own (a consumed message, a send, an event) is simply refused, so
it happens on the resume instead, once.

The three stores apply the same rule; this module states it once.
"""

from __future__ import annotations

from replaykit.errors import RecordConflict
from replaykit.log import Record, Status
from replaykit.stores._checks import check_names
from replaykit.stores._rules import check_owned
from replaykit.stores.base import WorkflowRow

__all__ = ["check_late", "check_late_record", "late_gap"]


def check_late_record(workflow_id: str, record: Record, executor_id: str | None) -> None:
    """What the call itself must carry, checked before the store is touched."""
    check_names(workflow_id, executor_id=executor_id)
    if record.outcome is None:
        raise ValueError(
            f"workflow id {workflow_id!r}: record_late() was given the pending record "
            f"{record.describe()} at position {record.position}; only a completed outcome, "
            "whose effect already happened, lands in a cancelled run. Nothing was written"
        )


def check_late(row: WorkflowRow | None, workflow_id: str, executor_id: str | None) -> None:
    """Whether the run, as stored now, takes a late record (raises if not)."""
    check_owned(
        row,
        workflow_id,
        executor_id,
        Status.CANCELLED,
        "a late record lands only in a CANCELLED run (a resumed run records its own)",
        "its late record is not this engine's to write",
    )


def late_gap(name: str, workflow_id: str, position: int, length: int) -> RecordConflict:
    return RecordConflict(
        f"workflow {name!r} (id {workflow_id!r}): cannot land a late record at position "
        f"{position}; the log ends at {length}"
    )
