"""Make the store-upgrade fixtures: runs in every status, as this checkout's replaykit
stores them, in a PostgreSQL schema and a SQLite database, dumped as SQL text.

    python tests/data/make_store_fixtures.py [POSTGRES_URL]

Run it from a checkout of the commit that made the fixtures (the manifest names it):
the point of a fixture is that an *older* replaykit wrote it, so that
`tests/test_store_upgrade.py` can show that the current migrations bring such a database
to the latest schema without losing a run. Run from a later commit, it writes a new set
named by that commit's schema versions (`store_pg<N>_sqlite<M>.*`) beside the older
ones, which stay as they are; never regenerate an old set from newer code.

What it writes into tests/data/ (PREFIX is `store_pg<N>_sqlite<M>`):

- `PREFIX_postgres.sql`: the schema's rows as INSERT statements (and the
  `schema_version` table they were migrated with), every table name written
  `{schema}.table`. `load_postgres` makes a schema of any name by running the package's
  migration files that the manifest lists, then these statements.
- `PREFIX_sqlite.sql`: the SQLite database as `sqlite3.iterdump()` writes it (its
  schema included, since SQLite's migrations live in one file that grows), with its
  `PRAGMA user_version`.
- `PREFIX.json`: the manifest: the commit, the versions, the runs' roles, and for each
  store what the store's own readers (the `Store` protocol) answered about every run
  (`snapshot`), the unread messages of every run in order, and the send keys used.
  Read from a copy loaded back from the dump, and checked there against the database
  the dump was made from, so a dump that loses anything fails here, not in the test.

The workflows below are the ones the fixtures' logs were recorded with: the test
imports this module to register them and to resume the runs. Change none of them
(a changed command replays as a `NonDeterminismError`); add new ones for a new set.
`snapshot` reads old sets' manifests too: it may read more, never less or otherwise.

The scenario runs on the real clock with a real `Engine`, `Client` and `Queue`s, and
makes every status with the public API (`Engine.park` makes the PARKED run). The runs'
ids, arguments and outcomes are the same at each run of this script; timestamps are
not, nor the id of the run a schedule's trigger started (it holds the trigger's instant).
"""

from __future__ import annotations

import enum
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

if __name__ == "__main__":  # run as a script: import replaykit from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from replaykit import (
    Await,
    Awakeable,
    Call,
    Cancelled,
    Client,
    ContinueAsNew,
    Engine,
    Queue,
    Recv,
    Retry,
    Send,
    SetAttributes,
    SetEvent,
    Sleep,
    Start,
    Status,
    Step,
    schedule,
    step_context,
    workflow,
)
from replaykit.stores import WorkflowFilter, open_store
from replaykit.stores.base import EventWrite, Store

__all__ = [
    "APP_VERSION",
    "DATA",
    "EXECUTOR_ID",
    "SERVED",
    "WAITING",
    "drain_inboxes",
    "load_postgres",
    "load_sqlite",
    "plain",
    "register_schedules",
    "snapshot",
]

DATA = Path(__file__).resolve().parent
# The engine that made the fixtures: an engine of the test with the same id and version
# recovers its PENDING runs and claims its queued ones (claims and recovery are per
# version), whatever else the test process registered.
EXECUTOR_ID = "fixture-engine"
APP_VERSION = "fixture-v1"
MANIFEST_FORMAT = 1

# Its runs wait here, unclaimed: the fixture's engine drains only SERVED.
WAITING = Queue("fx-waiting", partitioned=True)
SERVED = Queue("fx-served")


# -- the workflows the fixtures' logs were recorded with ---------------------------------


def double(n: int) -> int:
    return n * 2


def boom(n: int) -> int:
    raise ValueError(f"boom {n}")


def beat(n: int) -> int:
    context = step_context()
    for done in range(1, n + 1):
        context.heartbeat({"done": done, "of": n})
    return n


