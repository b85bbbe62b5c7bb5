"""`check_store`'s check of `move_family`: a resume onto a version moves the whole family."""

from __future__ import annotations

from replaykit.errors import WorkflowNotFound
from replaykit.log import Status
from replaykit.stores.base import Store
from replaykit.testing.conformance._support import _equal, _raises, _run

__all__ = ["check_move_family"]


def check_move_family(store: Store) -> None:
    """The run and its unfinished descendants, through finished ones, move in one call;
    finished runs, runs already on the version and runs outside the family stay."""
    runs = [
        _run("mf", app_version="v1", executor_id="a"),
        _run(
            "mf-q",
            app_version="v1",
            executor_id="",
            parent_id="mf",
            queue="q",
            status=Status.ENQUEUED,
        ),
        _run("mf-done", app_version="v1", executor_id="a", parent_id="mf", status=Status.SUCCESS),
        _run("mf-done-kid", app_version="v1", executor_id="a", parent_id="mf-done"),
        _run("mf-parked", app_version="v1", executor_id="a", parent_id="mf", status=Status.PARKED),
        _run("mf-new", app_version="v2", executor_id="a", parent_id="mf"),
        _run("other", app_version="v1", executor_id="a"),
    ]
    for row in runs:
        store.create_workflow(row)
    store.bump_recovery("mf-done-kid")
    seen: list[tuple[str, str]] = []
    unsubscribe = store.subscribe(lambda kind, key: seen.append((kind, key)))
    try:
        moved = store.move_family("mf", app_version="v2", executor_id="b")
    finally:
        unsubscribe()
    _equal(
        "move_family: the ids moved, parents before children",
        ["mf", "mf-parked", "mf-q", "mf-done-kid"],
        moved,
    )

    def state(workflow_id: str) -> tuple[str, str, Status, int]:
        row = store.get_workflow(workflow_id)
        assert row is not None
        return (row.app_version, row.executor_id, row.status, row.recovery_attempts)

    _equal(
        "move_family: version (and executor, but not for a queued run) restamped; statuses "
        "kept; a PENDING run's recovery count reset",
        {
            "mf": ("v2", "b", Status.PENDING, 0),
            "mf-q": ("v2", "", Status.ENQUEUED, 0),
            "mf-done": ("v1", "a", Status.SUCCESS, 0),
            "mf-done-kid": ("v2", "b", Status.PENDING, 0),
            "mf-parked": ("v2", "b", Status.PARKED, 0),
            "mf-new": ("v2", "a", Status.PENDING, 0),
            "other": ("v1", "a", Status.PENDING, 0),
        },
        {row.workflow_id: state(row.workflow_id) for row in runs},
    )
    _equal(
        "move_family notifies ('resumed', id) for each PENDING run moved, ('enqueued', queue) "
        "once per queue",
        sorted([("resumed", "mf"), ("resumed", "mf-done-kid"), ("enqueued", "q")]),
        sorted(note for note in seen if note[0] in ("resumed", "enqueued")),
    )
    _equal("move_family again: nothing left to move", [], store.move_family("mf", app_version="v2"))
    _raises(
        "move_family of a missing run",
        WorkflowNotFound,
        lambda: store.move_family("no-such-run", app_version="v2"),
    )
