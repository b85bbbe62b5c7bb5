"""replaykit.testing.inspection and `replaykit inspect ID --at N`: a run's locals at a position."""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner, Result

from conftest import wait_for
from replaykit import Engine, Log, Now, Patch, Recv, Step, workflow
from replaykit import testing as rt
from replaykit.cli import cli
from replaykit.errors import NonDeterminismError, StepFailed
from replaykit.testing.inspection import inspect_run

SPEC = f"{__name__}:approve"


class Shouting:
    """A value whose repr holds terminal escapes, as a stored value might."""

    def __repr__(self) -> str:
        return "\x1b[31mred\x1b[0m\u202e"


def score(customer: str) -> int:
    return 700 if customer.startswith("good") else 400


def decline(customer: str) -> str:
    raise ValueError(f"declined {customer}")


def ask(customer: str, limit: int) -> dict[str, int]:
    return {"limit": limit}


def limit_for(points: int):
    # Delegated to with `yield from`: its frame is inspected too.
    bonus = yield Step("bonus", score, "good")
    return points + bonus // 100


@workflow(name="inspect.approve")
def approve(customer: str, amount: int) -> Generator[Any, Any, str]:
    points = yield Step("score", score, customer)
    risky = points < 600 or amount > 1000
    limit = yield from limit_for(points)
    if risky:
        answer = yield Step("ask", ask, customer, limit)
        return f"asked {answer}"
    return f"approved up to {limit}"


@workflow(name="inspect.waits")
def waits(customer: str) -> Generator[Any, Any, Any]:
    shout = Shouting()
    started = yield Now()
    message = yield Recv("go", timeout=3600)
    return [repr(shout), started, message]


@workflow(name="inspect.patched")
def patched() -> Generator[Any, Any, str]:
    first = yield Step("score", score, "good")
    if (yield Patch("new-rule")):
        return f"new {first}"
    return "old"


@workflow(name="inspect.fails")
def fails(customer: str) -> Generator[Any, Any, str]:
    try:
        yield Step("decline", decline, customer)
    except StepFailed as exc:
        return f"caught {exc}"
    except ValueError as exc:
        return f"caught {exc}"
    return "unreachable"


# -- the library --------------------------------------------------------------------------


def test_the_locals_at_each_position_explain_the_branch() -> None:
    log = rt.run(approve, "bad-1", 50, real_steps=True).log
    assert [r.name for r in log] == ["score", "bonus", "ask"]

    first = inspect_run(approve, log, 0)
    assert (first.position, first.positions) == (0, 3)
    assert first.command.name == "score"
    assert first.record.name == "score"
    assert first.outcome == (True, 400)
    assert first.locals == {"customer": "bad-1", "amount": 50}
    assert first.call_site.endswith(f"test_inspect.py:{approve.fn.__code__.co_firstlineno + 2}")

    asked = inspect_run(approve, log, 2)
    assert asked.command.name == "ask"
    assert asked.locals["points"] == 400
    assert asked.locals["risky"] is True  # why it asked: the score was low
    assert asked.locals["limit"] == 407
    assert asked.outcome == (True, {"limit": 407})


def test_a_yield_from_helper_shows_every_frame_down_to_the_yield() -> None:
    log = rt.run(approve, "good-1", 50, real_steps=True).log
    seen = inspect_run(approve, log, 1)
    assert [f.function for f in seen.frames] == ["approve", "limit_for"]
    assert seen.frames[0].locals["points"] == 700
    assert seen.frames[0].locals["risky"] is False
    assert seen.locals == {"points": 700}  # the helper, where the yield is
    assert seen.call_site == seen.frames[-1].call_site


def test_a_pending_position_and_a_recorded_failure() -> None:
    done = rt.run(waits, "c", real_steps=True).log  # virtual time let the Recv time out
    # As the store holds it while the Recv is under way (the CLI tests wait for real).
    log = attrs.evolve(done, records=[done.records[0], attrs.evolve(done.records[1], outcome=None)])
    pending = inspect_run(waits, log, 1)
    assert pending.outcome is None
    assert pending.command.describe() == "Recv('go')"
    assert pending.locals["started"].year == 2030

    failed = inspect_run(fails, rt.run(fails, "c", real_steps=True).log, 0)
    assert failed.outcome is not None
    ok, error = failed.outcome
    assert not ok
    assert "declined c" in str(error)


def test_a_patch_marker_is_a_position_of_its_own() -> None:
    log = rt.run(patched, real_steps=True).log
    assert [r.kind for r in log] == ["step", "patch"]
    seen = inspect_run(patched, log, 1)
    assert seen.command.describe() == "Patch('new-rule')"
    assert seen.locals == {"first": 700}


