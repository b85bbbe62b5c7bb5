"""A shopping cart that answers its callers: updates (requests with replies).

    python examples/cart.py

The cart is a run that takes "add" and "checkout" updates and answers each: the
caller gets the cart's new total back, not just a message sent into the void. The
first add starts the cart (update-with-start, one transaction); a validator refuses
a bad quantity before it reaches the run (no trace in its log); a caller that lost
its answer asks again with the same update id and gets the same reply; a checkout
that fails answers with the error and leaves the cart open.
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any

from replaykit import (
    Engine,
    Race,
    ReceiveUpdate,
    Reply,
    Sleep,
    Step,
    replying,
    workflow,
)

PRICES = {"apple": 40, "pear": 55, "fig": 120}
# Scaled down so the example finishes quickly; in production: timedelta(days=1).
IDLE = timedelta(seconds=30)


class PaymentDeclined(Exception):
    pass


def charge(owner: str, total: int) -> str:
    if total > 500:
        raise PaymentDeclined(f"{owner}'s card declines {total} cents")
    return f"receipt-{owner}-{total}"


@workflow(updates=["add", "remove", "checkout"])
def cart(owner: str) -> Generator[Any, Any, str]:
    lines: dict[str, int] = {}
    while True:
        index, req = yield Race(
            ReceiveUpdate("add"), ReceiveUpdate("remove"), ReceiveUpdate("checkout"), Sleep(IDLE)
        )
        if index == 3:
            return f"abandoned with {sum(lines.values())} item(s)"
        if index == 0:
            sku, qty = req.args[0], req.kwargs.get("qty", 1)
            lines[sku] = lines.get(sku, 0) + qty
            yield Reply(req, {"items": dict(lines), "total": _total(lines)})
        elif index == 1:
            lines.pop(req.args[0], None)
            yield Reply(req, {"items": dict(lines), "total": _total(lines)})
        else:
            receipt = yield from replying(req, _checkout(owner, lines))
            if receipt is not None:  # paid; a declined card was the caller's error
                return receipt


def _checkout(owner: str, lines: dict[str, int]) -> Generator[Any, Any, str]:
    if not lines:
        raise ValueError("the cart is empty")
    receipt = yield Step("charge", charge, owner, _total(lines))
    return str(receipt)


def _total(lines: dict[str, int]) -> int:
    return sum(PRICES[sku] * qty for sku, qty in lines.items())


@cart.validator("add")
def check_add(sku: str, qty: int = 1) -> None:
    if sku not in PRICES:
        raise KeyError(f"we sell no {sku!r}; try one of {sorted(PRICES)}")
    if qty <= 0:
        raise ValueError(f"add {sku!r}: a quantity of {qty} is not one to add")


def main() -> None:
    with Engine("memory://") as engine:
        # The first add starts the cart, the request delivered with the start.
        reply = engine.update_with_start(cart.bind("ada"), "add", "apple", workflow_id="cart-ada")
        print("add apple:", reply)
        handle = engine.handle("cart-ada")
        print("add 2 pears:", handle.update("add", "pear", qty=2, update_id="pears", timeout=10))
        # The answer was lost on the way back: the same id again, the same reply, once.
        print("add 2 pears again:", handle.update("add", "pear", qty=2, update_id="pears"))
        try:
            handle.update("add", "fig", qty=0)
        except ValueError as exc:
            print("refused:", exc)
        print("add 4 figs:", handle.update("add", "fig", qty=4, timeout=10))
        try:
            handle.update("checkout", timeout=10)
        except PaymentDeclined as exc:
            print("checkout failed:", exc)
        print("remove figs:", handle.update("remove", "fig", timeout=10))
        print("checkout:", handle.update("checkout", timeout=10))
        print("cart-ada:", handle.result(timeout=10))
        replies = [r for r in engine.steps("cart-ada") if r.kind == "reply"]
        print(f"log: {len(replies)} replies recorded; the refused add left none")


if __name__ == "__main__":
    main()
