"""The public surface: `__all__` and docs/api.md list the same names, and they exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import replaykit
import replaykit.testing

API = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()


def documented(section: str) -> set[str]:
    body = API.split(f"## `{section}`", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([A-Za-z_]+)`", body, flags=re.M))


@pytest.mark.parametrize("module", [replaykit, replaykit.testing])
def test_all_matches_the_api_doc(module: object) -> None:
    names = set(module.__all__)  # type: ignore[attr-defined]
    docs = documented(module.__name__)  # type: ignore[attr-defined]
    assert names - docs == set(), "public but undocumented"
    assert docs - names == set(), "documented but not public"
    for name in names:
        assert getattr(module, name) is not None


def test_the_package_is_typed() -> None:
    assert (Path(replaykit.__file__).parent / "py.typed").exists()


def test_the_store_filter_the_docs_use_is_public() -> None:
    # docs/testing.md lists forks with engine.store.list_workflows(WorkflowFilter(...)).
    from replaykit import WorkflowFilter
    from replaykit.stores import WorkflowFilter as in_stores

    assert WorkflowFilter is in_stores
    assert "WorkflowFilter" in replaykit.__all__
    assert WorkflowFilter(forked_from="order-5").forked_from == "order-5"
