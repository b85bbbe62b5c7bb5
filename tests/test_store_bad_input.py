"""Bad input to the stores, from callers and from the database itself (issue 13).

Each test reproduces a fault of the torture report: a schema name PostgreSQL
keeps for itself, ids too long to index or holding NUL, permanent database
errors retried as outages, one damaged row stopping a whole engine, and forks
that lost the events their copied records had set.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import pytest

from replaykit import Engine, Recv, SetEvent, workflow
from replaykit.errors import StoreUnavailable
from replaykit.log import Status
from replaykit.stores import open_store


@workflow(name="bad-input-waits")
def waits(tag: str) -> Generator[Any, Any, str]:
    yield SetEvent("tag", tag)
    message = yield Recv("go")
    return f"{tag}:{message}"


@workflow(name="bad-input-fails")
def fails() -> Generator[Any, Any, None]:
    yield SetEvent("stage", "about to fail")
    raise ValueError("bad \x00 byte")


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


# -- names no store takes (#5) ------------------------------------------------------------


@pytest.mark.parametrize("bad", ["w" * 10_240, "nul\x00inside"], ids=["10 KB", "NUL"])
def test_a_bad_workflow_id_is_refused_at_once_on_every_store(store_url: str, bad: str) -> None:
    with Engine(store_url, recover=False, schedules=False) as engine:
        began = time.monotonic()
        with pytest.raises(ValueError, match=r"the workflow id .*replaykit store") as info:
            engine.start(waits, "a", workflow_id=bad)
        assert not isinstance(info.value, StoreUnavailable)
        assert time.monotonic() - began < 1.0, "refused up front, not after retries"
        assert engine.list_workflows() == []


def test_a_failure_whose_message_holds_nul_finishes_on_every_store(store_url: str) -> None:
    # The run's `error` column holds the message's first 500 characters, and
    # PostgreSQL refused the NUL in it: the finish failed and the run stayed PENDING.
    with Engine(store_url, recover=False, schedules=False) as engine:
        handle = engine.start(fails)
        with pytest.raises(ValueError, match="bad \x00 byte"):
            handle.result(timeout=10)
        row = engine.store.get_workflow(handle.workflow_id)
        assert row is not None and row.status is Status.ERROR
        assert row.error == "bad \\x00 byte"
