"""replaykit/ui/_bulk.py: cancel the runs a filtered runs list selects — a confirmation
page naming the count, then a POST with the page's form token — over HTTP, on SQLite
and PostgreSQL. The browser test is in test_ui_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from replaykit import Client, Status
from replaykit.runtime.engine import open_store_for
from replaykit.stores.base import Store, WorkflowFilter
from replaykit.ui import create_app
from replaykit.ui._bulk import NoFilter, cancel_selection, preview
from replaykit.ui._server import running


@pytest.fixture
def store(created_url: str) -> Iterator[Store]:
    with Client(created_url, app_version="v1") as client:
        for i in range(5):
            client.enqueue("ui-bulk-q", "ui-bulk.order", i, workflow_id=f"u-{i}", delay=3600)
        client.enqueue("ui-bulk-q", "ui-bulk.other", workflow_id="keep", delay=3600)
    opened = open_store_for(created_url)
    opened.set_status("u-0", Status.SUCCESS, only_from=(Status.ENQUEUED,))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def http(store: Store) -> Iterator[httpx.Client]:
    with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=15) as c:
        yield c


def token_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form token"
    return found.group(1)


def statuses(store: Store) -> dict[str, Status]:
    return {row.workflow_id: row.status for row in store.list_workflows(WorkflowFilter())}


def test_the_count_then_the_cancel_with_the_pages_token(http: httpx.Client, store: Store) -> None:
    listing = http.get("/runs", params={"name": "ui-bulk.order"})
    assert 'id="bulk-cancel" href="/runs/cancel?name=ui-bulk.order"' in listing.text
    assert 'id="bulk-cancel"' not in http.get("/runs").text  # no filter, no button
    page = http.get("/runs/cancel", params={"name": "ui-bulk.order"})
    assert page.status_code == 200
    assert "Cancel 4 run(s)?" in page.text
    assert "5 run(s) match this filter: 4 unfinished would be cancelled, 1 finished" in page.text
    assert 'action="/runs/cancel?name=ui-bulk.order"' in page.text
    assert statuses(store)["u-1"] is Status.ENQUEUED  # a count changes nothing
    form = {"csrf": token_of(page.text), "confirm": "yes", "reason": "bad <release>"}
    refused = http.post("/runs/cancel?name=ui-bulk.order", data={**form, "csrf": "forged"})
    assert refused.status_code == 403 and "Form refused" in refused.text
    unconfirmed = http.post("/runs/cancel?name=ui-bulk.order", data={**form, "confirm": ""})
    assert unconfirmed.status_code == 400
    assert statuses(store)["u-1"] is Status.ENQUEUED
    done = http.post("/runs/cancel?name=ui-bulk.order", data=form, follow_redirects=False)
    assert done.status_code == 303
    assert done.headers["location"] == "/runs?name=ui-bulk.order&done=cancel&n=4&skipped=1"
    after = statuses(store)
    assert [after[f"u-{i}"] for i in range(5)] == [Status.SUCCESS] + [Status.CANCELLED] * 4
    assert after["keep"] is Status.ENQUEUED
    row = store.get_workflow("u-3")
    assert row is not None and row.error == "bad <release>"
    notice = http.get(done.headers["location"]).text
    assert "Cancelled 4 run(s); 1 skipped (finished already)." in notice
    # Again: nothing left to cancel, said so; a forged count in the address is no notice.
    assert "Nothing to cancel" in http.get("/runs/cancel?name=ui-bulk.order").text
    assert 'id="done"' not in http.get("/runs?name=ui-bulk.order&done=cancel&n=x").text


def test_a_bulk_cancel_with_no_filter_is_refused(http: httpx.Client, store: Store) -> None:
    page = http.get("/runs/cancel")
    assert page.status_code == 400 and "Choose runs first" in page.text
    assert "replaykit workflows cancel --all" in page.text
    token = token_of(http.get("/runs/cancel?status=ENQUEUED").text)
    posted = http.post("/runs/cancel", data={"csrf": token, "confirm": "yes"})
    assert posted.status_code == 400
    assert set(statuses(store).values()) == {Status.ENQUEUED, Status.SUCCESS}
    with pytest.raises(NoFilter):
        preview(store, WorkflowFilter())
    with pytest.raises(NoFilter):
        cancel_selection(store, WorkflowFilter(payloads=False), "")


def test_the_selection_is_the_lists_whole_filter(http: httpx.Client, store: Store) -> None:
    params: Any = {"status": ["ENQUEUED"], "id": "u-", "queue": "ui-bulk-q"}
    page = http.get("/runs/cancel", params=params)
    assert "Cancel 4 run(s)?" in page.text and "4 run(s) match" in page.text
    assert "<code>u-</code>" in page.text
    done = cancel_selection(store, WorkflowFilter(id_prefix="u-", status=Status.ENQUEUED), "")
    assert (done.matched, done.done) == (4, 4)
    row = store.get_workflow("u-1")
    assert row is not None and row.error == "cancelled in bulk from the UI"


def test_the_where_box_selects_for_the_bulk_cancel(created_url: str) -> None:
    """The runs list's Where box (the filter language) is part of the selection the
    bulk cancel counts and cancels, carried through its confirmation and back."""
    with Client(created_url, app_version="v1") as client:
        for i, customer in enumerate(("42", "42", "7")):
            client.enqueue(
                "ui-bulk-q",
                "ui-bulk.order",
                i,
                workflow_id=f"w-{i}",
                delay=3600,
                attributes={"customer": customer},
            )
    store = open_store_for(created_url)
    try:
        with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=15) as http:
            where = "customer = '42'"
            listing = http.get("/runs", params={"where": where})
            assert 'id="bulk-cancel"' in listing.text
            page = http.get("/runs/cancel", params={"where": where})
            assert "Cancel 2 run(s)?" in page.text
            assert "<dt>Where</dt><dd><code>customer = &#39;42&#39;</code></dd>" in page.text
            action = re.search(r'<form method="post" action="([^"]+)"', page.text)
            assert action is not None
            target = action.group(1).replace("&amp;", "&")
            done = http.post(
                target,
                data={"csrf": token_of(page.text), "confirm": "yes"},
                follow_redirects=False,
            )
            assert done.status_code == 303 and "n=2" in done.headers["location"]
            assert "where=customer" in done.headers["location"]
            after = statuses(store)
            assert (after["w-0"], after["w-1"], after["w-2"]) == (
                Status.CANCELLED,
                Status.CANCELLED,
                Status.ENQUEUED,
            )
            bad = http.get("/runs/cancel", params={"where": "customer ="})
            assert bad.status_code == 400
    finally:
        store.close()
