"""`Send`, `Recv`, `SetEvent`, `GetEvent`: messages between runs and the events they publish."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar, overload

import attrs

from replaykit._durations import as_seconds
from replaykit.commands.base import ALONE, CommandFacts, T_co, Yields
from replaykit.commands.updates import check_not_reserved


def _send_key(value: str | None) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(
            f"Send(idempotency_key={value!r}): the key must be a non-empty str "
            "(such as 'invoice-7'), or None for one delivery per position"
        )
    return value


def _topic(value: str | None) -> str | None:
    check_not_reserved(value, "Send(topic=...): the topic")
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
    facts: ClassVar[CommandFacts] = CommandFacts(
        in_composite=False,
        why_not_child="its message is delivered in the same commit as its own record, which a "
        "losing child could never undo; " + ALONE,
    )
    workflow_id: str
    message: Any
    topic: str | None = attrs.field(default=None, converter=_topic)
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
    facts: ClassVar[CommandFacts] = CommandFacts(
        wakes_on="message", timeout_field="timeout", waits=True
    )
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
        # A request is taken with ReceiveUpdate, which answers to its validator too.
        check_not_reserved(topic, "Recv: the topic")
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
    facts: ClassVar[CommandFacts] = CommandFacts(
        in_composite=False,
        why_not_child="its value is published in the same commit as its own record, which a "
        "losing child could never undo; " + ALONE,
    )
    key: str = attrs.field()
    value: Any

    @key.validator
    def _not_reserved(self, _: Any, key: str) -> None:
        # A reply is set by Reply, once per request; a SetEvent could forge one.
        check_not_reserved(key, "SetEvent: the key")

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
    facts: ClassVar[CommandFacts] = CommandFacts(
        wakes_on="event", timeout_field="timeout", waits=True
    )
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
