"""The web UI over plain HTTP (a real server on a free loopback port, httpx):
escaping, filters, paging, the confirmation step, the form token, the access
token and the bind rules."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from conftest import wait_for
from replaykit import All, Call, Engine, Race, Recv, SetEvent, Sleep, Start, Step, workflow
from replaykit.log import Record, Status, Value
from replaykit.runtime.engine import open_store_for
from replaykit.stores import MemoryStore
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.ui import create_app
from replaykit.ui._server import check_bind, running
from replaykit.ui._views import LOG_PAGE, composite_parts, count_runs
from replaykit.ui.cli import ui as ui_command

EVIL = "<script>alert('x')</script>"
TOKEN = "s3cret-token-for-the-ui-tests"


class Refused(Exception):
    pass


def double(n: int) -> int:
    return n * 2


def echo(value: Any) -> Any:
    return value


def refuse(why: str) -> None:
    raise Refused(why)


@workflow(name="ui-http-quick")
def quick(n: int) -> Generator[Any, Any, int]:
    value: int = yield Step("double", double, n)
    return value


@workflow(name=f"ui-http-{EVIL}")
def evil_wf(text: str) -> Generator[Any, Any, str]:
    yield Step(f"step {EVIL}", echo, text)
    yield SetEvent(f"key {EVIL}", {"html": EVIL})
    yield Step("refuse", refuse, f"bad input {EVIL}")
    return "unreachable"


@workflow(name="ui-http-child")
def child_wf(n: int) -> Generator[Any, Any, int]:
    value: int = yield Step("double", double, n)
    return value


@workflow(name="ui-http-parent")
def parent_wf() -> Generator[Any, Any, Any]:
    first = yield Step("first", double, 1)
    yield SetEvent("stage", "children")
    both = yield All(Call(child_wf, 2), Call(child_wf, 3))
    yield Start(child_wf, 4)
    winner, message = yield Race(Recv("go"), Sleep(3600))
    return [first, both, winner, message]


@workflow(name="ui-http-waiter")
def waiter_wf() -> Generator[Any, Any, Any]:
    yield Step("prepare", double, 5)
    message = yield Recv("go", timeout=3600)
    return message


@workflow(name="ui-http-guardian")
def guardian_wf() -> Generator[Any, Any, Any]:
    yield Start(waiter_wf)
    message = yield Recv("go", timeout=3600)
    return message


def waiting(engine: Engine, workflow_id: str) -> bool:
    log = engine.steps(workflow_id)
    return bool(log) and log[-1].is_pending


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ui.db'}"


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    with Engine(url, poll_interval=0.05, executor_id="app", app_version="v1") as engine:
        yield engine


@pytest.fixture
def store(url: str, engine: Engine) -> Iterator[Store]:
    """The UI's own connection to the engine's database, as `serve` opens one."""
    store = open_store_for(url)
    yield store
    store.close()


@pytest.fixture
def client(store: Store) -> Iterator[httpx.Client]:
    with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=15) as client:
        yield client


def form_token(page: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page)
    assert match, "the confirmation page has no form token"
    return match.group(1)


# -- escaping -------------------------------------------------------------------------------


def test_every_page_escapes_stored_markup(engine: Engine, client: httpx.Client) -> None:
    run_id = f"run-{EVIL}"
    handle = engine.start(evil_wf, EVIL, workflow_id=run_id)
    wait_for(lambda: handle.status() is Status.ERROR, "the evil run to fail")
    engine.enqueue(f"queue-{EVIL}", quick, 1, workflow_id=f"queued-{EVIL}")
    pages = {
        "runs": client.get("/runs"),
        "runs filtered": client.get("/runs", params={"name": evil_wf.workflow_name}),
        "run": client.get("/run", params={"id": run_id}),
        "fork confirmation": client.get("/fork", params={"id": run_id}),
        "cancel confirmation": client.get("/cancel", params={"id": f"queued-{EVIL}"}),
        "queues": client.get("/queues"),
        "unknown run": client.get("/run", params={"id": f"nope-{EVIL}"}),
    }
    for label, response in pages.items():
        text = response.text
        assert "<script" not in text.lower(), f"raw markup on the {label} page"
        assert "&lt;script&gt;" in text, f"the {label} page does not show the stored text"
    run = pages["run"].text
    # The name, the id, the inputs, a step's name and value, the event and the
    # failure message and traceback are all there, as text.
    assert "ui-http-&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in run
    assert "step &lt;script&gt;" in run
    assert "key &lt;script&gt;" in run
    assert "bad input &lt;script&gt;" in run
    assert "Traceback (most recent call last)" in run
    assert pages["unknown run"].status_code == 404
    assert "queue-&lt;script&gt;" in pages["queues"].text


def test_hidden_characters_are_shown_escaped_but_ids_round_trip(
    engine: Engine, client: httpx.Client, store: Store
) -> None:
    # A right-to-left override would make the id read as something else.
    run_id = "order-\u202e1234"
    engine.start(quick, 1, workflow_id=run_id).result(timeout=15)
    page = client.get("/run", params={"id": run_id}).text
    # Only a hidden form field (never shown) holds it as it is.
    shown = re.sub(r'<input type="hidden"[^>]*>', "", page)
    assert "\u202e" not in shown
    assert "\u202e" in page
    assert "order-\\u202e1234" in page
    # The fork form sends the id back exactly, not its printable form.
    confirm = client.get("/fork", params={"id": run_id})
    assert confirm.status_code == 200
    response = client.post(
        "/fork",
        params={"id": run_id},
        data={"csrf": form_token(confirm.text), "confirm": "yes", "from": "0"},
    )
    assert response.status_code == 303, response.text
    forks = [r for r in store.list_workflows(WorkflowFilter()) if r.workflow_id != run_id]
    assert [r.workflow_id.startswith(run_id + "-fork-") for r in forks] == [True]


def test_security_headers_forbid_scripts_and_referrers(client: httpx.Client) -> None:
    response = client.get("/runs")
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert "script-src" not in response.headers["content-security-policy"]
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["x-frame-options"] == "DENY"
    assert client.get("/static/style.css").headers["content-type"].startswith("text/css")


# -- the runs list ---------------------------------------------------------------------------


def ids_on(page: str) -> list[str]:
    return re.findall(r'<td class="id"><a href="/run\?id=([^"]+)">', page)


def test_runs_are_listed_newest_first_in_pages(engine: Engine, client: httpx.Client) -> None:
    for n in range(12):
        engine.start(quick, n, workflow_id=f"q-{n:02d}").result(timeout=15)
    first = client.get("/runs", params={"per_page": 5}).text
    assert ids_on(first) == ["q-11", "q-10", "q-09", "q-08", "q-07"]
    assert "Runs 1 to 5 of 12, newest first." in first
    assert 'href="/runs?page=2&amp;per_page=5">Older' in first
    last = client.get("/runs", params={"per_page": 5, "page": 3}).text
    assert ids_on(last) == ["q-01", "q-00"]
    assert "Runs 11 to 12 of 12" in last
    assert "page 3 of 3" in last
    # A page past the end shows the last one rather than nothing.
    assert ids_on(client.get("/runs", params={"per_page": 5, "page": 9}).text) == ["q-01", "q-00"]


def test_runs_filter_by_status_name_and_queue(engine: Engine, client: httpx.Client) -> None:
    engine.start(quick, 1, workflow_id="done-1").result(timeout=15)
    failed = engine.start(evil_wf, "x", workflow_id="failed-1")
    wait_for(lambda: failed.status() is Status.ERROR, "the run to fail")
    engine.enqueue("mail", quick, 2, workflow_id="queued-mail")
    engine.enqueue("other", quick, 3, workflow_id="queued-other")

    def listed(**params: Any) -> list[str]:
        response = client.get("/runs", params=params)
        assert response.status_code == 200, response.text
        return ids_on(response.text)

    assert listed(status="ERROR") == ["failed-1"]
    assert listed(status=["SUCCESS", "ERROR"]) == ["failed-1", "done-1"]
    assert listed(status="enqueued") == ["queued-other", "queued-mail"]
    assert listed(name="ui-http-quick") == ["queued-other", "queued-mail", "done-1"]
    assert listed(queue="mail") == ["queued-mail"]
    assert listed(queue="mail", status="SUCCESS") == []
    checked = client.get("/runs", params={"status": "ERROR", "queue": "mail"}).text
    assert 'value="ERROR" checked' in checked
    assert 'name="queue" value="mail"' in checked
    bad = client.get("/runs", params={"status": "DONE"})
    assert bad.status_code == 400
    assert "&#39;DONE&#39; is not a status" in bad.text


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 64, 100])
def test_count_runs_is_exact(n: int) -> None:
    store = MemoryStore()
    for i in range(n):
        store.create_workflow(WorkflowRow(f"r{i}", "wf" if i % 3 else "other", Status.SUCCESS))
    assert count_runs(store, WorkflowFilter()) == n
    assert count_runs(store, WorkflowFilter(name="other")) == len(range(0, n, 3))


def test_composite_names_are_split_into_their_children() -> None:
    assert composite_parts("recv:go|sleep:sleep") == [("recv", "go"), ("sleep", "sleep")]
    assert composite_parts("all(step:a|recv:b)|recv:") == [("all", "step:a|recv:b"), ("recv", "")]


# -- one run ---------------------------------------------------------------------------------


def test_run_page_shows_timeline_children_inbox_and_events(
    engine: Engine, client: httpx.Client
) -> None:
    engine.start(parent_wf, workflow_id="parent")
    # The All's record is pending too while its children run: wait for the Race's.
    wait_for(
        lambda: len(engine.steps("parent")) == 5 and waiting(engine, "parent"),
        "the parent to wait in its Race",
    )
    engine.send("parent", {"note": "for later"}, topic="later")
    page = client.get("/run", params={"id": "parent", "topic": "later"}).text
    rows = re.findall(r'<tr class="step (\w+)" id="pos-(\d+)">', page)
    assert rows == [("ok", "0"), ("ok", "1"), ("ok", "2"), ("ok", "3"), ("pending", "4")]
    assert page.count('<rect class="bar ') == 5
    # The All's children, each with its outcome; the Race is still under way.
    assert "all 2 finished" in page
    assert "[0] call ui-http-child: ok 4" in page
    assert "[1] call ui-http-child: ok 6" in page
    # Children as a tree, each linked.
    for child in ("parent:2.0", "parent:2.1", "parent:3"):
        assert f'<a href="/run?id={child.replace(":", "%3A")}">{child}</a>' in page
    # The inbox looked at the topics the log receives on and the one asked for.
    assert "&#34;for later&#34;" in page or "&quot;for later&quot;" in page
    assert "(default), go, later" in page
    assert "stage" in page and "&#34;children&#34;" in page
    assert 'id="cancel"' in page and 'id="resume"' not in page


def test_failed_run_shows_its_error_and_traceback(engine: Engine, client: httpx.Client) -> None:
    handle = engine.start(evil_wf, "text", workflow_id="fails")
    wait_for(lambda: handle.status() is Status.ERROR, "the run to fail")
    page = client.get("/run", params={"id": "fails"}).text
    assert 'id="failure"' in page
    assert "Failed: test_ui_http.Refused" in page
    assert re.search(r'<pre class="traceback">Traceback \(most recent call last\):', page)
    assert "raise Refused(why)" in page
    assert '<tr class="step error" id="pos-2">' in page
    assert 'id="cancel"' not in page  # a finished run is not cancelled


def test_a_pending_run_no_engine_runs_says_why_it_waits(
    engine: Engine, client: httpx.Client, store: Store
) -> None:
    # Stamped with a version no running engine has: the engine (v1) never takes it.
    store.create_workflow(
        WorkflowRow("old-version", quick.workflow_name, Status.PENDING, executor_id="app",
                    app_version="v0", inputs={"args": [1], "kwargs": {}})
    )  # fmt: skip
    page = client.get("/run", params={"id": "old-version"}).text
    notice = re.search(r'<p class="notice warn" id="waiting">Waiting: (.*?)</p>', page)
    assert notice, page
    assert "waits for an engine of version &#39;v0&#39;" in notice.group(1)
    assert "engines running: version &#39;v1&#39; (app)" in notice.group(1)
    # A run its engine runs has nothing of the kind.
    engine.start(waiter_wf, workflow_id="listening")
    wait_for(lambda: waiting(engine, "listening"), "the run to wait")
    assert 'id="waiting"' not in client.get("/run", params={"id": "listening"}).text


# -- actions -----------------------------------------------------------------------------------


def test_cancel_needs_confirmation_and_the_form_token(
    engine: Engine, client: httpx.Client, store: Store
) -> None:
    engine.start(waiter_wf, workflow_id="waits")
    wait_for(lambda: waiting(engine, "waits"), "the run to wait")
    confirm = client.get("/cancel", params={"id": "waits"})
    assert confirm.status_code == 200
    assert "Yes, cancel waits" in confirm.text
    token = form_token(confirm.text)

    def status() -> Status:
        row = store.get_workflow("waits")
        assert row is not None
        return row.status

    no_token = client.post("/cancel", params={"id": "waits"}, data={"confirm": "yes"})
    assert no_token.status_code == 403
    wrong = client.post("/cancel", params={"id": "waits"}, data={"csrf": "x", "confirm": "yes"})
    assert wrong.status_code == 403
    cross_site = client.post(
        "/cancel",
        params={"id": "waits"},
        data={"csrf": token, "confirm": "yes"},
        headers={"origin": "http://evil.example"},
    )
    assert cross_site.status_code == 403
    fetched_cross_site = client.post(
        "/cancel",
        params={"id": "waits"},
        data={"csrf": token, "confirm": "yes"},
        headers={"sec-fetch-site": "cross-site"},
    )
    assert fetched_cross_site.status_code == 403
    unconfirmed = client.post("/cancel", params={"id": "waits"}, data={"csrf": token})
    assert unconfirmed.status_code == 400
    assert status() is Status.PENDING

    done = client.post(
        "/cancel",
        params={"id": "waits"},
        data={"csrf": token, "confirm": "yes", "children": "yes"},
        headers={"origin": str(client.base_url).rstrip("/")},
    )
    assert done.status_code == 303
    assert done.headers["location"] == "/run?id=waits&done=cancel"
    assert status() is Status.CANCELLED
    page = client.get(done.headers["location"]).text
    assert 'id="status">CANCELLED' in page
    assert "Cancelled. An engine running it stops at its next record" in page
    again = client.post("/cancel", params={"id": "waits"}, data={"csrf": token, "confirm": "yes"})
    assert again.status_code == 409
    assert "already CANCELLED" in again.text


def test_cancel_takes_the_children_along_unless_told(
    engine: Engine, client: httpx.Client, store: Store
) -> None:
    for parent in ("with", "without"):
        engine.start(guardian_wf, workflow_id=parent)
        wait_for(lambda p=parent: waiting(engine, p), "the parent to wait")
        wait_for(lambda p=parent: waiting(engine, f"{p}:0"), "its child to wait")
    token = form_token(client.get("/cancel", params={"id": "with"}).text)
    for parent, children in (("with", "yes"), ("without", None)):
        form = {"csrf": token, "confirm": "yes", "children": children}
        response = client.post("/cancel", params={"id": parent}, data=form)
        assert response.status_code == 303

    def status(workflow_id: str) -> Status:
        row = store.get_workflow(workflow_id)
        assert row is not None
        return row.status

    assert status("with") is Status.CANCELLED and status("with:0") is Status.CANCELLED
    assert status("without") is Status.CANCELLED and status("without:0") is Status.PENDING


def test_resume_and_fork_go_through_the_store(
    engine: Engine, client: httpx.Client, store: Store
) -> None:
    engine.start(waiter_wf, workflow_id="w")
    wait_for(lambda: waiting(engine, "w"), "the run to wait")
    engine.terminate("w")  # the hard stop: a resume goes on from its log
    page = client.get("/run", params={"id": "w"}).text
    assert 'id="resume"' in page and 'id="cancel"' not in page
    token = form_token(client.get("/resume", params={"id": "w"}).text)
    response = client.post(
        "/resume", params={"id": "w"}, data={"csrf": token, "confirm": "yes", "executor": "app"}
    )
    assert response.status_code == 303
    row = store.get_workflow("w")
    assert row is not None and row.status is Status.PENDING and row.executor_id == "app"
    # The engine that has the code carries it on: the message finishes it.
    engine.send("w", "hello", topic="go")
    assert engine.handle("w").result(timeout=15) == "hello"
    assert client.get("/resume", params={"id": "w"}).status_code == 409

    fork_page = client.get("/fork", params={"id": "w", "from": "1"}).text
    assert '<option value="1" selected>1: recv go</option>' in fork_page
    response = client.post(
        "/fork",
        params={"id": "w"},
        data={"csrf": token, "confirm": "yes", "from": "1", "new_id": "w-again"},
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/run?id=w-again&done=fork"
    fork = store.get_workflow("w-again")
    assert fork is not None and fork.status is Status.PENDING
    assert [r.kind for r in store.load_log("w-again")[:1]] == ["step"]
    fork_view = client.get("/run", params={"id": "w-again"}).text
    assert '<dd id="forked-from"><a href="/run?id=w">w</a> at position 1</dd>' in fork_view
    assert "No forks of this run." in fork_view
    source_view = client.get("/run", params={"id": "w"}).text
    assert '<a href="/run?id=w-again">w-again</a> at position 1 (PENDING)' in source_view
    assert 'id="forked-from"' not in source_view
    taken = client.post(
        "/fork",
        params={"id": "w"},
        data={"csrf": token, "confirm": "yes", "from": "1", "new_id": "w-again"},
    )
    assert taken.status_code == 409 and "that id is taken" in taken.text
    beyond = client.post(
        "/fork", params={"id": "w"}, data={"csrf": token, "confirm": "yes", "from": "9"}
    )
    assert beyond.status_code == 409 and "pick a position from 0 to" in beyond.text


def test_a_post_without_the_page_does_not_resume_a_pending_run(
    client: httpx.Client, store: Store
) -> None:
    # The confirmation page offers no resume of a PENDING run; the POST must not
    # move it to another executor behind the page's back either.
    store.create_workflow(WorkflowRow("busy", "some.wf", Status.PENDING, executor_id="a"))
    assert client.get("/resume", params={"id": "busy"}).status_code == 409
    token = form_token(client.get("/cancel", params={"id": "busy"}).text)
    response = client.post(
        "/resume", params={"id": "busy"}, data={"csrf": token, "confirm": "yes", "executor": "b"}
    )
    assert response.status_code == 409
    assert "only CANCELLED and PARKED runs are resumed" in response.text
    row = store.get_workflow("busy")
    assert row is not None and row.executor_id == "a"


def test_queue_overview_counts_waiting_delayed_and_running(
    engine: Engine, client: httpx.Client
) -> None:
    for n in range(3):
        engine.enqueue("mail", quick, n)
    engine.enqueue("mail", quick, 9, delay=3600)
    engine.enqueue("reports", quick, 1, delay=3600)
    page = client.get("/queues").text
    rows = re.findall(
        r'<td><a href="/runs\?queue=(\w+)">\w+</a></td>\s*'
        r'<td class="num"><a [^>]+>(\d+)</a></td>\s*<td class="num">(\d+)</td>\s*'
        r'<td class="num"><a [^>]+>(\d+)</a></td>',
        page,
    )
    assert rows == [("mail", "3", "1", "0"), ("reports", "0", "1", "0")]
    assert '<td class="num keys">-</td>' in page  # no run of theirs has a partition key


def test_queue_overview_shows_partition_keys_and_runs_filter_by_key(
    engine: Engine, client: httpx.Client
) -> None:
    engine.enqueue_many("tenants", quick, [(n,) for n in range(3)], partition_key="acme")
    engine.enqueue("tenants", quick, 7, partition_key="globex", delay=3600)
    engine.enqueue("tenants", quick, 8, delay=3600)
    page = client.get("/queues").text
    assert '<td class="num keys">3</td>' in page
    busiest = re.search(r'<td class="busiest">(.*?)</td>', page)
    assert busiest is not None
    assert busiest.group(1) == (
        '<a href="/runs?queue=tenants&amp;partition_key=acme">acme</a> 3/0, '
        "(no key) 1/0, "
        '<a href="/runs?queue=tenants&amp;partition_key=globex">globex</a> 1/0'
    )
    runs = client.get("/runs", params={"queue": "tenants", "partition_key": "globex"}).text
    assert "Runs 1 to 1 of 1" in runs and 'name="partition_key" value="globex"' in runs


# -- who may come in ---------------------------------------------------------------------------


def test_a_request_naming_another_host_is_refused(client: httpx.Client) -> None:
    # A DNS-rebinding page would reach 127.0.0.1 under a name of its own.
    response = client.get("/runs", headers={"host": "evil.example"})
    assert response.status_code == 400
    assert "listens on this machine only" in response.text
    assert client.get("/runs", headers={"host": "localhost:8700"}).status_code == 200
    assert client.get("/runs", headers={"host": "[::1]:8700"}).status_code == 200


def test_a_token_is_required_on_every_request(store: Store) -> None:
    app = create_app(store, token=TOKEN, local_only=False)
    with running(app) as base, httpx.Client(base_url=base, timeout=15) as client:
        refused = client.get("/runs")
        assert refused.status_code == 401
        assert "needs its token" in refused.text
        assert client.get("/runs", headers={"x-replaykit-token": "wrong"}).status_code == 401
        assert client.get("/static/style.css").status_code == 401
        bearer = client.get("/runs", headers={"authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 200
        assert client.get("/runs", headers={"x-replaykit-token": TOKEN}).status_code == 200
        # ?token= once: swapped for a cookie, and the URL loses it.
        swapped = client.get("/runs", params={"token": TOKEN, "status": "ERROR"})
        assert swapped.status_code == 303
        assert swapped.headers["location"] == "/runs?status=ERROR"
        cookie = swapped.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert client.get("/runs?status=ERROR").status_code == 200  # the cookie now
        # The swap never sends the browser to another site (`//evil.example/`).
        client.cookies.clear()
        offsite = client.get(base + "//evil.example/x", params={"token": TOKEN})
        assert offsite.status_code == 303
        assert offsite.headers["location"] == "/evil.example/x"
        client.cookies.clear()
        assert client.get("/runs").status_code == 401


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.com", "10.0.0.1"])
def test_a_non_local_bind_needs_a_token(host: str) -> None:
    with pytest.raises(ValueError, match="without a token"):
        check_bind(host, None)
    check_bind(host, TOKEN)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_a_local_bind_needs_no_token(host: str) -> None:
    check_bind(host, None)


def test_a_short_token_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        check_bind("0.0.0.0", "short")


def test_the_command_refuses_a_non_local_bind_without_a_token(url: str, engine: Engine) -> None:
    result = CliRunner().invoke(ui_command, ["--url", url, "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to listen on '0.0.0.0' without a token" in result.output


def test_the_command_refuses_a_missing_database(tmp_path: Path) -> None:
    result = CliRunner().invoke(ui_command, ["--url", f"sqlite:///{tmp_path / 'none.db'}"])
    assert result.exit_code == 2
    assert "no SQLite database at" in result.output
    assert not (tmp_path / "none.db").exists()


def test_python_dash_m_serves_the_ui(url: str, engine: Engine) -> None:
    engine.start(quick, 1, workflow_id="served").result(timeout=15)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "replaykit.ui", "--url", url, "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        match = re.search(r"on (http://127\.0\.0\.1:\d+)/", line)
        assert match, line
        response = httpx.get(match.group(1) + "/runs", timeout=10)
        assert response.status_code == 200
        assert ids_on(response.text) == ["served"]
    finally:
        process.terminate()
        process.wait(timeout=15)
        if process.stderr is not None:
            process.stderr.close()


# -- reads that scale: counts, lists without payloads, a paged timeline ------------------------


class Recording:
    """A store that notes each call the UI makes of it (name and arguments)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if not callable(found):
            return found

        def noted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return found(*args, **kwargs)

        return noted

    def of(self, name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
        return [(args, kwargs) for called, args, kwargs in self.calls if called == name]


BIG_INPUT = "i" * 200_000


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'count.db'}"
        store = open_store_for(url)
    else:
        from conftest import PG_URL, drop_schema, fresh_schema_name, require_postgres

        require_postgres()
        schema = fresh_schema_name("ui_count")
        store = open_store_for(f"{PG_URL}?schema={schema}")
        request.addfinalizer(lambda: drop_schema(schema))
    yield store
    store.close()


