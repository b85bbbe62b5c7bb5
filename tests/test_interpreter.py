"""The sans-IO interpreter, driven by hand with lists of records: no engine, no store."""

from __future__ import annotations

import gc
import uuid
import warnings
from collections.abc import Generator
from datetime import UTC, datetime
from typing import Any

import pytest

from replaykit import (
    All,
    DeprecatePatch,
    Now,
    Patch,
    Race,
    Recv,
    Sleep,
    Step,
    StepFailed,
    Uuid,
    context,
)
from replaykit.errors import InvalidCommandError, NonDeterminismError
from replaykit.interpreter import Completed, Effect, Failed, Interpreter, command_digest
from replaykit.log import Failure, Record, Value
from replaykit.serde import encode_error


def double(x: int) -> int:
    return 2 * x


def make(gen: Any, records: list[Record] | None = None, **kw: Any) -> Interpreter:
    return Interpreter(gen, records or [], workflow_name="wf", workflow_id="id-1", **kw)


def done(effect: Effect, value: Any) -> Record:
    """What a runtime would commit for `effect` with a return value."""
    return Record(
        effect.position,
        effect.command.kind,
        effect.command.name,
        Value(value),
        effect.digest,
        effect.call_site,
    )


def failed(effect: Effect, exc: Exception) -> Record:
    return Record(
        effect.position,
        effect.command.kind,
        effect.command.name,
        Failure(encode_error(exc)),
        effect.digest,
        effect.call_site,
    )


def two_steps(x: int) -> Generator[Any, Any, int]:
    a = yield Step("first", double, x)
    b = yield Step("second", double, a)
    return int(a + b)


def test_live_run_hands_out_effects_in_position_order() -> None:
    interp = make(two_steps(3))
    first = interp.start()
    assert isinstance(first, Effect)
    assert (first.position, first.command.name) == (0, "first")
    assert first.call_site.endswith(
        "test_interpreter.py:" + str(two_steps.__code__.co_firstlineno + 1)
    )
    second = interp.resume(done(first, 6))
    assert isinstance(second, Effect)
    assert (second.position, second.command.name) == (1, "second")
    final = interp.resume(done(second, 12))
    assert final == Completed(18)


def test_replay_answers_from_the_log_without_effects() -> None:
    records = [
        Record(0, "step", "first", Value(6)),
        Record(1, "step", "second", Value(12)),
    ]
    interp = make(two_steps(3), records)
    assert interp.start() == Completed(18)


def test_replay_stops_at_first_unrecorded_position() -> None:
    interp = make(two_steps(3), [Record(0, "step", "first", Value(100))])
    effect = interp.start()
    assert isinstance(effect, Effect)
    assert effect.position == 1
    # The second step receives the *recorded* value of the first, not a recomputed one.
    assert effect.command.args == (100,)


def test_recorded_failure_is_thrown_into_the_generator() -> None:
    def wf() -> Generator[Any, Any, str]:
        try:
            yield Step("boom", double, 1)
        except KeyError as exc:
            return f"caught {exc.args[0]}"
        return "no"

    rec = Record(0, "step", "boom", Failure(encode_error(KeyError("missing"))))
    assert make(wf(), [rec]).start() == Completed("caught missing")


def test_unknown_exception_class_degrades_to_step_failed() -> None:
    def wf() -> Generator[Any, Any, None]:
        yield Step("boom", double, 1)

    info = encode_error(ValueError("bad"))
    info = type(info)("no_such_module_xyz", "Gone", "it went", ["it went"])
    decision = make(wf(), [Record(0, "step", "boom", Failure(info))]).start()
    assert isinstance(decision, Failed)
    assert isinstance(decision.error, StepFailed)
    assert decision.error.type_name == "no_such_module_xyz.Gone"
    assert "it went" in str(decision.error)


def test_workflow_exception_is_a_failed_decision() -> None:
    def wf() -> Generator[Any, Any, None]:
        yield Now()
        raise RuntimeError("nope")

    interp = make(wf())
    effect = interp.start()
    assert isinstance(effect, Effect)
    result = interp.resume(done(effect, datetime(2030, 1, 1, tzinfo=UTC).isoformat()))
    assert isinstance(result, Failed)
    assert isinstance(result.error, RuntimeError)


