"""replaykit/runtime/endings.py: what a run's end comes to, worked out apart from the store."""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

import pytest

from replaykit import Step, workflow
from replaykit.errors import PayloadTooLarge, SerializationError
from replaykit.interpreter import ContinuedAsNew
from replaykit.log import Failure, Status, Value
from replaykit.runtime.endings import continued_inputs, error_text, finished_outcome, say_failed
from replaykit.runtime.events import Activation
from replaykit.serde import ErrorInfo
from replaykit.stores.base import WorkflowRow


@workflow(name="endings.counter")
def counter(n: int, *, label: str = "") -> Generator[Any, Any, int]:
    yield Step("tick", lambda: n)
    return n


ROW = WorkflowRow("c-1", "endings.counter", Status.PENDING)


def test_the_next_generations_arguments_are_stored_as_a_starts_are() -> None:
    inputs = continued_inputs(ROW, ContinuedAsNew((3,), {"label": "x"}), max_payload_bytes=10_000)
    assert inputs == {"args": [3], "kwargs": {"label": "x"}}


def test_arguments_too_large_name_the_run_and_the_limit() -> None:
    with pytest.raises(
        PayloadTooLarge, match=r"'endings.counter' \(id 'c-1'\).*over the limit of 64"
    ):
        continued_inputs(ROW, ContinuedAsNew(("x" * 100,), {}), max_payload_bytes=64)


def test_arguments_that_cannot_be_stored_name_the_run() -> None:
    with pytest.raises(SerializationError, match=r"\(id 'c-1'\): ContinueAsNew"):
        continued_inputs(ROW, ContinuedAsNew((object(),), {}), max_payload_bytes=10_000)


def test_the_error_column_holds_the_failures_message_cut_short() -> None:
    assert error_text(Failure(ErrorInfo("builtins", "ValueError", "m" * 600))) == "m" * 500
    assert error_text(Value(1)) == ""


def test_how_an_activation_ended() -> None:
    assert finished_outcome(Status.SUCCESS, True) == "ok"
    assert finished_outcome(Status.ERROR, True) == "error"
    assert finished_outcome(Status.SUCCESS, False) == "cancelled"


def test_a_run_that_ended_in_error_gets_one_line_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    activation = Activation("c-1", ROW, fresh=True)
    with caplog.at_level(logging.WARNING, logger="replaykit.engine"):
        say_failed(activation, ROW, Value(1))
        say_failed(activation, ROW, Failure(ErrorInfo("shop", "Declined", "no funds")))
    assert [r.getMessage() for r in caplog.records] == [
        "workflow 'endings.counter' (id 'c-1') ended in ERROR: shop.Declined: no funds"
    ]
