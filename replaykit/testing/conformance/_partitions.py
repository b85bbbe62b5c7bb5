"""`check_store`'s checks of partition keys: stored and listed, claimed in turn, limited
per key (the rule: replaykit/stores/_partitions.py)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from replaykit.log import Status, Value
from replaykit.stores.base import ClaimLimits, Store, WorkflowFilter
from replaykit.testing.conformance._support import _T0, _claimed_at_once, _equal, _ids, _queued

__all__ = [
    "check_partition_keys_stored_and_listed",
    "check_partitioned_claims_limit_each_key",
    "check_partitioned_claims_serve_keys_in_turn",
    "check_partitioned_claims_weigh_keys",
    "check_partitioned_concurrent_claims",
]

_NOW = _T0 + timedelta(hours=1)


def _enqueue(store: Store, wid: str, key: str | None, seconds: float, **fields: Any) -> None:
    store.create_workflow(
        _queued(wid, partition_key=key, created_at=_T0 + timedelta(seconds=seconds), **fields)
    )


def _claim(store: Store, limits: ClaimLimits, *, at: float = 0, executor: str = "e") -> list[str]:
    return _ids(
        store.claim(
            "q",
            executor_id=executor,
            app_version="v1",
            limits=limits,
            now=_NOW + timedelta(seconds=at),
        )
    )


def check_partition_keys_stored_and_listed(store: Store) -> None:
    _enqueue(store, "pk-1", "tenant-7", 1)
    _enqueue(store, "pk-2", None, 2)
    store.create_workflows([_queued("pk-3", partition_key="tenant-7"), _queued("pk-4")])
    for wid, key in (("pk-1", "tenant-7"), ("pk-2", None), ("pk-3", "tenant-7"), ("pk-4", None)):
        row = store.get_workflow(wid)
        _equal(f"partition_key of {wid} read back", key, None if row is None else row.partition_key)
    where = WorkflowFilter(partition_key="tenant-7")
    _equal("list_workflows(partition_key=...)", ["pk-1", "pk-3"], _ids(store.list_workflows(where)))
    _equal("count_workflows(partition_key=...)", 2, store.count_workflows(where))
    claimed = store.claim("q", executor_id="e", app_version="v1", limits=ClaimLimits(1), now=_NOW)
    _equal(
        "a claimed run keeps its partition key", ["tenant-7"], [r.partition_key for r in claimed]
    )


def check_partitioned_claims_serve_keys_in_turn(store: Store) -> None:
    # "big" holds ten runs, all older than the others' one each.
    for i in range(10):
        _enqueue(store, f"big-{i}", "big", i)
    _enqueue(store, "big-urgent", "big", 50, priority=-1)
    _enqueue(store, "small-0", "small", 20)
    _enqueue(store, "none-0", None, 30)
    _enqueue(store, "other-version", "new", 0, app_version="v2")
    fair = ClaimLimits(1, partitioned=True)
    _equal(
        "first claim: priority orders within a key, and the keys never served tie on age",
        ["big-urgent"],
        _claim(store, fair, at=0),
    )
    _equal("second claim: a key not served yet goes first", ["small-0"], _claim(store, fair, at=1))
    _equal(
        "third claim: runs with no key are a key of their own",
        ["none-0"],
        _claim(store, fair, at=2),
    )
    _equal("fourth claim: back to the key with the backlog", ["big-0"], _claim(store, fair, at=3))
    _enqueue(store, "late-0", "late", 60)
    _enqueue(store, "small-1", "small", 61)
    _equal(
        "a claim of three: each key's next run, the key served longest ago first",
        ["big-1", "late-0", "small-1"],
        sorted(_claim(store, ClaimLimits(3, partitioned=True), at=4)),
    )
    _equal(
        "a claim of four with one key left: its next four runs",
        ["big-2", "big-3", "big-4", "big-5"],
        _claim(store, ClaimLimits(4, partitioned=True), at=5),
    )


def check_partitioned_claims_limit_each_key(store: Store) -> None:
    for i in range(5):
        _enqueue(store, f"a-{i}", "a", i)
        _enqueue(store, f"b-{i}", "b", 10 + i)
    per_key = ClaimLimits(10, partition_concurrency=2, partitioned=True)
    _equal(
        "partition_concurrency=2: two runs of each key",
        ["a-0", "a-1", "b-0", "b-1"],
        sorted(_claim(store, per_key)),
    )
    _equal("every key at its limit", [], _claim(store, per_key, at=1))
    store.finish_workflow("a-0", Status.SUCCESS, Value(None))
    _equal("a finished run frees its key's slot", ["a-2"], _claim(store, per_key, at=2))
    _equal(
        "the queue's concurrency holds beside the keys'",
        [],
        _claim(
            store, ClaimLimits(10, concurrency=4, partition_concurrency=3, partitioned=True), at=3
        ),
    )
    # Started in the last 60 s: a-0..a-2 (3), b-0..b-1 (2).
    rated = ClaimLimits(10, partition_rate_limit=(3, 60.0), partitioned=True)
    _equal(
        "partition_rate_limit=(3, 60 s): one more start for b only",
        ["b-2"],
        _claim(store, rated, at=4),
    )
    _equal(
        "starts older than the period no longer count",
        ["a-3", "a-4", "b-3", "b-4"],
        sorted(_claim(store, rated, at=70)),
    )


def check_partitioned_claims_weigh_keys(store: Store) -> None:
    # "gold" holds eight runs, "free" six, "idle" one; gold weighs 3 (rounds of three
    # runs), and a weight for a key with no runs changes nothing.
    for i in range(8):
        _enqueue(store, f"gold-{i}", "gold", i)
    for i in range(6):
        _enqueue(store, f"free-{i}", "free", 10 + i)
    _enqueue(store, "idle-0", "idle", 20)
    weights = (("absent", 9), ("gold", 3), ("idle", 1))
    _equal(
        "first round: gold's three runs, and one each of the others",
        ["free-0", "gold-0", "gold-1", "gold-2", "idle-0"],
        sorted(_claim(store, ClaimLimits(5, partitioned=True, partition_weights=weights))),
    )
    _equal(
        "next round: three of gold's runs to one of free's",
        ["free-1", "gold-3", "gold-4", "gold-5"],
        sorted(_claim(store, ClaimLimits(4, partitioned=True, partition_weights=weights), at=1)),
    )
    capped = ClaimLimits(10, partitioned=True, partition_concurrency=7, partition_weights=weights)
    _equal(
        "a weight never takes a key past its limit (gold runs six of seven)",
        ["free-2", "free-3", "free-4", "free-5", "gold-6"],
        sorted(_claim(store, capped, at=2)),
    )


def check_partitioned_concurrent_claims(store: Store) -> None:
    for key in ("k1", "k2", "k3"):
        for i in range(8):
            _enqueue(store, f"{key}-{i}", key, i)
    limits = ClaimLimits(2, partition_concurrency=2, partitioned=True)
    taken = _claimed_at_once(5, lambda executor: _claim(store, limits, executor=executor))
    _equal(
        "runs of each key claimed by 5 engines at once under partition_concurrency=2",
        {"k1": 2, "k2": 2, "k3": 2},
        dict(Counter(wid.split("-")[0] for wid in taken)),
    )
