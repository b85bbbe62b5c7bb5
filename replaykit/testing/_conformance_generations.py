"""Conformance checks on runs that continued as new, found again by a start.

Kept out of `conformance.py` (already long); it imports these and runs them with
the others. They use its helpers, which are defined before it imports this module.
"""

from __future__ import annotations

from datetime import timedelta

from replaykit.stores.base import Store
from replaykit.testing._checking import _T0, _equal, _expect, _run

__all__ = ["check_create_finds_a_continued_run_by_its_first_inputs"]

_FIRST = {"args": [1, "first"], "kwargs": {"k": [1]}}
_SECOND = {"args": [2, "second"], "kwargs": {}}
_THIRD = {"args": [3, "third"], "kwargs": {}}


def check_create_finds_a_continued_run_by_its_first_inputs(store: Store) -> None:
    """A start re-issued under the id of a run that continued as new (after a lost
    acknowledgement) finds the run, and learns the inputs it was created with: its row's
    `inputs` are the current generation's, its `first_inputs` generation 0's."""
    store.create_workflow(_run("fi-1", inputs=_FIRST, executor_id="exec-a", created_at=_T0))
    found, _ = store.create_workflow(_run("fi-1", inputs=_FIRST, executor_id="exec-a"))
    _equal("a run at generation 0 found by a create has no first_inputs", None, found.first_inputs)
    store.continue_workflow(
        "fi-1", _SECOND, generation=0, executor_id="exec-a", now=_T0 + timedelta(hours=1)
    )
    store.continue_workflow(
        "fi-1", _THIRD, generation=1, executor_id="exec-a", now=_T0 + timedelta(hours=2)
    )
    found, created = store.create_workflow(_run("fi-1", inputs=_FIRST, executor_id="exec-a"))
    _expect(not created, "create under the id of a continued run creates nothing", False, created)
    _equal("the run found keeps its current generation's inputs", _THIRD, found.inputs)
    _equal("the run found has generation 2", 2, found.generation)
    _equal("the run found gives generation 0's inputs as first_inputs", _FIRST, found.first_inputs)
    answers = store.create_workflows(
        [_run("fi-1", inputs=_SECOND), _run("fi-2", inputs=_FIRST, created_at=_T0)]
    )
    _equal(
        "create_workflows: the continued run found gives generation 0's inputs",
        [(_FIRST, False), (None, True)],
        [(row.first_inputs, created) for row, created in answers],
    )
    # Deleting the earlier generations (gc takes them by age) keeps what a start needs.
    for generation in (0, 1):
        store.delete_workflow(f"fi-1#{generation}")
    found, _ = store.create_workflow(_run("fi-1", inputs=_FIRST))
    _equal(
        "first_inputs outlive the archived generation 0 being collected", _FIRST, found.first_inputs
    )
