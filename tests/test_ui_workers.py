"""replaykit/ui/_workers.py: the workers page — engines heard from lately, their
versions and heartbeats, what they run and the runs they hold."""

from __future__ import annotations

from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from conftest import wait_for
from replaykit import Engine, Queue, Sleep, workflow
from replaykit.runtime.engine import open_store_for
from replaykit.stores.memory import MemoryStore
from replaykit.ui import create_app
from replaykit.ui._server import running
from replaykit.ui._workers import workers_page


@workflow(name="ui-workers.sleeper")
def sleeper() -> Generator[Any, Any, None]:
    yield Sleep(3600)


def test_the_page_lists_live_engines_with_what_they_run_and_hold(tmp_path: Path) -> None:
    Queue("ui-workers-q")
    url = f"sqlite:///{tmp_path / 'ui.db'}"
    with Engine(
        url, executor_id="<worker-1>", app_version="v7", queues=["ui-workers-q"], poll_interval=0.05
    ) as engine:
        engine.start(sleeper, workflow_id="held-1")
        wait_for(lambda: engine.store.load_log("held-1"), "the run to sleep")
        store = open_store_for(url)
        try:
            with running(create_app(store)) as base:
                page = httpx.get(f"{base}/workers", timeout=15).text
        finally:
            store.close()
    assert "&lt;worker-1&gt;" in page and "<worker-1>" not in page
    assert "<code>v7</code>" in page and ">live<" in page
    assert '<td class="num">1</td>' in page  # the sleeping run it holds
    assert "<td>ui-workers-q</td>" in page
    # Every workflow this process registered, the first eight by name, then a count.
    assert "ui-workers.sleeper" in page or " more</td>" in page
    assert 'href="/workers" class="here"' in page


def test_a_silent_engine_is_shown_as_silent_and_an_old_one_not_at_all() -> None:
    store = MemoryStore()
    now = datetime(2030, 1, 1, tzinfo=UTC)
    store.heartbeat("quiet", "v1", now - timedelta(minutes=5), workflows=["w"], queues=[])
    store.heartbeat("gone", "v1", now - timedelta(hours=2))
    store.heartbeat("busy", "v2", now - timedelta(seconds=3))
    view = workers_page(store, now=now)
    assert view is not None
    assert [(w.executor_id, w.live, w.seconds_ago) for w in view] == [
        ("busy", True, 3),
        ("quiet", False, 300),
    ]
    assert view[1].workflows == "w" and view[1].queues == "-"
    assert view[0].workflows == "(not said)"


def test_a_store_that_keeps_no_heartbeats_says_so() -> None:
    class NoBeats:
        def count_workflows(self, where: Any) -> int:
            return 0

    assert workers_page(NoBeats()) is None  # type: ignore[arg-type]
