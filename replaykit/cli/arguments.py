"""Arguments given as JSON on the command line: a run's or an update's ARGS_JSON and
--kwargs, a message's MESSAGE_JSON."""

from __future__ import annotations

import json
from typing import Any

from replaykit.cli.errors import UsageError

__all__ = ["call_arguments", "json_argument"]


def json_argument(text: str, what: str, example: str) -> Any:
    """`text` parsed as JSON; a usage error naming `what` and quoting `example` if not."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(
            f"{what} is not JSON ({exc}); quote it for the shell, e.g. '{example}'"
        ) from None


def call_arguments(
    args_json: str | None,
    kwargs_json: str | None,
    *,
    of: str,
    example: str,
    object_example: str,
    kwargs_example: str,
    json_example: str,
) -> tuple[list[Any], dict[str, Any]]:
    """ARGS_JSON (a JSON array, default none) and --kwargs (a JSON object, default none)
    as the positional and keyword arguments of a call; `of` says whose arguments they
    are and the examples show each form in the errors."""
    args = [] if args_json is None else json_argument(args_json, "ARGS_JSON", json_example)
    if not isinstance(args, list):
        raise UsageError(
            f"ARGS_JSON must be a JSON array of {of}, e.g. '{example}' (one object argument: "
            f"'{object_example}'; keyword ones: --kwargs)"
        )
    kwargs = {} if kwargs_json is None else json_argument(kwargs_json, "--kwargs", json_example)
    if not isinstance(kwargs, dict):
        raise UsageError(f"--kwargs must be a JSON object, e.g. '{kwargs_example}'")
    return args, kwargs
