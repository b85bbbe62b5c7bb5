"""Command construction: what users type, and the errors they get for typos."""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any

import pytest

from replaykit import (
    All,
    Call,
    DeprecatePatch,
    Engine,
    GetEvent,
    Now,
    Patch,
    Race,
    Random,
    Recv,
    Retry,
    Send,
    SetEvent,
    Sleep,
    Step,
    Transaction,
    Uuid,
    Wait,
    workflow,
)
from replaykit.commands import Command, Start, facts_of


def f(x: int) -> int:
    return x


def test_step_keeps_args_kwargs_and_options() -> None:
    step = Step("s", f, 1, retry=Retry(3), timeout=timedelta(seconds=2), flag=True)
    assert step.name == "s" and step.args == (1,) and step.kwargs == {"flag": True}
    assert step.retry == Retry(3) and step.timeout == 2.0


def test_step_name_must_come_first() -> None:
    with pytest.raises(TypeError, match="Step\\('charge', charge_card"):
        Step(f, 1)  # type: ignore[arg-type]


def test_durations_accept_timedelta_or_seconds_and_refuse_negatives() -> None:
    assert Sleep(timedelta(minutes=1)).seconds == 60
    assert Sleep(1.5).duration == timedelta(seconds=1.5)
    with pytest.raises(ValueError, match="zero or positive"):
        Sleep(-1)
    with pytest.raises(TypeError, match="timedelta or a number"):
        Sleep("5")  # type: ignore[arg-type]


def test_retry_backoff_is_capped() -> None:
    retry = Retry(max_attempts=10, interval=1, backoff=2, max_interval=5)
    assert [retry.delay_before(n) for n in range(2, 7)] == [1, 2, 4, 5, 5]
    assert retry.should_retry(ValueError(), 1)
    assert not retry.should_retry(ValueError(), 10)
    only_keys = Retry(max_attempts=3, retry_on=KeyError)
    assert only_keys.should_retry(KeyError(), 1) and not only_keys.should_retry(ValueError(), 1)
    with pytest.raises(ValueError):
        Retry(max_attempts=0)


def test_composites_refuse_what_they_cannot_run() -> None:
    with pytest.raises(ValueError, match="at least one"):
        All()
    with pytest.raises(TypeError, match="replaykit commands"):
        All(f)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on its own"):
        All(Transaction("t", f))


def test_composite_name_lists_children_so_replay_notices_changes() -> None:
    assert Race(Recv("go"), Sleep(1)).name == "recv:go|sleep:sleep"


def test_composites_nest() -> None:
    inner = Race(Recv("go"), Sleep(1))
    outer = All(inner, Step("s", f, 1))
    assert facts_of(inner).in_composite and facts_of(All(Sleep(1))).in_composite
    assert outer.children[0] is inner
    assert outer.name == "race(recv:go|sleep:sleep)|step:s"
    assert Race(All(Step("a", f), Step("b", f)), Sleep(60)).name == (
        "all(step:a|step:b)|sleep:sleep"
    )
    # A nested child's boundaries are in the name: these trees differ.
    assert Race(All(Step("a", f), Step("b", f))).name != Race(All(Step("a", f)), Step("b", f)).name
    # A changed inner child changes the outer name (replay compares it), and its
    # arguments change the outer digest (strict replay compares that).
    assert All(Race(Recv("stop"), Sleep(1)), Step("s", f, 1)).name != outer.name
    assert All(Race(Recv("go"), Sleep(2)), Step("s", f, 1)).describe_args() != (
        outer.describe_args()
    )
    assert Race(Race(Race(Sleep(1)))).name == "race(race(sleep:sleep))"


@pytest.mark.parametrize(
    "leaf",
    [
        Send("w", 1),
        SetEvent("k", 1),
        Transaction("t", f),
        Patch("p"),
        DeprecatePatch("p"),
    ],
    ids=lambda c: type(c).__name__,
)
def test_forbidden_leaves_are_refused_at_any_depth(leaf: Command) -> None:
    for build in (
        lambda: Race(leaf, Sleep(1)),
        lambda: All(Sleep(1), leaf),
        lambda: Race(All(Sleep(1), leaf), Sleep(1)),
        lambda: All(Race(Sleep(1), All(Recv("x"), leaf))),
    ):
        with pytest.raises(TypeError, match="cannot hold"):
            build()


