"""Handlers of the kinds answered at once, with nothing to wait for."""

from __future__ import annotations

import uuid

from replaykit.commands import Command, Start
from replaykit.log import Outcome, Value
from replaykit.runtime.handlers.base import Carrier, Handler
from replaykit.stores.base import WorkflowRow

__all__ = ["NowHandler", "PatchHandler", "RandomHandler", "StartHandler", "UuidHandler"]


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
