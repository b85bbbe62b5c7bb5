"""`check_store`'s checks of the reads listings page with: `count_workflows`, a
listing without payloads (`WorkflowFilter(payloads=False)`), and a range of a log
(`load_log(since=, limit=)`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from replaykit.log import ErrorInfo, Failure, Record, Status, Value
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.testing.conformance._support import _CheckFailed, _equal

__all__ = ["check_count_workflows", "check_listing_without_payloads", "check_load_log_range"]

_T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def _fail(message: str) -> AssertionError:
    # The checks' own failure type, so that check_store reports it as it reports the rest.
    return _CheckFailed(message)


def _runs(store: Store) -> None:
    """Eight runs of two names, two queues and three statuses, created a second apart."""
    for n in range(8):
        store.create_workflow(
            WorkflowRow(
                f"run-{n}",
                "wf-a" if n % 2 else "wf-b",
                Status.ENQUEUED if n < 3 else Status.PENDING,
                inputs={"args": [n, "x" * 100], "kwargs": {}},
                queue="q1" if n % 3 == 0 else "q2",
                created_at=_T0 + timedelta(seconds=n),
            )
        )
    store.finish_workflow("run-6", Status.SUCCESS, Value({"big": "y" * 100}))
    failure = Failure(ErrorInfo("builtins", "ValueError", "bad input", ["bad input"], "tb"))
    store.finish_workflow("run-7", Status.ERROR, failure, error="bad input")


_FILTERS: list[WorkflowFilter] = [
    WorkflowFilter(),
    WorkflowFilter(status=Status.PENDING),
    WorkflowFilter(status=(Status.ENQUEUED, Status.ERROR)),
    WorkflowFilter(status=()),
    WorkflowFilter(name="wf-a"),
    WorkflowFilter(queue="q1", status=Status.ENQUEUED),
    WorkflowFilter(since=_T0 + timedelta(seconds=2), until=_T0 + timedelta(seconds=5)),
    WorkflowFilter(name="no-such-workflow"),
]


def check_count_workflows(store: Store) -> None:
    _equal("count_workflows of an empty store", 0, store.count_workflows(WorkflowFilter()))
    _runs(store)
    for where in _FILTERS:
        listed = len(store.list_workflows(where))
        _equal(
            f"count_workflows({where}) against the listing", listed, store.count_workflows(where)
        )
    paged = WorkflowFilter(status=Status.PENDING, limit=1, offset=2, payloads=False)
    _equal(
        "count_workflows with a limit and an offset (they do not count)",
        3,
        store.count_workflows(paged),
    )


def check_listing_without_payloads(store: Store) -> None:
    _runs(store)
    full = store.list_workflows(WorkflowFilter())
    light = store.list_workflows(WorkflowFilter(payloads=False))
    _equal(
        "ids listed without payloads", [r.workflow_id for r in full], [r.workflow_id for r in light]
    )
    for whole, row in zip(full, light, strict=True):
        what = f"run {row.workflow_id!r} listed without payloads"
        _equal(f"{what}: its inputs", None, row.inputs)
        kept = whole.result if whole.status is Status.ERROR else None
        _equal(f"{what}: its result (an ERROR run's failure only)", kept, row.result)
        _equal(f"{what}: the other fields", attrs.evolve(whole, inputs=None, result=kept), row)
    paged = store.list_workflows(
        WorkflowFilter(status=Status.PENDING, limit=2, offset=1, payloads=False)
    )
    _equal("a page listed without payloads", ["run-4", "run-5"], [r.workflow_id for r in paged])


def check_load_log_range(store: Store) -> None:
    store.create_workflow(WorkflowRow("logged", "wf", Status.PENDING))
    for position in range(6):
        store.record("logged", Record(position, "step", f"s{position}", Value(position)))

    def positions(**given: Any) -> list[int]:
        return [r.position for r in store.load_log("logged", **given)]

    _equal("load_log(since=1, limit=2)", [1, 2], positions(since=1, limit=2))
    _equal("load_log(limit=3)", [0, 1, 2], positions(limit=3))
    _equal("load_log(since=4, limit=10)", [4, 5], positions(since=4, limit=10))
    _equal("load_log(since=2, limit=0)", [], positions(since=2, limit=0))
    _equal("load_log(since=9, limit=2)", [], positions(since=9, limit=2))
    _equal("load_log(since=3, limit=None)", [3, 4, 5], positions(since=3, limit=None))
    refused: tuple[Any, ...] = (-1, 1.5, True)
    for bad in refused:
        try:
            store.load_log("logged", limit=bad)
        except ValueError:
            continue
        except Exception as exc:
            raise _fail(f"load_log(limit={bad!r}): expected ValueError, got {exc!r}") from exc
        raise _fail(f"load_log(limit={bad!r}): expected ValueError, got an answer")
