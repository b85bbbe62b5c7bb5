"""The testing kit calls no real function by surprise, and says nothing of its own crashes.

A step the test did not fake runs its real function only when the test says so
(`real_steps=True`, or the step's name in `real_steps={...}`); otherwise `run` and
`check_determinism` stop with `UnfakedSteps`, naming each such step and how to fake
it. README's testing block fakes every step it reaches and runs as written here. A
simulated crash leaves no traceback in the output of a test that passes.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from collections.abc import Generator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import replaykit
from replaykit import Race, Recv, Sleep, Status, Step, workflow
from replaykit import testing as rt
from replaykit.testing import UnfakedSteps
from replaykit.testing._real_steps import RealStepRefused
from replaykit.testing._session import JournalStore, SimulatedCrash
from replaykit.testing.harness import start_session

ROOT = Path(__file__).resolve().parent.parent

CALLED: list[str] = []


def real(name: str) -> Any:
    """A step's real function: it notes that it ran (the kit must not call it unasked)."""

    def body(*args: Any) -> str:
        CALLED.append(name)
        return f"real {name}"

    body.__qualname__ = f"real_{name}"
    return body


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    CALLED.clear()


@workflow(name="kit_real.checkout")
def checkout(order_id: str, amount: int) -> Generator[Any, Any, str]:
    charge = yield Step("charge", real("charge"), order_id, amount)
    winner, _ = yield Race(Recv("confirm"), Sleep(timedelta(days=1)))
    if winner == 1:
        yield Step("refund", real("refund"), charge)
        return "expired"
    yield Step("ship", real("ship"), order_id)
    return "shipped"


def test_run_refuses_a_step_that_is_not_faked_and_names_it() -> None:
    with pytest.raises(UnfakedSteps) as caught:
        rt.run(checkout, "o-1", 100, steps={"charge": "ch_1"})
    assert CALLED == []  # the real refund never ran
    assert caught.value.steps == ("refund",)
    message = str(caught.value)
    for fragment in (
        "workflow 'kit_real.checkout'",
        "'refund'",
        "real_refund",
        "workflow id 'kit_real.checkout:test' at position 2",
        "steps={'refund': ...}",
        "real_steps={'refund'}",
        "real_steps=True",
    ):
        assert fragment in message, fragment


def test_check_determinism_refuses_before_it_resumes_anything() -> None:
    # README's old example: no confirmation, so the day-long Race times out and the
    # refund, not faked, used to run its real function in every run the check made.
    with pytest.raises(UnfakedSteps, match="'refund'"):
        rt.check_determinism(checkout, "o-1", 100, steps={"charge": "ch_1", "ship": "p-9"})
    assert CALLED == []


def test_every_step_refused_is_listed_in_the_order_reached() -> None:
    with pytest.raises(UnfakedSteps) as caught:
        rt.run(checkout, "o-1", 100)
    # The charge's attempt failed (refused), so the run ended there: only it was reached.
    assert caught.value.steps == ("charge",)
    assert CALLED == []


def test_a_refused_attempt_is_a_failure_inside_the_run() -> None:
    @workflow(name="kit_real.catches")
    def catches() -> Generator[Any, Any, str]:
        try:
            yield Step("charge", real("charge"))
        except RealStepRefused:
            yield Step("notify", real("notify"))
        return "done"

    # Even a workflow that catches the failure does not hide the refusal.
    with pytest.raises(UnfakedSteps) as caught:
        rt.run(catches)
    assert caught.value.steps == ("charge", "notify")
    assert CALLED == []


def test_real_steps_true_runs_every_step_not_faked() -> None:
    result = rt.run(
        checkout,
        "o-1",
        100,
        steps={"charge": "ch_1"},
        messages=[rt.Message("confirm", {}, at=timedelta(hours=1))],
        real_steps=True,
    )
    assert result.unwrap() == "shipped"
    assert CALLED == ["ship"]
    assert result.calls["ship"] == [rt.StepCall(("o-1",), {})]