def test_start_needs_a_registered_workflow() -> None:
    def plain() -> None:
        pass

    with pytest.raises(TypeError, match="@workflow"):
        Start(plain)

    @workflow(name="commands-test-child")
    def child():  # type: ignore[no-untyped-def]
        yield Sleep(0)

    assert Start(child, 1).name == "commands-test-child"


def test_every_command_is_a_command() -> None:
    assert isinstance(Step("s", f), Command)


def test_composites_refuse_at_construction_what_cannot_run_inside_them() -> None:
    from replaykit import DeprecatePatch, Patch, Send, SetEvent

    # Each of these was once accepted when built and failed only when run.
    for child in (Send("other", 1), SetEvent("k", 1), Patch("p"), DeprecatePatch("p")):
        for composite in (Race, All):
            with pytest.raises(TypeError, match=type(child).__name__) as caught:
                composite(child, Sleep(1))
            assert "on its own" in str(caught.value)


def test_every_command_has_a_row_in_the_command_table() -> None:
    import replaykit.commands as commands

    for name in commands.__all__:
        value = getattr(commands, name)
        if isinstance(value, type) and issubclass(value, commands.Command):
            if value in (commands.Command, commands.Composite, commands.Yields):
                continue
            facts = commands.facts_of(object.__new__(value))
            # A waiting command either has a notification, a deadline or both.
            if facts.waits and value not in (commands.Race, commands.All):
                assert facts.wakes_on or facts.timeout_field, name
            assert facts.in_composite or facts.why_not_child, name


# -- `yield from` every command ------------------------------------------------------------


@workflow(name="commands-yield-from-child")
def yield_from_child(n: int) -> Generator[Any, Any, int]:
    yield from SetEvent("stage", f"at {n}")
    return n * 2


@workflow(name="commands-yield-from-parent")
def yield_from_parent(n: int) -> Generator[Any, Any, dict[str, Any]]:
    called = yield from Call(yield_from_child, n)
    bound = yield from Call(yield_from_child.bind(n + 1))
    started = yield from Start(yield_from_child, n + 2)
    waited = yield from Wait(started)
    stage = yield from GetEvent(started, "stage", timeout=30)
    message = yield from Recv("go")
    nothing = yield from Recv("never", timeout=0.2)
    won = yield from Race(Recv("go"), Sleep(60))
    both = yield from All(Now(), Random(), Uuid())
    slept = yield from Sleep(0)
    return {
        "called": called,
        "bound": bound,
        "started": started,
        "waited": waited,
        "stage": stage,
        "message": message,
        "nothing": nothing,
        "won": list(won),
        "kinds": [type(v).__name__ for v in both],
        "slept": slept,
    }


def _expected(workflow_id: str, started: str) -> dict[str, Any]:
    return {
        "called": 6,
        "bound": 8,
        "started": started,
        "waited": 10,
        "stage": "at 5",
        "message": "first",
        "nothing": None,
        "won": [0, "second"],
        "kinds": ["datetime", "float", "UUID"],
        "slept": None,
    }


def test_yield_from_every_command_in_the_testing_kit() -> None:
    from replaykit.testing import Message, run

    result = run(
        yield_from_parent,
        3,
        messages=[Message("go", "first"), Message("go", "second")],
        workflow_id="yf-kit",
    )
    assert result.error is None, result.error
    assert result.result is not None
    assert result.result == _expected("yf-kit", result.result["started"])
    # One position per command, as with `yield`: the iterator adds none of its own.
    assert [r.kind for r in result.log.records] == [
        "call",
        "call",
        "start",
        "wait",
        "get_event",
        "recv",
        "recv",
        "race",
        "all",
        "sleep",
    ]
    # Each record's call site is the workflow's own line, not the command's iterator.
    assert all("test_commands.py" in r.call_site for r in result.log.records)


def test_yield_from_every_command_on_an_engine() -> None:
    with Engine("memory://") as engine:
        handle = engine.start(yield_from_parent, 3, workflow_id="yf-engine")
        engine.send("yf-engine", "first", topic="go")
        engine.send("yf-engine", "second", topic="go")
        value = handle.result(timeout=30)
        assert value == _expected("yf-engine", value["started"])
        assert engine.run(yield_from_child.bind(1), workflow_id="yf-engine-2", timeout=30) == 2


def test_a_command_yields_itself_once_and_returns_what_is_sent() -> None:
    command = Recv("t")
    iterator = iter(command)
    assert next(iterator) is command
    with pytest.raises(StopIteration) as stopped:
        iterator.send("the message")
    assert stopped.value.value == "the message"
