"""Step fakes: turning what a test passes as `steps={...}` into callables.

A fake may be a callable (called with the step's arguments), a plain value
(returned), an exception instance or class (raised), or a `sequence(...)` of
those for successive calls. Fakes with a `fresh()` method are stateful: the kit
asks each simulated process (each engine it starts) for a fresh copy, so a
process that recovers after a crash starts the fake's attempt counters over
exactly as a restarted service would. A step retried across a restart goes on
with its recorded attempt count, and so do these fakes: when the first call a
process makes for one step of one run is attempt n (`step_context().attempt`),
the n-1 outcomes the earlier attempts took are skipped.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from replaykit.interpreter import step_context_var
from replaykit.testing._real_steps import RealStepsRule

__all__ = ["AttemptSkips", "StepCall", "StepTap", "as_fake", "fresh_fakes", "sequence"]


@attrs.frozen
class StepCall:
    """One call of a step body (one attempt), as `RunResult.calls` lists them."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = attrs.field(factory=dict)


class AttemptSkips:
    """How many outcomes a stateful fake skips for attempts made in another process.

    Keyed by (workflow id, position): the first call seen for a step of a run at
    attempt n skips n-1 outcomes (its earlier attempts ran before a simulated
    crash), and a later call at attempt m skips what lies between. Outside a step
    attempt (a fake called by hand) nothing is skipped.
    """

    def __init__(self) -> None:
        self._last: dict[tuple[str, int], int] = {}

    def skip(self) -> int:
        """Call under the fake's lock, once per call of the fake."""
        ctx = step_context_var.get()
        if ctx is None:
            return 0
        key = (ctx.workflow_id, ctx.position)
        before = self._last.get(key, 0)
        self._last[key] = ctx.attempt
        return max(ctx.attempt - 1 - before, 0)


def _raise(exc: BaseException) -> Any:
    # The same instance may be raised on every retry; dropping the old
    # traceback keeps each attempt's traceback its own.
    raise exc.with_traceback(None)


def _outcome_of(outcome: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    if isinstance(outcome, BaseException):
        return _raise(outcome)
    if isinstance(outcome, type) and issubclass(outcome, BaseException):
        raise outcome
    if callable(outcome):
        return outcome(*args, **kwargs)
    return outcome


class _Constant:
    """A fake that returns a value or raises an exception, whatever the arguments."""

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _outcome_of(self.outcome, args, kwargs)

    def __repr__(self) -> str:
        return f"fake({self.outcome!r})"


class sequence:
    """Successive outcomes for successive calls of one step (retries, loops).

    Each item is a value to return, an exception (instance or class) to raise,
    or a callable to call with the step's arguments. A call past the last item
    raises `AssertionError`, which the step records as its failure.

    The position in the sequence is per simulated process: after a simulated
    crash the recovering engine starts again from the first item, past the
    items of the attempts the step has recorded as made (a step retried across
    the crash goes on at its recorded attempt).
    """

    def __init__(self, *outcomes: Any) -> None:
        if not outcomes:
            raise ValueError("sequence() needs at least one outcome")
        self.outcomes = outcomes
        self._next = 0
        self._skips = AttemptSkips()
        self._lock = threading.Lock()
        self.name = ""

    def fresh(self) -> sequence:
        copy = sequence(*self.outcomes)
        copy.name = self.name
        return copy

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self._next += self._skips.skip()
            index = self._next
            self._next += 1
        if index >= len(self.outcomes):
            step = f"step {self.name!r}" if self.name else "a step"
            raise AssertionError(
                f"the fake for {step} was called {index + 1} times but the test gave "
                f"sequence() only {len(self.outcomes)} outcome(s)"
            )
        return _outcome_of(self.outcomes[index], args, kwargs)

    def __repr__(self) -> str:
        return f"sequence({', '.join(map(repr, self.outcomes))})"


def as_fake(name: str, spec: Any) -> Callable[..., Any]:
    """The callable the engine runs in place of step `name`."""
    if isinstance(spec, sequence):
        spec.name = spec.name or name
        return spec
    if isinstance(spec, BaseException) or (
        isinstance(spec, type) and issubclass(spec, BaseException)
    ):
        return _Constant(spec)
    if callable(spec):
        return spec  # type: ignore[no-any-return]
    return _Constant(spec)


def fresh_fakes(fakes: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The fakes one simulated process uses: stateful fakes start over."""
    result: dict[str, Callable[..., Any]] = {}
    for name, fake in fakes.items():
        fresh = getattr(fake, "fresh", None)
        result[name] = fresh() if callable(fresh) else fake
    return result


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


class StepTap(Mapping[str, Callable[..., Any]]):
    """The engine's `step_overrides`, reporting every step body call.

    The engine looks a step up with `step_overrides.get(name, step.fn)`; this
    mapping answers every lookup (faked or not) with a wrapper that reports
    the call first, so the kit can count how often each step body ran. A step
    neither faked nor allowed by `real_steps` gets a body that refuses to run.
    """

    def __init__(
        self,
        fakes: Mapping[str, Callable[..., Any]],
        on_call: Callable[[str, tuple[Any, ...], dict[str, Any]], None],
        real_steps: RealStepsRule | None = None,
    ) -> None:
        self._fakes = dict(fakes)
        self._on_call = on_call
        self._real_steps = real_steps

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self._tap(name, self._fakes[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._fakes)

    def __len__(self) -> int:
        return len(self._fakes)

    def __contains__(self, name: object) -> bool:
        return name in self._fakes

    def get(self, name: str, default: Any = None) -> Any:
        target = self._fakes.get(name)
        if target is None:
            if default is None:
                return None
            if self._real_steps is not None and not self._real_steps.allows(name):
                # Not faked and not let through: the real function is never called.
                return self._real_steps.refuse(name, default)
            target = default
        return self._tap(name, target)

    def _tap(self, name: str, target: Callable[..., Any]) -> Callable[..., Any]:
        on_call = self._on_call
        if _is_async(target):

            async def tapped_async(*args: Any, **kwargs: Any) -> Any:
                on_call(name, args, kwargs)
                return await target(*args, **kwargs)

            return tapped_async

        def tapped(*args: Any, **kwargs: Any) -> Any:
            on_call(name, args, kwargs)
            return target(*args, **kwargs)

        return tapped
