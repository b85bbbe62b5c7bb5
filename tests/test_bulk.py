"""Bulk actions (runtime/bulk.py): `cancel_workflows`, `terminate_workflows`,
`resume_workflows`, `delete_workflows` and `send_many` on the four faces, over every
store: the selection (and its refusal when empty), the dry run's count, batches read by
keyset, each run's reason kept, and a rerun after an interruption that carries on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import error_line, ok, rk, wait_for
from replaykit import Client, Engine, Recv, Status, workflow
from replaykit.client import AsyncClient
from replaykit.runtime.aio import AsyncEngine
from replaykit.runtime.bulk import BulkResult
from replaykit.stores.base import WorkflowFilter

HOUR = 3600


@workflow(name="bulk.order")
def order(n: int) -> Generator[Any, Any, str]:
    note = yield Recv("note")
    return f"{n}: {note}"


@workflow(name="bulk.other")
def other() -> Generator[Any, Any, str]:
    note = yield Recv("note")
    return str(note)


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    with Engine(store_url, poll_interval=0.05) as eng:
        yield eng


def _queued(engine: Engine, count: int, prefix: str = "o") -> list[str]:
    """`count` runs of bulk.order held on a queue for an hour (ENQUEUED, not running)."""
    ids = [f"{prefix}-{i:03}" for i in range(count)]
    for i, wid in enumerate(ids):
        engine.enqueue("bulk-held", order, i, workflow_id=wid, delay=HOUR)
    return ids


def _status(engine: Engine, wid: str) -> Status:
    row = engine.store.get_workflow(wid)
    assert row is not None
    return row.status


# -- the selection ---------------------------------------------------------------------


def test_no_filter_is_refused_unless_all(engine: Engine) -> None:
    ids = _queued(engine, 3)
    for call in (
        engine.cancel_workflows,
        engine.terminate_workflows,
        engine.resume_workflows,
        engine.delete_workflows,
    ):
        with pytest.raises(ValueError, match=r"with no filter would act on every run.*all=True"):
            call()
        with pytest.raises(ValueError, match="no filter"):
            call(WorkflowFilter())
    with pytest.raises(ValueError, match=r"send_many\(\) with no filter"):
        engine.send_many("hi", "note")
    assert {_status(engine, wid) for wid in ids} == {Status.ENQUEUED}
    done = engine.cancel_workflows(all=True, reason="closing the shop")
    assert (done.matched, done.done, done.skipped) == (3, 3, 0)
    assert {_status(engine, wid) for wid in ids} == {Status.CANCELLED}


def test_a_selection_takes_no_page_and_no_contradiction(engine: Engine) -> None:
    with pytest.raises(ValueError, match="takes no limit, offset or count_at_most"):
        engine.cancel_workflows(WorkflowFilter(name="bulk.order", limit=10))
    with pytest.raises(ValueError, match="where= says name='a' and the keyword says 'b'"):
        engine.cancel_workflows(WorkflowFilter(name="a"), name="b")
    with pytest.raises(TypeError, match="give a WorkflowFilter"):
        engine.cancel_workflows("name = 'x'")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size=0"):
        engine.cancel_workflows(name="bulk.order", batch_size=0)
    with pytest.raises(ValueError, match="takes no limit, offset or count_at_most"):
        engine.cancel_workflows(WorkflowFilter(name="bulk.order", count_at_most=5))
    # An order, a cursor or a listing without payloads narrows nothing: still no filter.
    for unfiltered in (
        WorkflowFilter(newest_first=True),
        WorkflowFilter(after=(datetime.now(UTC), "x")),
        WorkflowFilter(payloads=False),
    ):
        with pytest.raises(ValueError, match="no filter"):
            engine.cancel_workflows(unfiltered)


def test_a_selection_read_newest_first_is_batched_as_well(engine: Engine) -> None:
    ids = _queued(engine, 5)
    done = engine.cancel_workflows(
        WorkflowFilter(name="bulk.order", newest_first=True), batch_size=2
    )
    assert (done.matched, done.done) == (5, 5)
    assert {_status(engine, wid) for wid in ids} == {Status.CANCELLED}


# -- cancel, with its dry run, reasons, batches and a resumed interruption --------------


def test_cancel_by_filter_keeps_the_reason_and_skips_the_rest(engine: Engine) -> None:
    ids = _queued(engine, 7)
    engine.enqueue("bulk-held", other, workflow_id="x-1", delay=HOUR)
    dry = engine.cancel_workflows(name="bulk.order", dry_run=True)
    assert dry == BulkResult("cancel", 7, 7, 0, dry_run=True)
    assert dry.summary() == (
        "would have cancelled 7 of 7 matching run(s); 0 skipped (done already, or not open to it)"
    )
    assert {_status(engine, wid) for wid in ids} == {Status.ENQUEUED}  # a dry run acts on none

    tallies: list[BulkResult] = []
    done = engine.cancel_workflows(
        name="bulk.order", reason="bad release 1.4", batch_size=3, progress=tallies.append
    )
    assert (done.matched, done.done, done.skipped, done.failed) == (7, 7, 0, 0)
    assert [t.matched for t in tallies] == [3, 6, 7]  # a batch at a time
    assert done.summary() == "cancelled 7 of 7 matching run(s); 0 skipped"
    for wid in ids:
        row = engine.store.get_workflow(wid)
        assert row is not None
        assert (row.status, row.error) == (Status.CANCELLED, "bad release 1.4")
    assert _status(engine, "x-1") is Status.ENQUEUED  # not selected

    # Again: everything it selects is done, and said so.
    again = engine.cancel_workflows(name="bulk.order", dry_run=True)
    assert (again.done, again.skipped) == (0, 7)


def test_an_interrupted_cancel_carries_on_when_run_again(engine: Engine) -> None:
    ids = _queued(engine, 10)

    def interrupt(tally: BulkResult) -> None:
        if tally.matched >= 4:
            raise KeyboardInterrupt  # an operator's Ctrl-C, or a lost process

    with pytest.raises(KeyboardInterrupt):
        engine.cancel_workflows(name="bulk.order", batch_size=4, progress=interrupt)
    cancelled = [wid for wid in ids if _status(engine, wid) is Status.CANCELLED]
    assert cancelled == ids[:4]  # the first batch, oldest first
    rerun = engine.cancel_workflows(name="bulk.order", batch_size=4)
    assert (rerun.matched, rerun.done, rerun.skipped) == (10, 6, 4)
    assert {_status(engine, wid) for wid in ids} == {Status.CANCELLED}
    # The default reason says what did it.
    row = engine.store.get_workflow(ids[-1])
    assert row is not None and row.error == "a bulk cancel"


def test_cancel_asks_running_runs_and_spares_finished_ones(engine: Engine) -> None:
    running = [engine.start(order, i, workflow_id=f"r-{i}") for i in range(3)]
    for handle in running:
        wait_for(lambda h=handle: len(engine.steps(h.workflow_id)) >= 1, "the run to wait")
    engine.send("r-0", "done", "note")
    assert running[0].result(timeout=10) == "0: done"
    done = engine.cancel_workflows(id_prefix="r-", reason="drain", grace=5)
    assert (done.matched, done.done, done.skipped) == (3, 2, 1)
    for wid in ("r-1", "r-2"):
        wait_for(lambda w=wid: _status(engine, w) is Status.CANCELLED, f"{wid} cancelled")
    assert _status(engine, "r-0") is Status.SUCCESS


def test_a_selection_by_status_and_time_range(engine: Engine) -> None:
    ids = _queued(engine, 4)
    engine.cancel("o-000")
    now = datetime.now(UTC)
    dry = engine.terminate_workflows(
        status="ENQUEUED", since=now - timedelta(hours=1), until=now, dry_run=True
    )
    assert (dry.matched, dry.done) == (3, 3)
    assert engine.terminate_workflows(status=Status.ENQUEUED, queue="bulk-held").done == 3
    later = engine.terminate_workflows(since=now + timedelta(hours=1))
    assert (later.matched, later.done) == (0, 0)
    assert {_status(engine, wid) for wid in ids} == {Status.CANCELLED}


# -- resume, delete, send_many ---------------------------------------------------------


def test_resume_then_delete_in_bulk(engine: Engine) -> None:
    ids = _queued(engine, 5)
    engine.cancel_workflows(name="bulk.order")
    resumed = engine.resume_workflows(name="bulk.order", reason="fixed in 1.5")
    assert (resumed.matched, resumed.done) == (5, 5)
    for wid in ids:
        wait_for(lambda w=wid: len(engine.steps(w)) >= 1, f"{wid} running again")
    # The runs run now: a resume skips them, a cancel of the running ones asks them.
    assert engine.resume_workflows(name="bulk.order").skipped == 5
    assert engine.send_many("stop", "note", name="bulk.order").done == 5
    for wid in ids:
        wait_for(lambda w=wid: _status(engine, w) is Status.SUCCESS, f"{wid} finished")
    dry = engine.delete_workflows(name="bulk.order", dry_run=True)
    assert (dry.matched, dry.done) == (5, 5)
    deleted = engine.delete_workflows(name="bulk.order", reason="retention by hand")
    assert (deleted.matched, deleted.done) == (5, 5)
    assert engine.list_workflows(name="bulk.order") == []


@workflow(name="bulk.parent")
def parent() -> Generator[Any, Any, None]:
    from replaykit import Start

    yield Start(order, 99, workflow_id="child-of-p")
    yield Recv("never")


def test_a_delete_refused_for_one_run_is_counted_and_the_rest_go_on(engine: Engine) -> None:
    engine.start(parent, workflow_id="p")
    wait_for(lambda: engine.store.get_workflow("child-of-p") is not None, "the child")
    _queued(engine, 2)
    done = engine.delete_workflows(name="bulk.order")
    assert (done.matched, done.done, done.failed) == (3, 2, 1)
    [(wid, why)] = done.failures
    assert wid == "child-of-p" and "its parent 'bulk.parent' (id 'p') is PENDING" in why
    assert "failed" in done.summary()
    assert engine.store.get_workflow("child-of-p") is not None


def test_send_many_with_a_key_delivers_once_across_reruns(engine: Engine) -> None:
    handles = [engine.start(order, i, workflow_id=f"s-{i}") for i in range(4)]
    for handle in handles:
        wait_for(lambda h=handle: len(engine.steps(h.workflow_id)) >= 1, "the run to wait")
    engine.send("s-0", "early", "note")
    handles[0].result(timeout=10)
    first = engine.send_many("go", "note", id_prefix="s-", idempotency_key="wave-1", batch_size=2)
    assert (first.matched, first.done, first.skipped) == (4, 3, 1)
    assert [h.result(timeout=10) for h in handles] == ["0: early", "1: go", "2: go", "3: go"]
    # Finished now, the runs are skipped; a send to unfinished ones keyed again delivers
    # nothing twice.
    ids = _queued(engine, 2, prefix="q")
    assert engine.send_many("x", "note", id_prefix="q-", idempotency_key="k").done == 2
    again = engine.send_many("x", "note", id_prefix="q-", idempotency_key="k")
    assert (again.done, again.skipped) == (0, 2)
    assert len(ids) == 2


# -- the client and the async faces ---------------------------------------------------


def test_a_client_acts_in_bulk_as_the_engine_does(shared: Any) -> None:
    with Engine(shared, poll_interval=0.05) as engine, Client(shared) as client:
        ids = _queued(engine, 4)
        with pytest.raises(ValueError, match="no filter"):
            client.cancel_workflows()
        assert client.cancel_workflows(name="bulk.order", dry_run=True).done == 4
        done = client.cancel_workflows(name="bulk.order", reason="from the client")
        assert done.done == 4
        row = client.store.get_workflow(ids[0])
        assert row is not None and row.error == "from the client"
        assert client.delete_workflows(name="bulk.order").done == 4
        assert client.list_workflows(name="bulk.order") == []


def test_the_async_faces_hand_bulk_actions_off_the_loop(shared: Any) -> None:
    async def main() -> None:
        async with AsyncEngine(shared, poll_interval=0.05) as engine, AsyncClient(shared) as client:
            for i in range(3):
                await engine.enqueue("bulk-held", order, i, workflow_id=f"a-{i}", delay=HOUR)
            with pytest.raises(ValueError, match="no filter"):
                await client.terminate_workflows()
            assert (await client.cancel_workflows(id_prefix="a-", dry_run=True)).done == 3
            assert (await engine.cancel_workflows(id_prefix="a-", reason="async")).done == 3
            assert (await client.resume_workflows(id_prefix="a-", dry_run=True)).done == 3
            assert (await engine.send_many(1, "note", id_prefix="a-", dry_run=True)).done == 0
            assert (await client.delete_workflows(id_prefix="a-")).done == 3

    asyncio.run(main())


# -- the command line ------------------------------------------------------------------


def _queued_in(url: str, count: int) -> list[str]:
    with Client(url, app_version="v1") as client:
        ids = [f"c-{i:02}" for i in range(count)]
        for i, wid in enumerate(ids):
            client.enqueue("bulk-held", "bulk.order", i, workflow_id=wid, delay=HOUR)
        client.enqueue("bulk-held", "bulk.other", workflow_id="c-other", delay=HOUR)
    return ids


def test_the_cli_refuses_a_bulk_action_with_no_filter(created_url: str) -> None:
    _queued_in(created_url, 2)
    for command in ("cancel", "terminate", "resume", "delete"):
        line = error_line(rk("workflows", command, "--url", created_url), code=2)
        assert f"`workflows {command}` with neither an ID nor a filter" in line
        assert "--all" in line
    line = error_line(rk("workflows", "cancel", "c-00", "--url", created_url, "--name", "x"), 2)
    assert "acts on that run alone; --name go with a bulk cancel" in line
    line = error_line(rk("workflows", "send-many", "1", "--topic", "t", "--url", created_url), 2)
    assert "`workflows send-many` with neither an ID nor a filter" in line


def test_the_cli_cancels_a_selection_in_batches_and_a_rerun_skips(created_url: str) -> None:
    ids = _queued_in(created_url, 7)
    url = ("--url", created_url)
    dry = ok(rk("workflows", "cancel", *url, "--name", "bulk.order", "--dry-run"))
    assert dry.strip() == (
        "would have cancelled 7 of 7 matching run(s); 0 skipped (done already, or not open to it)"
    )
    # Asked to confirm the count; "n" leaves every run as it was.
    refused = rk("workflows", "cancel", *url, "--name", "bulk.order", input="n\n")
    assert refused.exit_code == 1 and "cancel 7 run(s) (7 match, 0 to skip)?" in refused.output
    result = rk(
        "workflows",
        "cancel",
        *url,
        "--name",
        "bulk.order",
        "--reason",
        "bad release 1.4",
        "--batch-size",
        "3",
        input="y\n",
    )
    assert ok(result).strip().endswith("cancelled 7 of 7 matching run(s); 0 skipped")
    assert result.stderr.count("... ") == 3  # a line of progress a batch
    with Client(created_url) as client:
        rows = [client.store.get_workflow(wid) for wid in ids]
        assert {(r.status, r.error) for r in rows if r} == {(Status.CANCELLED, "bad release 1.4")}
        other = client.store.get_workflow("c-other")
        assert other is not None and other.status is Status.ENQUEUED
    again = ok(rk("workflows", "cancel", *url, "--name", "bulk.order", "--yes"))
    assert again.strip() == "nothing to cancel: 7 run(s) match, each done already or not open to it"
    resumed = json.loads(
        ok(rk("workflows", "resume", *url, "--id-prefix", "c-0", "--yes", "--json"))
    )
    assert (resumed["action"], resumed["done"], resumed["failed"]) == ("resume", 7, 0)


def test_the_cli_sends_to_many_and_deletes_a_selection(created_url: str) -> None:
    _queued_in(created_url, 3)
    url = ("--url", created_url)
    sent = ok(
        rk("workflows", "send-many", '"hi"', "--topic", "note", *url, "--all", "-y", "--key", "k")
    )
    assert sent.strip() == "sent to 4 of 4 matching run(s); 0 skipped"
    again = json.loads(
        ok(
            rk(
                "workflows",
                "send-many",
                '"hi"',
                "--topic",
                "note",
                *url,
                "--all",
                "-y",
                "--key",
                "k",
                "--json",
            )
        )
    )
    assert (again["done"], again["skipped"]) == (0, 4)
    deleted = ok(rk("workflows", "delete", *url, "--status", "enqueued", "--since", "1h", "--yes"))
    assert deleted.strip() == "deleted 4 of 4 matching run(s); 0 skipped"
    assert "no workflow runs match" in ok(rk("workflows", "list", *url))


def test_a_queued_run_cancelled_then_resumed_by_a_client_goes_back_on_its_queue(
    shared: Any,
) -> None:
    """A run cancelled before any worker claimed it has no engine: a client's resume (or
    the CLI's) puts it back on its queue rather than PENDING for no executor."""
    with Client(shared, app_version="v1") as client:
        for i in range(3):
            client.enqueue("bulk-held", "bulk.order", i, workflow_id=f"b-{i}", delay=HOUR)
        assert client.cancel_workflows(id_prefix="b-").done == 3
        assert client.resume_workflows(id_prefix="b-").done == 3
        rows = client.list_workflows(name="bulk.order")
        assert {(r.status, r.executor_id, r.queue) for r in rows} == {
            (Status.ENQUEUED, "", "bulk-held")
        }
    with Engine(shared, poll_interval=0.05) as engine:
        engine.cancel("b-0")
        engine.resume("b-0")  # an engine resumes onto itself
        row = engine.store.get_workflow("b-0")
        assert row is not None and (row.status, row.executor_id) == (
            Status.PENDING,
            engine.executor_id,
        )
