"""Hypothesis strategies for testing a workflow against everything its world may do.

They draw what a workflow cannot control: what each step returns or raises
(and how often it fails before that), when messages arrive and in which order,
which side of a race wins, and where the process crashes. Each result plugs
into `replaykit.testing.run` (and `check_determinism`)::

    @given(
        fakes=step_fakes({"charge": step(st.text(min_size=1), raises=[CardDeclined])}),
        arrivals=race_winners({"confirm": st.just({"ok": True})}, deadline=timedelta(days=1)),
    )
    def test_checkout(fakes, arrivals):
        result = testing.run(checkout, "o-1", 100, steps=fakes, messages=arrivals)
        ...

Generated fakes decide by the call's arguments: the first call with new
arguments takes the next drawn plan (a few transient failures, then a value or
a final failure) and later calls with equal arguments follow that same plan,
in every run of the same example. So a fake answers a re-run of a step (after
a simulated crash, or in each of `check_determinism`'s runs) the way it
answered the first time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

import attrs

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "replaykit.testing.strategies needs hypothesis: pip install hypothesis (or replaykit[test])"
    ) from exc

from replaykit import serde
from replaykit.testing._fakes import AttemptSkips
from replaykit.testing._session import Message

__all__ = [
    "GeneratedFake",
    "RaceScenario",
    "StepSpec",
    "arrival_orders",
    "crash_points",
    "failures",
    "fake",
    "message_schedules",
    "outcomes",
    "race_winners",
    "step",
    "step_fakes",
]

ExceptionSpec = type[BaseException] | BaseException


def _exception_from(spec: ExceptionSpec) -> Callable[[], BaseException]:
    if isinstance(spec, BaseException):
        return lambda: spec
    if isinstance(spec, type) and issubclass(spec, BaseException):
        return lambda: spec(f"generated {spec.__name__}")
    raise TypeError(f"expected an exception class or instance, got {spec!r}")


def failures(*kinds: ExceptionSpec) -> st.SearchStrategy[BaseException]:
    """Exceptions to raise: instances as given, classes built with a fixed message.

    A class must accept one message argument; pass an instance for one that does not.
    """
    if not kinds:
        raise ValueError("failures() needs at least one exception class or instance")
    makers = [_exception_from(kind) for kind in kinds]
    return st.sampled_from(makers).map(lambda make: make())


def outcomes(
    values: st.SearchStrategy[Any], raises: Iterable[ExceptionSpec] = ()
) -> st.SearchStrategy[Any]:
    """One call's outcome: a value from `values`, or one of `raises` (shrinks to a value)."""
    kinds = list(raises)
    if not kinds:
        return values
    return st.one_of(values, failures(*kinds))


@attrs.frozen
class StepSpec:
    """How to generate the fake of one step: see `step()`."""

    values: st.SearchStrategy[Any]
    raises: tuple[ExceptionSpec, ...] = ()
    flaky: int = 0
    transient: tuple[ExceptionSpec, ...] = (TimeoutError,)
    max_plans: int = 4


def step(
    values: st.SearchStrategy[Any] | None = None,
    *,
    raises: Iterable[ExceptionSpec] = (),
    flaky: int = 0,
    transient: Iterable[ExceptionSpec] = (TimeoutError,),
    max_plans: int = 4,
) -> StepSpec:
    """Describe a step's possible behaviour for `step_fakes` / `fake`.

    - `values`: what a successful call returns (default: `None`);
    - `raises`: exception classes (or instances) a call may finally fail with;
    - `flaky`: up to this many failures from `transient` before the final
      outcome, for testing `Retry`;
    - `max_plans`: how many distinct calls get their own drawn plan (more
      calls reuse them in turn).
    """
    if flaky < 0:
        raise ValueError(f"step(flaky={flaky}): must be zero or more")
    if max_plans < 1:
        raise ValueError(f"step(max_plans={max_plans}): must be at least 1")
    return StepSpec(
        values if values is not None else st.none(),
        tuple(raises),
        flaky,
        tuple(transient),
        max_plans,
    )