def test_mismatched_name_raises_with_full_details() -> None:
    records = [Record(0, "step", "charge", Value(1), call_site="old.py:10")]
    with pytest.raises(NonDeterminismError) as info:
        make(two_steps(1), records).start()
    err = info.value
    message = str(err)
    for fragment in ("'wf'", "'id-1'", "position 0", "'first'", "'charge'", "old.py:10", "Patch"):
        assert fragment in message, fragment
    assert err.position == 0
    assert "test_interpreter.py" in err.yielded_at


def test_mismatched_kind_raises() -> None:
    records = [Record(0, "sleep", "first", Value(None))]
    with pytest.raises(NonDeterminismError, match="different command"):
        make(two_steps(1), records).start()


def test_returning_with_records_left_is_a_mismatch() -> None:
    def short() -> Generator[Any, Any, int]:
        yield Step("first", double, 1)
        return 1

    records = [
        Record(0, "step", "first", Value(2)),
        Record(1, "step", "second", Value(4), call_site="x.py:3"),
    ]
    with pytest.raises(NonDeterminismError, match="1 more position"):
        make(short(), records).start()


def test_raising_with_records_left_is_a_mismatch() -> None:
    def raises() -> Generator[Any, Any, int]:
        yield Step("first", double, 1)
        raise ValueError("changed")

    records = [Record(0, "step", "first", Value(2)), Record(1, "step", "second", Value(4))]
    with pytest.raises(NonDeterminismError):
        make(raises(), records).start()


def test_strict_mode_compares_argument_digests() -> None:
    effect = make(two_steps(1)).start()
    assert isinstance(effect, Effect)
    recorded = [Record(0, "step", "first", Value(2), digest=effect.digest)]
    # Same args: fine either way.
    assert isinstance(make(two_steps(1), recorded, strict=True).start(), Effect)
    # Different args: only strict mode notices.
    assert isinstance(make(two_steps(5), recorded).start(), Effect)
    with pytest.raises(NonDeterminismError, match="different arguments"):
        make(two_steps(5), recorded, strict=True).start()


def test_unencodable_arguments_are_not_compared_but_do_not_fail() -> None:
    lock = object()
    assert command_digest(Step("s", double, lock)) == ""


def test_yield_from_helpers_share_positions_and_report_inner_call_site() -> None:
    def helper(x: int) -> Generator[Any, Any, int]:
        y = yield Step("inner", double, x)
        return int(y)

    def outer() -> Generator[Any, Any, int]:
        a = yield from helper(1)
        b = yield Step("outer", double, a)
        return int(b)

    interp = make(outer())
    first = interp.start()
    assert isinstance(first, Effect)
    assert first.call_site.endswith(f":{helper.__code__.co_firstlineno + 1}")
    second = interp.resume(done(first, 2))
    assert isinstance(second, Effect) and second.position == 1
    assert interp.resume(done(second, 4)) == Completed(4)


@pytest.mark.parametrize(
    ("bad", "hint"),
    [
        (double, "wrap it"),
        (None, "bare `yield`"),
        (Now, "call it"),
        ([Now(), Now()], "All("),
        (42, "may only yield"),
    ],
)
def test_non_commands_are_refused_with_a_hint(bad: Any, hint: str) -> None:
    def wf() -> Generator[Any, Any, None]:
        yield bad

    decision = make(wf()).start()
    assert isinstance(decision, Failed)
    assert isinstance(decision.error, InvalidCommandError)
    assert hint in str(decision.error)
    assert "position 0" in str(decision.error)


def test_yielding_a_coroutine_is_refused_without_a_never_awaited_warning() -> None:
    async def fetch() -> int:
        return 1

    def wf() -> Generator[Any, Any, None]:
        yield fetch()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decision = make(wf()).start()
        gc.collect()
    assert isinstance(decision, Failed)
    assert "async function" in str(decision.error)


