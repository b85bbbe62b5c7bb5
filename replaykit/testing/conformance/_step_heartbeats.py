"""`check_store`'s checks of step heartbeats: each step's latest beat, kept one row a
step (`record_step_heartbeat`), read back for the run's current generation
(`get_step_heartbeats`), refused as `record()` refuses, gone with the run."""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

from replaykit.errors import RecordConflict, RunNotPending, WorkflowNotFound
from replaykit.log import Status
from replaykit.stores.base import StepHeartbeat, Store
from replaykit.testing.conformance._support import _T0, _equal, _raises, _run

__all__ = [
    "check_step_heartbeats_are_refused_as_records_are",
    "check_step_heartbeats_keep_the_latest_per_step",
    "check_step_heartbeats_of_a_generation",
]


def _beat(
    position: int, attempt: int = 1, details: Any = None, *, at_s: int = 0, **fields: Any
) -> StepHeartbeat:
    fields.setdefault("name", f"s{position}")
    return StepHeartbeat(
        position=position,
        attempt=attempt,
        at=_T0 + timedelta(seconds=at_s),
        details=details,
        **fields,
    )


def check_step_heartbeats_keep_the_latest_per_step(store: Store) -> None:
    store.create_workflow(_run("hb-1", executor_id="e1"))
    _equal("a run whose steps never beat", [], store.get_step_heartbeats("hb-1"))
    odd = {"done": 3, "of": 10, "note": "é'\"\\\x00", "big": 10**30, "list": [1.5, None, True]}
    _equal(
        "a first beat is written",
        True,
        store.record_step_heartbeat("hb-1", _beat(0, details={"done": 1}), executor_id="e1"),
    )
    _equal(
        "a later beat of the same attempt",
        True,
        store.record_step_heartbeat("hb-1", _beat(0, details=odd, at_s=2), executor_id="e1"),
    )
    # Two children of a composite at position 2 (the tenth sorts after the second), and
    # a beat with no details.
    store.record_step_heartbeat("hb-1", _beat(2, details="c10", child_path=(0, 10)))
    store.record_step_heartbeat("hb-1", _beat(2, details="c2", child_path=(0, 2)))
    store.record_step_heartbeat("hb-1", _beat(1, 3, at_s=5))
    _equal(
        "each step's latest beat, by position then child path",
        [
            _beat(0, details=odd, at_s=2),
            _beat(1, 3, at_s=5),
            _beat(2, details="c2", child_path=(0, 2)),
            _beat(2, details="c10", child_path=(0, 10)),
        ],
        store.get_step_heartbeats("hb-1"),
    )
    # The next attempt writes over it; a late beat of the attempt before it does not
    # (an abandoned attempt's thread beating once more), even with a later time.
    store.record_step_heartbeat("hb-1", _beat(0, 2, {"done": 4}, at_s=10))
    _equal(
        "a beat of an earlier attempt than the stored one",
        False,
        store.record_step_heartbeat("hb-1", _beat(0, 1, {"done": 9}, at_s=11)),
    )
    _equal(
        "the same beat again (a retried write) writes the same row",
        True,
        store.record_step_heartbeat("hb-1", _beat(0, 2, {"done": 4}, at_s=10)),
    )
    _equal(
        "the step's beat after a stale one",
        _beat(0, 2, {"done": 4}, at_s=10),
        store.get_step_heartbeats("hb-1")[0],
    )
    _raises(
        "get_step_heartbeats of an unknown run",
        WorkflowNotFound,
        lambda: store.get_step_heartbeats("hb-nobody"),
    )
    _equal("delete_workflow", True, store.delete_workflow("hb-1"))
    store.create_workflow(_run("hb-1"))
    _equal("a run created again under a deleted id", [], store.get_step_heartbeats("hb-1"))


def check_step_heartbeats_are_refused_as_records_are(store: Store) -> None:
    store.create_workflow(_run("hb-2", executor_id="e1"))
    _raises(
        "a beat into an unknown run",
        WorkflowNotFound,
        lambda: store.record_step_heartbeat("hb-nobody", _beat(0)),
    )
    _raises(
        "a beat by another executor than the owner",
        RecordConflict,
        lambda: store.record_step_heartbeat("hb-2", _beat(0), executor_id="e2"),
    )
    store.record_step_heartbeat("hb-2", _beat(0, details="before"), executor_id="e1")
    store.set_status("hb-2", Status.CANCELLED)
    refused = _raises(
        "a beat into a cancelled run",
        RunNotPending,
        lambda: store.record_step_heartbeat("hb-2", _beat(0, details="after", at_s=1)),
    )
    _equal("the refusal names the status found", "CANCELLED", getattr(refused, "status", None))
    _equal(
        "a refused beat changes nothing",
        [_beat(0, details="before")],
        store.get_step_heartbeats("hb-2"),
    )
    bad_beats = {
        "a negative position": _beat(-1, name="s"),
        "attempt 0": _beat(0, 0),
        "a negative child index": _beat(0, child_path=(-1,)),
        "a naive time": StepHeartbeat(0, "s0", 1, _T0.replace(tzinfo=None)),
        "a NUL in the step's name": _beat(0, name="a\x00b"),
    }
    for what, bad in bad_beats.items():
        _raises(what, ValueError, functools.partial(store.record_step_heartbeat, "hb-2", bad))


def check_step_heartbeats_of_a_generation(store: Store) -> None:
    store.create_workflow(_run("hb-3", executor_id="e1"))
    store.record_step_heartbeat("hb-3", _beat(0, details="gen 0"))
    store.continue_workflow("hb-3", None, generation=0, executor_id="e1", now=_T0)
    _equal(
        "the steps of a new generation have not beaten",
        [],
        store.get_step_heartbeats("hb-3"),
    )
    _equal(
        "a beat of the generation the run left is not written",
        False,
        store.record_step_heartbeat("hb-3", _beat(0, details="late", at_s=1)),
    )
    store.record_step_heartbeat("hb-3", _beat(0, details="gen 1", generation=1))
    _equal(
        "the current generation's beat, over the earlier one's",
        [_beat(0, details="gen 1", generation=1)],
        store.get_step_heartbeats("hb-3"),
    )
