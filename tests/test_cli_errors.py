"""replaykit/cli/errors.py: how a command fails, in one line on stderr and an exit code."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from conftest import error_line
from replaykit.cli.errors import EXIT_BAD_INPUT, EXIT_FAILED, CliError, Group, one_line
from replaykit.errors import WorkflowNotFound


@click.group(cls=Group)
def app() -> None:
    pass


@app.command()
def crash() -> None:
    raise KeyError("x")


@app.command()
def explode() -> None:
    raise RuntimeError("disk\nfull")


@app.command()
@click.option("--count", type=int, required=True)
def count(count: int) -> None:
    click.echo(str(count))


def test_a_message_of_ours_is_kept_and_anything_else_is_named() -> None:
    assert one_line(WorkflowNotFound("no workflow run with id 'x'")) == (
        "no workflow run with id 'x'"
    )
    assert one_line(ValueError("bad\n  input")) == "bad input"
    assert one_line(RuntimeError("disk\nfull")) == "RuntimeError: disk full"
    assert one_line(RuntimeError()) == "RuntimeError"


def test_a_cli_error_hides_passwords_and_hidden_characters() -> None:
    error = CliError("cannot reach postgresql://app:s3cret@db/x\x1b[2J")
    assert error.message == "cannot reach postgresql://app:***@db/x\\x1b[2J"
    assert error.exit_code == EXIT_FAILED


def test_any_exception_a_command_lets_through_is_one_line_and_exit_1() -> None:
    result = CliRunner().invoke(app, ["explode"])
    assert error_line(result, EXIT_FAILED) == "Error: RuntimeError: disk full"
    assert "'x'" in error_line(CliRunner().invoke(app, ["crash"]), EXIT_FAILED)


def test_bad_usage_is_one_line_pointing_at_the_help_and_exit_2() -> None:
    line = error_line(CliRunner().invoke(app, ["count", "--count", "many"]), EXIT_BAD_INPUT)
    assert "'many' is not a valid integer" in line
    assert line.endswith("(see 'app count --help')")


def test_debug_lets_the_traceback_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAYKIT_DEBUG", "1")
    result = CliRunner().invoke(app, ["explode"])
    assert isinstance(result.exception, RuntimeError)
