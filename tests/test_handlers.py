"""The runtime handlers, one per command kind (runtime/handlers/), asked alone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

import replaykit.commands as commands_module
from replaykit import (
    All,
    Await,
    Awakeable,
    Call,
    GetEvent,
    Now,
    Race,
    Recv,
    Sleep,
    Start,
    Step,
    Wait,
    workflow,
)
from replaykit.commands import AwakeableToken, Command, facts_of
from replaykit.errors import DamagedData
from replaykit.log import Failure, Status, Value
from replaykit.runtime.handlers import HANDLERS, Carrier, handler_for
from replaykit.stores.base import WorkflowRow
from replaykit.stores.memory import MemoryStore

ROW = WorkflowRow("parent", "wf", Status.PENDING)


class _Carrier:
    """The few services the waiting handlers ask for: a store, a child's id."""

    def __init__(self) -> None:
        self.store = MemoryStore()

    def child_id(self, row: WorkflowRow, position: int, command: Any, path: Any = ()) -> str:
        return command.workflow_id or f"{row.workflow_id}:{position}"

    def finished_outcome(self, row: WorkflowRow, position: int, target: str) -> Any:
        child = self.store.get_workflow(target)
        return None if child is None or not child.status.is_terminal else child.result


def _carrier() -> Carrier:
    return cast(Carrier, _Carrier())


def test_every_command_kind_the_runtime_carries_out_has_a_handler() -> None:
    kinds = [
        value
        for value in vars(commands_module).values()
        if isinstance(value, type)
        and issubclass(value, Command)
        and value.__module__.startswith(commands_module.__name__ + ".")
        and getattr(value, "kind", None)
    ]
    decided_by_the_interpreter = {"deprecate_patch", "continue_as_new"}
    missing = [
        kind.__name__
        for kind in kinds
        if kind not in HANDLERS and kind.kind not in decided_by_the_interpreter
    ]
    assert missing == []


def test_an_unknown_kind_is_refused_naming_where_its_handler_goes() -> None:
    class Teleport(Command):
        kind = "teleport"
        name = "x"

        def describe(self) -> str:
            return "Teleport()"

    with pytest.raises(TypeError, match=r"runtime/handlers/__init__\.py"):
        handler_for(Teleport())


def test_what_a_waiting_kind_waits_on() -> None:
    carrier = _carrier()
    assert handler_for(Recv("go")).wakes(carrier, ROW, 3, Recv("go")) == (("message", "parent"),)
    assert handler_for(Sleep(5)).wakes(carrier, ROW, 3, Sleep(5)) == ()
    wait = Wait("other")
    assert handler_for(wait).wakes(carrier, ROW, 3, wait) == ((facts_of(wait).wakes_on, "other"),)
    get = GetEvent("other", "k")
    assert handler_for(get).wakes(carrier, ROW, 3, get)[0][1] == "other"


def _child_body() -> Any:
    yield Step("s", lambda: 1)


def test_a_call_waits_on_its_child_and_is_ready_when_it_finished() -> None:
    child = workflow(name="handlers-child")(_child_body)
    carrier = _carrier()
    call = Call(child, workflow_id="kid")
    handler = handler_for(call)
    assert handler.wakes(carrier, ROW, 2, call) == ((facts_of(call).wakes_on, "kid"),)
    assert handler.ready(carrier, ROW, 2, call) is None
    store = cast(_Carrier, carrier).store
    store.create_workflow(WorkflowRow("kid", "handlers-child", Status.PENDING))
    store.finish_workflow("kid", Status.SUCCESS, Value(2))
    ready = handler.ready(carrier, ROW, 2, call)
    assert ready is not None and ready.outcome == Value(2)


def test_a_recv_is_ready_with_the_message_it_consumes() -> None:
    carrier = _carrier()
    store = cast(_Carrier, carrier).store
    store.create_workflow(ROW)
    handler = handler_for(Recv("go"))
    assert handler.ready(carrier, ROW, 0, Recv("go")) is None
    store.send_message("parent", "go", {"ok": True})
    ready = handler.ready(carrier, ROW, 0, Recv("go"))
    assert ready is not None and ready.outcome == Value({"ok": True})
    assert ready.consume is not None


def test_what_a_timeout_gives() -> None:
    assert handler_for(Recv("go")).timed_out(ROW, 4, Recv("go")) == Value(None)
    timed_out = handler_for(Wait("other")).timed_out(ROW, 4, Wait("other", timeout=3))
    assert isinstance(timed_out, Failure)
    assert timed_out.error.qualname == "TimeoutError" and "position 4" in timed_out.error.message


