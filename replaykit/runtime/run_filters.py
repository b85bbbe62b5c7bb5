"""The keyword filters of the listings and the bulk actions, declared once.

`list_workflows`, `count_workflows` and the five bulk actions each take a run's
filters as keywords (`status=`, `name=`, `version=`, ...). Written out in each, the
same dozen typed parameters stood seven times in two modules; here they are typed
dicts the methods take as `**filters` (PEP 692), so a type checker still checks each
keyword and its type, and `workflow_filter` turns them into the store's
`WorkflowFilter`. A keyword no filter knows is refused as Python refuses one, by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, Unpack

from replaykit.log import Status
from replaykit.stores.base import WorkflowFilter

__all__ = ["BulkFilters", "ListFilters", "RunFilters", "check_keywords", "workflow_filter"]


class RunFilters(TypedDict, total=False):
    """What the listings and the bulk actions alike narrow runs by; a run is chosen
    when it matches every keyword given."""

    status: Status | str | Sequence[Status | str] | None
    name: str | None
    #: The application version a run is stamped with (`WorkflowFilter.app_version`).
    version: str | None
    queue: str | None
    since: datetime | None
    until: datetime | None


class ListFilters(RunFilters, total=False):
    """`list_workflows`' and `count_workflows`' keywords: a run's lineage too."""

    executor_id: str | None
    parent_id: str | None
    forked_from: str | None
    continued_as: str | None
    partition_key: str | None


class BulkFilters(RunFilters, total=False):
    """A bulk action's keywords: what it selects may also be narrowed by id."""

    #: Runs whose id starts with it, exactly (no wildcards).
    id_prefix: str | None


def check_keywords(
    what: str, given: Mapping[str, object], allowed: type, *, kind: str = "filters"
) -> None:
    """Refuse a keyword the typed dict `allowed` does not declare, as Python would
    refuse it in a signature that spelled each out: `what` is the method's name, `kind`
    what its keywords are called in the message."""
    known: frozenset[str] = getattr(allowed, "__optional_keys__", frozenset())
    unknown = sorted(set(given) - known)
    if unknown:
        raise TypeError(
            f"{what}() got an unexpected keyword argument {unknown[0]!r}; "
            f"its {kind} are {', '.join(sorted(known))}"
        )


def workflow_filter(
    *,
    id_prefix: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    **filters: Unpack[ListFilters],
) -> WorkflowFilter:
    """The store's filter from the keyword filters a listing or a bulk action takes
    (checked by the caller, `check_keywords`, which names itself in the error)."""
    status = filters.get("status")
    statuses: Any = status
    if isinstance(status, str):
        statuses = Status(status)
    elif status is not None and not isinstance(status, Status):
        statuses = tuple(Status(s) for s in status)
    return WorkflowFilter(
        status=statuses,
        name=filters.get("name"),
        executor_id=filters.get("executor_id"),
        app_version=filters.get("version"),
        parent_id=filters.get("parent_id"),
        queue=filters.get("queue"),
        forked_from=filters.get("forked_from"),
        continued_as=filters.get("continued_as"),
        partition_key=filters.get("partition_key"),
        since=filters.get("since"),
        until=filters.get("until"),
        id_prefix=id_prefix,
        limit=limit,
        offset=offset,
    )