def test_a_filtered_page_counts_with_the_store_and_reads_no_payload(any_store: Store) -> None:
    for n in range(23):
        any_store.create_workflow(
            WorkflowRow(
                f"big-{n:02d}",
                "ui-http-big",
                Status.ENQUEUED if n % 2 else Status.PENDING,
                inputs={"args": [BIG_INPUT], "kwargs": {}},
                queue="bulk",
            )
        )
    recording = Recording(any_store)
    with running(create_app(recording)) as base, httpx.Client(base_url=base, timeout=15) as http:
        page = http.get("/runs", params={"queue": "bulk", "status": "ENQUEUED", "per_page": 5})
        assert page.status_code == 200, page.text
        assert "Runs 1 to 5 of 11, newest first." in page.text
        assert ids_on(page.text) == ["big-21", "big-19", "big-17", "big-15", "big-13"]
        # Two counts (the page's, and one grouped by status for the counts bar, with the
        # other filters) and one read of the page's own rows, without their inputs.
        [(counted, _)] = recording.of("count_workflows")
        assert counted[0].queue == "bulk" and counted[0].statuses() == (Status.ENQUEUED,)
        [(grouped, _)] = recording.of("count_workflows_by")
        assert grouped[0].queue == "bulk" and grouped[0].status is None
        assert grouped[1] == "status"
        assert (
            'class="chip s-enqueued" href="/runs?status=ENQUEUED&amp;queue=bulk">ENQUEUED 11'
            in (page.text)
        )
        listings = recording.of("list_workflows")
        assert len(listings) == 1 and listings[0][0][0].payloads is False
        assert listings[0][0][0].limit == 5
        recording.calls.clear()
        queues = http.get("/queues")
        assert queues.status_code == 200
        assert all(args[0].payloads is False for args, _ in recording.of("list_workflows"))
        assert BIG_INPUT[:1000] not in page.text + queues.text
    assert any_store.count_workflows(WorkflowFilter(queue="bulk")) == 23


