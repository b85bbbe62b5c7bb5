"""replaykit/cli/echo.py: what reaches the terminal of stored data, escaped."""

from __future__ import annotations

import json

import pytest

from replaykit.cli.echo import echo, echo_json


def test_a_line_of_stored_data_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    echo("cancelled 'evil\x1b]0;owned\x07'")
    echo("to stderr\x9b", err=True)
    out, err = capsys.readouterr()
    assert out == "cancelled 'evil\\x1b]0;owned\\x07'\n"
    assert err == "to stderr\\x9b\n"


def test_json_is_escaped_and_still_the_same_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = {"id": "r\u202e1", "when": None, "n": 3}
    echo_json(data)
    out = capsys.readouterr().out
    assert "\u202e" not in out and "\\u202e" in out
    assert json.loads(out) == data
