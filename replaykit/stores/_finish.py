"""What every store's `finish_workflow(record=...)` shares: the checks of its last record."""

from __future__ import annotations

from replaykit import serde
from replaykit.errors import RecordConflict
from replaykit.log import Record
from replaykit.stores._checks import check_names, check_record

__all__ = ["checked_finish", "last_record", "same_record", "unlike_error"]


def checked_finish(
    workflow_id: str, executor_id: str | None, record: Record | None
) -> Record | None:
    """A finish's refusals before anything is read or written (its names, its last
    record); the last record it may commit, or None."""
    last = last_record(workflow_id, record)
    check_names(workflow_id, executor_id=executor_id)
    if last is not None:
        check_record(workflow_id, last)
    return last


def last_record(workflow_id: str, record: Record | None) -> Record | None:
    """`record` if a finish may commit it with the run's result; None for no record.

    Refused (nothing written) unless it is a completed `Record`: the run's
    result was computed from its outcome, so a pending one cannot come first.
    """
    if record is None:
        return None
    if not isinstance(record, Record):
        raise TypeError(
            f"finish_workflow(record=...) takes a Record, not {type(record).__name__} "
            f"(workflow id {workflow_id!r})"
        )
    if record.outcome is None:
        raise ValueError(
            f"workflow id {workflow_id!r}: finish_workflow(record=...) was given the pending "
            f"record {record.describe()} at position {record.position}; a run finishes only "
            "after its last outcome, so record a pending command with record() instead. "
            "Nothing was written"
        )
    return record


def same_record(stored: Record, given: Record) -> bool:
    """Whether the completed record a position holds is `given`, as a retried write sends it.

    Equal as values, or encoded alike (a stored value read back may differ in
    form only, such as a float NaN, which is unequal to itself).
    """
    if stored.outcome is None:
        return False
    if stored == given:
        return True
    try:
        return serde.dumps(_comparable(stored)) == serde.dumps(_comparable(given))
    except Exception:
        return False


def _comparable(record: Record) -> dict[str, object]:
    data = record.to_json()
    for key in ("started_at", "completed_at", "wake_at"):
        instant = getattr(record, key)
        data[key] = None if instant is None else instant.timestamp()
    return data


def unlike_error(name: str, workflow_id: str, stored: Record, given: Record) -> RecordConflict:
    """The refusal of a finish whose last record's position holds another completed record."""
    return RecordConflict(
        f"workflow {name!r} (id {workflow_id!r}): position {given.position} already holds "
        f"a completed {stored.describe()} that differs from the {given.describe()} this "
        "finish was computed from; another writer recorded it first. Nothing was written: "
        "the run stays PENDING, and a replay from its log finishes it from the stored outcome"
    )
