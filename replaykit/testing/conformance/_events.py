"""`check_store`'s checks of a run's events: `get_event` and `get_events`, the latest
write winning."""

from __future__ import annotations

from replaykit.errors import WorkflowNotFound
from replaykit.log import Record, Value
from replaykit.stores.base import EventWrite, Store
from replaykit.testing.conformance._support import _equal, _raises, _run, _step

__all__ = ["check_event_latest_wins", "check_get_events"]


def check_get_events(store: Store) -> None:
    store.create_workflow(_run("ev-all"))
    _equal("get_events of a run with none", {}, store.get_events("ev-all"))
    store.record("ev-all", Record(0, "set_event", "a", Value(None)), event=EventWrite("a", 1))
    store.record("ev-all", Record(1, "set_event", "b", Value(None)), event=EventWrite("b", [2]))
    store.record("ev-all", Record(2, "set_event", "a", Value(None)), event=EventWrite("a", 3))
    _equal("get_events: the latest value per key", {"a": 3, "b": [2]}, store.get_events("ev-all"))
    _raises("get_events of an unknown run", WorkflowNotFound, lambda: store.get_events("nope"))


def check_event_latest_wins(store: Store) -> None:
    store.create_workflow(_run("e-1"))
    _equal("get_event before any set", (False, None), store.get_event("e-1", "k"))
    store.record("e-1", _step(0), event=EventWrite("k", {"v": 1}))
    _equal("get_event after a set", (True, {"v": 1}), store.get_event("e-1", "k"))
    store.record("e-1", _step(1), event=EventWrite("k", [2]))
    _equal("get_event after a second set", (True, [2]), store.get_event("e-1", "k"))
    store.record("e-1", _step(2), event=EventWrite("other", None))
    _equal("get_event of a None value", (True, None), store.get_event("e-1", "other"))
    _equal(
        "get_event of the first key after setting another", (True, [2]), store.get_event("e-1", "k")
    )
    store.record("e-1", _step(1, "again"), event=EventWrite("k", "ignored"))
    _equal(
        "get_event after a record() that wrote nothing", (True, [2]), store.get_event("e-1", "k")
    )
    _equal("get_event of another run", (False, None), store.get_event("nope", "k"))
