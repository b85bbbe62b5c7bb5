"""`list_workflows(where=...)` and `count_workflows(where=..., group_by=...)` on the four
faces and the three stores: the filter language over attributes and the built-in
fields, combined with the keyword filters; a filter that does not parse raises
`FilterError` saying where."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator
from typing import Any

import pytest

from replaykit import (
    AsyncClient,
    AsyncEngine,
    Client,
    Engine,
    FilterError,
    SetAttributes,
    workflow,
)
from replaykit.stores.where import parse_where


@workflow(name="filter-order")
def order(customer: str, fail: bool) -> Generator[Any, Any, str]:
    yield SetAttributes(stage="done")
    if fail:
        raise ValueError(f"order of {customer} declined")
    return customer


def _start_three(engine: Engine) -> None:
    for n, (customer, fail) in enumerate((("42", False), ("42", True), ("7", True))):
        handle = engine.start(
            order, customer, fail, workflow_id=f"f-{n}", attributes={"customer": customer}
        )
        with contextlib.suppress(ValueError):
            handle.result(timeout=20)


def test_the_engine_lists_and_counts_by_a_filter(engine: Engine) -> None:
    _start_three(engine)
    failed_42 = "customer = '42' and status in ('ERROR', 'CANCELLED') and created > '2020-01-01'"
    assert [r.workflow_id for r in engine.list_workflows(where=failed_42)] == ["f-1"]
    assert engine.count_workflows(where=failed_42) == 1
    assert engine.count_workflows(where="stage = 'done'") == 3
    assert engine.count_workflows(where="customer = '42'", status="SUCCESS") == 1
    assert engine.count_workflows(group_by="status") == {"SUCCESS": 1, "ERROR": 2}
    assert engine.count_workflows(where="status = 'ERROR'", group_by="customer") == {
        "42": 1,
        "7": 1,
    }
    tree = parse_where("not customer = '42'")
    assert [r.workflow_id for r in engine.list_workflows(where=tree, name="filter-order")] == [
        "f-2"
    ]
    assert engine.list_workflows(where="nosuch = 'x'") == []
    with pytest.raises(FilterError, match="column 12: expected a value") as refused:
        engine.list_workflows(where="customer = ")
    assert refused.value.column == 12


def test_the_other_faces_take_the_same_filters(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine:
        _start_three(engine)

    async def main() -> tuple[Any, ...]:
        async with AsyncEngine(shared, poll_interval=0.05) as aio:
            listed = await aio.list_workflows(where="customer = '7'")
            grouped = await aio.count_workflows(where="customer = '42'", group_by="status")
        async with AsyncClient(shared, app_version="v1") as client:
            counted = await client.count_workflows(where="customer != '7'")
        return [r.workflow_id for r in listed], grouped, counted

    assert asyncio.run(main()) == (["f-2"], {"SUCCESS": 1, "ERROR": 1}, 2)
    with Client(shared, app_version="v1") as client:
        assert [r.workflow_id for r in client.list_workflows(where="customer in ('7')")] == ["f-2"]
        assert client.count_workflows(where="customer = '42'", group_by="customer") == {"42": 2}