def test_real_steps_by_name_lets_only_those_run() -> None:
    result = rt.run(checkout, "o-1", 100, steps={"charge": "ch_1"}, real_steps={"refund"})
    assert result.unwrap() == "expired"
    assert CALLED == ["refund"]
    with pytest.raises(UnfakedSteps) as caught:
        rt.run(
            checkout,
            "o-1",
            100,
            messages=[rt.Message("confirm", {}, at=timedelta(hours=1))],
            real_steps={"charge", "refund"},
        )
    assert caught.value.steps == ("ship",)
    assert CALLED == ["refund", "charge"]


def test_check_determinism_runs_named_real_steps() -> None:
    report = rt.check_determinism(
        checkout, "o-1", 100, steps={"charge": "c"}, real_steps={"refund"}
    )
    assert report.reference.result == "expired"
    assert set(CALLED) == {"refund"} and len(CALLED) > 1  # once per run the check made


def test_real_steps_takes_a_bool_or_step_names() -> None:
    with pytest.raises(TypeError, match=r"real_steps=\{'refund'\}"):
        rt.run(checkout, "o-1", 100, real_steps="refund")
    with pytest.raises(TypeError, match="True, False or a set of step names"):
        rt.run(checkout, "o-1", 100, real_steps=[1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="'charge' are both faked"):
        rt.check_determinism(
            checkout, "o-1", 100, steps={"charge": "c"}, real_steps={"charge", "ship"}
        )
    assert CALLED == []


# -- README's testing block, as written ------------------------------------------------------


def _readme_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", readme, flags=re.S)


def test_readmes_testing_block_fakes_every_step_it_reaches() -> None:
    first, testing_block = _readme_blocks()[0], None
    for block in _readme_blocks():
        if "check_determinism(" in block:
            testing_block = block
    assert testing_block is not None, "README.md has no testing block"
    # README's checkout, with its steps' functions standing in as real ones that note
    # each call: the block must not reach any of them.
    namespace: dict[str, Any] = {
        "charge_card": real("charge"),
        "refund": real("refund"),
        "ship": real("ship"),
    }
    imports = "\n".join(
        line for line in first.splitlines() if line.startswith(("from ", "import "))
    )
    exec(imports, namespace)  # the README's own imports
    # A name of its own, so that no other checkout registered in this process clashes.
    namespace["workflow"] = functools.partial(
        replaykit.workflow, name="readme.checkout", replace=True
    )
    definition = first[first.index("@workflow") : first.index("\nwith Engine(")]
    exec(definition, namespace)  # README's workflow, as written
    exec(testing_block, namespace)  # README's testing block, as written
    assert CALLED == []


# -- a simulated crash is silent -------------------------------------------------------------


def test_a_dead_process_drops_its_recovery_bookkeeping_without_a_word() -> None:
    session = start_session(
        checkout,
        ("o-1", 1),
        {},
        steps={},
        messages=(),
        clock=None,
        strict=True,
        workflow_id=None,
        timeout=5.0,
        seed=0,
    )
    store = JournalStore(session, 1)
    store.dead = True
    # The reset of the crash-loop counter a bookkeeping thread makes after progress:
    # raised, the engine's work pool logged it as a failure, with a traceback.
    assert (
        store.set_status(
            session.workflow_id, Status.PENDING, only_from=(Status.PENDING,), reset_recovery=True
        )
        is False
    )
    # Any other write of a dead process still ends its work.
    with pytest.raises(SimulatedCrash):
        store.set_status(session.workflow_id, Status.CANCELLED)


def test_the_testing_example_passes_without_printing_a_simulated_crash() -> None:
    # As a user runs it: `python examples/testing_example.py`. Its determinism check
    # crashes a simulated process at every commit of every generated scenario.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "testing_example.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_renew passed" in done.stdout
    assert "SimulatedCrash" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
