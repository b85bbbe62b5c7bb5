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


# -- permanent PostgreSQL errors are not outages (#5) --------------------------------------


def _raise_on_insert(pg_url: str, schema: str, table: str, sqlstate: str) -> None:
    """A trigger that makes every insert into `schema.table` fail with `sqlstate`."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            f"CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '{sqlstate}'; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER refuse BEFORE INSERT ON {schema}.{table} "
            f"FOR EACH ROW EXECUTE FUNCTION {schema}.refuse()"
        )


@pytest.mark.parametrize(
    "sqlstate",
    ["54000", "22001", "23514", "42501", "XX000"],
    ids=["program limit", "data", "integrity", "privilege", "internal"],
)
def test_a_permanent_postgres_error_is_raised_at_once_not_retried(
    pg_url: str, pg_schema: str, sqlstate: str
) -> None:
    url = f"{pg_url}?schema={pg_schema}"
    with Engine(url, recover=False, schedules=False) as engine:
        handle = engine.start(waits, "a")
        assert engine.get_event(handle.workflow_id, "tag", timeout=10) == "a"
        _raise_on_insert(pg_url, pg_schema, "messages", sqlstate)
        began = time.monotonic()
        with pytest.raises(Exception, match="refused by the test") as info:
            engine.send(handle.workflow_id, "go", "go")
        assert not isinstance(info.value, StoreUnavailable), info.value
        # Engine.send retries StoreUnavailable for seconds with backoff.
        assert time.monotonic() - began < 1.0


def test_only_connection_trouble_counts_as_the_store_being_unavailable() -> None:
    import psycopg
    from psycopg import errors

    from replaykit.stores.postgres import _transient

    for transient in (
        psycopg.OperationalError("server closed the connection unexpectedly"),
        errors.AdminShutdown(),
        errors.CannotConnectNow(),
        errors.SerializationFailure(),
        errors.DeadlockDetected(),
        errors.LockNotAvailable(),
        errors.QueryCanceled(),
        errors.TooManyConnections(),
        errors.DiskFull(),
        errors.ConnectionFailure(),
    ):
        assert _transient(transient), transient
    for permanent in (
        errors.ProgramLimitExceeded(),
        errors.StringDataRightTruncation(),
        errors.CheckViolation(),
        errors.UndefinedTable(),
        errors.InternalError_(),
        errors.DatabaseDropped(),
        errors.ObjectNotInPrerequisiteState(),
        psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"),
    ):
        assert not _transient(permanent), permanent
