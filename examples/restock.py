"""A nested composite: reserve a warehouse slot while waiting, with a deadline, for a quote.

    python examples/restock.py

`All(Race(Recv("quote"), Sleep(...)), Step("reserve", ...))` does both at once and
takes one position and one record in the log. The reservation finishes at once;
the quote may take a while. While the composite waits for it, no thread is held:
three restocks wait here on an engine with two pool threads, and a fourth order
runs meanwhile. A supplier that does not answer in time loses the race, and the
slot is released.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any

from replaykit import All, Engine, Race, Recv, Sleep, Step, workflow

# Scaled down so the example finishes quickly; in production: timedelta(hours=4).
QUOTE_WITHIN = timedelta(seconds=1.5)


def reserve_slot(item: str) -> str:
    return f"slot-{item}"


def release_slot(slot: str) -> None:
    print(f"  released {slot}")


def place_order(item: str, quantity: int, price: float) -> str:
    return f"po-{item}-{quantity}x{price:g}"


@workflow
def restock(item: str, quantity: int) -> Generator[Any, Any, str]:
    (winner, quote), slot = yield All(
        Race(Recv("quote"), Sleep(QUOTE_WITHIN)),
        Step("reserve", reserve_slot, item),
    )
    if winner == 1:  # the supplier did not answer in time
        yield Step("release", release_slot, slot)
        return f"{item}: no quote in time"
    order = yield Step("order", place_order, item, quantity, quote["price"])
    return f"{item}: {order} into {slot}"


@workflow
def label(item: str) -> Generator[Any, Any, str]:
    return (yield Step("print", lambda: f"label for {item}"))


def main() -> None:
    with Engine("memory://", max_workers=2) as engine:
        handles = {
            item: engine.start(restock, item, 40, workflow_id=f"restock-{item}")
            for item in ("bolts", "nuts", "washers")
        }
        # All three reserved their slot and wait for a quote, holding no thread:
        # the two pool threads are free for other runs.
        engine.wait_idle(timeout=10)
        print("  while three restocks wait:", engine.run(label, "crate-9", timeout=5))
        engine.send("restock-bolts", {"price": 0.12}, topic="quote")
        engine.send("restock-nuts", {"price": 0.05}, topic="quote")
        for handle in handles.values():
            print(handle.result(timeout=30))


if __name__ == "__main__":
    main()
