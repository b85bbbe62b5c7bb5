"""The console script works whatever extras are installed.

Without the `cli` extra (no click, no rich) `replaykit --help` still lists the
commands and says what to install; without the `ui` extra `replaykit --help`
works and `replaykit ui` says what to install. Each runs in a real process in
which the missing packages cannot be imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from click.testing import CliRunner

from replaykit import __main__ as entry
from replaykit.cli import cli

REPO = Path(__file__).resolve().parent.parent

# Run the console script's function with some packages made unimportable (None
# in sys.modules makes `import x` raise ImportError), then say whether the UI
# was imported along the way.
SCRIPT = """
import sys
for name in sys.argv[1].split(","):
    if name:
        sys.modules[name] = None
args = sys.argv[2:]
sys.argv = ["replaykit", *args]
from replaykit.__main__ import main
try:
    main()
finally:
    print("ui imported" if "replaykit.ui" in sys.modules else "ui not imported", file=sys.stderr)
"""


def run(blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REPLAYKIT_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, blocked, *args],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip


def test_the_console_script_is_the_module_that_needs_no_click() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["replaykit"] == "replaykit.__main__:main"
    assert "click" not in str(project["dependencies"])  # the core stays attrs and cattrs


def test_help_without_click_lists_the_commands_and_what_to_install() -> None:
    for args in (["--help"], [], ["-h"], ["workflows", "list", "--help"]):
        done = run("click,rich", *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "pip install 'replaykit[cli]'" in done.stdout
        for name, _ in entry.COMMANDS:
            assert f"\n  {name} " in done.stdout, name
    version = run("click,rich", "--version")
    assert version.returncode == 0 and version.stdout.startswith("replaykit, version")


def test_any_other_command_without_click_fails_in_one_line() -> None:
    done = run("click,rich", "workflows", "list")
    assert done.returncode == 1 and done.stdout == ""
    first, *rest = done.stderr.strip().splitlines()
    assert first.startswith("Error: ") and "pip install 'replaykit[cli]'" in first
    assert rest == ["ui not imported"] and "Traceback" not in done.stderr


def test_the_fallbacks_list_is_the_commands_list() -> None:
    assert [name for name, _ in entry.COMMANDS] == sorted(cli.commands)


def test_what_the_one_module_cli_exported_still_imports_from_the_package() -> None:
    # replaykit/cli.py became a package of rooms; callers imported these from it.
    from replaykit import cli as package
    from replaykit._text import format_duration, printable
    from replaykit.cli import errors, options, root, store

    assert (package.cli, package.main) == (root.cli, root.main)
    assert (package.EXIT_FAILED, package.EXIT_BAD_INPUT) == (
        errors.EXIT_FAILED,
        errors.EXIT_BAD_INPUT,
    )
    assert (package.parse_duration, package.parse_when) == (
        options.parse_duration,
        options.parse_when,
    )
    assert (package.format_duration, package.printable) == (format_duration, printable)
    assert package._open is store.open_store


def test_help_works_without_the_ui_extra_and_ui_says_what_to_install() -> None:
    for blocked in ("starlette", "uvicorn", "jinja2"):
        done = run(blocked, "--help")
        assert done.returncode == 0, done.stderr
        assert "\n  ui " in done.stdout and "ui not imported" in done.stderr
        refused = run(blocked, "ui", "--port", "0")
        assert refused.returncode == 1
        first, *_ = refused.stderr.strip().splitlines()
        assert first == (
            "Error: the web UI needs starlette, uvicorn and jinja2 "
            f"({blocked} is not installed): pip install 'replaykit[ui]'"
        )


def test_ui_runs_the_web_uis_own_command() -> None:
    result = CliRunner().invoke(cli, ["ui", "--help"])
    assert result.exit_code == 0, result.output
    assert "--token" in result.output and "Runs no workflow code" in result.output
    # Its own checks answer, in the command's one-line form.
    refused = CliRunner().invoke(cli, ["ui", "--host", "0.0.0.0", "--url", "memory://"])
    assert refused.exit_code == 2 and refused.stderr.startswith("Error: ")
    assert len(refused.stderr.strip().splitlines()) == 1
