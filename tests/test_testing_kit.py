"""replaykit.testing: run, replay, check_determinism, strategies, and the docs' example."""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import itertools
import re
import sys
import threading
import time
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replaykit.testing
from replaykit import (
    All,
    Call,
    Log,
    NonDeterminismError,
    Now,
    Patch,
    Race,
    Random,
    Recv,
    Retry,
    Send,
    Sleep,
    Status,
    Step,
    Uuid,
    VirtualClock,
    context,
    workflow,
)
from replaykit import testing as rt
from replaykit.testing import Message, ResultMismatch, sequence
from replaykit.testing import strategies as rks
from replaykit.testing.determinism import _check_calls, _Point
from replaykit.testing.strategies import GeneratedFake

ROOT = Path(__file__).resolve().parent.parent


class Declined(Exception):
    pass


def must_not_run(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"a real step body ran with {args} {kwargs}")


def shout(text: str) -> str:
    return text.upper()


@workflow(name="kit.checkout")
def checkout(order_id: str, amount: int) -> Generator[Any, Any, str]:
    charge = yield Step("charge", must_not_run, order_id, amount, retry=Retry(3, interval=60))
    winner, message = yield Race(Recv("confirm"), Sleep(timedelta(days=1)))
    if winner == 1:
        yield Step("refund", must_not_run, charge)
        return "expired"
    yield Step("ship", must_not_run, order_id)
    return f"shipped {charge} for {message['by']}"


# -- run(): fakes ------------------------------------------------------------------------------


def test_a_plain_value_fake_is_returned_and_real_steps_never_run() -> None:
    result = rt.run(
        checkout,
        "o-1",
        100,
        steps={"charge": "ch_1", "ship": None},
        messages=[Message("confirm", {"by": "ann"}, at=timedelta(hours=3))],
    )
    assert result.status is Status.SUCCESS
    assert result.ok
    assert result.result == "shipped ch_1 for ann"
    assert result.error is None
    assert result.commands == [
        ("step", "charge"),
        ("race", "recv:confirm|sleep:sleep"),
        ("step", "ship"),
    ]
    assert result.calls["charge"] == [rt.StepCall(("o-1", 100), {})]
    assert result.elapsed == timedelta(hours=3)


def test_a_callable_fake_gets_the_steps_arguments() -> None:
    seen: list[tuple[Any, ...]] = []

    def fake_charge(order_id: str, amount: int) -> str:
        seen.append((order_id, amount))
        return f"ch_{order_id}_{amount}"

    result = rt.run(checkout, "o-9", 7, steps={"charge": fake_charge, "refund": "re"})
    assert seen == [("o-9", 7)]
    assert result.result == "expired"
    assert result.calls["refund"] == [rt.StepCall(("ch_o-9_7",), {})]


def test_an_exception_instance_is_raised_and_recorded_as_the_failure() -> None:
    result = rt.run(checkout, "o-1", 100, steps={"charge": Declined("insufficient funds")})
    assert result.status is Status.ERROR
    assert result.result is None
    assert type(result.error) is Declined
    assert str(result.error) == "insufficient funds"
    # Declined is not retried away: Retry(3) runs it three times.
    assert len(result.calls["charge"]) == 3
    with pytest.raises(Declined, match="insufficient funds"):
        result.unwrap()
    notes = getattr(result.error, "__notes__", [])
    assert any("Traceback recorded in the workflow" in note for note in notes)


def test_an_exception_class_is_raised() -> None:
    result = rt.run(checkout, "o-1", 100, steps={"charge": Declined})
    assert type(result.error) is Declined
    assert str(result.error) == ""


def test_sequence_gives_successive_outcomes_to_retries() -> None:
    result = rt.run(
        checkout,
        "o-1",
        100,
        steps={"charge": sequence(TimeoutError("slow"), TimeoutError("slow"), "ch_3"), "refund": 1},
    )
    assert result.result == "expired"
    assert len(result.calls["charge"]) == 3
    assert result.log[0].attempts == 3
    # Two retry back-offs of 60s and 120s passed on virtual time before the race began.
    assert result.elapsed == timedelta(days=1, seconds=180)


def test_sequence_past_its_end_fails_the_step_with_a_clear_message() -> None:
    result = rt.run(checkout, "o-1", 100, steps={"charge": sequence(TimeoutError("x"))})
    assert isinstance(result.error, AssertionError)
    assert "step 'charge' was called 3 times" in str(result.error)


