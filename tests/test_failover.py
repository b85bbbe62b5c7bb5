"""A PostgresStore on a multi-host URL across a real failover (issue 36).

The cluster is pg_auto_failover's (reliability/_ha.py): a monitor, a primary and a
synchronous standby on loopback, on free ports, removed at the end. Without its
packages the tests skip outside CI and fail in it (.ci/run installs them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any, TypeVar

import pytest

from conftest import wait_for
from reliability._cluster import ClusterUnavailable
from reliability._ha import HACluster, install_hint
from reliability._harness import IN_CI
from replaykit import Engine, Status, Step, workflow

pytestmark = [pytest.mark.failover, pytest.mark.xdist_group("chaos"), pytest.mark.timeout(240)]

T = TypeVar("T")


@pytest.fixture(scope="module")
def ha() -> Iterator[HACluster]:
    try:
        cluster = HACluster()
    except ClusterUnavailable as exc:
        if IN_CI:
            pytest.fail(f"CI must run the failover tests: {exc}")
        pytest.skip(f"{exc} ({install_hint()})")
    try:
        cluster.create()
        yield cluster
    finally:
        cluster.drop()


def _until(call: Callable[[], T], timeout: float = 60) -> tuple[T, float]:
    """`call()`'s first answer that is not an error, and the seconds it took."""
    from replaykit.errors import StoreUnavailable

    began = time.monotonic()
    while True:
        try:
            return call(), time.monotonic() - began
        except StoreUnavailable:
            if time.monotonic() - began > timeout:
                raise
            time.sleep(0.05)


def test_a_multi_host_url_keeps_its_options_and_names_no_password() -> None:
    from replaykit.stores import parse_store_url
    from replaykit.stores.postgres.database import redact_url

    url = (
        "postgresql://app:secret@10.0.0.1:5432,10.0.0.2:5433/orders"
        "?target_session_attrs=read-write&schema=rk_orders&connect_timeout=4"
    )
    parsed = parse_store_url(url)
    assert parsed.options == {"schema": "rk_orders", "connect_timeout": 4.0}
    assert parsed.target == (
        "postgresql://app:secret@10.0.0.1:5432,10.0.0.2:5433/orders"
        "?target_session_attrs=read-write&connect_timeout=4"
    )
    assert redact_url(parsed.target) == (
        "postgresql://app:***@10.0.0.1:5432,10.0.0.2:5433/orders"
        "?target_session_attrs=read-write&connect_timeout=4"
    )


def test_a_server_that_takes_no_writes_is_an_outage_not_a_refusal(
    pg_store: Any, pg_url: str, pg_schema: str
) -> None:
    """A connection on a read-only server (a standby, a primary an HA manager demotes)
    fails writes with SQLSTATE 25006: the primary is elsewhere for now, so the write is
    retried on a new connection, not refused for good (and the message says why)."""
    from datetime import UTC, datetime

    from replaykit.errors import StoreUnavailable
    from replaykit.stores.postgres import PostgresStore

    read_only = PostgresStore(
        f"{pg_url}?options=-c%20default_transaction_read_only%3Don",
        schema=pg_schema,
        auto_migrate=False,
    )
    try:
        for _ in range(3):  # each try on another connection, the failed one dropped
            with pytest.raises(StoreUnavailable, match="target_session_attrs=read-write"):
                read_only.heartbeat("read-only", "v1", datetime.now(UTC))
        assert pg_store.heartbeat("read-only", "v1", datetime.now(UTC)) is not None
    finally:
        read_only.close()


def test_a_store_on_a_multi_host_url_follows_the_primary_across_a_failover(
    ha: HACluster,
) -> None:
    """The pool reconnects to the new primary, the listener LISTENs again there, and an
    executor hold taken before the failover is taken again on the new primary."""
    from replaykit.stores import open_store

    store = open_store(f"{ha.url}&schema=rk_failover_store&connect_timeout=3")
    try:
        heard: list[tuple[str, str]] = []
        relistened = threading.Event()

        def note(kind: str, key: str) -> None:
            heard.append((kind, key))
            if kind == "relisten":
                relistened.set()

        store.subscribe(note)
        hold = store.hold_executor("failover-engine", "v1")
        assert hold is not None
        before = ha.primary()
        assert store.executor_holder("failover-engine", "v1")

        dead = ha.kill_primary()
        assert dead is before
        promoted = ha.wait_promoted(dead, timeout=90)
        assert promoted is not dead
        _status, resumed = _until(store.schema_status)
        kept, _ = _until(hold.keep)
        assert kept, "nobody else holds the id: the engine takes its hold again"
        assert ha.primary() is promoted
        assert store.executor_holder("failover-engine", "v1"), "held on the new primary"
        assert store.hold_executor("failover-engine", "v1") is None, "and only once"
        assert relistened.wait(30), f"the listener LISTENs again on the new primary: {heard}"
        assert resumed < 30
        hold.release()
        ha.revive(dead)
    finally:
        store.close()


