"""`replaykit lint`: check workflow bodies for what breaks replay; reads code, runs nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from replaykit.cli.echo import echo, echo_json
from replaykit.cli.errors import EXIT_BAD_INPUT, EXIT_FAILED, UsageError, one_line
from replaykit.cli.options import json_option

__all__ = ["lint_command"]


@click.command("lint")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option
def lint_command(paths: tuple[Path, ...], as_json: bool) -> None:
    """Check the workflow bodies in PATHS (files, directories) for what breaks replay.

    Reads the code, imports and runs nothing. Reports clock reads, randomness, the
    environment, I/O, threads, set iteration, id()/hash(), changed globals, and
    slips (a command not yielded, a step's function called directly, a yield of
    something that is not a command, async def workflows), each as
    file:line:col, a code, what is wrong and the fix. `# replaykit: ignore[CODE]`
    on a line silences it there.

    Exit 0 when nothing is found; 1 on findings; 2 for a path that does not exist
    or a file that does not parse.
    """
    from replaykit.lint import lint_file, python_files

    try:
        files = python_files(paths)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    findings = []
    unreadable: list[tuple[str, str]] = []
    for path in files:
        try:
            findings.extend(lint_file(path))
        except SyntaxError as exc:
            where = f"{path}:{exc.lineno or 1}:{exc.offset or 1}"
            unreadable.append((where, f"syntax error: {exc.msg}"))
        except (OSError, UnicodeDecodeError) as exc:
            unreadable.append((str(path), f"cannot read it ({one_line(exc)})"))
    if as_json:
        echo_json(
            {
                "files": len(files),
                "findings": [finding.to_json() for finding in findings],
                "errors": [{"where": where, "error": why} for where, why in unreadable],
            }
        )
    else:
        for finding in findings:
            echo(finding.format())
        for where, why in unreadable:
            echo(f"Error: {where}: {why}", err=True)
        checked = f"{len(files) - len(unreadable)} file(s) checked"
        if unreadable:
            checked += f", {len(unreadable)} could not be read"
        echo(f"{len(findings)} finding(s), {checked}" if findings else f"no findings, {checked}")
    if unreadable:
        sys.exit(EXIT_BAD_INPUT)
    if findings:
        sys.exit(EXIT_FAILED)
