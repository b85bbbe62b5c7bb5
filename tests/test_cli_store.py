"""The command reads store URLs with the library's parser, `parse_store_url`.

What `open_store` refuses the command refuses with the same words, what it
accepts (SQLite options, a PostgreSQL schema and connect_timeout) the command
honours, and the command adds only what an operator needs: no empty database
or schema created by a typo, a short connect timeout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import error_line, rk
from replaykit.cli.store import open_store as command_open
from replaykit.stores import SqliteStore, StoreURL, open_store, parse_store_url


@pytest.mark.parametrize(
    "url",
    [
        "nosuch://x",
        "no-scheme-at-all",
        "memory://something",
        "sqlite://host/x.db",
        "sqlite:///x.db?journal=wal",
        "sqlite:///x.db?busy_timeout_ms=soon",
        "postgresql://h/db?schema=a&schema=b",
        "postgresql://h/db?connect_timeout=later",
    ],
)
def test_the_command_refuses_what_open_store_refuses_in_its_words(url: str) -> None:
    with pytest.raises(ValueError) as refused:
        open_store(url)
    why = str(refused.value).split(". Accepted forms")[0].split(": ", 1)[1]
    assert why in error_line(rk("workflows", "list", "--url", url))


def test_the_parser_says_what_a_url_names_without_opening_it(tmp_path: Path) -> None:
    assert parse_store_url("memory://") == StoreURL("memory")
    path = tmp_path / "a b.db"
    parsed = parse_store_url(f"sqlite:///{path}?busy_timeout_ms=250&synchronous=FULL")
    assert parsed == StoreURL("sqlite", str(path), {"busy_timeout_ms": 250, "synchronous": "FULL"})
    assert not path.exists()  # parsing opens nothing
    pg = parse_store_url("postgres://u:secret@db:5432/app?schema=ops&connect_timeout=3&sslmode=x")
    assert pg.kind == "postgres"
    assert pg.options == {"schema": "ops", "connect_timeout": 3.0}
    assert "schema" not in pg.target and "sslmode=x" in pg.target  # the server's options stay
    assert "secret" not in repr(pg)


def test_the_command_opens_sqlite_with_the_urls_options(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ops.db'}?busy_timeout_ms=1234"
    open_store(url).close()
    store = command_open(url, create=False)
    try:
        assert isinstance(store, SqliteStore)
        assert store._busy_timeout_ms == 1234
    finally:
        store.close()
    assert "no workflow runs match" in rk("workflows", "list", "--url", url).stdout


def test_the_command_opens_postgres_without_migrating(pg_url: str, pg_schema: str) -> None:
    url = f"{pg_url}?schema={pg_schema}&connect_timeout=7"
    store = command_open(url, create=False)
    try:
        assert store._db.connect_timeout == 7.0  # type: ignore[attr-defined]
        assert store.schema_status()[0] == 0  # type: ignore[attr-defined]  # nothing created
    finally:
        store.close()
    assert "replaykit db migrate" in error_line(rk("workflows", "list", "--url", url))
