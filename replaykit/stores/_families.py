"""What every store decides alike for `move_family`: which runs of a family move onto
a version, in which order, and what each gets.

A family is a run and its descendants: the runs whose `parent_id` is it, theirs, and
so on. Children started by earlier generations of a run that continued as new name its
live id, so they belong to it too. The memory store walks its rows; the SQL stores read
the family with their `lock_family` statement inside the transaction that moves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from replaykit.errors import WorkflowNotFound
from replaykit.log import Status

__all__ = ["MOVABLE", "Member", "family_from_rows", "moving"]

#: The statuses of the runs a move restamps: those not finished. A finished run (and an
#: archived generation, CONTINUED) never runs again, so its version does not matter.
MOVABLE = (Status.ENQUEUED, Status.PENDING, Status.PARKED)


@attrs.frozen
class Member:
    """What a move needs of one run of the family."""

    workflow_id: str
    parent_id: str | None
    status: Status
    app_version: str
    queue: str | None


def family_from_rows(workflow_id: str, rows: Sequence[Sequence[Any]]) -> list[Member]:
    """The family a SQL store's `lock_family` read: (id, parent id, status, version,
    queue) a row; `WorkflowNotFound` if the run itself is not among them."""
    if not any(r[0] == workflow_id for r in rows):
        raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
    return [Member(r[0], r[1], Status(r[2]), r[3], r[4]) for r in rows]


def moving(root: str, members: Iterable[Member], app_version: str) -> list[Member]:
    """The members that move onto `app_version`, parents before children (breadth first).

    `members` holds the family (more is ignored): a member moves when it is not
    finished and is stamped with another version. The walk goes through finished
    runs too, since a finished child may have left a grandchild running.
    """
    children: dict[str | None, list[Member]] = {}
    by_id: dict[str, Member] = {}
    for member in members:
        by_id[member.workflow_id] = member
        children.setdefault(member.parent_id, []).append(member)
    if root not in by_id:
        return []
    order: list[Member] = []
    seen = {root}
    level = [by_id[root]]
    while level:
        order.extend(level)
        below: list[Member] = []
        for member in level:
            for child in sorted(children.get(member.workflow_id, ()), key=_by_id):
                if child.workflow_id not in seen:  # ids are unique; a guard, not a rule
                    seen.add(child.workflow_id)
                    below.append(child)
        level = below
    return [m for m in order if m.status in MOVABLE and m.app_version != app_version]


def _by_id(member: Member) -> str:
    return member.workflow_id
