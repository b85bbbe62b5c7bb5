"""The testing kit's external completions: `run(..., completions=[Completion(...)])`.

A completion names the `Awakeable` whose token it completes, takes the tokens of that
name in order, arrives `after` that long on virtual time from the token's handing out,
goes through production's checks (a refused one is reported), and survives the kit's
crashes, replays and determinism checks.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from replaykit import (
    All,
    Await,
    Awakeable,
    AwakeableFailed,
    Call,
    ContinueAsNew,
    Race,
    Sleep,
    Status,
    Step,
    workflow,
)
from replaykit.testing import Completion, check_determinism, run


class Withdrawn(Exception):
    pass


def notify(token: str) -> str:
    return "sent"


@workflow(name="kit_completions.refund")
def refund(amount: int):
    token = yield Awakeable("approval")
    yield Step("notify", notify, token)
    winner, decision = yield Race(Await(token), Sleep(timedelta(days=2)))
    if winner == 1:
        return "expired"
    return f"refunded {amount}" if decision["ok"] else "refused"


@workflow(name="kit_completions.caught")
def caught():
    token = yield Awakeable("approval")
    try:
        return (yield Await(token))
    except AwakeableFailed as exc:
        return f"failed: {exc}"
    except Withdrawn as exc:
        return f"withdrawn: {exc}"


@workflow(name="kit_completions.reminders")
def reminders(count: int):
    answers = []
    for _ in range(count):
        token = yield Awakeable("reminder")
        answers.append((yield Await(token, timeout=3600)))
    return answers


@workflow(name="kit_completions.child")
def hands_out_and_ends():
    yield Awakeable("late")
    return "done"


@workflow(name="kit_completions.parent")
def parent():
    child = yield Call(hands_out_and_ends)
    yield Sleep(timedelta(hours=1))
    return child


@workflow(name="kit_completions.generations")
def generations(token: str | None = None):
    if token is None:
        token = yield Awakeable("approval")
        yield ContinueAsNew(token)
    return (yield Await(token))


STEPS: dict[str, Any] = {"notify": "sent"}


def test_a_completion_arrives_after_the_token_was_handed_out() -> None:
    result = run(
        refund,
        30,
        steps=STEPS,
        completions=[Completion("approval", {"ok": True}, after=timedelta(hours=3))],
    )
    assert result.unwrap() == "refunded 30"
    assert result.elapsed == timedelta(hours=3)
    assert result.commands[0] == ("awakeable", "approval")
    assert result.undelivered == ()


def test_a_completion_at_the_timers_instant_wins_the_race() -> None:
    result = run(
        refund, 30, steps=STEPS, completions=[Completion("approval", {"ok": False}, after=172800)]
    )
    assert result.unwrap() == "refused"


def test_a_completion_after_the_deadline_is_not_taken() -> None:
    result = run(
        refund, 30, steps=STEPS, completions=[Completion("approval", {"ok": True}, after=172801)]
    )
    assert result.unwrap() == "expired"
    assert result.elapsed == timedelta(days=2)


def test_error_fails_the_await() -> None:
    assert run(caught, completions=[Completion("approval", error="no")]).unwrap() == "failed: no"
    failed = run(caught, completions=[Completion("approval", error=Withdrawn("by the customer"))])
    assert failed.unwrap() == "withdrawn: by the customer"


def test_completions_of_one_name_take_its_tokens_in_order() -> None:
    result = run(
        reminders,
        3,
        completions=[
            Completion("reminder", "first", after=10),
            Completion("reminder", "second", after=20),
        ],
    )
    # The third reminder's Await times out: no completion was left for it.
    assert result.unwrap() == ["first", "second", None]
    assert result.elapsed == timedelta(seconds=30 + 3600)


def test_a_completion_refused_when_due_is_reported() -> None:
    completion = Completion("late", "too late", after=60, to="kit_completions.parent:test:0")
    result = run(parent, completions=[completion])
    assert result.unwrap() == "done"
    [(refused, why)] = result.undelivered
    assert refused == completion
    assert "is SUCCESS, so nothing waits" in why


def test_a_token_carried_into_the_next_generation_is_completed() -> None:
    result = run(generations, completions=[Completion("approval", "carried", after=5)])
    assert result.unwrap() == "carried"
    assert len(result.generations) == 1


@pytest.mark.parametrize("warm", [False, True])
def test_determinism_with_completions(warm: bool) -> None:
    report = check_determinism(
        refund,
        30,
        steps=STEPS,
        completions=[Completion("approval", {"ok": True}, after=timedelta(hours=3))],
    )
    assert report.reference.unwrap() == "refunded 30"
    assert report.prefix_runs > 0 and report.crash_runs > 0
    result = run(
        reminders,
        2,
        warm=warm,
        completions=[Completion("reminder", 1, after=1), Completion("reminder", 2, after=2)],
    )
    assert result.unwrap() == [1, 2]


def test_a_crash_at_any_commit_ends_alike() -> None:
    completions = [Completion("approval", {"ok": True}, after=600)]
    clean = run(refund, 30, steps=STEPS, completions=completions)
    for commit in range(len(clean.log) + 2):  # the Race's start and the finish commit too
        crashed = run(refund, 30, steps=STEPS, completions=completions, crash_at=commit)
        assert (crashed.status, crashed.result) == (Status.SUCCESS, "refunded 30"), commit
        assert crashed.crashes, f"no commit {commit} to crash at"
        # The same token after the crash (the kit's entropy is seeded), the same outcomes.
        assert _outcomes(crashed) == _outcomes(clean), commit


def _outcomes(result: Any) -> list[Any]:
    return [(r.kind, r.name, r.outcome) for r in result.log]


def test_completion_refuses_bad_arguments() -> None:
    with pytest.raises(TypeError, match="name the Awakeable"):
        Completion("")
    with pytest.raises(ValueError, match="not both"):
        Completion("a", 1, error="x")
    with pytest.raises(ValueError, match="before the token was handed out"):
        Completion("a", after=-1)
    with pytest.raises(TypeError, match="a message \\(str\\) or an Exception"):
        Completion("a", error=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="completions= takes"):
        run(caught, completions=["approval"])  # type: ignore[list-item]


@workflow(name="kit_completions.both")
def both():
    first = yield Awakeable("first")
    second = yield Awakeable("second")
    return (yield All(Await(first), Await(second)))


def test_all_waits_for_every_completion() -> None:
    result = run(
        both,
        completions=[Completion("second", "b", after=30), Completion("first", "a", after=90)],
    )
    assert result.unwrap() == ["a", "b"]
    assert result.elapsed == timedelta(seconds=90)
    assert result.commands[-1][0] == "all"
