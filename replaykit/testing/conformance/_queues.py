"""`check_store`'s checks of queues: `claim` in order and readiness, deadlines and
timeouts started by a claim, `ClaimLimits`, concurrent claimers, and `release`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from replaykit.log import Record, Status, Value
from replaykit.stores.base import ClaimLimits, Store, WorkflowRow
from replaykit.testing.conformance._support import (
    _T0,
    _aware_utc,
    _claimed_at_once,
    _claimed_new,
    _equal,
    _expect,
    _ids,
    _Notes,
    _run,
)

__all__ = [
    "check_claim_limits",
    "check_claim_order_and_readiness",
    "check_concurrent_claims",
    "check_deadlines_round_trip_and_claim_starts_timeouts",
    "check_release",
]


def _enqueue(store: Store, wid: str, **fields: Any) -> None:
    fields.setdefault("queue", "q")
    fields.setdefault("app_version", "v1")
    fields.setdefault("executor_id", "")
    store.create_workflow(_run(wid, status=Status.ENQUEUED, **fields))


def _claim(store: Store, executor: str, limits: ClaimLimits, now: datetime) -> list[WorkflowRow]:
    """A claim of queue "q" by `executor`, an engine of version v1."""
    return store.claim("q", executor_id=executor, app_version="v1", limits=limits, now=now)


def check_claim_order_and_readiness(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    _enqueue(store, "cl-late", priority=5, created_at=_T0)
    _enqueue(store, "cl-b", priority=0, created_at=_T0 + timedelta(seconds=2))
    _enqueue(store, "cl-a", priority=0, created_at=_T0 + timedelta(seconds=2))
    _enqueue(store, "cl-first", priority=0, created_at=_T0 + timedelta(seconds=1))
    _enqueue(store, "cl-urgent", priority=-3, created_at=_T0 + timedelta(seconds=9))
    _enqueue(store, "cl-due", priority=9, wake_at=now)
    _enqueue(store, "cl-delayed", priority=-9, wake_at=now + timedelta(microseconds=1))
    _enqueue(store, "cl-v2", app_version="v2")
    _enqueue(store, "cl-other", queue="other")
    store.create_workflow(_run("cl-pending", queue="q", app_version="v1"))
    claimed = _claim(store, "e1", ClaimLimits(100), now)
    _equal(
        "claim order: priority, then created_at, then id; delayed, other versions and "
        "other queues left",
        ["cl-urgent", "cl-first", "cl-a", "cl-b", "cl-late", "cl-due"],
        _ids(claimed),
    )
    for row in claimed:
        _claimed_new(store, row, "claimed for the first time")
        _equal(f"executor of claimed {row.workflow_id}", "e1", row.executor_id)
        _equal(f"started_at of claimed {row.workflow_id}", now, row.started_at)
        _equal(f"wake_at of claimed {row.workflow_id}", None, row.wake_at)
    _equal(
        "a second claim",
        [],
        _claim(store, "e2", ClaimLimits(100), now),
    )
    later = _claim(store, "e2", ClaimLimits(100), now + timedelta(seconds=1))
    _equal("a claim after the delay", ["cl-delayed"], _ids(later))
    delayed = store.get_workflow("cl-v2")
    _equal("run of another version", Status.ENQUEUED, delayed.status if delayed else None)


def check_deadlines_round_trip_and_claim_starts_timeouts(store: Store) -> None:
    """A run's deadline and timeout are kept as given (alone and in a batch); a claim
    starts a queued run's timeout then, keeping an earlier deadline of its own; and
    `set_deadline` replaces or clears both, whatever the run's status."""
    deadline = _T0 + timedelta(minutes=5, microseconds=7)
    stored, _ = store.create_workflow(_run("dl-start", deadline=deadline, timeout=90.5))
    for what, row in (("as created", stored), ("as read", store.get_workflow("dl-start"))):
        _equal(f"deadline {what}", deadline, row.deadline if row else None)
        _equal(f"timeout {what}", 90.5, row.timeout if row else None)
    if row is not None:
        _aware_utc("a stored deadline", row.deadline)
    _equal("a run without one", (None, None), _deadline_of(store.create_workflow(_run("dl-no"))[0]))
    batch = store.create_workflows(
        [_run("dl-many-a", deadline=deadline), _run("dl-many-b", timeout=3.25)]
    )
    _equal(
        "deadlines of a batch",
        [(deadline, None), (None, 3.25)],
        [_deadline_of(row) for row, _ in batch],
    )
    _equal(
        "deadlines of a batch, as read",
        [(deadline, None), (None, 3.25)],
        [_deadline_of(store.get_workflow(wid)) for wid in ("dl-many-a", "dl-many-b")],
    )
    now = _T0 + timedelta(hours=1)
    # Queued runs (their timeout and deadline as created), oldest first.
    queued: list[tuple[str, float | None, datetime | None]] = [
        ("dl-q-timeout", 30.0, None),
        ("dl-q-earlier", 3600.0, now + timedelta(seconds=10)),
        ("dl-q-later", 5.0, now + timedelta(days=1)),
        ("dl-q-absolute", None, now - timedelta(seconds=1)),
        ("dl-q-none", None, None),
    ]
    for age, (wid, timeout, deadline_at) in enumerate(queued):
        _enqueue(
            store,
            wid,
            timeout=timeout,
            deadline=deadline_at,
            created_at=_T0 + timedelta(seconds=age),
        )
    claimed = _claim(store, "e1", ClaimLimits(10), now)
    expected = {
        "dl-q-timeout": (now + timedelta(seconds=30), 30.0),
        "dl-q-earlier": (now + timedelta(seconds=10), 3600.0),
        "dl-q-later": (now + timedelta(seconds=5), 5.0),
        "dl-q-absolute": (now - timedelta(seconds=1), None),
        "dl-q-none": (None, None),
    }
    _equal("runs claimed", sorted(expected), sorted(_ids(claimed)))
    for row in claimed:
        _equal(
            f"deadline of claimed {row.workflow_id} (timeout from the claim, an earlier "
            "deadline kept)",
            expected[row.workflow_id],
            _deadline_of(row),
        )
        _equal(
            f"deadline of claimed {row.workflow_id}, as read",
            expected[row.workflow_id],
            _deadline_of(store.get_workflow(row.workflow_id)),
        )
    store.release("e1")
    again = _claim(store, "e2", ClaimLimits(10), now + timedelta(minutes=1))
    _equal(
        "a run released and claimed again keeps the deadline its first claim set",
        now + timedelta(seconds=30),
        {row.workflow_id: row.deadline for row in again}.get("dl-q-timeout"),
    )
    store.set_status("dl-start", Status.CANCELLED, only_from=(Status.PENDING,))
    later = now + timedelta(days=2)
    _equal("set_deadline on a cancelled run", True, store.set_deadline("dl-start", later, 60.0))
    _equal("deadline set", (later, 60.0), _deadline_of(store.get_workflow("dl-start")))
    _equal("set_deadline to clear it", True, store.set_deadline("dl-start", None, None))
    _equal("deadline cleared", (None, None), _deadline_of(store.get_workflow("dl-start")))
    _equal("set_deadline of a missing run", False, store.set_deadline("dl-nobody", later, None))