def test_async_steps_and_async_fakes_run() -> None:
    async def fake_charge(order_id: str, amount: int) -> str:
        return "ch_async"

    result = rt.run(checkout, "o-1", 1, steps={"charge": fake_charge, "refund": "r"})
    assert result.result == "expired"
    assert len(result.calls["charge"]) == 1


# -- run(): virtual time and messages ----------------------------------------------------------


@workflow(name="kit.sleepy")
def sleepy() -> Generator[Any, Any, list[str]]:
    before = yield Now()
    yield Sleep(timedelta(days=30))
    after = yield Now()
    return [before.isoformat(), after.isoformat()]


def test_a_thirty_day_sleep_takes_no_wall_time() -> None:
    start = datetime(2031, 5, 1, tzinfo=UTC)
    clock = VirtualClock(start)
    began = time.monotonic()
    result = rt.run(sleepy, clock=clock)
    assert time.monotonic() - began < 5
    assert result.result == [start.isoformat(), (start + timedelta(days=30)).isoformat()]
    assert result.elapsed == timedelta(days=30)
    assert result.started_at == start
    assert clock.now() == start + timedelta(days=30)  # the caller's clock was moved on


def test_run_takes_a_start_datetime_and_refuses_naive_ones() -> None:
    start = datetime(2032, 1, 1, tzinfo=UTC)
    assert rt.run(sleepy, clock=start).started_at == start
    with pytest.raises(ValueError, match="timezone-aware"):
        rt.run(sleepy, clock=datetime(2032, 1, 1))


def test_a_message_after_the_deadline_loses_the_race() -> None:
    late = Message("confirm", {"by": "bob"}, at=timedelta(days=2))
    result = rt.run(checkout, "o-1", 100, steps={"charge": "c", "refund": "r"}, messages=[late])
    assert result.result == "expired"
    assert result.elapsed == timedelta(days=1)


def test_a_message_due_with_the_timer_is_delivered_first() -> None:
    tie = Message("confirm", {"by": "tie"}, at=timedelta(days=1))
    result = rt.run(checkout, "o-1", 100, steps={"charge": "c", "ship": "p"}, messages=[tie])
    assert result.result == "shipped c for tie"


@workflow(name="kit.recv_or_timeout")
def recv_or_timeout(seconds: int) -> Generator[Any, Any, str]:
    message = yield Recv("confirm", timeout=seconds)
    return "timed out" if message is None else f"got {message}"


@workflow(name="kit.sleep_or_recv")
def sleep_or_recv(seconds: int) -> Generator[Any, Any, str]:
    winner, value = yield Race(Sleep(seconds), Recv("confirm"))
    return "slept" if winner == 0 else f"got {value}"


@pytest.mark.parametrize("wf", [recv_or_timeout, sleep_or_recv])
def test_a_message_at_a_deadline_wins_every_time(wf: Any) -> None:
    # The message is in the inbox before the clock shows the instant, so no
    # thread that sees the deadline (timer, poller) can beat it.
    for seconds in range(1, 41):
        tie = Message("confirm", seconds, at=timedelta(seconds=seconds))
        assert rt.run(wf, seconds, messages=[tie]).result == f"got {seconds}"
    late = Message("confirm", 0, at=timedelta(seconds=5, microseconds=1))
    assert rt.run(wf, 5, messages=[late]).result in ("timed out", "slept")


@workflow(name="kit.inbox")
def inbox(count: int) -> Generator[Any, Any, list[Any]]:
    got = []
    for _ in range(count):
        message = yield Recv("in")
        stamp = yield Now()
        got.append([message, stamp.isoformat()])
    return got


def test_messages_arrive_in_time_order_and_fifo_at_equal_times() -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    result = rt.run(
        inbox,
        3,
        messages=[
            Message("in", "c", at=7200),
            Message("in", "a", at=timedelta(hours=1)),
            Message("in", "b", at=start + timedelta(hours=1)),
        ],
    )
    hour = (start + timedelta(hours=1)).isoformat()
    assert result.result == [
        ["a", hour],
        ["b", hour],
        ["c", (start + timedelta(hours=2)).isoformat()],
    ]


