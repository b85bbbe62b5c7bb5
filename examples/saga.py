"""A saga: a trip booked in three steps, undone in reverse when a step fails or on a cancel.

    python examples/saga.py

`book_trip` books a flight, a hotel and a car, one step each, and remembers how to undo
each booking once it is made. If a later booking fails, or the trip is cancelled while
it waits for the traveller's confirmation, the workflow runs the compensations it
collected, newest first, each a recorded step: a crash in the middle of the undoing
resumes it without undoing anything twice. A cancel reaches the workflow as `Cancelled`
at the yield it waits on; it has the cancel's grace (here 30 s) to run its
compensations, and the run then ends CANCELLED with them in its log.

Three trips: one confirmed, one whose car rental fails (the hotel and the flight are
undone), and one cancelled by its traveller while it waits for the confirmation (all
three bookings are undone).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from replaykit import AwaitedWorkflowCancelled, Engine, Recv, Step, workflow
from replaykit.errors import Cancelled

LEDGER: list[str] = []


def book(kind: str, trip: str) -> str:
    if kind == "car" and trip == "trip-2":
        raise ValueError(f"no car left for {trip}")
    LEDGER.append(f"booked {kind} for {trip}")
    return f"{kind}-{trip}"


def cancel_booking(booking: str) -> str:
    LEDGER.append(f"cancelled {booking}")
    return booking


@workflow(name="examples.saga.book_trip")
def book_trip(trip: str) -> Generator[Any, Any, str]:
    compensations: list[str] = []  # the bookings to cancel, oldest first
    try:
        for kind in ("flight", "hotel", "car"):
            booking = yield Step(f"book {kind}", book, kind, trip)
            compensations.append(booking)
        confirmed = yield Recv("confirm", timeout=3600)
        if confirmed is None:
            raise TimeoutError(f"{trip} was not confirmed within an hour")
        return f"{trip}: booked {', '.join(compensations)}"
    except (Exception, Cancelled):
        # Newest first: the car before the hotel before the flight. Each undo is a step
        # of its own, recorded; a resume after a crash undoes only what is left.
        for booking in reversed(compensations):
            yield Step(f"cancel {booking}", cancel_booking, booking)
        raise


def main() -> None:
    with Engine("memory://") as engine:
        confirmed = engine.start(book_trip, "trip-1", workflow_id="trip-1")
        failing = engine.start(book_trip, "trip-2", workflow_id="trip-2")
        cancelled = engine.start(book_trip, "trip-3", workflow_id="trip-3")
        engine.wait_idle(timeout=10)

        engine.send("trip-1", True, topic="confirm")
        print(confirmed.result(timeout=10))

        try:
            failing.result(timeout=10)
        except ValueError as exc:
            print(f"trip-2: failed ({exc}); undone: {undone(engine, 'trip-2')}")

        engine.cancel("trip-3", grace=30, reason="the traveller changed plans")
        try:
            cancelled.result(timeout=10)
        except AwaitedWorkflowCancelled as exc:
            print(f"trip-3: {exc}")
            print(f"trip-3: undone: {undone(engine, 'trip-3')}")
        print(f"trip-3: {cancelled.status().value}")
    for trip in ("trip-1", "trip-2", "trip-3"):  # the trips ran side by side
        print(f"{trip} ledger: " + "; ".join(e for e in LEDGER if e.endswith(trip)))


def undone(engine: Engine, workflow_id: str) -> str:
    """The compensating steps the run recorded, in the order they ran."""
    return ", ".join(r.name for r in engine.steps(workflow_id) if r.name.startswith("cancel "))


if __name__ == "__main__":
    main()
