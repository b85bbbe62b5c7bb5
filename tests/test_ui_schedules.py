"""replaykit/ui/_schedules.py: the schedules page (it was a 404) — each schedule with its
next fire times and last runs — and its pause, resume and trigger, POSTed with the
page's form token, as `replaykit schedules` does them."""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import wait_for
from replaykit import Engine, Now, Queue, workflow
from replaykit.runtime.engine import open_store_for
from replaykit.runtime.schedules import Schedule, upcoming_ticks
from replaykit.stores.base import Store
from replaykit.ui import create_app
from replaykit.ui._schedules import schedules_page
from replaykit.ui._server import running


@workflow(name="ui-sched.tick")
def tick_wf(tick: datetime) -> Generator[Any, Any, str]:
    yield Now()
    return tick.isoformat()


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ui.db'}"


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    Queue("ui-sched-q")
    with Engine(url, poll_interval=0.05, executor_id="app", schedules=False) as engine:
        engine.schedules.add(Schedule("0 3 * * *", tick_wf, "<nightly>", queue="ui-sched-q"))
        wait_for(lambda: "<nightly>" in engine.store.schedule_states(), "the schedule stored")
        yield engine


@pytest.fixture
def client(url: str, engine: Engine) -> Iterator[httpx.Client]:
    store: Store = open_store_for(url)
    try:
        with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=15) as c:
            yield c
    finally:
        store.close()


def token_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form token"
    return found.group(1)


def test_the_page_lists_each_schedule_with_its_next_fire_times_escaped(
    client: httpx.Client,
) -> None:
    page = client.get("/schedules")
    assert page.status_code == 200
    assert "&lt;nightly&gt;" in page.text and "<nightly>" not in page.text
    assert "<code>0 3 * * *</code>" in page.text and "active" in page.text
    after = datetime.now(UTC)
    for tick in upcoming_ticks("0 3 * * *", None, after, 3):
        assert tick.strftime("%Y-%m-%d 03:00:00") in page.text
    assert 'href="/schedules" class="here"' in page.text
    assert "none yet" in page.text


def test_pause_resume_and_trigger_need_the_form_token_and_reach_the_engine(
    client: httpx.Client, engine: Engine, url: str
) -> None:
    token = token_of(client.get("/schedules").text)
    refused = client.post("/schedules/pause", data={"name": "<nightly>", "confirm": "yes"})
    assert refused.status_code == 403
    assert not engine.store.schedule_states()["<nightly>"].paused
    paused = client.post(
        "/schedules/pause",
        data={"name": "<nightly>", "csrf": token, "confirm": "yes"},
        follow_redirects=True,
    )
    assert paused.status_code == 200 and "Paused: no engine starts its ticks" in paused.text
    assert engine.store.schedule_states()["<nightly>"].paused
    assert 'chip s-parked">paused' in paused.text and 'value="resume"' in paused.text
    resumed = client.post(
        "/schedules/resume",
        data={"name": "<nightly>", "csrf": token, "confirm": "yes"},
        follow_redirects=True,
    )
    assert "Resumed" in resumed.text and not engine.store.schedule_states()["<nightly>"].paused
    triggered = client.post(
        "/schedules/trigger",
        data={"name": "<nightly>", "csrf": token, "confirm": "yes"},
        follow_redirects=True,
    )
    assert "Triggered" in triggered.text

    def started() -> list[str]:
        return [
            r.workflow_id
            for r in engine.list_workflows(name="ui-sched.tick")
            if r.workflow_id.startswith("schedule:<nightly>:manual:")
        ]

    wait_for(lambda: started(), "the engine to start the triggered run")
    page = client.get("/schedules").text
    assert "none yet" not in page and "schedule:&lt;nightly&gt;:manual:" in page


def test_an_unknown_schedule_is_a_404_naming_what_is_known(client: httpx.Client) -> None:
    token = token_of(client.get("/schedules").text)
    missing = client.post(
        "/schedules/pause", data={"name": "no-such", "csrf": token, "confirm": "yes"}
    )
    assert missing.status_code == 404 and "No such schedule" in missing.text
    assert client.get("/schedules/pause").status_code == 405


def test_a_store_with_no_schedule_says_how_one_gets_there(tmp_path: Path) -> None:
    store = open_store_for(f"sqlite:///{tmp_path / 'empty.db'}")
    try:
        assert schedules_page(store) == []
        with running(create_app(store)) as base:
            page = httpx.get(f"{base}/schedules", timeout=15)
        assert "No schedule is registered in this store yet" in page.text
    finally:
        store.close()
