"""A purchase that decides for itself: errors that choose their retry, the first of
several messages, cancelling the runs it no longer needs, and what it knows of itself.

    python examples/purchase.py

Each order reserves stock from a service that rate-limits (its 429 becomes a
`RetryAfter`: the step waits what the service asked, durably), opens a negotiation
with each supplier (child runs waiting for a price), then takes the first message on
"offer" or "cancel" (`Recv(("offer", "cancel"))`) and cancels the negotiations it no
longer needs (`CancelRun`, recorded once). Paying with a declined card fails at once:
`CardDeclined` is `NonRetryable`, whatever the retry policy says. `context()` tells the
run its id, its generation and its recovery count.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any

from replaykit import (
    CancelRun,
    Engine,
    NonRetryable,
    Recv,
    Retry,
    RetryAfter,
    Start,
    Status,
    Step,
    context,
    step_context,
    workflow,
)

SUPPLIERS = ("acme", "globex")


class CardDeclined(NonRetryable, Exception):
    """Retrying a declined card cannot help: no Retry policy retries it."""


def reserve_stock(order_id: str) -> str:
    attempt = step_context().attempt
    if attempt == 1:
        # What an HTTP 429 answered with "Retry-After: 0.3" becomes.
        print(f"  {order_id}: reserve attempt 1 rate limited; the service asked for 0.3s")
        raise RetryAfter(0.3, "the stock service is rate limiting us")
    print(f"  {order_id}: reserve attempt {attempt} reserved the stock")
    return f"res-{order_id}"


def charge(order_id: str, card: str, price: int) -> str:
    if card == "declined":
        raise CardDeclined(f"card declined for {order_id}")
    return f"ch-{order_id}-{price}"


@workflow(name="purchase.negotiation")
def negotiation(supplier: str, order_id: str) -> Generator[Any, Any, Any]:
    """A supplier's side of an order: waits for its price (cancelled when not needed)."""
    return (yield Recv("price"))


@workflow(name="purchase.order")
def order(order_id: str, card: str) -> Generator[Any, Any, str]:
    yield Step(
        "reserve",
        reserve_stock,
        order_id,
        retry=Retry(max_attempts=4, retry_on=ConnectionError, timeout=timedelta(minutes=5)),
    )
    talks = []
    for supplier in SUPPLIERS:
        talks.append(
            (yield Start(negotiation, supplier, order_id, workflow_id=f"{order_id}-{supplier}"))
        )
    decided = yield Recv(("offer", "cancel"), timeout=timedelta(days=1))
    cancelled = 0
    for talk in talks:
        if (yield CancelRun(talk, reason=f"{order_id} decided")):
            cancelled += 1
    if decided is None or decided.topic == "cancel":
        return f"cancelled by the customer; {cancelled} negotiations cancelled"
    offer = decided.value
    receipt = yield Step(
        "charge", charge, order_id, card, offer["price"], retry=Retry(max_attempts=5)
    )
    ctx = context()
    return (
        f"took {offer['supplier']}'s offer at {offer['price']} ({receipt}); {cancelled} "
        f"negotiations cancelled; run {ctx.run_id}, generation {ctx.generation}, "
        f"attempt {ctx.attempt}"
    )


def main() -> None:
    with Engine("memory://") as engine:
        first = engine.start(order, "order-1", "visa", workflow_id="order-1")
        second = engine.start(order, "order-2", "visa", workflow_id="order-2")
        third = engine.start(order, "order-3", "declined", workflow_id="order-3")
        engine.send("order-1", {"supplier": "acme", "price": 90}, topic="offer")
        engine.send("order-1", {"supplier": "globex", "price": 80}, topic="offer")  # too late
        engine.send("order-2", "changed my mind", topic="cancel")
        engine.send("order-3", {"supplier": "globex", "price": 70}, topic="offer")
        print(f"order-1: {first.result(timeout=30)}")
        print(f"order-2: {second.result(timeout=30)}")
        try:
            third.result(timeout=30)
        except CardDeclined as exc:
            [charge_record] = [r for r in engine.steps("order-3") if r.name == "charge"]
            print(f"order-3: failed: {exc} after {charge_record.attempts} attempt(s)")
        for supplier in SUPPLIERS:
            status = engine.handle(f"order-1-{supplier}").status()
            assert status is Status.CANCELLED
        print("negotiations of order-1:", ", ".join(f"{s} CANCELLED" for s in SUPPLIERS))


if __name__ == "__main__":
    main()