# -- fencing: a zombie that lost its hold runs and writes nothing more -------------------

_gate = threading.Event()
_ran: list[str] = []


@workflow(name="failover-fenced")
def _fenced_run() -> Generator[Any, Any, str]:
    yield Step("first", _note, "first")
    yield Step("blocked", _blocked)
    yield Step("after", _note, "after")
    return "done"


def _note(what: str) -> str:
    _ran.append(what)
    return what


def _blocked() -> str:
    _ran.append("blocked")
    _gate.wait(120)
    return "blocked"


def _blocked_started() -> bool:
    return "blocked" in _ran


class _LostHold:
    """An executor hold another engine took behind this one's back."""

    def __init__(self) -> None:
        self.lost = False

    def check(self) -> bool:
        return not self.lost

    def keep(self) -> bool:
        return not self.lost

    def release(self) -> None:
        pass


def test_a_fenced_engine_neither_records_nor_runs_another_step() -> None:
    """The runtime's half, on the memory store: once the hold is lost, the step in flight
    is not recorded, no later step runs and the run is not finished (another engine owns
    it now), and it stays PENDING for that engine."""
    from replaykit.stores.memory import MemoryStore

    _gate.clear()
    _ran.clear()
    store = MemoryStore()
    engine = Engine(store, executor_id="fenced-memory", lease_seconds=600)
    try:
        lost = _LostHold()
        engine._fence.hold = lost
        engine.start(_fenced_run, workflow_id="fenced-1")
        wait_for(_blocked_started, "the blocking step to start")
        lost.lost = True
        _gate.set()
        wait_for(lambda: engine._fence.lost or "after" in _ran, "the engine to go on or stop")
        time.sleep(0.5)
        records = store.load_log("fenced-1")
        assert [r.name for r in records if r.outcome is not None] == ["first"]
        assert _ran == ["first", "blocked"]
        row = store.get_workflow("fenced-1")
        assert row is not None and row.status is Status.PENDING
        assert engine.claims.claim_now() == 0
    finally:
        _gate.set()
        engine.close()


def test_a_zombie_that_lost_its_hold_in_a_failover_writes_nothing_more(
    ha: HACluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The real thing: an engine's step is in flight when the primary dies; on the new
    primary another engine takes the executor id first. The zombie's write of that step
    is refused before it reaches the store, and it runs no later step."""
    from replaykit.stores import open_store

    _gate.clear()
    _ran.clear()
    url = f"{ha.url}&schema=rk_failover_fence&connect_timeout=3"
    # A long lease: the queue loop would notice the lost hold only every 200 s; the
    # write's own check must catch it.
    engine = Engine(url, executor_id="zombie", app_version="v1", lease_seconds=600)
    thief_store = open_store(url)
    thief = None
    try:
        engine.start(_fenced_run, workflow_id="zombie-1")
        wait_for(_blocked_started, "the blocking step to start", timeout=30)
        dead = ha.kill_primary()
        ha.wait_promoted(dead, timeout=90)
        thief, _ = _until(lambda: thief_store.hold_executor("zombie", "v1"))
        assert thief is not None, "nobody holds the id on the new primary yet"
        with caplog.at_level(logging.ERROR, logger="replaykit.engine"):
            _gate.set()
            wait_for(
                lambda: engine._fence.lost or "after" in _ran, "the zombie to go on or stop", 60
            )
            time.sleep(1.0)
        records, _ = _until(lambda: thief_store.load_log("zombie-1"))
        assert [r.name for r in records if r.outcome is not None] == ["first"]
        assert _ran == ["first", "blocked"], "no step after the lost hold"
        row, _ = _until(lambda: thief_store.get_workflow("zombie-1"))
        assert row is not None and row.status is Status.PENDING
        # The message names the new holder, which may take a connect_timeout to learn.
        wait_for(lambda: any("fenced" in r.getMessage() for r in caplog.records), "why", 30)
        ha.revive(dead)
    finally:
        _gate.set()
        engine.close()
        if thief is not None:
            thief.release()
        thief_store.close()
