"""finish_workflow(record=...): a run's last record and its finish in one commit.

The conformance suite checks the guarantees on every store; these tests check
how each store keeps them: PostgreSQL in one statement (alone) or one batch
statement (group commit), SQLite in one transaction, or a savepoint of a
shared one.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import step_record as _rec
from replaykit.errors import RecordConflict
from replaykit.log import Status, Value
from replaykit.stores import SqliteStore
from replaykit.stores._group import FALL_BACK, Slot
from replaykit.stores.base import WorkflowRow


def _run(workflow_id: str, executor_id: str = "me", status: Status = Status.PENDING) -> WorkflowRow:
    return WorkflowRow(workflow_id, "wf", status, executor_id=executor_id)


def _state(store: Any, workflow_id: str) -> tuple[Any, ...]:
    row = store.get_workflow(workflow_id)
    return (row.status, row.result, store.load_log(workflow_id))


class _CountingStatements:
    """Counts the statements psycopg sends: the writes (`texts`; each one round trip, in
    autocommit) and the notes that go beside them (`notes`; pipelined with the write, or
    after a batch)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import psycopg

        self.texts: list[str] = []
        self.notes: list[str] = []
        execute = psycopg.Connection.execute

        def counting(conn: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            text = str(query)
            (self.notes if "pg_notify" in text else self.texts).append(text)
            return execute(conn, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.Connection, "execute", counting)


# -- PostgreSQL -------------------------------------------------------------------------------


def test_postgres_finish_with_record_is_one_statement(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = pg_store
    store.create_workflow(_run("first"))
    store.create_workflow(_run("later"))
    store.record("later", _rec(0))
    store.create_workflow(_run("pending"))
    store.record("pending", _rec(0, pending=True))
    counted = _CountingStatements(monkeypatch)
    assert store.finish_workflow(
        "first", Status.SUCCESS, Value(1), executor_id="me", record=_rec(0)
    )
    assert store.finish_workflow("later", Status.SUCCESS, Value(2), record=_rec(1, "last"))
    assert store.finish_workflow("pending", Status.SUCCESS, Value(3), record=_rec(0, "done"))
    assert len(counted.texts) == 3, counted.texts
    assert len(counted.notes) == 3, counted.notes  # each finish's, in its round trip
    assert _state(store, "first") == (Status.SUCCESS, Value(1), [_rec(0)])
    assert _state(store, "later") == (Status.SUCCESS, Value(2), [_rec(0), _rec(1, "last")])
    assert _state(store, "pending") == (Status.SUCCESS, Value(3), [_rec(0, "done")])
    # A run that is not PENDING costs that one statement too.
    counted.texts.clear()
    assert not store.finish_workflow("first", Status.ERROR, None, record=_rec(1))
    assert len(counted.texts) == 1, counted.texts


def test_postgres_batch_finishes_with_records_in_one_statement_and_falls_back_for_the_rest(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from replaykit.stores.postgres import _Finish, _PlainRecord

    store = pg_store
    for wid in ("a", "b", "c", "d", "e", "f", "g", "h", "plain", "rec"):
        store.create_workflow(_run(wid))
    store.record("b", _rec(0, "stored"))  # a different completed record
    store.record("c", _rec(0, "same"))  # the very record: counts as written
    store.set_status("d", Status.CANCELLED)
    store.record("g", _rec(0, pending=True))
    store.record("h", _rec(0))
    items = [
        _Finish("a", Status.SUCCESS, Value("a"), "", "me", _rec(0, "a")),  # finished
        _Finish("b", Status.SUCCESS, Value("b"), "", None, _rec(0, "other")),  # refused
        _Finish("c", Status.SUCCESS, Value("c"), "", "me", _rec(0, "same")),  # alone: finished
        _Finish("d", Status.SUCCESS, Value("d"), "", None, _rec(0)),  # cancelled
        _Finish("e", Status.SUCCESS, Value("e"), "", "them", _rec(0)),  # not the owner
        _Finish("f", Status.SUCCESS, Value("f"), "", None, _rec(2)),  # a gap
        _Finish("g", Status.ERROR, Value("g"), "boom", None, _rec(0, "done")),  # completes
        _Finish("h", Status.SUCCESS, Value("h"), "", "me", _rec(1, "h1")),  # a later position
        _Finish("plain", Status.SUCCESS, Value("p"), "", None),  # a finish without a record
    ]
    slots: list[Slot[Any]] = [Slot(item) for item in items]
    slots.append(Slot(_PlainRecord("rec", _rec(0, "r"), None, None)))
    counted = _CountingStatements(monkeypatch)
    store._write_batch(slots)
    # One statement for the records, one for the finishes with records, one for the plain finish.
    assert len(counted.texts) == 3, counted.texts
    # The batch's finishes told of in one note statement; the plain finish's beside it.
    assert len(counted.notes) == 2, counted.notes
    outcomes = [slot.outcome() for slot in slots]
    assert outcomes[0] is True and outcomes[6] is True and outcomes[7] is True
    assert outcomes[8] is True and outcomes[9] == _rec(0, "r")
    assert [outcomes[i] is FALL_BACK for i in (1, 2, 3, 4, 5)] == [True] * 5
    assert _state(store, "a") == (Status.SUCCESS, Value("a"), [_rec(0, "a")])
    assert _state(store, "g") == (Status.ERROR, Value("g"), [_rec(0, "done")])
    assert _state(store, "h") == (Status.SUCCESS, Value("h"), [_rec(0), _rec(1, "h1")])
    assert store.get_workflow("g").error == "boom"
    for wid, log in (("b", [_rec(0, "stored")]), ("c", [_rec(0, "same")]), ("e", []), ("f", [])):
        assert _state(store, wid) == (Status.PENDING, None, log)
    assert _state(store, "d") == (Status.CANCELLED, None, [])
    # What fell back gets the one-finish path's answers.
    with pytest.raises(RecordConflict, match="differs"):
        store.finish_workflow("b", Status.SUCCESS, Value("b"), record=_rec(0, "other"))
    assert store.finish_workflow(
        "c", Status.SUCCESS, Value("c"), executor_id="me", record=items[2].record
    )
    assert not store.finish_workflow("d", Status.SUCCESS, Value("d"), record=_rec(0))
    assert not store.finish_workflow(
        "e", Status.SUCCESS, Value("e"), executor_id="them", record=_rec(0)
    )
    with pytest.raises(RecordConflict, match="log ends at 0"):
        store.finish_workflow("f", Status.SUCCESS, Value("f"), record=_rec(2))
    assert _state(store, "c") == (Status.SUCCESS, Value("c"), [_rec(0, "same")])
    assert _state(store, "b") == (Status.PENDING, None, [_rec(0, "stored")])


def test_postgres_a_failed_batch_writes_nothing_and_its_finishes_go_alone(pg_store: Any) -> None:
    from replaykit.stores.postgres import _Finish

    store = pg_store
    for wid in ("x", "y"):
        store.create_workflow(_run(wid))
    store._db.sql["finish_with_record_batch"] = "SELECT no_such_function()"
    slots = [Slot(_Finish(w, Status.SUCCESS, Value(w), "", None, _rec(0, w))) for w in ("x", "y")]
    store._write_batch(slots)
    assert [slot.outcome() for slot in slots] == [FALL_BACK, FALL_BACK]
    assert [_state(store, w) for w in ("x", "y")] == [(Status.PENDING, None, [])] * 2
    # finish_workflow takes that fall-back path on its own.
    assert all(store.finish_workflow(w, Status.SUCCESS, Value(w), record=_rec(0, w)) for w in "xy")
    assert _state(store, "x") == (Status.SUCCESS, Value("x"), [_rec(0, "x")])


def test_postgres_concurrent_finishes_with_records_share_statements(pg_store: Any) -> None:
    sizes = _finishes_at_once(pg_store, runs=32)
    assert max(sizes) > 1 and len(sizes) < 32


def test_postgres_finish_with_record_waits_for_a_concurrent_takeover(
    pg_store: Any, pg_url: str
) -> None:
    # Another transaction holds the run's row (a takeover under way): the finish
    # waits for it, then sees the new owner and writes nothing.
    import psycopg

    store = pg_store
    store.create_workflow(_run("t", executor_id="old"))
    store.record("t", _rec(0))
    answers: list[Any] = []
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            f"UPDATE {store._db.s}.workflows SET executor_id = 'new' WHERE workflow_id = 't'"
        )
        finisher = threading.Thread(
            target=lambda: answers.append(
                store.finish_workflow(
                    "t", Status.SUCCESS, Value(1), executor_id="old", record=_rec(1)
                )
            )
        )
        finisher.start()
        finisher.join(0.3)
        assert finisher.is_alive()  # waiting on the row lock
        conn.commit()
    finisher.join(10)
    assert answers == [False]
    assert _state(store, "t") == (Status.PENDING, None, [_rec(0)])


# -- SQLite -----------------------------------------------------------------------------------


def _traced(store: SqliteStore) -> list[str]:
    statements: list[str] = []
    store._writer.set_trace_callback(statements.append)
    return statements


def test_sqlite_finish_with_record_is_one_transaction(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "finish.db")
    try:
        store.create_workflow(_run("w"))
        store.record("w", _rec(0))
        statements = _traced(store)
        assert store.finish_workflow("w", Status.SUCCESS, Value(1), record=_rec(1, "last"))
        store._writer.set_trace_callback(None)
        begins = [s for s in statements if s.startswith("BEGIN")]
        commits = [s for s in statements if s == "COMMIT"]
        assert (len(begins), len(commits)) == (1, 1), statements
        assert _state(store, "w") == (Status.SUCCESS, Value(1), [_rec(0), _rec(1, "last")])
    finally:
        store.close()


def test_sqlite_finishes_with_records_share_a_transaction_and_a_refusal_undoes_only_its_own(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "batch.db")
    try:
        for wid in ("ok-1", "other", "ok-2", "gap"):
            store.create_workflow(_run(wid))
        store.record("other", _rec(0, "stored"))
        # Hold the lead with a write of our own, so the finishes queue behind it
        # and go into one batch together.
        started, release = threading.Event(), threading.Event()

        def hold(conn: sqlite3.Connection) -> None:
            started.set()
            assert release.wait(10)

        holder = threading.Thread(target=store._write, args=(hold,))
        holder.start()
        assert started.wait(10)
        calls = {
            "ok-1": _rec(0, "one"),
            "other": _rec(0, "mine"),
            "ok-2": _rec(0, "two"),
            "gap": _rec(1),
        }
        answers: dict[str, Any] = {}

        def finish(wid: str) -> None:
            try:
                answers[wid] = store.finish_workflow(
                    wid, Status.SUCCESS, Value(wid), record=calls[wid]
                )
            except Exception as exc:
                answers[wid] = type(exc).__name__

        threads = [threading.Thread(target=finish, args=(wid,)) for wid in calls]
        for thread in threads:
            thread.start()
        for _ in range(1000):
            with store._group._lock:
                if len(store._group._queue) == len(calls):
                    break
            threading.Event().wait(0.005)
        statements = _traced(store)
        release.set()
        for thread in [holder, *threads]:
            thread.join(10)
        store._writer.set_trace_callback(None)
        assert answers == {
            "ok-1": True,
            "other": "RecordConflict",
            "ok-2": True,
            "gap": "RecordConflict",
        }
        assert [s for s in statements if s.startswith("BEGIN")] == ["BEGIN IMMEDIATE"], statements
        assert _state(store, "ok-1") == (Status.SUCCESS, Value("ok-1"), [_rec(0, "one")])
        assert _state(store, "ok-2") == (Status.SUCCESS, Value("ok-2"), [_rec(0, "two")])
        assert _state(store, "other") == (Status.PENDING, None, [_rec(0, "stored")])
        assert _state(store, "gap") == (Status.PENDING, None, [])
    finally:
        store.close()


def test_sqlite_concurrent_finishes_with_records_share_commits(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "many.db")
    try:
        sizes = _finishes_at_once(store, runs=24)
        assert max(sizes) > 1 and len(sizes) < 24
    finally:
        store.close()


def _finishes_at_once(store: Any, runs: int) -> list[int]:
    """Each of `runs` threads finishes its own run with its last record; the batch sizes seen."""
    for run in range(runs):
        store.create_workflow(_run(f"r{run}"))
        store.record(f"r{run}", _rec(0))
    sizes: list[int] = []
    write_batch = store._group._write_batch

    def counting(slots: Sequence[Slot[Any]]) -> None:
        sizes.append(len(slots))
        write_batch(slots)

    store._group._write_batch = counting
    write_one = store._group._write_one

    def counting_one(item: Any) -> Any:
        sizes.append(1)  # a write that found nobody writing goes alone, outside any batch
        return write_one(item)

    store._group._write_one = counting_one
    barrier = threading.Barrier(runs)
    errors: list[BaseException] = []

    def work(run: int) -> None:
        barrier.wait()
        try:
            assert store.finish_workflow(
                f"r{run}", Status.SUCCESS, Value(run), executor_id="me", record=_rec(1, run)
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(run,)) for run in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    for run in range(runs):
        assert _state(store, f"r{run}") == (Status.SUCCESS, Value(run), [_rec(0), _rec(1, run)])
    assert sum(sizes) == runs
    return sizes
