"""A checkout that survives crashes: charge, wait for a confirmation or a deadline, ship.

Run it:  python examples/checkout.py
It uses the embedded default store (SQLite at ./replaykit.db, or REPLAYKIT_URL) and
leaves four orders there, one of each shape, for `replaykit workflows list` and
`replaykit ui` to show:

    order-1  confirmed a moment later: shipped                   SUCCESS
    order-2  the card is declined: the run fails                 ERROR
    order-3  nobody confirms within half a second: refunded      SUCCESS
    order-4  waits a day for a confirmation                      PENDING

Run it twice: the second run finds the finished orders finished and prints their
recorded results without charging anyone again. Confirm order-4 from a shell,
`replaykit workflows send order-4 '{"by": "bob"}' --topic confirm`, and the next run
of the script (the engine that picks order-4 up again) ships it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from datetime import timedelta
from typing import Any

import attrs

from replaykit import Engine, Race, Recv, Retry, Sleep, Step, logger, workflow
from replaykit.errors import WorkflowTimeout
from replaykit.runtime.engine import WorkflowHandle


@attrs.frozen
class Charge:
    charge_id: str
    amount: int


class CardDeclined(Exception):
    pass


def charge_card(order_id: str, amount: int) -> Charge:
    print(f"  charging {amount} for {order_id}")
    if amount > 100_000:
        raise CardDeclined(f"card declined for {order_id}: {amount} is over its limit")
    return Charge(f"ch_{order_id}", amount)


def refund(charge: Charge) -> str:
    print(f"  refunding {charge.charge_id}")
    return f"re_{charge.charge_id}"


def ship(order_id: str) -> str:
    print(f"  shipping {order_id}")
    return f"parcel-{order_id}"


@workflow
def checkout(order_id: str, amount: int, confirm_within: float = 5.0) -> Generator[Any, Any, str]:
    # A network error is worth another attempt; a declined card is not.
    retry = Retry(max_attempts=3, retry_on=ConnectionError)
    charge = yield Step("charge", charge_card, order_id, amount, retry=retry)
    logger.info("charged %s", charge.charge_id)  # silent while replaying
    winner, message = yield Race(Recv("confirm"), Sleep(timedelta(seconds=confirm_within)))
    if winner == 1:  # the deadline passed with no confirmation
        refund_id = yield Step("refund", refund, charge)
        return f"expired, refunded {refund_id}"
    parcel = yield Step("ship", ship, order_id)
    return f"shipped {parcel} (confirmed by {message['by']})"


def outcome(handle: WorkflowHandle[Any]) -> str:
    try:
        return str(handle.result(timeout=30))
    except CardDeclined as exc:  # the run's failure, raised from its record
        return f"failed: {exc}"


def waiting_outcome(engine: Engine, handle: WorkflowHandle[Any]) -> str:
    """Its result if a confirmation came (sent from a shell since the last run), else
    what it waits for, once its Race is recorded (charged, waiting for the message)."""
    try:
        return str(handle.result(timeout=0.5))
    except WorkflowTimeout:
        pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(record.kind == "race" for record in engine.steps(handle.workflow_id)):
            break
        time.sleep(0.05)
    return f"{handle.status().value}, waiting up to a day for a confirmation"


def main() -> None:
    with Engine() as engine:
        shipped = engine.start(checkout, "order-1", 4200, workflow_id="order-1")
        declined = engine.start(checkout, "order-2", 250_000, workflow_id="order-2")
        expired = engine.start(checkout, "order-3", 1500, 0.5, workflow_id="order-3")
        waiting = engine.start(checkout, "order-4", 990, 86_400.0, workflow_id="order-4")
        if not shipped.status().is_terminal:
            # A customer confirms a moment later, from outside the workflow.
            confirm = threading.Timer(
                0.3, engine.send, args=("order-1", {"by": "alice"}), kwargs={"topic": "confirm"}
            )
            confirm.start()
        for handle in (shipped, declined, expired):
            print(f"{handle.workflow_id}: {outcome(handle)}")
        print(f"order-4: {waiting_outcome(engine, waiting)}")
        still_waiting = not waiting.status().is_terminal
        for record in engine.steps("order-1"):
            print(f"  #{record.position} {record.kind:<5} {record.name:<22} {record.call_site}")
    print("See them: replaykit workflows list, or replaykit ui (http://127.0.0.1:8700/).")
    if still_waiting:
        print('Confirm order-4: replaykit workflows send order-4 \'{"by": "bob"}\' --topic confirm')


if __name__ == "__main__":
    main()
