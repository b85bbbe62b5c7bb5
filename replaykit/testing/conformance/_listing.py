"""`check_store`'s checks of `list_workflows`: its filters, and its order with ties
broken by id."""

from __future__ import annotations

from datetime import timedelta

import attrs

from replaykit.log import Status
from replaykit.stores.base import Store, WorkflowFilter
from replaykit.testing.conformance._support import (
    _T0,
    _equal,
    _ids,
    _pending,
    _raises,
    _run,
    _step,
)

__all__ = [
    "check_count_workflows_by",
    "check_list_by_wake_instant",
    "check_list_filters",
    "check_list_order_ties_broken_by_id",
]


def check_list_filters(store: Store) -> None:
    specs = [
        ("l-0", Status.PENDING, "alpha", "e1", "v1", None, None),
        ("l-1", Status.SUCCESS, "alpha", "e1", "v2", "l-0", None),
        ("l-2", Status.ENQUEUED, "beta", "e2", "v1", None, "q1"),
        ("l-3", Status.ERROR, "beta", "e1", "v1", "l-0", "q1"),
        ("l-4", Status.PENDING, "gamma", "e2", "v2", None, "q2"),
        ("l-5", Status.CANCELLED, "alpha", "e2", "v1", None, None),
    ]
    # Created out of id order, so an implementation sorting by id alone fails.
    for index in (3, 0, 5, 1, 4, 2):
        wid, status, name, executor, version, parent, queue = specs[index]
        store.create_workflow(
            _run(
                wid,
                status=status,
                name=name,
                executor_id=executor,
                app_version=version,
                parent_id=parent,
                queue=queue,
                created_at=_T0 + timedelta(seconds=index),
            )
        )
    cases: list[tuple[str, WorkflowFilter, list[str]]] = [
        ("no filter", WorkflowFilter(), ["l-0", "l-1", "l-2", "l-3", "l-4", "l-5"]),
        ("status", WorkflowFilter(status=Status.PENDING), ["l-0", "l-4"]),
        ("statuses", WorkflowFilter(status=[Status.ERROR, Status.SUCCESS]), ["l-1", "l-3"]),
        ("empty status list", WorkflowFilter(status=[]), []),
        ("name", WorkflowFilter(name="alpha"), ["l-0", "l-1", "l-5"]),
        ("executor", WorkflowFilter(executor_id="e2"), ["l-2", "l-4", "l-5"]),
        ("version", WorkflowFilter(app_version="v2"), ["l-1", "l-4"]),
        ("parent", WorkflowFilter(parent_id="l-0"), ["l-1", "l-3"]),
        ("queue", WorkflowFilter(queue="q1"), ["l-2", "l-3"]),
        ("since (inclusive)", WorkflowFilter(since=_T0 + timedelta(seconds=4)), ["l-4", "l-5"]),
        ("until (exclusive)", WorkflowFilter(until=_T0 + timedelta(seconds=2)), ["l-0", "l-1"]),
        (
            "since and until",
            WorkflowFilter(since=_T0 + timedelta(seconds=1), until=_T0 + timedelta(seconds=3)),
            ["l-1", "l-2"],
        ),
        ("limit", WorkflowFilter(limit=2), ["l-0", "l-1"]),
        ("limit 0", WorkflowFilter(limit=0), []),
        ("offset", WorkflowFilter(offset=4), ["l-4", "l-5"]),
        ("limit and offset", WorkflowFilter(limit=2, offset=3), ["l-3", "l-4"]),
        ("offset past the end", WorkflowFilter(offset=10), []),
        (
            "combined",
            WorkflowFilter(
                status=[Status.PENDING, Status.CANCELLED], executor_id="e2", app_version="v1"
            ),
            ["l-5"],
        ),
        ("filter then page", WorkflowFilter(name="alpha", offset=1, limit=1), ["l-1"]),
        ("no match", WorkflowFilter(name="zeta"), []),
        ("id prefix", WorkflowFilter(id_prefix="l-"), ["l-0", "l-1", "l-2", "l-3", "l-4", "l-5"]),
        ("a whole id as prefix", WorkflowFilter(id_prefix="l-3"), ["l-3"]),
        (
            "id prefix and status",
            WorkflowFilter(id_prefix="l", status=Status.PENDING),
            ["l-0", "l-4"],
        ),
        ("id prefix is case-sensitive", WorkflowFilter(id_prefix="L-"), []),
        ("id prefix has no wildcards", WorkflowFilter(id_prefix="l_"), []),
        ("id prefix % is a character", WorkflowFilter(id_prefix="%"), []),
        ("id prefix longer than any id", WorkflowFilter(id_prefix="l-3-x"), []),
        (
            "empty id prefix",
            WorkflowFilter(id_prefix=""),
            ["l-0", "l-1", "l-2", "l-3", "l-4", "l-5"],
        ),
    ]
    for label, where, expected in cases:
        _equal(f"list_workflows by {label}", expected, _ids(store.list_workflows(where)))
    _equal(
        "count_workflows by id prefix", 1, store.count_workflows(WorkflowFilter(id_prefix="l-3"))
    )
    rows = store.list_workflows(WorkflowFilter(name="beta"))
    _equal(
        "rows returned by list_workflows equal get_workflow's",
        [store.get_workflow("l-2"), store.get_workflow("l-3")],
        rows,
    )


