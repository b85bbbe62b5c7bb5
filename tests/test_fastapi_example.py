"""examples/fastapi_app.py served by real uvicorn processes, on SQLite and PostgreSQL.

Each server is a subprocess on a free port of 127.0.0.1, driven over HTTP with
httpx. The example's step bodies append to a ledger file (CHECKOUT_LEDGER), so
the restart tests can count how often each body really ran across a kill.
tests/apps/slow_checkout.py is the same app with a slow payment provider, to
stop a server while the charge step is running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import PG_URL, drop_schema, fresh_schema_name, require_postgres

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fastapi_app.py"
APP = "examples.fastapi_app:app"
SLOW_APP = "tests.apps.slow_checkout:app"
STORES = ["sqlite", "postgres"]

Order = dict[str, Any]
# What every server starts from: this process's environment, but none of the
# variables the example reads (each test sets its own).
CLEAN_ENV = {
    **{
        key: value
        for key, value in os.environ.items()
        if key not in ("REPLAYKIT_URL", "CHECKOUT_LEDGER", "SLOW_CHARGE_SECONDS")
    },
    "PYTHONPATH": str(ROOT),
}


@contextlib.contextmanager
def fresh_store(kind: str, directory: Path, hint: str) -> Iterator[str]:
    """A SQLite file in `directory`, or a PostgreSQL schema of its own (dropped after)."""
    if kind == "sqlite":
        yield f"sqlite:///{directory / 'shop.db'}"
        return
    require_postgres()  # a skip on a laptop without PostgreSQL, a failure in CI
    schema = fresh_schema_name(hint)
    try:
        yield f"{PG_URL}?schema={schema}"
    finally:
        drop_schema(schema)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """One server process: `python -m uvicorn APP`, or the example run as a script."""

    def __init__(self, command: list[str], directory: Path, env: dict[str, str]) -> None:
        for _attempt in range(3):  # another process may take the port before uvicorn binds it
            self.port = free_port()
            self.base_url = f"http://127.0.0.1:{self.port}"
            self.log_path = directory / f"server-{self.port}.log"
            with self.log_path.open("w") as log:
                self.process = subprocess.Popen(
                    [*command, "--port", str(self.port)],
                    cwd=directory,
                    env={**CLEAN_ENV, **env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            # uvicorn listens once the lifespan has opened the engine.
            wait_for(self._up_or_exited, f"the server on port {self.port} to listen", self, 30)
            if self.process.poll() is None:
                return
            if "address already in use" not in self.log():
                break
        raise AssertionError(f"the server exited ({self.process.returncode}):\n{self.log()}")

    def _up_or_exited(self) -> bool:
        if self.process.poll() is not None:
            return True
        try:
            httpx.get(f"{self.base_url}/orders/-", timeout=1)
        except httpx.TransportError:
            return False
        return True

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, how: signal.Signals) -> int:
        self.process.send_signal(how)
        return self.process.wait(timeout=30)

    def terminate(self) -> None:
        """A clean stop: SIGTERM, then the lifespan closes the engine (running steps commit)."""
        # uvicorn shuts down gracefully, then re-raises the signal: the exit code is -SIGTERM.
        returncode = self.stop(signal.SIGTERM)
        log = self.log()
        assert returncode in (0, -signal.SIGTERM), log
        assert "Application shutdown complete." in log and "Traceback" not in log, log

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def wait_for(
    check: Callable[[], Any], what: str, server: Server | None = None, timeout: float = 20
) -> Any:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            log = f"\nserver log:\n{server.log()}" if server else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{log}")
        time.sleep(0.05)
    return found


def wait_for_order(
    server: Server, client: httpx.Client, order_id: str, done: Callable[[Order], bool], what: str
) -> Order:
    def check() -> Order | None:
        response = client.get(f"/orders/{order_id}")
        assert response.status_code == 200, response.text
        order: Order = response.json()
        return order if done(order) else None

    result: Order = wait_for(check, f"order {order_id} to be {what}", server)
    return result


def awaiting(order: Order) -> bool:
    return order.get("stage") == "awaiting confirmation"


def finished(order: Order) -> bool:
    return order["status"] in ("SUCCESS", "ERROR", "CANCELLED")


def ran(ledger: Path, order_id: str) -> Counter[str]:
    """How many times each step body ran for `order_id`."""
    if not ledger.exists():
        return Counter()
    lines = [line.split() for line in ledger.read_text().splitlines()]
    return Counter(step for step, order in lines if order == order_id)


class Shop:
    """A store, a ledger and the servers started on them (killed at teardown)."""

    def __init__(self, url: str, directory: Path) -> None:
        self.url = url
        self.directory = directory
        self.ledger = directory / "ledger.txt"
        self.servers: list[Server] = []

    def serve(self, app: str = APP, **env: str) -> Server:
        env = {"REPLAYKIT_URL": self.url, "CHECKOUT_LEDGER": str(self.ledger), **env}
        server = Server([sys.executable, "-m", "uvicorn", app], self.directory, env)
        self.servers.append(server)
        return server

    def close(self) -> None:
        for server in self.servers:
            server.kill()


@pytest.fixture(scope="module", params=STORES)
def api(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Shop, Server]]:
    """One server per store for the tests that need no restart."""
    directory = tmp_path_factory.mktemp(f"api-{request.param}")
    with fresh_store(request.param, directory, "fastapi_api") as url:
        shop = Shop(url, directory)
        try:
            yield shop, shop.serve()
        finally:
            shop.close()


@pytest.fixture(params=STORES)
def shop(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Shop]:
    """A fresh store of its own, for a test that restarts servers on it."""
    with fresh_store(request.param, tmp_path, request.node.name) as url:
        shop = Shop(url, tmp_path)
        try:
            yield shop
        finally:
            shop.close()


# -- the API -------------------------------------------------------------------------------


def test_happy_path(api: tuple[Shop, Server]) -> None:
    shop, server = api
    order = {"order_id": "happy-1", "items": ["book", "pen"], "amount": 4200}
    with server.client() as client:
        created = client.post("/orders", json=order)
        assert created.status_code == 201, created.text
        assert created.json() == {"order_id": "happy-1"}
        wait_for_order(server, client, "happy-1", awaiting, "awaiting confirmation")
        again = client.post("/orders", json=order)  # idempotent by id
        assert again.status_code == 201 and again.json() == {"order_id": "happy-1"}

        confirmed = client.post("/orders/happy-1/confirm", json={"by": "alice"})
        assert confirmed.status_code == 202, confirmed.text
        done = wait_for_order(server, client, "happy-1", finished, "finished")
    assert done == {
        "order_id": "happy-1",
        "status": "SUCCESS",
        "result": {
            "outcome": "shipped",
            "charge": "ch_happy-1",
            "parcel": "parcel-happy-1",
            "confirmed_by": "alice",
        },
    }
    assert ran(shop.ledger, "happy-1") == {"charge": 1, "ship": 1}


def test_an_id_posted_again_with_another_order_is_409(api: tuple[Shop, Server]) -> None:
    shop, server = api
    order = {"order_id": "twice-1", "items": ["kettle"], "amount": 3000}
    with server.client() as client:
        assert client.post("/orders", json=order).status_code == 201
        other = client.post("/orders", json={**order, "amount": 3100})
        assert other.status_code == 409, other.text
        detail = other.json()["detail"]
        assert detail.startswith("cannot start workflow 'checkout' under id 'twice-1' with ")
        assert "started with other arguments" in detail and "use another id" in detail
        wait_for_order(server, client, "twice-1", awaiting, "awaiting confirmation")
        # The first order is untouched, and nobody was charged for the second body.
        assert client.post("/orders", json=order).status_code == 201
    assert ran(shop.ledger, "twice-1") == {"charge": 1}


def test_an_order_without_id_gets_one(api: tuple[Shop, Server]) -> None:
    _, server = api
    with server.client() as client:
        created = client.post("/orders", json={"items": ["mug"], "amount": 900})
        assert created.status_code == 201, created.text
        order_id = created.json()["order_id"]
        assert order_id.startswith("order-")
        assert client.get(f"/orders/{order_id}").json()["status"] == "PENDING"


def test_an_expired_confirmation_refunds(api: tuple[Shop, Server]) -> None:
    shop, server = api
    order = {"order_id": "late-1", "items": ["lamp"], "amount": 1500, "confirm_within": 0.3}
    with server.client() as client:
        assert client.post("/orders", json=order).status_code == 201
        done = wait_for_order(server, client, "late-1", finished, "finished")
        assert done["result"] == {
            "outcome": "refunded",
            "charge": "ch_late-1",
            "refund": "re_late-1",
        }
        too_late = client.post("/orders/late-1/confirm", json={"by": "bob"})
        assert too_late.status_code == 409, too_late.text
        assert "already finished" in too_late.json()["detail"]
    assert ran(shop.ledger, "late-1") == {"charge": 1, "refund": 1}


def test_a_declined_payment_fails_the_order(api: tuple[Shop, Server]) -> None:
    shop, server = api
    order = {"order_id": "rich-1", "items": ["yacht"], "amount": 10**9}
    with server.client() as client:
        assert client.post("/orders", json=order).status_code == 201
        done = wait_for_order(server, client, "rich-1", finished, "finished")
    assert done == {
        "order_id": "rich-1",
        "status": "ERROR",
        "error": "PaymentDeclined: card declined",
    }
    assert ran(shop.ledger, "rich-1") == {"charge": 1}


def test_unknown_ids_are_404(api: tuple[Shop, Server]) -> None:
    _, server = api
    with server.client() as client:
        for response in (
            client.get("/orders/no-such-order"),
            client.post("/orders/no-such-order/confirm", json={"by": "alice"}),
        ):
            assert response.status_code == 404, response.text
            assert response.json() == {"detail": "no order with id 'no-such-order'"}


@pytest.mark.parametrize(
    "body",
    [
        {"amount": 100},  # no items
        {"items": [], "amount": 100},
        {"items": ["book"], "amount": -5},
        {"items": ["book"], "amount": "a lot"},
        {"items": ["book"], "amount": 100, "confirm_within": 0},
        {"items": ["book"], "amount": 100, "order_id": "no spaces/or slashes"},
    ],
)
def test_bad_orders_are_422(api: tuple[Shop, Server], body: dict[str, Any]) -> None:
    _, server = api
    with server.client() as client:
        response = client.post("/orders", json=body)
    assert response.status_code == 422, response.text


def test_a_bad_confirmation_is_422(api: tuple[Shop, Server]) -> None:
    _, server = api
    with server.client() as client:
        created = client.post("/orders", json={"order_id": "c-1", "items": ["x"], "amount": 1})
        assert created.status_code == 201, created.text
        for body in ({}, {"by": ""}, {"by": 3}):
            response = client.post("/orders/c-1/confirm", json=body)
            assert response.status_code == 422, response.text


# -- restarts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "during", "charges"),
    [
        # Waiting for the confirmation: the charge is recorded, so it never runs again.
        (signal.SIGKILL, "wait", 1),
        (signal.SIGTERM, "wait", 1),
        # A kill inside the charge: it has no record, so it runs again (at least once).
        (signal.SIGKILL, "charge", 2),
        # A clean stop inside the charge lets it finish and commit first.
        (signal.SIGTERM, "charge", 1),
    ],
    ids=["kill-waiting", "term-waiting", "kill-charging", "term-charging"],
)
def test_a_restart_in_the_middle_of_an_order(
    shop: Shop, how: signal.Signals, during: str, charges: int
) -> None:
    if during == "charge":
        # SIGKILL lands while the provider hangs; SIGTERM waits out a short charge.
        delay = "3600" if how == signal.SIGKILL else "1"
        first = shop.serve(SLOW_APP, SLOW_CHARGE_SECONDS=delay)
    else:
        first = shop.serve()
    with first.client() as client:
        created = client.post("/orders", json={"order_id": "r-1", "items": ["tent"], "amount": 99})
        assert created.status_code == 201, created.text
        if during == "charge":
            wait_for(lambda: ran(shop.ledger, "r-1")["charge"], "the charge to start", first)
        else:
            wait_for_order(first, client, "r-1", awaiting, "awaiting confirmation")
    if how == signal.SIGKILL:
        assert first.stop(how) == -signal.SIGKILL
    else:
        first.terminate()
        assert ran(shop.ledger, "r-1") == {"charge": 1}

    second = shop.serve()
    with second.client() as client:
        # The new server recovered the run: it waits for the confirmation again.
        wait_for_order(second, client, "r-1", awaiting, "awaiting confirmation after the restart")
        assert client.post("/orders/r-1/confirm", json={"by": "carol"}).status_code == 202
        done = wait_for_order(second, client, "r-1", finished, "finished after the restart")
    assert done["status"] == "SUCCESS", done
    assert done["result"] == {
        "outcome": "shipped",
        "charge": "ch_r-1",
        "parcel": "parcel-r-1",
        "confirmed_by": "carol",
    }
    assert ran(shop.ledger, "r-1") == {"charge": charges, "ship": 1}


# -- as a script -------------------------------------------------------------------------------


def test_runs_as_a_script_on_the_sqlite_default(tmp_path: Path) -> None:
    """`python examples/fastapi_app.py` serves on 127.0.0.1 with ./fastapi_app.db."""
    server = Server([sys.executable, str(EXAMPLE)], tmp_path, {})  # no REPLAYKIT_URL
    try:
        with server.client() as client:
            created = client.post("/orders", json={"order_id": "s-1", "items": ["x"], "amount": 1})
            assert created.status_code == 201, created.text
            wait_for_order(server, client, "s-1", awaiting, "awaiting confirmation")
        assert (tmp_path / "fastapi_app.db").exists()
        server.terminate()
    finally:
        server.kill()