def test_messages_at_time_zero_are_waiting_before_the_run_starts() -> None:
    result = rt.run(inbox, 2, messages=[Message("in", 1), Message("in", 2)])
    assert [m for m, _ in result.unwrap()] == [1, 2]
    assert result.elapsed == timedelta(0)


def test_a_run_that_waits_forever_returns_pending_and_says_on_what() -> None:
    result = rt.run(inbox, 2, messages=[Message("in", "only one")])
    assert result.status is Status.PENDING
    assert result.result is None and result.error is None
    assert result.waiting_on() == "Recv('in') at position 2"
    with pytest.raises(AssertionError, match=r"did not finish.*waiting on Recv\('in'\)"):
        result.unwrap()


def test_message_validation() -> None:
    with pytest.raises(ValueError, match="before the run started"):
        Message("t", 1, at=-1)
    with pytest.raises(ValueError, match="timezone-aware"):
        Message("t", 1, at=datetime(2030, 1, 1))
    with pytest.raises(TypeError, match=r"messages= takes"):
        rt.run(inbox, 1, messages=[("in", 1)])  # type: ignore[list-item]


@workflow(name="kit.child")
def child(n: int) -> Generator[Any, Any, int]:
    bonus = yield Recv("bonus")
    yield Send(context().workflow_id.rsplit(":", 1)[0], n + bonus, topic="from-child")
    return n * 10


@workflow(name="kit.parent")
def parent(n: int) -> Generator[Any, Any, list[int]]:
    result = yield Call(child, n)
    note = yield Recv("from-child")
    return [result, note]


def test_children_run_and_messages_can_target_them() -> None:
    bonus = Message("bonus", 100, at=timedelta(hours=1), to="kit.parent:test:0")
    result = rt.run(parent, 4, messages=[bonus])
    assert result.result == [40, 104]
    assert result.undelivered == ()


def test_a_message_to_a_run_that_does_not_exist_is_reported() -> None:
    result = rt.run(inbox, 0, messages=[Message("in", 1, to="nobody")])
    assert result.ok
    [(message, why)] = result.undelivered
    assert message.to == "nobody" and "nobody" in why


# -- run(): strictness, seeds, crashes, timeouts -----------------------------------------------

_drift = itertools.count()


@workflow(name="kit.drifting_args")
def drifting_args() -> Generator[Any, Any, str]:
    # Each activation (the first, and the replay after the sleep) passes another argument.
    yield Step("log", shout, f"call {next(_drift)}")
    yield Sleep(10)
    return "done"


def test_strict_mode_is_on_by_default_and_parks_argument_drift() -> None:
    result = rt.run(drifting_args, real_steps={"log"})
    assert result.status is Status.PARKED
    assert isinstance(result.error, NonDeterminismError)
    assert "different arguments" in str(result.error)
    assert rt.run(drifting_args, strict=False, real_steps={"log"}).result == "done"


@workflow(name="kit.entropy")
def entropy() -> Generator[Any, Any, list[str]]:
    r = yield Random()
    u = yield Uuid()
    return [repr(r), str(u)]


def test_random_and_uuid_are_reproducible_from_the_seed() -> None:
    first = rt.run(entropy).unwrap()
    assert rt.run(entropy).unwrap() == first
    assert rt.run(entropy, seed=1).unwrap() != first
    assert 0 <= float(first[0]) < 1


def test_crash_at_reruns_only_the_step_in_flight() -> None:
    result = rt.run(
        checkout,
        "o-1",
        100,
        steps={"charge": "ch_1", "ship": "p"},
        messages=[Message("confirm", {"by": "ann"}, at=60)],
        crash_at=0,
    )
    assert result.result == "shipped ch_1 for ann"
    assert [c.describe() for c in result.crashes] == [
        "step 'charge' at position 0 of workflow id 'kit.checkout:test'"
    ]
    assert len(result.calls["charge"]) == 2  # ran, crashed before its record, ran again
    assert len(result.calls["ship"]) == 1


