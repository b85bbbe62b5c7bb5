"""One runtime handler per command kind: everything the runtime does for that kind.

Rule 1 of this package: what a command kind does at run time lives in its handler, and
nowhere else. A handler says how the kind is carried out and recorded (its `act`; a
composite's `carry_out`, which alone reads the steps done before it suspended), what a
waiting kind waits on (the notification that wakes it, and the run it is about), when
it is ready (what the store holds now), and what its timeout yields. The effect runner, the
composites and the wake-ups ask `handler_for(command)`; none of them switches on the
command's class. Adding a command kind touches its handler, the table below
(`HANDLERS`), and the facts its class states in `commands/` (`facts_of`: what the kind may do,
which every layer reads).

| kind | carried out | waits on | ready when | timeout gives |
| --- | --- | --- | --- | --- |
| `Step` | its attempts (`steps.py`), its record | — | — | — (see below) |
| `Transaction` | its body in the store's transaction | — | — | — |
| `Race`, `All` | a composite (`composites.py`) | its children's | its tree decides | per child |
| `Send` | delivered with its record (keyed: once) | — | — | — |
| `SetEvent` | the value set with its record | — | — | — |
| `SetAttributes` | the run's attributes written, then its record | — | — | — |
| `WriteStream`, `CloseStream` | a record named by the key | — | — | — |
| `Sleep` | waits | its wake instant | the instant passed | `None` |
| `Recv` | waits; consumes with its record | a message to the run | one on its topic(s) | `None` |
| `ReceiveUpdate` | waits; consumes with its record | a message to the run | a request | `None` |
| `Reply` | the answer set as an event with its record (once per request) | — | — | — |
| `GetEvent` | waits | the other run's event | the event is set | `None` |
| `Await` | waits; takes its completion, as `Recv` | a message to the run | completed | `None` |
| `Wait` | waits | the other run finishing | it finished | `TimeoutError` |
| `Call` | starts the child (once), waits | the child finishing | it finished | `None` |
| `Now`, `Random`, `Uuid`, `Patch`, `Start`, `Awakeable` | at once | — | — | — |
| `CancelRun` | the other run cancelled (engine.cancel), whether it changed recorded | — | — | — |

(A step's own `timeout=` fails the attempt, as its retry policy then decides.)

The handlers live by what they do: `base.py` (the `Handler` defaults, the `Carrier` they
are handed, `Ready`), `running.py` (Step, Transaction, Race/All), `writing.py` (Send,
SetEvent, SetAttributes, the streams), `waiting.py` (Sleep, Recv, GetEvent, Wait, Call;
and `TakesMessage`, how Recv, Await and ReceiveUpdate alike take a message from the
inbox), `instants.py` (Now, Random, Uuid, Patch, Start, CancelRun), `updates.py`
(ReceiveUpdate, Reply) and `awakeables.py` (Awakeable, Await: external completion).
"""

from __future__ import annotations

from typing import Any

from replaykit import commands
from replaykit.commands import Command
from replaykit.runtime.handlers.awakeables import AwaitHandler, AwakeableHandler
from replaykit.runtime.handlers.base import Carrier, Handler, Ready, topic_of
from replaykit.runtime.handlers.instants import (
    CancelRunHandler,
    NowHandler,
    PatchHandler,
    RandomHandler,
    StartHandler,
    UuidHandler,
)
from replaykit.runtime.handlers.running import CompositeHandler, StepHandler, TransactionHandler
from replaykit.runtime.handlers.updates import ReceiveUpdateHandler, ReplyHandler
from replaykit.runtime.handlers.waiting import (
    CallHandler,
    GetEventHandler,
    RecvHandler,
    SleepHandler,
    WaitHandler,
)
from replaykit.runtime.handlers.writing import (
    SendHandler,
    SetAttributesHandler,
    SetEventHandler,
    StreamHandler,
)

__all__ = ["HANDLERS", "Carrier", "Handler", "Ready", "handler_for", "topic_of"]


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
            f"{type(command).__name__}; a new command kind needs one in runtime/handlers/ "
            "and its row in HANDLERS (runtime/handlers/__init__.py)"
        ) from None


_COMPOSITE = CompositeHandler(handler_for)
_STREAM = StreamHandler()
#: The handler of each command kind. A kind missing here fails `handler_for` loudly.
HANDLERS: dict[type[Any], Handler] = {
    commands.Step: StepHandler(),
    commands.Transaction: TransactionHandler(),
    commands.Race: _COMPOSITE,
    commands.All: _COMPOSITE,
    commands.Send: SendHandler(),
    commands.SetEvent: SetEventHandler(),
    commands.SetAttributes: SetAttributesHandler(),
    commands.WriteStream: _STREAM,
    commands.CloseStream: _STREAM,
    commands.Sleep: SleepHandler(),
    commands.Recv: RecvHandler(),
    commands.ReceiveUpdate: ReceiveUpdateHandler(),
    commands.Reply: ReplyHandler(),
    commands.GetEvent: GetEventHandler(),
    commands.Wait: WaitHandler(),
    commands.Call: CallHandler(),
    commands.Now: NowHandler(),
    commands.Random: RandomHandler(),
    commands.Uuid: UuidHandler(),
    commands.Patch: PatchHandler(),
    commands.Start: StartHandler(),
    commands.Awakeable: AwakeableHandler(),
    commands.Await: AwaitHandler(),
    commands.CancelRun: CancelRunHandler(),
}
