"""replaykit/runtime/host.py: what the effect runner shares with its host; the cancel scope.

A scope cancels what an attempt has in flight: callbacks registered on it, and the
scopes below it; `stop_run` says the run itself stopped.
"""

from __future__ import annotations

import random

from replaykit.runtime.host import CancelScope, Suspend, system_entropy


def test_a_cancel_calls_each_callback_once_and_later_ones_at_once() -> None:
    scope = CancelScope()
    heard: list[str] = []
    scope.on_cancel(lambda: heard.append("a"))
    scope.on_cancel(lambda: heard.append("b"))
    scope.cancel()
    scope.cancel()  # a second cancel calls nothing again
    assert heard == ["a", "b"] and scope.cancelled
    scope.on_cancel(lambda: heard.append("late"))  # already cancelled: called now
    assert heard == ["a", "b", "late"]


def test_a_discarded_callback_is_not_called() -> None:
    scope = CancelScope()
    heard: list[str] = []

    def wait_over() -> None:
        heard.append("over")

    scope.on_cancel(wait_over)
    scope.discard(wait_over)
    scope.discard(wait_over)  # discarding twice is harmless
    scope.cancel()
    assert heard == []


def test_a_parents_cancel_reaches_its_children_not_the_other_way() -> None:
    parent = CancelScope()
    child = CancelScope(parent)
    grandchild = CancelScope(child)
    sibling = CancelScope(parent)
    sibling.cancel()
    assert not parent.cancelled and not child.cancelled
    parent.cancel()
    assert child.cancelled and grandchild.cancelled


def test_a_cancelled_child_stops_listening_to_its_parent() -> None:
    parent = CancelScope()
    children = [CancelScope(parent) for _ in range(3)]
    for child in children:
        child.cancel()
    assert parent._callbacks == []  # nothing kept for scopes already over


def test_stop_run_says_the_run_stopped_before_anyone_is_woken() -> None:
    scope = CancelScope()
    seen: list[bool] = []
    scope.on_cancel(lambda: seen.append(scope.run_stopped))
    scope.stop_run()
    assert seen == [True] and scope.cancelled
    closing = CancelScope()
    closing.cancel()
    assert not closing.run_stopped  # the engine closing, or a branch that lost


def test_the_default_entropy_is_the_systems() -> None:
    assert isinstance(system_entropy("r-1", 0, "uuid"), random.SystemRandom)


def test_a_suspension_compares_by_when_and_what_it_waits_for_only() -> None:
    first = Suspend(None, (("message", "r-1"),), ready=lambda: True)
    second = Suspend(None, (("message", "r-1"),), ready=lambda: False)
    assert first == second
