"""`Step` and `Transaction`: the commands that run the user's code once and record its outcome."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine, Generator, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Generic, overload

import attrs

from replaykit._durations import Retry, as_seconds
from replaykit.commands.base import Command, CommandFacts, R, T, Ts, Yields, alone


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
    facts: ClassVar[CommandFacts] = CommandFacts()
    step_name: str
    fn: Callable[..., Any] = attrs.field(eq=False)
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    retry: Retry | None
    timeout: float | None
    preemptible: bool
    heartbeat_timeout: float | None

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
            heartbeat_timeout: timedelta | float | None = None,
        ) -> None: ...

        @overload
        def __iter__(self: Step[Coroutine[Any, Any, T]]) -> Generator[Command, Any, T]: ...
        @overload
        def __iter__(self: Step[T]) -> Generator[Command, Any, T]: ...
        def __iter__(self) -> Generator[Command, Any, Any]: ...

    else:

        def __init__(
            self,
            name,
            fn,
            /,
            *args,
            retry=None,
            timeout=None,
            preemptible=False,
            heartbeat_timeout=None,
            **kwargs,
        ):
            _init_step(self, name, fn, args, kwargs, retry, timeout, preemptible, heartbeat_timeout)

    def options(
        self,
        *,
        retry: Retry | None = None,
        timeout: timedelta | float | None = None,
        preemptible: bool | None = None,
        heartbeat_timeout: timedelta | float | None = None,
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
            self.heartbeat_timeout if heartbeat_timeout is None else heartbeat_timeout,
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
    heartbeat_timeout: timedelta | float | None = None,
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
    beat_within = as_seconds(heartbeat_timeout, f"Step({name!r}) heartbeat_timeout")
    if beat_within is not None and not 0 < beat_within < math.inf:
        raise ValueError(
            f"Step({name!r}, ...): heartbeat_timeout must be more than zero, got "
            f"{heartbeat_timeout!r}: it is how long the body may go without calling "
            "step_context().heartbeat(); pass None for no such limit"
        )
    step.__attrs_init__(
        name,
        fn,
        args,
        dict(kwargs),
        retry,
        as_seconds(timeout, f"Step({name!r}) timeout"),
        preemptible,
        beat_within,
    )


@attrs.frozen(init=False)
class Transaction(Yields[Any]):
    """Run `fn(conn, *args)` inside the store transaction that records its outcome."""

    kind: ClassVar[str] = "transaction"
    facts: ClassVar[CommandFacts] = alone(
        "its body runs inside the transaction that commits its own record"
    )
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
