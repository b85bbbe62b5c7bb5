"""A checkout that survives crashes: charge, wait for a confirmation or a deadline, ship.

Run it:  python examples/checkout.py
It uses the embedded default store (SQLite at ./replaykit.db, or REPLAYKIT_URL).
Run it twice: the second run finds order-<n> already finished and prints the
recorded result without charging anyone again.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import attrs

from replaykit import Engine, Race, Recv, Retry, Sleep, Step, logger, workflow


@attrs.frozen
class Charge:
    charge_id: str
    amount: int


def charge_card(order_id: str, amount: int) -> Charge:
    print(f"  charging {amount} for {order_id}")
    return Charge(f"ch_{order_id}", amount)


def refund(charge: Charge) -> str:
    print(f"  refunding {charge.charge_id}")
    return f"re_{charge.charge_id}"


def ship(order_id: str) -> str:
    print(f"  shipping {order_id}")
    return f"parcel-{order_id}"


@workflow
def checkout(order_id: str, amount: int) -> Generator[Any, Any, str]:
    charge = yield Step("charge", charge_card, order_id, amount, retry=Retry(max_attempts=3))
    logger.info("charged %s", charge.charge_id)  # silent while replaying
    winner, message = yield Race(Recv("confirm"), Sleep(timedelta(seconds=5)))
    if winner == 1:  # the deadline passed with no confirmation
        yield Step("refund", refund, charge)
        return "expired"
    parcel = yield Step("ship", ship, order_id)
    return f"shipped {parcel} (confirmed by {message['by']})"


def main() -> None:
    order_id = sys.argv[1] if len(sys.argv) > 1 else "order-1"
    with Engine() as engine:
        handle = engine.start(checkout, order_id, 4200, workflow_id=order_id)
        if handle.status().is_terminal:
            print(f"{order_id} finished in an earlier run; its recorded result:")
        else:
            # A customer confirms a moment later, from outside the workflow.
            confirm = threading.Timer(
                0.3, engine.send, args=(order_id, {"by": "alice"}), kwargs={"topic": "confirm"}
            )
            confirm.start()
        print(f"{order_id}: {handle.result(timeout=30)}")
        for record in engine.steps(order_id):
            print(f"  #{record.position} {record.kind:<5} {record.name:<22} {record.call_site}")


if __name__ == "__main__":
    main()
