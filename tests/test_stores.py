"""The stores: the shared conformance suite on each, then what only one store has."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import drop_schema, fresh_schema_name, postgres_schema_at
from conftest import step_record as step
from replaykit.errors import (
    StoreError,
    StoreUnavailable,
    TransactionUnsupported,
)
from replaykit.log import Record, Status, Value
from replaykit.stores import MemoryStore, SqliteStore, open_store
from replaykit.stores.base import EventWrite, Store, WorkflowFilter, WorkflowRow
from replaykit.stores.sqlite import _MIGRATIONS
from replaykit.testing.conformance import STORE_CHECKS, check_store

# -- the conformance suite on every store ---------------------------------------------


def test_memory_store_conforms() -> None:
    check_store(MemoryStore)


def test_sqlite_store_conforms(tmp_path: Path) -> None:
    paths = (tmp_path / f"store-{i}.db" for i in range(len(STORE_CHECKS)))
    check_store(lambda: SqliteStore(next(paths)))


def test_sqlite_in_memory_store_conforms() -> None:
    check_store(lambda: SqliteStore(":memory:"))


@pytest.fixture
def pg_schemas(pg_url: str) -> Iterator[Callable[[], str]]:
    """Hands out fresh schema names and drops them all afterwards."""
    made: list[str] = []

    def make() -> str:
        made.append(fresh_schema_name("store"))
        return made[-1]

    yield make
    for schema in made:
        drop_schema(schema)


def test_postgres_store_conforms(pg_url: str, pg_schemas: Callable[[], str]) -> None:
    from replaykit.stores.postgres import PostgresStore

    check_store(lambda: PostgresStore(pg_url, schema=pg_schemas(), pool_max=8))


def test_check_store_names_each_failed_check() -> None:
    class Forgetful(MemoryStore):
        def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
            return False, None

    with pytest.raises(AssertionError) as info:
        check_store(Forgetful, only=lambda name: name in ("event_latest_wins", "bump_recovery"))
    message = str(info.value)
    assert "1 of 2 checks failed" in message
    assert "[event_latest_wins] get_event after a set: expected (True, {'v': 1}), got" in message


# -- SQLite ---------------------------------------------------------------------------


def test_sqlite_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    store = SqliteStore(path)
    store.create_workflow(WorkflowRow("w", "wf", Status.PENDING, inputs={"args": [1]}))
    store.record("w", step(0, {"ok": True}))
    store.send_message("w", "t", "hello", idempotency_key="k")
    store.close()

    again = SqliteStore(path)
    try:
        row = again.get_workflow("w")
        assert row is not None and row.inputs == {"args": [1]}
        assert again.load_log("w") == [step(0, {"ok": True})]
        message = again.peek_message("w", "t")
        assert message is not None and message.payload == "hello"
        assert again.send_message("w", "t", "hello", idempotency_key="k") is False
        assert again.schema_status() == (len(_MIGRATIONS), len(_MIGRATIONS))
    finally:
        again.close()


def test_sqlite_uses_wal_and_the_synchronous_setting(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "wal.db", synchronous="full")
    try:
        assert store.journal_mode() == "wal"
        with sqlite3.connect(tmp_path / "wal.db") as other:
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store._writer.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        store.close()
    with pytest.raises(ValueError, match="synchronous must be one of"):
        SqliteStore(tmp_path / "x.db", synchronous="SOMETIMES")


def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    SqliteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match=r"schema version 99.*upgrade replaykit"):
        SqliteStore(path)


def test_sqlite_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "closed.db")
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.get_workflow("w")
    with pytest.raises(StoreError, match="is closed"):
        store.record("w", step(0))


def _hammer(stores: list[Store], runs: int, positions: int) -> None:
    """Threads (one store each, round robin) record the same positions of shared runs."""
    for run in range(runs):
        stores[0].create_workflow(WorkflowRow(f"run-{run}", "wf", Status.PENDING))
    threads = 6
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []
    returned: list[list[Record]] = [[] for _ in range(threads)]

    def work(index: int) -> None:
        store = stores[index % len(stores)]
        barrier.wait()
        try:
            for position in range(positions):
                for run in range(runs):
                    got = store.record(f"run-{run}", step(position, f"writer {index}"))
                    returned[index].append(got)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    logs = {f"run-{run}": stores[0].load_log(f"run-{run}") for run in range(runs)}
    for log in logs.values():
        assert [r.position for r in log] == list(range(positions))
    # Every writer got back exactly what its run's log holds: it adopted the winner.
    for got in returned:
        assert len(got) == runs * positions
        for record in got:
            assert any(log[record.position] == record for log in logs.values())


def test_sqlite_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    # Two instances on one file behave like two processes sharing it.
    stores: list[Store] = [SqliteStore(path), SqliteStore(path)]
    try:
        _hammer(stores, runs=3, positions=25)
    finally:
        for store in stores:
            store.close()


def test_sqlite_record_transaction_commits_both_or_neither(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "tx.db")
    try:
        store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))

        def setup(conn: sqlite3.Connection) -> Record:
            conn.execute("CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER)")
            conn.execute("INSERT INTO orders VALUES ('o-1', 10)")
            return step(0, "created")

        assert store.record_transaction("w", 0, setup) == step(0, "created")

        class Declined(Exception):
            pass

        def failing(conn: sqlite3.Connection) -> Record:
            conn.execute("INSERT INTO orders VALUES ('o-2', 20)")
            raise Declined("card declined")

        with pytest.raises(Declined, match="card declined"):
            store.record_transaction("w", 1, failing)

        def committing(conn: sqlite3.Connection) -> Record:
            conn.execute("INSERT INTO orders VALUES ('o-3', 30)")
            conn.commit()
            return step(1)

        with pytest.raises(StoreError, match="committed or rolled back the store's transaction"):
            store.record_transaction("w", 1, committing)

        def nested(conn: sqlite3.Connection) -> Record:
            store.record("w", step(1))
            return step(1)

        with pytest.raises(StoreError, match="from inside a Transaction body"):
            store.record_transaction("w", 1, nested)
        assert store.load_log("w") == [step(0, "created")]
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "tx.db") as conn:
        # o-3 committed because its body committed by hand: the error says so.
        assert conn.execute("SELECT id FROM orders ORDER BY id").fetchall() == [("o-1",), ("o-3",)]


# -- PostgreSQL -----------------------------------------------------------------------


def test_postgres_concurrent_writers_lose_nothing(
    pg_url: str, pg_schema: str, pg_store: Any
) -> None:
    from replaykit.stores.postgres import PostgresStore

    other = PostgresStore(pg_url, schema=pg_schema, pool_max=4)
    try:
        _hammer([pg_store, other], runs=3, positions=15)
    finally:
        other.close()


def test_postgres_concurrent_migration_of_a_fresh_schema(pg_url: str, pg_schema: str) -> None:
    import psycopg

    from replaykit.stores.postgres import MIGRATIONS, PostgresStore

    starters = 4
    barrier = threading.Barrier(starters)
    results: list[Any] = [None] * starters

    def start(index: int) -> None:
        barrier.wait()
        try:
            results[index] = PostgresStore(pg_url, schema=pg_schema, pool_min=1, pool_max=1)
        except BaseException as exc:
            results[index] = exc

    workers = [threading.Thread(target=start, args=(i,)) for i in range(starters)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    try:
        assert [r for r in results if isinstance(r, BaseException)] == []
        assert results[0].schema_status() == (len(MIGRATIONS), len(MIGRATIONS))
        with psycopg.connect(pg_url) as conn:
            versions = conn.execute(
                f'SELECT version FROM "{pg_schema}".schema_version ORDER BY version'
            ).fetchall()
        assert versions == [(v,) for v in range(1, len(MIGRATIONS) + 1)]
        results[1].create_workflow(WorkflowRow("w", "wf", Status.PENDING))
        assert results[2].get_workflow("w") is not None
    finally:
        for store in results:
            if not isinstance(store, BaseException) and store is not None:
                store.close()


def test_postgres_migrate_on_demand_and_refuse_newer(pg_url: str, pg_schema: str) -> None:
    import psycopg

    from replaykit.stores.postgres import MIGRATIONS, PostgresStore

    latest = len(MIGRATIONS)
    store = PostgresStore(pg_url, schema=pg_schema, auto_migrate=False)
    try:
        assert store.schema_status() == (0, latest)
        assert store.migrate() == latest
        assert store.schema_status() == (latest, latest)
        assert store.migrate() == latest
    finally:
        store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{pg_schema}".schema_version (version) VALUES (%s)', (latest + 1,)
        )
    with pytest.raises(StoreError, match="newer than this replaykit knows"):
        PostgresStore(pg_url, schema=pg_schema)


@pytest.mark.parametrize(
    "schema",
    [
        "",
        "Replaykit",
        "9lives",
        "has-dash",
        "has space",
        "x" * 64,
        'a"b',
        "rk; DROP SCHEMA public CASCADE; --",
        "rk'||pg_sleep(5)||'",
        "ünïcode",
    ],
)
def test_postgres_refuses_bad_schema_names(pg_url: str, schema: str) -> None:
    import psycopg

    from replaykit.stores.postgres import PostgresStore

    with pytest.raises(ValueError, match="invalid PostgreSQL schema name"):
        PostgresStore(pg_url, schema=schema)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone() == (0,)
        assert conn.execute("SELECT to_regnamespace('public') IS NOT NULL").fetchone() == (True,)


def test_postgres_accepts_the_longest_valid_schema_name(pg_url: str) -> None:
    from replaykit.stores.postgres import PostgresStore, schema_channel

    schema = "rk_" + fresh_schema_name("long")[3:] + "_" * 20
    schema = (schema + "x" * 63)[:63]
    try:
        store = PostgresStore(pg_url, schema=schema)
        store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
        assert store.get_workflow("w") is not None
        assert len(schema_channel(schema)) == 63
        store.close()
    finally:
        drop_schema(schema)


def test_postgres_record_transaction_commits_both_or_neither(pg_schema: str, pg_store: Any) -> None:
    import psycopg

    table = f'"{pg_schema}".orders'
    pg_store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))

    def setup(conn: psycopg.Connection[Any]) -> Record:
        conn.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, total integer)")
        conn.execute(f"INSERT INTO {table} VALUES ('o-1', 10)")
        return step(0, "created")

    assert pg_store.record_transaction("w", 0, setup) == step(0, "created")

    class Declined(Exception):
        pass

    def failing(conn: psycopg.Connection[Any]) -> Record:
        conn.execute(f"INSERT INTO {table} VALUES ('o-2', 20)")
        raise Declined("card declined")

    with pytest.raises(Declined, match="card declined"):
        pg_store.record_transaction("w", 1, failing)

    def committing(conn: psycopg.Connection[Any]) -> Record:
        conn.execute(f"INSERT INTO {table} VALUES ('o-3', 30)")
        conn.commit()
        return step(1)

    with pytest.raises(psycopg.ProgrammingError):
        pg_store.record_transaction("w", 1, committing)

    def carried_on(conn: psycopg.Connection[Any]) -> Record:
        conn.execute(f"INSERT INTO {table} VALUES ('o-4', 40)")
        with contextlib.suppress(psycopg.errors.UniqueViolation):
            conn.execute(f"INSERT INTO {table} VALUES ('o-1', 0)")
        return step(1)

    with pytest.raises(StoreError, match="carried on"):
        pg_store.record_transaction("w", 1, carried_on)

    assert pg_store.load_log("w") == [step(0, "created")]
    with pg_store._db.connection() as conn:
        assert conn.execute(f"SELECT id FROM {table}").fetchall() == [("o-1",)]

    def second(conn: psycopg.Connection[Any]) -> Record:
        conn.execute(f"UPDATE {table} SET total = total + 1")
        return step(1, "updated")

    assert pg_store.record_transaction("w", 1, second) == step(1, "updated")
    with pg_store._db.connection() as conn:
        assert conn.execute(f"SELECT total FROM {table}").fetchall() == [(11,)]


def _collector() -> tuple[Callable[[str, str], None], Callable[[tuple[str, str]], bool]]:
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def callback(kind: str, key: str) -> None:
        with lock:
            seen.append((kind, key))

    def wait_for(note: tuple[str, str], timeout: float = 10) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with lock:
                if note in seen:
                    return True
            time.sleep(0.02)
        return False

    return callback, wait_for


def test_postgres_notifications_cross_instances(pg_url: str, pg_schema: str, pg_store: Any) -> None:
    from replaykit.stores.postgres import PostgresStore

    callback, heard = _collector()
    pg_store.subscribe(callback)
    writer = PostgresStore(pg_url, schema=pg_schema, pool_max=2)
    try:
        writer.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
        writer.create_workflow(WorkflowRow("q-run", "wf", Status.ENQUEUED, queue="jobs"))
        writer.send_message("w", "t", "hi")
        assert heard(("message", "w"))
        writer.record("w", step(0), event=EventWrite("k", 1))
        assert heard(("event", "w"))
        writer.finish_workflow("w", Status.SUCCESS, Value(1))
        assert heard(("finished", "w"))
        assert heard(("enqueued", "jobs"))
    finally:
        writer.close()


def test_postgres_listener_reconnects(pg_url: str, pg_schema: str, pg_store: Any) -> None:
    import psycopg

    from replaykit.stores.postgres import PostgresStore

    callback, heard = _collector()
    pg_store.subscribe(callback)
    listener = pg_store._notes.listener
    assert listener is not None and listener.connections == 1
    with psycopg.connect(pg_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (f"replaykit-listen:{pg_schema}"[:63],),
        ).fetchall()
    assert killed == [(True,)]
    deadline = time.monotonic() + 10
    while listener.connections < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert listener.connections == 2
    assert listener.ready.wait(5)
    writer = PostgresStore(pg_url, schema=pg_schema, pool_max=1)
    try:
        writer.create_workflow(WorkflowRow("after", "wf", Status.PENDING))
        writer.send_message("after", "t", "hi")
        assert heard(("message", "after"))
    finally:
        writer.close()
    pg_store.close()
    assert not listener._thread.is_alive()


def test_postgres_unreachable_server_is_unavailable() -> None:
    from replaykit.stores.postgres import PostgresStore

    url = "postgresql://someone:s3cret-pw@127.0.0.1:1/nowhere"
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as info:
        PostgresStore(url, connect_timeout=1.5)
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert "postgresql://someone:***@127.0.0.1:1/nowhere" in message
    assert "s3cret-pw" not in message
    assert "Connection refused" in message  # the server's reason, not just a timeout


def test_postgres_redacts_passwords_in_urls() -> None:
    from replaykit.stores.postgres import redact_url

    assert redact_url("postgresql://u:pw@h:5/db") == "postgresql://u:***@h:5/db"
    assert redact_url("postgresql://u@h/db?password=pw&sslmode=require") == (
        "postgresql://u@h/db?password=%2A%2A%2A&sslmode=require"
    )
    assert redact_url("postgresql://h/db") == "postgresql://h/db"
    assert redact_url("host=h password='p w' dbname=d") == "host=h password=*** dbname=d"


def test_postgres_subscribers_may_use_the_store_with_one_connection(
    pg_url: str, pg_schemas: Callable[[], str]
) -> None:
    from replaykit.stores.postgres import PostgresStore

    # A callback that reads the store must not wait for the connection its
    # own write still holds.
    check_store(
        lambda: PostgresStore(pg_url, schema=pg_schemas(), pool_max=1, connect_timeout=3),
        only=lambda name: name in ("notifications", "release", "consume_with_record"),
    )


def test_memory_store_has_no_transactions() -> None:
    store = MemoryStore()
    store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
    with pytest.raises(TransactionUnsupported, match="SqliteStore or PostgresStore"):
        store.record_transaction("w", 0, lambda conn: step(0))


# -- open_store -----------------------------------------------------------------------


def test_open_store_memory() -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    with pytest.raises(ValueError, match="nothing after 'memory://'"):
        open_store("memory://somewhere")


def test_open_store_sqlite_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreUnavailable, match="directory 'missing' does not exist"):
        open_store("sqlite:///missing/x.db")
    (tmp_path / "data").mkdir()
    relative = open_store("sqlite:///data/rel.db?synchronous=FULL&busy_timeout_ms=250")
    absolute_path = tmp_path / "abs dir" / "abs.db"
    absolute_path.parent.mkdir()
    absolute = open_store(f"sqlite:///{absolute_path}".replace(" ", "%20"))
    in_memory = open_store("sqlite:///:memory:")
    try:
        assert isinstance(relative, SqliteStore) and isinstance(absolute, SqliteStore)
        assert relative.path == "data/rel.db" and (tmp_path / "data" / "rel.db").exists()
        assert absolute.path == str(absolute_path) and absolute_path.exists()
        assert isinstance(in_memory, SqliteStore) and in_memory.path == ":memory:"
        assert relative._writer.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        for store in (relative, absolute, in_memory):
            store.close()


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("sqlite://host/x.db", "name a file, not a host"),
        ("sqlite:///x.db?cache=shared", "unknown SQLite option 'cache'"),
        ("sqlite:///x.db?busy_timeout_ms=soon", "must be an integer"),
        ("mysql://localhost/db", "unknown scheme 'mysql'"),
        ("replaykit.db", "has no scheme"),
        ("postgresql://h/db?schema=a&schema=b", "more than once"),
    ],
)
def test_open_store_refuses_bad_urls(url: str, match: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=match) as info:
        open_store(url)
    assert "sqlite:////absolute/path.db" in str(info.value)  # it lists the accepted forms
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_open_store_postgres_schema_parameter(pg_url: str, pg_schema: str, scheme: str) -> None:
    from replaykit.stores.postgres import PostgresStore

    url = pg_url.replace("postgresql://", f"{scheme}://", 1)
    store = open_store(f"{url}?schema={pg_schema}&application_name=rk_open_store")
    try:
        assert isinstance(store, PostgresStore) and store.schema == pg_schema
        store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
        assert [r.workflow_id for r in store.list_workflows(WorkflowFilter())] == ["w"]
        with store._db.connection() as conn:
            assert conn.execute("SHOW application_name").fetchone() == ("rk_open_store",)
    finally:
        store.close()


def test_open_store_explains_a_missing_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    import replaykit.stores

    # A None entry in sys.modules makes the import fail as if psycopg were absent.
    monkeypatch.setitem(sys.modules, "replaykit.stores.postgres", None)
    with pytest.raises(ImportError, match=r"pip install 'replaykit\[postgres\]'"):
        open_store("postgresql://localhost/db")
    with pytest.raises(ImportError, match=r"pip install 'replaykit\[postgres\]'"):
        replaykit.stores.PostgresStore  # noqa: B018 - the lazy attribute is the point


def _check_utc(store: Store) -> None:
    stored, _ = store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
    store.record("w", Record(0, "now", "now", Value(None), started_at=stored.created_at))
    row = store.get_workflow("w")
    assert row is not None and row.created_at == stored.created_at
    assert row.created_at is not None and row.created_at.tzinfo is UTC
    assert abs((datetime.now(UTC) - row.created_at).total_seconds()) < 60
    [record] = store.load_log("w")
    assert record.started_at is not None and record.started_at.tzinfo is UTC


def test_sqlite_datetimes_come_back_as_utc(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "utc.db")
    try:
        _check_utc(store)
    finally:
        store.close()


def test_postgres_datetimes_come_back_as_utc(pg_store: Any) -> None:
    with pg_store._db.connection() as conn:
        # Whatever the session's zone, rows come back in UTC.
        conn.execute("SET TIME ZONE 'Asia/Kolkata'")
        conn.execute("RESET TIME ZONE")
    _check_utc(pg_store)


def _open_at_once(path: Path, openers: int) -> list[BaseException]:
    barrier = threading.Barrier(openers)
    errors: list[BaseException] = []

    def open_and_close() -> None:
        barrier.wait()
        try:
            SqliteStore(path).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_and_close) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_sqlite_stores_opening_a_new_database_at_once_all_succeed(tmp_path: Path) -> None:
    # Each opener switches the new file to WAL; SQLite answers "database is
    # locked" at once to the loser of that race, without its busy handler.
    for round_ in range(15):
        assert _open_at_once(tmp_path / f"new-{round_}.db", openers=6) == []


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_claims_say_exactly_whether_a_run_has_records(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The conformance suite allows None ("not known"); replaykit's own stores
    # always know, which is what spares a first claim its log read.
    from replaykit.stores.base import ClaimLimits

    if kind == "postgres":
        store = request.getfixturevalue("pg_store")
    elif kind == "sqlite":
        store = SqliteStore(tmp_path / "claims.db")
    else:
        store = MemoryStore()
    for wid in ("fresh", "begun"):
        store.create_workflow(
            WorkflowRow(wid, "wf", Status.ENQUEUED, queue="q", app_version="v", executor_id="")
        )
    # A run with records back in the queue, as a stopped worker's release leaves it.
    store.set_status("begun", Status.PENDING)
    store.record("begun", step(0))
    store.set_status("begun", Status.ENQUEUED)
    claimed = store.claim(
        "q", executor_id="e", app_version="v", limits=ClaimLimits(9), now=datetime.now(UTC)
    )
    assert {row.workflow_id: row.has_log for row in claimed} == {"fresh": False, "begun": True}
    if kind != "postgres":
        store.close()


def test_postgres_consuming_record_and_delete_take_locks_in_one_order(
    pg_url: str, pg_store: Any
) -> None:
    # delete_workflow locks the run's row, then its messages. A record that
    # consumes a message must lock the run first too: the other way round, a
    # record on a finished run and a delete of it deadlocked.
    import psycopg

    from replaykit.errors import RecordConflict, WorkflowNotFound

    store = pg_store
    store.create_workflow(WorkflowRow("k", "wf", Status.CANCELLED))
    assert store.send_message("k", "t", {"n": 1})
    message = store.peek_message("k", "t")
    assert message is not None
    outcome: list[Any] = []

    def consume() -> None:
        try:
            outcome.append(
                store.record(
                    "k", Record(0, "recv", "t", Value({"n": 1})), consume=message.message_id
                )
            )
        except Exception as exc:
            outcome.append(exc)

    with psycopg.connect(pg_url) as deleter:  # one transaction, as delete_workflow's
        deleter.execute(store._db.q("DELETE FROM {s}.workflows WHERE workflow_id = 'k'"))
        consumer = threading.Thread(target=consume)
        consumer.start()
        consumer.join(0.5)  # the record now waits for the run's row
        deleter.execute("SET LOCAL lock_timeout = '5s'")
        deleter.execute(store._db.q("DELETE FROM {s}.messages WHERE workflow_id = 'k'"))
        deleter.commit()
    consumer.join(10)
    assert len(outcome) == 1
    assert isinstance(outcome[0], (WorkflowNotFound, RecordConflict)), outcome


def test_postgres_take_over_locks_runs_in_id_order_as_batches_do(
    pg_url: str, pg_store: Any
) -> None:
    # A batch of checkpoints locks its runs in id order. A takeover of the same
    # runs (their executor only looked dead) must take them in that order too;
    # in the order of its scan (oldest first here) the two deadlocked.
    import psycopg

    store = pg_store
    now = datetime.now(UTC)
    store.heartbeat("slow", "v1", now - timedelta(minutes=5))
    # r2 is the older run, so a scan by status and age meets it first.
    for workflow_id, age in (("r2", 60), ("r1", 30)):
        store.create_workflow(
            WorkflowRow(
                workflow_id,
                "wf",
                Status.PENDING,
                executor_id="slow",
                app_version="v1",
                created_at=now - timedelta(seconds=age),
            )
        )
    taken: list[Any] = []

    def take_over() -> None:
        try:
            taken.append(
                store.take_over(executor_id="me", app_version="v1", lease_seconds=30, now=now)
            )
        except Exception as exc:
            taken.append(exc)

    lock = store._db.q("SELECT 1 FROM {s}.workflows WHERE workflow_id = %s FOR NO KEY UPDATE")
    with psycopg.connect(pg_url) as batch:  # as a batch statement: r1, then r2
        batch.execute("SET lock_timeout = '5s'")
        batch.execute(lock, ("r1",))
        taker = threading.Thread(target=take_over)
        taker.start()
        taker.join(0.5)  # the takeover now waits for r1
        batch.execute(lock, ("r2",))
        batch.commit()
    taker.join(10)
    assert taken == [["r2", "r1"]], taken


# -- heartbeats carry the workflows and queues an engine runs (schema version 10) ---------------


def test_every_store_keeps_the_names_a_heartbeat_carries(store_url: str) -> None:
    store = open_store(store_url)
    try:
        now = datetime.now(UTC)
        store.heartbeat("web-1", "v1", now, workflows=["pay", "ship"], queues=["default"])
        store.heartbeat("old-1", "v1", now)  # an engine of an older replaykit
        beats = {b.executor_id: b for b in store.read_heartbeats(now)}  # type: ignore[attr-defined]
        assert beats["web-1"].registered.workflows == ("pay", "ship")
        assert beats["web-1"].registered.queues == ("default",)
        assert beats["old-1"].registered is None
        store.heartbeat("web-1", "v1", now, workflows=[f"w{n:05d}" for n in range(5000)])
        [web] = [b for b in store.read_heartbeats(now) if b.executor_id == "web-1"]  # type: ignore[attr-defined]
        kept = web.registered
        assert len(kept.workflows) == 2000 and kept.more_workflows == 3000
        assert kept.queues is None  # not said in that beat
    finally:
        store.close()


def _old_heartbeat_survives(store: Any, now: datetime) -> None:
    [old] = store.read_heartbeats(now - timedelta(seconds=1))
    assert (old.executor_id, old.app_version, old.registered) == ("old-1", "v1", None)
    store.heartbeat("old-1", "v1", now, workflows=["wf"], queues=["q"])
    [new] = store.read_heartbeats(now - timedelta(seconds=1))
    assert (new.registered.workflows, new.registered.queues) == (("wf",), ("q",))


def test_a_sqlite_database_of_schema_version_9_gets_the_heartbeats_names(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    now = datetime.now(UTC)
    with sqlite3.connect(path) as db:
        for migration in _MIGRATIONS[:9]:
            for statement in migration:
                db.execute(statement)
        db.execute("PRAGMA user_version = 9")
        micros = int(now.timestamp() * 1_000_000)
        db.execute("INSERT INTO heartbeats VALUES ('old-1', 'v1', ?)", (micros,))
    store = SqliteStore(path)
    try:
        assert store.schema_status() == (len(_MIGRATIONS), len(_MIGRATIONS))
        _old_heartbeat_survives(store, now)
    finally:
        store.close()


def test_a_postgres_schema_of_version_9_gets_the_heartbeats_names(
    pg_url: str, pg_schema: str
) -> None:
    import psycopg

    from replaykit.stores.postgres import MIGRATIONS, PostgresStore

    now = datetime.now(UTC)
    postgres_schema_at(pg_url, pg_schema, 9)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO \"{pg_schema}\".heartbeats VALUES ('old-1', 'v1', %s)", (now,))
    store = PostgresStore(pg_url, schema=pg_schema)
    try:
        assert store.schema_status() == (len(MIGRATIONS), len(MIGRATIONS))
        _old_heartbeat_survives(store, now)
    finally:
        store.close()


def test_set_status_takes_a_status_by_its_value_and_refuses_what_is_not_one(
    store_url: str,
) -> None:
    """Every store alike: the memory store stored a status's value as it came (and then
    failed on it, the row already changed), where the SQL stores took `Status(value)`."""
    store = open_store(store_url)
    try:
        store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))
        assert store.set_status("w", "CANCELLED")  # type: ignore[arg-type]
        row = store.get_workflow("w")
        assert row is not None and row.status is Status.CANCELLED
        with pytest.raises(ValueError, match="'bogus' is not a valid Status"):
            store.set_status("w", "bogus")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="'bogus' is not a valid Status"):
            store.set_status("nope", "bogus")  # type: ignore[arg-type]
        row = store.get_workflow("w")
        assert row is not None and row.status is Status.CANCELLED
    finally:
        store.close()
