"""`check_store`'s checks of generations: a run that continues as new
(`continue_workflow`), retried after a lost answer or refused, its earlier generations
deleted with it, and a start that finds a continued run again by its first inputs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from replaykit.errors import RecordConflict, WorkflowNotFound
from replaykit.log import Status
from replaykit.stores.base import (
    MAX_NAME_BYTES,
    EventWrite,
    Store,
    WorkflowFilter,
    WorkflowRow,
    archive_id,
)
from replaykit.testing.conformance._support import (
    _T0,
    _equal,
    _expect,
    _ids,
    _log_of,
    _present,
    _raises,
    _run,
    _step,
    _wait_for,
)

__all__ = [
    "check_continue_workflow",
    "check_continue_workflow_refusals",
    "check_continue_workflow_retried_after_a_lost_answer",
    "check_create_finds_a_continued_run_by_its_first_inputs",
    "check_delete_takes_the_generations",
    "check_rewind_keeps_the_attempt",
]

_CW_INPUTS = {"args": [1, "a"], "kwargs": {"k": [2]}}


_CW_NEXT = {"args": [7, "b"], "kwargs": {}}


def _continued_run(store: Store, workflow_id: str) -> WorkflowRow:
    """A PENDING run with two records, a message waiting and an event set."""
    created, _ = store.create_workflow(
        _run(
            workflow_id,
            inputs=_CW_INPUTS,
            executor_id="exec-a",
            app_version="v1",
            parent_id="cw-parent",
            trace_context="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            created_at=_T0,
        )
    )
    store.record(workflow_id, _step(0, "first"), executor_id="exec-a")
    store.record(workflow_id, _step(1, "second"), event=EventWrite("k", "v"))
    store.send_message(workflow_id, "t", "kept", idempotency_key="m1")
    return created


def check_continue_workflow(store: Store) -> None:
    _continued_run(store, "cw-1")
    seen: list[tuple[str, str]] = []
    unsubscribe = store.subscribe(lambda kind, key: seen.append((kind, key)))
    later = _T0 + timedelta(hours=1)
    try:
        live = store.continue_workflow(
            "cw-1", _CW_NEXT, generation=0, executor_id="exec-a", now=later
        )
        _expect(
            _wait_for(lambda: ("finished", "cw-1#0") in seen),
            "continue_workflow notifies ('finished', archived id)",
            ("finished", "cw-1#0"),
            seen,
        )
    finally:
        unsubscribe()
    _expect(("finished", "cw-1") not in seen, "no 'finished' for the live id", [], seen)
    stored = _present("the live run after continue_workflow", store.get_workflow("cw-1"))
    _equal("continue_workflow returns the live row as stored", stored, live)
    _equal("the live run's status", Status.PENDING, stored.status)
    _equal("the live run's generation", 1, stored.generation)
    _equal("the live run's new inputs", _CW_NEXT, stored.inputs)
    _equal("the live run's started_at", later, stored.started_at)
    _equal("the live run keeps its created_at", _T0, stored.created_at)
    _equal("the live run keeps its owner", "exec-a", stored.executor_id)
    _equal("the live run keeps its parent", "cw-parent", stored.parent_id)
    _equal("the live run's wake_at", None, stored.wake_at)
    _equal("the live run's log is empty", [], _log_of(store, "cw-1"))
    archived = _present("the archived generation", store.get_workflow("cw-1#0"))
    _equal("the archived generation's status", Status.CONTINUED, archived.status)
    _equal("the archived generation's continued_as", "cw-1", archived.continued_as)
    _equal("the archived generation's number", 0, archived.generation)
    _equal("the archived generation's inputs", _CW_INPUTS, archived.inputs)
    _equal("the archived generation's name", "wf", archived.name)
    _equal("the archived generation's owner", "exec-a", archived.executor_id)
    _equal("the archived generation's version", "v1", archived.app_version)
    _equal("the archived generation's parent", "cw-parent", archived.parent_id)
    _equal("the archived generation's trace", stored.trace_context, archived.trace_context)
    _equal("the archived generation 0 began when the run was created", _T0, archived.created_at)
    _equal("the archived generation ended then", later, archived.updated_at)
    _equal(
        "the archived generation holds the generation's log",
        [_step(0, "first"), _step(1, "second", attempts=1)],
        _log_of(store, "cw-1#0"),
    )
    message = store.peek_message("cw-1", "t")
    _equal("a message not consumed carries over", "kept", message.payload if message else None)
    _equal("events stay with the id", (True, "v"), store.get_event("cw-1", "k"))
    _equal(
        "the next generation records from position 0",
        _step(0, "new"),
        store.record("cw-1", _step(0, "new"), executor_id="exec-a"),
    )
    even_later = later + timedelta(hours=1)
    store.continue_workflow("cw-1", _CW_INPUTS, generation=1, executor_id=None, now=even_later)
    second = _present("the second archived generation", store.get_workflow("cw-1#1"))
    _equal("generation 1 began when generation 0 ended", later, second.created_at)
    _equal("generation 1's log", [_step(0, "new")], _log_of(store, "cw-1#1"))
    _equal(
        "WorkflowFilter(continued_as=...) lists a run's generations, oldest first",
        ["cw-1#0", "cw-1#1"],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-1"))),
    )
    _equal(
        "status CONTINUED is listed",
        ["cw-1#0", "cw-1#1"],
        _ids(store.list_workflows(WorkflowFilter(status=Status.CONTINUED))),
    )
    _equal("the live run's generation after two", 2, store.get_workflow("cw-1").generation)  # type: ignore[union-attr]


def check_continue_workflow_retried_after_a_lost_answer(store: Store) -> None:
    _continued_run(store, "cw-2")
    first = store.continue_workflow("cw-2", _CW_NEXT, generation=0, executor_id="exec-a", now=_T0)
    again = store.continue_workflow("cw-2", _CW_NEXT, generation=0, executor_id="exec-a", now=_T0)
    _equal("a retry of a continue that committed answers with the run's row", first, again)
    _equal("the retry wrote no generation", 1, store.get_workflow("cw-2").generation)  # type: ignore[union-attr]
    _equal("the archived log after the retry", 2, len(_log_of(store, "cw-2#0")))
    _equal(
        "the retry archived nothing more",
        ["cw-2#0"],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-2"))),
    )
    _raises(
        "a stale continue with other inputs",
        RecordConflict,
        lambda: store.continue_workflow(
            "cw-2", _CW_INPUTS, generation=0, executor_id="exec-a", now=_T0
        ),
    )


def check_continue_workflow_refusals(store: Store) -> None:
    _continued_run(store, "cw-3")
    log = _log_of(store, "cw-3")

    def attempt(generation: int = 0, executor: str | None = "exec-a") -> Callable[[], Any]:
        return lambda: store.continue_workflow(
            "cw-3", _CW_NEXT, generation=generation, executor_id=executor, now=_T0
        )

    _raises("continue by another executor", RecordConflict, attempt(executor="exec-b"))
    _raises("continue from a stale generation", RecordConflict, attempt(generation=3))
    _raises(
        "continue of a missing run",
        WorkflowNotFound,
        lambda: store.continue_workflow(
            "cw-none", _CW_NEXT, generation=0, executor_id=None, now=_T0
        ),
    )
    _raises("a negative generation", ValueError, attempt(generation=-1))
    store.create_workflow(_run("cw-3#0"))
    message = str(_raises("an archived id another run holds", ValueError, attempt()))
    _expect("'cw-3#0'" in message, "the error names the archived id", "'cw-3#0'", message)
    store.delete_workflow("cw-3#0")
    store.set_status("cw-3", Status.CANCELLED)
    _raises("continue of a CANCELLED run", RecordConflict, attempt())
    row = _present("the run after the refusals", store.get_workflow("cw-3"))
    _equal("its generation after the refusals", 0, row.generation)
    _equal("its inputs after the refusals", _CW_INPUTS, row.inputs)
    _equal("its log after the refusals", log, _log_of(store, "cw-3"))
    _equal(
        "nothing archived after the refusals",
        [],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-3"))),
    )
    at_limit = "x" * MAX_NAME_BYTES
    store.create_workflow(_run(at_limit))
    message = str(
        _raises(
            "an id whose archived id would be too long",
            ValueError,
            lambda: store.continue_workflow(
                at_limit, _CW_NEXT, generation=0, executor_id=None, now=_T0
            ),
        )
    )
    _expect(
        "too long" in message, "the error says the archived id is too long", "too long", message
    )
    _equal("the long-named run is unchanged", 0, store.get_workflow(at_limit).generation)  # type: ignore[union-attr]


def check_delete_takes_the_generations(store: Store) -> None:
    _continued_run(store, "cw-4")
    _continued_run(store, "cw-4-keep")
    store.continue_workflow("cw-4", _CW_NEXT, generation=0, executor_id=None, now=_T0)
    store.continue_workflow("cw-4", _CW_NEXT, generation=1, executor_id=None, now=_T0)
    store.continue_workflow("cw-4-keep", _CW_NEXT, generation=0, executor_id=None, now=_T0)
    _equal("delete_workflow of a continued run", True, store.delete_workflow("cw-4"))
    for gone in ("cw-4", "cw-4#0", "cw-4#1"):
        _equal(f"get_workflow({gone!r}) after the delete", None, store.get_workflow(gone))
        _equal(f"load_log({gone!r}) after the delete", [], _log_of(store, gone))
    _equal(
        "another run's generations stay",
        ["cw-4-keep#0"],
        _ids(store.list_workflows(WorkflowFilter(continued_as="cw-4-keep"))),
    )
    _equal("another run's archived log stays", 2, len(_log_of(store, "cw-4-keep#0")))
    _equal("deleting an archived generation alone", True, store.delete_workflow("cw-4-keep#0"))
    _present("the live run after its generation's delete", store.get_workflow("cw-4-keep"))


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


def check_rewind_keeps_the_attempt(store: Store) -> None:
    """`rewind_workflow`: a finished run runs again from a position under its id, its
    attempt archived as a generation with how it ended; refusals write nothing."""
    store.create_workflow(_run("rw", executor_id="old", app_version="v1"))
    for position in range(3):
        store.record("rw", _step(position, position), executor_id="old")
    store.finish_workflow("rw", Status.ERROR, None, executor_id="old", error="boom")

    def rewind(workflow_id: str, position: int, generation: int) -> WorkflowRow:
        return store.rewind_workflow(
            workflow_id,
            position,
            generation=generation,
            executor_id="me",
            app_version="v2",
            now=_T0,
        )

    _raises("rewind_workflow of the wrong generation", RecordConflict, lambda: rewind("rw", 1, 1))
    _raises("rewind_workflow past the end of the log", ValueError, lambda: rewind("rw", 4, 0))
    unchanged = _present("the run after refused rewinds", store.get_workflow("rw"))
    _equal(
        "status after refused rewinds", (Status.ERROR, 0), (unchanged.status, unchanged.generation)
    )
    _equal("log after refused rewinds", [0, 1, 2], [r.position for r in _log_of(store, "rw")])
    _equal("no archive after refused rewinds", None, store.get_workflow(archive_id("rw", 0)))
    live = rewind("rw", 2, 0)
    stored = _present("the rewound run", store.get_workflow("rw"))
    for what, row in (("returned", live), ("stored", stored)):
        _equal(
            f"the rewound run as {what}",
            (Status.PENDING, 1, "me", "v2", None, ""),
            (row.status, row.generation, row.executor_id, row.app_version, row.result, row.error),
        )
    _equal("the rewound run's log", [_step(0, 0), _step(1, 1)], _log_of(store, "rw"))
    attempt = _present("the archived attempt", store.get_workflow(archive_id("rw", 0)))
    _equal(
        "the archived attempt",
        (Status.CONTINUED, "rw", 0, "boom"),
        (attempt.status, attempt.continued_as, attempt.generation, attempt.error),
    )
    _equal("the archived attempt's log", 3, len(_log_of(store, archive_id("rw", 0))))
    _raises("rewind_workflow of a live run", ValueError, lambda: rewind("rw", 0, 1))
    _raises("rewind_workflow of no run", WorkflowNotFound, lambda: rewind("no-such-run", 0, 0))
