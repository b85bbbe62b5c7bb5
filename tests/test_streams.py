"""Streams: WriteStream/CloseStream in a workflow, read_stream outside it, on every store.

The reading core and the cursor are tested with lists of records; the engine
faces on memory, SQLite and PostgreSQL; a reader woken by PostgreSQL's NOTIFY
from another process, and one that only polls; a process killed mid-stream; the
testing kit on virtual time; the CLI.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import wait_for
from replaykit import (
    Client,
    CloseStream,
    ContinueAsNew,
    Engine,
    Race,
    Recv,
    Sleep,
    Status,
    Step,
    StreamClosed,
    WriteStream,
    workflow,
)
from replaykit.cli import cli
from replaykit.client import AsyncClient
from replaykit.errors import PayloadTooLarge, StreamTimeout, WorkflowNotFound
from replaykit.interpreter import Completed, Effect, Failed, Interpreter
from replaykit.log import CLOSE_STREAM_KIND, WRITE_STREAM_KIND, Failure, Record, StreamCursor, Value
from replaykit.runtime.aio import AsyncEngine
from replaykit.runtime.streams import Emit, Pause, ReadLog, ReadRun, reading, recorded_values
from replaykit.serde import encode_error
from replaykit.stores import SqliteStore
from replaykit.stores.base import WorkflowRow
from replaykit.testing import check_determinism, run

ROOT = Path(__file__).resolve().parent.parent


def written(position: int, key: str, value: Any) -> Record:
    return Record(position, WRITE_STREAM_KIND, key, Value(value))


def closed(position: int, key: str) -> Record:
    return Record(position, CLOSE_STREAM_KIND, key, Value(None))


def step(position: int) -> Record:
    return Record(position, "step", f"s{position}", Value(position))


# -- the cursor and the reading core, with no I/O ---------------------------------------


def test_cursor_takes_each_value_once_in_order_from_start() -> None:
    cursor = StreamCursor("t", start=1)
    log = [written(0, "t", "a"), step(1), written(2, "other", "x"), written(3, "t", "b")]
    assert cursor.take(log) == ["b"]  # "a" is index 0, skipped by start=1
    assert (cursor.next_position, cursor.seen) == (4, 2)
    assert cursor.take(log) == []  # the same records again give nothing
    more = [written(4, "t", "c"), closed(5, "t"), written(6, "t", "after")]
    assert cursor.take(more) == ["c"]
    assert cursor.closed and cursor.next_position == 6


def test_cursor_stops_at_a_pending_record_and_skips_failed_writes() -> None:
    failure = Failure(encode_error(PayloadTooLarge("too big")))
    cursor = StreamCursor("t")
    log = [
        written(0, "t", 1),
        Record(1, WRITE_STREAM_KIND, "t", failure),
        Record(2, "sleep", "sleep", None),
    ]
    assert cursor.take(log) == [1]
    assert cursor.next_position == 2  # the sleep under way is read again next time
    assert cursor.take([Record(2, "sleep", "sleep", Value(None)), written(3, "t", 2)]) == [2]


def drive(core: Generator[Any, Any, None], answers: list[Any]) -> list[Any]:
    """Run the reading core against scripted answers; what it asked and emitted."""
    seen: list[Any] = []
    answer: Any = None
    try:
        while True:
            request = core.send(answer)
            seen.append(request)
            answer = None if isinstance(request, (Emit, Pause)) else answers.pop(0)
    except StopIteration:
        pass
    return seen


def row(status: Status, generation: int = 0) -> WorkflowRow:
    return WorkflowRow("w", "wf", status, generation=generation)


def test_the_core_reads_only_what_it_has_not_read_and_ends_after_the_run() -> None:
    core = reading("w", "t", 0, timeout=None, poll_interval=1.0, monotonic=time.monotonic)
    requests = drive(
        core,
        [
            row(Status.PENDING),
            [written(0, "t", "a"), step(1)],  # values: a look at the run, then a wait
            row(Status.PENDING),
            [],  # woken with nothing new: it looks at the run
            row(Status.PENDING),
            [written(2, "t", "b")],
            row(Status.SUCCESS),  # ended after this read: one more read, then done
            [written(3, "t", "c")],
        ],
    )
    reads = [r.since for r in requests if isinstance(r, ReadLog)]
    assert reads == [0, 2, 2, 3]
    assert {r.run_id for r in requests if isinstance(r, ReadLog)} == {"w"}
    assert [r.value for r in requests if isinstance(r, Emit)] == ["a", "b", "c"]
    assert sum(isinstance(r, ReadRun) for r in requests) == 4
    assert sum(isinstance(r, Pause) for r in requests) == 2


def test_the_core_ends_with_its_generation_read_from_the_archived_row() -> None:
    core = reading("w", "t", 0, timeout=None, poll_interval=1.0, monotonic=time.monotonic)
    requests = drive(
        core,
        [
            row(Status.PENDING, generation=2),
            [written(0, "t", "a")],
            row(Status.PENDING, generation=2),
            # The run continued as new before this read: what it found is generation
            # 3's log, not to be emitted; the rest of generation 2 is read from "w#2".
            [written(1, "t", "next-generation")],
            row(Status.PENDING, generation=3),
            [written(1, "t", "b"), written(2, "t", "c")],
        ],
    )
    reads = [(r.run_id, r.since) for r in requests if isinstance(r, ReadLog)]
    assert reads == [("w", 0), ("w", 1), ("w#2", 1)]
    assert [r.value for r in requests if isinstance(r, Emit)] == ["a", "b", "c"]


def test_the_core_names_the_key_and_the_count_when_it_times_out() -> None:
    now = [0.0]
    core = reading("w", "t", 0, timeout=5.0, poll_interval=1.0, monotonic=lambda: now[0])
    assert isinstance(core.send(None), ReadRun)
    assert isinstance(core.send(row(Status.PENDING)), ReadLog)
    assert isinstance(core.send([written(0, "t", "a")]), ReadRun)
    assert core.send(row(Status.PENDING)) == Emit("a")
    assert isinstance(core.send(None), Pause)
    now[0] = 10.0
    assert isinstance(core.send(None), ReadLog)
    assert isinstance(core.send([]), ReadRun)
    with pytest.raises(StreamTimeout, match=r"'wf' \(id 'w'\).*stream 't'.*1 value\(s\) read"):
        core.send(row(Status.PENDING))


# -- the interpreter: a value per position, writes after a close refused -----------------


@workflow(name="streams-write-after-close")
def write_after_close(catch: bool) -> Generator[Any, Any, str]:
    yield WriteStream("t", 1)
    yield CloseStream("t")
    try:
        yield WriteStream("t", 2)
    except StreamClosed as exc:
        if not catch:
            raise
        yield WriteStream("other", str(exc)[:20])
    return "done"


def test_a_write_after_the_close_is_refused_without_a_position() -> None:
    interp = Interpreter(write_after_close(True), [], workflow_name="w", workflow_id="i")
    first = interp.start()
    assert isinstance(first, Effect) and first.command == WriteStream("t", 1)
    second = interp.resume(written(0, "t", 1))
    assert isinstance(second, Effect) and isinstance(second.command, CloseStream)
    third = interp.resume(closed(1, "t"))
    # The refused write took no position: the workflow's next command takes 2.
    assert isinstance(third, Effect) and third.position == 2
    assert third.command.name == "other"
    # A replay of that log raises at the same point and ends the same way.
    log = [written(0, "t", 1), closed(1, "t"), written(2, "other", "x")]
    replayed = Interpreter(write_after_close(True), log, workflow_name="w", workflow_id="i")
    assert replayed.start() == Completed("done")


def test_the_refusal_names_the_run_the_position_and_the_close() -> None:
    log = [written(0, "t", 1), closed(1, "t")]
    interp = Interpreter(write_after_close(False), log, workflow_name="wf", workflow_id="id-1")
    decision = interp.start()
    assert isinstance(decision, Failed) and isinstance(decision.error, StreamClosed)
    message = str(decision.error)
    assert "'wf' (id 'id-1') at position 2" in message
    assert "closed the stream 't' at position 1" in message


def test_stream_commands_are_refused_inside_composites_and_need_a_key() -> None:
    with pytest.raises(TypeError, match="cannot hold WriteStream: readers find"):
        Race(WriteStream("t", 1), Sleep(1))
    with pytest.raises(TypeError, match="cannot hold CloseStream"):
        Race(CloseStream("t"), Sleep(1))
    with pytest.raises(TypeError, match="non-empty str"):
        WriteStream("", 1)
    with pytest.raises(TypeError, match="non-empty str"):
        CloseStream(7)  # type: ignore[arg-type]


# -- engines on every store ---------------------------------------------------------------


@workflow(name="streams-gated")
def gated(n: int) -> Generator[Any, Any, int]:
    """Writes values 0..n-1 in two halves, each after a message on "go"."""
    yield Recv("go")
    for i in range(n // 2):
        yield WriteStream("progress", i)
    yield Recv("go")
    for i in range(n // 2, n):
        yield WriteStream("progress", i)
        yield Step("between", lambda: None)
    yield CloseStream("progress")
    yield Recv("go")  # still running after the close
    return n


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    with Engine(store_url, poll_interval=0.2) as eng:
        yield eng


def read_on_thread(read: Callable[[], Iterator[Any]]) -> tuple[list[Any], threading.Thread]:
    got: list[Any] = []

    def reader() -> None:
        got.extend(read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    return got, thread


def test_readers_before_during_and_after_get_every_value_once(engine: Engine) -> None:
    wid = "streams-bda"
    engine.start(gated, 6, workflow_id=wid)
    before, thread_before = read_on_thread(lambda: engine.read_stream(wid, "progress", timeout=15))
    engine.send(wid, None, topic="go")
    wait_for(lambda: len(before) == 3)
    during, thread_during = read_on_thread(lambda: engine.read_stream(wid, "progress", timeout=15))
    engine.send(wid, None, topic="go")
    thread_before.join(15)
    thread_during.join(15)
    # Both ended at the close, though the run goes on.
    assert not thread_before.is_alive() and not thread_during.is_alive()
    assert before == during == [0, 1, 2, 3, 4, 5]
    assert engine.handle(wid).status() is Status.PENDING
    assert list(engine.read_stream(wid, "progress", start=4)) == [4, 5]
    engine.send(wid, None, topic="go")
    assert engine.handle(wid).result(timeout=15) == 6
    after = list(engine.read_stream(wid, "progress"))
    assert after == [0, 1, 2, 3, 4, 5]
    assert list(engine.read_stream(wid, "progress", start=6)) == []
    assert list(engine.read_stream(wid, "no-such-key")) == []  # the run ended: nothing more
    positions = [r.position for r in engine.steps(wid) if r.kind == WRITE_STREAM_KIND]
    assert len(positions) == len(set(positions)) == 6


@workflow(name="streams-fails")
def fails() -> Generator[Any, Any, None]:
    yield WriteStream("t", "last words")
    raise RuntimeError("broken")


@workflow(name="streams-waits")
def waits() -> Generator[Any, Any, None]:
    yield WriteStream("t", "hello")
    yield Recv("never")


def test_a_failed_or_cancelled_run_ends_its_streams(engine: Engine) -> None:
    handle = engine.start(fails)
    assert list(engine.read_stream(handle.workflow_id, "t", timeout=15)) == ["last words"]
    assert handle.status() is Status.ERROR
    waiting = engine.start(waits)
    got, thread = read_on_thread(lambda: engine.read_stream(waiting.workflow_id, "t", timeout=15))
    wait_for(lambda: got == ["hello"])
    engine.cancel(waiting.workflow_id)
    thread.join(15)
    assert not thread.is_alive() and got == ["hello"]


def test_timeout_unknown_ids_and_bad_arguments(engine: Engine) -> None:
    handle = engine.start(waits)
    values: list[Any] = []
    with pytest.raises(StreamTimeout, match=r"stream 't' within 0.3s; 1 value\(s\) read") as err:
        for value in engine.read_stream(handle.workflow_id, "t", timeout=0.3):
            values.append(value)
    assert isinstance(err.value, TimeoutError) and values == ["hello"]
    assert "streams-waits" in str(err.value) and handle.workflow_id in str(err.value)
    with pytest.raises(WorkflowNotFound, match="nope"):
        engine.read_stream("nope", "t")
    with pytest.raises(ValueError, match="start=-1"):
        engine.read_stream(handle.workflow_id, "t", start=-1)
    engine.cancel(handle.workflow_id)


def test_writing_after_close_fails_the_run_naming_both_positions(engine: Engine) -> None:
    handle = engine.start(write_after_close, False)
    with pytest.raises(StreamClosed, match=r"position 2.*closed the stream 't' at position 1"):
        handle.result(timeout=15)
    assert list(engine.read_stream(handle.workflow_id, "t")) == [1]
    caught = engine.start(write_after_close, True)
    assert caught.result(timeout=15) == "done"
    assert [r.kind for r in engine.steps(caught.workflow_id)] == [
        WRITE_STREAM_KIND,
        CLOSE_STREAM_KIND,
        WRITE_STREAM_KIND,
    ]


@workflow(name="streams-limits")
def limits(long_key: bool) -> Generator[Any, Any, str]:
    try:
        yield WriteStream("big", "x" * 5000)
    except PayloadTooLarge:
        yield WriteStream("big", "small")
    yield WriteStream("k" * 2000 if long_key else "fine", 1)
    return "ok"


def test_values_are_size_limited_and_keys_checked_like_event_keys(store_url: str) -> None:
    with Engine(store_url, poll_interval=0.2, max_payload_bytes=1000) as engine:
        good = engine.start(limits, False)
        assert good.result(timeout=15) == "ok"
        assert list(engine.read_stream(good.workflow_id, "big")) == ["small"]
        bad = engine.start(limits, True)
        with pytest.raises(ValueError, match=r"stream key 'kkk.* at position 2 is 2,000 bytes"):
            bad.result(timeout=15)


def test_the_client_reads_a_stream_without_running_anything(store_url: str) -> None:
    if store_url.startswith("memory"):
        pytest.skip("a client opens its own store; a memory store is not shared")
    with Engine(store_url, poll_interval=0.2) as engine:
        wid = "streams-client"
        engine.start(gated, 4, workflow_id=wid)
        with Client(store_url, poll_interval=0.2) as client:
            got, thread = read_on_thread(lambda: client.read_stream(wid, "progress", timeout=15))
            engine.send(wid, None, topic="go")
            engine.send(wid, None, topic="go")
            thread.join(15)
            assert got == [0, 1, 2, 3]
            assert list(client.read_stream(wid, "progress", start=3)) == [3]
            with pytest.raises(WorkflowNotFound):
                client.read_stream("nope", "progress")
        engine.send(wid, None, topic="go")


def test_the_async_faces_read_without_blocking_the_loop(store_url: str) -> None:
    async def main() -> None:
        async with AsyncEngine(store_url, poll_interval=0.2) as engine:
            wid = "streams-async"
            await engine.start(gated, 4, workflow_id=wid)
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.create_task(tick())

            async def read() -> list[Any]:
                return [v async for v in engine.read_stream(wid, "progress", timeout=15)]

            reader = asyncio.create_task(read())
            await asyncio.sleep(0.3)
            before = ticks
            await engine.send(wid, None, topic="go")
            await engine.send(wid, None, topic="go")
            assert await asyncio.wait_for(reader, 15) == [0, 1, 2, 3]
            ticker.cancel()
            assert before >= 10, "the loop ran other tasks while the reader waited"
            with pytest.raises(WorkflowNotFound):
                await anext(engine.read_stream("nope", "progress"))
            if not store_url.startswith("memory"):
                async with AsyncClient(store_url, poll_interval=0.2) as client:
                    got = [v async for v in client.read_stream(wid, "progress", start=2)]
                    assert got == [2, 3]
            await engine.send(wid, None, topic="go")

    asyncio.run(main())


# -- other processes: NOTIFY, polling, a crash --------------------------------------------


def start_app(url: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.apps.stream_app", url, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_reader_in_another_process_is_woken_by_postgres_notify(
    pg_url: str, pg_schema: str
) -> None:
    url = f"{pg_url}?schema={pg_schema}"
    wid = "streams-remote"
    # The run goes on for 20s after closing the stream: a reader that ends before the
    # run does was woken by the stream's own notifications, not by the run's end.
    writer = start_app(url, "progress", wid, "6", "0.2", "20")
    try:
        # A poll every minute: only the writer's notifications can bring the values in time.
        with Client(url, poll_interval=60) as client:
            wait_for(lambda: client.store.get_workflow(wid) is not None, timeout=60)
            got = list(client.read_stream(wid, "progress", timeout=30))
            still = client.store.get_workflow(wid)
        assert [v["done"] for v in got] == [1, 2, 3, 4, 5, 6]
        assert still is not None and still.status is Status.PENDING, "woken by the run's end"
        assert writer.poll() is None, writer.communicate()
    finally:
        writer.kill()
        writer.communicate(timeout=60)


class DeafSqliteStore(SqliteStore):
    """A store whose notifications never arrive: readers must poll."""

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return lambda: None


def test_a_reader_that_hears_nothing_polls(tmp_path: Path) -> None:
    path = tmp_path / "deaf.db"
    with Engine(f"sqlite:///{path}", poll_interval=0.1) as engine:
        wid = "streams-deaf"
        engine.start(gated, 4, workflow_id=wid)
        with Client(DeafSqliteStore(path), poll_interval=0.1) as client:
            got, thread = read_on_thread(lambda: client.read_stream(wid, "progress", timeout=15))
            engine.send(wid, None, topic="go")
            wait_for(lambda: got == [0, 1])
            engine.send(wid, None, topic="go")
            thread.join(15)
            assert got == [0, 1, 2, 3]
        engine.send(wid, None, topic="go")


def test_a_process_killed_mid_stream_writes_no_value_twice(tmp_path: Path) -> None:
    from tests.apps.stream_app import APP_VERSION, EXECUTOR_ID

    url = f"sqlite:///{tmp_path / 'crash.db'}"
    wid = "streams-killed"
    marker = tmp_path / "killed"
    crashed = start_app(url, "crashing", wid, str(marker))
    crashed.communicate(timeout=60)
    assert crashed.returncode == -9 and marker.exists()
    with Client(url) as client:
        values, was_closed, left = recorded_values(client.store, wid, "tokens")
    assert (values, was_closed, left.status) == (["a", "b"], False, Status.PENDING)
    # A restarted engine of the same id and version recovers the run by replay.
    with Engine(url, executor_id=EXECUTOR_ID, app_version=APP_VERSION) as engine:
        assert engine.handle(wid).result(timeout=30) == "survived"
        assert list(engine.read_stream(wid, "tokens")) == ["a", "b", "c"]
        records = [(r.position, r.kind) for r in engine.steps(wid)]
    assert records == [
        (0, WRITE_STREAM_KIND),
        (1, WRITE_STREAM_KIND),
        (2, "step"),
        (3, WRITE_STREAM_KIND),
        (4, CLOSE_STREAM_KIND),
    ]


# -- the testing kit, on virtual time ------------------------------------------------------


@workflow(name="streams-monthly-report")
def monthly_report(days: int) -> Generator[Any, Any, str]:
    for day in range(1, days + 1):
        yield Sleep(timedelta(days=1))
        total = yield Step("tally", tally, day)
        yield WriteStream("progress", {"day": day, "total": total})
    yield CloseStream("progress")
    yield WriteStream("log", "finished")
    return "report"


def tally(day: int) -> int:
    return day * 10


def test_the_testing_kit_shows_each_stream_on_virtual_time() -> None:
    begun = time.monotonic()
    result = run(monthly_report, 30, steps={"tally": lambda day: day * 100})
    assert time.monotonic() - begun < 10  # thirty virtual days
    assert result.ok and result.unwrap() == "report"
    assert result.streams["progress"][:2] == [{"day": 1, "total": 100}, {"day": 2, "total": 200}]
    assert len(result.streams["progress"]) == 30 and result.streams["log"] == ["finished"]
    assert result.closed_streams == frozenset({"progress"})
    times = result.stream_times("progress")
    assert times[0] - result.started_at == timedelta(days=1)
    assert {b - a for a, b in itertools.pairwise(times)} == {timedelta(days=1)}


def test_check_determinism_resumes_a_stream_from_every_commit() -> None:
    report = check_determinism(monthly_report, 3, real_steps=True)
    # Every crash point was tried, each stream value's commit among them.
    writes = [c for c in report.commits if c.kind == WRITE_STREAM_KIND]
    assert len(writes) == 4 and report.crash_runs == len(report.commits)
    assert report.reference.streams["progress"] == [
        {"day": 1, "total": 10},
        {"day": 2, "total": 20},
        {"day": 3, "total": 30},
    ]


def test_a_crash_at_each_commit_leaves_each_value_once() -> None:
    reference = run(monthly_report, 2, real_steps=True)
    for commit in range(len(reference.log) + 2):
        crashed = run(monthly_report, 2, crash_at=commit, real_steps=True)
        assert crashed.streams == reference.streams, commit
        positions = [r.position for r in crashed.log if r.kind == WRITE_STREAM_KIND]
        assert len(positions) == len(set(positions)) == 3


# -- the command line ----------------------------------------------------------------------


@workflow(name="streams-cli")
def cli_stream() -> Generator[Any, Any, None]:
    yield WriteStream("tokens", "plain")
    yield WriteStream("tokens", "\x1b[31mred\x1b[0m")
    yield Recv("more")
    yield WriteStream("tokens", {"n": 3})
    yield CloseStream("tokens")


def test_the_cli_prints_a_stream_escaped_and_follows_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with Engine(url, poll_interval=0.1) as engine:
        wid = "streams-cli-1"
        engine.start(cli_stream, workflow_id=wid)
        wait_for(lambda: len(list(engine.steps(wid))) >= 3)
        now = CliRunner().invoke(cli, ["workflows", "stream", wid, "tokens", "--url", url])
        assert now.exit_code == 0, now.output
        assert now.stdout.splitlines() == ['"plain"', '"\\u001b[31mred\\u001b[0m"']
        assert "\x1b" not in now.output
        assert "is open: --follow prints" in now.stderr
        engine.send(wid, None, topic="more")
        follow = CliRunner().invoke(
            cli, ["workflows", "stream", wid, "tokens", "--follow", "--start", "1", "--url", url]
        )
        assert follow.exit_code == 0, follow.output
        assert follow.stdout.splitlines() == ['"\\u001b[31mred\\u001b[0m"', '{"n": 3}']
        missing = CliRunner().invoke(cli, ["workflows", "stream", "nope", "tokens", "--url", url])
        assert missing.exit_code == 1 and "no workflow run with id 'nope'" in missing.stderr


# -- continue-as-new: a stream belongs to one generation ----------------------------------


@workflow(name="streams-continuing")
def continuing(generation: int) -> Generator[Any, Any, int]:
    yield WriteStream("p", f"{generation}-a")
    yield WriteStream("p", f"{generation}-b")
    if generation == 0:
        yield Recv("go")  # holds generation 0 until the reader has its values
    if generation < 2:
        yield ContinueAsNew(generation + 1)
    yield CloseStream("p")
    return generation


def test_a_reader_ends_with_its_generation_and_each_generation_keeps_its_stream(
    engine: Engine,
) -> None:
    import threading

    handle = engine.start(continuing, 0, workflow_id="streams-can")
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.extend(engine.read_stream("streams-can", "p")))
    reader.start()
    deadline = time.monotonic() + 20
    # Generation 0 waits on its Recv once both its values are recorded.
    while [r.kind for r in engine.steps("streams-can")][-1:] != ["recv"]:
        assert time.monotonic() < deadline, "generation 0 never reached its Recv"
        time.sleep(0.05)
    engine.send("streams-can", "now", topic="go")
    reader.join(timeout=20)
    assert not reader.is_alive(), "the reader did not end when its generation continued"
    assert got == ["0-a", "0-b"]
    assert handle.result(timeout=20) == 2
    # The live id reads the last generation's stream; the archived ones keep theirs.
    assert list(engine.read_stream("streams-can", "p", timeout=5)) == ["2-a", "2-b"]
    assert list(engine.read_stream("streams-can#0", "p", timeout=5)) == ["0-a", "0-b"]
    assert list(engine.read_stream("streams-can#1", "p", timeout=5)) == ["1-a", "1-b"]


@workflow(name="streams-continuing-quietly")
def continuing_quietly(generation: int) -> Generator[Any, Any, int]:
    if generation == 0:
        yield WriteStream("k", "a")
        yield Recv("go")
        yield ContinueAsNew(1)
    yield Recv("never")  # the next generation writes nothing to the stream
    return generation


def test_a_reader_hears_its_generation_end_without_waiting_for_a_poll(store_url: str) -> None:
    import threading

    # A poll interval far longer than the wait allowed: only a notification ends it.
    with Engine(store_url, poll_interval=30) as engine:
        engine.start(continuing_quietly, 0, workflow_id="streams-quiet")
        values = engine.read_stream("streams-quiet", "k")
        assert next(values) == "a"
        threading.Timer(0.2, engine.send, ("streams-quiet", 1, "go")).start()
        began = time.monotonic()
        assert list(values) == []
        assert time.monotonic() - began < 10, "the reader waited for a poll"
        engine.cancel("streams-quiet")