def test_yielding_a_generator_suggests_yield_from() -> None:
    def helper() -> Generator[Any, Any, None]:
        yield Now()

    def wf() -> Generator[Any, Any, None]:
        yield helper()

    decision = make(wf()).start()
    assert isinstance(decision, Failed) and "yield from" in str(decision.error)


def test_a_non_generator_workflow_is_refused() -> None:
    with pytest.raises(InvalidCommandError, match="did not return a generator"):
        make(42)


def test_close_runs_finally_blocks_and_is_clean() -> None:
    cleaned: list[str] = []

    def wf() -> Generator[Any, Any, None]:
        try:
            yield Sleep(10)
        finally:
            cleaned.append("done")

    interp = make(wf())
    assert isinstance(interp.start(), Effect)
    interp.close()
    interp.close()  # idempotent
    assert cleaned == ["done"]


def test_yielding_during_close_is_reported() -> None:
    def wf() -> Generator[Any, Any, None]:
        try:
            yield Sleep(10)
        finally:
            yield Now()

    interp = make(wf())
    interp.start()
    with pytest.raises(InvalidCommandError, match="finally"):
        interp.close()


def test_context_is_visible_and_tracks_replay() -> None:
    seen: list[tuple[str, bool, int]] = []

    def wf() -> Generator[Any, Any, None]:
        ctx = context()
        seen.append((ctx.workflow_id, ctx.is_replaying, ctx.position))
        yield Now()
        seen.append((ctx.workflow_id, ctx.is_replaying, ctx.position))
        yield Now()
        seen.append((context().workflow_id, context().is_replaying, context().position))

    stamp = datetime(2030, 1, 1, tzinfo=UTC).isoformat()
    records = [Record(0, "now", "now", Value(stamp))]
    interp = make(wf(), records)
    effect = interp.start()
    assert isinstance(effect, Effect)
    interp.resume(done(effect, stamp))
    assert seen == [("id-1", True, 0), ("id-1", False, 1), ("id-1", False, 2)]
    with pytest.raises(RuntimeError, match="outside a workflow"):
        context()


def test_values_are_decoded_by_command_type() -> None:
    def wf() -> Generator[Any, Any, tuple[Any, Any]]:
        when = yield Now()
        ident = yield Uuid()
        return when, ident

    u = uuid.uuid4()
    stamp = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    records = [
        Record(0, "now", "now", Value(stamp.isoformat())),
        Record(1, "uuid", "uuid", Value(str(u))),
    ]
    decision = make(wf(), records).start()
    assert decision == Completed((stamp, u))


def test_patch_true_for_new_runs_and_false_for_old_logs() -> None:
    def wf() -> Generator[Any, Any, str]:
        if (yield Patch("v2")):
            yield Step("new", double, 1)
            return "new"
        yield Step("old", double, 1)
        return "old"

    # A run recorded before the patch shipped: no marker, old branch, same positions.
    old_log = [Record(0, "step", "old", Value(2))]
    assert make(wf(), old_log).start() == Completed("old")

    # A new run records the marker and takes the new branch.
    interp = make(wf())
    marker = interp.start()
    assert isinstance(marker, Effect) and marker.command == Patch("v2")
    step = interp.resume(done(marker, True))
    assert isinstance(step, Effect) and step.command.name == "new" and step.position == 1

    # Its replay sees the marker again.
    new_log = [Record(0, "patch", "v2", Value(True)), Record(1, "step", "new", Value(2))]
    assert make(wf(), new_log).start() == Completed("new")


def test_deprecate_patch_consumes_old_markers_and_records_nothing_new() -> None:
    def wf() -> Generator[Any, Any, str]:
        yield DeprecatePatch("v2")
        yield Step("new", double, 1)
        return "done"

    with_marker = [Record(0, "patch", "v2", Value(True)), Record(1, "step", "new", Value(2))]
    assert make(wf(), with_marker).start() == Completed("done")
    fresh = make(wf()).start()
    assert isinstance(fresh, Effect) and fresh.position == 0 and fresh.command.name == "new"