def check_list_by_wake_instant(store: Store) -> None:
    """`wakes_after` and `wakes_by` select runs by the wake instant their records set
    (an engine's timer scan, and its recovery passing over parked sleepers)."""
    for wid in ("w-0", "w-1", "w-2", "w-3"):
        store.create_workflow(_run(wid, executor_id="e", app_version="v"))
    for wid, seconds in (("w-1", 10), ("w-2", 20), ("w-3", 30)):
        at = _T0 + timedelta(seconds=seconds)
        store.record(wid, _pending(0, wake_at=at), executor_id="e", wake_at=at)
    # The sleep's end clears the run's wake instant.
    store.record("w-3", _step(0, kind="sleep", name="p0"), executor_id="e")
    _equal(
        "a run's wake instant, as its record set it",
        _T0 + timedelta(seconds=10),
        (store.get_workflow("w-1") or _run("none")).wake_at,
    )
    cases: list[tuple[str, WorkflowFilter, list[str]]] = [
        (
            "wakes after (exclusive)",
            WorkflowFilter(wakes_after=_T0 + timedelta(seconds=10)),
            ["w-2"],
        ),
        ("wakes after: none is never after", WorkflowFilter(wakes_after=_T0), ["w-1", "w-2"]),
        (
            "wakes by (inclusive; none counts)",
            WorkflowFilter(wakes_by=_T0 + timedelta(seconds=10)),
            ["w-0", "w-1", "w-3"],
        ),
        (
            "wakes after and by",
            WorkflowFilter(
                wakes_after=_T0 + timedelta(seconds=5),
                wakes_by=_T0 + timedelta(seconds=20),
                executor_id="e",
                app_version="v",
                status=Status.PENDING,
            ),
            ["w-1", "w-2"],
        ),
        (
            "wakes by, another executor",
            WorkflowFilter(wakes_by=_T0 + timedelta(seconds=60), executor_id="x"),
            [],
        ),
    ]
    for label, where, expected in cases:
        where = attrs.evolve(where, id_prefix="w-")
        _equal(f"list_workflows by {label}", expected, _ids(store.list_workflows(where)))
    _equal(
        "count_workflows by wake instant",
        3,
        store.count_workflows(
            WorkflowFilter(
                status=Status.PENDING, wakes_by=_T0 + timedelta(seconds=15), id_prefix="w-"
            )
        ),
    )


def check_list_order_ties_broken_by_id(store: Store) -> None:
    for wid in ("t-c", "t-a", "T-b", "t-b"):
        store.create_workflow(_run(wid, created_at=_T0))
    store.create_workflow(_run("t-0", created_at=_T0 - timedelta(microseconds=1)))
    _equal(
        "list_workflows order: created_at, then workflow_id (code point order)",
        ["t-0", "T-b", "t-a", "t-b", "t-c"],
        _ids(store.list_workflows(WorkflowFilter())),
    )
    # A keyset page goes on after a (created_at, id) in the same order, ties and all.
    _equal(
        "list_workflows after a run of a tie: the rest of the tie, then later runs",
        ["t-a", "t-b", "t-c"],
        _ids(store.list_workflows(WorkflowFilter(after=(_T0, "T-b")))),
    )
    _equal(
        "list_workflows after the first run, paged",
        ["T-b", "t-a"],
        _ids(
            store.list_workflows(
                WorkflowFilter(after=(_T0 - timedelta(microseconds=1), "t-0"), limit=2)
            )
        ),
    )
    _equal(
        "count_workflows after a run",
        2,
        store.count_workflows(WorkflowFilter(after=(_T0, "t-a"))),
    )


