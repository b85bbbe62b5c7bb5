"""Bad input to the stores, from callers and from the database itself (issue 13).

Each test reproduces a fault of the torture report: a schema name PostgreSQL
keeps for itself, ids too long to index or holding NUL, permanent database
errors retried as outages, one damaged row stopping a whole engine, and forks
that lost the events their copied records had set.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import postgres_schema_at
from replaykit import Engine, Recv, SetEvent, workflow
from replaykit.cli import cli
from replaykit.errors import StoreError, StoreUnavailable
from replaykit.log import Record, Status, Value
from replaykit.stores import SqliteStore, open_store
from replaykit.stores.base import EventWrite, WorkflowFilter, WorkflowRow


@workflow(name="bad-input-waits")
def waits(tag: str) -> Generator[Any, Any, str]:
    yield SetEvent("tag", tag)
    message = yield Recv("go")
    return f"{tag}:{message}"


@workflow(name="bad-input-sets-twice")
def sets_twice() -> Generator[Any, Any, str]:
    yield SetEvent("k", 1)
    yield SetEvent("k", 2)
    message = yield Recv("go")
    return str(message)


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


# -- one damaged row affects its own run only (#6) -----------------------------------------


def _start_waiting(url: str, tags: list[str]) -> None:
    """Runs run-<tag>, each PENDING in a Recv once this returns."""
    with Engine(url, schedules=False) as engine:
        for tag in tags:
            engine.start(waits, tag, workflow_id=f"run-{tag}")
        for tag in tags:
            assert engine.get_event(f"run-{tag}", "tag", timeout=10) == tag


def test_one_damaged_sqlite_row_leaves_the_engine_and_the_other_runs_going(
    tmp_path: Path,
) -> None:
    path = tmp_path / "damaged.db"
    url = f"sqlite:///{path}"
    _start_waiting(url, ["a", "b", "c"])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE workflows SET inputs = ? WHERE workflow_id = 'run-b'", ('{"args": ["b',))

    # Recovery lists the PENDING runs: the damaged one must not stop it.
    with Engine(url, schedules=False) as engine:
        for tag in ("a", "c"):
            engine.send(f"run-{tag}", "go", "go")
            assert engine.handle(f"run-{tag}").result(timeout=10) == f"{tag}:go"
        listed = {row.workflow_id: row for row in engine.list_workflows()}
        assert sorted(listed) == ["run-a", "run-b", "run-c"]
        damaged = listed["run-b"]
        # Parked once, naming the damage (issue 13, fault 4), not retried at every sweep.
        assert damaged.status is Status.PARKED and damaged.inputs is None
        assert "cannot be read" in damaged.error, damaged.error
        assert damaged.damaged.startswith("inputs: not JSON"), damaged.damaged
        assert damaged.error.startswith("damaged row: inputs"), damaged.error
        assert listed["run-a"].damaged == "" and listed["run-a"].status is Status.SUCCESS
        with pytest.raises(StoreError, match=r"workflow id 'run-b'.*column inputs.*not JSON"):
            engine.store.get_workflow("run-b")

    listing = CliRunner().invoke(cli, ["workflows", "list", "--url", url])
    assert listing.exit_code == 0, (listing.output, listing.exception)
    assert "run-a" in listing.stdout and "damaged row" in listing.stdout

    # The way out the error names: delete the run (or repair the row).
    with Engine(url, schedules=False, recover=False) as engine:
        assert engine.delete("run-b") is True
        assert [row.workflow_id for row in engine.list_workflows()] == ["run-a", "run-c"]


def test_sqlite_records_messages_and_events_that_do_not_decode_name_their_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "damaged.db"
    url = f"sqlite:///{path}"
    _start_waiting(url, ["a"])
    with Engine(url, schedules=False, recover=False) as engine:
        engine.send("run-a", "held back", "other")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE records SET outcome = '{\"value\": ' WHERE workflow_id = 'run-a'")
        db.execute("UPDATE messages SET payload = '[' WHERE workflow_id = 'run-a'")
        db.execute("UPDATE events SET value = 'tru' WHERE workflow_id = 'run-a'")
    store = open_store(url)
    try:
        with pytest.raises(
            StoreError, match=r"workflow id 'run-a' position 0: .*outcome.*not JSON"
        ):
            store.load_log("run-a")
        with pytest.raises(StoreError, match=r"workflow id 'run-a'.*message 1 on topic 'other'"):
            store.peek_message("run-a", "other")
        with pytest.raises(StoreError, match=r"workflow id 'run-a'.*event 'tag'.*not JSON"):
            store.get_event("run-a", "tag")
    finally:
        store.close()


def _damage_postgres(pg_url: str, schema: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement.replace("{s}", schema))


def test_postgres_rows_of_the_wrong_shape_name_their_run(pg_url: str, pg_schema: str) -> None:
    from replaykit.stores.postgres import PostgresStore

    store = PostgresStore(pg_url, schema=pg_schema, pool_max=2)
    try:
        for wid in ("ok", "bad-inputs", "bad-result", "bad-log"):
            store.create_workflow(WorkflowRow(wid, "wf", Status.PENDING, inputs={"args": []}))
        store.record("bad-log", Record(0, "step", "s0", Value(1)))
        store.record("bad-log", Record(1, "step", "s1", Value(2)))
        _damage_postgres(
            pg_url,
            pg_schema,
            "UPDATE {s}.workflows SET inputs = '5' WHERE workflow_id = 'bad-inputs'",
            "UPDATE {s}.workflows SET result = '[\"value\"]' WHERE workflow_id = 'bad-result'",
            "UPDATE {s}.records SET outcome = '{\"error\": 5}' "
            "WHERE workflow_id = 'bad-log' AND position = 1",
        )
        listed = {row.workflow_id: row for row in store.list_workflows(WorkflowFilter())}
        assert sorted(listed) == ["bad-inputs", "bad-log", "bad-result", "ok"]
        assert listed["ok"].damaged == "" and listed["bad-log"].damaged == ""
        assert listed["bad-inputs"].damaged.startswith("inputs: a JSON number where")
        assert listed["bad-result"].damaged.startswith("result: a JSON array where")
        with pytest.raises(StoreError, match=r"workflow id 'bad-inputs'.*column inputs.*number"):
            store.get_workflow("bad-inputs")
        with pytest.raises(StoreError, match=r"workflow id 'bad-result'.*column result.*array"):
            store.get_workflow("bad-result")
        with pytest.raises(StoreError, match=r"workflow id 'bad-log' position 1: .*outcome.*error"):
            store.load_log("bad-log")
        assert store.load_log("bad-log", since=2) == []
    finally:
        store.close()


def test_a_postgres_engine_starts_and_runs_the_rest_beside_a_damaged_row(
    pg_url: str, pg_schema: str
) -> None:
    url = f"{pg_url}?schema={pg_schema}"
    _start_waiting(url, ["a", "b"])
    _damage_postgres(
        pg_url, pg_schema, "UPDATE {s}.workflows SET inputs = '[1]' WHERE workflow_id = 'run-b'"
    )
    with Engine(url, schedules=False) as engine:
        engine.send("run-a", "go", "go")
        assert engine.handle("run-a").result(timeout=10) == "a:go"
        listed = {row.workflow_id: row for row in engine.list_workflows()}
        assert listed["run-b"].status is Status.PARKED  # once, naming the damage
        assert listed["run-b"].damaged.startswith("inputs: a JSON array where")


# -- a fork has the events its copied records set (#14) -------------------------------------


def _until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_fork_has_the_events_of_the_records_it_copied(store_url: str) -> None:
    with Engine(store_url, recover=False, schedules=False) as engine:
        engine.start(sets_twice, workflow_id="source")
        # Both SetEvents recorded and the Recv pending.
        _until(lambda: len(engine.steps("source")) == 3)
        assert engine.get_event("source", "k") == 2

        # Another version's fork waits for an engine of that version: nothing of it
        # runs here, so its events are only what the fork itself set.
        for position, expected in ((0, None), (1, 1), (2, 2)):
            engine.fork("source", position, workflow_id=f"fork-{position}", app_version="later")
            assert engine.get_event(f"fork-{position}", "k") == expected, position
            assert len(engine.steps(f"fork-{position}")) == position

        # A fork that runs here goes on from its copied log with the event in place.
        engine.fork("source", 2, workflow_id="fork-runs")
        assert engine.get_event("fork-runs", "k") == 2
        engine.send("fork-runs", "go", "go")
        assert engine.handle("fork-runs").result(timeout=10) == "go"
        # A fork of a fork still knows which values its copied records set.
        engine.fork("fork-runs", 1, workflow_id="fork-of-fork", app_version="later")
        assert engine.get_event("fork-of-fork", "k") == 1
        assert engine.get_event("source", "k") == 2


def _set_event(position: int, key: str) -> Record:
    return Record(position, "set_event", key, Value(None), digest=f"d{position}")


def test_a_sqlite_database_of_schema_version_1_is_migrated_and_forks_from_then_on(
    tmp_path: Path,
) -> None:
    from replaykit.stores.sqlite import _MIGRATIONS

    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as db:
        for statement in _MIGRATIONS[0]:
            db.execute(statement)
        db.execute("PRAGMA user_version = 1")
    store = SqliteStore(path)
    try:
        assert store.schema_status() == (len(_MIGRATIONS), len(_MIGRATIONS))
        store.create_workflow(WorkflowRow("src", "wf", Status.PENDING))
        store.record("src", _set_event(0, "k"), event=EventWrite("k", 1))
        store.create_workflow(
            WorkflowRow("fork", "wf", Status.PENDING), records=store.load_log("src"), fork_of="src"
        )
        assert store.get_event("fork", "k") == (True, 1)
    finally:
        store.close()


def test_a_postgres_schema_of_version_1_is_migrated_and_forks_from_then_on(
    pg_url: str, pg_schema: str
) -> None:
    from replaykit.stores.postgres import MIGRATIONS, PostgresStore

    # A schema of version 1, with a run recorded then: its records remember nothing.
    postgres_schema_at(pg_url, pg_schema, 1)
    _damage_postgres(
        pg_url,
        pg_schema,
        "INSERT INTO {s}.workflows (workflow_id, name, status, executor_id, app_version, "
        "created_at, updated_at) VALUES ('old', 'wf', 'PENDING', 'local', '', now(), now())",
        "INSERT INTO {s}.records (workflow_id, position, kind, name, outcome, digest, "
        "call_site, attempts) "
        "VALUES ('old', 0, 'set_event', 'k', '{\"value\": null}', 'd0', '', 1)",
        "INSERT INTO {s}.events VALUES ('old', 'k', '1')",
    )
    store = PostgresStore(pg_url, schema=pg_schema)
    try:
        assert store.schema_status() == (len(MIGRATIONS), len(MIGRATIONS))
        # A record from before the migration set nothing the fork could copy.
        store.create_workflow(
            WorkflowRow("old-fork", "wf", Status.PENDING),
            records=store.load_log("old"),
            fork_of="old",
        )
        assert store.get_event("old-fork", "k") == (False, None)
        store.create_workflow(WorkflowRow("src", "wf", Status.PENDING))
        store.record("src", _set_event(0, "k"), event=EventWrite("k", 1))
        store.create_workflow(
            WorkflowRow("fork", "wf", Status.PENDING), records=store.load_log("src"), fork_of="src"
        )
        assert store.get_event("fork", "k") == (True, 1)
        # A run from before attributes has none, and takes them.
        before = store.get_workflow("old")
        assert before is not None and before.attributes == {}
        assert store.set_attributes("old", {"customer": "42"})
        listed = store.list_workflows(WorkflowFilter(name="wf", id_prefix="old"))
        assert {r.workflow_id: r.attributes for r in listed}["old"] == {"customer": "42"}
    finally:
        store.close()
