"""Upgrading a store: a database an older replaykit made opens at the latest schema with
no run lost, and goes on working.

Each fixture set in tests/data (`store_pg<N>_sqlite<M>.json` and its two dumps, made by
`tests/data/make_store_fixtures.py` at the commit its manifest names) is loaded into a
fresh PostgreSQL schema and a fresh SQLite file at the version it was made with; opening
the store runs the migrations from there. What the store's readers then answer is
compared with what the old code's readers answered (the manifest), and an engine resumes
the old runs, claims the queued ones and takes old messages before new ones.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import PG_URL, drop_schema, fresh_schema_name, require_postgres, wait_status
from replaykit import Engine, Status
from replaykit.stores import WorkflowFilter, open_store
from replaykit.stores.base import Store
from tests.data import make_store_fixtures as made
from tests.data.make_store_fixtures import (
    APP_VERSION,
    EXECUTOR_ID,
    SERVED,
    WAITING,
    drain_inboxes,
    load_postgres,
    load_sqlite,
    register_schedules,
    snapshot,
)

MANIFESTS = sorted(made.DATA.glob("store_pg*_sqlite*.json"))
KINDS = ("sqlite", "postgres")
MISSING = "<missing after the upgrade>"


def _cases() -> list[Any]:
    return [
        pytest.param((path, kind), id=f"{path.stem}-{kind}") for path in MANIFESTS for kind in KINDS
    ]


class Fixture:
    """One store loaded from a fixture set, at the version it was made with, not yet opened."""

    def __init__(self, manifest: dict[str, Any], kind: str, url: str) -> None:
        self.manifest = manifest
        self.kind = kind
        self.url = url
        self.made: dict[str, Any] = manifest[kind]
        self.roles: dict[str, str] = self.made["roles"]
        self.runs: dict[str, Any] = self.made["snapshot"]["runs"]

    def role(self, name: str) -> str:
        return self.roles[name]

    def result(self, name: str) -> Any:
        """The value the run had finished with when the fixture was made."""
        outcome = self.runs[self.role(name)]["row"]["result"]
        assert outcome is not None and "data" in outcome, (name, outcome)
        return outcome["data"]

    def unread(self, name: str, topic: str) -> list[Any]:
        """The run's messages on `topic` no one had read, oldest first."""
        inbox = self.made["inboxes"][self.role(name)]
        return [payload for on, payload, _trace in inbox if on == topic]


@pytest.fixture(params=_cases())
def old(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fixture]:
    path, kind = request.param
    manifest = json.loads(path.read_text("utf-8"))
    dump = (path.parent / f"{path.stem}_{kind}.sql").read_text("utf-8")
    if kind == "sqlite":
        database = tmp_path / "old.db"
        load_sqlite(database, dump)
        yield Fixture(manifest, kind, f"sqlite:///{database}")
        return
    require_postgres()
    schema = fresh_schema_name("upgrade")
    try:
        load_postgres(PG_URL, schema, dump, manifest["postgres"]["migrations"])
        yield Fixture(manifest, kind, f"{PG_URL}?schema={schema}")
    finally:
        drop_schema(schema)


def _version_at_rest(fixture: Fixture) -> int:
    """The schema version the loaded database holds, read without opening a store."""
    if fixture.kind == "sqlite":
        path = fixture.url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
    import psycopg
    from psycopg import sql

    schema = fixture.url.rpartition("?schema=")[2]
    with psycopg.connect(PG_URL) as conn:
        query = sql.SQL("SELECT max(version) FROM {}.schema_version").format(sql.Identifier(schema))
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def _known(got: Any, want: Any) -> Any:
    """`got` (a stored value read as JSON data) cut to the fields `want` has: a field a
    later replaykit added to a row or a record (a shard key) is not the fixture's to check,
    while a field that went missing shows as MISSING."""
    if isinstance(want, dict) and isinstance(got, dict):
        return {key: got.get(key, MISSING) for key in want}
    return got


def _known_each(got: list[Any], want: list[Any]) -> list[Any]:
    """`_known` of each item; an item more or fewer than `want` shows as it is."""
    return [_known(g, w) for g, w in zip(got, want, strict=False)] + got[len(want) :]


