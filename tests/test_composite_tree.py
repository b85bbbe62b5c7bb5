"""replaykit/runtime/composite_tree.py: how a composite is decided, told its leaves' outcomes.

The tree runs nothing and reads no store: the tests tell it outcomes by path and ask
what it decided, what its record keeps, and which child runs lost.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from replaykit import workflow
from replaykit.commands import All, Call, Race, Recv, Sleep, Start, Step
from replaykit.log import AllOutcome, Failure, RaceOutcome, Value
from replaykit.runtime.composite_tree import CompositeTree, over_the_limit
from replaykit.runtime.host import CancelScope
from replaykit.serde import ErrorInfo

BOOM = Failure(ErrorInfo("builtins", "ValueError", "no"))


@workflow(name="tree.child")
def child() -> Generator[Any, Any, int]:
    yield Step("c", lambda: 1)
    return 1


def _tree(command: Race | All, **kw: Any) -> CompositeTree:
    return CompositeTree(command, CancelScope(), lambda _c, path: f"kid{list(path)}", **kw)


def _step(name: str) -> Step[Any]:
    return Step(name, lambda: None)


def test_a_race_is_won_by_the_first_leaf_told_and_keeps_only_it() -> None:
    tree = _tree(Race(Recv("cancel"), _step("charge")))
    assert tree.decide() is None
    tree.outcomes[(1,)] = Value("paid")
    tree.taken[7] = (0,)  # a message the losing Recv took: not consumed
    decided = tree.decide()
    assert decided == (Value(RaceOutcome(1, Value("paid")).to_data()), False)
    assert [leaf.path for leaf in tree.kept()] == [(1,)]
    assert tree.consumed() == []
    assert not tree.is_open(tree.leaf((0,)))  # the race is decided: the Recv lost


def test_an_all_waits_for_every_leaf_or_its_first_failure() -> None:
    tree = _tree(All(_step("a"), _step("b"), _step("c")))
    tree.outcomes[(0,)] = Value(1)
    assert tree.decide() is None
    tree.outcomes[(2,)] = BOOM
    outcome, failed = tree.decide()  # type: ignore[misc]
    assert failed
    assert AllOutcome.from_data(outcome.data) == AllOutcome((Value(1), Value(None), BOOM), 2)  # type: ignore[union-attr]


def test_an_all_that_returns_exceptions_waits_for_every_leaf() -> None:
    tree = _tree(All(_step("a"), _step("b"), return_exceptions=True))
    tree.outcomes[(0,)] = BOOM
    assert tree.decide() is None
    tree.outcomes[(1,)] = Value(2)
    outcome, failed = tree.decide()  # type: ignore[misc]
    assert not failed
    assert AllOutcome.from_data(outcome.data) == AllOutcome((BOOM, Value(2)))  # type: ignore[union-attr]


def test_a_decided_inner_composite_closes_its_leaves_and_cancels_their_steps() -> None:
    tree = _tree(All(Race(_step("fast"), _step("slow")), _step("other")))
    inner = tree.leaf((0,))
    assert inner.scope is not None and not inner.scope.cancelled
    tree.outcomes[(0, 0)] = Value("fast")
    assert tree.decide() is None  # the All still waits for (1,)
    assert inner.scope.cancelled  # the slow step lost
    assert not tree.is_open(tree.leaf((0, 1)))
    assert tree.is_open(tree.leaf((1,)))


def test_steps_an_earlier_attempt_finished_are_not_run_again() -> None:
    done = {(0,): Value(1), (1,): Value("a recv's, ignored")}
    tree = _tree(All(_step("a"), Recv("go")), steps_done=done)
    assert tree.outcomes == {(0,): Value(1)}
    assert tree.finished_steps() == {(0,): Value(1)}


def test_the_child_runs_a_decision_leaves_behind() -> None:
    tree = _tree(Race(Call(child), Start(child), Sleep(60)))
    assert [leaf.target for leaf in tree.leaves] == ["kid[0]", "kid[1]", None]
    tree.outcomes[(2,)] = Value(None)  # the timer won
    tree.decide()
    assert tree.losing_children() == ["kid[0]", "kid[1]"]
    kept_start = _tree(All(Start(child), _step("s")))
    kept_start.outcomes.update({(0,): Value("kid[0]"), (1,): Value(1)})
    kept_start.decide()
    assert kept_start.losing_children() == []  # a started child is kept unless a race lost it


def test_a_record_over_the_payload_limit_fails_naming_it() -> None:
    assert over_the_limit(Value("x" * 10), 100, "the All at position 3") is None
    assert over_the_limit(BOOM, 1, "the All at position 3") is None
    failure = over_the_limit(Value("x" * 200), 100, "the All at position 3")
    assert failure is not None and failure.error.qualname == "PayloadTooLarge"
    assert failure.error.message.startswith("the All at position 3 is 202 bytes encoded")
