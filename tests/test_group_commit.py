"""Group commit: concurrent writes share batches, and each owner gets its own answer."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import step_record as _rec
from replaykit.errors import RecordConflict, StoreUnavailable
from replaykit.log import Record, Status, Value
from replaykit.stores._group import FALL_BACK, GroupCommit, Slot
from replaykit.stores.base import WorkflowRow


class _Gate:
    """A batch writer that holds its first batch until released, recording every batch."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.first_started = threading.Event()
        self.release_first = threading.Event()

    def write(self, slots: Sequence[Slot[int]]) -> None:
        self.batches.append([slot.item for slot in slots])
        if len(self.batches) == 1:
            self.first_started.set()
            assert self.release_first.wait(10)
        for slot in slots:
            if slot.item < 0:
                slot.set_error(ValueError(f"item {slot.item} refused"))
            else:
                slot.set_result(slot.item * 10)


def _submit_in_threads(group: GroupCommit[int], items: Sequence[int]) -> list[Any]:
    results: list[Any] = [None] * len(items)

    def submit(index: int) -> None:
        try:
            results[index] = group.submit(items[index])
        except BaseException as exc:
            results[index] = exc

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(len(items))]
    for thread in threads:
        thread.start()
    return [threads, results]


def _wait_queued(group: GroupCommit[int], count: int) -> None:
    for _ in range(1000):
        with group._lock:
            if len(group._queue) >= count:
                return
        threading.Event().wait(0.005)
    raise AssertionError(f"expected {count} queued writes")


def test_a_lone_write_is_written_at_once() -> None:
    gate = _Gate()
    gate.release_first.set()
    group = GroupCommit(gate.write)
    assert group.submit(4) == 40
    assert group.submit(5) == 50
    assert gate.batches == [[4], [5]]


def test_writes_arriving_during_a_batch_share_the_next_one() -> None:
    gate = _Gate()
    group = GroupCommit(gate.write)
    first_threads, first = _submit_in_threads(group, [1])
    assert gate.first_started.wait(10)
    threads, results = _submit_in_threads(group, [2, 3, -4, 5])
    _wait_queued(group, 4)
    gate.release_first.set()
    for thread in [*first_threads, *threads]:
        thread.join(10)
    assert first == [10]
    assert results[:2] == [20, 30] and results[3] == 50
    # The refusal reaches its own writer only.
    assert isinstance(results[2], ValueError) and "item -4 refused" in str(results[2])
    assert gate.batches[0] == [1]
    assert sorted(gate.batches[1]) == [-4, 2, 3, 5]
    assert len(gate.batches) == 2


def test_batches_respect_the_size_limit() -> None:
    gate = _Gate()
    group = GroupCommit(gate.write, max_batch=2)
    first_threads, _ = _submit_in_threads(group, [0])
    assert gate.first_started.wait(10)
    threads, results = _submit_in_threads(group, [1, 2, 3, 4, 5])
    _wait_queued(group, 5)
    gate.release_first.set()
    for thread in [*first_threads, *threads]:
        thread.join(10)
    assert results == [10, 20, 30, 40, 50]
    assert [len(batch) for batch in gate.batches] == [1, 2, 2, 1]


def test_a_failing_batch_fails_each_of_its_writers_and_the_next_batch_works() -> None:
    calls: list[int] = []

    def write(slots: Sequence[Slot[int]]) -> None:
        calls.append(len(slots))
        if len(calls) == 1:
            raise ConnectionError("server went away")
        for slot in slots:
            slot.set_result("ok")

    group = GroupCommit(write)
    with pytest.raises(ConnectionError, match="server went away"):
        group.submit(1)
    assert group.submit(2) == "ok"


def test_a_writer_that_settles_nothing_is_reported_as_a_bug() -> None:
    group: GroupCommit[int] = GroupCommit(lambda slots: None)
    with pytest.raises(RuntimeError, match="left a write unsettled"):
        group.submit(1)


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_batch must be >= 1"):
        GroupCommit(lambda slots: None, max_batch=0)


# -- the PostgreSQL batch writer --------------------------------------------------------------


