"""`WriteStream` and `CloseStream`: values a run publishes in order, one record each."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from replaykit.commands.base import CommandFacts, Yields, alone
from replaykit.log import CLOSE_STREAM_KIND, WRITE_STREAM_KIND

# Why no stream command is a child: its readers look for a record of its own.
_ONE_RECORD = "and a composite keeps its children inside its one record"


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
    facts: ClassVar[CommandFacts] = alone(
        f"readers find a stream's values in records of their own, {_ONE_RECORD}", instant=True
    )
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
    facts: ClassVar[CommandFacts] = alone(
        f"readers find a stream's end in a record of its own, {_ONE_RECORD}", instant=True
    )
    key: str = attrs.field(converter=_stream_key)

    @property
    def name(self) -> str:
        return self.key

    def describe(self) -> str:
        return f"CloseStream({self.key!r})"
