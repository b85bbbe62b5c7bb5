"""What an activation's exception means for its run (runtime/failures.py), alone."""

from __future__ import annotations

import pytest

from replaykit.commands import Sleep, Step
from replaykit.errors import (
    CodecError,
    DamagedData,
    NonDeterminismError,
    PayloadTooLarge,
    RecordConflict,
    RunNotPending,
    Stopped,
    StoreUnavailable,
)
from replaykit.interpreter import Effect
from replaykit.runtime.failures import (
    Verdict,
    broken_why,
    describe,
    halt_detail,
    judge,
    spinning_why,
)
from replaykit.runtime.host import LogMovedOn


@pytest.mark.parametrize(
    ("error", "verdict"),
    [
        (NonDeterminismError("step 'a' where the log has 'b'"), Verdict.PARK),
        (DamagedData("row 'r' has a bad outcome"), Verdict.PARK),
        (CodecError("cannot decrypt"), Verdict.PARK),
        (LogMovedOn("position 3 was completed by another writer"), Verdict.REPLAY),
        (RecordConflict("owned by executor 'b'"), Verdict.STOP),
        (RunNotPending("CANCELLED", "not PENDING"), Verdict.STOP),
        (Stopped("stopped"), Verdict.STOP),
        (KeyboardInterrupt(), Verdict.HALT),
        (SystemExit(3), Verdict.HALT),
        (GeneratorExit(), Verdict.HALT),
        (StoreUnavailable("connection refused"), Verdict.RETRY_SOON),
        (PayloadTooLarge("over 1 MiB"), Verdict.FAIL),
        (OverflowError("date value out of range"), Verdict.FAIL),
        (TypeError("not serializable"), Verdict.FAIL),
        (RuntimeError("a bug in a handler"), Verdict.BROKEN),
        (KeyError("lost"), Verdict.BROKEN),
    ],
)
def test_each_exception_has_one_meaning(error: BaseException, verdict: Verdict) -> None:
    assert judge(error, knows_its_run=True) is verdict


def test_a_refusal_fails_the_run_only_when_the_activation_knows_its_run() -> None:
    # Before its row was read, a ValueError cannot be the run's own doing.
    assert judge(ValueError("bad name"), knows_its_run=False) is Verdict.BROKEN


def test_messages_name_what_the_run_was_doing_and_how_to_go_on() -> None:
    effect = Effect(3, Step("charge", print), "digest", "wf.py:7")
    assert describe(effect) == "step 'charge' at position 3"
    assert describe(Effect(1, Sleep(5), "d", "")) == "sleep 'sleep' at position 1"
    assert describe(None) == "an activation"
    why = broken_why(RuntimeError("boom"), effect, executor_id="ex-1", workflow_id="w-1")
    assert "step 'charge' at position 3 failed unexpectedly in engine 'ex-1'" in why
    assert "(RuntimeError: boom)" in why and "replaykit workflows resume w-1" in why
    detail = halt_detail(KeyboardInterrupt(), effect, executor_id="ex-1", workflow_id="w-1")
    assert detail.startswith("stopped by engine 'ex-1': step 'charge' at position 3 raised")
    assert "KeyboardInterrupt; nothing was recorded" in detail
    spin = spinning_why(11, limit=10, executor_id="ex-1", workflow_id="w-1")
    assert "continued as new 11 times in a row" in spin and "max_generations_in_a_row=10" in spin
