"""docs/api.md lists every public method of the engines, the clients and their handles.

Each class has a `### \\`Name\\`` heading under "## Methods"; each public method
or property of the class has one line there, `- \\`signature\\` — what it does`,
the signature as rendered here from the code (parameter names, kinds and
defaults; no annotations). A method missing from the doc, a documented one the
class lacks, or a signature that changed fails.
"""

from __future__ import annotations

import enum
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from replaykit.client import AsyncClient, AsyncClientHandle, Client, ClientHandle
from replaykit.runtime.aio import AsyncEngine, AsyncWorkflowHandle
from replaykit.runtime.engine import Engine, WorkflowHandle

API = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
CLASSES = [
    Engine,
    WorkflowHandle,
    AsyncEngine,
    AsyncWorkflowHandle,
    Client,
    ClientHandle,
    AsyncClient,
    AsyncClientHandle,
]


def _default(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, tuple):
        return "(" + ", ".join(_default(v) for v in value) + ")"
    return repr(value)


def render(name: str, fn: Any) -> str:
    """`name(a, /, b, *args, c=1, **kw)`: what the doc writes for a method."""
    parts: list[str] = []
    positional_only = keyword_only = False
    for param in list(inspect.signature(fn).parameters.values())[1:]:  # past self
        if param.kind is param.POSITIONAL_ONLY:
            positional_only = True
        elif positional_only:
            parts.append("/")
            positional_only = False
        if param.kind is param.VAR_POSITIONAL:
            keyword_only = True
            parts.append("*" + param.name)
            continue
        if param.kind is param.VAR_KEYWORD:
            parts.append("**" + param.name)
            continue
        if param.kind is param.KEYWORD_ONLY and not keyword_only:
            keyword_only = True
            parts.append("*")
        default = "" if param.default is param.empty else "=" + _default(param.default)
        parts.append(param.name + default)
    if positional_only:
        parts.append("/")
    return f"{name}({', '.join(parts)})"


def public_surface(cls: type) -> dict[str, str]:
    """Public method name -> rendered signature; properties render as their name."""
    surface: dict[str, str] = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(cls, name)
        if isinstance(static, property):
            surface[name] = name
        elif callable(static):
            surface[name] = render(name, getattr(cls, name))
    return surface


def documented(cls: type) -> dict[str, str]:
    methods = API.split("\n## Methods", 1)[1]
    heading = f"\n### `{cls.__name__}`\n"
    assert heading in methods, f"docs/api.md has no section {heading.strip()!r} under ## Methods"
    body = methods.split(heading, 1)[1].split("\n#", 1)[0]
    entries: dict[str, str] = {}
    for signature, rest in re.findall(r"^- `([^`]+)`(.*)$", body, flags=re.M):
        name = signature.split("(", 1)[0]
        text = re.sub(r"^\s*\(property\)", "", rest).strip()
        assert text.startswith("— ") and len(text) > 4, f"{cls.__name__}.{name}: no one-line text"
        entries[name] = signature
    return entries


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_public_method_is_documented_with_its_signature(cls: type) -> None:
    code = public_surface(cls)
    doc = documented(cls)
    assert sorted(set(code) - set(doc)) == [], f"{cls.__name__}: public but not in docs/api.md"
    assert sorted(set(doc) - set(code)) == [], f"{cls.__name__}: in docs/api.md, not in the code"
    stale = {name: (doc[name], code[name]) for name in code if doc[name] != code[name]}
    assert stale == {}, f"{cls.__name__}: docs/api.md signature (doc, code) differs"


def test_the_renderer_sees_kinds_and_defaults() -> None:
    class Sample:
        def method(self, a: int, /, b: int, *args: Any, c: int = 1, **kw: Any) -> None: ...

        def keywords(self, *, d: enum.Enum | None = None) -> None: ...

    assert render("method", Sample.method) == "method(a, /, b, *args, c=1, **kw)"
    assert render("keywords", Sample.keywords) == "keywords(*, d=None)"
    assert public_surface(Sample) == {
        "keywords": "keywords(*, d=None)",
        "method": render("method", Sample.method),
    }
