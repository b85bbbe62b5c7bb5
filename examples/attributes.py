"""Find runs the way an operator asks for them: by customer, plan and how they ended.

    python examples/attributes.py

Each order is started with its customer and plan as attributes, and tells the store how
far it got with `SetAttributes` as it goes. Then the operator's questions, answered by
the store with the filter language (no SQL of ours, no row read to count):
which of customer 42's orders failed, how many orders each status has for the pro plan,
and which orders were charged before a given instant. The same filters work from a
shell: `replaykit workflows list --url sqlite:///attributes.db --where "customer = '42'"`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from datetime import UTC, datetime
from typing import Any

from replaykit import Engine, SetAttributes, Step, workflow

URL = "sqlite:///attributes.db"
ORDERS = [
    ("order-1", "42", "pro", 1999),
    ("order-2", "42", "pro", 0),  # an empty cart: refused
    ("order-3", "7", "free", 500),
    ("order-4", "42", "free", 250),
]


def charge(order: str, cents: int) -> str:
    if cents <= 0:
        raise ValueError(f"{order}: nothing to charge ({cents} cents)")
    return f"ch-{order}"


@workflow
def place_order(order: str, cents: int, charged_at: str) -> Generator[Any, Any, str]:
    yield SetAttributes(stage="charging")
    charge_id = yield Step("charge", charge, order, cents)
    # The instant comes in as an argument: a workflow reads no clock of its own.
    yield SetAttributes(stage="charged", charged_at=datetime.fromisoformat(charged_at))
    return charge_id


def main() -> None:
    with Engine(URL) as engine:
        for order, *_ in ORDERS:
            engine.delete(order)  # fresh runs each time the example runs
        for hour, (order, customer, plan, cents) in enumerate(ORDERS, start=9):
            at = datetime(2026, 12, 1, hour, tzinfo=UTC).isoformat()
            handle = engine.start(
                place_order,
                order,
                cents,
                at,
                workflow_id=order,
                attributes={"customer": customer, "plan": plan},
            )
            with contextlib.suppress(ValueError):
                handle.result(timeout=30)

        failed = engine.list_workflows(where="customer = '42' and status = 'ERROR'")
        print("customer 42's failed orders:", [row.workflow_id for row in failed])
        print(
            "pro plan by status:", engine.count_workflows(where="plan = 'pro'", group_by="status")
        )
        early = engine.list_workflows(where="stage = 'charged' and charged_at < '2026-12-01T11'")
        print("charged before 11:00 UTC:", [row.workflow_id for row in early])
        print("order-1's attributes:", engine.handle("order-1").row().attributes)


if __name__ == "__main__":
    main()
