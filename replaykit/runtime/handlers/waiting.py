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
from replaykit.stores.base import Message, WorkflowRow

__all__ = [
    "CallHandler",
    "GetEventHandler",
    "RecvHandler",
    "SleepHandler",
    "TakesMessage",
    "WaitHandler",
]


class SleepHandler(Handler):
    """Waits for its wake instant alone (`facts_of(Sleep).wakes_on` is None)."""


class TakesMessage(Handler):
    """Ready with the oldest message on its topic(s) in the run's inbox, which its record
    consumes: `Recv`, and the kinds that take theirs as it does (`Await`, `ReceiveUpdate`)."""

    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        refused = self.refused(row, position, command)
        if refused is not None:
            return Ready(refused)
        while True:
            message = carrier.store.peek_message(row.workflow_id, self.topics(command))
            if message is None:
                return None
            outcome = self.taken(carrier, row, command, message)
            if outcome is not None:
                consume, trace = message.message_id, message.trace_context
                return Ready(outcome, consume=consume, trace_context=trace)

    def topics(self, command: Command) -> str | tuple[str, ...]:
        """The topic, or the topics, its message comes on."""
        raise NotImplementedError

    def refused(self, row: WorkflowRow, position: int, command: Command) -> Outcome | None:
        """The failure it is ready with before any message (None: it waits for one)."""
        return None

    def taken(
        self, carrier: Carrier, row: WorkflowRow, command: Command, message: Message
    ) -> Outcome | None:
        """The outcome `message` gives; None when it was dealt with here (answered, gone
        from the inbox), and the next one is looked at."""
        raise NotImplementedError


class RecvHandler(TakesMessage):
    def topics(self, command: Command) -> str | tuple[str, ...]:
        assert isinstance(command, Recv)
        if command.topics is not None:
            return command.topics
        assert not isinstance(command.topic, tuple)
        return topic_of(command.topic)

    def taken(
        self, carrier: Carrier, row: WorkflowRow, command: Command, message: Message
    ) -> Outcome | None:
        assert isinstance(command, Recv)
        if command.topics is None:
            return Value(message.payload)
        # Several topics: the record says which one the message came on (`Received`).
        return Value(received_data(message.topic, message.payload))


class _AboutRun(Handler):
    """Ready once the run it is about (`target`) holds what it waits for (`found`)."""

    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        about = target or self.target(carrier, row, position, command)
        assert about is not None
        outcome = self.found(carrier, row, position, command, about)
        return None if outcome is None else Ready(outcome)

    def found(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command, about: str
    ) -> Outcome | None:
        """What the run `about` holds that completes the command (None: nothing yet)."""
        raise NotImplementedError


class GetEventHandler(_AboutRun):
    def target(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> str | None:
        assert isinstance(command, GetEvent)
        return command.workflow_id

    def found(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command, about: str
    ) -> Outcome | None:
        assert isinstance(command, GetEvent)
        found, value = carrier.store.get_event(about, command.key)
        return Value(value) if found else None


class _AwaitsRun(_AboutRun):
    """Ready with the outcome of the run it is about once that run finished."""

    def found(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command, about: str
    ) -> Outcome | None:
        return carrier.finished_outcome(row, position, about)


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
