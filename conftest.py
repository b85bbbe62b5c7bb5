"""What the tests share: stores of each kind, engines, waiting, the command line.

One place for the small helpers every test module would otherwise write again: a
PostgreSQL schema per test, a fresh store of each kind (`store_url`, `shared`,
`durable_url`, `pg_store`), an engine on it (`engine`), polling until something holds
(`wait_for`, `wait_status`), a step's record (`step_record`), running the command line
(`rk`, `ok`, `error_line`), and the hypothesis profiles.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from click.testing import Result

    from replaykit import Engine, Status
    from replaykit.log import Record
    from replaykit.stores.base import WorkflowRow

PG_URL = os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "deep", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))


def _postgres_reachable() -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'replaykit[postgres]')"
    try:
        with psycopg.connect(PG_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return f"PostgreSQL at {PG_URL} is unreachable: {exc}"
    return None


_PG_PROBLEM: str | None = None
_PG_CHECKED = False


def require_postgres() -> None:
    """Skip without Postgres on a laptop; fail in CI, where it must be there."""
    global _PG_PROBLEM, _PG_CHECKED
    if not _PG_CHECKED:
        _PG_PROBLEM = _postgres_reachable()
        _PG_CHECKED = True
    if _PG_PROBLEM is None:
        return
    if IN_CI:
        pytest.fail(f"CI needs PostgreSQL: {_PG_PROBLEM}")
    pytest.skip(_PG_PROBLEM)


def fresh_schema_name(hint: str = "t") -> str:
    safe = re.sub(r"[^a-z0-9_]", "_", hint.lower())[:30]
    return f"rk_{safe}_{uuid.uuid4().hex[:10]}"


def drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def pg_schema(request: pytest.FixtureRequest) -> Iterator[str]:
    """A schema name of this test's own, dropped afterwards."""
    require_postgres()
    schema = fresh_schema_name(request.node.name)
    yield schema
    drop_schema(schema)


def postgres_schema_at(url: str, schema: str, version: int) -> None:
    """Make `schema` as replaykit's PostgreSQL migrations 1..`version` left it (the files
    ship with the package and are never edited), for tests of upgrades from it."""
    from importlib import resources

    import psycopg
    from psycopg import sql

    from replaykit.stores.postgres import MIGRATIONS

    quoted = sql.Identifier(schema)
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(quoted))
        conn.execute(
            sql.SQL(
                "CREATE TABLE {}.schema_version (version integer PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(quoted)
        )
        for number, name in enumerate(MIGRATIONS[:version], start=1):
            text = resources.files("replaykit.stores").joinpath("sql", name).read_text("utf-8")
            conn.execute(sql.SQL(text).format(schema=quoted))
            conn.execute(
                sql.SQL("INSERT INTO {}.schema_version (version) VALUES (%s)").format(quoted),
                (number,),
            )


@pytest.fixture
def pg_url() -> str:
    require_postgres()
    return PG_URL


STORE_KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=STORE_KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """A URL for a fresh, empty store of each kind: the engine suite runs on all three."""
    kind = request.param
    if kind == "memory":
        yield "memory://"
    elif kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'replaykit.db'}"
    else:
        require_postgres()
        schema = fresh_schema_name(request.node.name)
        yield f"{PG_URL}?schema={schema}"
        drop_schema(schema)


@pytest.fixture
def shared(store_url: str) -> Any:
    """One store several engines (and clients) share: a URL, or one MemoryStore instance."""
    import replaykit

    return replaykit.MemoryStore() if store_url.startswith("memory") else store_url


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    """An engine on a fresh store of each kind, polling often, closed afterwards."""
    from replaykit import Engine

    with Engine(store_url, poll_interval=0.1) as eng:
        yield eng


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """A fresh durable store, empty (no tables yet): a SQLite file, or a PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'cli.db'}"
        return
    require_postgres()
    schema = fresh_schema_name(request.node.name)
    yield f"{PG_URL}?schema={schema}"
    drop_schema(schema)


@pytest.fixture
def created_url(durable_url: str) -> str:
    """`durable_url` with its tables made, as an application's engine makes them."""
    from replaykit.stores import open_store

    open_store(durable_url).close()
    return durable_url


@pytest.fixture
def pg_store(pg_url: str, pg_schema: str) -> Iterator[Any]:
    """A PostgresStore on a schema of this test's own, closed afterwards."""
    from replaykit.stores.postgres import PostgresStore

    store = PostgresStore(pg_url, schema=pg_schema, pool_max=8)
    yield store
    store.close()


def step_record(position: int, data: Any = None, *, pending: bool = False) -> Record:
    """A step's record at `position`, named `s<position>`: completed with `data`, or pending."""
    from replaykit.log import Record, Value

    return Record(position, "step", f"s{position}", None if pending else Value(data))


def wait_for(
    check: Callable[[], object], what: str = "the condition", timeout: float = 15.0
) -> None:
    """Poll `check` until it holds; fail after `timeout` seconds, naming `what`."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.01)


def start_sleepers(engine: Engine, wf: Any, count: int, due: float, prefix: str) -> list[str]:
    """Start `count` runs of `wf(run_id, due)` under ids of this test's own (a workflow's
    count of wakes is kept across the tests of a worker): their ids, in order."""
    ids = [f"{prefix}{uuid.uuid4().hex[:8]}-{i}" for i in range(count)]
    for workflow_id in ids:
        engine.start(wf, workflow_id, due, workflow_id=workflow_id)
    return ids


def wait_status(
    engine: Engine, workflow_id: str, *statuses: Status, timeout: float = 20.0
) -> WorkflowRow:
    """Poll the engine's store until the run has one of `statuses`; its row then."""
    deadline = time.monotonic() + timeout
    while True:
        row = engine.store.get_workflow(workflow_id)
        if row is not None and row.status in statuses:
            return row
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {workflow_id} to be "
                f"{' or '.join(s.name for s in statuses)}: it is {row and row.status}"
            )
        time.sleep(0.02)


def rk(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Run the `replaykit` command in this process (click's runner): its result."""
    from click.testing import CliRunner

    from replaykit.cli import cli

    return CliRunner().invoke(cli, list(args), input=input, env=env)


def ok(result: Result) -> str:
    """What a command that must succeed printed; its output and error when it did not."""
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def error_line(result: Result, code: int = 1) -> str:
    """The error contract of a command that must fail with `code`: exactly one line on
    stderr, `Error: ...`, and never a traceback; that line."""
    assert result.exit_code == code, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]
