"""`check_store`'s checks of forks (`create_workflow(..., records=, fork_of=)`): a fork's
records, the events they set, and its lineage (`forked_from`, `fork_position`)."""

from __future__ import annotations

import functools
from datetime import timedelta

from replaykit.log import Record, Status, Value
from replaykit.stores.base import ClaimLimits, EventWrite, Store, WorkflowFilter, WorkflowRow
from replaykit.testing.conformance._support import (
    _BAD_NAMES,
    _T0,
    _equal,
    _expect,
    _log_of,
    _queued,
    _raises,
    _run,
    _step,
    _wait_for,
)

__all__ = [
    "check_fork_lineage",
    "check_fork_sets_the_events_its_records_set",
    "check_fork_with_records",
]


def check_fork_with_records(store: Store) -> None:
    records = [
        _step(0, {"a": 1}, digest="d0", call_site="wf.py:3"),
        Record(1, "recv", "inbox", Value(None), started_at=_T0, completed_at=_T0),
    ]
    _, created = store.create_workflow(_run("f-1"), records=records)
    _equal("create_workflow(records=...) created flag", True, created)
    _equal("the forked run's log", records, _log_of(store, "f-1"))
    _equal(
        "record() at a completed forked position returns the stored record",
        records[1],
        store.record("f-1", _step(1, "other")),
    )
    _equal("record() right after the forked records", _step(2), store.record("f-1", _step(2)))
    _equal("log after recording past the fork", [*records, _step(2)], _log_of(store, "f-1"))


def check_fork_sets_the_events_its_records_set(store: Store) -> None:
    def set_event(position: int, key: str) -> Record:
        return Record(position, "set_event", key, Value(None), digest=f"d{position}")

    store.create_workflow(_run("fe-src"))
    store.record("fe-src", set_event(0, "k"), event=EventWrite("k", {"v": 1}))
    store.record("fe-src", set_event(1, "k"), event=EventWrite("k", {"v": 2}))
    store.record("fe-src", set_event(2, "j"), event=EventWrite("j", "x"))
    store.record("fe-src", _step(3))
    log = _log_of(store, "fe-src")
    notes: list[tuple[str, str]] = []
    unsubscribe = store.subscribe(lambda kind, key: notes.append((kind, key)))
    try:
        for cut, k, j in (
            (0, (False, None), (False, None)),
            (1, (True, {"v": 1}), (False, None)),
            (2, (True, {"v": 2}), (False, None)),
            (4, (True, {"v": 2}), (True, "x")),
        ):
            fork = f"fe-fork-{cut}"
            _, created = store.create_workflow(_run(fork), records=log[:cut], fork_of="fe-src")
            _equal(f"a fork of the first {cut} records created", True, created)
            _equal(
                f"the log of the fork of the first {cut} records", log[:cut], _log_of(store, fork)
            )
            _equal(
                f"event 'k' of the fork of the first {cut} records", k, store.get_event(fork, "k")
            )
            _equal(
                f"event 'j' of the fork of the first {cut} records", j, store.get_event(fork, "j")
            )
        _expect(
            _wait_for(lambda: ("event", "fe-fork-4") in notes),
            "a fork that gets events notifies ('event', its id)",
            ("event", "fe-fork-4"),
            notes,
        )
    finally:
        unsubscribe()
    store.create_workflow(_run("fe-fork-of-fork"), records=log[:1], fork_of="fe-fork-4")
    _equal(
        "event 'k' of a fork of a fork", (True, {"v": 1}), store.get_event("fe-fork-of-fork", "k")
    )
    _equal("the source's event after its forks", (True, {"v": 2}), store.get_event("fe-src", "k"))
    store.record("fe-fork-1", set_event(1, "k"), event=EventWrite("k", {"v": 3}))
    _equal("a fork sets its own events", (True, {"v": 3}), store.get_event("fe-fork-1", "k"))
    _equal("... and not its source's", (True, {"v": 2}), store.get_event("fe-src", "k"))


def _lineage(row: WorkflowRow | None) -> tuple[str | None, int | None] | None:
    return None if row is None else (row.forked_from, row.fork_position)