def _known_run(got: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    return {
        "row": _known(got["row"], want["row"]),
        "log": _known_each(got["log"], want["log"]),
        "events": got["events"],
        "step_heartbeats": _known_each(got["step_heartbeats"], want["step_heartbeats"]),
        "cancel_request": _known(got["cancel_request"], want["cancel_request"]),
        "parent_close": got["parent_close"],
    }


def _read(store: Store) -> dict[str, Any]:
    return json.loads(json.dumps(snapshot(store)))


def test_each_fixture_set_is_there_and_holds_every_status() -> None:
    assert MANIFESTS, "no store fixtures in tests/data: run tests/data/make_store_fixtures.py"
    for path in MANIFESTS:
        manifest = json.loads(path.read_text("utf-8"))
        for kind in KINDS:
            runs = manifest[kind]["snapshot"]["runs"]
            held = {run["row"]["status"] for run in runs.values()}
            # Every status the code that made the set knew, so each has a row to migrate.
            assert held == set(manifest["statuses"]), (path.name, kind)
            assert manifest[kind]["inboxes"], (path.name, kind)
            assert manifest[kind]["send_keys"], (path.name, kind)


def test_opening_migrates_to_the_latest_version(old: Fixture) -> None:
    made_with = old.manifest[old.kind]["version"]
    assert _version_at_rest(old) == made_with
    store = open_store(old.url)
    try:
        current, latest = store.schema_status()  # type: ignore[attr-defined]
    finally:
        store.close()
    assert current == latest >= made_with
    assert _version_at_rest(old) == latest


def test_every_run_reads_as_it_did(old: Fixture) -> None:
    """Status, name, inputs, result, parent, queue, priority, partition key, attributes,
    generation, fork and times of every run; each log record; events, step heartbeats,
    cancel requests, parent close policies; the lookups by index; schedules; engines."""
    store = open_store(old.url)
    try:
        got = _read(store)
    finally:
        store.close()
    want = old.made["snapshot"]
    assert sorted(got["runs"]) == sorted(want["runs"])
    for workflow_id, run in want["runs"].items():
        assert _known_run(got["runs"][workflow_id], run) == run, workflow_id
    for kind, lookups in want["lookups"].items():
        for key, ids in lookups.items():
            assert got["lookups"][kind][key] == ids, (kind, key)
    assert got["counts_by_status"] == want["counts_by_status"]
    assert sorted(got["schedules"]) == sorted(want["schedules"])
    for name, state in want["schedules"].items():
        assert _known(got["schedules"][name], state) == state, name
    assert _known_each(got["engines"], want["engines"]) == want["engines"]


def test_unread_messages_and_send_keys_are_kept(old: Fixture) -> None:
    store = open_store(old.url)
    try:
        inboxes = old.made["inboxes"]
        topics = {run: {message[0] for message in messages} for run, messages in inboxes.items()}
        # Oldest first across each run's topics, as a Recv of them all takes them.
        assert drain_inboxes(store, topics) == inboxes
        # A used key delivers nothing more, whoever used it (a Send, engine.send).
        for workflow_id, key in old.made["send_keys"]:
            assert not store.send_message(workflow_id, "again", "again", idempotency_key=key), key
            assert store.peek_message(workflow_id, "again") is None, key
    finally:
        store.close()


def test_the_upgraded_store_resumes_claims_and_receives(old: Fixture) -> None:
    store = open_store(old.url)
    store.close()  # migrated: the engine below opens it at the latest version
    with Engine(
        old.url,
        executor_id=EXECUTOR_ID,
        app_version=APP_VERSION,
        queues=[WAITING],
        schedules=False,
        poll_interval=0.1,
    ) as engine:
        # A message sent now comes after the old unread ones, in order.
        inbox = old.role("pending_inbox")
        engine.send(inbox, {"item": "new"}, "items")
        engine.send(inbox, "go!", "go")
        assert engine.handle(inbox).result(timeout=30) == {
            "go": "go!",
            "items": [*old.unread("pending_inbox", "items"), {"item": "new"}],
        }
        # The run that slept when the fixture was made wakes (its instant is past, but
        # just after the fixture was made).
        sleeper = old.runs[old.role("pending_sleep")]["row"]
        due = datetime.fromisoformat(sleeper["wake_at"]) - datetime.now(UTC)
        wait = 30 + max(due.total_seconds(), 0)
        assert engine.handle(old.role("pending_sleep")).result(timeout=wait) == made.double(2)
        # A continued run is found, and finished, by its original id, in its generation.
        rounds = old.role("continued_pending")
        engine.send(rounds, "x-new", "extra")
        engine.send(rounds, "go!", "go")
        assert engine.handle(rounds).result(timeout=30) == {
            "go": "go!",
            "extras": [*old.unread("continued_pending", "extra"), "x-new"],
        }
        row = engine.store.get_workflow(rounds)
        assert row is not None
        assert row.generation == old.runs[rounds]["row"]["generation"] > 0
        # A start re-issued under a continued run's id, with its first generation's
        # arguments, finds the run (its first inputs were kept).
        counter = old.role("continued")
        first = old.runs[f"{counter}#0"]["row"]["inputs"]["args"]
        assert engine.start(made.counter, *first, workflow_id=counter).result(timeout=30) == (
            old.result("continued")
        )
        # The awakeable's token, handed out before the upgrade, still completes it.
        awaiting = old.role("awakeable")
        found, token = engine.store.get_event(awaiting, "token")
        assert found
        engine.complete(token, "approved")
        assert engine.handle(awaiting).result(timeout=30) == "approved"
        # The child its parent abandoned still runs, and has its parent.
        child = old.role("child_abandoned")
        engine.send(child, "released", "release")
        assert engine.handle(child).result(timeout=30) == "released"
        assert engine.store.get_workflow(child).parent_id == old.role("parent")  # type: ignore[union-attr]
        # The run inside its cancel's grace finishes its cleanup and ends CANCELLED.
        cancelling = old.role("cancelling")
        engine.send(cancelling, True, "cleanup-done")
        row = wait_status(engine, cancelling, Status.CANCELLED)
        assert old.runs[cancelling]["cancel_request"]["reason"] in row.error
        # A parked run resumes from its log.
        parked = old.role("parked")
        engine.resume(parked)
        engine.send(parked, "unparked", "unpark")
        assert engine.handle(parked).result(timeout=30) == "unparked"
        # The queued runs are claimed, but the one delayed for years.
        for name in ("queued_a", "queued_b"):
            run = old.runs[old.role(name)]["row"]
            (n,) = run["inputs"]["args"]
            assert engine.handle(old.role(name)).result(timeout=30) == {
                "n": n,
                "doubled": made.double(n),
            }
        delayed = engine.store.get_workflow(old.role("queued_delayed"))
        assert delayed is not None and delayed.status is Status.ENQUEUED
        # The fork and the children are found from their source and parent.
        source = old.role("success")
        forks = engine.store.list_workflows(WorkflowFilter(forked_from=source))
        assert [r.workflow_id for r in forks] == [old.role("fork")]
        children = engine.store.list_workflows(WorkflowFilter(parent_id=old.role("parent")))
        assert {r.workflow_id for r in children} == {
            old.role(name) for name in ("child_called", "child_abandoned", "child_cancelled")
        }
        assert engine.handle(old.role("child_called")).result(timeout=30) == old.result(
            "child_called"
        )
        # An old run forks again, and a new run runs, on the upgraded schema.
        again = engine.fork(source, 1, workflow_id="fx-fork-after-upgrade")
        assert again.result(timeout=30) == old.result("success")
        assert engine.run(made.steps, 11, timeout=30) == {"n": 11, "doubled": made.double(11)}


def test_schedule_requests_made_before_the_upgrade_are_carried_out(
    old: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trigger of a paused schedule and a backfill, asked for while no engine ran."""
    from replaykit.runtime import schedules as schedules_module

    # The fixture's schedules, in a registry of this test's own: registered for the whole
    # process, every engine of every other test would carry them out.
    monkeypatch.setattr(schedules_module, "_schedules", {})
    register_schedules()
    asked: dict[str, list[str]] = old.made["schedule_requests"]
    assert all(asked.values())
    with Engine(
        old.url,
        executor_id=EXECUTOR_ID,
        app_version=APP_VERSION,
        queues=[SERVED],
        poll_interval=0.1,
    ) as engine:
        for ids in asked.values():
            for workflow_id in ids:
                wait_status(engine, workflow_id, Status.SUCCESS)
        states = engine.store.schedule_states()
    for name, state in old.made["snapshot"]["schedules"].items():
        # Carried out, then cleared; what the schedule was (paused or not) is kept.
        assert (states[name].trigger_at, states[name].backfill_start) == (None, None), name
        assert states[name].paused == state["paused"], name
        assert (states[name].cron, states[name].tz) == (state["cron"], state["tz"]), name
