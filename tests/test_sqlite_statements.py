"""The SQLite store's named statements: each one compiles, each one is run, columns agree."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

import replaykit.stores.sqlite as package
from replaykit.stores._sql import RECORD_COLUMNS, WORKFLOW_COLUMNS
from replaykit.stores.sqlite import SqliteStore
from replaykit.stores.sqlite.migrations import MIGRATIONS
from replaykit.stores.sqlite.queries import SQL

_BINDINGS = re.compile(r"uses (\d+), and there are 0 supplied")


def _columns(text: str) -> list[str]:
    return [c.strip() for c in text.split(",")]


@pytest.fixture
def conn() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for migration in MIGRATIONS:
        for statement in migration:
            conn.execute(statement)
    return conn


def _bindings(conn: sqlite3.Connection, text: str) -> int:
    try:
        conn.execute("EXPLAIN " + text)
    except sqlite3.ProgrammingError as exc:
        found = _BINDINGS.search(str(exc))
        assert found is not None, exc
        return int(found[1])
    return 0


@pytest.mark.parametrize("name", [name for name in SQL if not SQL[name].startswith("PRAGMA")])
def test_each_statement_compiles_against_the_latest_schema(
    conn: sqlite3.Connection, name: str
) -> None:
    text = SQL[name]
    conn.execute("EXPLAIN " + text, (None,) * _bindings(conn, text))


def test_the_reads_of_whole_rows_name_the_columns_the_decoders_expect(
    conn: sqlite3.Connection,
) -> None:
    def described(name: str, params: tuple[object, ...] | None = None) -> list[str]:
        text = SQL[name]
        conn.execute("BEGIN")
        try:
            cursor = conn.execute(text, params or (None,) * _bindings(conn, text))
            return [column[0] for column in cursor.description]
        finally:
            conn.execute("ROLLBACK")

    assert described("get_workflow") == _columns(WORKFLOW_COLUMNS)
    assert described("claim", ("e", "q", "v", 0, 1))[:-1] == _columns(WORKFLOW_COLUMNS)
    for name in ("load_log", "get_record"):
        assert described(name) == _columns(RECORD_COLUMNS), name
    assert described("load_log_limited", ("w", 0, 1)) == _columns(RECORD_COLUMNS)


def test_every_statement_is_run_by_a_room() -> None:
    source = "\n".join(
        path.read_text("utf-8") for path in Path(package.__file__).parent.glob("*.py")
    )
    unused = [name for name in SQL if f'"{name}"' not in source]
    assert unused == []


def test_every_statement_a_room_names_is_in_the_file() -> None:
    # The rooms name their statements where they run them, so a misspelt name would
    # fail only when that path runs: it is caught here, for every room at once.
    named = {
        name
        for path in Path(package.__file__).parent.glob("*.py")
        for name in re.findall(r'SQL\["(\w+)"\]', path.read_text("utf-8"))
    }
    assert len(named) > 50  # the scan found the rooms' names
    assert sorted(named - set(SQL)) == []


def test_a_missing_statement_names_its_file() -> None:
    with pytest.raises(KeyError, match=r"no statement 'nope' in replaykit/stores/sqlite/"):
        SQL["nope"]


def test_the_pragmas_answer(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    try:
        assert store.journal_mode() == "wal"
        assert store.schema_status() == (len(MIGRATIONS), len(MIGRATIONS))
    finally:
        store.close()
