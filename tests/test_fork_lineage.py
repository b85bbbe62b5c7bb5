"""A fork remembers where it came from (`forked_from`, `fork_position`), on every store."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from replaykit import Engine, Recv, Step, workflow
from replaykit.log import Status
from replaykit.stores import open_store
from replaykit.stores.base import ClaimLimits, WorkflowFilter, WorkflowRow
from replaykit.stores.sqlite import SqliteStore


def double(n: int) -> int:
    return n * 2


@workflow(name="lineage.flow")
def flow(n: int):
    a = yield Step("a", double, n)
    b = yield Step("b", double, a)
    yield Recv("go")
    return b


def _recorded(engine: Engine, workflow_id: str, positions: int) -> None:
    for _ in range(500):
        if len(engine.steps(workflow_id)) >= positions:
            return
        time.sleep(0.02)
    raise AssertionError(f"{workflow_id!r} never recorded {positions} positions")


def test_a_fork_records_its_source_and_position(engine: Engine) -> None:
    engine.start(flow, 3, workflow_id="src")
    _recorded(engine, "src", 2)
    engine.fork("src", 1, workflow_id="src-f1")
    engine.fork("src", 2, workflow_id="src-f2")
    engine.fork("src-f1", 1, workflow_id="src-f1-f")
    row = engine.store.get_workflow("src-f1")
    assert row is not None and (row.forked_from, row.fork_position) == ("src", 1)
    grandchild = engine.store.get_workflow("src-f1-f")
    assert grandchild is not None and (grandchild.forked_from, grandchild.fork_position) == (
        "src-f1",
        1,
    )
    source = engine.store.get_workflow("src")
    assert source is not None and (source.forked_from, source.fork_position) == (None, None)
    # A run's forks, its own only (not its forks' forks).
    forks = engine.store.list_workflows(WorkflowFilter(forked_from="src"))
    assert [(f.workflow_id, f.fork_position) for f in forks] == [("src-f1", 1), ("src-f2", 2)]
    assert engine.store.list_workflows(WorkflowFilter(forked_from="src-f2")) == []
    # Lineage is kept while the fork runs on and after it finishes.
    for wid in ("src", "src-f1", "src-f2", "src-f1-f"):
        engine.send(wid, None, "go")
    assert engine.handle("src-f2").result(timeout=30) == 12
    done = engine.store.get_workflow("src-f2")
    assert done is not None and done.status is Status.SUCCESS and done.forked_from == "src"


def test_every_create_path_writes_it_and_every_read_returns_it(store_url: str) -> None:
    store = open_store(store_url)
    try:
        lone = WorkflowRow("lone", "wf", Status.PENDING, forked_from="origin", fork_position=4)
        assert store.create_workflow(lone)[0].forked_from == "origin"
        batch = [
            WorkflowRow(
                f"b{i}",
                "wf",
                Status.ENQUEUED,
                queue="q",
                app_version="v",
                forked_from="origin",
                fork_position=i,
            )
            for i in range(3)
        ]
        store.create_workflows(batch)
        got = store.get_workflow("lone")
        assert got is not None and (got.forked_from, got.fork_position) == ("origin", 4)
        listed = store.list_workflows(WorkflowFilter(forked_from="origin"))
        assert [(r.workflow_id, r.fork_position) for r in listed] == [
            ("lone", 4),
            ("b0", 0),
            ("b1", 1),
            ("b2", 2),
        ]
        claimed = store.claim(
            "q",
            executor_id="e",
            app_version="v",
            limits=ClaimLimits(9),
            now=datetime.now(UTC),
        )
        assert sorted((r.workflow_id, r.forked_from, r.fork_position) for r in claimed) == [
            ("b0", "origin", 0),
            ("b1", "origin", 1),
            ("b2", "origin", 2),
        ]
        # Combined with the other filters, as any field.
        assert [
            r.workflow_id
            for r in store.list_workflows(WorkflowFilter(forked_from="origin", queue="q", limit=1))
        ] == ["b0"]
    finally:
        store.close()


def test_a_too_long_source_id_is_refused_like_any_id(store_url: str) -> None:
    store = open_store(store_url)
    try:
        with pytest.raises(ValueError, match="forked from"):
            store.create_workflow(
                WorkflowRow("x", "wf", Status.PENDING, forked_from="s" * 2000, fork_position=0)
            )
        assert store.get_workflow("x") is None
    finally:
        store.close()


def test_sqlite_finds_forks_by_the_index(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "forks.db").close()
    with sqlite3.connect(tmp_path / "forks.db") as db:
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT workflow_id FROM workflows WHERE forked_from = ?", ("s",)
        ).fetchall()
    assert any("workflows_by_fork_source" in str(step) for step in plan), plan


def test_a_version_5_sqlite_database_gains_lineage_and_keeps_its_runs(tmp_path: Path) -> None:
    from replaykit.stores.sqlite import _MIGRATIONS

    path = tmp_path / "v5.db"
    with sqlite3.connect(path) as db:
        for migration in _MIGRATIONS[:5]:
            for statement in migration:
                db.execute(statement)
        db.execute(
            "INSERT INTO workflows (workflow_id, name, status, executor_id, app_version, "
            "created_at, updated_at) VALUES ('old', 'wf', 'SUCCESS', 'local', '', 1, 1)"
        )
        db.execute("PRAGMA user_version = 5")
    store = SqliteStore(path)
    try:
        assert store.schema_status() == (len(_MIGRATIONS), len(_MIGRATIONS))
        old = store.get_workflow("old")
        assert old is not None and (old.forked_from, old.fork_position) == (None, None)
    finally:
        store.close()