def check_count_workflows_by(store: Store) -> None:
    """`count_workflows_by`: one grouped count per field, filtered as listings are."""
    for wid, name, status, queue in (
        ("cb-1", "cb-a", Status.SUCCESS, "cb-q"),
        ("cb-2", "cb-a", Status.ERROR, "cb-q"),
        ("cb-3", "cb-a", Status.SUCCESS, None),
        ("cb-4", "cb-b", Status.SUCCESS, "cb-q"),
    ):
        store.create_workflow(_run(wid, name=name, status=status, queue=queue))
    of_a = WorkflowFilter(name="cb-a")
    _equal(
        "counts of cb-a by status",
        {"SUCCESS": 2, "ERROR": 1},
        store.count_workflows_by(of_a, "status"),
    )
    _equal(
        "counts of cb-a by queue (none: '')",
        {"cb-q": 2, "": 1},
        store.count_workflows_by(of_a, "queue"),
    )
    _equal(
        "counts of the SUCCESS runs by name",
        {"cb-a": 2, "cb-b": 1},
        {
            name: n
            for name, n in store.count_workflows_by(
                WorkflowFilter(status=Status.SUCCESS), "name"
            ).items()
            if name.startswith("cb-")
        },
    )
    _equal(
        "counts of no run", {}, store.count_workflows_by(WorkflowFilter(name="cb-none"), "status")
    )
    _raises(
        "count_workflows_by of a field it does not group by",
        ValueError,
        lambda: store.count_workflows_by(of_a, "inputs; DROP TABLE workflows"),
    )


def check_newest_first_and_counts_at_most(store: Store) -> None:
    """`WorkflowFilter(newest_first=True)` lists in the reverse order, its `after` paging
    on in that order; `count_at_most` caps a count, and each group of a grouped one."""
    for wid in ("n-a", "n-b", "n-c"):
        store.create_workflow(_run(wid, status=Status.SUCCESS, created_at=_T0))
    store.create_workflow(_run("n-0", status=Status.SUCCESS, created_at=_T0 - timedelta(seconds=1)))
    store.create_workflow(_run("n-x", status=Status.ERROR, created_at=_T0 + timedelta(seconds=1)))
    _equal(
        "list_workflows newest first: created_at, then id, both descending",
        ["n-x", "n-c", "n-b", "n-a", "n-0"],
        _ids(store.list_workflows(WorkflowFilter(newest_first=True))),
    )
    _equal(
        "newest first, a page of two after the second",
        ["n-b", "n-a"],
        _ids(store.list_workflows(WorkflowFilter(newest_first=True, after=(_T0, "n-c"), limit=2))),
    )
    _equal(
        "newest first with an offset",
        ["n-a", "n-0"],
        _ids(store.list_workflows(WorkflowFilter(newest_first=True, offset=3))),
    )
    _equal(
        "count_workflows at most 2 of 5", 2, store.count_workflows(WorkflowFilter(count_at_most=2))
    )
    _equal(
        "count_workflows at most 9 of 5", 5, store.count_workflows(WorkflowFilter(count_at_most=9))
    )
    _equal(
        "count_workflows at most 3, filtered: the filter holds",
        1,
        store.count_workflows(WorkflowFilter(status=Status.ERROR, count_at_most=3)),
    )
    _equal(
        "counts by status at most 2 each (groups with none left out)",
        {"SUCCESS": 2, "ERROR": 1},
        store.count_workflows_by(WorkflowFilter(count_at_most=2), "status"),
    )
    _equal(
        "counts by status at most 2, of the SUCCESS and PARKED runs since n-a's instant",
        {"SUCCESS": 2},
        store.count_workflows_by(
            WorkflowFilter(status=(Status.SUCCESS, Status.PARKED), since=_T0, count_at_most=2),
            "status",
        ),
    )
    _equal(
        "counts by name at most 3",
        {"wf": 3},
        store.count_workflows_by(WorkflowFilter(count_at_most=3), "name"),
    )
