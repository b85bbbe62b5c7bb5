"""replaykit/stores/_families.py: which runs of a family `move_family` moves, in which order."""

from __future__ import annotations

import pytest

from replaykit.errors import WorkflowNotFound
from replaykit.log import Status
from replaykit.stores._families import Member, family_from_rows, moving


def member(workflow_id: str, parent: str | None, status: Status, version: str = "v1") -> Member:
    return Member(workflow_id, parent, status, version, None)


FAMILY = [
    member("root", None, Status.PENDING),
    member("c2", "root", Status.PARKED),
    member("c1", "root", Status.SUCCESS),  # finished, but its child still runs
    member("g1", "c1", Status.ENQUEUED),
    member("c3", "root", Status.PENDING, version="v2"),  # already on the version
    member("g2", "c2", Status.CANCELLED),
    member("stranger", None, Status.PENDING),
]


def test_the_unfinished_members_move_parents_first_through_finished_ones() -> None:
    assert [m.workflow_id for m in moving("root", FAMILY, "v2")] == ["root", "c2", "g1"]


def test_a_move_from_within_the_family_takes_only_what_is_below() -> None:
    assert [m.workflow_id for m in moving("c1", FAMILY, "v2")] == ["g1"]
    assert moving("nobody", FAMILY, "v2") == []


def test_the_rows_a_sql_store_read_become_members_or_the_run_is_not_found() -> None:
    rows = [("root", None, "PENDING", "v1", "q"), ("c", "root", "ERROR", "v1", None)]
    assert family_from_rows("root", rows) == [
        Member("root", None, Status.PENDING, "v1", "q"),
        Member("c", "root", Status.ERROR, "v1", None),
    ]
    with pytest.raises(WorkflowNotFound, match="'gone'"):
        family_from_rows("gone", rows)
