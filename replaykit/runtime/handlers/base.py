"""What every runtime handler shares: the `Handler` base (its defaults are a kind that
needs nothing), the `Carrier` it is handed (the effect runner's services), and `Ready`
(what a waiting kind's store holds that completes it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, Unpack

import attrs

from replaykit.commands import Call, Command, Start, Step, facts_of
from replaykit.interpreter import Effect
from replaykit.log import Outcome, Record, Value
from replaykit.otel import Telemetry
from replaykit.runtime.clock import Clock
from replaykit.runtime.host import Entropy, Host, Suspend, Wake
from replaykit.stores.base import Store, WorkflowRow
from replaykit.stores.options import SideWrites

__all__ = ["Carrier", "Handler", "Ready", "topic_of"]


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
        **options: Unpack[SideWrites],
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
        """Carry out `effect` and record it, or say what it waits for. `steps_done`, what
        a composite's steps gave before it suspended, is a composite's alone: every other
        kind is carried out by `act`."""
        return self.act(carrier, row, effect)

    def act(self, carrier: Carrier, row: WorkflowRow, effect: Effect) -> Record | Suspend:
        """Carry out `effect` of a kind that is not a composite; this default is a kind
        that needs nothing: at once (`instant`) or by waiting (`wait_for`)."""
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
        """What the command gives when its timeout expired first."""
        return Value(None)

    def preemptible(self, command: Command) -> bool:
        """Whether a cancel cuts it short while it runs (and the run is watched for one)."""
        return False
