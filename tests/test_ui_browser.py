"""The web UI in a real headless browser: Debian's chromium, driven by selenium
through /usr/bin/chromedriver (nothing is downloaded).

A real Engine makes the runs (finished, failed, waiting, with children, with
messages and events) in a temporary SQLite file, and once in a PostgreSQL
schema of the test's own; the UI serves that store on a free loopback port.
Without chromium the tests are skipped on a laptop and fail in CI.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from conftest import wait_for
from replaykit import Call, Engine, ReceiveUpdate, Recv, Reply, SetEvent, Step, workflow
from replaykit._operator import open_for_operator
from replaykit.log import Status
from replaykit.stores.base import Store
from replaykit.ui import create_app
from replaykit.ui._browser import CHROMEDRIVER, CHROMIUM, browser
from replaykit.ui._server import running

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
EVIL = "<script>document.title='owned'</script>"


def require_chromium() -> None:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(path)]
    if not missing:
        return
    why = f"{', '.join(missing)} missing: apt-get install chromium chromium-driver"
    if IN_CI:
        pytest.fail(f"CI needs the browser: {why}")
    pytest.skip(why)


class OutOfStock(Exception):
    pass


def reserve(item: str) -> str:
    if item == "unobtainium":
        raise OutOfStock(f"no {item} left in any warehouse")
    return f"held {item}"


@workflow(name="ui-browser-item")
def item_wf(item: str) -> Generator[Any, Any, str]:
    held: str = yield Step("reserve", reserve, item)
    return held


@workflow(name="ui-browser-order")
def order_wf(items: list[str]) -> Generator[Any, Any, Any]:
    yield SetEvent("stage", "reserving")
    held = []
    for item in items:
        held.append((yield Call(item_wf, item)))
    yield SetEvent("stage", "awaiting payment")
    payment = yield Recv("payment", timeout=3600)
    return {"held": held, "payment": payment}


@workflow(name=f"ui-browser-{EVIL}")
def evil_wf(text: str) -> Generator[Any, Any, str]:
    echoed: str = yield Step(f"echo {EVIL}", str, text)
    return echoed


def make_runs(engine: Engine) -> None:
    """done (finished, two children), waiting (at its Recv, a message on another
    topic), failed (a child failed), escaped (markup in name, inputs, output)."""
    engine.start(order_wf, ["mug", "tee"], workflow_id="done")
    engine.start(order_wf, ["poster"], workflow_id="waiting")
    engine.start(order_wf, ["unobtainium"], workflow_id="failed")
    engine.start(evil_wf, EVIL, workflow_id=f"escaped-{EVIL}").result(timeout=20)
    engine.enqueue("restock", item_wf, "mug", workflow_id="restock-mug")  # no engine drains it

    def at_recv(workflow_id: str) -> bool:
        log = engine.steps(workflow_id)
        return bool(log) and log[-1].is_pending and log[-1].kind == "recv"

    wait_for(
        lambda: at_recv("done") and at_recv("waiting"), "the orders to await payment", timeout=20
    )
    engine.send("done", {"card": "visa"}, topic="payment")
    engine.send("waiting", {"note": "leave at the door"}, topic="delivery")
    engine.handle("done").result(timeout=20)
    wait_for(
        lambda: engine.handle("failed").status() is Status.ERROR, "the failed order", timeout=20
    )


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    require_chromium()
    with browser() as chrome:
        chrome.implicitly_wait(5)
        yield chrome


@contextmanager
def shop(url: str) -> Iterator[tuple[Engine, Store, str]]:
    """The runs of `make_runs` in the store at `url`, and the UI serving that store."""
    with Engine(url, poll_interval=0.05, executor_id="app", app_version="v1") as engine:
        make_runs(engine)
        store = open_for_operator(url, create=False)  # as `serve` opens it: no migration
        try:
            with running(create_app(store)) as base:
                yield engine, store, base
        finally:
            store.close()


@pytest.fixture
def sqlite_shop(tmp_path: Path) -> Iterator[tuple[Engine, Store, str]]:
    with shop(f"sqlite:///{tmp_path / 'ui.db'}") as opened:
        yield opened


def go(driver: Any, element: Any) -> None:
    """Click a link or button and wait until the next page has replaced this one."""
    before = driver.find_element(By.TAG_NAME, "html").id
    element.click()

    def replaced(driver: Any) -> bool:
        # Mid-navigation, Chromium answers with errors of several kinds; only a new
        # document, fully loaded, counts.
        try:
            loaded = driver.execute_script("return document.readyState") == "complete"
            return loaded and driver.find_element(By.TAG_NAME, "html").id != before
        except WebDriverException:
            return False

    WebDriverWait(driver, 10).until(replaced)


def absent(driver: Any, by: str, value: str) -> bool:
    """No such element, asked without the implicit wait (which would wait it out)."""
    driver.implicitly_wait(0)
    try:
        return driver.find_elements(by, value) == []
    finally:
        driver.implicitly_wait(5)


def texts(driver: Any, css: str) -> list[str]:
    return [element.text for element in driver.find_elements(By.CSS_SELECTOR, css)]


def status_of(store: Store, workflow_id: str) -> Status:
    row = store.get_workflow(workflow_id)
    assert row is not None, workflow_id
    return row.status


def test_follow_a_run_from_the_list_to_its_timeline(
    driver: Any, sqlite_shop: tuple[Engine, Store, str]
) -> None:
    _, _, base = sqlite_shop
    driver.get(f"{base}/runs")
    assert driver.title == "Runs · replaykit"
    ids = texts(driver, "#runs tbody td.id a")
    assert {"done", "waiting", "failed", "restock-mug"} <= set(ids)
    # Newest first: the orders were started in this order.
    assert ids.index("failed") < ids.index("waiting") < ids.index("done")
    go(driver, driver.find_element(By.LINK_TEXT, "failed"))
    assert driver.current_url == f"{base}/run?id=failed"
    assert driver.find_element(By.ID, "status").text == "ERROR"
    rows = driver.find_elements(By.CSS_SELECTOR, "#timeline tbody tr")
    assert [row.get_attribute("class") for row in rows] == ["step ok", "step error"]
    assert rows[1].find_element(By.CSS_SELECTOR, "td.name").text.startswith("ui-browser-item")
    assert (
        "no unobtainium left in any warehouse"
        in rows[1].find_element(By.CLASS_NAME, "outcome").text
    )
    # Every position has its bar; the failed one is drawn as an error.
    bars = driver.find_elements(By.CSS_SELECTOR, "#timeline rect.bar")
    assert [bar.get_attribute("class") for bar in bars] == ["bar ok", "bar error"]
    assert all(float(bar.get_attribute("width")) > 0 for bar in bars)
    # The run's own failure shows its traceback at once; the step's opens on a click.
    failure = driver.find_element(By.ID, "failure")
    assert "OutOfStock" in failure.find_element(By.TAG_NAME, "h2").text
    assert "Traceback (most recent call last)" in failure.find_element(By.TAG_NAME, "pre").text
    step_trace = rows[1].find_element(By.CSS_SELECTOR, "details.error pre")
    assert not step_trace.is_displayed()
    rows[1].find_element(By.CSS_SELECTOR, "details.error summary").click()
    assert step_trace.is_displayed()
    assert "test_ui_browser.OutOfStock: no unobtainium left" in step_trace.text
    # On to the child that failed, and back up to its parent.
    go(driver, driver.find_element(By.CSS_SELECTOR, "#children a"))
    assert driver.find_element(By.ID, "run-id").text == "failed:1"
    assert driver.find_element(By.ID, "name").text == "ui-browser-item"
    go(driver, driver.find_element(By.LINK_TEXT, "failed"))
    assert driver.find_element(By.ID, "run-id").text == "failed"


def test_a_run_page_shows_children_inbox_and_events(
    driver: Any, sqlite_shop: tuple[Engine, Store, str]
) -> None:
    _, _, base = sqlite_shop
    driver.get(f"{base}/run?id=done")
    assert driver.find_element(By.ID, "status").text == "SUCCESS"
    assert texts(driver, "#children ul.tree > li > a") == ["done:1", "done:2"]
    assert '"card": "visa"' in driver.find_element(By.ID, "result").text
    assert texts(driver, "#events tbody td:first-child") == ["stage"]
    assert '"awaiting payment"' in driver.find_element(By.CSS_SELECTOR, "#events pre").text
    # The waiting run's message is on a topic its log never received on: ask for it.
    driver.get(f"{base}/run?id=waiting")
    inbox = driver.find_element(By.ID, "inbox")
    assert "No message is waiting." in inbox.text
    inbox.find_element(By.NAME, "topic").send_keys("delivery")
    go(driver, inbox.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    inbox = driver.find_element(By.ID, "inbox")
    assert "leave at the door" in inbox.text
    assert texts(driver, "#inbox tbody td:first-child") == ["delivery"]
    assert driver.find_element(By.CSS_SELECTOR, "#timeline tr.pending td.outcome").text.startswith(
        "pending"
    )


def test_cancel_a_waiting_run_after_confirming(
    driver: Any, sqlite_shop: tuple[Engine, Store, str]
) -> None:
    engine, store, base = sqlite_shop
    driver.get(f"{base}/runs")
    go(driver, driver.find_element(By.LINK_TEXT, "waiting"))
    assert driver.find_element(By.ID, "status").text == "PENDING"
    go(driver, driver.find_element(By.ID, "cancel"))
    # The confirmation step: nothing has changed yet.
    assert driver.find_element(By.TAG_NAME, "h1").text == "Cancel run waiting?"
    assert status_of(store, "waiting") is Status.PENDING
    go(driver, driver.find_element(By.ID, "confirm"))
    assert driver.current_url == f"{base}/run?id=waiting&done=cancel"
    assert driver.find_element(By.ID, "status").text == "CANCELLED"
    assert driver.find_element(By.ID, "done").text.startswith("Cancelled.")
    assert absent(driver, By.ID, "cancel")
    assert driver.find_element(By.ID, "resume").is_displayed()
    assert status_of(store, "waiting") is Status.CANCELLED
    # The engine that ran it does not carry it on when its message comes.
    engine.send("waiting", {"card": "amex"}, topic="payment")
    time.sleep(0.3)
    assert status_of(store, "waiting") is Status.CANCELLED


def test_stored_markup_is_shown_as_text(
    driver: Any, sqlite_shop: tuple[Engine, Store, str]
) -> None:
    _, _, base = sqlite_shop
    driver.get(f"{base}/runs")
    link = driver.find_element(By.PARTIAL_LINK_TEXT, "escaped-")
    assert link.text == f"escaped-{EVIL}"
    go(driver, link)
    assert driver.title != "owned"
    assert driver.find_element(By.ID, "name").text == f"ui-browser-{EVIL}"
    assert EVIL in driver.find_element(By.ID, "inputs").text
    assert EVIL in driver.find_element(By.ID, "result").text
    assert absent(driver, By.TAG_NAME, "script")


def test_filter_the_runs_and_see_the_queues(
    driver: Any, sqlite_shop: tuple[Engine, Store, str]
) -> None:
    _, _, base = sqlite_shop
    driver.get(f"{base}/runs")
    driver.find_element(By.CSS_SELECTOR, "input[name=status][value=ERROR]").click()
    go(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
    assert driver.current_url == (
        f"{base}/runs?status=ERROR&id=&where=&name=&queue=&partition_key=&from=&to=&refresh="
    )
    counts = texts(driver, "#counts a")
    assert counts and all(text.split()[0] in {s.value for s in Status} for text in counts)
    assert texts(driver, "#runs tbody td.id a") == ["failed:1", "failed"]
    assert set(texts(driver, "#runs .badge")) == {"ERROR"}
    go(driver, driver.find_element(By.LINK_TEXT, "Queues"))
    cells = texts(driver, "#queues tbody tr:first-child td")
    assert cells[:5] == ["restock", "1", "0", "0", "0"]
    go(driver, driver.find_element(By.LINK_TEXT, "restock"))
    assert texts(driver, "#runs tbody td.id a") == ["restock-mug"]


def test_cancel_in_the_browser_on_postgres(driver: Any, pg_url: str, pg_schema: str) -> None:
    with shop(f"{pg_url}?schema={pg_schema}") as (_, store, base):
        driver.get(f"{base}/runs")
        go(driver, driver.find_element(By.LINK_TEXT, "waiting"))
        assert texts(driver, "#timeline tbody td.num:first-child") == ["0", "1", "2", "3"]
        go(driver, driver.find_element(By.ID, "cancel"))
        go(driver, driver.find_element(By.ID, "confirm"))
        assert driver.find_element(By.ID, "status").text == "CANCELLED"
        assert status_of(store, "waiting") is Status.CANCELLED
        assert "PostgresStore" in driver.find_element(By.CLASS_NAME, "store").text


@workflow(name="ui-browser-nightly")
def nightly_wf(tick: Any) -> Generator[Any, Any, str]:
    return str(tick)
    yield


def test_pause_and_trigger_a_schedule(driver: Any, tmp_path: Path) -> None:
    from replaykit.runtime.schedules import Schedule

    url = f"sqlite:///{tmp_path / 'ui.db'}"
    with Engine(url, poll_interval=0.05, executor_id="app", schedules=False) as engine:
        engine.schedules.add(Schedule("0 3 * * *", nightly_wf, "nightly"))
        wait_for(lambda: "nightly" in engine.store.schedule_states(), "the schedule stored")
        store = open_for_operator(url, create=False)
        try:
            with running(create_app(store)) as base:
                driver.get(f"{base}/runs")
                go(driver, driver.find_element(By.LINK_TEXT, "Schedules"))
                assert texts(driver, "#schedules td.name") == ["nightly"]
                go(driver, driver.find_element(By.CSS_SELECTOR, "button[value=pause]"))
                assert driver.find_element(By.ID, "done").text.startswith("Paused")
                assert "paused" in driver.find_element(By.CSS_SELECTOR, "td.state").text
                assert store.schedule_states()["nightly"].paused
                go(driver, driver.find_element(By.CSS_SELECTOR, "button[value=trigger]"))
                assert driver.find_element(By.ID, "done").text.startswith("Triggered")
                wait_for(
                    lambda: any(
                        r.workflow_id.startswith("schedule:nightly:manual:")
                        for r in engine.list_workflows(name="ui-browser-nightly")
                    ),
                    "the engine to start the triggered run",
                )
                driver.get(f"{base}/schedules")
                assert "SUCCESS" in driver.find_element(By.CSS_SELECTOR, "td.runs").text or (
                    "PENDING" in driver.find_element(By.CSS_SELECTOR, "td.runs").text
                )
                go(driver, driver.find_element(By.CSS_SELECTOR, "button[value=resume]"))
                assert "active" in driver.find_element(By.CSS_SELECTOR, "td.state").text
        finally:
            store.close()


def test_send_a_message_to_a_waiting_run(
    driver: Any, sqlite_shop: tuple[Engine, Store, str]
) -> None:
    engine, _store, base = sqlite_shop
    driver.get(f"{base}/run?id=waiting")
    form = driver.find_element(By.ID, "send")
    form.find_element(By.NAME, "topic").send_keys("payment")
    form.find_element(By.NAME, "message").send_keys('{"card": "amex"}')
    go(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    assert driver.find_element(By.ID, "done").text.startswith("Sent:")
    result = engine.handle("waiting").result(timeout=20)
    assert result["payment"] == {"card": "amex"}
    driver.get(f"{base}/run?id=waiting")
    assert driver.find_element(By.ID, "status").text == "SUCCESS"
    assert absent(driver, By.ID, "send")


def test_bulk_cancel_a_filtered_selection_after_confirming_the_count(
    driver: Any, sqlite_shop: tuple[Engine, Store, str]
) -> None:
    _, store, base = sqlite_shop
    driver.get(f"{base}/runs")
    assert absent(driver, By.ID, "bulk-cancel")  # no filter: no bulk action offered
    for status in ("PENDING", "ENQUEUED"):
        driver.find_element(By.CSS_SELECTOR, f"input[name=status][value={status}]").click()
    go(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
    assert set(texts(driver, "#runs tbody td.id a")) == {"waiting", "restock-mug"}
    go(driver, driver.find_element(By.ID, "bulk-cancel"))
    # The confirmation names the count; nothing has changed yet.
    assert driver.find_element(By.TAG_NAME, "h1").text == "Cancel 2 run(s)?"
    assert driver.find_element(By.ID, "bulk-count").text.startswith("2 run(s) match this filter")
    assert status_of(store, "waiting") is Status.PENDING
    driver.find_element(By.ID, "reason").send_keys("closing the shop")
    go(driver, driver.find_element(By.ID, "confirm"))
    assert driver.current_url == (
        f"{base}/runs?status=ENQUEUED&status=PENDING&done=cancel&n=2&skipped=0"
    )
    assert driver.find_element(By.ID, "done").text.startswith("Cancelled 2 run(s); 0 skipped")
    assert status_of(store, "waiting") is Status.CANCELLED
    assert status_of(store, "restock-mug") is Status.CANCELLED
    row = store.get_workflow("restock-mug")
    assert row is not None and row.error == "closing the shop"
    assert status_of(store, "done") is Status.SUCCESS  # outside the selection
    assert "No runs match." in driver.find_element(By.ID, "summary").text


@workflow(name="ui-browser-counter", updates=["add"])
def counter_wf(start: int) -> Generator[Any, Any, int]:
    total = start
    while total < 100:
        request = yield ReceiveUpdate("add")
        if not isinstance(request.args[0], int):
            yield Reply(
                request, error=ValueError(f"add takes a whole number, not {request.args[0]!r}")
            )
            continue
        total += request.args[0]
        yield Reply(request, {"total": total})
    return total


def test_send_an_update_and_read_the_reply(driver: Any, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ui.db'}"
    with Engine(url, poll_interval=0.05, executor_id="app") as engine:
        engine.start(counter_wf, 40, workflow_id="counter")
        store = open_for_operator(url, create=False)
        try:
            with running(create_app(store)) as base:
                driver.get(f"{base}/run?id=counter")
                form = driver.find_element(By.ID, "update")
                form.find_element(By.NAME, "name").send_keys("add")
                form.find_element(By.NAME, "args").send_keys("[2]")
                go(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
                assert driver.find_element(By.ID, "done").text == "The run replied:"
                assert '"total": 42' in driver.find_element(By.ID, "reply").text
                go(driver, driver.find_element(By.ID, "back"))
                form = driver.find_element(By.ID, "update")
                form.find_element(By.NAME, "name").send_keys("add")
                form.find_element(By.NAME, "args").send_keys(f'["{EVIL}"]')
                go(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
                refused = driver.find_element(By.ID, "refused").text
                assert "add takes a whole number" in refused and EVIL in refused
                assert driver.title != "owned"
                driver.get(f"{base}/run?id=counter")
                form = driver.find_element(By.ID, "update")
                form.find_element(By.NAME, "name").send_keys("add")
                form.find_element(By.NAME, "args").send_keys("{not json")
                go(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
                assert "arguments: not JSON" in driver.find_element(By.TAG_NAME, "body").text
            engine.update("counter", "add", 58)
            assert engine.handle("counter").result(timeout=20) == 100
        finally:
            store.close()


def test_search_runs_by_a_filter_and_by_an_attribute(driver: Any, tmp_path: Path) -> None:
    from replaykit.stores.base import WorkflowRow

    url = f"sqlite:///{tmp_path / 'ui.db'}"
    store = open_for_operator(url, create=True)
    try:
        for n, (customer, plan) in enumerate((("42", "pro"), ("42", "free"), ("7", "pro"))):
            store.create_workflow(
                WorkflowRow(
                    f"order-{n}",
                    "ui-browser-order",
                    Status.SUCCESS,
                    attributes={"customer": customer, "plan": plan},
                )
            )
        with running(create_app(store)) as base:
            driver.get(f"{base}/runs")
            box = driver.find_element(By.ID, "where")
            box.send_keys("customer = '42'")
            go(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
            assert texts(driver, "#runs td.id a") == ["order-1", "order-0"]
            assert driver.find_element(By.ID, "where").get_attribute("value") == "customer = '42'"
            chip = driver.find_element(By.LINK_TEXT, "plan=free")
            go(driver, chip)
            assert texts(driver, "#runs td.id a") == ["order-1"]
            assert driver.find_element(By.ID, "where").get_attribute("value") == "plan = 'free'"
            box = driver.find_element(By.ID, "where")
            box.clear()
            box.send_keys("plan = 'pro' and not customer = '42'")
            go(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
            assert texts(driver, "#runs td.id a") == ["order-2"]
            box = driver.find_element(By.ID, "where")
            box.clear()
            box.send_keys("plan = ")
            go(driver, driver.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
            assert "column" in driver.find_element(By.TAG_NAME, "body").text
    finally:
        store.close()
