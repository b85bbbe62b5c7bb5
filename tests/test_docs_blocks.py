"""Every Python block in README.md and docs/ runs as written, or says why it cannot.

A page's blocks run top to bottom in one namespace (a later block may use what an
earlier one defined, as a reader copying the page would), in a fresh Python process
whose working directory is an empty temporary directory (an `Engine()` there writes
its `replaykit.db` there, not into the repository), with a time bound. A block that
cannot run as written carries a fragment marker, an HTML comment on the last
non-blank line before its fence, with the reason (the rendered page does not show it):

    <!-- fragment: uses `engine` from the page above -->
    ```python
    engine.cancel("order-7")
    ```

docs/design.md, "Docs that run", says the same for writers.

Why not pytest-examples or mktestdocs: both execute blocks inside the pytest process.
Blocks register workflows in the process-wide registry, start engines and their
threads, and configure logging; each page needs a process of its own, a temporary
working directory and a hard time bound. pytest-examples also runs each block as a
module of its own (a page's blocks build on each other) and mktestdocs has no way to
mark a block as a fragment. What is left is a page parser and a small driver.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PYTHON = {"python", "py", "python3"}
#: One page's blocks, all together; a page that needs more is doing too much for a doc.
PAGE_TIMEOUT = 60.0

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<lang>[^\s`]*)[^`]*$")
_FRAGMENT = re.compile(r"^\s*<!--\s*fragment:(?P<why>.*?)-->\s*$")


@attrs.frozen
class Block:
    page: Path
    #: The 1-based line of the block's first line of code (the line after its fence).
    line: int
    lang: str
    source: str
    #: The fragment marker's reason; None for a block that runs.
    fragment: str | None

    @property
    def where(self) -> str:
        return f"{_shown(self.page)}:{self.line}"


def _shown(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


class DocError(ValueError):
    pass


def parse_blocks(page: Path, text: str) -> list[Block]:
    """Every fenced block of a page, with its fragment marker if it has one."""
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _FENCE_OPEN.match(lines[index])
        if opened is None:
            marker = _FRAGMENT.match(lines[index])
            if marker is not None and _next_fence(lines, index + 1) is None:
                raise DocError(
                    f"{page.name}:{index + 1}: a fragment marker must be followed by a "
                    "fenced block (blank lines between are fine)"
                )
            index += 1
            continue
        ticks = opened["ticks"]
        end = index + 1
        while end < len(lines) and lines[end].strip() != ticks:
            end += 1
        if end == len(lines):
            raise DocError(f"{page.name}:{index + 1}: a fence that is never closed")
        fragment = _marker_before(lines, index)
        if fragment is not None and not fragment.strip():
            raise DocError(
                f"{page.name}:{index}: a fragment marker says no reason; write "
                "<!-- fragment: why this block cannot run as written -->"
            )
        body = textwrap.dedent("\n".join(lines[index + 1 : end]))
        blocks.append(
            Block(
                page=page,
                line=index + 2,
                lang=opened["lang"].lower(),
                source=body + "\n",
                fragment=None if fragment is None else fragment.strip(),
            )
        )
        index = end + 1
    return blocks


def _marker_before(lines: list[str], fence: int) -> str | None:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before < 0:
        return None
    marker = _FRAGMENT.match(lines[before])
    return None if marker is None else marker["why"]


def _next_fence(lines: list[str], start: int) -> int | None:
    for index in range(start, len(lines)):
        if not lines[index].strip():
            continue
        return index if _FENCE_OPEN.match(lines[index]) else None
    return None


def python_blocks(page: Path) -> list[Block]:
    return [b for b in parse_blocks(page, page.read_text()) if b.lang in PYTHON]


# Runs in the page's process: each block compiled under the page's path with its own
# line numbers (a traceback points into the markdown), all in one namespace. Afterwards
# a line from a logger no block configured: a page that sets up logging must leave
# every other library's lines printable.
_DRIVER = """
import json, logging, sys
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for block in blocks:
    print(f"[docs-block] {block['where']}", file=sys.stderr, flush=True)
    code = compile("\\n" * (block["line"] - 1) + block["source"], block["page"], "exec")
    exec(code, namespace)