def test_postgres_batch_writes_what_it_may_and_falls_back_for_the_rest(pg_store: Any) -> None:
    from replaykit.stores.postgres import _PlainRecord

    store = pg_store
    for wid in ("a", "b", "c", "d", "e", "f"):
        store.create_workflow(WorkflowRow(wid, "wf", Status.PENDING, executor_id="me"))
    store.record("b", _rec(0, "stored"))
    store.record("e", _rec(0, pending=True))
    store.set_status("c", Status.CANCELLED)
    items = [
        _PlainRecord("a", _rec(0, "a0"), "me", None),  # written
        _PlainRecord("a", _rec(1, "a1"), "me", None),  # same run again: a later layer
        _PlainRecord("b", _rec(0, "other"), None, None),  # completed already: not written
        _PlainRecord("c", _rec(0), None, None),  # cancelled run: not written
        _PlainRecord("d", _rec(0), "someone-else", None),  # not the owner: not written
        _PlainRecord("e", _rec(0, "done"), None, None),  # completes a pending record
        _PlainRecord("f", _rec(2), None, None),  # a gap: not written
    ]
    slots = [Slot(item) for item in items]
    store._write_batch(slots)
    outcomes = [slot.outcome() for slot in slots]
    assert outcomes[0] == items[0].record and outcomes[1] == items[1].record
    assert outcomes[5] == items[5].record
    assert [outcomes[i] is FALL_BACK for i in (2, 3, 4, 6)] == [True] * 4
    assert store.load_log("a") == [_rec(0, "a0"), _rec(1, "a1")]
    assert store.load_log("e") == [_rec(0, "done")]
    assert store.load_log("c") == store.load_log("d") == store.load_log("f") == []
    # What fell back gets the one-record path's answers.
    assert store.record("b", _rec(0, "other")) == _rec(0, "stored")
    with pytest.raises(RecordConflict, match="CANCELLED"):
        store.record("c", _rec(0))
    with pytest.raises(RecordConflict):
        store.record("d", _rec(0), executor_id="someone-else")
    with pytest.raises(RecordConflict, match="log ends at 0"):
        store.record("f", _rec(2))


def _records_at_once(store: Any, runs: int, positions: int) -> list[int]:
    """Each of `runs` threads records its own run's positions; the batch sizes seen."""
    for run in range(runs):
        store.create_workflow(WorkflowRow(f"r{run}", "wf", Status.PENDING))
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
            for position in range(positions):
                assert store.record(f"r{run}", _rec(position, run)) == _rec(position, run)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(run,)) for run in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    for run in range(runs):
        assert store.load_log(f"r{run}") == [_rec(p, run) for p in range(positions)]
    assert sum(sizes) == runs * positions
    return sizes


def test_postgres_concurrent_records_share_commits(pg_store: Any) -> None:
    sizes = _records_at_once(pg_store, runs=24, positions=8)
    # 24 writers at once cannot all have gone one at a time.
    assert max(sizes) > 1 and len(sizes) < 24 * 8


def test_postgres_batch_finishes_only_what_it_may_and_notifies_other_processes(
    pg_url: str, pg_schema: str, pg_store: Any
) -> None:
    from replaykit.stores.postgres import PostgresStore, _Finish

    store = pg_store
    for wid, executor in (("mine", "me"), ("theirs", "them"), ("done", "me"), ("plain", "me")):
        store.create_workflow(WorkflowRow(wid, "wf", Status.PENDING, executor_id=executor))
    store.finish_workflow("done", Status.SUCCESS, Value(0))
    heard: list[tuple[str, str]] = []
    listener = PostgresStore(pg_url, schema=pg_schema, pool_max=2)
    unsubscribe = listener.subscribe(lambda kind, key: heard.append((kind, key)))
    try:
        items = [
            _Finish("mine", Status.SUCCESS, Value(1), "", "me"),
            _Finish("theirs", Status.SUCCESS, Value(2), "", "me"),  # not the owner
            _Finish("done", Status.ERROR, None, "late", None),  # finished already
            _Finish("missing", Status.SUCCESS, Value(3), "", None),
            _Finish("plain", Status.ERROR, None, "boom", None),  # no owner check
        ]
        slots = [Slot(item) for item in items]
        store._write_batch(slots)
        assert [slot.outcome() for slot in slots] == [True, False, False, False, True]
        mine, theirs, done, plain = (
            store.get_workflow(w) for w in ("mine", "theirs", "done", "plain")
        )
        assert (mine.status, mine.result) == (Status.SUCCESS, Value(1))
        assert theirs.status is Status.PENDING
        assert (done.status, done.result) == (Status.SUCCESS, Value(0))
        assert (plain.status, plain.error) == (Status.ERROR, "boom")
        for _ in range(200):
            if {("finished", "mine"), ("finished", "plain")} <= set(heard):
                break
            threading.Event().wait(0.02)
        assert {("finished", "mine"), ("finished", "plain")} <= set(heard)
        assert ("finished", "theirs") not in heard
    finally:
        unsubscribe()
        listener.close()


