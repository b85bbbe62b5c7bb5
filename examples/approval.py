"""A human approval with a deadline: Race(Recv, Sleep).

    python examples/approval.py            # approves in time
    python examples/approval.py --late     # the deadline passes first

The workflow publishes its stage as an event, waits for an "approve" message for
up to two (scaled-down) days, and escalates when nobody answers. The wait holds
no thread, and its deadline is recorded when it starts: a restart in the middle
does not give the approver more time.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Generator
from datetime import timedelta
from typing import Any

from replaykit import Engine, Race, Recv, SetEvent, Sleep, Step, workflow

# Scaled down so the example finishes quickly; in production: timedelta(days=2).
DEADLINE = timedelta(seconds=1.5)


def notify_approver(request_id: str, amount: int) -> str:
    print(f"  asked a manager to approve {request_id} ({amount} EUR)")
    return "mail-1"


def escalate(request_id: str) -> str:
    print(f"  nobody answered; escalating {request_id}")
    return "ticket-7"


@workflow
def expense_approval(request_id: str, amount: int) -> Generator[Any, Any, str]:
    yield Step("notify", notify_approver, request_id, amount)
    yield SetEvent("stage", "waiting-for-approval")
    winner, decision = yield Race(Recv("approve"), Sleep(DEADLINE))
    if winner == 1:
        ticket = yield Step("escalate", escalate, request_id)
        yield SetEvent("stage", "escalated")
        return f"escalated as {ticket}"
    yield SetEvent("stage", "decided")
    return f"{'approved' if decision['ok'] else 'rejected'} by {decision['by']}"


def main() -> None:
    late = "--late" in sys.argv
    request_id = f"expense-{int(time.time() * 1000)}"
    with Engine("memory://") as engine:
        handle = engine.start(expense_approval, request_id, 120, workflow_id=request_id)
        print("  stage:", engine.get_event(request_id, "stage", timeout=5))
        if not late:
            engine.send(request_id, {"ok": True, "by": "maria"}, topic="approve")
        print(f"{request_id}: {handle.result(timeout=30)}")
        print("  stage:", engine.get_event(request_id, "stage"))


if __name__ == "__main__":
    main()
