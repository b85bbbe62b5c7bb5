"""A PostgresStore on a multi-host URL across a real failover (issue 36).

The cluster is pg_auto_failover's (reliability/_ha.py): a monitor, a primary and a
synchronous standby on loopback, on free ports, removed at the end. Without its
packages the tests skip outside CI and fail in it (.ci/run installs them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from reliability._cluster import ClusterUnavailable
from reliability._ha import HACluster, install_hint
from reliability._harness import IN_CI

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
