"""One retry policy, in one place: which store calls survive an outage, and how.

`RetryingStore` retries the calls that may run twice without harm, resolves a
status change whose answer was lost by reading the run back, and lets every
other call through once. Each case is checked against a real store whose
connection drops before a call or right after its commit.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from replaykit import Status
from replaykit.errors import StoreUnavailable
from replaykit.log import Record, Value
from replaykit.runtime.retries import NOT_RETRIED, RETRIED_CALLS, RetryingStore
from replaykit.stores import open_store
from replaykit.stores.base import Store, WorkflowRow
from replaykit.stores.memory import MemoryStore


class Dropping:
    """A store whose next calls of one method lose their connection, before or after
    the commit, as a cutting proxy or a restarting server does."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}
        self._drops: dict[str, list[str]] = {}

    def drop(self, method: str, *when: str) -> None:
        self._drops[method] = list(when)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            pending = self._drops.get(name)
            when = pending.pop(0) if pending else None
            if when == "before":
                raise StoreUnavailable("connection dropped before the call (simulated)")
            answer = found(*args, **kwargs)
            if when == "after":
                raise StoreUnavailable("connection dropped after COMMIT (simulated)")
            return answer

        return call


@pytest.fixture
def dropping(store_url: str) -> Iterator[Dropping]:
    inner: Store = MemoryStore() if store_url == "memory://" else open_store(store_url)
    yield Dropping(inner)
    inner.close()


def _retrying(store: Dropping, stop: Callable[[], bool] = lambda: False) -> Any:
    return RetryingStore(store, stop=stop, attempts=4)  # type: ignore[arg-type]


def _run(workflow_id: str = "r1") -> WorkflowRow:
    return WorkflowRow(
        workflow_id=workflow_id,
        name="wf",
        status=Status.PENDING,
        executor_id="e1",
        app_version="v1",
        created_at=datetime.now(UTC),
    )


def test_every_store_call_has_a_policy() -> None:
    """A method added to the protocol must be classified before it is used."""
    methods = {
        name
        for name, _ in inspect.getmembers(Store, inspect.isfunction)
        if not name.startswith("_")
    }
    assert methods == set(RETRIED_CALLS) | set(NOT_RETRIED)
    assert not set(RETRIED_CALLS) & set(NOT_RETRIED)


def test_a_create_whose_answer_was_lost_answers_with_the_run_it_created(
    dropping: Dropping,
) -> None:
    store = _retrying(dropping)
    dropping.drop("create_workflow", "after")
    row, created = store.create_workflow(_run())
    assert row.workflow_id == "r1" and created is False  # the retry found it
    assert dropping.calls["create_workflow"] == 2
    assert [r.workflow_id for r in dropping.inner.list_workflows(_all())] == ["r1"]


def _all() -> Any:
    from replaykit.stores.base import WorkflowFilter

    return WorkflowFilter()


def test_a_keyed_send_is_retried_and_delivered_once(dropping: Dropping) -> None:
    store = _retrying(dropping)
    dropping.inner.create_workflow(_run())
    dropping.drop("send_message", "before", "after")
    assert store.send_message("r1", "t", "hi", idempotency_key="k", call_id="c1") is True
    assert dropping.calls["send_message"] == 3
    message = dropping.inner.peek_message("r1", "t")
    assert message is not None and message.payload == "hi"
    dropping.inner.record(
        "r1", Record(0, "recv", "t", Value("hi")), executor_id="e1", consume=message.message_id
    )
    assert dropping.inner.peek_message("r1", "t") is None  # there was only the one


def test_a_status_change_whose_answer_was_lost_reports_the_change(dropping: Dropping) -> None:
    store = _retrying(dropping)
    dropping.inner.create_workflow(_run())
    dropping.drop("set_status", "after")
    cancelled = store.set_status("r1", Status.CANCELLED, only_from=[Status.PENDING])
    assert cancelled is True  # the retry changed nothing; reading back says it happened
    assert dropping.inner.get_workflow("r1").status is Status.CANCELLED  # type: ignore[union-attr]
    # A change that truly does not happen still answers False.
    assert store.set_status("r1", Status.PENDING, only_from=[Status.PARKED]) is False


def test_calls_that_must_not_run_twice_go_through_once(dropping: Dropping) -> None:
    store = _retrying(dropping)
    dropping.inner.create_workflow(_run())
    dropping.drop("bump_recovery", "after")
    with pytest.raises(StoreUnavailable):
        store.bump_recovery("r1")
    assert dropping.calls["bump_recovery"] == 1
    assert dropping.inner.bump_recovery("r1") == 2  # counted once by the lost call
    dropping.drop("delete_workflow", "before")
    with pytest.raises(StoreUnavailable):
        store.delete_workflow("r1")
    assert dropping.calls["delete_workflow"] == 1
    dropping.drop("record", "before")
    with pytest.raises(StoreUnavailable):
        store.record("r1", Record(0, "step", "s", Value(1)), executor_id="e1")
    assert dropping.calls["record"] == 1


def test_retries_end_when_told_to_stop_or_out_of_attempts(dropping: Dropping) -> None:
    stopping = _retrying(dropping, stop=lambda: True)
    dropping.drop("get_workflow", "before", "before")
    with pytest.raises(StoreUnavailable):
        stopping.get_workflow("r1")
    assert dropping.calls["get_workflow"] == 1
    store = _retrying(dropping)
    dropping.drop("list_workflows", *["before"] * 4)
    with pytest.raises(StoreUnavailable):
        store.list_workflows(_all())
    assert dropping.calls["list_workflows"] == 4
