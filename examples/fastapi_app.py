"""Durable checkouts behind a FastAPI app: the server may restart in the middle of an order.

    pip install 'replaykit[asgi]'
    uvicorn examples.fastapi_app:app          # or: python examples/fastapi_app.py [--port N]

    curl -X POST localhost:8000/orders -H 'content-type: application/json' \\
         -d '{"items": ["book"], "amount": 4200}'          # -> {"order_id": "order-..."}
    curl -X POST localhost:8000/orders/ID/confirm -H 'content-type: application/json' \\
         -d '{"by": "alice"}'
    curl localhost:8000/orders/ID                          # its status; once done, its result

Posting an order id again with the same body answers the same order (201); with another
body, 409 and why.

The app's lifespan opens an `AsyncEngine` (REPLAYKIT_URL, default
sqlite:///fastapi_app.db in the current directory) on the app's own event loop,
and the async charge step awaits the app's HTTP client on that loop. Each order
is a `checkout` run: charge, wait up to `confirm_within` seconds for a
confirmation, then ship (or refund when nobody confirmed); a declined card
fails the order, and GET shows the error. Kill the server while an order waits
and start it again: the run goes on from its log, and nobody is charged twice.
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from replaykit import (
    AsyncEngine,
    Race,
    Recv,
    SetEvent,
    Sleep,
    Step,
    WorkflowIdConflict,
    WorkflowNotFound,
    workflow,
)

URL = os.environ.get("REPLAYKIT_URL", "sqlite:///fastapi_app.db")

# Opened by the lifespan, on the app's event loop.
engine: AsyncEngine
payments: httpx.AsyncClient

# For tests/test_fastapi_example.py: when CHECKOUT_LEDGER names a file, each step
# body appends a line to it, so the test can count how often each body really ran
# across server restarts. An application does not need this.
LEDGER = os.environ.get("CHECKOUT_LEDGER")


def ledger(step: str, order_id: str) -> None:
    if LEDGER:
        with open(LEDGER, "a", encoding="utf-8") as file:
            file.write(f"{step} {order_id}\n")


async def payment_provider(request: httpx.Request) -> httpx.Response:
    """A stand-in for a real payment API, so the example runs offline."""
    body = json.loads(request.content)
    if body.get("amount", 0) > 100_000:  # over 1000.00: declined, to show a failed order
        return httpx.Response(402, json={"error": "card declined"})
    prefix = "ch" if request.url.path == "/charges" else "re"
    return httpx.Response(200, json={"id": f"{prefix}_{body['order_id']}"})


class PaymentDeclined(Exception):
    pass


# -- the steps: async ones run on the app's loop, plain ones on the engine's threads --------


async def charge(order_id: str, amount: int) -> str:
    ledger("charge", order_id)
    # A step that was running when the process died runs again after the restart
    # (at least once); the idempotency key makes the provider charge only once.
    response = await payments.post(
        "/charges",
        json={"order_id": order_id, "amount": amount},
        headers={"Idempotency-Key": f"charge-{order_id}"},
    )
    if response.status_code == 402:  # a failed step fails the run: GET shows the error
        raise PaymentDeclined(response.json()["error"])
    response.raise_for_status()
    return str(response.json()["id"])


async def refund(order_id: str, charge_id: str) -> str:
    ledger("refund", order_id)
    response = await payments.post(
        "/refunds",
        json={"order_id": order_id, "charge_id": charge_id},
        headers={"Idempotency-Key": f"refund-{order_id}"},
    )
    response.raise_for_status()
    return str(response.json()["id"])


def ship(order_id: str, items: list[str]) -> str:
    ledger("ship", order_id)
    return f"parcel-{order_id}"


@workflow
def checkout(
    order_id: str, items: list[str], amount: int, confirm_within: float
) -> Generator[Any, Any, dict[str, Any]]:
    charge_id = yield Step("charge", charge, order_id, amount)
    yield SetEvent("stage", "awaiting confirmation")
    winner, confirmation = yield Race(Recv("confirm"), Sleep(confirm_within))
    if winner == 1:  # nobody confirmed in time
        refund_id = yield Step("refund", refund, order_id, charge_id)
        return {"outcome": "refunded", "charge": charge_id, "refund": refund_id}
    parcel = yield Step("ship", ship, order_id, items)
    return {"outcome": "shipped", "charge": charge_id, "parcel": parcel, **confirmation}


# -- the app -------------------------------------------------------------------------------


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    global engine, payments
    # In production: httpx.AsyncClient(base_url="https://api.payments.example", ...).
    transport = httpx.MockTransport(payment_provider)
    async with (
        httpx.AsyncClient(base_url="https://payments.example", transport=transport) as payments,
        # Opened last, closed first: on shutdown, running steps finish (with the
        # client still open) and commit before the server exits.
        AsyncEngine(URL) as engine,
    ):
        yield


app = FastAPI(title="replaykit checkout", lifespan=lifespan)


class NewOrder(BaseModel):
    order_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")  # made up if absent
    items: list[str] = Field(min_length=1)
    amount: int = Field(gt=0)  # in cents
    confirm_within: float = Field(900.0, gt=0, le=7 * 24 * 3600)  # seconds


class Confirmation(BaseModel):
    by: str = Field(min_length=1)


def no_such_order(order_id: str) -> HTTPException:
    return HTTPException(404, f"no order with id {order_id!r}")


@app.post("/orders", status_code=201)
async def create_order(order: NewOrder) -> dict[str, str]:
    order_id = order.order_id or f"order-{uuid.uuid4().hex[:12]}"
    # Idempotent by id: posting the same order again finds the run already started.
    try:
        handle = await engine.start(
            checkout,
            order_id,
            order.items,
            order.amount,
            order.confirm_within,
            workflow_id=order_id,
        )
    except WorkflowIdConflict as exc:
        # The id holds another order (other items, amount or deadline): the client's
        # mistake, which the library's message explains.
        raise HTTPException(409, str(exc)) from None
    return {"order_id": handle.workflow_id}


@app.post("/orders/{order_id}/confirm", status_code=202)
async def confirm_order(order_id: str, confirmation: Confirmation) -> dict[str, str]:
    try:
        status = await engine.handle(order_id).status()
    except WorkflowNotFound:
        raise no_such_order(order_id) from None
    if status.is_terminal:
        raise HTTPException(409, f"order {order_id!r} is already finished ({status})")
    await engine.send(order_id, {"confirmed_by": confirmation.by}, topic="confirm")
    return {"order_id": order_id, "status": "confirmation sent"}


@app.get("/orders/{order_id}")
async def get_order(order_id: str) -> dict[str, Any]:
    handle = engine.handle(order_id)
    try:
        status = await handle.status()
    except WorkflowNotFound:
        raise no_such_order(order_id) from None
    order: dict[str, Any] = {"order_id": order_id, "status": status}
    if not status.is_terminal:
        order["stage"] = await engine.get_event(order_id, "stage")  # None while charging
        return order
    try:
        order["result"] = await handle.result(timeout=0)  # finished: answers at once
    except Exception as exc:  # the run's failure, re-raised from its record
        order["error"] = f"{type(exc).__name__}: {exc}"
    return order


if __name__ == "__main__":
    import uvicorn

    parser = argparse.ArgumentParser(description="The checkout app on uvicorn.")
    parser.add_argument("--port", type=int, default=8000)
    uvicorn.run(app, host="127.0.0.1", port=parser.parse_args().port)
