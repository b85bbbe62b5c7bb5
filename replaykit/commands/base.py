"""What every command is: `Command`, `Yields`, and the facts each kind states.

Every command is a frozen attrs value. The interpreter needs three things from
each: its `kind` and `name` (compared on every replay), and `describe_args()`,
the JSON-encodable arguments whose digest strict mode compares. Each command
class states its `CommandFacts` beside its definition, and every layer (the
construction checks, the effect runner, the wake rules, the composites) reads
them through `facts_of` instead of keeping lists of its own.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, TypeVarTuple

import attrs

R = TypeVar("R")
T = TypeVar("T")
if TYPE_CHECKING:
    # A default (PEP 696) lets a bare `Call` or `Race` in an annotation mean
    # `Call[Any]`; only type checkers read it, so typing_extensions is not needed
    # at run time.
    from typing_extensions import TypeVar as _DefaultedTypeVar

    T_co = _DefaultedTypeVar("T_co", covariant=True, default=Any)
else:
    T_co = TypeVar("T_co", covariant=True)
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
Ts = TypeVarTuple("Ts")


def callable_name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


class Command:
    """Base of everything a workflow may yield."""

    kind: ClassVar[str] = ""
    __slots__ = ()

    @property
    def name(self) -> str:
        return self.kind

    def describe_args(self) -> Any:
        """The arguments that strict replay compares, as plain values."""
        return None

    def describe(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # The one iterator every command shares, so that the interpreter sees through
    # it to the workflow's own line (its `call_site`), whichever command it is.
    def __iter__(self) -> Generator[Command, Any, Any]:
        """`result = yield from command`: yields the command once and returns what the
        run sends back, exactly as `result = yield command` does."""
        result = yield self
        return result


class Yields(Command, Generic[T_co]):
    """A command whose `yield from` gives a `T_co`: `now = yield from Now()` is a datetime.

    `yield command` works the same at run time, but a generator's sent value is typed
    once for the whole body, so its result is `Any`; `yield from` types each one.
    """

    __slots__ = ()

    if TYPE_CHECKING:

        def __iter__(self) -> Generator[Command, Any, T_co]: ...


class _Gives(Protocol[T_co]):
    """What `Race` and `All` hold: a command whose `yield from` gives a `T_co`."""

    def __iter__(self) -> Generator[Command, Any, T_co]: ...


@attrs.frozen
class CommandFacts:
    """What every layer needs to know about one kind of command, stated by its class."""

    #: The notification that may complete it ("message", "event", "finished"), if any.
    wakes_on: str | None = None
    #: The attribute holding its deadline in seconds from its start, if it can time out.
    timeout_field: str | None = None
    #: Completes at once, without waiting and without running user code.
    instant: bool = False
    #: Waits for something outside the run (a time, a message, an event, a workflow).
    waits: bool = False
    #: May be a child of `Race` / `All`; when not, `why_not_child` says what to do instead.
    in_composite: bool = True
    why_not_child: str = ""
    #: Ends the run's current log: nothing after it runs, and it takes no position.
    terminal: bool = False

    def timeout_seconds(self, command: Command) -> float | None:
        if self.timeout_field is None:
            return None
        seconds: float | None = getattr(command, self.timeout_field)
        return seconds


ALONE = "yield it on its own, before or after the composite"
#: Why a command whose effect is carried out with its record is never a child.
NEVER_UNDONE = "which a losing child could never undo"


def alone(why: str, *, instant: bool = False) -> CommandFacts:
    """The facts of a command never yielded inside `Race` / `All`: `why`, then `ALONE`."""
    return CommandFacts(instant=instant, in_composite=False, why_not_child=f"{why}; {ALONE}")


def facts_of(command: Command) -> CommandFacts:
    """The facts this command's class states (subclasses share their base's)."""
    facts: CommandFacts | None = getattr(type(command), "facts", None)
    if facts is None:
        raise TypeError(f"{type(command).__qualname__} is not a replaykit command")
    return facts
