"""One runtime handler per command kind: everything the runtime does for that kind.

Rule 1 of this module: what a command kind does at run time lives in its handler, and
nowhere else. A handler says how the kind is carried out and recorded, what a waiting
kind waits on (the notification that wakes it, and the run it is about), when it is
ready (what the store holds now), and what its timeout yields. The effect runner, the
composites and the wake-ups ask `handler_for(command)`; none of them switches on the
command's class. Adding a command kind touches its handler, the table at the end of
this module, and the facts table in `commands.py` (`facts_of`: what the kind may do,
which every layer reads).

| kind | carried out | waits on | ready when | timeout gives |
| --- | --- | --- | --- | --- |
| `Step` | its attempts (`steps.py`), its record | — | — | — (see below) |
| `Transaction` | its body in the store's transaction | — | — | — |
| `Race`, `All` | a composite run (`effects.py`) | its children's | its tree decides | per child |
| `Send` | delivered with its record (keyed: once) | — | — | — |
| `SetEvent` | the value set with its record | — | — | — |
| `WriteStream`, `CloseStream` | a record named by the key | — | — | — |
| `Sleep` | waits | its deadline | the deadline passed | `None` |
| `Recv` | waits; consumes with its record | a message to the run | one of its topic | `None` |
| `GetEvent` | waits | the other run's event | the event is set | `None` |
| `Wait` | waits | the other run finishing | it finished | `TimeoutError` |
| `Call` | starts the child (once), waits | the child finishing | it finished | `None` |
| `Now`, `Random`, `Uuid`, `Patch`, `Start` | at once | — | — | — |

(A step's own `timeout=` fails the attempt, as its retry policy then decides.)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import attrs

from replaykit import serde
from replaykit.commands import (
    All,
    Call,
    CloseStream,
    Command,
    GetEvent,
    Now,
    Patch,
    Race,
    Random,
    Recv,
    Send,
    SetEvent,
    Sleep,
    Start,
    Step,
    Transaction,
    Uuid,
    Wait,
    WriteStream,
    facts_of,
)
from replaykit.errors import ControlSignal, RecordConflict, StoreUnavailable, WorkflowNotFound
from replaykit.interpreter import Effect
from replaykit.log import Failure, Outcome, Record, Value
from replaykit.otel import Telemetry
from replaykit.runtime.clock import Clock
from replaykit.runtime.host import Entropy, Host, Suspend, Wake
from replaykit.stores._checks import check_names
from replaykit.stores.base import EventWrite, OutgoingMessage, Store, WorkflowRow

__all__ = ["Carrier", "Handler", "Ready", "handler_for"]


@attrs.frozen
class Ready:
    """A waiting command that can complete now."""

    outcome: Outcome
    consume: int | None = None
    trace_context: str | None = None  # the consumed message's sender's


class Carrier(Protocol):
    """What a handler needs from the effect runner that calls it."""

    host: Host
    store: Store
    clock: Clock
    entropy: Entropy
    telemetry: Telemetry

    def commit(
        self,
        row: WorkflowRow,
        effect: Effect,
        outcome: Outcome | None,
        *,
        started_at: datetime | None = None,
        attempts: int = 1,
        consume: int | Sequence[int] | None = None,
        send: OutgoingMessage | None = None,
        event: EventWrite | None = None,
        wake_at: datetime | None = None,
    ) -> Record: ...

    def encoded(self, value: Any, what: str, row: WorkflowRow, effect: Effect) -> Any: ...

    def run_step(
        self,
        row: WorkflowRow,
        position: int,
        command: Step[Any],
        *,
        pending: Record | None = None,
    ) -> tuple[Outcome, int]: ...

    def run_composite(
        self,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record | Suspend: ...

    def wait_for(self, row: WorkflowRow, effect: Effect) -> Record | Suspend: ...

    def child_id(
        self, row: WorkflowRow, position: int, command: Start | Call, path: Sequence[int] = ()
    ) -> str: ...

    def start_child(self, row: WorkflowRow, position: int, command: Start | Call) -> Outcome: ...

    def finished_outcome(self, row: WorkflowRow, position: int, target: str) -> Outcome | None: ...


def topic_of(topic: str | None) -> str:
    return topic or ""


class Handler:
    """A command kind's runtime behaviour. The defaults are a kind that needs nothing:
    carried out at once (`instant`) or by waiting (`wait_for`), as `facts_of` says."""

    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record | Suspend:
        """Carry out `effect` and record it, or say what it waits for."""
        facts = facts_of(effect.command)
        if facts.waits:
            return carrier.wait_for(row, effect)
        if facts.instant:
            outcome = self.instant(carrier, row, effect.position, effect.command)
            return carrier.commit(row, effect, outcome)
        raise AssertionError(f"no way to carry out {effect.command.describe()}")

    def instant(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> Outcome:
        """The outcome of a kind that needs no waiting."""
        raise TypeError(f"no instant outcome for {command.describe()}")

    def target(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> str | None:
        """The run a waiting kind is about (None: the run itself)."""
        return None

    def wakes(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> tuple[Wake, ...]:
        """The notifications that wake a run waiting on this command."""
        kind = facts_of(command).wakes_on
        if kind is None:
            return ()
        about = target or self.target(carrier, row, position, command) or row.workflow_id
        return ((kind, about),)

    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        """What the store holds now that completes this command (never blocks)."""
        return None

    def timed_out(self, row: WorkflowRow, position: int, command: Command) -> Outcome:
        """What the command gives when its deadline passed first."""
        return Value(None)

    def preemptible(self, command: Command) -> bool:
        """Whether a cancel cuts it short while it runs (and the run is watched for one)."""
        return False


# -- kinds carried out by running something ------------------------------------------------


class StepHandler(Handler):
    def preemptible(self, command: Command) -> bool:
        assert isinstance(command, Step)
        return command.preemptible

    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record:
        command = effect.command
        assert isinstance(command, Step)
        pending = effect.pending
        started = pending.started_at if pending and pending.started_at else carrier.clock.now()
        outcome, attempts = carrier.run_step(row, effect.position, command, pending=pending)
        return carrier.commit(row, effect, outcome, started_at=started, attempts=attempts)


class TransactionHandler(Handler):
    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record:
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
    def preemptible(self, command: Command) -> bool:
        """A composite with a preemptible step among its leaves."""
        assert isinstance(command, (Race, All))
        return any(handler_for(child).preemptible(child) for child in command.children)

    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record | Suspend:
        return carrier.run_composite(row, effect, steps_done)


# -- kinds that write with their record -------------------------------------------------------


class SendHandler(Handler):
    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record:
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
    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record:
        command = effect.command
        assert isinstance(command, SetEvent)
        data = carrier.encoded(command.value, f"the value of event {command.key!r}", row, effect)
        if isinstance(data, Failure):
            return carrier.commit(row, effect, data)
        return carrier.commit(row, effect, Value(None), event=EventWrite(command.key, data))


class StreamHandler(Handler):
    """A stream's value (or its close) is a record of its own kind, named by the key: its
    position makes it exactly once, and the store tells readers ("stream", id)."""

    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record:
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


# -- kinds that wait -----------------------------------------------------------------------


class SleepHandler(Handler):
    """Waits for its deadline alone (`facts_of(Sleep).wakes_on` is None)."""


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
        message = carrier.store.peek_message(row.workflow_id, topic_of(command.topic))
        if message is None:
            return None
        return Ready(
            Value(message.payload), consume=message.message_id, trace_context=message.trace_context
        )


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


class WaitHandler(Handler):
    def target(
        self, carrier: Carrier, row: WorkflowRow, position: int, command: Command
    ) -> str | None:
        assert isinstance(command, Wait)
        return command.workflow_id

    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        assert isinstance(command, Wait)
        finished = carrier.finished_outcome(row, position, command.workflow_id)
        return None if finished is None else Ready(finished)

    def timed_out(self, row: WorkflowRow, position: int, command: Command) -> Outcome:
        assert isinstance(command, Wait)
        error = TimeoutError(
            f"Wait({command.workflow_id!r}) in workflow {row.name!r} "
            f"(id {row.workflow_id!r}) at position {position} timed out after "
            f"{command.timeout}s"
        )
        return Failure(serde.encode_error(error, with_traceback=False))


class CallHandler(Handler):
    """Starts its child once (a failed start is the outcome), then waits for it."""

    def carry_out(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record | Suspend:
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

    def ready(
        self,
        carrier: Carrier,
        row: WorkflowRow,
        position: int,
        command: Command,
        target: str | None = None,
    ) -> Ready | None:
        child = target or self.target(carrier, row, position, command)
        assert child is not None
        finished = carrier.finished_outcome(row, position, child)
        return None if finished is None else Ready(finished)


# -- kinds answered at once ----------------------------------------------------------------


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


_COMPOSITE = CompositeHandler()
_STREAM = StreamHandler()
#: The handler of each command kind. A kind missing here fails `handler_for` loudly.
HANDLERS: dict[type[Any], Handler] = {
    Step: StepHandler(),
    Transaction: TransactionHandler(),
    Race: _COMPOSITE,
    All: _COMPOSITE,
    Send: SendHandler(),
    SetEvent: SetEventHandler(),
    WriteStream: _STREAM,
    CloseStream: _STREAM,
    Sleep: SleepHandler(),
    Recv: RecvHandler(),
    GetEvent: GetEventHandler(),
    Wait: WaitHandler(),
    Call: CallHandler(),
    Now: NowHandler(),
    Random: RandomHandler(),
    Uuid: UuidHandler(),
    Patch: PatchHandler(),
    Start: StartHandler(),
}


def handler_for(command: Command) -> Handler:
    """The runtime handler of `command`'s kind."""
    try:
        return HANDLERS[type(command)]
    except KeyError:
        for kind, handler in HANDLERS.items():  # a subclass of a known kind
            if isinstance(command, kind):
                return handler
        raise TypeError(
            f"{command.describe()}: replaykit's runtime has no handler for "
            f"{type(command).__name__}; a new command kind needs one in runtime/handlers.py"
        ) from None
