"""The testing kit's external completions: `Completion(awakeable, value, after=...)`.

A test cannot know a token before the run hands it out (its random part is drawn then),
so a completion names the `Awakeable` by its name instead: each `Completion` takes the
next token of that name the run hands out that no earlier `Completion` in the list took,
and is delivered `after` that long on virtual time from the moment the token was
recorded. It goes through the checks `complete(token, ...)` makes in production
(`runtime/awakeables.py`), so a refused one (the run ended first, the awakeable was
completed already) is refused the same way, and listed in `RunResult.undelivered` with
the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit.commands import Awakeable
from replaykit.log import Record, Value

__all__ = ["Completion", "CompletionBook"]


def _as_after(value: timedelta | float) -> timedelta:
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise ValueError(f"Completion(after={value!r}) is before the token was handed out")
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"Completion(after={value!r}) is before the token was handed out")
        return timedelta(seconds=value)
    raise TypeError(
        f"Completion(after=...) takes a timedelta or a number of seconds after the token "
        f"was handed out, got {value!r}"
    )


def _as_error(value: Any) -> str | Exception | None:
    if value is None or isinstance(value, (str, Exception)):
        return value
    raise TypeError(
        f"Completion(error=...) takes a message (str) or an Exception instance, which the "
        f"run's Await(token) raises; got {value!r}"
    )


@attrs.frozen
class Completion:
    """The test completes (or, with `error`, fails) the token of `Awakeable(awakeable)`.

    Each `Completion` takes the next token of that name the run `to` (default: the run
    under test) hands out, in the order given, and is delivered `after` (a `timedelta`
    or seconds; default 0) on virtual time from the instant the token was recorded, as
    `engine.complete(token, value)` or `engine.fail(token, error)` would.
    """

    awakeable: str
    value: Any = None
    error: str | Exception | None = attrs.field(default=None, converter=_as_error, kw_only=True)
    after: timedelta = attrs.field(default=timedelta(0), converter=_as_after, kw_only=True)
    to: str | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.awakeable, str) or not self.awakeable:
            raise TypeError(
                f"Completion({self.awakeable!r}, ...): name the Awakeable whose token to "
                "complete, as the workflow names it (Awakeable('approval'): 'approval')"
            )
        if self.error is not None and self.value is not None:
            raise ValueError(
                f"Completion({self.awakeable!r}, ...) was given a value and an error: a token "
                "is completed with a value, or failed with an error, not both"
            )


@attrs.define
class CompletionBook:
    """Which completion took which handed-out token, when it is due, and whether it went.

    Kept by a testing session; it matches tokens to completions and nothing else (the
    session schedules and delivers).
    """

    completions: Sequence[Completion]
    root_id: str
    #: completion index -> (the token it took, when it is due)
    taken: dict[int, tuple[str, datetime]] = attrs.field(factory=dict)
    delivered: set[int] = attrs.field(factory=set)

    def handed_out(self, workflow_id: str, record: Record, at: datetime) -> int | None:
        """The completion that takes the token `record` hands out (None: none does)."""
        if (
            record.kind != Awakeable.kind
            or not isinstance(record.outcome, Value)
            or not isinstance(record.outcome.data, str)
        ):
            return None
        for index, completion in enumerate(self.completions):
            if index in self.taken or completion.awakeable != record.name:
                continue
            if (completion.to or self.root_id) != workflow_id:
                continue
            self.taken[index] = (record.outcome.data, at + completion.after)
            return index
        return None

    def token_of(self, index: int) -> str:
        return self.taken[index][0]

    def due(self, index: int) -> datetime:
        return self.taken[index][1]

    def waiting(self) -> list[int]:
        """The completions that took a token and were not delivered yet."""
        return [i for i in self.taken if i not in self.delivered]
