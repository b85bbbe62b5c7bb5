"""Race and All: one attempt at a composite tree, decided and recorded at one position.

`CompositeRun` runs one attempt: step leaves on the step pool, waiting leaves looked at
in the store, what they give told to the tree (`CompositeTree`, composite_tree.py, which
decides it by `Race`'s first and `All`'s every outcome or first failure), and one record
written at the outer composite's position. It sees the effect runner only as a
`Composer`.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from replaykit.commands import All, Call, Command, Race, Start, Step, facts_of
from replaykit.errors import Stopped
from replaykit.interpreter import Effect
from replaykit.log import Failure, Outcome, Record, Value
from replaykit.runtime.composite_tree import CompositeTree, Node, over_the_limit
from replaykit.runtime.handlers import Carrier, Ready
from replaykit.runtime.host import CancelScope, Suspend, Wake
from replaykit.stores.base import WorkflowRow

__all__ = ["Composer", "CompositeRun"]

#: The step leaves running on the step pool, by their path in the tree.
_Futures = Mapping[tuple[int, ...], concurrent.futures.Future[tuple[Outcome, int]]]


class Composer(Carrier, Protocol):
    """What a composite attempt needs from the effect runner that starts it: what a
    handler needs (`handlers.Carrier`), and the waits, steps and child starts of its
    leaves."""

    def check_ready(
        self,
        row: WorkflowRow,
        position: int,
        command: Command,
        expiry: datetime | None,
        *,
        target: str | None = None,
    ) -> Ready | None: ...

    def wakes_for(
        self, row: WorkflowRow, position: int, command: Command, target: str | None = None
    ) -> tuple[Wake, ...]: ...

    def start_child(
        self, row: WorkflowRow, position: int, command: Start | Call, child_id: str | None = None
    ) -> Outcome: ...

    def run_step(
        self,
        row: WorkflowRow,
        position: int,
        command: Step[Any],
        scope: CancelScope | None = None,
        fn: Callable[..., Any] | None = None,
        *,
        pending: Record | None = None,
        child_path: tuple[int, ...] = (),
    ) -> tuple[Outcome, int]: ...

    def expiry(self, command: Command, started: datetime) -> datetime | None: ...

    def instant_outcome(self, row: WorkflowRow, position: int, command: Command) -> Outcome: ...

    def probe(
        self,
        row: WorkflowRow,
        position: int,
        commands: Sequence[Command],
        targets: Sequence[str | None] = (),
    ) -> Callable[[], bool] | None: ...


class CompositeRun:
    """One attempt at a `Race` or an `All`, composites nested in it included.

    The whole tree is decided in this attempt and recorded once, at the outer
    composite's position. Every expiry below counts from the outer record's
    `started_at`, so a restart keeps them. Step leaves run concurrently on the
    step pool while this thread watches the waiting leaves. A tree with no step
    leaves suspends like a single wait (no thread held): its partial readiness
    is dropped (nothing is consumed before the commit) and looked at again on
    wake-up. A tree with step leaves holds its thread until it is decided.

    An inner composite, once decided, stays decided for the attempt; the steps
    below it that lost are cancelled then, and its waiting leaves are not looked
    at again (a losing inner `Recv` takes no message). The record consumes the
    messages of the subtrees whose outcomes it holds, nothing else; two `Recv`
    leaves never take the same message. After the record committed, every
    `Call` or `Start` leaf whose outcome the record does not hold (a loser, or a
    `Call` still running when a fail-fast `All` failed) has its child run cancelled.
    """

    def __init__(
        self,
        runner: Composer,
        row: WorkflowRow,
        effect: Effect,
        command: Race | All,
        steps_done: Mapping[tuple[int, ...], Outcome] | None = None,
    ):
        self.runner = runner
        self.host = runner.host
        self.row = row
        self.effect = effect
        self.command = command
        # Losing children are cancelled through the scopes; so is everything
        # when the run itself is cancelled.
        self.scope = CancelScope(self.host.scope_of(row.workflow_id))
        self.changed = threading.Event()
        self.scope.on_cancel(self.changed.set)
        self.tree = CompositeTree(command, self.scope, self._child_id, steps_done)

    def _child_id(self, command: Start | Call, path: tuple[int, ...]) -> str:
        runner, row, position = self.runner, self.row, self.effect.position
        child_id = runner.child_id(row, position, command, path)
        if command.workflow_id or self.effect.pending is None:
            return child_id
        # A composite recorded as started before child ids held the child's
        # place in the tree used the composite's own `parent:position`; keep
        # waiting on that child rather than starting a second one.
        legacy = runner.child_id(row, position, command)
        if runner.store.get_workflow(child_id) is None:
            old = runner.store.get_workflow(legacy)
            if old is not None and old.parent_id == row.workflow_id:
                return legacy
        return child_id

    # -- the attempt -----------------------------------------------------------------------

    def run(self) -> Record | Suspend:
        runner, effect, row = self.runner, self.effect, self.row
        now = runner.clock.now()
        pending = effect.pending
        started_at = pending.started_at if pending and pending.started_at else now
        for leaf in self.tree.leaves:
            leaf.expiry = runner.expiry(leaf.command, started_at)
        timed = [leaf.expiry for leaf in self.tree.leaves if leaf.expiry is not None]

        futures: dict[tuple[int, ...], concurrent.futures.Future[tuple[Outcome, int]]] = {}
        resumed = pending is not None or bool(self.tree.outcomes)
        # Instant leaves and Starts first, in argument order: they are done at once,
        # and a race one of them decides starts no step.
        for leaf in self.tree.leaves:
            child = leaf.command
            if isinstance(child, (Step, Call)) or not self.tree.is_open(leaf):
                continue
            if isinstance(child, Start):
                started = runner.start_child(row, effect.position, child, leaf.target)
                self.tree.outcomes[leaf.path] = started
                self.tree.decide()
            elif facts_of(child).instant:
                self.tree.outcomes[leaf.path] = runner.instant_outcome(row, effect.position, child)
                self.tree.decide()
        if resumed and any(
            isinstance(leaf.command, (Step, Call)) and self.tree.is_open(leaf)
            for leaf in self.tree.leaves
        ):
            # A later attempt (a warm run's next look, a replay after a restart):
            # decide what its finished steps and what has arrived or fallen due decide
            # before running anything, so that a step that lost an inner race in an
            # earlier attempt (to a sibling step, a message, a timer) runs no more.
            self._look(futures)
        for leaf in self.tree.leaves:
            child = leaf.command
            if not isinstance(child, (Step, Call)) or not self.tree.is_open(leaf):
                continue  # done, or a sibling already decided the composite above it
            if isinstance(child, Step):
                future = self.host.step_pool.submit(self._run_child_step, leaf)
                future.add_done_callback(lambda _f: self.changed.set())
                futures[leaf.path] = future
            else:
                started = runner.start_child(row, effect.position, child, leaf.target)
                if isinstance(started, Failure):
                    self.tree.outcomes[leaf.path] = started
                    self.tree.decide()

        wakes = tuple(
            dict.fromkeys(
                wake
                for leaf in self.tree.leaves
                for wake in runner.wakes_for(row, effect.position, leaf.command, leaf.target)
            )
        )
        unsubscribe = self.host.listen(wakes, self.changed.set) if futures else None
        try:
            while True:
                self.changed.clear()
                closing = self._check_stop(futures, look_first=True)
                # Asked before the look, so that the look takes in every step that
                # is not running any more: only then may the composite suspend.
                steps_were_running = self._steps_running(futures)
                decided = self._look(futures)
                if decided is None and closing:
                    self._check_stop(futures)
                if decided is not None:
                    self.scope.cancel()
                    for future in futures.values():
                        if not future.done():
                            future.cancel()
                    too_large = over_the_limit(
                        decided,
                        self.host.max_payload_bytes,
                        f"the record of {type(self.command).__name__} in workflow "
                        f"{row.name!r} (id {row.workflow_id!r}) at position {effect.position}",
                    )
                    record = runner.commit(
                        row,
                        effect,
                        too_large or decided,
                        started_at=started_at,
                        # A record refused for its size consumes nothing it took.
                        consume=None if too_large else (self.tree.consumed() or None),
                    )
                    self._cancel_losing_children()
                    return record
                open_expiries = [
                    leaf.expiry
                    for leaf in self.tree.leaves
                    if leaf.expiry is not None and self.tree.is_open(leaf)
                ]
                if not futures or (
                    not steps_were_running
                    and self.host.keeps_warm(row.workflow_id, effect.position)
                ):
                    # Nothing is consumed before the commit, so partial readiness
                    # can be dropped: the replay on wake-up looks again. Finished
                    # step children go with the warm run, so that what is left to
                    # wait for (a message, a timer) holds no thread; a run replayed
                    # instead (evicted, or a host that keeps none) runs them again,
                    # as any step whose record did not commit.
                    if pending is None:
                        pending = runner.commit(
                            row,
                            effect,
                            None,
                            started_at=started_at,
                            wake_at=min(timed) if timed else None,
                        )
                        if pending.outcome is not None:
                            return pending
                    # Wake at the next expiry of a leaf that is not done yet. The
                    # poller looks only at the waiting leaves that were not ready at
                    # this look and are still needed: a leaf already ready (a message
                    # there, a child finished) has not decided the tree, and looking at
                    # it again would wake the run at every poll for nothing.
                    waiting = [
                        leaf
                        for leaf in self.tree.leaves
                        if facts_of(leaf.command).waits
                        and leaf.path not in self.tree.outcomes
                        and self.tree.is_open(leaf)
                    ]
                    return Suspend(
                        min(open_expiries, default=None),
                        wakes,
                        runner.probe(
                            row,
                            effect.position,
                            [leaf.command for leaf in waiting],
                            [leaf.target for leaf in waiting],
                        ),
                        pending,
                        self.tree.finished_steps() or None,
                    )
                self._check_stop(futures)
                self.host.wait_for_change(
                    self.changed,
                    min(open_expiries, default=None),
                    idle=not self._steps_running(futures),
                )
        finally:
            self.scope.cancel()
            if unsubscribe is not None:
                unsubscribe()

    def _steps_running(self, futures: _Futures) -> bool:
        """Whether a step child that is still needed has not finished yet."""
        return any(
            self.tree.is_open(self.tree.leaf(path)) and not f.done() for path, f in futures.items()
        )

    def _check_stop(
        self,
        futures: _Futures,
        *,
        look_first: bool = False,
    ) -> bool:
        """Raise `Stopped` if the run was stopped; when its host is closing, only
        once no step child still runs. Shutdown lets running children finish, and if
        they decide the composite (an `All` of steps), its record commits; what is
        still undecided then records nothing and runs again after the restart.

        With `look_first`, a closing host with no child running does not raise yet
        but answers True: what the children just finished is looked at first."""
        if not self.host.closed:
            self.host.check_cancelled(self.row.workflow_id)
            return False
        if self._steps_running(futures):
            return False
        if look_first:
            return True
        raise Stopped(
            f"workflow {self.row.name!r} (id {self.row.workflow_id!r}) at position "
            f"{self.effect.position}: the engine is closing"
        )

    def _look(self, futures: _Futures) -> Outcome | None:
        """Take in what finished and what arrived; the root's recorded value once decided."""
        signal: BaseException | None = None
        for path, future in futures.items():
            if future.done() and not future.cancelled() and self.tree.is_open(self.tree.leaf(path)):
                error = future.exception()
                if error is None:
                    self.tree.outcomes[path] = future.result()[0]
                elif signal is None:
                    signal = error
        decided = self.tree.decide()
        if decided is not None:
            return decided[0]
        if signal is not None:
            # A child that is still needed stopped without an outcome (the run was
            # cancelled, or the engine closes before it began): so does the attempt.
            raise signal
        # What arrived (a message, an event, a finished run) is looked at before
        # any expiry: something that arrived at the instant an expiry falls
        # wins the tie, whatever the children's order.
        for timed_out in (False, True):
            for leaf in self.tree.leaves:
                if leaf.path in futures or not facts_of(leaf.command).waits:
                    continue
                if not self.tree.is_open(leaf):
                    continue
                expiry = leaf.expiry
                if timed_out and (expiry is None or not self.runner.clock.passed(expiry)):
                    continue  # looked at a moment ago, and not due
                ready = self.runner.check_ready(
                    self.row,
                    self.effect.position,
                    leaf.command,
                    expiry if timed_out else None,
                    target=leaf.target,
                )
                if ready is None:
                    continue
                if ready.consume is not None and ready.consume in self.tree.taken:
                    # Two Recv leaves never take one message: the store shows only
                    # the oldest, so this one waits on, or times out when due.
                    if not timed_out:
                        continue
                    ready = Ready(Value(None))
                if ready.consume is not None:
                    self.tree.taken[ready.consume] = leaf.path
                self.tree.outcomes[leaf.path] = ready.outcome
                decided = self.tree.decide()
                if decided is not None:
                    return decided[0]
        return None

    def _cancel_losing_children(self) -> None:
        """Cancel the child runs the record gave up (`CompositeTree.losing_children`);
        only runs this run started (a child id naming a run started elsewhere attaches
        to it, and is left alone)."""
        for target in self.tree.losing_children():
            if self._started_here(target):
                self.host.cancel_child(target)

    def _started_here(self, child_id: str) -> bool:
        try:
            child = self.runner.store.get_workflow(child_id)
        except Exception as exc:  # the parent's record is committed; do not fail it now
            self.host.logger.warning(
                "could not read the losing child run %r to cancel it: %s", child_id, exc
            )
            return False
        return child is not None and child.parent_id == self.row.workflow_id

    def _run_child_step(self, leaf: Node) -> tuple[Outcome, int]:
        assert isinstance(leaf.command, Step)
        scope = leaf.parent.scope if leaf.parent is not None else self.scope
        # A control signal (cancelled, closing) leaves as the future's exception: a
        # losing child's is never looked at, a needed one's ends the attempt.
        return self.runner.run_step(
            self.row, self.effect.position, leaf.command, scope, child_path=leaf.path
        )
