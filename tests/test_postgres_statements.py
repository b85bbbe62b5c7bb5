"""The PostgreSQL store's statements.sql: every name explained, used, and in step with the code."""

from __future__ import annotations

import re
from pathlib import Path

import replaykit.stores.postgres as package
from replaykit.stores.postgres.notes import NOTIFY_MAX_KEY
from replaykit.stores.postgres.statements import SQL

_FILE = Path(package.__file__).with_name("statements.sql")


def test_every_statement_says_what_it_is_for() -> None:
    lines = _FILE.read_text("utf-8").splitlines()
    for number, line in enumerate(lines):
        if line.startswith("-- name:"):
            assert lines[number + 1].startswith("-- "), f"no comment under {line!r}"


def test_every_statement_is_called_by_name() -> None:
    code = "".join(
        path.read_text("utf-8") for path in _FILE.parent.glob("*.py") if path.name != "__init__.py"
    )
    unused = [name for name in SQL if f'"{name}"' not in code]
    assert unused == []


def test_notes_are_skipped_at_the_key_length_the_code_uses() -> None:
    limits = {int(n) for n in re.findall(r"octet_length\(\w+\) < (\d+)", "\n".join(SQL.values()))}
    assert limits == {NOTIFY_MAX_KEY}