def _call_key(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    try:
        return serde.canonical_json(serde.encode([list(args), dict(kwargs)]))
    except Exception:
        return repr((args, sorted(kwargs.items())))


class GeneratedFake:
    """A step fake drawn by hypothesis: one plan of attempt outcomes per distinct call.

    A plan is a list of outcomes for the call's successive attempts (retries);
    its last outcome repeats. The plan a call gets is fixed by the order its
    arguments were first seen, across every run of one example; the attempt
    count restarts in each simulated process (`fresh()`), as a re-run step's
    attempts would, past the attempts a step retried across a crash has
    recorded as made.
    """

    def __init__(self, plans: Sequence[Sequence[Any]], name: str = "") -> None:
        if not plans or any(not plan for plan in plans):
            raise ValueError("GeneratedFake needs at least one non-empty plan")
        self.plans = [list(plan) for plan in plans]
        self.name = name
        self._assigned: dict[str, int] = {}
        self._attempts: dict[str, int] = {}
        self._skips = AttemptSkips()
        self._lock = threading.Lock()

    def fresh(self) -> GeneratedFake:
        twin = GeneratedFake(self.plans, self.name)
        # Shared on purpose: a call keeps its plan however many runs see it.
        twin.plans = self.plans
        twin._assigned = self._assigned
        twin._lock = self._lock
        return twin

    def plan_for(self, *args: Any, **kwargs: Any) -> list[Any]:
        """The plan a call with these arguments follows (assigning one if new)."""
        key = _call_key(args, kwargs)
        with self._lock:
            index = self._assigned.setdefault(key, len(self._assigned))
        return self.plans[index % len(self.plans)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = _call_key(args, kwargs)
        with self._lock:
            index = self._assigned.setdefault(key, len(self._assigned))
            attempt = self._attempts.get(key, 0) + self._skips.skip()
            self._attempts[key] = attempt + 1
        plan = self.plans[index % len(self.plans)]
        outcome = plan[min(attempt, len(plan) - 1)]
        if isinstance(outcome, BaseException):
            raise outcome.with_traceback(None)
        return outcome

    def __repr__(self) -> str:
        # Hypothesis prints this for a falsifying example: show the plans.
        name = f"{self.name!r}, " if self.name else ""
        return f"GeneratedFake({name}{self.plans!r})"


def _plans(spec: StepSpec) -> st.SearchStrategy[list[list[Any]]]:
    final = outcomes(spec.values, spec.raises)
    if spec.flaky and spec.transient:
        transient = failures(*spec.transient)
        plan = st.builds(
            lambda head, last: [*head, last],
            st.lists(transient, max_size=spec.flaky),
            final,
        )
    else:
        plan = final.map(lambda last: [last])
    return st.lists(plan, min_size=1, max_size=spec.max_plans)


def fake(
    spec: StepSpec | st.SearchStrategy[Any], name: str = ""
) -> st.SearchStrategy[GeneratedFake]:
    """A `GeneratedFake` for one step: from a `step(...)` spec or a strategy of values."""
    if not isinstance(spec, StepSpec):
        spec = step(spec)
    return _plans(spec).map(lambda plans: GeneratedFake(plans, name))


def step_fakes(
    specs: Mapping[str, StepSpec | st.SearchStrategy[Any]],
) -> st.SearchStrategy[dict[str, GeneratedFake]]:
    """A `steps=` dict for `run()`: a generated fake for each named step.

    Each value is a `step(...)` spec, or just a strategy of return values
    (a step that always succeeds).
    """
    if not specs:
        raise ValueError("step_fakes() needs at least one step name")
    return st.fixed_dictionaries({name: fake(spec, name) for name, spec in specs.items()})


def _instants(within: timedelta, resolution: timedelta) -> st.SearchStrategy[timedelta]:
    if resolution <= timedelta(0):
        raise ValueError("resolution must be positive")
    ticks = int(within / resolution)
    return st.integers(0, ticks).map(lambda n: n * resolution)


def message_schedules(
    topics: Mapping[str | None, st.SearchStrategy[Any]],
    *,
    min_messages: int = 0,
    max_messages: int = 3,
    within: timedelta = timedelta(days=1),
    resolution: timedelta = timedelta(minutes=1),
    to: str | None = None,
) -> st.SearchStrategy[list[Message]]:
    """Messages on the given topics (payloads from each topic's strategy) at drawn times.

    Times are multiples of `resolution` in [0, within], so ties happen and
    shrink toward "everything arrives at the start". Sorted by arrival.
    """
    if not topics:
        raise ValueError("message_schedules() needs at least one topic")
    one = st.sampled_from(list(topics)).flatmap(
        lambda topic: st.builds(
            lambda payload, at: Message(topic, payload, at=at, to=to),
            topics[topic],
            _instants(within, resolution),
        )
    )
    return st.lists(one, min_size=min_messages, max_size=max_messages).map(_by_arrival)


def _by_arrival(messages: Iterable[Message]) -> list[Message]:
    return sorted(messages, key=lambda m: m.at if isinstance(m.at, timedelta) else timedelta(0))


def arrival_orders(
    messages: Sequence[Message],
    *,
    within: timedelta = timedelta(days=1),
    resolution: timedelta = timedelta(minutes=1),
) -> st.SearchStrategy[list[Message]]:
    """The given messages in every order, at drawn times (their own `at` is replaced)."""
    if not messages:
        return st.just([])
    return st.builds(
        lambda order, times: [
            attrs.evolve(m, at=t) for m, t in zip(order, sorted(times), strict=True)
        ],
        st.permutations(list(messages)),
        st.lists(_instants(within, resolution), min_size=len(messages), max_size=len(messages)),
    )


@attrs.frozen
class RaceScenario:
    """Who wins a race between messages and a deadline, and the messages that make it so.

    `winner` is the topic whose message arrives first, strictly before the
    deadline, or None when the deadline passes first. Iterating gives the
    messages, so a scenario can be passed as `run(..., messages=scenario)`.
    """

    winner: str | None
    messages: tuple[Message, ...]
    deadline: timedelta

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)


def race_winners(
    contenders: Mapping[str, st.SearchStrategy[Any]],
    *,
    deadline: timedelta,
    resolution: timedelta = timedelta(minutes=1),
    to: str | None = None,
) -> st.SearchStrategy[RaceScenario]:
    """Scenarios for `Race(Recv(a), Recv(b), ..., Sleep(deadline))` started at time 0.

    Either one contender's message arrives first and strictly before the
    deadline (others arrive later, or never), or every message (if any)
    arrives strictly after the deadline. Ties never decide a scenario.
    """
    if not contenders:
        raise ValueError("race_winners() needs at least one contender topic")
    if deadline < 2 * resolution:
        raise ValueError("race_winners() needs a deadline of at least two resolutions")
    topics = list(contenders)
    last_tick = int(deadline / resolution)

    @st.composite
    def scenario(draw: st.DrawFn) -> RaceScenario:
        winner = draw(st.sampled_from([*topics, None]))
        messages: list[Message] = []
        if winner is not None:
            first = draw(st.integers(0, last_tick - 1))
            messages.append(Message(winner, draw(contenders[winner]), at=first * resolution, to=to))
            floor = first + 1
        else:
            floor = last_tick + 1
        for topic in topics:
            if topic == winner or not draw(st.booleans()):
                continue
            tick = draw(st.integers(floor, floor + last_tick))
            messages.append(Message(topic, draw(contenders[topic]), at=tick * resolution, to=to))
        return RaceScenario(winner, tuple(_by_arrival(messages)), deadline)

    return scenario()


def crash_points(
    *, max_commit: int = 30, max_crashes: int = 1
) -> st.SearchStrategy[tuple[int, ...]]:
    """Commit numbers to crash before, for `run(..., crash_at=...)`.

    A run makes one commit per record (two for a timed command: its start and
    its end) and one to finish; numbers past the last commit crash nothing.
    Shrinks toward a crash at the very first commit.
    """
    if max_crashes < 1:
        raise ValueError("crash_points(max_crashes=...) must be at least 1")
    return st.lists(st.integers(0, max_commit), min_size=1, max_size=max_crashes, unique=True).map(
        lambda points: tuple(sorted(points))
    )