# -- the SQLite batch writer ------------------------------------------------------------------


def test_sqlite_batch_commits_together_and_a_failing_write_undoes_only_its_own(
    tmp_path: Path,
) -> None:
    import sqlite3

    from replaykit.stores.sqlite import SqliteStore, _Unchanged

    store = SqliteStore(tmp_path / "batch.db")
    try:
        store.create_workflow(WorkflowRow("w", "wf", Status.PENDING))

        def event(key: str) -> Any:
            def body(conn: sqlite3.Connection) -> str:
                conn.execute(
                    "INSERT INTO events (workflow_id, key, value) VALUES ('w', ?, '1')", (key,)
                )
                return key

            return body

        def refused(conn: sqlite3.Connection) -> str:
            event("refused")(conn)
            raise RecordConflict("not this one")

        def unchanged(conn: sqlite3.Connection) -> str:
            event("unchanged")(conn)
            raise _Unchanged("as it was")

        slots = [Slot(event("a")), Slot(refused), Slot(unchanged), Slot(event("b"))]
        store._write_batch(slots)
        assert slots[0].outcome() == "a" and slots[3].outcome() == "b"
        assert slots[2].outcome() == "as it was"
        with pytest.raises(RecordConflict, match="not this one"):
            slots[1].outcome()
        assert store.get_event("w", "a") == (True, 1) and store.get_event("w", "b") == (True, 1)
        assert store.get_event("w", "refused") == (False, None)
        assert store.get_event("w", "unchanged") == (False, None)

        def broken(conn: sqlite3.Connection) -> str:
            conn.execute("INSERT INTO no_such_table VALUES (1)")
            return "never"

        # The database itself failing sends every write of the batch back to its owner.
        slots = [Slot(event("c")), Slot(broken)]
        store._write_batch(slots)
        assert [slot.outcome() for slot in slots] == [FALL_BACK, FALL_BACK]
        assert store.get_event("w", "c") == (False, None)
        with pytest.raises(StoreUnavailable, match="no such table: no_such_table"):
            store._write(broken)
        assert store._write(event("c")) == "c"
    finally:
        store.close()


def test_sqlite_concurrent_records_share_commits(tmp_path: Path) -> None:
    from replaykit.stores.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "many.db")
    try:
        sizes = _records_at_once(store, runs=16, positions=10)
        assert max(sizes) > 1 and len(sizes) < 16 * 10
    finally:
        store.close()


class _Interrupt(BaseException):
    """Stands in for KeyboardInterrupt without upsetting the test runner."""


def test_an_interrupted_follower_leaves_the_group_usable() -> None:
    import signal

    gate = _Gate()
    group = GroupCommit(gate.write)
    leader_threads, leader = _submit_in_threads(group, [1])
    assert gate.first_started.wait(10)

    def interrupt(signum: int, frame: Any) -> None:
        raise _Interrupt

    previous = signal.signal(signal.SIGUSR1, interrupt)
    main = threading.main_thread().ident
    assert main is not None
    kicker = threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGUSR1))
    kicker.start()
    try:
        with pytest.raises(_Interrupt):
            group.submit(2)  # follows the blocked leader, then is interrupted
    finally:
        kicker.join()
        signal.signal(signal.SIGUSR1, previous)
    gate.release_first.set()
    for thread in leader_threads:
        thread.join(10)
    assert leader == [10]
    # The interrupted write left the queue; the group still takes writes.
    assert group.submit(3) == 30
    assert [item for batch in gate.batches for item in batch] == [1, 3]


