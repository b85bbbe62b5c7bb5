"""Handlers of the kinds answered at once, with nothing to wait for."""

from __future__ import annotations

import uuid

from replaykit import serde
from replaykit.commands import CancelRun, Command, Start
from replaykit.errors import WorkflowNotFound
from replaykit.log import Failure, Outcome, Status, Value
from replaykit.runtime.handlers.base import Carrier, Handler
from replaykit.stores.base import WorkflowRow

__all__ = [
    "CancelRunHandler",
    "NowHandler",
    "PatchHandler",
    "RandomHandler",
    "StartHandler",
    "UuidHandler",
]


class NowHandler(Handler):
    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        return Value(carrier.clock.now().isoformat())


class RandomHandler(Handler):
    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        return Value(carrier.entropy(row.workflow_id, position, command.kind).random())


class UuidHandler(Handler):
    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        source = carrier.entropy(row.workflow_id, position, command.kind)
        return Value(str(uuid.UUID(int=source.getrandbits(128), version=4)))


class PatchHandler(Handler):
    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        return Value(True)  # reached live: the run is past the patch's deploy


class StartHandler(Handler):
    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        assert isinstance(command, Start)
        return carrier.start_child(row, position, command)


class CancelRunHandler(Handler):
    """Asks the other run to cancel through the engine's cancel (a cancel it may
    handle), then records whether that changed it. The reason it gives names this run
    and position, so that a cancel carried out again after a crash before its record
    (the cancel happened, the record did not) knows the run's request for its own and
    answers True again, without asking twice (a second cancel stops a run hard)."""

    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        assert isinstance(command, CancelRun)
        where = f"workflow {row.name!r} (id {row.workflow_id!r}) at position {position}"
        target = command.workflow_id
        if target == row.workflow_id:
            error: Exception = ValueError(
                f"{where}: CancelRun({target!r}) names this run itself; a run ends itself by "
                "returning or raising, and engine.cancel cancels it from outside"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        detail = cancel_detail(row, position, command.reason)
        held = carrier.store.get_cancel_request(target)
        if held is not None and held.reason == detail:
            # Carried out again after a crash that lost its record: this command's own
            # request stands; asking again would be a second cancel (a hard stop).
            return Value(True)
        try:
            changed = carrier.host.cancel(target, children=command.children, reason=detail)
        except WorkflowNotFound:
            error = WorkflowNotFound(
                f"{where}: CancelRun({target!r}) found no workflow run with that id"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        if not changed:
            # Carried out again after a crash that lost its record: the cancel that
            # stands is this command's own if the run says so.
            found = carrier.store.get_workflow(target)
            changed = (
                found is not None
                and found.status is Status.CANCELLED
                and (found.error == detail or found.error.startswith(f"cancelled: {detail}"))
            )
        return Value(changed)


def cancel_detail(row: WorkflowRow, position: int, reason: str) -> str:
    """The status detail `CancelRun` gives the run it cancels: the reason, and who."""
    generation = f" of generation {row.generation}" if row.generation else ""
    who = (
        f"cancelled by workflow {row.name!r} (id {row.workflow_id!r}) at position "
        f"{position}{generation}"
    )
    return f"{reason} ({who})" if reason else who
