"""Which steps the testing kit may run for real: the rule `run` and `check_determinism` share.

A step the test did not fake (`steps={name: fake}`) would run its real function:
charge a card, send an email, call a service. The kit does that only when the test
says so, with `real_steps=True` (every step not faked) or `real_steps={"name", ...}`
(those steps). Any other step is refused: its body does not run, the attempt fails
with `RealStepRefused` (so the run goes on as it would after a failure), and once the
run has stopped the kit raises `UnfakedSteps`, naming every step it refused and how
to fake it. (`replay` and `inspect_run` run no step body at all, faked or real.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from typing import Any

import attrs

from replaykit.interpreter import step_context_var

__all__ = ["RealStepRefused", "RealSteps", "RealStepsRule", "UnfakedSteps"]

#: `run(real_steps=...)`: False (no step runs its real function), True (every step
#: not faked does), or the names of the steps that may.
RealSteps = bool | Collection[str]


class UnfakedSteps(AssertionError):
    """The kit refused to run the real function of steps the test did not fake.

    `steps` holds their names, in the order the run first reached them.
    """

    def __init__(self, message: str, steps: tuple[str, ...]) -> None:
        super().__init__(message)
        self.steps = steps


class RealStepRefused(Exception):
    """What a refused step's attempt fails with, inside the run (the kit raises
    `UnfakedSteps` once the run stops)."""


@attrs.frozen
class _Refusal:
    name: str
    function: str
    workflow_id: str
    position: int | None


def _function_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}.{qualname}" if module else qualname


class RealStepsRule:
    """`real_steps=` checked once, and what each simulated process asks of it."""

    def __init__(self, real_steps: RealSteps, faked: Collection[str], *, who: str) -> None:
        if isinstance(real_steps, bool):
            self._all, self._names = real_steps, frozenset[str]()
        elif isinstance(real_steps, str):
            raise TypeError(
                f"{who}(real_steps={real_steps!r}) takes True, False or a set of step "
                f"names; for one step write real_steps={{{real_steps!r}}}"
            )
        elif isinstance(real_steps, Collection) and all(isinstance(n, str) for n in real_steps):
            self._all, self._names = False, frozenset(real_steps)
        else:
            raise TypeError(
                f"{who}(real_steps={real_steps!r}) takes True, False or a set of step names"
            )
        both = sorted(self._names & set(faked))
        if both:
            raise ValueError(
                f"{who}(): step(s) {', '.join(map(repr, both))} are both faked in steps= and "
                "named in real_steps=; keep one"
            )
        self._lock = threading.Lock()
        self._refused: dict[str, _Refusal] = {}

    def allows(self, name: str) -> bool:
        return self._all or name in self._names

    def refuse(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        """What the engine runs instead of `real`: a body that fails and is noted."""

        def refused(*_args: Any, **_kwargs: Any) -> Any:
            ctx = step_context_var.get()
            refusal = _Refusal(
                name,
                _function_name(real),
                ctx.workflow_id if ctx is not None else "?",
                ctx.position if ctx is not None else None,
            )
            with self._lock:
                self._refused.setdefault(name, refusal)
            raise RealStepRefused(
                f"the testing kit did not run step {name!r} ({refusal.function}): the test "
                f"neither faked it in steps= nor named it in real_steps="
            )

        return refused

    @property
    def refused(self) -> bool:
        with self._lock:
            return bool(self._refused)

    def error(self, workflow_name: str) -> UnfakedSteps:
        with self._lock:
            refusals = list(self._refused.values())
        where = [
            f"  - {r.name!r}: {r.function}, reached by workflow id {r.workflow_id!r}"
            + (f" at position {r.position}" if r.position is not None else "")
            for r in refusals
        ]
        names = [r.name for r in refusals]
        example = ", ".join(f"{n!r}: ..." for n in names)
        return UnfakedSteps(
            f"workflow {workflow_name!r}: the testing kit will not run the real function of a "
            f"step the test did not fake, and the run reached {len(names)} such step(s):\n"
            + "\n".join(where)
            + f"\nFake them: steps={{{example}}} (a value to return, an exception to raise, a "
            "callable, or sequence(...)). Or, to run their real functions, say so: "
            f"real_steps={{{', '.join(map(repr, names))}}}, or real_steps=True for every "
            "step not faked. (The run went on as if each refused attempt had failed, so it "
            "may reach more steps once these are faked.)",
            tuple(names),
        )
