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


def test_notes_go_in_statements_of_their_own() -> None:
    # A sharded database would run pg_notify where a run's rows live, out of the
    # listeners' reach (docs/storage.md, "Past one server").
    notifying = sorted(name for name, text in SQL.items() if "pg_notify" in text)
    assert notifying == ["notify", "notify_continued", "notify_deleted", "notify_many"]
    for name in notifying:
        assert not re.search(r"\b(workflows|records|messages|events)\b", SQL[name]), name


class _Recorded:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object]] = []

    def execute(self, query: str, params: object = None) -> None:
        self.sent.append((query, params))


def test_notes_are_skipped_at_the_key_length_the_code_uses() -> None:
    from replaykit.stores.postgres.database import Database

    db = Database.__new__(Database)
    db.origin, db.channel, db.sql = "o:", "ch", {"notify_many": "NOTIFY MANY"}
    conn = _Recorded()
    long_key = "k" * NOTIFY_MAX_KEY
    db.notify(conn, [("message", "short"), ("event", long_key), ("event", long_key[:-1])])  # type: ignore[arg-type]
    assert conn.sent == [("NOTIFY MANY", ("ch", ["o:message:short", f"o:event:{long_key[:-1]}"]))]
    db.notify(conn, [("event", long_key)])  # type: ignore[arg-type]
    assert len(conn.sent) == 1  # nothing left to send: no statement
