"""stores/_partitions.py: the rule a partitioned queue's claim follows, asked alone
(the stores' agreement with it: the conformance suite, testing/conformance/_partitions.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replaykit.log import Status
from replaykit.stores._partitions import (
    KeyState,
    Waiting,
    fair_pick,
    key_room,
    partition_limits,
    pick_rows,
    stored_key,
)
from replaykit.stores.base import ClaimLimits, WorkflowRow

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def waiting(wid: str, key: str, seconds: float, priority: int = 0) -> Waiting:
    return Waiting(wid, key, priority, T0 + timedelta(seconds=seconds))


def test_a_key_s_room_is_the_least_of_the_claim_s_and_its_limits() -> None:
    both = ClaimLimits(10, partitioned=True, partition_concurrency=3, partition_rate_limit=(5, 60))
    assert key_room(both, KeyState(running=1, started=0), 10) == 2
    assert key_room(both, KeyState(running=0, started=4), 10) == 1
    assert key_room(both, KeyState(running=3, started=0), 10) == 0
    assert key_room(both, KeyState(running=0, started=0), 1) == 1
    assert key_room(ClaimLimits(10, partitioned=True), KeyState(running=50), 4) == 4
    assert key_room(both, KeyState(running=9), 10) == 0  # never below zero


def test_keys_take_turns_rank_by_rank_the_least_recently_served_first() -> None:
    items = [waiting(f"big-{i}", "big", i) for i in range(5)]
    items += [waiting("small-0", "small", 10), waiting("new-0", "new", 20)]
    states = {"big": KeyState(served=T0), "small": KeyState(served=T0 - timedelta(hours=1))}
    fair = ClaimLimits(4, partitioned=True)
    # "new" was never served, "small" an hour before "big": then big's second run.
    assert fair_pick(items, states, fair, 4) == ["new-0", "small-0", "big-0", "big-1"]
    assert fair_pick(items, states, fair, 1) == ["new-0"]


def test_priority_orders_within_a_key_not_across_keys() -> None:
    items = [waiting("a-late", "a", 1), waiting("a-urgent", "a", 9, priority=-5)]
    items.append(waiting("b-0", "b", 0, priority=5))
    assert fair_pick(items, {}, ClaimLimits(2, partitioned=True), 2) == ["a-urgent", "b-0"]


def test_pick_rows_counts_each_key_from_the_rows() -> None:
    now = T0 + timedelta(hours=1)

    def row(wid: str, key: str | None, status: Status, **fields: object) -> WorkflowRow:
        fields = {"queue": "q", "app_version": "v1", **fields}
        return WorkflowRow(wid, "wf", status, partition_key=key, **fields)  # type: ignore[arg-type]

    rows = [
        row("a-run", "a", Status.PENDING, started_at=now - timedelta(seconds=5)),
        row("a-1", "a", Status.ENQUEUED, created_at=T0),
        row("b-1", "b", Status.ENQUEUED, created_at=T0 + timedelta(seconds=1)),
        row("none-1", None, Status.ENQUEUED, created_at=T0 + timedelta(seconds=2)),
        row("b-later", "b", Status.ENQUEUED, created_at=T0, wake_at=now + timedelta(hours=1)),
        row("b-v2", "b", Status.ENQUEUED, created_at=T0, app_version="v2"),
        row("other-q", "b", Status.ENQUEUED, created_at=T0, queue="other"),
    ]
    one_each = ClaimLimits(10, partitioned=True, partition_concurrency=1)
    taken = pick_rows(rows, "q", "v1", one_each, 10, now)
    assert [r.workflow_id for r in taken] == ["b-1", "none-1"]  # "a" runs one already
    assert stored_key(None) == "" and stored_key("a") == "a"


def test_partition_limits_as_a_claim_binds_them() -> None:
    now = T0
    assert partition_limits(ClaimLimits(1, partitioned=True), now) == (None, None, None)
    rated = ClaimLimits(1, partitioned=True, partition_concurrency=2, partition_rate_limit=(3, 30))
    assert partition_limits(rated, now) == (2, 3, now - timedelta(seconds=30))
