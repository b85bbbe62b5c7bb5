"""`check_store`'s checks of what a heartbeat carries: the workflows an engine
registered and the queues it drains (`Store.heartbeat(..., workflows=, queues=)`),
read back by `read_heartbeats` where a store has it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from replaykit.stores import _beats
from replaykit.stores.base import Store
from replaykit.testing.conformance._support import _equal, _raises

__all__ = ["check_heartbeat_names_are_bounded", "check_heartbeat_records_what_the_engine_runs"]

_T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _read(store: Store) -> dict[str, Any] | None:
    reader = getattr(store, "read_heartbeats", None)
    if reader is None:
        return None  # not in the protocol: a store may keep its heartbeats unread
    return {beat.executor_id: beat.registered for beat in reader(_T0 - timedelta(days=1))}


def check_heartbeat_records_what_the_engine_runs(store: Store) -> None:
    odd = "wf-é'\"\\"
    store.heartbeat("e1", "v1", _T0, workflows=["b", "a", odd, "a"], queues=["q"])
    store.heartbeat("e2", "v1", _T0, workflows=[], queues=[])
    store.heartbeat("old", "v1", _T0)  # an engine of an older replaykit says nothing
    read = _read(store)
    if read is not None:
        _equal(
            "the names a heartbeat carried, read back (sorted, once each)",
            _beats.Registered(("a", "b", odd), ("q",)),
            read["e1"],
        )
        _equal(
            "a producer's heartbeat (no workflow, no queue)", _beats.Registered((), ()), read["e2"]
        )
        _equal("a heartbeat that carried no names", None, read["old"])
    # A later beat says what is true now: names dropped, or none said at all.
    store.heartbeat("e1", "v1", _T0 + timedelta(seconds=1), workflows=["a"], queues=None)
    store.heartbeat("e2", "v1", _T0 + timedelta(seconds=1))
    read = _read(store)
    if read is not None:
        _equal("a later heartbeat's names", _beats.Registered(("a",), None), read["e1"])
        _equal("a later heartbeat that carried no names", None, read["e2"])


def check_heartbeat_names_are_bounded(store: Store) -> None:
    many = [f"wf-{n:05d}" for n in range(_beats.MAX_NAMES + 5)]
    store.heartbeat("many", "v1", _T0, workflows=many, queues=["q"])
    # 200 names of 1,000 bytes: the byte bound cuts before the count bound.
    long = [f"{n:03d}" + "x" * 997 for n in range(200)]
    store.heartbeat("long", "v1", _T0, workflows=["a"], queues=long)
    _raises(
        "heartbeat(workflows='one string')",
        TypeError,
        lambda: store.heartbeat("bad", "v1", _T0, workflows="wf", queues=None),
    )
    read = _read(store)
    if read is None:
        return
    _equal(
        f"the workflows kept of {len(many)}",
        (tuple(many[: _beats.MAX_NAMES]), 5),
        (read["many"].workflows, read["many"].more_workflows),
    )
    kept = _beats.MAX_BYTES // 1000
    _equal(
        "the queues kept of 200 names of 1,000 bytes",
        (tuple(long[:kept]), 200 - kept),
        (read["long"].queues, read["long"].more_queues),
    )
