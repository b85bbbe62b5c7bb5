"""Naming the user's code on the command line: `module:workflow` (replay, inspect, queues)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from replaykit.cli.errors import UsageError, one_line
from replaykit.log import Log
from replaykit.registry import Workflow, lookup

__all__ = ["BadInput", "import_app", "import_spec", "parse_spec", "resolve_workflow"]


class BadInput(Exception):
    """A replay input the user must fix (file, spec); exit 2, not a divergence."""


def parse_spec(spec: str) -> tuple[str, str]:
    """(module, attribute) from `module:attr`; the attribute is '' for a bare module."""
    module_name, sep, attr = spec.partition(":")
    if (
        not module_name
        or (sep and not attr)
        or not all(p.isidentifier() for p in module_name.split("."))
        or not all(p.isidentifier() for p in attr.split(".") if attr)
    ):
        raise BadInput(
            f"{spec!r} is not a workflow spec; write module:workflow, e.g. myapp.flows:checkout "
            "(or just the module, to use the workflow each log names)"
        )
    return module_name, attr


def import_spec(spec: str) -> tuple[Any, str]:
    """Import the module `spec` names; (the module, the attribute path or '')."""
    module_name, attr = parse_spec(spec)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BadInput(
            f"cannot import {module_name!r}: {exc}; run from your project's directory "
            "(or pass --app-dir), or set PYTHONPATH"
        ) from exc
    except Exception as exc:
        raise BadInput(f"importing {module_name!r} failed: {one_line(exc)}") from exc
    return module, attr


def import_app(spec: str, app_dir: Path) -> tuple[Any, str]:
    """`import_spec` with `app_dir` first on the import path (--app-dir), a spec that
    does not import being the command's usage error."""
    where = str(app_dir.resolve())
    if where not in sys.path:
        sys.path.insert(0, where)
    try:
        return import_spec(spec)
    except BadInput as exc:
        raise UsageError(str(exc)) from exc


def resolve_workflow(spec: str, module: Any, attr: str, log: Log) -> Workflow[..., Any]:
    """The @workflow `module.attr`, or with no attribute the one the log names.

    The user names the module on the command line; stored data never chooses what
    is imported (a log's workflow name is only looked up among registered ones).
    """
    if not attr:
        if not log.workflow_name:
            raise BadInput(f"{spec!r} names no workflow, and the log names none either")
        try:
            return lookup(log.workflow_name)
        except LookupError as exc:
            raise BadInput(one_line(exc)) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise BadInput(f"module {module.__name__!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not isinstance(target, Workflow):
        raise BadInput(
            f"{spec} is a {type(target).__name__}, not a workflow; decorate the generator "
            "function with @replaykit.workflow"
        )
    if log.workflow_name and log.workflow_name != target.workflow_name:
        raise BadInput(
            f"the log is of workflow {log.workflow_name!r}, but {spec} is workflow "
            f"{target.workflow_name!r}"
        )
    return target
