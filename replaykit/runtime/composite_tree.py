"""A composite's tree and how it is decided: `Race`'s first and `All`'s every outcome (or
first failure), which leaves are still needed, and which outcomes the one record holds.

A `CompositeTree` runs nothing, waits for nothing and reads no store: it is told the
leaves' outcomes (and the messages they took) and decides. `CompositeRun`
(composites.py) runs the leaves and tells it. Its one effect is on the cancel scopes it
holds: an inner composite, once decided, cancels the steps below it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

import attrs

from replaykit import serde
from replaykit.commands import All, Call, Command, Race, Start, Step
from replaykit.errors import PayloadTooLarge
from replaykit.log import AllOutcome, Failure, Outcome, RaceOutcome, Value
from replaykit.runtime.host import CancelScope

__all__ = ["CompositeTree", "Node", "over_the_limit"]


@attrs.define(eq=False)
class Node:
    """One command of a composite tree: the root `Race`/`All`, an inner one, or a leaf."""

    path: tuple[int, ...]
    command: Command
    parent: Node | None
    children: list[Node] = attrs.field(factory=list)
    #: Leaves: the instant it times out (its expiry), counted from the outer composite's start.
    expiry: datetime | None = None
    #: `Call` and `Start` leaves: the child run's id.
    target: str | None = None
    #: Composites: cancels the steps below it once it is decided.
    scope: CancelScope | None = None

    @property
    def is_composite(self) -> bool:
        return isinstance(self.command, (Race, All))

    def leaves(self) -> list[Node]:
        if not self.is_composite:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]


class CompositeTree:
    """The tree of one attempt at a composite, and what is known and decided in it.

    A child is named by its path in the tree (argument indexes, outermost first), never
    by completion order. A decision sticks for the attempt: a decided inner composite's
    leaves are not open any more (they lost, or are not needed).
    """

    def __init__(
        self,
        command: Race | All,
        scope: CancelScope,
        child_id: Callable[[Start | Call, tuple[int, ...]], str],
        steps_done: Mapping[tuple[int, ...], Outcome] | None = None,
    ):
        self._child_id = child_id
        self.root = self._build((), command, None, scope)
        self.leaves = self.root.leaves()
        self.outcomes: dict[tuple[int, ...], Outcome] = {}
        step_paths = {leaf.path for leaf in self.leaves if isinstance(leaf.command, Step)}
        for path, outcome in (steps_done or {}).items():
            if path in step_paths:  # an attempt before this one ran it: not again
                self.outcomes[path] = outcome
        #: message id -> the leaf that took it (not consumed until the record commits).
        self.taken: dict[int, tuple[int, ...]] = {}
        #: composites decided so far: path -> (recorded value, whether it failed).
        self.decided: dict[tuple[int, ...], tuple[Outcome, bool]] = {}
        self.winners: dict[tuple[int, ...], int] = {}

    def _build(
        self,
        path: tuple[int, ...],
        command: Command,
        parent: Node | None,
        scope: CancelScope | None = None,
    ) -> Node:
        node = Node(path, command, parent)
        if isinstance(command, (Race, All)):
            node.scope = scope or CancelScope(parent.scope if parent else None)
            node.children = [
                self._build((*path, index), child, node)
                for index, child in enumerate(command.children)
            ]
        elif isinstance(command, (Start, Call)):
            node.target = self._child_id(command, path)
        return node

    def leaf(self, path: tuple[int, ...]) -> Node:
        node = self.root
        for index in path:
            node = node.children[index]
        return node

    def is_open(self, leaf: Node) -> bool:
        """Not done, and no composite above it decided (then it lost, or is not needed)."""
        if leaf.path in self.outcomes:
            return False
        node = leaf.parent
        while node is not None:
            if node.path in self.decided:
                return False
            node = node.parent
        return True

    def finished_steps(self) -> dict[tuple[int, ...], Outcome]:
        """The outcomes of the step children that finished (a later attempt keeps them)."""
        return {
            leaf.path: self.outcomes[leaf.path]
            for leaf in self.leaves
            if isinstance(leaf.command, Step) and leaf.path in self.outcomes
        }

    def decide(self, node: Node | None = None) -> tuple[Outcome, bool] | None:
        """(recorded value, failed) of a node (the root by default) once decided."""
        if node is None:
            node = self.root
        if not node.is_composite:
            outcome = self.outcomes.get(node.path)
            return None if outcome is None else (outcome, isinstance(outcome, Failure))
        known = self.decided.get(node.path)
        if known is not None:
            return known
        command = node.command
        result: tuple[Outcome, bool] | None = None
        if isinstance(command, Race):
            for index, child in enumerate(node.children):
                won = self.decide(child)
                if won is not None:
                    self.winners[node.path] = index
                    result = (Value(RaceOutcome(index, won[0]).to_data()), won[1])
                    break
        else:
            assert isinstance(command, All)
            every = [self.decide(child) for child in node.children]
            first_failure = None
            if not command.return_exceptions:
                first_failure = next(
                    (i for i, got in enumerate(every) if got is not None and got[1]), None
                )
            if first_failure is not None or all(got is not None for got in every):
                outcomes = tuple(Value(None) if got is None else got[0] for got in every)
                value = AllOutcome(outcomes, first_failure).to_data()
                result = (Value(value), first_failure is not None)
        if result is not None:
            self.decided[node.path] = result
            if node is not self.root and node.scope is not None:
                node.scope.cancel()  # its losing (or no longer needed) steps
        return result

    def kept(self, node: Node | None = None) -> list[Node]:
        """The leaves whose outcomes the decided node's (the root's) record holds."""
        if node is None:
            node = self.root
        if not node.is_composite:
            return [node] if node.path in self.outcomes else []
        if node.path not in self.decided:
            return []
        if isinstance(node.command, Race):
            return self.kept(node.children[self.winners[node.path]])
        return [leaf for child in node.children for leaf in self.kept(child)]

    def consumed(self) -> list[int]:
        """The messages the record consumes: those its kept leaves took, nothing else."""
        kept = {leaf.path for leaf in self.kept()}
        return [message for message, path in self.taken.items() if path in kept]

    def losing_children(self) -> list[str]:
        """The child runs of `Call` leaves the record does not hold, and of `Start` leaves
        in a branch a race decided against."""
        kept = {leaf.path for leaf in self.kept()}
        losing = []
        # Every child leaf, not only those this attempt started: an earlier attempt
        # (before the run suspended) may have started one that lost since.
        for leaf in self.leaves:
            if not isinstance(leaf.command, (Call, Start)) or not leaf.target:
                continue
            if isinstance(leaf.command, Start):
                # Started at once and recorded: only a lost race takes it back.
                if not self.lost(leaf):
                    continue
            elif leaf.path in kept:
                continue
            losing.append(leaf.target)
        return losing

    def lost(self, leaf: Node) -> bool:
        """Whether a decided `Race` above `leaf` was won by another branch."""
        child, node = leaf, leaf.parent
        while node is not None:
            won = self.winners.get(node.path)
            if won is not None and node.children[won] is not child:
                return True
            child, node = node, node.parent
        return False


def over_the_limit(decided: Outcome, limit: int, what: str) -> Failure | None:
    """The composite's one record holds all its children's outcomes: each was within the
    payload limit, the sum may not be (three 1.5 MB steps). `what` names the record."""
    if not isinstance(decided, Value):
        return None
    size = len(serde.dumps(decided.data).encode())
    if size <= limit:
        return None
    error = PayloadTooLarge(
        f"{what} is {size} bytes encoded, over the limit of {limit}: it holds every "
        "child's outcome. Have the children return references to data stored elsewhere, "
        "or raise Engine(max_payload_bytes=...)"
    )
    return Failure(serde.encode_error(error))
