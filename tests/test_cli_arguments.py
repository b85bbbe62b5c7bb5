"""replaykit/cli/arguments.py: a call's arguments given as JSON on the command line."""

from __future__ import annotations

from typing import Any

import pytest

from replaykit.cli.arguments import call_arguments, json_argument
from replaykit.cli.errors import EXIT_BAD_INPUT, UsageError

EXAMPLES: dict[str, Any] = {
    "of": "the workflow's arguments",
    "example": '["o-1", 100]',
    "object_example": '[{"id": "o-1"}]',
    "kwargs_example": '{"rush": true}',
    "json_example": '["o-1"]',
}


def test_json_is_parsed_and_bad_json_is_a_usage_error_with_an_example() -> None:
    assert json_argument('{"card": "visa"}', "MESSAGE_JSON", '{"a": 1}') == {"card": "visa"}
    with pytest.raises(UsageError, match=r"MESSAGE_JSON is not JSON \(.*\); quote it") as bad:
        json_argument("{card: visa}", "MESSAGE_JSON", '{"a": 1}')
    assert bad.value.exit_code == EXIT_BAD_INPUT
    assert "e.g. '{\"a\": 1}'" in bad.value.message


def test_a_call_takes_an_array_and_an_object_each_defaulting_to_none() -> None:
    assert call_arguments(None, None, **EXAMPLES) == ([], {})
    assert call_arguments('["o-1", 100]', '{"rush": true}', **EXAMPLES) == (
        ["o-1", 100],
        {"rush": True},
    )


def test_an_object_where_the_array_belongs_says_how_to_pass_one() -> None:
    with pytest.raises(UsageError) as bad:
        call_arguments('{"id": "o-1"}', None, **EXAMPLES)
    assert bad.value.message == (
        "ARGS_JSON must be a JSON array of the workflow's arguments, e.g. '[\"o-1\", 100]' "
        '(one object argument: \'[{"id": "o-1"}]\'; keyword ones: --kwargs)'
    )


def test_kwargs_must_be_an_object() -> None:
    with pytest.raises(
        UsageError, match=r"--kwargs must be a JSON object, e.g. '\{\"rush\": true\}'"
    ):
        call_arguments(None, "[1]", **EXAMPLES)
    with pytest.raises(UsageError, match="--kwargs is not JSON"):
        call_arguments(None, "rush=true", **EXAMPLES)
