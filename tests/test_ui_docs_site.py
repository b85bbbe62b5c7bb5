"""The docs site (mkdocs.yml over docs/) builds with --strict, and --strict catches a
broken link. Without mkdocs the tests are skipped on a laptop and fail in CI."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_mkdocs() -> None:
    missing = [
        name
        for name in ("mkdocs", "material", "mkdocstrings")
        if importlib.util.find_spec(name) is None
    ]
    if not missing:
        return
    why = f"{', '.join(missing)} not installed: pip install -e '.[docs]'"
    if IN_CI:
        pytest.fail(f"CI builds the docs site: {why}")
    pytest.skip(why)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        # The banner about mkdocs 2 is not the site's business.
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    require_mkdocs()
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    for page in ("index.html", "ui/index.html", "api-reference/engines/index.html"):
        assert (site / page).is_file(), page
    engines = (site / "api-reference/engines/index.html").read_text(encoding="utf-8")
    # The reference is drawn from the docstrings, not written by hand.
    assert 'id="replaykit.Engine.start"' in engines
    assert 'id="replaykit.AsyncEngine.start"' in engines
    assert (site / "images/runs.png").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    require_mkdocs()
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    index = tmp_path / "docs" / "index.md"
    index.write_text(
        index.read_text(encoding="utf-8") + "\nSee [the missing page](no-such-page.md).\n",
        encoding="utf-8",
    )
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stdout + done.stderr