@workflow(name="fx.steps")
def steps(n: int) -> Generator[Any, Any, dict[str, int]]:
    doubled = yield Step("double", double, n)
    yield Sleep(0.01)
    yield SetEvent("progress", {"doubled": doubled})
    yield SetAttributes({"stage": "done", "doubled": doubled})
    return {"n": n, "doubled": doubled}


@workflow(name="fx.fails")
def fails(n: int) -> Generator[Any, Any, int]:
    yield Step("double", double, n)
    return (yield Step("boom", boom, n, retry=Retry(max_attempts=2, interval=0.01)))


@workflow(name="fx.beats")
def beats(n: int) -> Generator[Any, Any, int]:
    return (yield Step("beat", beat, n))


@workflow(name="fx.inbox")
def inbox(expect: int) -> Generator[Any, Any, dict[str, Any]]:
    """Waits for "go", then takes `expect` messages on "items", oldest first."""
    prepared = yield Step("prepare", double, expect)
    yield SetEvent("ready", prepared)
    go = yield Recv("go")
    items = []
    for _ in range(expect):
        items.append((yield Recv("items")))
    return {"go": go, "items": items}


@workflow(name="fx.sleeper")
def sleeper(seconds: float) -> Generator[Any, Any, int]:
    yield Step("before", double, 1)
    yield Sleep(seconds)
    return (yield Step("after", double, 2))


@workflow(name="fx.waits")
def waits(topic: str) -> Generator[Any, Any, Any]:
    return (yield Recv(topic))


@workflow(name="fx.graceful")
def graceful(topic: str) -> Generator[Any, Any, Any]:
    """Handles a cancel: a cleanup step, then a wait for "cleanup-done" within its grace."""
    try:
        return (yield Recv(topic))
    except Cancelled:
        yield Step("cleanup", double, 3)
        yield SetEvent("cleaning", True)
        yield Recv("cleanup-done")
        raise


@workflow(name="fx.tidy")
def tidy() -> Generator[Any, Any, Any]:
    try:
        return (yield Recv("never"))
    except Cancelled:
        yield Step("cleanup", double, 4)
        raise


@workflow(name="fx.parent")
def parent(n: int) -> Generator[Any, Any, dict[str, Any]]:
    done = yield Call(steps, n, workflow_id=f"fx-child-call-{n}")
    abandoned = yield Start(
        waits, "release", workflow_id="fx-child-abandoned", parent_close="abandon"
    )
    yield Start(waits, "never", workflow_id="fx-child-cancelled", parent_close="cancel")
    sent = yield Send(abandoned, {"from": "parent"}, topic="hello", idempotency_key="parent-hello")
    return {"child": done, "abandoned": abandoned, "sent": sent}


@workflow(name="fx.counter")
def counter(n: int, total: int) -> Generator[Any, Any, int]:
    total += yield Step("add", double, n)
    if n < 2:
        yield ContinueAsNew(n + 1, total)
    return total


@workflow(name="fx.rounds")
def rounds(n: int) -> Generator[Any, Any, dict[str, Any]]:
    """Generation 0 takes a "tick" and continues; generation 1 waits for "go", then takes
    two "extra" messages: one sent before the continue, one sent later."""
    if n == 0:
        yield Recv("tick")
        yield ContinueAsNew(1)
    yield SetEvent("generation", n)
    go = yield Recv("go")
    extras = [(yield Recv("extra")), (yield Recv("extra"))]
    return {"go": go, "extras": extras}


@workflow(name="fx.awaits")
def awaits() -> Generator[Any, Any, Any]:
    token = yield Awakeable("approval")
    yield SetEvent("token", token)
    return (yield Await(token))


@workflow(name="fx.ticked")
def ticked(tick: datetime) -> Generator[Any, Any, str]:
    return (yield Step("tick", str, tick.isoformat()))


def register_schedules() -> None:
    """Only when making fixtures: a schedule registered at import would be carried out
    by every engine of the test process."""
    schedule("0 0 1 1 *", name="fx-yearly")(ticked)
    schedule("30 3 * * *", name="fx-nightly", tz="Europe/Berlin", queue=SERVED.name)(ticked)