def test_positions_out_of_range_and_drift_are_refused() -> None:
    log = rt.run(approve, "bad-1", 50, real_steps=True).log
    with pytest.raises(ValueError, match=r"position 3 is out of range: .* holds positions 0 to 2"):
        inspect_run(approve, log, 3)
    with pytest.raises(ValueError, match="out of range"):
        inspect_run(approve, log, -1)
    renamed = Log(
        records=[log.records[0], attrs.evolve(log.records[1], name="bonus-v2"), log.records[2]],
        workflow_name=log.workflow_name,
        workflow_id=log.workflow_id,
        args=log.args,
        status=log.status,
        result=log.result,
    )
    with pytest.raises(NonDeterminismError, match="position 1: different command"):
        inspect_run(approve, renamed, 2)
    with pytest.raises(ValueError, match=r"recorded by workflow 'inspect\.approve'"):
        inspect_run(waits, log, 0)


def test_a_log_file_works_too(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(rt.run(approve, "good-1", 50, real_steps=True).log.to_json())
    assert inspect_run(approve, path, 0).locals["customer"] == "good-1"


# -- the command --------------------------------------------------------------------------


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A SQLite store holding: bad-run (SUCCESS, asked), esc\\x1b[2J (waits in a Recv)."""
    url = f"sqlite:///{tmp_path / 'inspect.db'}"
    with Engine(url, executor_id="app", poll_interval=0.05) as engine:
        engine.run(approve, "bad-1", 50, workflow_id="bad-run", timeout=20)
        engine.start(waits, "\x1b[2Jc", workflow_id="esc\x1b[2J")
        wait_for(lambda: len(engine.steps("esc\x1b[2J")) == 2, "the run to wait")
    return url


def rk(*args: str) -> Result:
    return CliRunner().invoke(cli, ["inspect", *args])


def test_cli_prints_the_command_the_outcome_and_the_locals(url: str) -> None:
    result = rk(SPEC, "bad-run", "--at", "2", "--url", url)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "workflow  bad-run (inspect.approve)" in out
    assert "position  2 of 0..2" in out
    assert "yielded   Step('ask') at " in out
    assert "recorded  step 'ask' at " in out
    assert 'outcome   ok {"limit":407}' in out
    assert "locals of approve at " in out
    assert "  risky     True" in out
    assert "  customer  'bad-1'" in out


def test_cli_shows_delegated_frames_and_accepts_a_bare_module(url: str) -> None:
    result = rk(__name__, "bad-run", "--at", "1", "--url", url)
    assert result.exit_code == 0, result.output
    assert "locals of limit_for at " in result.stdout
    assert "(where the yield is)" in result.stdout


def test_cli_json(url: str) -> None:
    result = rk(SPEC, "bad-run", "--at", "0", "--url", url, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["position"] == 0
    assert data["positions"] == 3
    assert data["command"]["describe"] == "Step('score')"
    assert data["record"]["outcome"] == {"value": 400}
    [frame] = data["frames"]
    assert frame["function"] == "approve"
    assert frame["locals"]["customer"] == {"type": "str", "repr": "'bad-1'", "value": "bad-1"}


def test_cli_escapes_stored_data_and_reprs(url: str) -> None:
    result = rk(f"{__name__}:waits", "esc\x1b[2J", "--at", "1", "--url", url)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b" not in out
    assert "\u202e" not in out
    assert "esc\\x1b[2J (inspect.waits)" in out
    assert "\\x1b[31mred\\x1b[0m\\u202e" in out
    assert "outcome   pending" in out
    as_json = rk(f"{__name__}:waits", "esc\x1b[2J", "--at", "1", "--url", url, "--json")
    assert "\x1b" not in as_json.stdout
    assert json.loads(as_json.stdout)["workflow_id"] == "esc\x1b[2J"


def test_cli_errors(url: str) -> None:
    unknown = rk(SPEC, "nope", "--at", "0", "--url", url)
    assert unknown.exit_code == 1
    assert "no workflow run with id 'nope'" in unknown.stderr

    beyond = rk(SPEC, "bad-run", "--at", "3", "--url", url)
    assert beyond.exit_code == 2
    assert "--at 3 is out of range: run 'bad-run' holds positions 0 to 2" in beyond.stderr

    negative = rk(SPEC, "bad-run", "--at", "-1", "--url", url)
    assert negative.exit_code == 2

    missing = rk("no_such_app.flows:approve", "bad-run", "--at", "0", "--url", url)
    assert missing.exit_code == 2
    assert "cannot import 'no_such_app.flows'" in missing.stderr

    wrong = rk(f"{__name__}:waits", "bad-run", "--at", "0", "--url", url)
    assert wrong.exit_code == 2
    assert "the log is of workflow 'inspect.approve'" in wrong.stderr

    no_at = rk(SPEC, "bad-run", "--url", url)
    assert no_at.exit_code == 2
    assert "--at" in no_at.stderr