def test_an_interrupted_leader_sends_the_others_back_to_write_alone() -> None:
    started = threading.Event()
    release = threading.Event()

    def write(slots: Sequence[Slot[int]]) -> None:
        if slots[0].item == 0:
            started.set()
            assert release.wait(10)
            slots[0].set_result("first")
            return
        slots[1].set_result("said before the interrupt")
        raise _Interrupt

    group = GroupCommit(write)
    first_threads, first = _submit_in_threads(group, [0])
    assert started.wait(10)
    threads, results = _submit_in_threads(group, [1, 2])
    _wait_queued(group, 2)
    release.set()
    for thread in [*first_threads, *threads]:
        thread.join(10)
    assert first == ["first"]
    # Whoever led batch 2 was interrupted; the other is told to write alone,
    # whatever the batch had said before the interrupt.
    interrupted = [r for r in results if isinstance(r, _Interrupt)]
    assert len(interrupted) == 1
    assert [r for r in results if r is FALL_BACK] == [FALL_BACK]


def test_postgres_one_run_twice_in_a_batch_gets_an_answer_per_write(pg_store: Any) -> None:
    from replaykit.stores.postgres import _Finish, _PlainRecord

    store = pg_store
    store.create_workflow(WorkflowRow("w", "wf", Status.PENDING, executor_id="owner"))
    store.create_workflow(WorkflowRow("f", "wf", Status.PENDING, executor_id="owner"))
    slots: list[Slot[Any]] = [
        Slot(_PlainRecord("w", _rec(0, "owner's"), "owner", None)),
        Slot(_PlainRecord("w", _rec(0, "stale"), "stale", None)),
        Slot(_Finish("f", Status.SUCCESS, Value(1), "", "owner")),
        Slot(_Finish("f", Status.ERROR, None, "stale", "stale")),
    ]
    store._write_batch(slots)
    assert slots[0].outcome() == _rec(0, "owner's")
    assert slots[1].outcome() is FALL_BACK  # the one-record path explains the refusal
    assert [slots[2].outcome(), slots[3].outcome()] == [True, False]
    with pytest.raises(RecordConflict, match="owned by executor 'owner', not 'stale'"):
        store.record("w", _rec(0, "stale"), executor_id="stale")
    assert store.load_log("w") == [_rec(0, "owner's")]
    finished = store.get_workflow("f")
    assert (finished.status, finished.result) == (Status.SUCCESS, Value(1))


def test_postgres_batched_records_keep_their_values_exactly(pg_store: Any) -> None:
    from datetime import UTC, datetime

    store = pg_store
    at = datetime(2031, 2, 3, 4, 5, 6, 789012, tzinfo=UTC)
    values: list[Any] = ["a\x00b", 1e300, {"b": 1, "a": [2, None]}, 'ünï \\ "q" \n', -0.5]
    records = [
        Record(
            0,
            "step",
            f'name "{i}" \\ ü',
            Value(value),
            digest=f"d{i}",
            call_site=f"flows/x.py:{i} in 'f'",
            started_at=at,
            completed_at=at,
            wake_at=None if i % 2 else at,
            attempts=i + 1,
        )
        for i, value in enumerate(values)
    ]
    for i in range(len(values)):
        store.create_workflow(WorkflowRow(f"v{i}", "wf", Status.PENDING))
    from replaykit.stores.postgres import _PlainRecord

    slots: list[Slot[Any]] = [
        Slot(_PlainRecord(f"v{i}", record, None, at)) for i, record in enumerate(records)
    ]
    store._write_batch(slots)
    assert [slot.outcome() for slot in slots] == records
    for i, record in enumerate(records):
        assert store.load_log(f"v{i}") == [record]
        assert store.get_workflow(f"v{i}").wake_at == at


# -- one thread, many writes: submit_many -----------------------------------------------------