def patched_twice() -> Generator[Any, Any, list[str]]:
    """Two sites of one patch with a wait between them, as a deploy would find a run."""
    taken: list[str] = []
    if (yield Patch("p")):
        taken.append((yield Step("a2", str, "a2")))
    else:
        taken.append((yield Step("a", str, "a")))
    yield Sleep(60)
    if (yield Patch("p")):
        taken.append((yield Step("b2", str, "b2")))
    else:
        taken.append((yield Step("b", str, "b")))
    return taken


# What the old code (no patch) recorded before the deploy: `a`, then the start of its sleep.
WAITING_WHEN_PATCHED = [
    Record(0, "step", "a", Value("a")),
    Record(1, "sleep", "sleep", None, wake_at=datetime(2030, 1, 1, tzinfo=UTC)),
]


def test_a_patch_that_answered_false_answers_false_for_the_rest_of_the_run() -> None:
    interp = make(patched_twice(), WAITING_WHEN_PATCHED)
    sleep = interp.start()
    assert isinstance(sleep, Effect) and sleep.position == 1
    # Past its log, the second site must not record a marker: the run took the old
    # branch at the first site, so it takes the old branch at every site.
    after = interp.resume(done(sleep, None))
    assert isinstance(after, Effect)
    assert (after.position, after.command.kind, after.command.name) == (2, "step", "b")
    finished = [*WAITING_WHEN_PATCHED[:1], done(sleep, None), done(after, "b")]
    assert interp.resume(finished[2]) == Completed(["a", "b"])

    # A replay of that log, rebuilt from nothing, gives the same answers.
    assert make(patched_twice(), finished).start() == Completed(["a", "b"])
    # So does a replay of the log as it stood before the second site was reached.
    midway = make(patched_twice(), finished[:2])
    second = midway.start()
    assert isinstance(second, Effect) and (second.position, second.command.name) == (2, "b")


def test_a_run_that_never_met_the_patch_in_its_log_answers_true_at_every_site() -> None:
    interp = make(patched_twice())
    log: list[Record] = []
    decision = interp.start()
    while isinstance(decision, Effect):
        value = True if decision.command.kind == "patch" else decision.command.name
        log.append(done(decision, None if decision.command.kind == "sleep" else value))
        decision = interp.resume(log[-1])
    assert decision == Completed(["a2", "b2"])
    assert [(r.kind, r.name) for r in log] == [
        ("patch", "p"),
        ("step", "a2"),
        ("sleep", "sleep"),
        ("patch", "p"),
        ("step", "b2"),
    ]
    assert make(patched_twice(), log).start() == Completed(["a2", "b2"])


def test_a_marker_recorded_after_a_false_answer_still_replays() -> None:
    # A log written before answers were kept per run: False at the first site, a
    # marker at the second. Replay follows the log, as it was recorded.
    legacy = [
        Record(0, "step", "a", Value("a")),
        Record(1, "sleep", "sleep", Value(None)),
        Record(2, "patch", "p", Value(True)),
        Record(3, "step", "b2", Value("b2")),
    ]
    assert make(patched_twice(), legacy).start() == Completed(["a", "b2"])


def test_a_patch_answered_false_by_the_caller_stays_false() -> None:
    # `testing.replay` answers a marker past a finished log with False.
    interp = make(patched_twice())
    marker = interp.start()
    assert isinstance(marker, Effect) and marker.command == Patch("p")
    step = interp.resume(done(marker, False))
    assert isinstance(step, Effect) and step.command.name == "a"
    sleep = interp.resume(done(step, "a"))
    assert isinstance(sleep, Effect)
    last = interp.resume(done(sleep, None))
    assert isinstance(last, Effect) and last.command.name == "b"


