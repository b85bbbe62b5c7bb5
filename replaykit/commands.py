"""The commands a workflow yields.

Every command is a frozen attrs value. The interpreter needs three things from
each: its `kind` and `name` (compared on every replay), and `describe_args()`,
the JSON-encodable arguments whose digest strict mode compares. Leaf commands
are carried out by the runtime; composites (`Race`, `All`) hold children (leaf
commands or other composites) and take one position for the whole tree.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine, Generator, Mapping
from datetime import datetime, timedelta
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    Protocol,
    TypeVar,
    TypeVarTuple,
    overload,
)

import attrs

from replaykit._durations import Retry, as_seconds, earliest_deadline, run_deadline
from replaykit.log import CLOSE_STREAM_KIND, WRITE_STREAM_KIND
from replaykit.registry import BoundWorkflow, Workflow, unbind

__all__ = [
    "All",
    "Call",
    "CloseStream",
    "Command",
    "CommandFacts",
    "Composite",
    "ContinueAsNew",
    "DeprecatePatch",
    "GetEvent",
    "Now",
    "Patch",
    "Race",
    "Random",
    "Recv",
    "Retry",
    "Send",
    "SetEvent",
    "Sleep",
    "Start",
    "Step",
    "Transaction",
    "Uuid",
    "Wait",
    "WriteStream",
    "Yields",
    "as_seconds",
    "callable_name",
    "earliest_deadline",
    "facts_of",
    "run_deadline",
]


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
class Step(Command, Generic[R]):
    """Run `fn(*args, **kwargs)` once and record its return value or its failure.

    Typed: `charged = yield from Step("charge", charge_card, order)` gives
    `charged` the return type of `charge_card` (an async function's awaited
    type), and mypy checks `order` against its parameters, with one error
    naming the mismatch when it does not fit. `R` is what `fn` returns (for an
    async function, its coroutine); `yield from` gives what the run records.
    `yield Step(...)` works the same at run time, but a generator's sent value
    is typed once for the whole body, so its result is `Any`. The options
    (`retry=`, `timeout=`, `preemptible=`) are keyword-only and checked too;
    `Step(...).options(...)` sets them on a step already built.

    mypy checks the function's arguments when they are passed positionally. A
    keyword argument for `fn` is accepted at run time, but mypy cannot check it
    together with the options (PEP 612 allows no option of ours beside `fn`'s
    keywords), so the typed signature has none: bind keywords with
    `functools.partial(fn, key=value)`, which mypy checks.

    `preemptible=True`: while the body runs, the engine watches the run's status
    in the store, and a cancel from anywhere (another engine, another process,
    the CLI) stops it at once: an async body's task is cancelled, a sync body
    is abandoned (its thread runs on; its outcome is dropped). When the run was
    cancelled, the step's record says so: a resume gets `StepPreempted` at the
    step's `yield` and never runs the body again by itself. Without it a cancel made
    elsewhere is seen when the body ends, and the step's record lands.
    """

    kind: ClassVar[str] = "step"
    step_name: str
    fn: Callable[..., Any] = attrs.field(eq=False)
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    retry: Retry | None
    timeout: float | None
    preemptible: bool

    # One signature, not overloads: a wrong argument is then one error naming it
    # (an overloaded constructor answers "no overload variant matches" and lists
    # every variant). The run-time constructor also takes `fn`'s keywords.
    if TYPE_CHECKING:

        def __init__(
            self,
            name: str,
            fn: Callable[[*Ts], R],
            /,
            *args: *Ts,
            retry: Retry | None = None,
            timeout: timedelta | float | None = None,
            preemptible: bool = False,
        ) -> None: ...

        @overload
        def __iter__(self: Step[Coroutine[Any, Any, T]]) -> Generator[Command, Any, T]: ...
        @overload
        def __iter__(self: Step[T]) -> Generator[Command, Any, T]: ...
        def __iter__(self) -> Generator[Command, Any, Any]: ...

    else:

        def __init__(
            self, name, fn, /, *args, retry=None, timeout=None, preemptible=False, **kwargs
        ):
            _init_step(self, name, fn, args, kwargs, retry, timeout, preemptible)

    def options(
        self,
        *,
        retry: Retry | None = None,
        timeout: timedelta | float | None = None,
        preemptible: bool | None = None,
    ) -> Step[R]:
        """This step with options set, its arguments still checked by mypy."""
        changed: Step[R] = Step.__new__(Step)
        _init_step(
            changed,
            self.step_name,
            self.fn,
            self.args,
            dict(self.kwargs),
            self.retry if retry is None else retry,
            self.timeout if timeout is None else timeout,
            self.preemptible if preemptible is None else preemptible,
        )
        return changed

    @property
    def name(self) -> str:
        return self.step_name

    def describe_args(self) -> Any:
        return [list(self.args), dict(self.kwargs)]


def _init_step(
    step: Step[Any],
    name: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    retry: Retry | None,
    timeout: timedelta | float | None,
    preemptible: bool,
) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"Step's first argument is its name (a non-empty str), got {name!r}; "
            "write Step('charge', charge_card, ...)"
        )
    if not callable(fn):
        raise TypeError(f"Step({name!r}, ...): the second argument must be callable, got {fn!r}")
    if retry is not None and not isinstance(retry, Retry):
        raise TypeError(f"Step({name!r}, ...): retry must be a Retry(...), got {retry!r}")
    if not isinstance(preemptible, bool):
        raise TypeError(
            f"Step({name!r}, ...): preemptible must be True or False, got {preemptible!r}"
        )
    step.__attrs_init__(
        name,
        fn,
        args,
        dict(kwargs),
        retry,
        as_seconds(timeout, f"Step({name!r}) timeout"),
        preemptible,
    )


@attrs.frozen(init=False)
class Transaction(Yields[Any]):
    """Run `fn(conn, *args)` inside the store transaction that records its outcome."""

    kind: ClassVar[str] = "transaction"
    tx_name: str
    fn: Callable[..., Any] = attrs.field(eq=False)
    args: tuple[Any, ...]

    def __init__(self, name: str, fn: Callable[..., Any], /, *args: Any) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"Transaction's first argument is its name, got {name!r}")
        if not callable(fn):
            raise TypeError(f"Transaction({name!r}, ...): fn must be callable, got {fn!r}")
        self.__attrs_init__(name, fn, args)

    @property
    def name(self) -> str:
        return self.tx_name

    def describe_args(self) -> Any:
        return list(self.args)


@attrs.frozen(init=False)
class Sleep(Yields[None]):
    """Wait durably. The wake instant is recorded when the sleep starts."""

    kind: ClassVar[str] = "sleep"
    seconds: float

    def __init__(self, duration: timedelta | float) -> None:
        seconds = as_seconds(duration, "Sleep duration")
        assert seconds is not None
        self.__attrs_init__(seconds)

    @property
    def duration(self) -> timedelta:
        return timedelta(seconds=self.seconds)

    def describe_args(self) -> Any:
        return self.seconds


@attrs.frozen
class Now(Yields[datetime]):
    """The current UTC time, recorded once (an aware `datetime`)."""

    kind: ClassVar[str] = "now"


@attrs.frozen
class Random(Yields[float]):
    """A float in [0, 1), recorded once."""

    kind: ClassVar[str] = "random"


@attrs.frozen
class Uuid(Yields[uuid.UUID]):
    """A random UUID4, recorded once (a `uuid.UUID`)."""

    kind: ClassVar[str] = "uuid"


def _send_key(value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(
            f"Send(idempotency_key={value!r}): the key must be a non-empty str "
            "(such as 'invoice-7'), or None for one delivery per position"
        )
    return value


@attrs.frozen
class Send(Yields[bool | None]):
    """Deliver `message` to another workflow's inbox.

    Without `idempotency_key`, one delivery per position (the outcome is None).
    With one, at most one delivery per receiving run and key, whoever sends it
    (other runs, other positions, `engine.send` with that key): the outcome is
    True if this Send delivered the message, False if the key was used before.
    """

    kind: ClassVar[str] = "send"
    workflow_id: str
    message: Any
    topic: str | None = None
    idempotency_key: str | None = attrs.field(default=None, converter=_send_key)

    @property
    def name(self) -> str:
        return self.topic or ""

    def describe_args(self) -> Any:
        # Without a key the arguments are those logs recorded before keys existed,
        # so their digests still match.
        if self.idempotency_key is None:
            return [self.workflow_id, self.message]
        return [self.workflow_id, self.message, {"idempotency_key": self.idempotency_key}]


@attrs.frozen(init=False)
class Recv(Yields[T_co]):
    """Take the next message on `topic` (FIFO), or `None` once `timeout` passes.

    `yield from Recv(topic)` is `Any` (a message is whatever was sent); with a
    timeout it is `Any | None`, so mypy asks for the `None` of a timeout to be
    handled (a message that is itself `None` looks the same).
    """

    kind: ClassVar[str] = "recv"
    topic: str | None
    timeout: float | None

    @overload
    def __init__(self: Recv[Any], topic: str | None = None, timeout: None = None) -> None: ...
    @overload
    def __init__(
        self: Recv[Any | None], topic: str | None = None, *, timeout: timedelta | float | None
    ) -> None: ...
    @overload
    def __init__(
        self: Recv[Any | None], topic: str | None, timeout: timedelta | float | None
    ) -> None: ...
    def __init__(self, topic: str | None = None, timeout: timedelta | float | None = None) -> None:
        self.__attrs_init__(topic, as_seconds(timeout, "Recv timeout"))

    @property
    def name(self) -> str:
        return self.topic or ""

    def describe_args(self) -> Any:
        return self.timeout


@attrs.frozen
class SetEvent(Yields[None]):
    """Publish `value` under `key` for this workflow; the latest value wins."""

    kind: ClassVar[str] = "set_event"
    key: str
    value: Any

    @property
    def name(self) -> str:
        return self.key

    def describe_args(self) -> Any:
        return self.value


@attrs.frozen(init=False)
class GetEvent(Yields[T_co]):
    """Read another workflow's event `key`, waiting up to `timeout` for it to be set.

    `yield from GetEvent(id, key)` is `Any` (an event is whatever was set); with
    a timeout it is `Any | None`, `None` when the timeout passed first.
    """

    kind: ClassVar[str] = "get_event"
    workflow_id: str
    key: str
    timeout: float | None

    @overload
    def __init__(self: GetEvent[Any], workflow_id: str, key: str, timeout: None = None) -> None: ...
    @overload
    def __init__(
        self: GetEvent[Any | None], workflow_id: str, key: str, timeout: timedelta | float | None
    ) -> None: ...
    def __init__(
        self, workflow_id: str, key: str, timeout: timedelta | float | None = None
    ) -> None:
        self.__attrs_init__(workflow_id, key, as_seconds(timeout, "GetEvent timeout"))

    @property
    def name(self) -> str:
        return self.key

    def describe_args(self) -> Any:
        return [self.workflow_id, self.timeout]


def _stream_key(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(
            f"a stream's key must be a non-empty str (such as 'progress'), got {value!r}"
        )
    return value


@attrs.frozen
class WriteStream(Yields[None]):
    """Append `value` to this run's stream `key`; yields None.

    The value takes a position of its own in the run's log, so a replay writes
    nothing again: each value is read once, in order, by
    `engine.read_stream(workflow_id, key)` (and the client's and the async forms).
    A stream this run closed (`CloseStream(key)`) takes no more values: writing to
    it raises `StreamClosed` in the workflow, at the `yield`.
    """

    kind: ClassVar[str] = WRITE_STREAM_KIND
    key: str = attrs.field(converter=_stream_key)
    value: Any = None

    @property
    def name(self) -> str:
        return self.key

    def describe_args(self) -> Any:
        return self.value

    def describe(self) -> str:
        return f"WriteStream({self.key!r})"


@attrs.frozen
class CloseStream(Yields[None]):
    """Close this run's stream `key`: its readers end once they have read every value.

    Closing a closed stream again is allowed and changes nothing for its readers. A
    run that finishes (in any way) ends its streams for their readers too; closing
    says "no more values" while the run goes on.
    """

    kind: ClassVar[str] = CLOSE_STREAM_KIND
    key: str = attrs.field(converter=_stream_key)

    @property
    def name(self) -> str:
        return self.key

    def describe(self) -> str:
        return f"CloseStream({self.key!r})"


def _workflow_name(wf: Any) -> str:
    name = getattr(wf, "workflow_name", None)
    if isinstance(name, str):
        return name
    raise TypeError(
        f"expected a function decorated with @workflow, got {wf!r}; "
        "decorate it with @replaykit.workflow so the engine can find it again by name"
    )


@attrs.frozen(init=False)
class _ChildCommand(Command):
    """What `Start` and `Call` share: the child's workflow, arguments, id and queue.

    `workflow_id`, `queue`, `timeout` and `deadline` are options of the start;
    every other keyword goes to the child. `timeout` (a timedelta or seconds)
    and `deadline` (an aware datetime) bound the *child run*, as they do on
    `engine.start`: the child's deadline is the earliest of them and of this
    run's own deadline (it inherits what remains of it). It is not how long
    this run waits: for that, `Wait(child_id, timeout=...)`.
    """

    workflow: Any = attrs.field(eq=False)
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    workflow_id: str | None
    queue: str | None
    timeout: float | None = None
    deadline: datetime | None = None

    def __init__(
        self,
        wf: Workflow[..., Any] | BoundWorkflow[Any],
        /,
        *args: Any,
        workflow_id: str | None = None,
        queue: str | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(wf, BoundWorkflow):
            wf, args, kwargs = unbind(wf, args, kwargs)
        name = _workflow_name(wf)
        seconds, deadline = run_deadline(
            timeout, deadline, what=f"{type(self).__name__}({name!r}, ...)"
        )
        self.__attrs_init__(wf, args, dict(kwargs), workflow_id, queue, seconds, deadline)

    @property
    def name(self) -> str:
        return _workflow_name(self.workflow)

    def describe_args(self) -> Any:
        described: list[Any] = [list(self.args), dict(self.kwargs), self.workflow_id]
        # Only when given: the digests of logs recorded before these options stay the same.
        if self.timeout is not None or self.deadline is not None:
            described.append(
                {
                    "timeout": self.timeout,
                    "deadline": None if self.deadline is None else self.deadline.isoformat(),
                }
            )
        return described


@attrs.frozen(init=False)
class Start(_ChildCommand, Yields[str]):
    """Start a child workflow; yields its id. Replays start nothing new."""

    kind: ClassVar[str] = "start"


@attrs.frozen(init=False)
class Call(_ChildCommand, Yields[T_co]):
    """Start a child workflow and wait for its result, in one position.

    `yield from Call(child, ...)` is typed by the child's return annotation
    (`Generator[..., ..., R]` gives `R`). `Call(child.bind(...), workflow_id=...)`
    has mypy check the child's arguments too, as `engine.start` does.
    """

    kind: ClassVar[str] = "call"

    if TYPE_CHECKING:

        def __init__(
            self,
            wf: Workflow[..., T_co] | BoundWorkflow[T_co],
            /,
            *args: Any,
            workflow_id: str | None = None,
            queue: str | None = None,
            timeout: timedelta | float | None = None,
            deadline: datetime | None = None,
            **kwargs: Any,
        ) -> None: ...


@attrs.frozen(init=False)
class Wait(Yields[Any]):
    """Wait for another workflow to finish; yields its result or raises its failure."""

    kind: ClassVar[str] = "wait"
    workflow_id: str
    timeout: float | None

    def __init__(self, workflow_id: str, timeout: timedelta | float | None = None) -> None:
        self.__attrs_init__(workflow_id, as_seconds(timeout, "Wait timeout"))

    @property
    def name(self) -> str:
        return "wait"

    def describe_args(self) -> Any:
        return [self.workflow_id, self.timeout]


@attrs.frozen
class Patch(Command):
    """`True` for runs that reach this point after the patch shipped, else `False`.

    A run recorded before the patch has no marker at this position; the
    interpreter then answers `False` without taking a position, so the old
    branch lines up with the old log. Once it has answered `False` for a run, it
    answers `False` at every later site of the same name in that run, so the run
    never takes half of each branch (docs/versioning.md).
    """

    kind: ClassVar[str] = "patch"
    patch_name: str

    @property
    def name(self) -> str:
        return self.patch_name


@attrs.frozen
class DeprecatePatch(Command):
    """Keeps old runs that recorded `Patch(name)` replayable after the old branch is gone.

    It consumes a recorded marker of that name if one stands at this position and
    records nothing for new runs. A run for which `Patch(name)` already answered
    `False` cannot follow the code past it: the interpreter raises
    `NonDeterminismError` (the engine parks the run).
    """

    kind: ClassVar[str] = "deprecate_patch"
    patch_name: str

    @property
    def name(self) -> str:
        return self.patch_name


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


@attrs.frozen(init=False)
class ContinueAsNew(Command):
    """End this log and start the workflow again under the same id with these arguments.

    `yield ContinueAsNew(*args, **kwargs)` does not return: the run's current
    generation is archived (a row of its own, status CONTINUED, holding its
    log), and the same workflow id starts over from an empty log, called with
    `args` and `kwargs` as a start would call it. Messages not yet consumed
    stay in the id's inbox, `send` reaches the new generation, and
    `handle.result()` answers with the last generation's result. It takes no
    position; positions recorded after it are a `NonDeterminismError`, as for
    a return.
    """

    kind: ClassVar[str] = "continue_as_new"
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__attrs_init__(args, dict(kwargs))

    def describe_args(self) -> Any:
        return [list(self.args), dict(self.kwargs)]


# -- one table of what each command is ---------------------------------------------------


@attrs.frozen
class CommandFacts:
    """What every layer needs to know about one kind of command, in one place.

    The construction checks, the effect runner, the wake rules and the
    composites all read this table instead of keeping lists of their own.
    """

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


_ALONE = "yield it on its own, before or after the composite"

_FACTS: dict[type[Command], CommandFacts] = {
    Step: CommandFacts(),
    Transaction: CommandFacts(
        in_composite=False,
        why_not_child="its body runs inside the transaction that commits its own record; " + _ALONE,
    ),
    Sleep: CommandFacts(timeout_field="seconds", waits=True),
    Now: CommandFacts(instant=True),
    Random: CommandFacts(instant=True),
    Uuid: CommandFacts(instant=True),
    Send: CommandFacts(
        in_composite=False,
        why_not_child="its message is delivered in the same commit as its own record, which a "
        "losing child could never undo; " + _ALONE,
    ),
    Recv: CommandFacts(wakes_on="message", timeout_field="timeout", waits=True),
    SetEvent: CommandFacts(
        in_composite=False,
        why_not_child="its value is published in the same commit as its own record, which a "
        "losing child could never undo; " + _ALONE,
    ),
    GetEvent: CommandFacts(wakes_on="event", timeout_field="timeout", waits=True),
    Start: CommandFacts(instant=True),
    Call: CommandFacts(wakes_on="finished", waits=True),
    Wait: CommandFacts(wakes_on="finished", timeout_field="timeout", waits=True),
    Patch: CommandFacts(
        instant=True,
        in_composite=False,
        why_not_child="a patch marker takes a position of its own (or none, on old runs); "
        + _ALONE,
    ),
    DeprecatePatch: CommandFacts(
        instant=True,
        in_composite=False,
        why_not_child="a patch marker takes a position of its own (or none, on old runs); "
        + _ALONE,
    ),
    ContinueAsNew: CommandFacts(
        terminal=True,
        in_composite=False,
        why_not_child="it ends the run's log, which a composite's other children would still "
        "be writing to; yield it on its own, after the composite",
    ),
    Race: CommandFacts(waits=True),
    All: CommandFacts(waits=True),
    WriteStream: CommandFacts(
        instant=True,
        in_composite=False,
        why_not_child="readers find a stream's values in records of their own, and a "
        "composite keeps its children inside its one record; " + _ALONE,
    ),
    CloseStream: CommandFacts(
        instant=True,
        in_composite=False,
        why_not_child="readers find a stream's end in a record of its own, and a "
        "composite keeps its children inside its one record; " + _ALONE,
    ),
}


def facts_of(command: Command) -> CommandFacts:
    """The table's row for this command (subclasses share their base's row)."""
    for cls in type(command).__mro__:
        facts = _FACTS.get(cls)
        if facts is not None:
            return facts
    raise TypeError(f"{type(command).__qualname__} is not a replaykit command")