def _many_in_thread(group: GroupCommit[int], items: Sequence[int]) -> tuple[threading.Thread, list]:
    answer: list[Any] = []

    def run() -> None:
        try:
            answer.append(group.submit_many(items))
        except BaseException as exc:
            answer.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


def _answers(items: Sequence[int]) -> list[tuple[Any, Any]]:
    """What _Gate answers for each item, as submit_many reports it."""
    return [(None, "refused") if item < 0 else (item * 10, None) for item in items]


def _plain(answers: Sequence[tuple[Any, BaseException | None]]) -> list[tuple[Any, Any]]:
    return [(result, None if error is None else "refused") for result, error in answers]


def test_submit_many_alone_writes_one_batch_and_answers_each_item() -> None:
    gate = _Gate()
    gate.release_first.set()
    group = GroupCommit(gate.write)
    answers = group.submit_many([1, -2, 3])
    assert _plain(answers) == _answers([1, -2, 3])
    assert isinstance(answers[1][1], ValueError) and "item -2 refused" in str(answers[1][1])
    assert gate.batches == [[1, -2, 3]]
    assert group.submit_many([]) == []
    assert group.submit(4) == 40
    assert not group._leading and not group._queue


def test_submit_many_splits_at_the_size_limit() -> None:
    gate = _Gate()
    gate.release_first.set()
    group = GroupCommit(gate.write, max_batch=3)
    assert _plain(group.submit_many(list(range(8)))) == _answers(range(8))
    assert gate.batches == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert not group._leading and not group._queue


def test_submit_many_shares_batches_with_other_threads_writes() -> None:
    gate = _Gate()
    group = GroupCommit(gate.write, max_batch=4)
    first_threads, first = _submit_in_threads(group, [100])  # leads, held in its batch
    assert gate.first_started.wait(10)
    before_threads, before = _submit_in_threads(group, [101])
    _wait_queued(group, 1)
    many_thread, many = _many_in_thread(group, [1, 2, -3, 4, 5, 6])
    _wait_queued(group, 7)
    after_threads, after = _submit_in_threads(group, [102, 103])
    _wait_queued(group, 9)
    gate.release_first.set()
    for thread in [*first_threads, *before_threads, many_thread, *after_threads]:
        thread.join(10)
        assert not thread.is_alive()
    assert first == [1000] and before == [1010] and after == [1020, 1030]
    assert _plain(many[0]) == _answers([1, 2, -3, 4, 5, 6])
    # Arrival order, four at a time: the other threads' writes share batches
    # with submit_many's, whoever leads each.
    assert gate.batches == [[100], [101, 1, 2, -3], [4, 5, 6, 102], [103]]
    assert not group._leading and not group._queue


def test_submit_many_leads_each_batch_it_is_promoted_to() -> None:
    gate = _Gate()
    group = GroupCommit(gate.write, max_batch=2)
    leaders: list[str] = []
    write = gate.write

    def noting(slots: Sequence[Slot[int]]) -> None:
        leaders.append(threading.current_thread().name)
        write(slots)

    group._write_batch = noting
    first_threads, _ = _submit_in_threads(group, [0])
    assert gate.first_started.wait(10)
    many_thread, many = _many_in_thread(group, [1, 2, 3, 4, 5])
    _wait_queued(group, 5)
    other_threads, other = _submit_in_threads(group, [6])
    _wait_queued(group, 6)
    gate.release_first.set()
    for thread in [*first_threads, many_thread, *other_threads]:
        thread.join(10)
    assert _plain(many[0]) == _answers([1, 2, 3, 4, 5]) and other == [60]
    assert gate.batches == [[0], [1, 2], [3, 4], [5, 6]]
    assert leaders[1:] == [many_thread.name] * 3


def test_submit_many_where_a_batch_fails_answers_its_items_with_the_error() -> None:
    calls: list[list[int]] = []

    def write(slots: Sequence[Slot[int]]) -> None:
        calls.append([slot.item for slot in slots])
        if len(calls) == 2:
            raise ConnectionError("server went away")
        for slot in slots:
            slot.set_result(slot.item)

    group = GroupCommit(write, max_batch=2)
    answers = group.submit_many([1, 2, 3, 4, 5])
    assert calls == [[1, 2], [3, 4], [5]]
    assert [result for result, _ in answers] == [1, 2, None, None, 5]
    errors = [error for _, error in answers]
    assert errors[0] is errors[1] is errors[4] is None
    assert isinstance(errors[2], ConnectionError) and errors[2] is errors[3]
    assert group.submit(6) == 6


