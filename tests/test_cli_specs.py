"""replaykit/cli/specs.py: naming the user's code on the command line, `module:workflow`."""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest

from replaykit import Step, workflow
from replaykit.cli.specs import BadInput, import_spec, parse_spec, resolve_workflow
from replaykit.log import Log


@workflow(name="specs.checkout")
def checkout() -> Generator[Any, Any, int]:
    yield Step("a", lambda: 1)
    return 1


NOT_A_WORKFLOW = 42
HERE = sys.modules[__name__]


def test_a_spec_is_a_module_and_an_optional_attribute() -> None:
    assert parse_spec("myapp.flows:checkout") == ("myapp.flows", "checkout")
    assert parse_spec("myapp.flows") == ("myapp.flows", "")
    assert parse_spec("m:a.b") == ("m", "a.b")


@pytest.mark.parametrize("spec", ["", ":x", "m:", "my-app:x", "m:1a", "m.:x"])
def test_what_is_no_spec_says_how_to_write_one(spec: str) -> None:
    with pytest.raises(BadInput, match="is not a workflow spec; write module:workflow"):
        parse_spec(spec)


def test_a_module_that_cannot_be_imported_says_where_to_run_from() -> None:
    with pytest.raises(BadInput, match=r"cannot import 'no_such_specs_mod'.*--app-dir"):
        import_spec("no_such_specs_mod:wf")
    module, attr = import_spec(f"{__name__}:checkout")
    assert module is HERE and attr == "checkout"


def test_the_workflow_named_is_checked_against_the_log() -> None:
    spec = f"{__name__}:checkout"
    assert resolve_workflow(spec, HERE, "checkout", Log(workflow_name="specs.checkout")) is checkout
    assert resolve_workflow(spec, HERE, "checkout", Log()) is checkout
    with pytest.raises(BadInput, match="the log is of workflow 'other'"):
        resolve_workflow(spec, HERE, "checkout", Log(workflow_name="other"))


def test_a_bare_module_takes_the_workflow_the_log_names_among_the_registered() -> None:
    assert resolve_workflow(__name__, HERE, "", Log(workflow_name="specs.checkout")) is checkout
    with pytest.raises(BadInput, match="names no workflow, and the log names none either"):
        resolve_workflow(__name__, HERE, "", Log())
    with pytest.raises(BadInput, match=r"no workflow named 'specs\.unknown' is registered"):
        resolve_workflow(__name__, HERE, "", Log(workflow_name="specs.unknown"))


def test_an_attribute_that_is_no_workflow_is_named() -> None:
    with pytest.raises(BadInput, match="has no attribute 'missing'"):
        resolve_workflow("x", HERE, "missing", Log())
    with pytest.raises(BadInput, match="is a int, not a workflow; decorate"):
        resolve_workflow("x", HERE, "NOT_A_WORKFLOW", Log())