def check_fork_lineage(store: Store) -> None:
    """A fork's `forked_from` and `fork_position` are stored by every create path,
    read back by every read, and listed by `WorkflowFilter(forked_from=)`."""
    store.create_workflow(_run("fl-src", created_at=_T0))
    for position in range(3):
        store.record("fl-src", _step(position))
    log = _log_of(store, "fl-src")
    _equal("lineage of a run not forked", (None, None), _lineage(store.get_workflow("fl-src")))

    def fork(wid: str, of: str, position: int, age: int) -> tuple[WorkflowRow, bool]:
        """`of`'s fork at `position`, created `age` seconds after `fl-src`."""
        row = _run(
            wid,
            created_at=_T0 + timedelta(seconds=age),
            forked_from=of,
            fork_position=position,
        )
        return store.create_workflow(row, records=log[:position], fork_of=of)

    fork_2, created = fork("fl-fork-2", "fl-src", 2, 1)
    _equal("create_workflow of a fork created it", True, created)
    _equal("lineage create_workflow returns for a fork", ("fl-src", 2), _lineage(fork_2))
    _equal("lineage of a fork read back", ("fl-src", 2), _lineage(store.get_workflow("fl-fork-2")))
    _equal("log of a fork at position 2", log[:2], _log_of(store, "fl-fork-2"))
    fork("fl-fork-0", "fl-src", 0, 2)
    _equal(
        "lineage of a fork at position 0 (no records copied)",
        ("fl-src", 0),
        _lineage(store.get_workflow("fl-fork-0")),
    )
    fork("fl-fork-of-fork", "fl-fork-2", 1, 3)  # fl-fork-2's first record is fl-src's
    store.create_workflows(
        [
            _queued(
                f"fl-queued-{position}",
                created_at=_T0 + timedelta(seconds=4 + position),
                forked_from="fl-src",
                fork_position=position,
            )
            for position in (1, 3)
        ]
    )
    again, created = store.create_workflow(
        _run("fl-fork-2", forked_from="elsewhere", fork_position=7), fork_of="elsewhere"
    )
    _equal("create_workflow of an existing id with another lineage created", False, created)
    _equal("lineage of an existing run is never modified", ("fl-src", 2), _lineage(again))

    def forks(where: WorkflowFilter) -> list[tuple[str, int | None]]:
        return [(row.workflow_id, row.fork_position) for row in store.list_workflows(where)]

    _equal(
        "list_workflows(forked_from=) lists the run's forks, oldest first",
        [("fl-fork-2", 2), ("fl-fork-0", 0), ("fl-queued-1", 1), ("fl-queued-3", 3)],
        forks(WorkflowFilter(forked_from="fl-src")),
    )
    _equal(
        "list_workflows(forked_from=) of a fork lists the forks of the fork only",
        [("fl-fork-of-fork", 1)],
        forks(WorkflowFilter(forked_from="fl-fork-2")),
    )
    _equal(
        "list_workflows(forked_from=) with a status, limit and offset",
        [("fl-queued-3", 3)],
        forks(WorkflowFilter(forked_from="fl-src", status=Status.ENQUEUED, limit=1, offset=1)),
    )
    _equal(
        "list_workflows(forked_from=) of a run with no forks",
        [],
        forks(WorkflowFilter(forked_from="fl-fork-0")),
    )
    claimed = store.claim(
        "q",
        executor_id="e",
        app_version="v1",
        limits=ClaimLimits(limit=9),
        now=_T0 + timedelta(days=1),
    )
    _equal(
        "lineage of the forks claim() returns",
        [("fl-queued-1", "fl-src", 1), ("fl-queued-3", "fl-src", 3)],
        sorted((row.workflow_id, *(_lineage(row) or ())) for row in claimed),
    )
    for kind, bad in _BAD_NAMES.items():
        _raises(
            f"create_workflow of a fork whose source id is {kind}",
            ValueError,
            functools.partial(
                store.create_workflow, _run("fl-bad", forked_from=bad, fork_position=0)
            ),
        )
    _equal("a refused fork is not created", None, store.get_workflow("fl-bad"))