def test_a_crash_after_retries_keeps_the_runs_timeline() -> None:
    steps = {"charge": sequence(TimeoutError("a"), TimeoutError("b"), "ch"), "refund": "r"}
    # Commit 0 is the first back-off's pending record (attempt 1 failed), 1 the second
    # back-off's, written over it (attempt 2 failed); 2 the charge's outcome.
    result = rt.run(checkout, "o-1", 1, steps=steps, crash_at=2)
    assert [(c.name, c.completes) for c in result.crashes] == [("charge", True)]
    # Three attempts; the crash lost the third one's record. The back-offs are durable,
    # so the two failed attempts stay made: only the third runs again.
    assert len(result.calls["charge"]) == 4
    assert result.log[0].attempts == 3
    # The lost attempts' back-off is spent again, not added: the deadline is where it was.
    assert result.elapsed == timedelta(days=1, seconds=180)
    assert result.log[1].wake_at == result.started_at + timedelta(days=1, seconds=180)


def test_a_crash_at_a_later_back_off_repeats_only_the_attempt_it_lost() -> None:
    from replaykit import step_context

    made: list[int] = []

    def down(*args: Any) -> str:
        made.append(step_context().attempt)
        raise TimeoutError("down")

    def charged(*args: Any) -> str:
        made.append(step_context().attempt)
        return "ch"

    steps = {"charge": sequence(down, down, charged), "refund": "r"}
    # Commit 1 writes the second back-off over the first: the crash loses attempt 2's
    # failure, so attempt 2 is made again, once, and attempt 1 is not.
    result = rt.run(checkout, "o-1", 1, steps=steps, crash_at=1)
    assert [(c.name, c.completes) for c in result.crashes] == [("charge", False)]
    assert made == [1, 2, 2, 3]
    assert result.log[0].attempts == 3


def test_several_crashes_including_at_the_finish() -> None:
    # Commit attempts: 0 charge, 1 race start (crash), 2 again, 3 race end (crash), 4 again,
    # 5 refund (crash), 6 again, 7 finish (crash), 8 again.
    result = rt.run(
        checkout, "o-1", 100, steps={"charge": "c", "refund": "r"}, crash_at=[1, 3, 5, 7]
    )
    assert result.result == "expired"
    kinds = [(c.kind, c.completes) for c in result.crashes]
    assert kinds == [("race", False), ("race", True), ("step", True), ("finish", True)]
    assert len(result.calls["refund"]) == 2


def test_crash_at_rejects_negative_numbers() -> None:
    with pytest.raises(ValueError, match="crash_at"):
        rt.run(checkout, "o", 1, crash_at=-1)


def test_a_step_blocking_in_real_time_hits_the_timeout() -> None:
    release = threading.Event()

    def stuck(*_: Any) -> str:
        release.wait(10)
        return "late"

    try:
        with pytest.raises(TimeoutError, match=r"neither finished nor blocked within 0\.3s"):
            rt.run(checkout, "o-1", 1, steps={"charge": stuck}, timeout=0.3)
    finally:
        release.set()


def test_run_refuses_a_plain_function() -> None:
    with pytest.raises(TypeError, match=r"decorated with @replaykit\.workflow"):
        rt.run(shout, "x")  # type: ignore[arg-type]


# -- logs as JSON and replay() -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Quote:
    price: int
    tags: tuple[str, ...]


class Tier(enum.Enum):
    GOLD = "gold"


def quote(item: str) -> Quote:
    return Quote(len(item), ("a", "b"))


def tier(price: int) -> Tier:
    return Tier.GOLD


@workflow(name="kit.typed")
def typed(item: str) -> Generator[Any, Any, str]:
    q = yield Step("quote", quote, item)
    t = yield Step("tier", tier, q.price)
    assert isinstance(q, Quote) and isinstance(q.tags, tuple) and t is Tier.GOLD
    return f"{q.price}:{t.value}"


def test_a_log_round_trips_through_json_and_replays_from_text_and_path(tmp_path: Path) -> None:
    result = rt.run(typed, "book", real_steps={"quote", "tier"})
    text = result.log.to_json()
    assert Log.from_json(text) == result.log
    from_text = rt.replay(typed, text)
    assert from_text.result == "4:gold" and from_text.finished
    path = tmp_path / "typed.json"
    path.write_text(text, encoding="utf-8")
    assert rt.replay(typed, path).result == "4:gold"
    assert rt.replay(typed, str(path)).result == "4:gold"


