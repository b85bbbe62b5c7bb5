"""Handlers of the kinds that write with their record: a message sent, an event set, a
stream's value or its close. The record and what it writes commit together."""

from __future__ import annotations

from replaykit import serde
from replaykit.commands import CloseStream, Send, SetAttributes, SetEvent, WriteStream
from replaykit.errors import WorkflowNotFound
from replaykit.interpreter import Effect
from replaykit.log import Failure, Record, Value
from replaykit.runtime.handlers.base import Carrier, Handler, topic_of
from replaykit.stores._attributes import checked_attributes
from replaykit.stores._checks import check_names
from replaykit.stores.base import EventWrite, OutgoingMessage, WorkflowRow

__all__ = ["SendHandler", "SetAttributesHandler", "SetEventHandler", "StreamHandler"]


class SendHandler(Handler):
    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record:
        command = effect.command
        assert isinstance(command, Send)
        data = carrier.encoded(command.message, "the message", row, effect)
        if isinstance(data, Failure):
            return carrier.commit(row, effect, data)
        if carrier.store.get_workflow(command.workflow_id) is None:
            error = WorkflowNotFound(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {effect.position}: "
                f"cannot send to {command.workflow_id!r}: no such workflow run"
            )
            return carrier.commit(row, effect, Failure(serde.encode_error(error)))
        key = command.idempotency_key
        trace = carrier.telemetry.context_of(row.workflow_id)
        if key is None:
            message = OutgoingMessage(
                command.workflow_id,
                topic_of(command.topic),
                data,
                # One delivery per position, even if this commit is retried.
                idempotency_key=f"{row.workflow_id}:{effect.position}",
                trace_context=trace,
            )
            return carrier.commit(row, effect, Value(None), send=message)
        try:
            check_names(command.workflow_id, idempotency_key=key)
        except ValueError as exc:
            refused = ValueError(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {effect.position}: "
                f"Send(idempotency_key=...) refused: {exc}. Use a shorter key, such as a "
                "hash of the long one"
            )
            return carrier.commit(row, effect, Failure(serde.encode_error(refused)))
        # The user's key is the receiving run's, shared with `engine.send`: whoever
        # uses it first delivers. Only the store can tell, in the commit itself,
        # so it records False in place of True when the key was taken.
        message = OutgoingMessage(
            command.workflow_id,
            topic_of(command.topic),
            data,
            idempotency_key=key,
            trace_context=trace,
            if_duplicate=Value(False),
        )
        return carrier.commit(row, effect, Value(True), send=message)


class SetEventHandler(Handler):
    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record:
        command = effect.command
        assert isinstance(command, SetEvent)
        data = carrier.encoded(command.value, f"the value of event {command.key!r}", row, effect)
        if isinstance(data, Failure):
            return carrier.commit(row, effect, data)
        return carrier.commit(row, effect, Value(None), event=EventWrite(command.key, data))


class StreamHandler(Handler):
    """A stream's value (or its close) is a record of its own kind, named by the key: its
    position makes it exactly once, and the store tells readers ("stream", id)."""

    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record:
        command = effect.command
        assert isinstance(command, (WriteStream, CloseStream))
        # The record's name is the key, which the stores refuse as they refuse an event
        # key; said first with the key's own label. A ValueError fails the run.
        check_names(row.workflow_id, position=effect.position, stream_key=command.key)
        if isinstance(command, CloseStream):
            return carrier.commit(row, effect, Value(None))
        what = f"the value of stream {command.key!r}"
        data = carrier.encoded(command.value, what, row, effect)
        return carrier.commit(row, effect, data if isinstance(data, Failure) else Value(data))


class SetAttributesHandler(Handler):
    """The run's attributes, written before the command's record: a crash between the
    two writes them again on the resume (the same values, so nothing changes), and the
    record keeps a replay from writing at all. A bad value fails the yield, recorded."""

    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record:
        command = effect.command
        assert isinstance(command, SetAttributes)
        who = (
            f"workflow {row.name!r} (id {row.workflow_id!r}) at position {effect.position}: "
            "SetAttributes"
        )
        try:
            checked = checked_attributes(command.attributes, who)
        except (TypeError, ValueError) as exc:
            failure = Failure(serde.encode_error(exc, with_traceback=False))
            return carrier.commit(row, effect, failure)
        carrier.store.set_attributes(row.workflow_id, checked)
        return carrier.commit(row, effect, Value(None))
