"""replaykit/runtime/finished.py: the rows of runs finished here lately, for handle.result()."""

from __future__ import annotations

from replaykit.log import Status, Value
from replaykit.runtime.finished import FinishedRuns
from replaykit.stores.base import WorkflowRow


def _row(workflow_id: str) -> WorkflowRow:
    return WorkflowRow(workflow_id, "wf", Status.SUCCESS, result=Value(workflow_id))


def test_a_finish_keeps_its_row_and_the_oldest_go_first() -> None:
    runs = FinishedRuns(size=2)
    for workflow_id in ("a", "b", "c"):
        runs.keep(_row(workflow_id), runs.mark())
    assert runs.get("a") is None
    assert runs.get("b") == _row("b") and runs.peek("c") == _row("c")


def test_a_forget_during_a_finish_keeps_nothing_of_it() -> None:
    runs = FinishedRuns()
    mark = runs.mark()
    runs.forget("another")  # a delete heard while the finish's commit was in flight
    runs.keep(_row("a"), mark)
    assert runs.get("a") is None
    runs.keep(_row("a"), runs.mark())
    assert runs.get("a") == _row("a")


def test_forget_drops_one_row_or_all() -> None:
    runs = FinishedRuns()
    for workflow_id in ("a", "b", "c"):
        runs.keep(_row(workflow_id), runs.mark())
    runs.forget("a")
    assert runs.get("a") is None and runs.get("b") is not None
    runs.forget()
    assert runs.get("b") is None and runs.get("c") is None