def test_replay_runs_nothing_and_reports_what_it_replayed() -> None:
    log = rt.run(checkout, "o-1", 5, steps={"charge": "c", "refund": "r"}).log
    replayed = rt.replay(checkout, log)
    assert replayed.finished and replayed.reached_end
    assert replayed.status is Status.SUCCESS
    assert replayed.result == "expired"
    assert replayed.positions == 3
    assert [c[1:] for c in replayed.commands] == [
        ("step", "charge"),
        ("race", "recv:confirm|sleep:sleep"),
        ("step", "refund"),
    ]


def test_replay_of_a_recorded_failure_reraises_it() -> None:
    log = rt.run(checkout, "o-1", 5, steps={"charge": Declined("no")}).log
    replayed = rt.replay(checkout, log)
    assert replayed.status is Status.ERROR
    assert type(replayed.error) is Declined


behaviour: dict[str, Any] = {}


@workflow(name="kit.evolving")
def evolving(n: int) -> Generator[Any, Any, Any]:
    first = "rename" if behaviour.get("rename") else "first"
    a = yield Step(first, shout, "a")
    if behaviour.get("early"):
        return a
    b = yield Step("second", shout, behaviour.get("arg", "b"))
    if behaviour.get("patched") and (yield Patch("add-third")):
        yield Step("third", shout, "c")
    if behaviour.get("extra"):
        yield Step("extra", shout, "d")
    if behaviour.get("fail"):
        raise ValueError(behaviour["fail"])
    if behaviour.get("wait"):
        yield Recv("more")
    return [a, b, n * behaviour.get("factor", 1)]


@pytest.fixture
def evolve() -> Generator[dict[str, Any], None, None]:
    behaviour.clear()
    yield behaviour
    behaviour.clear()


def test_replay_reports_a_renamed_command_with_position_and_sites(evolve: dict[str, Any]) -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    evolve["rename"] = True
    with pytest.raises(NonDeterminismError) as info:
        rt.replay(evolving, log)
    error = info.value
    assert error.position == 0
    assert error.yielded == "step 'rename'" and error.recorded == "step 'first'"
    assert "test_testing_kit.py:" in error.yielded_at
    assert "Patch" in str(error)


def test_replay_reports_an_early_return(evolve: dict[str, Any]) -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    evolve["early"] = True
    with pytest.raises(NonDeterminismError, match=r"returned here, but the log records 1 more"):
        rt.replay(evolving, log)


def test_replay_reports_a_command_past_the_end_of_a_finished_run(evolve: dict[str, Any]) -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    evolve["extra"] = True
    with pytest.raises(NonDeterminismError, match=r"recorded run finished \(SUCCESS\) after 2"):
        rt.replay(evolving, log)


def test_replay_of_an_unfinished_run_stops_where_it_waited(evolve: dict[str, Any]) -> None:
    evolve["wait"] = True
    log = rt.run(evolving, 2, real_steps=True).log
    assert log.status == "PENDING"
    replayed = rt.replay(evolving, log)
    assert not replayed.finished and replayed.reached_end
    assert replayed.status is Status.PENDING
    assert replayed.next_command == "Recv('more') at position 2"
    # The run suspended in that Recv, which recorded its start: a command
    # inserted before it is drift, not new work after the end of the log.
    evolve["extra"] = True
    with pytest.raises(NonDeterminismError, match="position 2"):
        rt.replay(evolving, log)


def test_replay_stops_at_a_pending_timed_command() -> None:
    log = rt.run(checkout, "o-1", 1, steps={"charge": "c", "refund": "r"}).log
    # The run as it stood while the race waited: its start recorded, no outcome yet.
    waiting = Log.of(
        [log[0], attrs.evolve(log[1], outcome=None)],
        workflow_name=log.workflow_name,
        args=log.args,
        status="PENDING",
    )
    replayed = rt.replay(checkout, waiting)
    assert replayed.next_command == "Race(Recv('confirm'), Sleep('sleep')) at position 1"
    assert replayed.positions == 2 and replayed.reached_end and not replayed.finished
    pending = rt.run(inbox, 1).log  # a waiting Recv records its start, like a timed one
    assert pending[0].kind == "recv" and pending[0].outcome is None
    assert rt.replay(inbox, pending).positions == 1


def test_replay_compares_results_of_finished_runs(evolve: dict[str, Any]) -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    evolve["factor"] = 3
    with pytest.raises(
        ResultMismatch, match=r'returned \["A","B",6\] but the recorded run returned'
    ):
        rt.replay(evolving, log)
    assert rt.replay(evolving, log, check_result=False).result == ["A", "B", 6]
    evolve["factor"] = 1
    evolve["fail"] = "boom"
    with pytest.raises(
        ResultMismatch, match="raised ValueError: boom but the recorded run succeeded"
    ):
        rt.replay(evolving, log)


