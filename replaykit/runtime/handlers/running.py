"""Handlers of the kinds carried out by running something: a step's attempts, a
transaction's body in the store's transaction, a composite's tree."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from replaykit import serde
from replaykit.commands import All, Command, Race, Step, Transaction
from replaykit.errors import ControlSignal, RecordConflict, StoreUnavailable
from replaykit.interpreter import Effect
from replaykit.log import Failure, Outcome, Record, Value
from replaykit.runtime.handlers.base import Carrier, Handler
from replaykit.runtime.host import Suspend
from replaykit.stores.base import WorkflowRow

__all__ = ["CompositeHandler", "StepHandler", "TransactionHandler"]


class StepHandler(Handler):
    def preemptible(self, command: Command) -> bool:
        assert isinstance(command, Step)
        return command.preemptible

    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record:
        command = effect.command
        assert isinstance(command, Step)
        pending = effect.pending
        started = pending.started_at if pending and pending.started_at else carrier.clock.now()
        outcome, attempts = carrier.run_step(row, effect.position, command, pending=pending)
        return carrier.commit(row, effect, outcome, started_at=started, attempts=attempts)


class TransactionHandler(Handler):
    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record:
        command = effect.command
        assert isinstance(command, Transaction)
        host = carrier.host
        started = carrier.clock.now()
        fn = host.step_overrides.get(command.name, command.fn)

        def body(conn: Any) -> Record:
            value = fn(conn, *command.args)
            data = serde.encode(
                value,
                what=f"the result of transaction {command.name!r} in workflow {row.name!r} "
                f"(id {row.workflow_id!r}) at position {effect.position}",
                max_bytes=host.max_payload_bytes,
            )
            return Record(
                effect.position,
                command.kind,
                command.name,
                Value(data),
                effect.digest,
                effect.call_site,
                started,
                carrier.clock.now(),
            )

        host.check_cancelled(row.workflow_id)
        try:
            return host.records.through(
                row,
                effect.position,
                lambda: carrier.store.record_transaction(
                    row.workflow_id, effect.position, body, executor_id=host.executor_id
                ),
            )
        except (ControlSignal, RecordConflict, StoreUnavailable):
            raise
        except Exception as exc:
            # The transaction rolled back; its failure is the outcome.
            failed = Failure(serde.encode_error(exc))
            return carrier.commit(row, effect, failed, started_at=started)


class CompositeHandler(Handler):
    """Its children are of any kind, so it asks their handlers through the lookup it is
    handed (the table that holds it, built after it)."""

    def __init__(self, handler_for: Callable[[Command], Handler]) -> None:
        self._handler_for = handler_for

    def preemptible(self, command: Command) -> bool:
        """A composite with a preemptible step among its leaves."""
        assert isinstance(command, (Race, All))
        return any(self._handler_for(child).preemptible(child) for child in command.children)

    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record | Suspend:
        return carrier.run_composite(row, effect, steps_done)
