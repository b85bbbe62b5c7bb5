"""`check_store`'s checks of the filter language (`WorkflowFilter(where=...)`): every
store answers each filter as `where.matches` does, counts alike, and groups counts by
an attribute's value alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replaykit.log import Status
from replaykit.stores.base import Store, WorkflowFilter
from replaykit.stores.where import Has
from replaykit.testing.conformance._support import _T0, _equal, _ids, _run

__all__ = ["check_count_by_attribute", "check_where_filters"]


def _at(seconds: int) -> datetime:
    return _T0 + timedelta(seconds=seconds)


def _iso(seconds: int) -> str:
    return _at(seconds).isoformat()


def _fill(store: Store) -> None:
    runs = [
        (
            "w-0",
            Status.ERROR,
            "order",
            None,
            {
                "customer": "42",
                "plan": "pro",
                "amount": 10,
                "vip": True,
                "tags": ["red", "blue"],
                "due": datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
            },
        ),
        (
            "w-1",
            Status.SUCCESS,
            "order",
            None,
            {"customer": "42", "plan": "free", "amount": 2.5, "vip": False, "tags": ["green"]},
        ),
        ("w-2", Status.CANCELLED, "refund", "q1", {"customer": "7", "amount": "10"}),
        ("w-3", Status.PENDING, "order", None, {}),
        (
            "w-4",
            Status.ERROR,
            "refund",
            None,
            {"customer": "O'Brien", "due": datetime(2027, 1, 1, tzinfo=UTC)},
        ),
    ]
    for index, (wid, status, name, queue, attributes) in enumerate(runs):
        store.create_workflow(
            _run(
                wid,
                status=status,
                name=name,
                queue=queue,
                created_at=_at(index),
                attributes=attributes,
            )
        )


_ALL = ["w-0", "w-1", "w-2", "w-3", "w-4"]
_CASES: list[tuple[str, list[str]]] = [
    ("customer = '42'", ["w-0", "w-1"]),
    ("customer = '42' and status in ('ERROR', 'CANCELLED')", ["w-0"]),
    ("customer != '42'", ["w-2", "w-4"]),
    ("not customer = '42'", ["w-2", "w-3", "w-4"]),
    ("customer not in ('42')", ["w-2", "w-3", "w-4"]),
    ("customer in ('7', 'O''Brien')", ["w-2", "w-4"]),
    ("amount > 5", ["w-0"]),
    ("amount >= 2.5", ["w-0", "w-1"]),
    ("amount = 10", ["w-0"]),
    ("amount = 10.0", ["w-0"]),
    ("amount = '10'", ["w-2"]),
    ("amount < 'z'", ["w-2"]),
    ("not amount > 5", ["w-1", "w-2", "w-3", "w-4"]),
    ("vip = true", ["w-0"]),
    ("vip = false", ["w-1"]),
    ("vip != true", ["w-1"]),
    ("tags = 'red'", ["w-0"]),
    ("tags in ('green', 'nothing')", ["w-1"]),
    ("tags != 'red'", ["w-1"]),
    ("tags > 'a'", []),
    ("due >= '2026-12-01'", ["w-0", "w-4"]),
    ("due < '2027'", ["w-0"]),
    ("plan < 'g'", ["w-1"]),
    ("plan > 'free'", ["w-0"]),
    (f"created >= '{_iso(2)}'", ["w-2", "w-3", "w-4"]),
    (f"created > '{_iso(2)}' and created <= '{_iso(3)}'", ["w-3"]),
    (f"created = '{_iso(1)}'", ["w-1"]),
    ("updated >= '2000-01-01'", _ALL),
    ("name = 'refund' or plan = 'pro'", ["w-0", "w-2", "w-4"]),
    ("queue = 'q1'", ["w-2"]),
    ("queue != 'q1'", ["w-0", "w-1", "w-3", "w-4"]),
    ("not queue = 'q1'", ["w-0", "w-1", "w-3", "w-4"]),
    ("id in ('w-1', 'w-3')", ["w-1", "w-3"]),
    ("status != 'ERROR'", ["w-1", "w-2", "w-3"]),
    ("STATUS = 'error' AND Name = 'order'", ["w-0"]),
    ("nosuch = 'x'", []),
    ("not nosuch = 'x'", _ALL),
    ("(customer = '42' or customer = '7') and not vip = true", ["w-1", "w-2"]),
    ("not (not customer = '7')", ["w-2"]),
    ("partition_key = ''", _ALL),
]


def check_where_filters(store: Store) -> None:
    _fill(store)
    for text, expected in _CASES:
        where = WorkflowFilter(where=text)
        _equal(f"list_workflows(where={text!r})", expected, _ids(store.list_workflows(where)))
        _equal(f"count_workflows(where={text!r})", len(expected), store.count_workflows(where))
    combined = WorkflowFilter(name="order", status=Status.SUCCESS, where="customer = '42'")
    _equal("where= with the filter's fields", ["w-1"], _ids(store.list_workflows(combined)))
    paged = WorkflowFilter(where="customer = '42' or customer = '7'", limit=1, offset=1)
    _equal("where= paged", ["w-1"], _ids(store.list_workflows(paged)))
    has = WorkflowFilter(where=Has("customer"))
    _equal(
        "a run that has the attribute",
        ["w-0", "w-1", "w-2", "w-4"],
        _ids(store.list_workflows(has)),
    )
    bare = WorkflowFilter(where="plan = 'pro'", payloads=False)
    _equal("where= without payloads", ["w-0"], _ids(store.list_workflows(bare)))


def check_count_by_attribute(store: Store) -> None:
    _fill(store)
    everything = WorkflowFilter()
    _equal(
        "count_workflows_by an attribute (runs without it under '')",
        {"42": 2, "7": 1, "O'Brien": 1, "": 1},
        store.count_workflows_by(everything, "customer"),
    )
    _equal(
        "numbers by their shortest form, text as it is (10 and '10' together)",
        {"10": 2, "2.5": 1, "": 2},
        store.count_workflows_by(everything, "amount"),
    )
    _equal("booleans", {"true": 1, "false": 1, "": 3}, store.count_workflows_by(everything, "vip"))
    _equal(
        "lists as JSON",
        {'["red","blue"]': 1, '["green"]': 1, "": 3},
        store.count_workflows_by(everything, "tags"),
    )
    _equal(
        "datetimes as their stored text",
        {"2026-12-01T09:30:00.000000Z": 1, "2027-01-01T00:00:00.000000Z": 1, "": 3},
        store.count_workflows_by(everything, "due"),
    )
    _equal(
        "filtered by where=",
        {"ERROR": 1, "SUCCESS": 1},
        store.count_workflows_by(WorkflowFilter(where="customer = '42'"), "status"),
    )
    _equal(
        "an attribute no run has",
        {"": 5},
        store.count_workflows_by(everything, "nosuch"),
    )
