"""`record_many`: what the conformance suite cannot see from outside a store.

The suite (replaykit.testing.conformance, run on every store by test_stores.py)
checks the answers, the refusals, side effects and notifications. Here: how
many transactions and statements a batch costs, what falls back to the
one-record path, and a store that becomes unavailable half-way.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import step_record as _step
from replaykit.errors import RecordConflict, StoreUnavailable, WorkflowNotFound
from replaykit.log import Record, Status, Value
from replaykit.stores import MemoryStore, SqliteStore
from replaykit.stores._group import Slot
from replaykit.stores.base import EventWrite, OutgoingMessage, RecordWrite, WorkflowRow


def _runs(store: Any, ids: Sequence[str], **fields: Any) -> None:
    store.create_workflows([WorkflowRow(wid, "wf", Status.PENDING, **fields) for wid in ids])


def _batch_sizes(store: Any) -> list[int]:
    """The size of each batch group commit writes from now on."""
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
    return sizes


def test_record_many_takes_a_sequence_of_writes() -> None:
    store = MemoryStore()
    _runs(store, ["a"])
    with pytest.raises(TypeError, match="use record\\(\\) for one"):
        store.record_many(RecordWrite("a", _step(0)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes RecordWrite values"):
        store.record_many([("a", _step(0))])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="two writes of workflow id 'a'"):
        store.record_many([RecordWrite("a", _step(0)), RecordWrite("a", _step(1))])
    assert store.load_log("a") == []


# -- SQLite -----------------------------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "many.db")
    yield store
    store.close()


def test_sqlite_record_many_is_one_transaction(sqlite_store: SqliteStore) -> None:
    ids = [f"r{i}" for i in range(100)]
    _runs(sqlite_store, [*ids, "to"])
    sizes = _batch_sizes(sqlite_store)
    writes = [RecordWrite(wid, _step(0, wid)) for wid in ids]
    writes[7] = RecordWrite("r7", _step(0), send=OutgoingMessage("to", "t", "hi"))
    writes[8] = RecordWrite("r8", _step(3))  # a gap: refused in its savepoint
    answers = sqlite_store.record_many(writes)
    assert sizes == [100]
    assert isinstance(answers[8], RecordConflict)
    assert [a for i, a in enumerate(answers) if i != 8] == [
        w.record for i, w in enumerate(writes) if i != 8
    ]
    assert sqlite_store.load_log("r8") == []
    message = sqlite_store.peek_message("to", "t")
    assert message is not None and message.payload == "hi"


def _failing_write_record(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch, workflow_id: str, times: int
) -> list[str]:
    """The records room's `write_record` of `workflow_id` fails the database `times` times;
    the calls seen."""
    calls: list[str] = []
    records = store._records
    real = records.write_record

    def write_record(conn: sqlite3.Connection, wid: str, *args: Any) -> None:
        calls.append(wid)
        if wid == workflow_id and calls.count(wid) <= times:
            raise sqlite3.OperationalError("disk I/O error")
        real(conn, wid, *args)

    monkeypatch.setattr(records, "write_record", write_record)
    return calls


def test_sqlite_record_many_after_a_failed_batch_writes_each_alone_and_notifies_once(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(sqlite_store, ["a", "b", "c", "to"])
    heard: list[tuple[str, str]] = []
    sqlite_store.subscribe(lambda kind, key: heard.append((kind, key)))
    calls = _failing_write_record(sqlite_store, monkeypatch, "b", times=1)
    answers = sqlite_store.record_many(
        [
            RecordWrite("a", _step(0), send=OutgoingMessage("to", "t", "hi")),
            RecordWrite("b", _step(0, "b")),
            RecordWrite("c", _step(0), event=EventWrite("k", 1)),
        ]
    )
    assert answers == [_step(0), _step(0, "b"), _step(0)]
    # The batch ran a and b, failed on b and rolled back; then each alone.
    assert calls == ["a", "b", "a", "b", "c"]
    assert [sqlite_store.load_log(w) for w in "abc"] == [[_step(0)], [_step(0, "b")], [_step(0)]]
    assert heard == [("message", "to"), ("event", "c")]


def test_sqlite_record_many_stops_at_an_unavailable_store(
    sqlite_store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(sqlite_store, ["a", "b", "c", "d"])
    calls = _failing_write_record(sqlite_store, monkeypatch, "b", times=99)
    answers = sqlite_store.record_many([RecordWrite(w, _step(0, w)) for w in "abcd"])
    assert answers[0] == _step(0, "a")
    assert [type(a) for a in answers[1:]] == [StoreUnavailable] * 3
    assert "disk I/O error" in str(answers[1])
    assert "not attempted" in str(answers[2]) and answers[2].__cause__ is answers[1]
    # The batch, then a and b alone; c and d were not tried again.
    assert calls == ["a", "b", "a", "b"]
    assert [sqlite_store.load_log(w) for w in "abcd"] == [[_step(0, "a")], [], [], []]
    # Nothing stuck: the store writes as before.
    monkeypatch.undo()
    assert sqlite_store.record_many([RecordWrite(w, _step(0, w)) for w in "bcd"]) == [
        _step(0, w) for w in "bcd"
    ]


# -- PostgreSQL -------------------------------------------------------------------------------


def _count_statements(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Statements the store sends from now on, in order."""
    seen: list[str] = []
    real = store._db.connection

    class Counting:
        def __init__(self, conn: Any) -> None:
            self._conn = conn

        def execute(self, query: str, params: Any = None, **kwargs: Any) -> Any:
            seen.append(query)
            return self._conn.execute(query, params, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._conn, name)

    @contextlib.contextmanager
    def counted() -> Iterator[Any]:
        with real() as conn:
            yield Counting(conn)

    monkeypatch.setattr(store._db, "connection", counted)
    return seen


