"""replaykit/registry.py: workflows registered by name, their arguments and their updates."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from datetime import date
from typing import Any

import attrs
import pytest

from replaykit import Step, registry
from replaykit.errors import DuplicateWorkflowError, UnknownUpdate, UnknownWorkflowError
from replaykit.registry import (
    BoundWorkflow,
    app_version_of,
    lookup,
    registered,
    unbind,
    workflow,
)


@pytest.fixture(autouse=True)
def _registry_kept() -> Iterator[None]:
    """What a test registers is gone after it: engines digest every registered workflow."""
    before = dict(registry._registry)
    yield
    registry._registry.clear()
    registry._registry.update(before)


@attrs.frozen
class Order:
    order_id: str
    amount: int


@workflow(name="registry.checkout", updates=["note"])
def checkout(order: Order, when: date, *, rush: bool = False) -> Generator[Any, Any, str]:
    yield Step("charge", lambda: None)
    return order.order_id


@checkout.validator("add")
def check_add(amount: int) -> None:
    if amount <= 0:
        raise ValueError("add a positive amount")


def test_a_workflow_is_found_by_its_name_and_calling_it_gives_its_generator() -> None:
    assert lookup("registry.checkout") is checkout
    assert registered()["registry.checkout"] is checkout
    assert repr(checkout) == "<workflow 'registry.checkout'>"
    assert isinstance(checkout(Order("o-1", 5), date(2030, 1, 1)), Generator)
    assert checkout.result_type is str


def test_an_unknown_name_lists_what_is_registered() -> None:
    with pytest.raises(UnknownWorkflowError, match=r"'registry.nope'.*registry\.checkout"):
        lookup("registry.nope")


def test_only_generator_functions_are_workflows() -> None:
    async def not_a_generator() -> None:
        pass

    with pytest.raises(TypeError, match="async def workflows are not supported"):
        workflow(name="registry.async")(not_a_generator)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must `yield` commands"):
        workflow(name="registry.plain")(lambda: None)  # type: ignore[arg-type, return-value]


def test_another_function_under_a_taken_name_is_refused_unless_replacing() -> None:
    def other() -> Generator[Any, Any, None]:
        yield Step("x", lambda: None)

    with pytest.raises(DuplicateWorkflowError, match=r"already registered by .*checkout"):
        workflow(name="registry.checkout")(other)
    replaced = workflow(name="registry.swapped", replace=True)(other)
    assert workflow(name="registry.swapped", replace=True)(other) is not replaced
    assert lookup("registry.swapped").fn is other


def test_arguments_are_checked_stored_and_read_back_typed() -> None:
    inputs = checkout.encode_inputs((Order("o-1", 5), date(2030, 1, 2)), {"rush": True})
    args, kwargs = checkout.decode_inputs(inputs)
    assert args == [Order("o-1", 5), date(2030, 1, 2)] and kwargs == {"rush": True}
    with pytest.raises(TypeError, match=r"workflow 'registry\.checkout': bad arguments"):
        checkout.encode_inputs((Order("o-1", 5),), {})
    assert checkout.decode_inputs(None) == ([], {})


def test_a_bound_workflow_carries_its_arguments_and_is_not_given_more() -> None:
    bound = checkout.bind(Order("o-1", 5), date(2030, 1, 2))
    assert isinstance(bound, BoundWorkflow)
    assert unbind(bound, (), {}) == (checkout, bound.args, {})
    assert unbind(checkout, (1,), {"x": 2}) == (checkout, (1,), {"x": 2})
    with pytest.raises(TypeError, match="bound to its arguments already"):
        unbind(bound, (1,), {})
    with pytest.raises(TypeError, match="bad arguments"):
        checkout.bind(Order("o-1", 5))  # type: ignore[call-arg]


def test_updates_are_declared_by_name_or_by_a_validator() -> None:
    assert checkout.update_names == frozenset({"note", "add"})
    checkout.check_update("note", ["hi"], {})
    checkout.check_update("add", [3], {})
    with pytest.raises(ValueError, match="add a positive amount"):
        checkout.check_update("add", [0], {})
    with pytest.raises(UnknownUpdate, match=r"\(id 'r-1'\) has no update 'pay'.*'add', 'note'"):
        checkout.check_update("pay", [], {}, workflow_id="r-1")
    with pytest.raises(TypeError, match="its validator check_add does not take"):
        checkout.check_update("add", [1, 2], {})
    with pytest.raises(ValueError, match="one validator per update name"):
        checkout.validator("add")(lambda amount: None)


def test_updates_must_be_a_list_of_names() -> None:
    with pytest.raises(TypeError, match=r"write updates=\['note'\]"):
        workflow(name="registry.str-updates", updates="note")


def test_the_app_version_changes_with_the_code() -> None:
    def v1() -> Generator[Any, Any, int]:
        yield Step("a", lambda: 1)
        return 1

    def v2() -> Generator[Any, Any, int]:
        yield Step("a", lambda: 2)
        return 2

    first = workflow(name="registry.versioned", replace=True)(v1)
    version = app_version_of([first, checkout])
    assert version == app_version_of([checkout, first])  # order does not matter
    second = workflow(name="registry.versioned", replace=True)(v2)
    assert app_version_of([second, checkout]) != version
    assert len(version) == 12
