"""`Sleep`, and the values a replay must give back unchanged: `Now`, `Random`, `Uuid`."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, ClassVar

import attrs

from replaykit._durations import as_seconds
from replaykit.commands.base import CommandFacts, Yields


@attrs.frozen(init=False)
class Sleep(Yields[None]):
    """Wait durably. The wake instant is recorded when the sleep starts."""

    kind: ClassVar[str] = "sleep"
    facts: ClassVar[CommandFacts] = CommandFacts(timeout_field="seconds", waits=True)
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
    facts: ClassVar[CommandFacts] = CommandFacts(instant=True)


@attrs.frozen
class Random(Yields[float]):
    """A float in [0, 1), recorded once."""

    kind: ClassVar[str] = "random"
    facts: ClassVar[CommandFacts] = CommandFacts(instant=True)


@attrs.frozen
class Uuid(Yields[uuid.UUID]):
    """A random UUID4, recorded once (a `uuid.UUID`)."""

    kind: ClassVar[str] = "uuid"
    facts: ClassVar[CommandFacts] = CommandFacts(instant=True)
