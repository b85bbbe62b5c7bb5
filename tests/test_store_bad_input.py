"""Bad input to the stores, from callers and from the database itself (issue 13).

Each test reproduces a fault of the torture report: a schema name PostgreSQL
keeps for itself, ids too long to index or holding NUL, permanent database
errors retried as outages, one damaged row stopping a whole engine, and forks
that lost the events their copied records had set.
"""

from __future__ import annotations

import pytest

from replaykit.stores import open_store


@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "pg_toast", "pg_mine"])
def test_postgres_refuses_system_schemas(pg_url: str, schema: str) -> None:
    from replaykit.stores.postgres import PostgresStore

    # auto_migrate=False: were the name accepted, nothing is created in it.
    with pytest.raises(ValueError, match=rf"{schema}.*PostgreSQL's own.*'replaykit'"):
        PostgresStore(pg_url, schema=schema, auto_migrate=False).close()
    with pytest.raises(ValueError, match=rf"{schema}.*PostgreSQL's own"):
        open_store(f"{pg_url}?schema={schema}").close()


def test_postgres_refuses_the_public_schema(pg_url: str) -> None:
    from replaykit.stores.postgres import PostgresStore

    with pytest.raises(ValueError, match=r"'public'.*default is 'replaykit'.*\?schema="):
        PostgresStore(pg_url, schema="public", auto_migrate=False).close()
