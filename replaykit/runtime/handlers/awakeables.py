"""Handlers of external completion: `Awakeable` hands out a token at once, `Await` waits
for its completion (a message on the token's topic, runtime/awakeables.py)."""

from __future__ import annotations

from replaykit import serde
from replaykit.commands import Await, AwakeableToken, Command
from replaykit.log import Failure, Outcome, Value
from replaykit.runtime.awakeables import completion_outcome
from replaykit.runtime.handlers.base import Carrier, Handler
from replaykit.runtime.handlers.waiting import TakesMessage
from replaykit.stores.base import Message, WorkflowRow

__all__ = ["AwaitHandler", "AwakeableHandler"]

#: Random bits in a token: enough that nobody completes an awakeable by guessing.
SECRET_BITS = 128


class AwakeableHandler(Handler):
    """A token naming this run, its generation, this position and random bits drawn now.

    The bits come from the engine's `entropy` (the operating system's by default; the
    testing kit's seeded one there), once: the token is recorded, and a replay gets it
    from the log.
    """

    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        source = carrier.entropy(row.workflow_id, position, command.kind)
        bits = source.getrandbits(SECRET_BITS)
        secret = f"{bits:0{SECRET_BITS // 4}x}"
        token = AwakeableToken(row.workflow_id, row.generation, position, secret)
        return Value(str(token))


class AwaitHandler(TakesMessage):
    """Ready when the token's completion is in the run's inbox; consumes it with the record."""

    def topics(self, command: Command) -> str:
        assert isinstance(command, Await)
        return command.parts.topic

    def refused(self, row: WorkflowRow, position: int, command: Command) -> Outcome | None:
        assert isinstance(command, Await)
        if command.parts.workflow_id != row.workflow_id:
            return _foreign_token(row, position, command)
        return None

    def taken(
        self, carrier: Carrier, row: WorkflowRow, command: Command, message: Message
    ) -> Outcome:
        assert isinstance(command, Await)
        return completion_outcome(message.payload, row.workflow_id, command.parts.topic)


def _foreign_token(row: WorkflowRow, position: int, command: Await[object]) -> Failure:
    parts = command.parts
    error = ValueError(
        f"Await({command.token!r}) in workflow {row.name!r} (id {row.workflow_id!r}) at "
        f"position {position}: the token belongs to run {parts.workflow_id!r}, and a run "
        "awaits only the tokens its own Awakeable handed out (a fork copies its source's "
        "tokens, which complete the source: hand out a new one with Awakeable(...))"
    )
    return Failure(serde.encode_error(error, with_traceback=False))