def test_postgres_plain_records_are_one_statement(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [f"r{i}" for i in range(100)]
    _runs(pg_store, ids, executor_id="me")
    seen = _count_statements(pg_store, monkeypatch)
    writes = [RecordWrite(wid, _step(0, wid), executor_id="me") for wid in ids]
    assert pg_store.record_many(writes) == [w.record for w in writes]
    assert len(seen) == 1 and seen[0] == pg_store._db.sql["record_batch"]  # autocommit: one commit
    assert [pg_store.load_log(w) for w in ids] == [[w.record] for w in writes]


def test_postgres_record_many_falls_back_for_refusals_and_side_effects(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(pg_store, ["p1", "p2", "done", "gone", "recv", "send", "event", "to"])
    pg_store.record("done", _step(0, "stored"))
    pg_store.set_status("gone", Status.CANCELLED)
    pg_store.send_message("recv", "t", "m")
    message = pg_store.peek_message("recv", "t")
    seen = _count_statements(pg_store, monkeypatch)
    writes = [
        RecordWrite("p1", _step(0, 1)),
        RecordWrite("recv", Record(0, "recv", "t", Value("m")), consume=message.message_id),
        RecordWrite("done", _step(0, "again")),
        RecordWrite("p2", _step(0, 2)),
        RecordWrite("send", _step(0), send=OutgoingMessage("nope", "t", 1)),
        RecordWrite("gone", _step(0)),
        RecordWrite("event", _step(0), event=EventWrite("k", 3)),
    ]
    answers = pg_store.record_many(writes)
    assert answers[:4] == [_step(0, 1), writes[1].record, _step(0, "stored"), _step(0, 2)]
    assert isinstance(answers[4], WorkflowNotFound) and isinstance(answers[5], RecordConflict)
    assert answers[6] == _step(0)
    # The batch statement wrote p1 and p2. Then, in input order, one statement
    # each for the records with side effects, and for what the batch did not
    # write a statement and, since it wrote nothing, its explanation.
    # A send to a run of another shard key is a statement of its own beside its record
    # (in one transaction), and a note goes in a statement of its own beside its write.
    record_statements = [q for q in seen if q.startswith("WITH run AS")]
    sends = [q for q in seen if q.startswith("WITH target AS")]
    notes = [q for q in seen if "pg_notify" in q]
    # The unknown target's shard key is asked of the directory (and not kept).
    lookups = [q for q in seen if q == pg_store._db.sql["shard_of"]]
    assert seen[0] == pg_store._db.sql["record_batch"]
    assert len(record_statements) == 5 and len(sends) == 1 and len(notes) == 1, seen
    assert len(lookups) == 2, seen
    assert len(seen) == 1 + 5 + 3 + len(sends) + len(notes) + len(lookups), seen
    assert pg_store.peek_message("recv", "t") is None
    assert pg_store.get_event("event", "k") == (True, 3)
    assert pg_store.load_log("gone") == [] and pg_store.load_log("send") == []


def test_postgres_record_many_stops_at_an_unavailable_store(
    pg_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(pg_store, ["p", "a", "b", "c"])
    tried: list[str] = []
    real = pg_store._single.record_one

    def record_one(workflow_id: str, *args: Any) -> Record:
        tried.append(workflow_id)
        if workflow_id == "a":
            raise StoreUnavailable("connection lost (simulated)")
        record: Record = real(workflow_id, *args)
        return record

    monkeypatch.setattr(pg_store._single, "record_one", record_one)
    event = EventWrite("k", 1)
    answers = pg_store.record_many(
        [
            RecordWrite("p", _step(0)),
            RecordWrite("a", _step(0), event=event),
            RecordWrite("b", _step(0), event=event),
            RecordWrite("c", _step(0), event=event),
        ]
    )
    # p alone in its batch takes the one-record path too, as a lone record() does.
    assert answers[0] == _step(0) and tried == ["p", "a"]
    assert [type(a) for a in answers[1:]] == [StoreUnavailable] * 3
    assert all("not attempted" in str(a) for a in answers[2:])
    assert pg_store.load_log("b") == pg_store.load_log("c") == []


def test_postgres_record_many_shares_batches_with_record_callers(pg_store: Any) -> None:
    import threading

    threads = 8
    ids = [f"m{i}" for i in range(40)]
    _runs(pg_store, [*ids, *(f"t{t}" for t in range(threads))])
    sizes = _batch_sizes(pg_store)
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def alone(index: int) -> None:
        barrier.wait()
        try:
            for position in range(10):
                pg_store.record(f"t{index}", _step(position))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=alone, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    barrier.wait()
    answers = [
        pg_store.record_many([RecordWrite(w, _step(position)) for w in ids])
        for position in range(10)
    ]
    for worker in workers:
        worker.join(60)
    assert errors == []
    assert answers == [[_step(position)] * len(ids) for position in range(10)]
    assert sum(sizes) == len(ids) * 10 + threads * 10
    for w in [*ids, *(f"t{t}" for t in range(threads))]:
        assert pg_store.load_log(w) == [_step(p) for p in range(10)]