def test_a_long_timeline_is_shown_a_page_at_a_time(store: Store, client: httpx.Client) -> None:
    store.create_workflow(WorkflowRow("long-run", "ui-http-long", Status.PENDING))
    for position in range(300):
        store.record("long-run", Record(position, "step", f"s{position}", Value(position)))
    first = client.get("/run", params={"id": "long-run"})
    assert first.status_code == 200
    shown = [int(p) for p in re.findall(r'id="pos-(\d+)"', first.text)]
    assert shown == list(range(LOG_PAGE))
    assert f"Positions 0 to {LOG_PAGE - 1}" in first.text
    assert f'href="/run?id=long-run&amp;since={LOG_PAGE}"' in first.text
    second = client.get("/run", params={"id": "long-run", "since": LOG_PAGE})
    shown = [int(p) for p in re.findall(r'id="pos-(\d+)"', second.text)]
    assert shown == list(range(LOG_PAGE, 300))
    assert 'class="log-next"' not in second.text
    assert 'class="log-previous" href="/run?id=long-run"' in second.text
    past = client.get("/run", params={"id": "long-run", "since": 5000})
    assert past.status_code == 200 and "The log ends before position 5000" in past.text
    assert client.get("/run", params={"id": "long-run", "since": "x"}).status_code == 400


