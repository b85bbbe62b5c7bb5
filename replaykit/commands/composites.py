"""`Race` and `All`: commands that hold other commands and take one position for the tree."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, overload

import attrs

from replaykit.commands.base import (
    A,
    B,
    C,
    Command,
    CommandFacts,
    D,
    T_co,
    Yields,
    _Gives,
    facts_of,
)


class Composite(Command):
    """A command that holds other commands (composites included) and takes one position.

    Its name lists its children's `kind:name`; a composite child is written
    `kind(name)`, so `Race(All(a, b), c)` and `Race(All(a), b, c)` differ.
    """

    __slots__ = ()
    children: tuple[Command, ...]

    @property
    def name(self) -> str:
        return "|".join(
            f"{c.kind}({c.name})" if isinstance(c, Composite) else f"{c.kind}:{c.name}"
            for c in self.children
        )

    def describe_args(self) -> Any:
        return [[c.kind, c.name, c.describe_args()] for c in self.children]

    def describe(self) -> str:
        return f"{type(self).__name__}({', '.join(c.describe() for c in self.children)})"


def _check_children(owner: str, children: tuple[Any, ...]) -> tuple[Command, ...]:
    if not children:
        raise ValueError(f"{owner}() needs at least one command")
    for child in children:
        if not isinstance(child, Command) or not child.kind:
            raise TypeError(f"{owner}() takes replaykit commands, got {child!r}")
        facts = facts_of(child)
        if not facts.in_composite:
            raise TypeError(f"{owner}() cannot hold {type(child).__name__}: {facts.why_not_child}")
        # A nested composite was checked when it was built: nothing refused sits
        # anywhere below it.
    return children


@attrs.frozen(init=False)
class Race(Composite, Yields[T_co]):
    """Yields `(index, value)` of the first child to finish; the others leave no trace.

    Typed as a tagged union: `yield from Race(Recv("ok"), Sleep(60))` is
    `tuple[Literal[0], Any] | tuple[Literal[1], None]`, so `if won[0] == 0:` (or
    `match won: case (0, message):`) narrows the value to that child's type. Up
    to four children are told apart; more give `tuple[int, ...]` of their
    common type. (An async `Step` child's value is `Any` there: use it with
    `yield from` on its own to have it typed.)
    """

    kind: ClassVar[str] = "race"
    facts: ClassVar[CommandFacts] = CommandFacts(waits=True)
    children: tuple[Command, ...]

    @overload
    def __init__(self: Race[tuple[Literal[0], A]], a: _Gives[A], /) -> None: ...
    @overload
    def __init__(
        self: Race[tuple[Literal[0], A] | tuple[Literal[1], B]], a: _Gives[A], b: _Gives[B], /
    ) -> None: ...
    @overload
    def __init__(
        self: Race[tuple[Literal[0], A] | tuple[Literal[1], B] | tuple[Literal[2], C]],
        a: _Gives[A],
        b: _Gives[B],
        c: _Gives[C],
        /,
    ) -> None: ...
    @overload
    def __init__(
        self: Race[
            tuple[Literal[0], A]
            | tuple[Literal[1], B]
            | tuple[Literal[2], C]
            | tuple[Literal[3], D]
        ],
        a: _Gives[A],
        b: _Gives[B],
        c: _Gives[C],
        d: _Gives[D],
        /,
    ) -> None: ...
    @overload
    def __init__(self: Race[tuple[int, A]], *commands: _Gives[A]) -> None: ...
    @overload
    def __init__(self: Race[tuple[int, Any]], *commands: Command) -> None: ...
    def __init__(self, *commands: Any) -> None:
        self.__attrs_init__(_check_children("Race", commands))


@attrs.frozen(init=False)
class All(Composite, Yields[T_co]):
    """Runs children concurrently; yields their values in argument order.

    Typed as a list of the children's types: `yield from All(Step(...), Now())`
    is `list[float | datetime]`. With `return_exceptions=True` a failed child's
    place holds its exception, and the list is `list[Any]`.
    """

    kind: ClassVar[str] = "all"
    facts: ClassVar[CommandFacts] = CommandFacts(waits=True)
    children: tuple[Command, ...]
    return_exceptions: bool

    @overload
    def __init__(
        self: All[list[A]], a: _Gives[A], /, *, return_exceptions: Literal[False] = False
    ) -> None: ...
    @overload
    def __init__(
        self: All[list[A | B]],
        a: _Gives[A],
        b: _Gives[B],
        /,
        *,
        return_exceptions: Literal[False] = False,
    ) -> None: ...
    @overload
    def __init__(
        self: All[list[A | B | C]],
        a: _Gives[A],
        b: _Gives[B],
        c: _Gives[C],
        /,
        *,
        return_exceptions: Literal[False] = False,
    ) -> None: ...
    @overload
    def __init__(
        self: All[list[A | B | C | D]],
        a: _Gives[A],
        b: _Gives[B],
        c: _Gives[C],
        d: _Gives[D],
        /,
        *,
        return_exceptions: Literal[False] = False,
    ) -> None: ...
    @overload
    def __init__(
        self: All[list[A]], *commands: _Gives[A], return_exceptions: Literal[False] = False
    ) -> None: ...
    @overload
    def __init__(
        self: All[list[Any]], *commands: Command, return_exceptions: bool = False
    ) -> None: ...
    def __init__(self, *commands: Any, return_exceptions: bool = False) -> None:
        self.__attrs_init__(_check_children("All", commands), return_exceptions)