def test_replay_compares_recorded_failures(evolve: dict[str, Any]) -> None:
    evolve["fail"] = "one"
    log = rt.run(evolving, 2, real_steps=True).log
    assert rt.replay(evolving, log).status is Status.ERROR
    evolve["fail"] = "two"
    with pytest.raises(ResultMismatch, match="raised ValueError: two but the recorded run raised"):
        rt.replay(evolving, log)


def test_strict_replay_compares_arguments(evolve: dict[str, Any]) -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    evolve["arg"] = "changed"
    with pytest.raises(NonDeterminismError, match="different arguments"):
        rt.replay(evolving, log)
    # Kind and name still match: without strict mode the recorded value is used.
    assert rt.replay(evolving, log, strict=False).result == ["A", "B", 2]


def test_a_patch_after_the_end_of_a_finished_run_takes_the_old_branch(
    evolve: dict[str, Any],
) -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    evolve["patched"] = True
    assert rt.replay(evolving, log).result == ["A", "B", 2]
    # A run recorded with the patch replays its new branch.
    patched_log = rt.run(evolving, 2, real_steps=True).log
    assert ("patch", "add-third") in [(r.kind, r.name) for r in patched_log]
    assert rt.replay(evolving, patched_log).finished


def test_replay_arguments_default_to_the_recorded_ones_and_can_be_overridden() -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    assert rt.replay(evolving, log).result == ["A", "B", 2]
    with pytest.raises(ResultMismatch):
        rt.replay(evolving, log, 5)


def test_replay_refuses_a_log_of_another_workflow_and_non_logs() -> None:
    log = rt.run(evolving, 2, real_steps=True).log
    with pytest.raises(ValueError, match=r"recorded by workflow 'kit\.evolving', not 'kit\.typed'"):
        rt.replay(typed, log)
    with pytest.raises(TypeError, match="takes a Log"):
        rt.replay(evolving, 42)  # type: ignore[arg-type]


# -- check_determinism() -----------------------------------------------------------------------


def test_check_determinism_passes_a_deterministic_workflow_and_reports_its_work() -> None:
    report = rt.check_determinism(
        checkout,
        "o-1",
        100,
        steps={"charge": sequence(TimeoutError("slow"), "ch_1"), "ship": "p"},
        messages=[Message("confirm", {"by": "ann"}, at=timedelta(hours=3))],
    )
    assert report.reference.result == "shipped ch_1 for ann"
    # the charge's back-off, the charge, race start, race end, ship, finish
    assert len(report.commits) == 6
    assert report.prefix_runs == report.crash_runs == 6


@workflow(name="kit.busy")
def busy(n: int) -> Generator[Any, Any, list[Any]]:
    values = []
    for i in range(n):
        r = yield Random()
        u = yield Uuid()
        yield Sleep(timedelta(minutes=i))
        v = yield Step("work", shout, f"item {i}", retry=Retry(3, interval=30))
        stamp = yield Now()
        values.append([round(r, 6), str(u), v, stamp.isoformat()])
    both = yield All(Step("x", shout, "x"), Step("y", shout, "y"))
    values.append(both)
    return values


def test_check_determinism_with_entropy_time_retries_and_all() -> None:
    # Each distinct call fails twice, then succeeds: a plan per call, not per step name.
    flaky = {"work": GeneratedFake([[TimeoutError("a"), TimeoutError("b"), "ok"]])}
    report = rt.check_determinism(busy, 2, steps=flaky, real_steps={"x", "y"})
    assert report.reference.ok
    assert report.crash_runs == len(report.commits) > 10


def test_check_determinism_with_children_and_messages_between_them() -> None:
    report = rt.check_determinism(
        parent, 4, messages=[Message("bonus", 100, to="kit.parent:test:0", at=timedelta(hours=1))]
    )
    assert report.reference.result == [40, 104]
    assert any(c.workflow_id == "kit.parent:test:0" for c in report.commits)


def test_check_determinism_accepts_a_run_that_blocks() -> None:
    report = rt.check_determinism(inbox, 2, messages=[Message("in", "x", at=5)])
    assert report.reference.status is Status.PENDING


