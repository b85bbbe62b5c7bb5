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

from conftest import wait_for
from replaykit import (
    AsyncClient,
    AsyncEngine,
    Client,
    Engine,
    FilterError,
    Recv,
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


@workflow(name="filter-wait")
def waiting(customer: str) -> Generator[Any, Any, str]:
    yield Recv("go")
    return customer


def test_a_bulk_action_takes_what_list_workflows_takes(engine: Engine) -> None:
    for n, customer in enumerate(("42", "42", "7")):
        engine.start(waiting, customer, workflow_id=f"b-{n}", attributes={"customer": customer})
    text = "customer = '42' and status = 'PENDING'"
    dry = engine.cancel_workflows(text, dry_run=True)
    assert (dry.matched, dry.done) == (2, 2)
    done = engine.cancel_workflows(parse_where(text), reason="customer left")
    assert done.done == 2
    wait_for(
        lambda: (
            engine.count_workflows(where="customer = '42'", group_by="status") == {"CANCELLED": 2}
        ),
        "customer 42's runs to be CANCELLED",
    )
    assert engine.count_workflows(where="customer = '7' and status = 'PENDING'") == 1
    with pytest.raises(FilterError, match="column 10"):
        engine.cancel_workflows("customer ~ '42'")
