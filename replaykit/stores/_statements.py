"""Named SQL statements, read once from a `.sql` file of `-- name:` blocks.

Each SQL store keeps its statements in one file per dialect
(`stores/postgres/statements.sql`, `stores/sqlite/statements.sql`), so a
statement's two dialects sit under the same name and a reader finds the SQL
apart from the Python that runs it. A block starts at a line
`-- name: claim_batch` and runs to the next such line; the lines of comment
right under the name say what the statement is for and are kept out of the text
sent to the server. Statements built at run time from a filter (a listing's
WHERE clause) stay builders in Python; everything fixed lives here.

Both dialects answer the same questions under the same names
(tests/test_statements.py holds them to it, and the memory store names its twin of
each). A statement only one dialect needs — a PostgreSQL advisory lock, SQLite's
switch to WAL — says so in a comment line `-- only: <why the other has none>`
right under its name.

A piece of SQL that several statements share word for word (the gate a batch of
records passes, the runs a batch locks) is a part: a block that starts at a line
`-- part: locked_runs`, written once, and set into each statement that names it on
a line `{part:locked_runs}` when the file is read. A part is no statement of its own
(it has no twin in the other dialect), and a part that no statement uses, or a use
of a part the file lacks, is refused.
"""

from __future__ import annotations

import re
from importlib import resources

__all__ = ["StatementError", "Statements", "dialect_only", "parse_statements"]

_NAME_LINE = re.compile(r"^--\s*(?P<kind>name|part):\s*(?P<name>\S*)\s*$")
_PART_USE = re.compile(r"\{part:(?P<name>[^}]*)\}")
_ONLY_LINE = re.compile(r"^--\s*only:\s*(?P<why>.*?)\s*$")
_VALID_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class StatementError(ValueError):
    """A statements file is malformed: a bad or repeated name, or an empty block."""


def parse_statements(text: str, *, source: str) -> dict[str, str]:
    """The statements in `text` by name, each stripped of its leading comments.

    `source` names the file in errors. Text before the first `-- name:` line may
    only be comments or blank (a header saying what the file is).
    """
    return _parse(text, source=source)[0]


def dialect_only(text: str, *, source: str) -> dict[str, str]:
    """The statements of `text` that only this dialect needs, with the reason each gives."""
    return _parse(text, source=source)[1]


def _parse(text: str, *, source: str) -> tuple[dict[str, str], dict[str, str]]:
    statements: dict[str, str] = {}
    parts: dict[str, str] = {}
    only: dict[str, str] = {}
    name: str | None = None
    is_part = False
    body: list[str] = []

    def close(line_number: int) -> None:
        if name is None:
            return
        if is_part:
            part = _strip_leading_comments(body)
            if not part:
                raise StatementError(
                    f"{source}: part {name!r} (ending before line {line_number}) has no SQL"
                )
            parts[name] = part
            return
        for line in body:
            if line.strip() and not line.strip().startswith("--"):
                break
            said = _ONLY_LINE.match(line.strip())
            if said is not None:
                if not said["why"]:
                    raise StatementError(
                        f"{source}: statement {name!r} says '-- only:' without saying why"
                    )
                only[name] = said["why"]
        sql = _strip_leading_comments(body)
        if not sql:
            raise StatementError(
                f"{source}: statement {name!r} (ending before line {line_number}) has no SQL"
            )
        statements[name] = sql

    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        match = _NAME_LINE.match(line.strip())
        if match is not None:
            close(number)
            name, is_part = match["name"], match["kind"] == "part"
            what = "part" if is_part else "statement"
            if not _VALID_NAME.match(name):
                raise StatementError(
                    f"{source}, line {number}: {what} name {name!r} must be lowercase "
                    "letters, digits and underscores, starting with a letter"
                )
            if name in (parts if is_part else statements):
                raise StatementError(f"{source}, line {number}: {what} {name!r} is defined twice")
            body = []
        elif name is None:
            if line.strip() and not line.strip().startswith("--"):
                raise StatementError(
                    f"{source}, line {number}: SQL before the first '-- name:' line"
                )
        else:
            body.append(line)
    close(len(lines) + 1)
    return _with_parts(statements, parts, source=source), only


def _with_parts(
    statements: dict[str, str], parts: dict[str, str], *, source: str
) -> dict[str, str]:
    """Each statement with the parts it names set in; every part must be used."""
    used: set[str] = set()

    def part(match: re.Match[str]) -> str:
        wanted = match["name"]
        if wanted not in parts:
            raise StatementError(
                f"{source}: a statement uses part {wanted!r}, which the file does not "
                f"define (its parts: {', '.join(sorted(parts)) or 'none'})"
            )
        used.add(wanted)
        return parts[wanted]

    built = {name: _PART_USE.sub(part, sql) for name, sql in statements.items()}
    unused = sorted(set(parts) - used)
    if unused:
        raise StatementError(f"{source}: part {unused[0]!r} is used by no statement")
    return built


def _strip_leading_comments(lines: list[str]) -> str:
    start = 0
    while start < len(lines) and (
        not lines[start].strip() or lines[start].strip().startswith("--")
    ):
        start += 1
    return "\n".join(lines[start:]).strip()


class Statements(dict[str, str]):
    """A dialect's statements by name; a missing name says which file lacks it.

    A dict, so that a room that names its statement where it runs it (`SQL["claim"]`)
    pays a dict's lookup and no Python call; only a miss calls `__missing__`."""

    def __init__(self, package: str, filename: str) -> None:
        self.source = f"{package.replace('.', '/')}/{filename}"
        text = resources.files(package).joinpath(filename).read_text("utf-8")
        by_name, self.only = _parse(text, source=self.source)
        super().__init__(by_name)

    def __missing__(self, name: str) -> str:
        raise KeyError(f"no statement {name!r} in {self.source}")