def test_composites_and_instants_share_their_handlers() -> None:
    assert handler_for(Race(Sleep(1), Sleep(2))) is handler_for(All(Sleep(1)))
    assert handler_for(Now()) is not handler_for(Start(workflow(name="h-s")(_child_body)))
    now = datetime(2030, 1, 1, tzinfo=UTC)

    class Clocked:
        clock = type("C", (), {"now": staticmethod(lambda: now)})()

    assert handler_for(Now()).instant(cast(Carrier, Clocked()), ROW, 0, Now()) == Value(
        now.isoformat()
    )


def test_an_awakeable_draws_its_token_from_the_entropy_hook() -> None:
    import random

    class Seeded:
        @staticmethod
        def entropy(workflow_id: str, position: int, kind: str) -> random.Random:
            return random.Random(f"{workflow_id}:{position}:{kind}")

    row = WorkflowRow("parent", "wf", Status.PENDING, generation=2)
    outcome = handler_for(Awakeable("a")).instant(cast(Carrier, Seeded()), row, 5, Awakeable("a"))
    assert isinstance(outcome, Value)
    parts = AwakeableToken.parse(outcome.data)
    assert parts is not None
    assert (parts.workflow_id, parts.generation, parts.position) == ("parent", 2, 5)
    assert parts.secret == f"{random.Random('parent:5:awakeable').getrandbits(128):032x}"


def test_an_await_is_ready_with_its_completion_and_consumes_it() -> None:
    carrier = _carrier()
    store = cast(_Carrier, carrier).store
    store.create_workflow(ROW)
    parts = AwakeableToken("parent", 0, 1, "a" * 32)
    wait = Await(str(parts))
    handler = handler_for(wait)
    assert handler.wakes(carrier, ROW, 3, wait) == (("message", "parent"),)
    assert handler.ready(carrier, ROW, 3, wait) is None
    store.send_message("parent", parts.topic, {"value": [1, 2]}, idempotency_key=parts.topic)
    ready = handler.ready(carrier, ROW, 3, wait)
    assert ready is not None and ready.outcome == Value([1, 2]) and ready.consume is not None
    assert handler.timed_out(ROW, 3, wait) == Value(None)


def test_an_await_of_another_runs_token_fails_and_a_strange_message_is_damage() -> None:
    carrier = _carrier()
    store = cast(_Carrier, carrier).store
    store.create_workflow(ROW)
    foreign = Await(str(AwakeableToken("elsewhere", 0, 1, "b" * 32)))
    ready = handler_for(foreign).ready(carrier, ROW, 3, foreign)
    assert ready is not None and isinstance(ready.outcome, Failure)
    assert ready.outcome.error.qualname == "ValueError"
    assert "belongs to run 'elsewhere'" in ready.outcome.error.message
    parts = AwakeableToken("parent", 0, 1, "c" * 32)
    store.send_message("parent", parts.topic, "not a completion")
    with pytest.raises(DamagedData, match="is not a completion"):
        handler_for(Await(str(parts))).ready(carrier, ROW, 3, Await(str(parts)))


def _asks(n: int) -> Any:
    yield Sleep(n)


def test_a_receive_update_validates_what_its_caller_did_not_and_answers_a_refusal() -> None:
    from replaykit import ReceiveUpdate
    from replaykit.commands.updates import (
        reply_key,
        reply_outcome,
        request_payload,
        request_topic,
    )

    asking = workflow(name="handlers-asks", updates=["ask"])(_asks)

    @asking.validator("ask")
    def positive(n: int) -> None:
        if n <= 0:
            raise ValueError(f"{n} is not positive")

    row = WorkflowRow("asker", "handlers-asks", Status.PENDING)
    carrier = _carrier()
    store = cast(_Carrier, carrier).store
    store.create_workflow(row)
    command = ReceiveUpdate("ask")
    handler = handler_for(command)
    assert handler.wakes(carrier, row, 0, command) == (("message", "asker"),)
    assert handler.ready(carrier, row, 0, command) is None
    topic = request_topic("ask")
    store.send_message("asker", topic, request_payload("u1", "ask", [-1], {}, validated=False))
    store.send_message("asker", topic, request_payload("u2", "ask", [-2], {}, validated=True))
    ready = handler.ready(carrier, row, 0, command)
    # u1 was refused here (answered, gone, no record); u2 its caller validated already.
    assert ready is not None and ready.consume is not None
    assert ready.outcome == Value({"update_id": "u2", "name": "ask", "args": [-2], "kwargs": {}})
    found, data = store.get_event("asker", reply_key("u1"))
    ok, error = reply_outcome(data)
    assert found and not ok and str(error) == "-1 is not positive"
    assert store.load_log("asker") == []
    undeclared = ReceiveUpdate("other")
    refused = handler_for(undeclared).ready(carrier, row, 3, undeclared)
    assert refused is not None and isinstance(refused.outcome, Failure)
    assert refused.outcome.error.qualname == "UnknownUpdate"
    assert "position 3" in refused.outcome.error.message