_generations = itertools.count()


@workflow(name="kit.remembers")
def remembers() -> Generator[Any, Any, str]:
    # Process state steering a workflow: invisible to one run, divergent after a restart.
    first_time = next(_generations) == 0
    yield Step("a", shout, "a")
    yield Step("b" if first_time else "b-again", shout, "b")
    return "done"


def test_check_determinism_reports_divergence_with_both_logs() -> None:
    global _generations
    _generations = itertools.count()
    with pytest.raises(AssertionError) as info:
        rt.check_determinism(remembers, real_steps=True)
    message = str(info.value)
    assert message.startswith(
        "check_determinism(kit.remembers): resumed from the store as it was just before "
        "committing step 'a' at position 0 of workflow id 'kit.remembers:test', the run did "
        "not end like the uninterrupted run:"
    )
    assert "position 1: expected step 'b', got step 'b-again'" in message
    assert "uninterrupted run (workflow id 'kit.remembers:test'):" in message
    assert ">>  1 step 'b' -> \"B\"" in message
    assert ">>  1 step 'b-again' -> \"B\"" in message


_activations = itertools.count()


@workflow(name="kit.flip")
def flip() -> Generator[Any, Any, str]:
    name = "even" if next(_activations) % 2 == 0 else "odd"
    yield Step(name, shout, name)
    yield Sleep(1)
    return name


def test_check_determinism_reports_a_reference_run_that_parks_itself() -> None:
    with pytest.raises(AssertionError, match="the uninterrupted run was parked"):
        rt.check_determinism(flip, real_steps=True)


def test_check_calls_flags_a_recorded_step_running_again() -> None:
    point = _Point(
        write=None,  # type: ignore[arg-type]
        now=datetime(2030, 1, 1, tzinfo=UTC),
        after={"ship": 1},
        in_flight={"charge": 1},
    )
    assert _check_calls(point, {"charge": 1, "ship": 1}, {}, "after the crash") == []
    assert _check_calls(point, {"ship": 2}, {"ship": 1}, "after the crash") == []
    [again] = _check_calls(point, {"charge": 2, "ship": 1}, {}, "after the crash")
    assert "step 'charge' ran 2 time(s) after the crash" in again
    assert "already recorded ran again" in again
    [skipped] = _check_calls(point, {}, {}, "after the crash")
    assert "step 'ship' ran 0 time(s)" in skipped and "skipped" in skipped


# -- strategies --------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    fakes=rks.step_fakes(
        {"charge": rks.step(st.text(max_size=3), raises=[Declined], flaky=2), "ship": st.none()}
    )
)
def test_generated_fakes_follow_their_plan_per_distinct_call(
    fakes: dict[str, GeneratedFake],
) -> None:
    charge = fakes["charge"]
    assert repr(charge).startswith("GeneratedFake('charge', [[")
    plan = charge.plan_for("o-1", 1)
    for expected in plan:
        if isinstance(expected, BaseException):
            assert isinstance(expected, (TimeoutError, Declined))
            with pytest.raises(type(expected)):
                charge("o-1", 1)
        else:
            assert charge("o-1", 1) == expected
    # Transient failures come first; only the last outcome may be a value or a decline.
    assert all(isinstance(o, TimeoutError) for o in plan[:-1])
    # A fresh process starts the attempts over but keeps the call's plan.
    assert charge.fresh().plan_for("o-1", 1) is plan


@settings(max_examples=40, deadline=None)
@given(
    scenario=rks.race_winners(
        {"confirm": st.just({"by": "ann"}), "cancel": st.none()},
        deadline=timedelta(days=1),
        resolution=timedelta(hours=1),
    )
)
def test_race_winners_decide_the_race(scenario: rks.RaceScenario) -> None:
    @workflow(name="kit.race3")
    def race3() -> Generator[Any, Any, str]:
        index, _ = yield Race(Recv("confirm"), Recv("cancel"), Sleep(timedelta(days=1)))
        return ["confirm", "cancel", "deadline"][index]

    result = rt.run(race3, messages=scenario)
    assert result.result == (scenario.winner or "deadline")
    assert all(m.at > timedelta(days=1) for m in scenario if scenario.winner is None)


