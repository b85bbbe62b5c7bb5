"""Handlers of the update kinds: `ReceiveUpdate` waits for a request and takes it as `Recv`
takes a message (running the update's validator first when the caller could not);
`Reply` records the answer and keeps it, in the same commit, where the caller looks."""

from __future__ import annotations

from replaykit import serde
from replaykit.commands import Command, ReceiveUpdate, Reply
from replaykit.commands.updates import (
    reply_data,
    reply_key,
    request_topic,
    taken_request,
)
from replaykit.errors import UnknownUpdate, UnknownWorkflowError, UpdateAlreadyAnswered
from replaykit.interpreter import Effect
from replaykit.log import Failure, Outcome, Record, Value
from replaykit.registry import Workflow, lookup
from replaykit.runtime.handlers.base import Carrier, Handler
from replaykit.runtime.handlers.waiting import TakesMessage
from replaykit.stores.base import EventWrite, Message, WorkflowRow

__all__ = ["ReceiveUpdateHandler", "ReplyHandler"]


def _workflow_of(row: WorkflowRow) -> Workflow[..., object] | None:
    try:
        return lookup(row.name)
    except UnknownWorkflowError:
        return None  # a run this process cannot look up declares nothing it can check


class ReceiveUpdateHandler(TakesMessage):
    """Ready with the oldest request of its update name. A request the caller did not
    validate (it had no workflow code) is validated here first; one the validator
    refuses is answered with its error and taken out of the inbox, leaving no record,
    and the next request is looked at."""

    def topics(self, command: Command) -> str:
        assert isinstance(command, ReceiveUpdate)
        return request_topic(command.update_name)

    def refused(self, row: WorkflowRow, position: int, command: Command) -> Outcome | None:
        assert isinstance(command, ReceiveUpdate)
        wf = _workflow_of(row)
        name = command.update_name
        unknown = None if wf is None else wf.unknown_update(name, workflow_id=row.workflow_id)
        if unknown is None:
            return None
        error = UnknownUpdate(f"{unknown} (ReceiveUpdate at position {position})")
        return Failure(serde.encode_error(error, with_traceback=False))

    def taken(
        self, carrier: Carrier, row: WorkflowRow, command: Command, message: Message
    ) -> Outcome | None:
        assert isinstance(command, ReceiveUpdate)
        request, validated = taken_request(message.payload, row.workflow_id, message.message_id)
        wf = None if validated else _workflow_of(row)
        if wf is not None:
            args, kwargs = request["args"], request["kwargs"]
            try:
                wf.check_update(command.update_name, args, kwargs, workflow_id=row.workflow_id)
            except Exception as refusal:
                answer = EventWrite(reply_key(request["update_id"]), reply_data(error=refusal))
                # Gone already (another engine answered or took it): look again.
                carrier.store.answer_message(row.workflow_id, message.message_id, answer)
                return None
        return Value(request)


class ReplyHandler(Handler):
    """Records the reply with the answer set as the run's event `reply_key(id)`."""

    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record:
        command = effect.command
        assert isinstance(command, Reply)
        key = reply_key(command.update_id)
        found, _ = carrier.store.get_event(row.workflow_id, key)
        if found:
            error = UpdateAlreadyAnswered(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {effect.position}: "
                f"update {command.update_name!r} (id {command.update_id!r}) has its answer "
                "already; a request takes one reply. Reply once per request (replying() "
                "answers for you)"
            )
            return carrier.commit(row, effect, Failure(serde.encode_error(error)))
        if command.error is not None:
            answer = reply_data(error=command.error)
        else:
            what = f"the reply to update {command.update_name!r}"
            data = carrier.encoded(command.value, what, row, effect)
            if isinstance(data, Failure):
                return carrier.commit(row, effect, data)
            answer = reply_data(data)
        return carrier.commit(row, effect, Value(None), event=EventWrite(key, answer))