def test_the_timeline_reads_only_its_page_of_the_log(store: Store) -> None:
    store.create_workflow(WorkflowRow("paged", "ui-http-long", Status.PENDING))
    for position in range(250):
        store.record("paged", Record(position, "step", f"s{position}", Value(position)))
    recording = Recording(store)
    with running(create_app(recording)) as base, httpx.Client(base_url=base, timeout=15) as http:
        assert http.get("/run", params={"id": "paged", "since": 200}).status_code == 200
    [(_args, kwargs)] = recording.of("load_log")
    assert kwargs == {"since": 200, "limit": LOG_PAGE + 1}


def test_pages_are_rendered_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, engine: Engine, store: Store
) -> None:
    import asyncio

    from replaykit.ui import _app

    on_loop: list[bool] = []
    real_link = _app.link

    def noting_link(path: str, **params: Any) -> str:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:
            on_loop.append(False)
        return real_link(path, **params)

    monkeypatch.setattr(_app, "link", noting_link)
    engine.start(quick, 1, workflow_id="rendered").result(timeout=15)
    with running(create_app(store)) as base, httpx.Client(base_url=base, timeout=15) as http:
        for path in ("/runs", "/run?id=rendered", "/queues", "/cancel?id=rendered"):
            http.get(path)
    assert on_loop and not any(on_loop)