@settings(max_examples=30, deadline=None)
@given(
    schedule=rks.message_schedules(
        {"in": st.integers(), None: st.text(max_size=2)},
        min_messages=1,
        within=timedelta(hours=5),
        resolution=timedelta(minutes=30),
    )
)
def test_message_schedules_are_sorted_and_within_bounds(schedule: list[Message]) -> None:
    times = [m.at for m in schedule]
    assert all(isinstance(t, timedelta) for t in times)
    assert times == sorted(times)
    assert all(timedelta(0) <= t <= timedelta(hours=5) for t in times)
    assert all(t % timedelta(minutes=30) == timedelta(0) for t in times)
    on_in = [m.payload for m in schedule if m.topic == "in"]
    result = rt.run(inbox, len(on_in), messages=schedule)
    assert [value for value, _ in result.unwrap()] == on_in


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_arrival_orders_permute_and_retime(data: st.DataObject) -> None:
    given_messages = [Message("in", n) for n in range(4)]
    ordered = data.draw(rks.arrival_orders(given_messages, within=timedelta(hours=2)))
    assert sorted(m.payload for m in ordered) == [0, 1, 2, 3]
    result = rt.run(inbox, 4, messages=ordered)
    assert [value for value, _ in result.unwrap()] == [m.payload for m in ordered]


@settings(max_examples=30, deadline=None)
@given(crash=rks.crash_points(max_commit=8, max_crashes=2))
def test_any_crash_leaves_the_result_alone_and_reruns_at_most_the_step_in_flight(
    crash: tuple[int, ...],
) -> None:
    steps = {"charge": "ch", "ship": "p"}
    confirm = [Message("confirm", {"by": "ann"}, at=timedelta(hours=1))]
    result = rt.run(checkout, "o-1", 1, steps=steps, messages=confirm, crash_at=crash)
    assert result.result == "shipped ch for ann"
    in_flight = [c.name for c in result.crashes if c.kind == "step"]
    for name in ("charge", "ship"):
        assert len(result.calls[name]) == 1 + in_flight.count(name)


def test_strategy_arguments_are_validated() -> None:
    with pytest.raises(ValueError):
        rks.failures()
    with pytest.raises(ValueError):
        rks.step(flaky=-1)
    with pytest.raises(ValueError):
        rks.race_winners({"a": st.none()}, deadline=timedelta(minutes=1))
    with pytest.raises(TypeError):
        rks.failures("boom")  # type: ignore[arg-type]


# -- the docs' example, and the public surface -------------------------------------------------


def _load_example() -> Any:
    path = ROOT / "examples" / "testing_example.py"
    spec = importlib.util.spec_from_file_location("testing_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered so a recorded CardDeclined decodes to its own class on replay.
    sys.modules["testing_example"] = module
    spec.loader.exec_module(module)
    return module


def test_the_documented_property_test_passes() -> None:
    example = _load_example()
    example.test_renew()


def test_the_docs_show_the_example_file_verbatim() -> None:
    docs = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", docs, flags=re.S)
    example = (ROOT / "examples" / "testing_example.py").read_text(encoding="utf-8")
    body = example.split('"""\n', 1)[1].split('\nif __name__ == "__main__":')[0].strip()
    assert any(block.strip() == body for block in blocks), (
        "docs/testing.md must contain examples/testing_example.py (without its docstring "
        "and __main__ block) as one ```python block"
    )


def test_every_public_name_is_documented() -> None:
    docs = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    names = [*replaykit.testing.__all__, *(f"strategies.{n}" for n in rks.__all__)]
    missing = [n for n in names if f"`{n.split('.')[-1]}" not in docs]
    assert missing == []


def test_the_kit_clock_holds_a_deadline_until_the_message_due_with_it_is_delivered() -> None:
    from replaykit.testing._session import KitClock

    start = datetime(2031, 1, 1, tzinfo=UTC)
    at = start + timedelta(seconds=60)
    clock = KitClock(start)
    seen: list[tuple[datetime, bool]] = []
    clock.attach([(at, 0)], lambda index, when: seen.append((clock.now(), clock.passed(at))))
    assert not clock.passed(at)
    clock.jump_to(at)
    # During the delivery the clock shows the instant, but the deadline has not
    # passed: the message is not in the inbox yet.
    assert seen == [(at, False)]
    assert clock.passed(at) and clock.now() == at
