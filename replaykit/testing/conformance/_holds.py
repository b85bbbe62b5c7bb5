"""`check_store`'s checks of executors' claims on their runs: `hold_executor` (one
engine per executor id and version at a time), heartbeats, and `take_over` of the runs
of an executor whose lease ran out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replaykit.errors import RecordConflict
from replaykit.log import Status
from replaykit.stores.base import Store
from replaykit.testing.conformance._support import (
    _T0,
    _equal,
    _expect,
    _present,
    _raises,
    _run,
    _step,
)

__all__ = ["check_beat_takes_over", "check_executor_holds", "check_heartbeat_and_take_over"]


def check_executor_holds(store: Store) -> None:
    hold = _present("hold_executor of a free id", store.hold_executor("e-hold", "v1"))
    _equal("keep() of a hold just taken", True, hold.keep())
    _equal("hold_executor of a held id", None, store.hold_executor("e-hold", "v1"))
    other_version = _present(
        "hold_executor of the id for another version", store.hold_executor("e-hold", "v2")
    )
    _expect(
        bool(store.executor_holder("e-hold", "v1")),
        "executor_holder of a held id",
        "a description",
        store.executor_holder("e-hold", "v1"),
    )
    now = datetime.now(UTC)
    store.create_workflow(_run("held-run", executor_id="e-hold", app_version="v1"))
    store.heartbeat("e-hold", "v1", now - timedelta(hours=1))
    _equal(
        "take_over of a held id with an old heartbeat",
        [],
        store.take_over(executor_id="taker", app_version="v1", lease_seconds=1, now=now),
    )
    hold.release()
    hold.release()
    _equal("keep() after release", False, hold.keep())
    _equal("executor_holder after release", "", store.executor_holder("e-hold", "v1"))
    _equal(
        "take_over once the id is free",
        ["held-run"],
        store.take_over(executor_id="taker", app_version="v1", lease_seconds=1, now=now),
    )
    again = _present("hold_executor after release", store.hold_executor("e-hold", "v1"))
    again.release()
    other_version.release()


def check_heartbeat_and_take_over(store: Store) -> None:
    now = _T0 + timedelta(hours=1)
    store.heartbeat("dead", "v1", now - timedelta(seconds=100))
    store.heartbeat("alive", "v1", now - timedelta(seconds=10))
    store.heartbeat("me", "v1", now)
    for wid, status, executor, version in (
        ("to-1", Status.PENDING, "dead", "v1"),
        ("to-2", Status.PENDING, "dead", "v1"),
        ("to-v2", Status.PENDING, "dead", "v2"),
        ("to-alive", Status.PENDING, "alive", "v1"),
        ("to-queued", Status.ENQUEUED, "dead", "v1"),
        ("to-done", Status.SUCCESS, "dead", "v1"),
        ("to-silent", Status.PENDING, "never-beat", "v1"),
    ):
        store.create_workflow(_run(wid, status=status, executor_id=executor, app_version=version))
    taken = store.take_over(executor_id="me", app_version="v1", lease_seconds=30, now=now)
    _equal("take_over of runs whose executor's lease ran out", ["to-1", "to-2"], sorted(taken))
    owners = {}
    for wid in ("to-1", "to-2", "to-v2", "to-alive", "to-queued", "to-done", "to-silent"):
        row = store.get_workflow(wid)
        owners[wid] = row.executor_id if row else None
    _equal(
        "owners after take_over",
        {
            "to-1": "me",
            "to-2": "me",
            "to-v2": "dead",
            "to-alive": "alive",
            "to-queued": "dead",
            "to-done": "dead",
            "to-silent": "never-beat",
        },
        owners,
    )
    _raises(
        "record() by the executor that lost its runs",
        RecordConflict,
        lambda: store.record("to-1", _step(0), executor_id="dead"),
    )
    _equal("record() by the new owner", _step(0), store.record("to-1", _step(0), executor_id="me"))
    _equal(
        "finish_workflow by the executor that lost the run",
        False,
        store.finish_workflow("to-2", Status.SUCCESS, None, executor_id="dead"),
    )
    _equal(
        "finish_workflow by the new owner",
        True,
        store.finish_workflow("to-2", Status.SUCCESS, None, executor_id="me"),
    )
    _equal(
        "a second take_over",
        [],
        store.take_over(executor_id="me", app_version="v1", lease_seconds=30, now=now),
    )
    store.heartbeat("alive", "v1", now - timedelta(seconds=60))
    _equal(
        "take_over after a heartbeat went stale",
        ["to-alive"],
        store.take_over(executor_id="me", app_version="v1", lease_seconds=30, now=now),
    )
    store.heartbeat("dead", "v2", now)
    _equal(
        "take_over of a revived executor's runs",
        [],
        store.take_over(executor_id="me", app_version="v2", lease_seconds=30, now=now),
    )


def check_beat_takes_over(store: Store) -> None:
    """`heartbeat(..., lease_seconds=)` beats and takes over, as the two calls would."""
    now = _T0 + timedelta(hours=2)
    store.heartbeat("beat-gone", "v1", now - timedelta(seconds=100))
    store.create_workflow(_run("beat-1", executor_id="beat-gone", app_version="v1"))
    _equal(
        "heartbeat without lease_seconds",
        [],
        store.heartbeat("beat-bystander", "v1", now),
    )
    _equal(
        "heartbeat with lease_seconds, of runs whose executor's lease ran out",
        ["beat-1"],
        store.heartbeat("beat-me", "v1", now, workflows=["wf"], queues=[], lease_seconds=30),
    )
    row = store.get_workflow("beat-1")
    _equal("owner after a beat took over", "beat-me", row.executor_id if row else None)
    # The beat's own heartbeat was written: once it is stale, another engine takes
    # the run over (an executor never heard from keeps its runs).
    _equal(
        "take_over after the beat's own heartbeat went stale",
        ["beat-1"],
        store.take_over(
            executor_id="beat-later",
            app_version="v1",
            lease_seconds=30,
            now=now + timedelta(seconds=100),
        ),
    )
