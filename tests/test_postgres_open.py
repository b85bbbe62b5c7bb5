"""Opening a PostgreSQL store through a connection that drops (the chaos suite's
lost_ack scenario caught an engine failing to start over one cut connection)."""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Generator
from typing import Any

import pytest

from conftest import PG_URL
from reliability._proxy import CuttingProxy
from reliability.lost_ack import _through
from replaykit import Engine, Recv, Status, workflow
from replaykit.errors import StoreUnavailable
from replaykit.stores.postgres import PostgresStore


@workflow(name="postgres-open-waiter")
def waiter_wf() -> Generator[Any, Any, Any]:
    return (yield Recv("go"))


def test_a_migration_whose_commit_answer_is_lost_is_found_done_on_the_retry(
    pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    parts = urllib.parse.urlsplit(PG_URL)
    upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
    with CuttingProxy(upstream, seed=1) as proxy:
        # The first write cycle that commits is the migration's own COMMIT.
        proxy.arm(r"COMMIT", 1)
        with (
            caplog.at_level(logging.WARNING, logger="replaykit.stores"),
            Engine(_through(proxy, pg_schema), app_version="v-open") as eng,
        ):
            eng.start(waiter_wf, workflow_id="after-a-cut")
            assert eng.wait_idle(10)
        assert proxy.armed_left() == 0, "the proxy never cut the migration's answer"
    assert "the schema check at open lost its connection" in caplog.text
    direct = PostgresStore(PG_URL, schema=pg_schema)
    try:
        assert direct.schema_status()[0] == direct.schema_status()[1]
        row = direct.get_workflow("after-a-cut")
        assert row is not None and row.status is Status.PENDING
    finally:
        direct.close()


def test_a_server_gone_after_the_pool_opened_fails_the_open_saying_why(pg_schema: str) -> None:
    parts = urllib.parse.urlsplit(PG_URL)
    upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
    proxy = CuttingProxy(upstream, seed=2).start()
    direct_url = _through(proxy, pg_schema).replace(f"schema={pg_schema}&", "")
    store = PostgresStore(direct_url, schema=pg_schema, auto_migrate=False, connect_timeout=1.0)
    try:
        # The server "goes away": every reply is cut, so its connections drop and no
        # new one gets through its handshake.
        proxy.random_cut = 1.0
        began = time.monotonic()
        with pytest.raises(StoreUnavailable, match="cannot connect to PostgreSQL at") as caught:
            store._migrations.migrate_at_open()
        assert "is the server running" in str(caught.value)
        # One retry after the dropped connection, then the pool's own wait: not four.
        assert time.monotonic() - began < 8
    finally:
        store.close()
        proxy.close()