logging.getLogger("some.other.library").warning("a line from another library")
print("[docs-block] done", file=sys.stderr, flush=True)
"""


def run_page(page: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    blocks = [
        {"where": b.where, "page": str(b.page), "line": b.line, "source": b.source}
        for b in python_blocks(page)
        if b.fragment is None
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # A developer's REPLAYKIT_URL must not send a block's Engine() to their database.
    env.pop("REPLAYKIT_URL", None)
    try:
        return subprocess.run(
            [sys.executable, "-c", _DRIVER],
            input=json.dumps(blocks),
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=PAGE_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        running = re.findall(r"^\[docs-block\] (.*)$", err, flags=re.M)
        pytest.fail(
            f"{_shown(page)}: its blocks did not finish in {PAGE_TIMEOUT:.0f} s; "
            f"the block running then starts at {running[-1] if running else '?'}\n{err}"
        )


@pytest.mark.parametrize("page", PAGES, ids=_shown)
def test_the_pages_python_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    done = run_page(page, tmp_path)
    started = re.findall(r"^\[docs-block\] (.*)$", done.stderr, flags=re.M)
    failed_at = started[-1] if started and started[-1] != "done" else None
    assert done.returncode == 0, (
        f"the block at {failed_at} failed (a block that cannot run as written takes "
        f"<!-- fragment: why --> on the line before its fence)\n{done.stderr}"
    )
    assert "--- Logging error ---" not in done.stderr, (
        f"{_shown(page)}: after its blocks, a log line from another library "
        f"cannot be formatted\n{done.stderr}"
    )
    assert _tracebacks(done.stderr) == [], done.stderr


def _tracebacks(stderr: str) -> list[str]:
    """The last line (the exception) of each traceback printed."""
    found = []
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("Traceback (most recent call last):"):
            continue
        last = next((x for x in lines[index + 1 :] if x and not x[0].isspace()), "")
        found.append(last)
    return found


def _imports(source: str) -> list[tuple[str, list[str]]]:
    """`from replaykit... import a, b` statements of a block, parsed or not."""
    found = []
    pattern = r"^\s*from\s+(replaykit[\w.]*)\s+import\s+(\([^)]*\)|[^\n#]+)"
    for module, names in re.findall(pattern, source, flags=re.M):
        listed = [n.split(" as ")[0].strip() for n in names.strip("()").split(",")]
        found.append((module, [n for n in listed if n and not n.startswith("#")]))
    return found


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def test_what_every_block_imports_from_replaykit_exists() -> None:
    # Fragments too: a name a reader copies into their own code must be importable.
    missing = []
    for page in PAGES:
        for block in python_blocks(page):
            for module, names in _imports(block.source):
                loaded = importlib.import_module(module)
                missing += [
                    f"{block.where}: {module}.{name}"
                    for name in names
                    if not hasattr(loaded, name) and not _is_module(f"{module}.{name}")
                ]
    assert missing == []


def test_the_parser_reads_markers_fences_and_indented_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    text = textwrap.dedent(
        """\
        # A page

        ```python
        x = 1
        ```

        <!-- fragment: uses `engine` from elsewhere -->

        ```python
        engine.start(x)
        ```

        - a list item:

          ```py
          y = x + 1
          ```

        ```bash
        echo hi
        ```
        """
    )
    blocks = parse_blocks(page, text)
    assert [(b.line, b.lang, b.source, b.fragment) for b in blocks] == [
        (4, "python", "x = 1\n", None),
        (10, "python", "engine.start(x)\n", "uses `engine` from elsewhere"),
        (16, "py", "y = x + 1\n", None),
        (20, "bash", "echo hi\n", None),
    ]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("<!-- fragment: -->\n```python\nx\n```\n", "says no reason"),
        ("<!-- fragment: why -->\n\nprose\n", "must be followed by a fenced block"),
        ("```python\nx = 1\n", "never closed"),
    ],
)
def test_the_parser_refuses_a_bad_marker_or_fence(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(DocError, match=says):
        parse_blocks(tmp_path / "page.md", text)


def test_a_failing_block_is_named_by_its_page_and_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```python\nx = 1\n```\n\n```python\n\nraise KeyError(x)\n```\n")
    done = run_page(page, tmp_path)
    assert done.returncode != 0
    assert f'File "{page}", line 9' in done.stderr
    assert f"[docs-block] {page}:8" in done.stderr


def test_every_traceback_a_thread_prints_fails_the_page() -> None:
    # A simulated crash of the testing kit is silent now (issue 31): no noise is allowed.
    printed = (
        "Traceback (most recent call last):\n  File 'x', line 1\n    f()\nKeyError: 'workflow_id'\n"
        "Traceback (most recent call last):\n  File 'y', line 2\n"
        "replaykit.testing._session.SimulatedCrash: this simulated process has crashed\n"
    )
    assert _tracebacks(printed) == [
        "KeyError: 'workflow_id'",
        "replaykit.testing._session.SimulatedCrash: this simulated process has crashed",
    ]
