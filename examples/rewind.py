"""Run a failed order again, under its own id, once the bug is fixed: rewind in place.

    python examples/rewind.py

The order reserves stock, writes an invoice, then charges the card. The first deploy
charges with a bug, so the run ends in ERROR after two steps that must not run again
(the stock is reserved, the invoice numbered). With the fix deployed, `engine.rewind`
runs the order again from the charge: the first two steps are answered from the log,
the charge runs on the fixed code, and the failed attempt stays in the run's history as
its previous generation, with its error.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from replaykit import Engine, Step, workflow
from replaykit.stores.base import archive_id

URL = "sqlite:///rewind.db"
DONE: list[str] = []
FIXED = {"charge": False}


def reserve(order: str) -> str:
    DONE.append("reserve")
    return f"stock held for {order}"


def invoice(order: str) -> str:
    DONE.append("invoice")
    return f"invoice INV-{len(DONE)} for {order}"


def charge(order: str, cents: int) -> str:
    DONE.append("charge")
    if not FIXED["charge"]:
        raise ValueError(f"amount {cents} read as euros, not cents")  # the bug
    return f"charged {cents / 100:.2f} EUR for {order}"


@workflow
def place_order(order: str, cents: int) -> Generator[Any, Any, str]:
    held = yield Step("reserve", reserve, order)
    number = yield Step("invoice", invoice, order)
    paid = yield Step("charge", charge, order, cents)
    return f"{held}; {number}; {paid}"


def main() -> None:
    with Engine(URL) as engine:
        engine.delete("order-7")  # a fresh run each time the example runs
        handle = engine.start(place_order, "order-7", 1999, workflow_id="order-7")
        try:
            handle.result(timeout=30)
        except ValueError as exc:
            print(f"order-7 failed: {exc}")
        FIXED["charge"] = True  # the fix is deployed
        rewound = engine.rewind("order-7", 2)  # keep the reservation and the invoice
        print(f"order-7 rewound: {rewound.result(timeout=30)}")
        print(f"steps run: {', '.join(DONE)}")
        attempt = engine.store.get_workflow(archive_id("order-7", 0))
        assert attempt is not None
        print(f"its history keeps the failed attempt: {attempt.error.splitlines()[0]}")
        engine.delete("order-7")


if __name__ == "__main__":
    main()
