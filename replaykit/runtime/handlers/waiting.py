"""Handlers of the kinds that wait: what each waits on (the notification that wakes it,
and the run it is about), when it is ready (what the store holds now), and what its
timeout gives."""

from __future__ import annotations

from replaykit import serde
from replaykit.commands import Call, Command, GetEvent, Recv, Wait
from replaykit.interpreter import Effect
from replaykit.log import Failure, Outcome, Record, Value, received_data
from replaykit.runtime.handlers.base import Carrier, Handler, Ready, topic_of
from replaykit.runtime.host import Suspend
from replaykit.stores.base import WorkflowRow

__all__ = ["CallHandler", "GetEventHandler", "RecvHandler", "SleepHandler", "WaitHandler"]


class SleepHandler(Handler):
    """Waits for its wake instant alone (`facts_of(Sleep).wakes_on` is None)."""


class RecvHandler(Handler):
    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        assert isinstance(command, Recv)
        topics = command.topics
        if topics is None:
            assert not isinstance(command.topic, tuple)
            message = carrier.store.peek_message(row.workflow_id, topic_of(command.topic))
        else:
            message = carrier.store.peek_message(row.workflow_id, topics)
        if message is None:
            return None
        # Several topics: the record says which one the message came on (`Received`).
        data = message.payload if topics is None else received_data(message.topic, message.payload)
        return Ready(Value(data), consume=message.message_id, trace_context=message.trace_context)


class GetEventHandler(Handler):
    def target(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> str | None:
        assert isinstance(command, GetEvent)
        return command.workflow_id

    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        assert isinstance(command, GetEvent)
        found, value = carrier.store.get_event(command.workflow_id, command.key)
        return Ready(Value(value)) if found else None


class _AwaitsRun(Handler):
    """Ready with the outcome of the run it is about (`target`) once that run finished."""

    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        awaited = target or self.target(carrier, row, position, command)
        assert awaited is not None
        finished = carrier.finished_outcome(row, position, awaited)
        return None if finished is None else Ready(finished)


class WaitHandler(_AwaitsRun):
    def target(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> str | None:
        assert isinstance(command, Wait)
        return command.workflow_id

    def timed_out(self, row: WorkflowRow, position: int, command: Command) -> Outcome:
        assert isinstance(command, Wait)
        error = TimeoutError(
            f"Wait({command.workflow_id!r}) in workflow {row.name!r} "
            f"(id {row.workflow_id!r}) at position {position} timed out after "
            f"{command.timeout}s"
        )
        return Failure(serde.encode_error(error, with_traceback=False))


class CallHandler(_AwaitsRun):
    """Starts its child once (a failed start is the outcome), then waits for it."""

    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record | Suspend:
        command = effect.command
        assert isinstance(command, Call)
        if effect.pending is None:
            started = carrier.start_child(row, effect.position, command)
            if isinstance(started, Failure):
                return carrier.commit(row, effect, started)
        return carrier.wait_for(row, effect)

    def target(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> str | None:
        assert isinstance(command, Call)
        return carrier.child_id(row, position, command)
