"""Carrying out one effect that is not a plain step: the `Carrier` the handlers use.

`EffectRunner.carry_out()` asks the command's handler (runtime/handlers/) to do
its part, and either commits a completed record for the effect's position and
returns it, or returns a `Suspend` saying what the workflow waits for (an instant,
a message, an event, another workflow). The scheduler keeps a suspended run's
generator warm when it can (runtime/warm.py), else it is rebuilt by replay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Unpack

import attrs

from replaykit import serde
from replaykit.commands import (
    All,
    Call,
    Command,
    Race,
    Sleep,
    Start,
    earliest_deadline,
    facts_of,
)
from replaykit.commands.children import DEFAULT_PARENT_CLOSE
from replaykit.errors import (
    AwaitedWorkflowCancelled,
    PayloadTooLarge,
    RunContinued,
    SerializationError,
    UnknownWorkflowError,
    WorkflowDeadlineExceeded,
    WorkflowNotFound,
)
from replaykit.interpreter import Effect
from replaykit.log import Failure, Outcome, Record, Status, Value
from replaykit.runtime.composites import CompositeRun
from replaykit.runtime.handlers import Ready, handler_for
from replaykit.runtime.host import Suspend, Wake
from replaykit.runtime.steps import StepRunner
from replaykit.stores.base import WorkflowRow
from replaykit.stores.options import SideWrites

__all__ = ["EffectRunner", "WaitProbe"]


@attrs.frozen
class WaitProbe:
    """Checks the store for what a suspended run waits on.

    Holds ids and commands only, not the run's row or generator: a suspended
    run should cost next to nothing while it waits.
    """

    runner: EffectRunner = attrs.field(eq=False, repr=False)
    workflow_id: str
    name: str
    position: int
    commands: tuple[Command, ...]
    #: The child run each `Call` waits on (None: the default id at `position`).
    targets: tuple[str | None, ...] = ()

    def __call__(self) -> bool:
        row = WorkflowRow(self.workflow_id, self.name, Status.PENDING)
        targets = self.targets or (None,) * len(self.commands)
        return any(
            self.runner.check_ready(row, self.position, command, None, target=target) is not None
            for command, target in zip(self.commands, targets, strict=True)
        )


class EffectRunner(StepRunner):
    """Carries out effects for one host: steps through `StepRunner` (steps.py), every
    other command kind here. Stateless apart from the host it serves and its loop."""

    # -- entry point -------------------------------------------------------------

    def carry_out(
        self,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None = None,
    ) -> Record | Suspend:
        """Carry out `effect` and record it, or say what it waits for. `steps_done` are
        what a composite's step children gave before it suspended (`Suspend.steps_done`)."""
        return handler_for(effect.command).carry_out(self, row, effect, steps_done)

    def run_composite(
        self,
        row: WorkflowRow,
        effect: Effect,
        steps_done: Mapping[tuple[int, ...], Outcome] | None,
    ) -> Record | Suspend:
        command = effect.command
        assert isinstance(command, (Race, All))
        return CompositeRun(self, row, effect, command, steps_done).run()

    def instant_outcome(self, row: WorkflowRow, position: int, command: Command) -> Outcome:
        """Outcomes that need no waiting: Now, Random, Uuid, Patch, Start."""
        return handler_for(command).instant(self, row, position, command)

    # -- committing ----------------------------------------------------------------

    def commit(
        self,
        row: WorkflowRow,
        effect: Effect,
        outcome: Outcome | None,
        *,
        started_at: datetime | None = None,
        attempts: int = 1,
        **options: Unpack[SideWrites],
    ) -> Record:
        wake_at = options.get("wake_at")
        record = self.record_for(
            effect, outcome, started_at=started_at, attempts=attempts, wake_at=wake_at
        )
        written = self.host.records.write(row, record, **options)
        if self.telemetry.tracing:
            self.telemetry.executed(row.workflow_id, effect.position)
        return written

    def encoded(self, value: Any, what: str, row: WorkflowRow, effect: Effect) -> Any:
        try:
            return serde.encode(
                value,
                what=f"{what} in workflow {row.name!r} (id {row.workflow_id!r}) at position "
                f"{effect.position}",
                max_bytes=self.host.max_payload_bytes,
            )
        except (SerializationError, PayloadTooLarge) as exc:
            return Failure(serde.encode_error(exc))

    # -- child workflows ----------------------------------------------------------------

    def child_id(
        self, row: WorkflowRow, position: int, command: Start | Call, path: Sequence[int] = ()
    ) -> str:
        """The child run's id: its own `workflow_id`, else `parent:position`, and inside
        a composite `parent:position.i.j` (the child's argument indexes, outermost first)."""
        if command.workflow_id:
            return command.workflow_id
        where = ".".join(map(str, (position, *path)))
        return f"{row.workflow_id}:{where}"

    def start_child(
        self, row: WorkflowRow, position: int, command: Start | Call, child_id: str | None = None
    ) -> Outcome:
        child_id = child_id or self.child_id(row, position, command)
        try:
            if command.parent_close != DEFAULT_PARENT_CLOSE:
                # Kept before the child exists: a crash between leaves a policy for no
                # run (harmless), never a child without its policy.
                self.store.set_parent_close(child_id, command.parent_close)
            self.host.create_run(
                command.workflow,
                tuple(command.args),
                dict(command.kwargs),
                workflow_id=child_id,
                parent_id=row.workflow_id,
                queue=command.queue,
                # The child inherits what remains of this run's deadline.
                timeout=command.timeout,
                deadline=earliest_deadline(command.deadline, row.deadline),
            )
        except (ValueError, TypeError, UnknownWorkflowError) as exc:
            # Failures are outcomes, for child starts too: a conflicting id
            # (WorkflowIdConflict), a dedup id in use, arguments that do not encode or are
            # too large, a name the stores refuse. The parent gets the error at its yield,
            # recorded, and may catch it; a replay raises the same. Its message says where.
            info = serde.encode_error(exc)
            where = (
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {position} "
                f"({type(command).__name__})"
            )
            said = f"{where}: {info.message}"
            # The args re-raise it (live and on replay): the first, its message, says where too.
            args = [said, *info.args[1:]] if info.args[:1] == [str(exc)] else info.args
            return Failure(attrs.evolve(info, message=said, args=args))
        return Value(child_id)

    # -- waiting commands -----------------------------------------------------------------

    def expiry(self, command: Command, started: datetime) -> datetime | None:
        seconds = facts_of(command).timeout_seconds(command)
        return None if seconds is None else started + timedelta(seconds=seconds)

    def wakes_for(
        self, row: WorkflowRow, position: int, command: Command, target: str | None = None
    ) -> tuple[Wake, ...]:
        return handler_for(command).wakes(self, row, position, command, target)

    def check_ready(
        self,
        row: WorkflowRow,
        position: int,
        command: Command,
        expiry: datetime | None,
        *,
        target: str | None = None,
    ) -> Ready | None:
        """Can this waiting command complete now? (Checks the store, never blocks.)

        `target` is the child run a `Call` waits on when it is not the default
        id at `position` (a `Call` inside a composite)."""
        handler = handler_for(command)
        ready = handler.ready(self, row, position, command, target)
        if ready is None and expiry is not None and self.clock.passed(expiry):
            return Ready(handler.timed_out(row, position, command))
        return ready

    def finished_outcome(self, row: WorkflowRow, position: int, target: str) -> Outcome | None:
        child = self.store.get_workflow(target)
        if child is None:
            error: Exception = WorkflowNotFound(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {position} waits "
                f"for {target!r}, but no such workflow run exists"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        if child.status is Status.SUCCESS or child.status is Status.ERROR:
            return child.result or Value(None)
        if child.status is Status.CANCELLED and WorkflowDeadlineExceeded.says_timed_out(
            child.error
        ):
            error = WorkflowDeadlineExceeded(
                f"workflow {child.name!r} (id {target!r}), awaited by {row.name!r} "
                f"(id {row.workflow_id!r}) at position {position}, was cancelled: it {child.error}"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        if child.status is Status.CONTINUED:
            # An archived generation: it will never finish; the run goes on as its live id.
            error = RunContinued(
                f"workflow {row.name!r} (id {row.workflow_id!r}) at position {position} waits "
                f"for {target!r}, an earlier generation of run {child.continued_as!r}, which "
                f"continued as new; wait for {child.continued_as!r} instead",
                continued_as=child.continued_as,
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        if child.status is Status.CANCELLED:
            error = AwaitedWorkflowCancelled(
                f"workflow {child.name!r} (id {target!r}), awaited by {row.name!r} "
                f"(id {row.workflow_id!r}) at position {position}, was cancelled"
            )
            return Failure(serde.encode_error(error, with_traceback=False))
        return None

    def wait_for(self, row: WorkflowRow, effect: Effect) -> Record | Suspend:
        """A waiting command: complete it if it is ready, else record its start (its
        expiry fixed) and say what it waits for."""
        command = effect.command
        now = self.clock.now()
        pending = effect.pending
        started_at = pending.started_at if pending and pending.started_at else now
        expiry = pending.wake_at if pending else self.expiry(command, started_at)
        ready = self.check_ready(row, effect.position, command, expiry)
        if ready is not None:
            taken = self.commit(
                row, effect, ready.outcome, started_at=started_at, consume=ready.consume
            )
            if ready.trace_context is not None and self.telemetry.tracing:
                self.telemetry.link(row.workflow_id, ready.trace_context)
            return taken
        if (
            pending is None
            and expiry is not None
            and facts_of(command).wakes_on is None
            and self.host.jump_to(row.workflow_id, effect.position, expiry)
        ):
            # Only time to wait for, and an autojumping clock alone with this warm run
            # has jumped over it: the wait is over before it began, so its start need
            # not be recorded apart (one commit, not two, for a Sleep on virtual time).
            ready = self.check_ready(row, effect.position, command, expiry)
            if ready is not None:
                return self.commit(row, effect, ready.outcome, started_at=started_at)
        if pending is None:
            # Record the start before suspending: the expiry survives a crash
            # or a deploy, and the next replay knows the code up to this yield
            # already ran (context().is_replaying stays true through it).
            pending = self.commit(row, effect, None, started_at=started_at, wake_at=expiry)
            if pending.outcome is not None:
                return pending
        return Suspend(
            expiry,
            self.wakes_for(row, effect.position, command),
            self.probe(row, effect.position, (command,)),
            pending,
            parkable=type(command) is Sleep,
        )

    def elapsed_sleep(self, row: WorkflowRow, effect: Effect) -> Record | None:
        """The completion of a `Sleep` whose recorded instant has passed, not yet
        written (None for any other effect): what `wait_for` would commit, built with
        no store read, so that the scheduler writes it in its round's batch."""
        pending = effect.pending
        if (
            type(effect.command) is not Sleep
            or pending is None
            or pending.outcome is not None
            or pending.wake_at is None
            or not self.clock.passed(pending.wake_at)
        ):
            return None
        outcome = handler_for(effect.command).timed_out(row, effect.position, effect.command)
        if self.telemetry.tracing:
            self.telemetry.executed(row.workflow_id, effect.position)
        return self.record_for(effect, outcome, started_at=pending.started_at)

    def probe(
        self,
        row: WorkflowRow,
        position: int,
        commands: Sequence[Command],
        targets: Sequence[str | None] = (),
    ) -> WaitProbe | None:
        """What the poller may call to see if a suspended run's wait is over (None: only time)."""
        every = list(zip(commands, targets or [None] * len(commands), strict=True))
        waiting = [(c, t) for c, t in every if facts_of(c).wakes_on is not None]
        if not waiting:
            return None
        return WaitProbe(
            self,
            row.workflow_id,
            row.name,
            position,
            tuple(c for c, _ in waiting),
            tuple(t for _, t in waiting) if targets else (),
        )