# -- the scenario ------------------------------------------------------------------------


def _wait(check: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _status(store: Store, workflow_id: str) -> Status | None:
    row = store.get_workflow(workflow_id)
    return None if row is None else row.status


def _waits_at(engine: Engine, workflow_id: str, kind: str, name: str) -> Callable[[], bool]:
    """Whether the run's last record is a pending `kind` named `name` (it waits there)."""

    def check() -> bool:
        log = engine.store.load_log(workflow_id)
        return bool(log) and (log[-1].kind, log[-1].name, log[-1].outcome) == (kind, name, None)

    return check


def make_runs(url: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Run the scenario on the store at `url`: the roles of the runs it made (role: id),
    and the ids of the runs asked of each schedule and not started yet."""
    roles: dict[str, str] = {}

    def role(name: str, workflow_id: str) -> str:
        roles[name] = workflow_id
        return workflow_id

    from opentelemetry.sdk.trace import TracerProvider

    # Traced (spans kept nowhere), so that runs and messages hold a trace context: a
    # run started or a message sent inside `traced`, and every child and Send of a run.
    tracing = TracerProvider()
    traced = tracing.get_tracer("make_store_fixtures").start_as_current_span
    with Engine(
        url,
        executor_id=EXECUTOR_ID,
        app_version=APP_VERSION,
        queues=[SERVED],
        poll_interval=0.05,
        tracer_provider=tracing,
    ) as engine:
        store = engine.store
        # SUCCESS: steps, a sleep, an event, attributes at start and set by the run, a
        # timeout (a deadline); then messages nobody reads, one sent with a key.
        done = role("success", "fx-success")
        with traced("start fx-success"):
            handle = engine.start(
                steps, 3, workflow_id=done, timeout=3600, attributes={"customer": "c-1", "tier": 2}
            )
        handle.result(timeout=30)
        with traced("send to fx-success"):
            engine.send(done, {"late": 1}, "late", idempotency_key="late-1")
        engine.send(done, {"late": 2}, "late")
        role("beats", "fx-beats")
        engine.run(beats, 3, workflow_id="fx-beats", timeout=30)
        # ERROR after a retried step (attempts 2).
        failed = role("error", "fx-error")
        engine.start(fails, 5, workflow_id=failed)
        _wait(lambda: _status(store, failed) is Status.ERROR, "the failing run")
        # A family: a child called, one abandoned (runs on, PENDING), one cancelled with
        # its parent (policy "cancel"); a keyed Send from the workflow.
        role("parent", "fx-parent")
        engine.run(parent, 7, workflow_id="fx-parent", timeout=30)
        role("child_called", "fx-child-call-7")
        role("child_abandoned", "fx-child-abandoned")
        role("child_cancelled", "fx-child-cancelled")
        _wait(lambda: _status(store, "fx-child-cancelled") is Status.CANCELLED, "the child")
        _wait(_waits_at(engine, "fx-child-abandoned", "recv", "release"), "the abandoned child")
        # Continue-as-new: three generations, SUCCESS; and one that waits in its second.
        role("continued", "fx-counter")
        engine.run(counter, 0, 0, workflow_id="fx-counter", timeout=30)
        rounds_id = role("continued_pending", "fx-rounds")
        engine.start(rounds, 0, workflow_id=rounds_id)
        engine.send(rounds_id, "t-1", "tick")
        engine.send(rounds_id, "x-1", "extra")  # unread across the continue
        _wait(_waits_at(engine, rounds_id, "recv", "go"), "the second generation")
        # A fork of the first run from its sleep, and a rewind (an archived attempt).
        role("fork", "fx-fork")
        engine.fork(done, 1, workflow_id="fx-fork").result(timeout=30)
        rewound = role("rewound", "fx-rewound")
        engine.run(steps, 4, workflow_id=rewound, timeout=30)
        engine.rewind(rewound, 1).result(timeout=30)
        # Queues: one run claimed and served; three waiting (two partition keys and
        # priorities, a dedup id, a timeout; one delayed for years); one cancelled there.
        role("queue_served", "fx-queue-served")
        engine.enqueue(
            SERVED,
            steps,
            8,
            workflow_id="fx-queue-served",
            partition_key="k-1",
            priority=3,
            attributes={"customer": "c-2"},
        ).result(timeout=30)
        role("queued_a", "fx-queued-a")
        engine.enqueue(
            WAITING,
            steps,
            5,
            workflow_id="fx-queued-a",
            partition_key="tenant-a",
            priority=5,
            dedup_id="dedup-a",
            timeout=600,
            attributes={"customer": "c-3", "tags": ["red", "blue"]},
        )
        role("queued_b", "fx-queued-b")
        engine.enqueue(
            WAITING, steps, 6, workflow_id="fx-queued-b", partition_key="tenant-b", priority=1
        )
        role("queued_delayed", "fx-queued-delayed")
        engine.enqueue(
            WAITING, steps, 9, workflow_id="fx-queued-delayed", delay=timedelta(days=3650)
        )
        role("queued_cancelled", "fx-queued-cancelled")
        engine.enqueue(
            WAITING, steps, 10, workflow_id="fx-queued-cancelled", partition_key="tenant-a"
        )
        engine.cancel("fx-queued-cancelled", reason="fixture: cancelled while queued")
        # CANCELLED: stopped hard; and one that handled its cancel with a cleanup step.
        stopped = role("terminated", "fx-terminated")
        engine.start(waits, "never", workflow_id=stopped)
        _wait(_waits_at(engine, stopped, "recv", "never"), "the run to stop")
        engine.terminate(stopped, reason="fixture: stopped hard")
        tidied = role("cancelled_handled", "fx-cancelled-handled")
        engine.start(tidy, workflow_id=tidied)
        _wait(_waits_at(engine, tidied, "recv", "never"), "the run to cancel")
        engine.cancel(tidied, grace=60, reason="fixture: asked to stop")
        _wait(lambda: _status(store, tidied) is Status.CANCELLED, "the handled cancel")
        # PENDING within a cancel's grace: its cleanup waits for "cleanup-done".
        grace = role("cancelling", "fx-cancelling")
        engine.start(graceful, "stop", workflow_id=grace)
        _wait(_waits_at(engine, grace, "recv", "stop"), "the graceful run")
        engine.cancel(grace, grace=7 * 86400, reason="fixture: cancelled with a week's grace")
        _wait(_waits_at(engine, grace, "recv", "cleanup-done"), "the cleanup")
        # PARKED by hand while it waited.
        parked = role("parked", "fx-parked")
        engine.start(waits, "unpark", workflow_id=parked)
        _wait(_waits_at(engine, parked, "recv", "unpark"), "the run to park")
        engine.park(parked, "fixture: parked by hand")
        # PENDING on an awakeable.
        waiting = role("awakeable", "fx-awakeable")
        engine.start(awaits, workflow_id=waiting)
        _wait(lambda: engine.store.get_event(waiting, "token")[0], "the token")
        # PENDING mid-run with unread messages, one keyed, one on a topic never read.
        pending = role("pending_inbox", "fx-inbox")
        engine.start(inbox, 3, workflow_id=pending, attributes={"customer": "c-1"})
        _wait(_waits_at(engine, pending, "recv", "go"), "the inbox")
        engine.send(pending, {"item": 1}, "items", idempotency_key="item-1")
        engine.send(pending, {"item": 2}, "items")
        engine.send(pending, "kept", "note")
        # Schedules: a trigger carried out; then, with no engine, a trigger and a
        # backfill asked for and not carried out, and one schedule paused.
        with Client(url) as client:
            tick_id = client.trigger_schedule("fx-yearly")
            role("scheduled", tick_id)
            _wait(lambda: _status(store, tick_id) is Status.SUCCESS, "the triggered tick", 60)
        # PENDING asleep: started last, so that it still sleeps when the engine closes
        # (checked below); briefly, so that a test just after this script finds it due.
        role("pending_sleep", "fx-sleeper")
        engine.start(sleeper, 5.0, workflow_id="fx-sleeper")
        asleep = _waits_at(engine, "fx-sleeper", "sleep", "sleep")
        _wait(asleep, "the sleeper")
    check = open_store(url)
    try:
        log = check.load_log("fx-sleeper")
        if log[-1].outcome is not None:
            raise RuntimeError("the sleeper woke before the engine closed: run this again")
    finally:
        check.close()
    with Client(url) as client:
        client.pause_schedule("fx-nightly")
        asked = {
            "fx-nightly": [client.trigger_schedule("fx-nightly")],
            "fx-yearly": client.backfill_schedule(
                "fx-yearly", datetime(2020, 1, 1, tzinfo=UTC), datetime(2022, 6, 1, tzinfo=UTC)
            ),
        }
    return roles, asked


# -- reading a store through its own methods --------------------------------------------

# Not stored: what a listing or a claim says about a row, not the row.
_NOT_STORED = {"has_log", "damaged"}


def plain(value: Any) -> Any:
    """`value` as JSON data: attrs instances as dicts of their fields, instants as ISO text."""
    if attrs.has(type(value)):
        return {
            field.name: plain(getattr(value, field.name))
            for field in attrs.fields(type(value))
            if field.name not in _NOT_STORED
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, BaseException):
        return repr(value)
    return value


def _ids(rows: Iterable[Any]) -> list[str]:
    return sorted(row.workflow_id for row in rows)


def snapshot(store: Store) -> dict[str, Any]:
    """What the store's readers answer about every run, and the lookups by its indexes.

    Reads only; as JSON data (`plain`), so a manifest holds it and a test compares it.
    """
    rows = store.list_workflows(WorkflowFilter())
    runs: dict[str, Any] = {}
    for listed in rows:
        workflow_id = listed.workflow_id
        row = store.get_workflow(workflow_id)
        runs[workflow_id] = {
            "row": plain(row),
            "log": plain(store.load_log(workflow_id)),
            "events": plain(store.get_events(workflow_id)),
            "step_heartbeats": plain(store.get_step_heartbeats(workflow_id)),
            "cancel_request": plain(store.get_cancel_request(workflow_id)),
            "parent_close": store.get_parent_close(workflow_id),
        }
    lookups: dict[str, dict[str, list[str]]] = {}

    def lookup(kind: str, key: str, where: WorkflowFilter) -> None:
        lookups.setdefault(kind, {})[key] = _ids(store.list_workflows(where))

    for status in Status:
        lookup("status", status.value, WorkflowFilter(status=status))
    for listed in rows:
        if listed.parent_id is not None:
            lookup("parent_id", listed.parent_id, WorkflowFilter(parent_id=listed.parent_id))
        if listed.forked_from is not None:
            lookup(
                "forked_from", listed.forked_from, WorkflowFilter(forked_from=listed.forked_from)
            )
        if listed.continued_as is not None:
            lookup(
                "continued_as",
                listed.continued_as,
                WorkflowFilter(continued_as=listed.continued_as),
            )
        if listed.queue is not None:
            lookup("queue", listed.queue, WorkflowFilter(queue=listed.queue))
        if listed.partition_key is not None:
            lookup(
                "partition_key",
                listed.partition_key,
                WorkflowFilter(partition_key=listed.partition_key),
            )
        lookup("name", listed.name, WorkflowFilter(name=listed.name))
    for where in ("customer = 'c-1'", "tags = 'red'", "tier >= 2", "stage = 'done'"):
        lookup("where", where, WorkflowFilter(where=where))
    # The engines' beats are no part of the `Store` protocol; both SQL stores read them.
    read_beats = getattr(store, "read_heartbeats", None)
    engines = None if read_beats is None else plain(read_beats(datetime(2000, 1, 1, tzinfo=UTC)))
    return {
        "runs": runs,
        "lookups": lookups,
        "counts_by_status": store.count_workflows_by(WorkflowFilter(), "status"),
        "schedules": plain(store.schedule_states()),
        "engines": engines,
    }


def drain_inboxes(
    store: Store, topics: Mapping[str, Iterable[str]], only: Iterable[str] | None = None
) -> dict[str, list[list[Any]]]:
    """Take every message out of the runs' inboxes, oldest first across their `topics`:
    each run's `[topic, payload, trace context]`, in the order a `Recv` of all its topics
    would take them.

    Destructive: each message is taken with `answer_message` (which also sets an event
    `fx-drained`), the one way the `Store` protocol takes a message without a record.
    """
    drained: dict[str, list[list[Any]]] = {}
    wanted = None if only is None else set(only)
    for workflow_id, its_topics in topics.items():
        if wanted is not None and workflow_id not in wanted:
            continue
        names = tuple(sorted(its_topics))
        taken: list[list[Any]] = []
        while (message := store.peek_message(workflow_id, names)) is not None:
            if not store.answer_message(
                workflow_id, message.message_id, EventWrite("fx-drained", len(taken))
            ):
                raise RuntimeError(f"{workflow_id}: message {message.message_id} went away")
            taken.append([message.topic, plain(message.payload), message.trace_context])
        drained[workflow_id] = taken
    return drained


# -- dumping and loading -----------------------------------------------------------------

PLACEHOLDER = "{schema}"


def _postgres_tables(conn: Any, schema: str) -> list[tuple[str, list[str], list[str], list[str]]]:
    """(table, its columns in order, its primary key, its identity columns) of each table
    of the schema."""
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = %s AND table_type = 'BASE TABLE' ORDER BY table_name",
            (schema,),
        )
    ]
    found = []
    for table in tables:
        columns = conn.execute(
            "SELECT column_name, is_identity FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
            (schema, table),
        ).fetchall()
        key = conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
            "WHERE i.indrelid = to_regclass(%s) AND i.indisprimary "
            "ORDER BY array_position(i.indkey, a.attnum)",
            (f'"{schema}"."{table}"',),
        ).fetchall()
        found.append(
            (
                table,
                [c[0] for c in columns],
                [k[0] for k in key],
                [c[0] for c in columns if c[1] == "YES"],
            )
        )
    return found


def _literal(text: str | None) -> str:
    # Every value as its text form, an untyped literal that INSERT casts to the column's
    # type: json keeps its text as written, timestamps their offset (the dump's session
    # is in UTC). standard_conforming_strings is on: only quotes are doubled.
    return "NULL" if text is None else "'" + text.replace("'", "''") + "'"


def dump_postgres(url: str, schema: str) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """The schema's rows as SQL text, and each table's rows (column: its text)."""
    import psycopg
    from psycopg import sql

    from replaykit.stores._statements import Statements

    statements = Statements("replaykit.stores.postgres", "statements.sql")
    out = [
        "-- Rows of a replaykit PostgreSQL schema; made by tests/data/make_store_fixtures.py.",
        "-- Load with load_postgres there: a fresh schema, the migration files the manifest",
        f"-- lists, then this. {PLACEHOLDER} stands for the schema's quoted name.",
        "",
        statements["create_schema_version"].replace("{s}", PLACEHOLDER).strip(),
        "",
    ]
    tables: dict[str, list[dict[str, Any]]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute("SET DateStyle = 'ISO, YMD'")
        for table, columns, key, identity in _postgres_tables(conn, schema):
            texts = sql.SQL(", ").join(
                sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns
            )
            # By the primary key's values, named through the table: a bare name would
            # be the output column, text, where message 10 comes before message 2.
            order = sql.SQL(", ").join(sql.Identifier("t", c) for c in key)
            query = sql.SQL("SELECT {} FROM {}.{} AS t ORDER BY {}").format(
                texts, sql.Identifier(schema), sql.Identifier(table), order
            )
            rows = [list(row) for row in conn.execute(query)]
            tables[table] = [dict(zip(columns, row, strict=True)) for row in rows]
            if not rows:
                continue
            for row in rows:
                for text in row:
                    if text is not None and PLACEHOLDER in text:
                        raise ValueError(f"{table}: a value holds {PLACEHOLDER!r}: {text!r}")
            overriding = " OVERRIDING SYSTEM VALUE" if identity else ""
            out.append(
                f"INSERT INTO {PLACEHOLDER}.{table} ({', '.join(columns)}){overriding} VALUES"
            )
            out.append(
                ",\n".join(
                    "    (" + ", ".join(_literal(text) for text in row) + ")" for row in rows
                )
                + ";"
            )
            # The identity's sequence goes on where it stood, so that new rows come after
            # the old ones (last_value is NULL before its first value was drawn).
            for column in identity:
                (last,) = conn.execute(
                    "SELECT s.last_value FROM pg_sequences AS s "
                    "WHERE format('%%I.%%I', s.schemaname, s.sequencename)::regclass "
                    "= pg_get_serial_sequence(%s, %s)::regclass",
                    (sql.Identifier(schema, table).as_string(conn), column),
                ).fetchone()
                drawn = "1, false" if last is None else f"{int(last)}, true"
                out.append(
                    f"SELECT setval(pg_get_serial_sequence('{PLACEHOLDER}.{table}', "
                    f"'{column}'), {drawn});"
                )
            out.append("")
    return "\n".join(out), tables


def load_postgres(url: str, schema: str, dump: str, migrations: Iterable[str]) -> None:
    """Make `schema` from the package's `migrations` (file names) and the rows of `dump`."""
    import psycopg
    from psycopg import sql

    ident = sql.Identifier(schema)
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(ident))
        for name in migrations:
            text = resources.files("replaykit.stores").joinpath("sql", name).read_text("utf-8")
            conn.execute(sql.SQL(text).format(schema=ident))
        conn.execute(dump.replace(PLACEHOLDER, ident.as_string(conn)))


def dump_sqlite(path: Path) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """The database as SQL text (schema, rows, user_version), and each table's rows."""
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        lines = list(conn.iterdump())
        tables: dict[str, list[dict[str, Any]]] = {}
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        for (name,) in names.fetchall():
            cursor = conn.execute(f'SELECT * FROM "{name}"')
            columns = [d[0] for d in cursor.description]
            tables[name] = [dict(zip(columns, row, strict=True)) for row in cursor]
    finally:
        conn.close()
    header = [
        "-- A replaykit SQLite database; made by tests/data/make_store_fixtures.py.",
        "-- Load with load_sqlite there (sqlite3 executescript into a new file).",
    ]
    assert lines[0] == "BEGIN TRANSACTION;", lines[0]
    body = [lines[0], f"PRAGMA user_version = {int(version)};", *lines[1:]]
    return "\n".join(header + body) + "\n", tables


def load_sqlite(path: Path, dump: str) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(dump)
    finally:
        conn.close()


# -- making a set ------------------------------------------------------------------------


def _commit() -> str:
    root = Path(__file__).resolve().parents[2]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "replaykit"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return head + (" (with changes to replaykit/)" if dirty else "")


def _topics_and_keys(
    tables: Mapping[str, list[dict[str, Any]]],
) -> tuple[dict[str, list[str]], list[list[str]]]:
    """Each run's topics with a message waiting, and the send keys used: read from the
    dumped rows, since the `Store` protocol lists neither."""
    topics: dict[str, set[str]] = {}
    for row in tables["messages"]:
        topics.setdefault(row["workflow_id"], set()).add(row["topic"])
    keys = sorted([row["workflow_id"], row["key"]] for row in tables["send_keys"])
    return {run: sorted(names) for run, names in sorted(topics.items())}, keys


def _made(url: str, copy_url: str, tables: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What the manifest says of one store: read from the copy loaded from the dump, and
    checked against the database it was dumped from."""
    topics, keys = _topics_and_keys(tables)
    original, copy = open_store(url), open_store(copy_url)
    try:
        made = json.loads(json.dumps(snapshot(original)))
        loaded = json.loads(json.dumps(snapshot(copy)))
        if made != loaded:
            raise RuntimeError("the dump, loaded back, reads otherwise than its database")
        inboxes = drain_inboxes(copy, topics)
    finally:
        original.close()
        copy.close()
    return {"snapshot": made, "inboxes": inboxes, "send_keys": keys}


def _json_text(value: Any, depth: int = 0) -> str:
    """JSON with its outer objects one key a line and each run's parts on a line: a
    manifest a reader can scan, a fraction of the size of one indented throughout."""
    if not isinstance(value, dict) or depth >= 5 or not value:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    pad = " " * (depth + 1)
    items = [
        f"{pad}{json.dumps(key)}: {_json_text(value[key], depth + 1)}" for key in sorted(value)
    ]
    return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"


def main(argv: list[str]) -> int:
    import psycopg
    from psycopg import sql

    from replaykit.stores.postgres.migrations import MIGRATIONS as PG_MIGRATIONS
    from replaykit.stores.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS

    pg_url = (
        argv[1]
        if len(argv) > 1
        else os.environ.get("REPLAYKIT_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
    )
    register_schedules()
    prefix = f"store_pg{len(PG_MIGRATIONS)}_sqlite{len(SQLITE_MIGRATIONS)}"
    token = uuid.uuid4().hex[:8]
    schema, copy_schema = f"rk_fixture_{token}", f"rk_fixture_copy_{token}"
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "commit": _commit(),
        "made_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "executor_id": EXECUTOR_ID,
        "app_version": APP_VERSION,
        "statuses": [status.value for status in Status],
        "postgres": {"version": len(PG_MIGRATIONS), "migrations": list(PG_MIGRATIONS)},
        "sqlite": {"version": len(SQLITE_MIGRATIONS)},
    }
    try:
        with tempfile.TemporaryDirectory() as scratch:
            lite = Path(scratch) / "fixture.db"
            roles, asked = make_runs(f"sqlite:///{lite}")
            lite_dump, lite_tables = dump_sqlite(lite)
            lite_copy = Path(scratch) / "copy.db"
            load_sqlite(lite_copy, lite_dump)
            manifest["sqlite"].update(roles=roles, schedule_requests=asked)
            manifest["sqlite"].update(
                _made(f"sqlite:///{lite}", f"sqlite:///{lite_copy}", lite_tables)
            )

            url = f"{pg_url}?schema={schema}"
            pg_roles, pg_asked = make_runs(url)
            if pg_roles.keys() != roles.keys():
                raise RuntimeError(f"the scenario made other runs: {pg_roles} != {roles}")
            manifest["postgres"].update(roles=pg_roles, schedule_requests=pg_asked)
            pg_dump, pg_tables = dump_postgres(pg_url, schema)
            load_postgres(pg_url, copy_schema, pg_dump, PG_MIGRATIONS)
            manifest["postgres"].update(_made(url, f"{pg_url}?schema={copy_schema}", pg_tables))
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            for name in (schema, copy_schema):
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )
    (DATA / f"{prefix}_postgres.sql").write_text(pg_dump, "utf-8")
    (DATA / f"{prefix}_sqlite.sql").write_text(lite_dump, "utf-8")
    (DATA / f"{prefix}.json").write_text(_json_text(manifest) + "\n", "utf-8")
    statuses = sorted(
        {run["row"]["status"] for run in manifest["sqlite"]["snapshot"]["runs"].values()}
    )
    print(f"wrote {prefix}.json, {prefix}_postgres.sql, {prefix}_sqlite.sql: statuses {statuses}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