def test_deprecate_patch_refuses_a_run_that_answered_the_patch_false() -> None:
    def half_deprecated() -> Generator[Any, Any, str]:
        if (yield Patch("p")):
            yield Step("a2", str, "a2")
        else:
            yield Step("a", str, "a")
        yield Sleep(60)
        yield DeprecatePatch("p")  # this site's old branch is gone
        yield Step("b2", str, "b2")
        return "done"

    interp = make(half_deprecated(), WAITING_WHEN_PATCHED)
    sleep = interp.start()
    assert isinstance(sleep, Effect)
    with pytest.raises(NonDeterminismError) as caught:
        interp.resume(done(sleep, None))
    message = str(caught.value)
    for fragment in (
        "'wf'",
        "'id-1'",
        "position 2",
        "DeprecatePatch('p')",
        "answered False at position 0",
        "fork",
    ):
        assert fragment in message, fragment
    assert caught.value.position == 2

    # A run that took the patched branch replays through both sites.
    new_log = [
        Record(0, "patch", "p", Value(True)),
        Record(1, "step", "a2", Value("a2")),
        Record(2, "sleep", "sleep", Value(None)),
        Record(3, "step", "b2", Value("b2")),
    ]
    assert make(half_deprecated(), new_log).start() == Completed("done")


def test_race_and_all_take_one_position_and_decode_children() -> None:
    def wf() -> Generator[Any, Any, Any]:
        winner = yield Race(Recv("go"), Sleep(5))
        values = yield All(Step("a", double, 1), Step("b", double, 2))
        after = yield Now()
        return winner, values, after

    stamp = datetime(2030, 1, 1, tzinfo=UTC)
    records = [
        Record(0, "race", "recv:go|sleep:sleep", Value({"index": 1, "outcome": {"value": None}})),
        Record(
            1,
            "all",
            "step:a|step:b",
            Value({"outcomes": [{"value": 2}, {"value": 4}], "first_failure": None}),
        ),
        Record(2, "now", "now", Value(stamp.isoformat())),
    ]
    assert make(wf(), records).start() == Completed(((1, None), [2, 4], stamp))


def test_all_raises_first_failure_or_returns_exceptions() -> None:
    error = {
        "error": {
            "module": "builtins",
            "qualname": "KeyError",
            "message": "'k'",
            "args": ["k"],
            "traceback": "",
        }
    }
    data = {"outcomes": [{"value": 1}, error], "first_failure": 1}

    def strict_all() -> Generator[Any, Any, Any]:
        return (yield All(Step("a", double, 1), Step("b", double, 2)))

    def lenient_all() -> Generator[Any, Any, Any]:
        return (yield All(Step("a", double, 1), Step("b", double, 2), return_exceptions=True))

    records = [Record(0, "all", "step:a|step:b", Value(data))]
    failing = make(strict_all(), records).start()
    assert isinstance(failing, Failed) and isinstance(failing.error, KeyError)
    lenient = make(lenient_all(), records).start()
    assert isinstance(lenient, Completed)
    assert lenient.value[0] == 1 and isinstance(lenient.value[1], KeyError)


_KEY_ERROR = {
    "error": {
        "module": "builtins",
        "qualname": "KeyError",
        "message": "'k'",
        "args": ["k"],
        "traceback": "",
    }
}


def test_nested_composites_decode_from_one_record() -> None:
    def wf() -> Generator[Any, Any, Any]:
        raced = yield Race(All(Step("a", double, 1), Step("b", double, 2)), Sleep(60))
        both = yield All(Race(Recv("x"), Sleep(5)), Step("s", double, 3))
        return raced, both

    inner_all = {"outcomes": [{"value": 2}, {"value": 4}], "first_failure": None}
    inner_race = {"index": 1, "outcome": {"value": None}}
    records = [
        Record(
            0,
            "race",
            "all(step:a|step:b)|sleep:sleep",
            Value({"index": 0, "outcome": {"value": inner_all}}),
        ),
        Record(
            1,
            "all",
            "race(recv:x|sleep:sleep)|step:s",
            Value({"outcomes": [{"value": inner_race}, {"value": 6}], "first_failure": None}),
        ),
    ]
    assert make(wf(), records).start() == Completed(((0, [2, 4]), [(1, None), 6]))


