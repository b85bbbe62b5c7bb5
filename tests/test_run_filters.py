"""The keyword filters declared once (runtime/run_filters.py): each face's listing and
bulk action takes them as `**filters`, checks each keyword by name, and narrows by it
exactly as when every keyword was spelled out in each signature."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replaykit import Engine, Status
from replaykit.runtime.run_filters import (
    BulkFilters,
    ListFilters,
    RunFilters,
    check_keywords,
    workflow_filter,
)
from replaykit.stores.base import WorkflowFilter


@pytest.fixture
def engine() -> Iterator[Engine]:
    with Engine("memory://", executor_id="filters") as built:
        yield built


def test_the_typed_dicts_hold_what_each_method_takes() -> None:
    common = {"status", "name", "version", "queue", "since", "until"}
    assert RunFilters.__optional_keys__ == common
    assert ListFilters.__optional_keys__ == common | {
        "executor_id",
        "parent_id",
        "forked_from",
        "continued_as",
        "partition_key",
    }
    assert BulkFilters.__optional_keys__ == common | {"id_prefix"}


def test_an_unknown_keyword_is_refused_by_name(engine: Engine) -> None:
    with pytest.raises(TypeError, match=r"list_workflows\(\) .* 'statuss'; its filters are"):
        engine.list_workflows(statuss="PENDING")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"count_workflows\(\) .* 'id_prefix'"):
        engine.count_workflows(id_prefix="o-")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"cancel_workflows\(\) .* 'parent_id'"):
        engine.cancel_workflows(parent_id="p")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"send_many\(\) .* 'executor_id'"):
        engine.send_many("hi", executor_id="e")  # type: ignore[call-arg]


def test_check_keywords_passes_what_it_declares() -> None:
    check_keywords("x", {"status": None, "id_prefix": "a"}, BulkFilters)
    with pytest.raises(TypeError, match=r"x\(\) got an unexpected keyword argument 'limit'"):
        check_keywords("x", {"limit": 3}, BulkFilters)


def test_the_store_filter_from_the_keywords() -> None:
    built = workflow_filter(
        status=["PENDING", Status.ERROR], version="v2", id_prefix="o-", limit=5, offset=2
    )
    assert built == WorkflowFilter(
        status=(Status.PENDING, Status.ERROR),
        app_version="v2",
        id_prefix="o-",
        limit=5,
        offset=2,
    )
    assert workflow_filter(status="SUCCESS").statuses() == (Status.SUCCESS,)
    assert workflow_filter() == WorkflowFilter()
