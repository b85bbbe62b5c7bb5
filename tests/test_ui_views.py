"""replaykit/ui/_views.py: what the web UI's pages show, built from a store alone.

The pages rendered and served are tests/test_ui_http.py's; here, the views' data: the
runs list paged newest first, a run's page, and the values shown.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from replaykit.log import Failure, Record, Status, Value
from replaykit.serde import ErrorInfo
from replaykit.stores.base import WorkflowFilter, WorkflowRow
from replaykit.stores.memory import MemoryStore
from replaykit.ui._views import (
    MAX_SHOWN_CHARS,
    RunsQuery,
    pretty_json,
    run_page,
    runs_page,
    short_json,
    when,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def store() -> MemoryStore:
    store = MemoryStore()
    for i in range(7):
        status = Status.ERROR if i == 3 else Status.SUCCESS
        result = Failure(ErrorInfo("shop", "Declined", "no\nfunds")) if i == 3 else Value(i)
        store.create_workflow(
            WorkflowRow(
                f"r-{i}",
                "checkout" if i % 2 else "refund",
                status,
                result=result,
                created_at=T0 + timedelta(minutes=i),
            )
        )
    return store


def test_times_are_shown_in_utc_to_the_second() -> None:
    assert when(datetime(2030, 1, 1, 14, 0, 9, tzinfo=timezone(timedelta(hours=2)))) == (
        "2030-01-01 12:00:09"
    )
    assert when(datetime(2030, 1, 1, 12)) == "2030-01-01 12:00:00"  # naive is UTC
    assert when(None) == "-"


def test_values_are_shown_as_json_cut_to_what_a_page_holds() -> None:
    assert pretty_json({"a": [1]}) == '{\n  "a": [\n    1\n  ]\n}'
    long = pretty_json("x" * (MAX_SHOWN_CHARS + 10))
    assert long.endswith("... (12 more characters)")
    assert short_json({"a": 1}) == '{"a":1}'
    assert short_json("y" * 100, width=10) == '"yyyyyy...'


def test_the_runs_list_is_paged_newest_first(store: MemoryStore) -> None:
    first = runs_page(store, RunsQuery(per_page=3))
    assert [r.workflow_id for r in first.rows] == ["r-6", "r-5", "r-4"]
    assert (first.total, first.first, first.last, first.pages) == (7, 1, 3, 3)
    last = runs_page(store, RunsQuery(per_page=3, page=99))  # past the end: the last page
    assert [r.workflow_id for r in last.rows] == ["r-0"] and last.query.page == 2
    assert (last.first, last.last) == (7, 7)


def test_the_runs_list_counts_no_further_than_its_cap(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past COUNT_CAP the page says "N+" and pages back only that far; the store is asked
    for counts that stop there and for its rows newest first (no offset from the end)."""
    from replaykit.ui import _views

    asked: list[WorkflowFilter] = []
    listed = store.list_workflows

    def listing(where: WorkflowFilter) -> list[WorkflowRow]:
        asked.append(where)
        return listed(where)

    monkeypatch.setattr(store, "list_workflows", listing)
    monkeypatch.setattr(_views, "COUNT_CAP", 4)
    page = runs_page(store, RunsQuery(per_page=3, page=5))
    assert page.capped and page.shown(page.total) == "4+" and page.pages == 2
    assert [r.workflow_id for r in page.rows] == ["r-3"]  # page 2 of the newest four
    assert dict(page.counts) == {"SUCCESS": 5, "ERROR": 1}
    assert [page.shown(n) for _, n in page.counts] == ["4+", "1"]
    [where] = asked
    assert where.newest_first and (where.offset, where.limit) == (3, 1)
    assert where.count_at_most == 5
    small = runs_page(store, RunsQuery(statuses=(Status.ERROR,)))
    assert not small.capped and small.shown(small.total) == "1"


def test_the_runs_list_filters_and_says_what_went_wrong_in_a_line(store: MemoryStore) -> None:
    page = runs_page(store, RunsQuery(statuses=(Status.ERROR,)))
    assert [(r.workflow_id, r.problem) for r in page.rows] == [("r-3", "shop.Declined: no funds")]
    refunds = runs_page(store, RunsQuery(name="refund"))
    assert [r.workflow_id for r in refunds.rows] == ["r-6", "r-4", "r-2", "r-0"]
    empty = runs_page(MemoryStore(), RunsQuery())
    assert (empty.rows, empty.total, empty.first, empty.pages) == ([], 0, 0, 1)


def test_a_runs_page_holds_its_timeline_and_what_may_be_done(store: MemoryStore) -> None:
    store.create_workflow(
        WorkflowRow("live", "checkout", Status.PENDING, created_at=T0),
        records=[Record(0, "step", "charge", Value("ch_1")), Record(1, "recv", "go", None)],
    )
    page = run_page(store, "live", now=T0 + timedelta(minutes=1))
    assert page is not None
    assert [(s.kind, s.name) for s in page.steps] == [("step", "charge"), ("recv", "go")]
    assert page.can_cancel and not page.can_resume
    done = run_page(store, "r-1", now=T0)
    assert done is not None and done.result == "1" and not done.can_cancel and done.can_fork
    assert run_page(store, "nobody") is None
