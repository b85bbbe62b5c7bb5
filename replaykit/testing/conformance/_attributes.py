"""`check_store`'s checks of a run's attributes: stored at creation, typed as given,
merged by `set_attributes`, refused alike, and returned by every read of the row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from typing import Any

from replaykit.log import Status
from replaykit.stores.base import ClaimLimits, Store, WorkflowFilter
from replaykit.testing.conformance._support import (
    _T0,
    _equal,
    _present,
    _queued,
    _raises,
    _run,
)

__all__ = [
    "check_attributes_refused_alike",
    "check_attributes_round_trip",
    "check_set_attributes_merges",
]

_PLUS_TWO = timezone(timedelta(hours=2))


def check_attributes_round_trip(store: Store) -> None:
    given = {
        "customer": "42",
        "count": 7,
        "ratio": 0.25,
        "vip": True,
        "due": datetime(2026, 12, 1, 11, 30, 0, 5, tzinfo=_PLUS_TWO),
        "tags": ["red", "green"],
        "empty": [],
        "text": "naïve ✓",
    }
    expected = dict(given, due=datetime(2026, 12, 1, 9, 30, 0, 5, tzinfo=UTC))
    stored, _ = store.create_workflow(_run("at-1", attributes=given))
    _equal("the row create_workflow returns", expected, stored.attributes)
    got = _present("get_workflow", store.get_workflow("at-1"))
    _equal("get_workflow", expected, got.attributes)
    _equal(
        "types kept",
        {k: type(v) for k, v in expected.items()},
        {k: type(v) for k, v in got.attributes.items()},
    )
    _equal("a datetime comes back in UTC", timedelta(0), got.attributes["due"].utcoffset())
    [listed] = store.list_workflows(WorkflowFilter(id_prefix="at-1"))
    _equal("list_workflows", expected, listed.attributes)
    [bare] = store.list_workflows(WorkflowFilter(id_prefix="at-1", payloads=False))
    _equal("a listing without payloads keeps them", expected, bare.attributes)
    store.create_workflow(_run("at-none"))
    _equal(
        "a run given none has none", {}, _present("get", store.get_workflow("at-none")).attributes
    )
    # Created in a batch, and claimed from a queue: the row carries them either way.
    store.create_workflows([_queued("at-q", attributes={"customer": "7"}, created_at=_T0)])
    [claimed] = store.claim(
        "q",
        executor_id="e1",
        app_version="v1",
        limits=ClaimLimits(limit=1),
        now=_T0 + timedelta(seconds=1),
    )
    _equal("a claimed row", {"customer": "7"}, claimed.attributes)


def check_set_attributes_merges(store: Store) -> None:
    store.create_workflow(_run("sa-1", attributes={"customer": "42", "plan": "free"}))
    _equal("set_attributes of a run", True, store.set_attributes("sa-1", {"plan": "pro", "n": 1}))
    got = _present("get_workflow", store.get_workflow("sa-1"))
    _equal(
        "merged: new names added, given ones replaced",
        {"customer": "42", "plan": "pro", "n": 1},
        got.attributes,
    )
    _equal("written again, the same", True, store.set_attributes("sa-1", {"plan": "pro"}))
    _equal(
        "unchanged",
        {"customer": "42", "plan": "pro", "n": 1},
        _present("get", store.get_workflow("sa-1")).attributes,
    )
    store.set_attributes("sa-1", {"tags": ["a", "b"]})
    store.set_attributes("sa-1", {"tags": ["c"]})
    _equal(
        "a list is replaced, not merged",
        ["c"],
        _present("get", store.get_workflow("sa-1")).attributes["tags"],
    )
    _equal("no such run", False, store.set_attributes("sa-missing", {"a": 1}))
    store.set_status("sa-1", Status.SUCCESS)
    _equal("a finished run takes them too", True, store.set_attributes("sa-1", {"done": True}))
    _equal("kept", True, _present("get", store.get_workflow("sa-1")).attributes["done"])


def check_attributes_refused_alike(store: Store) -> None:
    store.create_workflow(_run("ar-1"))
    refused: list[tuple[str, type[BaseException], object]] = [
        ("a dict value", TypeError, {"a": {"b": 1}}),
        ("None", TypeError, {"a": None}),
        ("a list of ints", TypeError, {"a": [1]}),
        ("a naive datetime", ValueError, {"a": datetime(2026, 1, 1)}),
        ("NaN", ValueError, {"a": float("nan")}),
        ("an int past 64 bits", ValueError, {"a": 2**64}),
        ("a name with a space", ValueError, {"a b": 1}),
        ("a name that is a built-in field", ValueError, {"status": "x"}),
        ("a name that is a word of the language", ValueError, {"and": "x"}),
        ("NUL in a value", ValueError, {"a": "x\x00y"}),
        ("over-long text", ValueError, {"a": "x" * 1001}),
    ]
    for what, kind, attributes in refused:
        given: Any = attributes
        _raises(f"set_attributes with {what}", kind, partial(store.set_attributes, "ar-1", given))
        row = _run("ar-2", attributes=given)
        _raises(f"create_workflow with {what}", kind, partial(store.create_workflow, row))
    _equal("nothing written", {}, _present("get", store.get_workflow("ar-1")).attributes)
    _equal("no run created", None, store.get_workflow("ar-2"))
