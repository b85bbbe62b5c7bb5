"""Why a record was not written: read in its transaction after the fast statement said no.

The writes try their one statement first (`append_record`, `append_last_record`);
only when it changes nothing do these reads find out why, and answer with the
protocol's error, the stored record to hand back, or "nothing stood in the way".
"""

from __future__ import annotations

import sqlite3

from replaykit.errors import StoreError
from replaykit.log import Record, Status
from replaykit.stores._finish import same_record, unlike_error
from replaykit.stores._rules import check_recordable, gap_error, replaces_stored
from replaykit.stores.base import WorkflowRow
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.values import first, record_from_row

__all__ = ["get_record", "last_record_stands", "log_length", "refusal", "run_owner"]


def run_owner(conn: sqlite3.Connection, workflow_id: str) -> WorkflowRow | None:
    """The run's name, status and executor (other fields left default); None if missing."""
    found = first(conn.execute(SQL["run_owner"], (workflow_id,)))
    if found is None:
        return None
    return WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])


def get_record(conn: sqlite3.Connection, workflow_id: str, position: int) -> Record | None:
    """The stored record at `position`, or None."""
    stored = first(conn.execute(SQL["get_record"], (workflow_id, position)))
    return None if stored is None else record_from_row(stored, workflow_id)


def log_length(conn: sqlite3.Connection, workflow_id: str) -> int:
    return int(first(conn.execute(SQL["log_length"], (workflow_id,)))[0])


def refusal(
    conn: sqlite3.Connection,
    workflow_id: str,
    position: int,
    record: Record | None,
    executor_id: str | None,
) -> Record | None:
    """Why `record` cannot go to `position`: raises the protocol's error, or
    returns the stored record the caller should hand back; None if nothing
    stands in the way. `record` None: a completed record, not known yet
    (a Transaction's, which its body returns)."""
    row = run_owner(conn, workflow_id)
    check_recordable(row, workflow_id, executor_id)
    assert row is not None
    stored = first(conn.execute(SQL["get_record"], (workflow_id, position)))
    if stored is not None:
        if stored[3] is not None:
            return record_from_row(stored, workflow_id)
        if record is None or record.outcome is not None:
            return None  # completing a pending record
        pending = record_from_row(stored, workflow_id)
        return None if replaces_stored(pending, record) else pending
    if position > 0 and first(conn.execute(SQL["get_record"], (workflow_id, position - 1))) is None:
        raise gap_error(row.name, workflow_id, position, log_length(conn, workflow_id))
    return None


def last_record_stands(
    conn: sqlite3.Connection, workflow_id: str, last: Record, executor_id: str | None
) -> bool:
    """Why a finish's last record was not written (in its transaction).

    False: the run is missing, not PENDING or not owned (the finish
    answers False). True: the position holds an equal completed record,
    which counts as written. Otherwise raises `RecordConflict`.
    """
    # The status as stored, not as a Status: a value no Status has is not PENDING.
    found = first(conn.execute(SQL["run_owner"], (workflow_id,)))
    if found is None or found[1] != Status.PENDING.value:
        return False
    if executor_id is not None and found[2] != executor_id:
        return False
    held = get_record(conn, workflow_id, last.position)
    if held is not None:
        if same_record(held, last):
            return True
        if held.outcome is not None:
            raise unlike_error(found[0], workflow_id, held, last)
    elif last.position > 0:
        length = log_length(conn, workflow_id)
        if length < last.position:
            raise gap_error(found[0], workflow_id, last.position, length)
    raise StoreError(
        f"workflow id {workflow_id!r}: position {last.position} could not be recorded "
        "with the run's finish although nothing stood in the way; is another program "
        "writing to this database?"
    )