def _deadline_of(row: WorkflowRow | None) -> tuple[datetime | None, float | None] | None:
    return None if row is None else (row.deadline, row.timeout)


def check_claim_limits(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    for i in range(6):
        _enqueue(store, f"lim-{i}", created_at=_T0 + timedelta(seconds=i))
    store.create_workflow(
        _run(
            "lim-running",
            queue="q",
            executor_id="elsewhere",
            app_version="other",
            started_at=now - timedelta(seconds=90),
        )
    )

    def claim(limits: ClaimLimits) -> list[str]:
        return _ids(_claim(store, "e", limits, now))

    _equal("claim with limit 0", [], claim(ClaimLimits(0)))
    _equal("claim with limit 2", ["lim-0", "lim-1"], claim(ClaimLimits(2)))
    # Three PENDING now (two claimed, one running elsewhere): concurrency 4 leaves one.
    _equal("claim under concurrency 4", ["lim-2"], claim(ClaimLimits(10, concurrency=4)))
    _equal("claim at the concurrency limit", [], claim(ClaimLimits(10, concurrency=4)))
    # Started within the last 60 s: lim-0..2 (at `now`); lim-running started 90 s ago.
    _equal(
        "claim under a rate limit of 4 per minute",
        ["lim-3"],
        claim(ClaimLimits(10, rate_limit=(4, 60.0))),
    )
    _equal("claim at the rate limit", [], claim(ClaimLimits(10, rate_limit=(4, 60.0))))
    _equal(
        "claim under a rate limit counting 100 s back",
        [],
        claim(ClaimLimits(10, rate_limit=(5, 100.0))),
    )
    _equal(
        "claim with every limit",
        ["lim-4"],
        claim(ClaimLimits(1, concurrency=10, rate_limit=(10, 60.0))),
    )


def check_concurrent_claims(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    for i in range(30):
        _enqueue(store, f"cc-{i:02d}", created_at=_T0 + timedelta(seconds=i))

    def claim(executor: str) -> list[str]:
        limits = ClaimLimits(3, concurrency=7)
        return _ids(_claim(store, executor, limits, now))

    taken = _claimed_at_once(6, claim)
    _equal("runs claimed under concurrency 7 by 6 engines at once", 7, len(taken))
    _equal("which runs were claimed", [f"cc-{i:02d}" for i in range(7)], sorted(taken))


def check_release(store: Store) -> None:
    for wid, executor, queue in (
        ("rl-1", "e", "qa"),
        ("rl-2", "e", "qb"),
        ("rl-3", "e", "qa"),
        ("rl-plain", "e", None),
        ("rl-other", "f", "qa"),
    ):
        store.create_workflow(
            _run(
                wid, executor_id=executor, queue=queue, created_at=_T0 + timedelta(seconds=len(wid))
            )
        )
    store.create_workflow(_run("rl-done", executor_id="e", queue="qa", status=Status.SUCCESS))
    store.record("rl-1", Record(0, "step", "began", Value(1)))
    with _Notes(store) as notes:
        released = store.release("e")
        _equal("runs released", ["rl-1", "rl-2", "rl-3"], sorted(released))
        statuses = {}
        for wid in ("rl-1", "rl-2", "rl-3", "rl-plain", "rl-other", "rl-done"):
            row = store.get_workflow(wid)
            statuses[wid] = (row.status, row.executor_id) if row else None
        _equal(
            "runs after release",
            {
                "rl-1": (Status.ENQUEUED, ""),
                "rl-2": (Status.ENQUEUED, ""),
                "rl-3": (Status.ENQUEUED, ""),
                "rl-plain": (Status.PENDING, "e"),
                "rl-other": (Status.PENDING, "f"),
                "rl-done": (Status.SUCCESS, "e"),
            },
            statuses,
        )
        notes.wait_for("notifications for released queues", ("enqueued", "qa"), ("enqueued", "qb"))
        _equal("a second release", [], store.release("e"))
        again = store.claim(
            "qa", executor_id="g", app_version="", limits=ClaimLimits(9), now=datetime.now(UTC)
        )
        _equal("released runs can be claimed again", ["rl-1", "rl-3"], sorted(_ids(again)))
        # Saying False for a run that has records would make it start over
        # from position 0: never allowed. None ("not known") is.
        has_log = {row.workflow_id: row.has_log for row in again}
        _expect(
            has_log.get("rl-1") in (True, None) and has_log.get("rl-3") in (False, None),
            "has_log of released runs claimed again (rl-1 had begun)",
            {"rl-1": "True (or None)", "rl-3": "False (or None)"},
            has_log,
        )
