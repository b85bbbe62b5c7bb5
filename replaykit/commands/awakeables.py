"""`Awakeable` and `Await`: a value someone outside the run provides (external completion).

`token = yield Awakeable("approval")` hands out a token; whoever holds it (a webhook,
a person, another service) completes it once with `complete(token, value)` or fails it
with `fail(token, error)` on an engine or a client; `value = yield Await(token)` waits
for that, holding no thread. This is Restate's awakeables and Temporal's asynchronous
activity completion.

A token names the run, the generation and the position that handed it out, and 128
random bits drawn when it was handed out and recorded with it, so that nobody completes
an awakeable by guessing: `<generation>.<position>.<32 hex digits>@<workflow id>`.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, ClassVar, overload

import attrs

from replaykit._durations import as_seconds
from replaykit.commands.base import CommandFacts, T_co, Yields

__all__ = ["COMPLETION_TOPIC", "Await", "Awakeable", "AwakeableToken"]

#: The inbox topic (and send key) prefix of completions: `<prefix><generation>.<position>.<secret>`.
COMPLETION_TOPIC = "replaykit.awakeable:"
_LOCAL = re.compile(r"(0|[1-9][0-9]{0,17})\.(0|[1-9][0-9]{0,17})\.([0-9a-f]{32})")
_SHAPE = "<generation>.<position>.<32 hex digits>@<workflow id>"


@attrs.frozen
class AwakeableToken:
    """The parts of a token: the run it belongs to and the place in it that handed it out."""

    workflow_id: str
    generation: int
    position: int
    secret: str

    @property
    def local(self) -> str:
        """The token without its run: unique within the run, the name of its `Await`."""
        return f"{self.generation}.{self.position}.{self.secret}"

    @property
    def topic(self) -> str:
        """The inbox topic its completion is delivered on (and its once-only send key)."""
        return COMPLETION_TOPIC + self.local

    def __str__(self) -> str:
        return f"{self.local}@{self.workflow_id}"

    @classmethod
    def parse(cls, token: object) -> AwakeableToken | None:
        """The parts of `token`, or None when it is not a token's shape."""
        if not isinstance(token, str):
            return None
        local, at, workflow_id = token.partition("@")
        found = _LOCAL.fullmatch(local)
        if found is None or not at or not workflow_id:
            return None
        return cls(workflow_id, int(found[1]), int(found[2]), found[3])

    @staticmethod
    def shape() -> str:
        """What a token looks like, for messages that refuse one."""
        return _SHAPE


def _awakeable_name(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError(
            f"Awakeable({value!r}): the name must be a non-empty str saying what the value "
            "is (such as 'approval'); it names the record in the log and the testing kit's "
            "Completion"
        )
    return value


@attrs.frozen
class Awakeable(Yields[str]):
    """Hand out a token for a value someone outside the run provides; yields the token.

    The token (a `str`) is recorded, so a replay gets the same one. Give it to whoever
    provides the value (in a step: an e-mail, a webhook registration), then wait for
    the value with `Await(token)`. `complete(token, value)` / `fail(token, error)` on an
    `Engine`, `AsyncEngine`, `Client` or `AsyncClient` (or `replaykit workflows
    complete|fail`) deliver it, once.
    """

    kind: ClassVar[str] = "awakeable"
    facts: ClassVar[CommandFacts] = CommandFacts(
        instant=True,
        in_composite=False,
        why_not_child="its token names the position it was handed out at, which a composite's "
        "children share; yield it on its own, then Race or All on Await(token)",
    )
    awakeable_name: str = attrs.field(converter=_awakeable_name)

    @property
    def name(self) -> str:
        return self.awakeable_name


def _token(value: object) -> str:
    if AwakeableToken.parse(value) is None:
        raise ValueError(
            f"Await({value!r}): not an awakeable token (a token looks like {_SHAPE}); pass "
            "the value that `yield Awakeable(name)` gave"
        )
    assert isinstance(value, str)
    return value


@attrs.frozen(init=False)
class Await(Yields[T_co]):
    """Wait for the completion of `token`, which this run's `Awakeable` handed out.

    Yields the value given to `complete(token, value)`; raises the error of
    `fail(token, error)` (an `AwakeableFailed` for a message, else that exception's
    class when it is loaded here, or `StepFailed`), recorded, so the workflow can catch
    it. With `timeout`, `None` once it passes first (as `Recv`); inside `Race` with a
    `Sleep` the two are told apart. A completion waits in the run's inbox until an
    `Await` of its token takes it: one that arrives before the `Await`, or after a
    `Race` that the `Await` lost, is taken by the next `Await` of that token.
    """

    kind: ClassVar[str] = "await"
    facts: ClassVar[CommandFacts] = CommandFacts(
        wakes_on="message", timeout_field="timeout", waits=True
    )
    token: str
    timeout: float | None

    @overload
    def __init__(self: Await[Any], token: str, timeout: None = None) -> None: ...
    @overload
    def __init__(self: Await[Any | None], token: str, timeout: timedelta | float) -> None: ...
    def __init__(self, token: str, timeout: timedelta | float | None = None) -> None:
        self.__attrs_init__(_token(token), as_seconds(timeout, "Await timeout"))

    @property
    def parts(self) -> AwakeableToken:
        parts = AwakeableToken.parse(self.token)
        assert parts is not None, "checked when built"
        return parts

    @property
    def name(self) -> str:
        # The token without its run id: unique in the run, and short enough for a
        # record's name whatever the id's length.
        return self.parts.local

    def describe_args(self) -> Any:
        return self.timeout