@pytest.mark.parametrize(
    "path",
    ["/run?id=a%00b", "/cancel?id=%00", "/fork?id=x%00", "/runs?name=a%00", "/runs?queue=%00q"],
)
def test_a_nul_in_a_query_is_a_bad_request(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 400, response.text
    assert "NUL" in response.text or "\\x00" in response.text


def test_a_ui_with_the_wrong_codec_key_says_the_key_does_not_match(tmp_path: Path) -> None:
    from test_codec import Salted

    from replaykit.stores.codec import CodecStore

    url = f"sqlite:///{tmp_path / 'keyed.db'}"
    store = open_store_for(url)
    try:
        CodecStore(store, Salted(salt=b"key1")).create_workflow(
            WorkflowRow("secret-run", "wf", Status.PENDING, inputs={"args": [1], "kwargs": {}})
        )
        wrong = CodecStore(store, Salted(salt=b"key2"))
        with running(create_app(wrong)) as base, httpx.Client(base_url=base, timeout=15) as http:
            page = http.get("/run", params={"id": "secret-run"})
            listed = http.get("/runs")
    finally:
        store.close()
    assert page.status_code == 409
    assert "does not match" in page.text and "not damaged" in page.text
    assert "workflows delete" not in page.text
    assert listed.status_code == 200 and "secret-run" in listed.text


def test_runs_filter_by_creation_time_refresh_and_show_durations(
    store: Store, client: httpx.Client
) -> None:
    from datetime import UTC, datetime, timedelta

    base = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
    for n in range(4):
        created = base + timedelta(hours=n)
        store.create_workflow(
            WorkflowRow(
                f"timed-{n}",
                "ui-http-timed",
                Status.SUCCESS,
                created_at=created,
                updated_at=created + timedelta(seconds=90),
            )
        )
    page = client.get(
        "/runs",
        params={"name": "ui-http-timed", "from": "2030-01-01T10:00", "to": "2030-01-01T12:00"},
    )
    assert page.status_code == 200
    assert ids_on(page.text) == ["timed-2", "timed-1"]
    assert 'value="2030-01-01T10:00"' in page.text and "90.0 s" in page.text
    assert 'class="chip s-success" href="/runs?status=SUCCESS&amp;name=ui-http-timed' in page.text
    assert 'http-equiv="refresh"' not in page.text
    refreshing = client.get("/runs", params={"refresh": "5"})
    assert '<meta http-equiv="refresh" content="5">' in refreshing.text
    bad = client.get("/runs", params={"from": "yesterday"})
    assert bad.status_code == 400 and "type it as 2026-12-04T09:30 (UTC)" in bad.text
    assert 'action="/run" id="open-run"' in page.text


def test_a_run_page_downloads_its_history_and_sends_a_message(
    engine: Engine, client: httpx.Client
) -> None:
    import json

    from replaykit.log import Log

    engine.start(waiter_wf, workflow_id="asks <you>")
    wait_for(lambda: waiting(engine, "asks <you>"), "the run to wait")
    page = client.get("/run", params={"id": "asks <you>"})
    token = form_token(page.text)
    assert 'id="send"' in page.text and 'id="download"' in page.text
    download = client.get("/run.json", params={"id": "asks <you>"})
    assert download.status_code == 200
    assert download.headers["content-disposition"] == 'attachment; filename="asks__you_.json"'
    assert Log.from_json(download.text).workflow_id == "asks <you>"
    refused = client.post(
        "/send", params={"id": "asks <you>"}, data={"topic": "go", "message": "1", "confirm": "yes"}
    )
    assert refused.status_code == 403
    bad = client.post(
        "/send",
        params={"id": "asks <you>"},
        data={"topic": "go", "message": "{oops", "csrf": token, "confirm": "yes"},
    )
    assert bad.status_code == 400 and "not JSON" in bad.text
    sent = client.post(
        "/send",
        params={"id": "asks <you>"},
        data={"topic": "go", "message": json.dumps({"ok": 1}), "csrf": token, "confirm": "yes"},
        follow_redirects=True,
    )
    assert sent.status_code == 200 and "Sent: the message waits" in sent.text
    assert engine.handle("asks <you>").result(timeout=20) == {"ok": 1}


def test_runs_search_by_id_prefix_on_every_store(any_store: Store) -> None:
    for wid in ("order-7-a", "order-7-b", "order-70", "order-8", "ORDER-7-c", "order_7"):
        any_store.create_workflow(WorkflowRow(wid, "ui-http-prefix", Status.SUCCESS))
    with running(create_app(any_store)) as base, httpx.Client(base_url=base, timeout=15) as http:
        page = http.get("/runs", params={"id": "order-7"})
        assert page.status_code == 200, page.text
        assert sorted(ids_on(page.text)) == ["order-7-a", "order-7-b", "order-70"]
        assert 'name="id" value="order-7"' in page.text
        # The counts bar keeps the search: its links carry the prefix.
        assert 'class="chip s-success" href="/runs?id=order-7&amp;status=SUCCESS' in page.text
        # No wildcards: _ is a character, as % is.
        assert ids_on(http.get("/runs", params={"id": "order_"}).text) == ["order_7"]
        assert "No runs match." in http.get("/runs", params={"id": "%"}).text
        nul = http.get("/runs", params={"id": "a\x00b"})
        assert nul.status_code == 400 and "NUL" in nul.text


def test_a_run_page_refreshes_when_asked(engine: Engine, client: httpx.Client) -> None:
    engine.start(waiter_wf, workflow_id="watched")
    wait_for(lambda: waiting(engine, "watched"), "the run to wait")
    page = client.get("/run", params={"id": "watched"})
    assert page.status_code == 200 and 'id="refresh"' in page.text
    assert 'http-equiv="refresh"' not in page.text
    refreshing = client.get("/run", params={"id": "watched", "refresh": "3"})
    assert '<meta http-equiv="refresh" content="3">' in refreshing.text
    assert 'name="refresh" value="3"' in refreshing.text
    capped = client.get("/run", params={"id": "watched", "refresh": "99999"})
    assert '<meta http-equiv="refresh" content="3600">' in capped.text
    bad = client.get("/run", params={"id": "watched", "refresh": "soon"})
    assert bad.status_code == 400 and "refresh=" in bad.text


def test_the_runs_list_searches_by_a_filter_and_shows_attributes(any_store: Store) -> None:
    evil = "<script>alert(1)</script>"
    for n, (customer, plan) in enumerate((("42", "pro"), ("42", "free"), ("7", "pro"))):
        any_store.create_workflow(
            WorkflowRow(
                f"attr-{n}",
                "ui-http-attr",
                Status.ERROR if n == 1 else Status.SUCCESS,
                attributes={"customer": customer, "plan": plan, "note": evil, "seats": n},
            )
        )
    with running(create_app(any_store)) as base, httpx.Client(base_url=base, timeout=15) as http:
        page = http.get("/runs", params={"where": "customer = '42' and plan in ('pro', 'team')"})
        assert page.status_code == 200, page.text
        assert ids_on(page.text) == ["attr-0"]
        assert "Runs 1 to 1 of 1, newest first." in page.text
        # Each attribute is a link to the runs that share it; values are escaped.
        assert 'href="/runs?where=customer+%3D+%2742%27">customer=42</a>' in page.text
        assert 'href="/runs?where=seats+%3D+0">seats=0</a>' in page.text
        assert evil not in page.text and "&lt;script&gt;" in page.text
        # The filter stays with the status chips and the pages.
        assert "status=ERROR&amp;where=customer" in page.text or (
            "where=customer+%3D+%2742%27+and+plan" in page.text
        )
        both = http.get("/runs", params={"where": "customer = '42'", "status": "ERROR"})
        assert ids_on(both.text) == ["attr-1"]
        none = http.get("/runs", params={"where": "region = 'eu'"})
        assert none.status_code == 200 and "No runs match." in none.text
        bad = http.get("/runs", params={"where": "customer = = '42'"})
        assert bad.status_code == 400
        assert "column 12" in bad.text and "customer = = &#39;42&#39;" in bad.text
        run = http.get("/run", params={"id": "attr-2"})
        assert 'id="attributes"' in run.text and ">plan=pro</a>" in run.text