def test_submit_many_passes_fall_back_through() -> None:
    def write(slots: Sequence[Slot[int]]) -> None:
        for slot in slots:
            if slot.item % 2:
                slot.fall_back()
            else:
                slot.set_result(slot.item)

    group = GroupCommit(write)
    assert group.submit_many([1, 2, 3]) == [(FALL_BACK, None), (2, None), (FALL_BACK, None)]


def test_an_interrupted_submit_many_leader_withdraws_the_rest_and_keeps_the_group_usable() -> None:
    started = threading.Event()
    release = threading.Event()
    batches: list[list[int]] = []

    def write(slots: Sequence[Slot[int]]) -> None:
        batches.append([slot.item for slot in slots])
        if slots[0].item == 0:
            started.set()
            assert release.wait(10)
        if slots[0].item == 1:
            raise _Interrupt  # the thread of submit_many, leading its first batch
        for slot in slots:
            slot.set_result(slot.item * 10)

    group = GroupCommit(write, max_batch=2)
    first_threads, first = _submit_in_threads(group, [0])
    assert started.wait(10)
    many_thread, many = _many_in_thread(group, [1, 2, 3, 4, 5])
    _wait_queued(group, 5)
    other_threads, other = _submit_in_threads(group, [6])
    _wait_queued(group, 6)
    release.set()
    for thread in [*first_threads, many_thread, *other_threads]:
        thread.join(10)
        assert not thread.is_alive()
    assert first == [0] and isinstance(many[0], _Interrupt)
    # Items 3, 4, 5 were withdrawn, never written; the write queued behind them
    # still got its turn.
    assert other == [60]
    assert batches == [[0], [1, 2], [6]]
    assert not group._leading and not group._queue
    assert group.submit(7) == 70


def test_an_interrupted_submit_many_follower_withdraws_its_items() -> None:
    import signal

    gate = _Gate()
    group = GroupCommit(gate.write)
    leader_threads, leader = _submit_in_threads(group, [1])
    assert gate.first_started.wait(10)

    def interrupt(signum: int, frame: Any) -> None:
        raise _Interrupt

    previous = signal.signal(signal.SIGUSR1, interrupt)
    main = threading.main_thread().ident
    assert main is not None
    kicker = threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGUSR1))
    kicker.start()
    try:
        with pytest.raises(_Interrupt):
            group.submit_many([2, 3, 4])  # all queued behind the blocked leader
    finally:
        kicker.join()
        signal.signal(signal.SIGUSR1, previous)
    assert not group._queue
    gate.release_first.set()
    for thread in leader_threads:
        thread.join(10)
    assert leader == [10]
    assert group.submit(5) == 50
    assert [item for batch in gate.batches for item in batch] == [1, 5]
    assert not group._leading


def test_submit_many_and_submit_from_many_threads_answer_every_item_once() -> None:
    import random

    written: list[int] = []
    lock = threading.Lock()

    def write(slots: Sequence[Slot[int]]) -> None:
        threading.Event().wait(random.random() / 1000)
        with lock:
            written.extend(slot.item for slot in slots)
        for slot in slots:
            slot.set_result(slot.item)

    group = GroupCommit(write, max_batch=5)
    errors: list[BaseException] = []
    answers: dict[int, Any] = {}

    def work(worker: int) -> None:
        rng = random.Random(worker)
        try:
            for round_ in range(30):
                base = (worker * 100 + round_) * 100
                if worker % 2:
                    items = [base + i for i in range(rng.randint(1, 12))]
                    got = group.submit_many(items)
                    answers.update(zip(items, got, strict=True))
                else:
                    answers[base] = (group.submit(base), None)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive(), "a writer never got its answer"
    assert errors == []
    assert all(answer == (item, None) for item, answer in answers.items())
    assert sorted(written) == sorted(answers)
    assert not group._leading and not group._queue