def test_an_inner_failure_is_the_childs_failure() -> None:
    failed_all = {"outcomes": [{"value": 1}, _KEY_ERROR], "first_failure": 1}
    won_by_failure = {"index": 0, "outcome": _KEY_ERROR}

    def race_of_all() -> Generator[Any, Any, Any]:
        return (yield Race(All(Step("a", double, 1), Step("b", double, 2)), Sleep(60)))

    def all_of_race(return_exceptions: bool) -> Generator[Any, Any, Any]:
        return (
            yield All(
                Race(Step("a", double, 1), Sleep(5)),
                Step("s", double, 3),
                return_exceptions=return_exceptions,
            )
        )

    name = "all(step:a|step:b)|sleep:sleep"
    record = Record(0, "race", name, Value({"index": 0, "outcome": {"value": failed_all}}))
    decided = make(race_of_all(), [record]).start()
    assert isinstance(decided, Failed) and isinstance(decided.error, KeyError)

    name = "race(step:a|sleep:sleep)|step:s"
    fail_fast = {"outcomes": [{"value": won_by_failure}, {"value": None}], "first_failure": 0}
    decided = make(all_of_race(False), [Record(0, "all", name, Value(fail_fast))]).start()
    assert isinstance(decided, Failed) and isinstance(decided.error, KeyError)
    lenient = {"outcomes": [{"value": won_by_failure}, {"value": 6}], "first_failure": None}
    decided = make(all_of_race(True), [Record(0, "all", name, Value(lenient))]).start()
    assert isinstance(decided, Completed)
    assert isinstance(decided.value[0], KeyError) and decided.value[1] == 6


def test_a_changed_inner_child_is_a_mismatch() -> None:
    def wf(topic: str) -> Generator[Any, Any, Any]:
        return (yield All(Race(Recv(topic), Sleep(5)), Step("s", double, 3)))

    data = {"outcomes": [{"value": {"index": 1, "outcome": {"value": None}}}, {"value": 6}]}
    records = [Record(0, "all", "race(recv:x|sleep:sleep)|step:s", Value(data))]
    assert make(wf("x"), records).start() == Completed([(1, None), 6])
    with pytest.raises(NonDeterminismError, match="recv:y"):
        make(wf("y"), records).start()


def test_pending_record_is_handed_back_as_the_effect() -> None:
    def wf() -> Generator[Any, Any, None]:
        yield Sleep(60)

    wake = datetime(2030, 1, 1, tzinfo=UTC)
    pending = Record(0, "sleep", "sleep", None, wake_at=wake)
    effect = make(wf(), [pending]).start()
    assert isinstance(effect, Effect)
    assert effect.pending == pending


def test_resume_refuses_a_record_for_another_position() -> None:
    interp = make(two_steps(1))
    effect = interp.start()
    assert isinstance(effect, Effect)
    with pytest.raises(ValueError, match="position 0"):
        interp.resume(Record(3, "step", "first", Value(1)))


def three_doubles() -> Generator[Any, Any, int]:
    total = 0
    for i in range(3):
        total += yield Step("double", double, i + 1)
    return total


def test_catch_up_replays_what_another_writer_recorded_without_a_rebuild() -> None:
    interp = make(three_doubles(), keep_records=False)
    first = interp.start()
    assert isinstance(first, Effect) and first.position == 0
    second = interp.resume(done(first, 2))
    assert isinstance(second, Effect) and second.position == 1
    # Positions 1 and 2 were completed elsewhere meanwhile: catch up from position 1.
    theirs = [
        Record(1, "step", "double", Value(40), second.digest),
        Record(2, "step", "double", Value(60), second.digest),
    ]
    interp.catch_up(theirs)
    finished = interp.resume(theirs[0])
    assert finished == Completed(2 + 40 + 60)  # the generator saw the log's values


def test_catch_up_refuses_records_that_do_not_start_at_the_awaited_position() -> None:
    interp = make(three_doubles(), keep_records=False)
    effect = interp.start()
    assert isinstance(effect, Effect)
    with pytest.raises(ValueError, match="from position 0"):
        interp.catch_up([Record(1, "step", "double", Value(4))])
    with pytest.raises(ValueError, match="none"):
        interp.catch_up([])
