"""`Send`, `Recv` (and the `Received` of several topics), `SetEvent`, `GetEvent`: messages
between runs and the events they publish."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar, NamedTuple, overload

import attrs

from replaykit._durations import as_seconds
from replaykit.commands.base import NEVER_UNDONE, CommandFacts, T_co, Yields, alone
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
    facts: ClassVar[CommandFacts] = alone(
        f"its message is delivered in the same commit as its own record, {NEVER_UNDONE}"
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


class Received(NamedTuple):
    """What `Recv(("a", "b"))` gives: the message, and the topic it came on.

    A named tuple: `got.topic` and `got.value`, or `topic, value = yield Recv(...)`.
    """

    topic: str
    value: Any


def _recv_topic(topic: Any) -> str | tuple[str, ...] | None:
    """One topic (a str, or None for the default), or several as a tuple; checked."""
    if topic is None or isinstance(topic, str):
        return topic
    if isinstance(topic, (tuple, list)):
        if not topic:
            raise ValueError(
                "Recv(()): no topic to receive on; pass one topic, Recv('orders'), or "
                "several, Recv(('orders', 'cancel'))"
            )
        for index, one in enumerate(topic):
            if not isinstance(one, str):
                raise TypeError(
                    f"Recv({topic!r}): topic {index} is {one!r}, not a str; every topic of "
                    "a Recv of several topics is a str ('' is the default topic)"
                )
        seen: set[str] = set()
        for one in topic:
            if one in seen:
                raise ValueError(
                    f"Recv({topic!r}): topic {one!r} is listed twice; list each topic once"
                )
            seen.add(one)
        return tuple(topic)
    hint = (
        " (a set has no fixed order, and a replay must see the same topics in the same "
        "order: pass a tuple)"
        if isinstance(topic, (set, frozenset))
        else ""
    )
    raise TypeError(
        f"Recv({topic!r}): the topic must be a str, None (the default topic), or a tuple "
        f"of str for several{hint}"
    )


@attrs.frozen(init=False)
class Recv(Yields[T_co]):
    """Take the next message on `topic` (FIFO), or `None` once `timeout` passes.

    `yield from Recv(topic)` is `Any` (a message is whatever was sent); with a
    timeout it is `Any | None`, so mypy asks for the `None` of a timeout to be
    handled (a message that is itself `None` looks the same).

    Given a tuple of topics, `Recv(("approve", "reject"))` takes the oldest message
    on any of them, once, and gives a `Received(topic, value)` saying which (or
    `None` once `timeout` passes). Its record is named `(approve,reject)`, so a
    replay compares the topics, in the order given.
    """

    kind: ClassVar[str] = "recv"
    facts: ClassVar[CommandFacts] = CommandFacts(
        wakes_on="message", timeout_field="timeout", waits=True
    )
    topic: str | tuple[str, ...] | None
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
    @overload
    def __init__(
        self: Recv[Received], topic: tuple[str, ...] | list[str], timeout: None = None
    ) -> None: ...
    @overload
    def __init__(
        self: Recv[Received | None],
        topic: tuple[str, ...] | list[str],
        timeout: timedelta | float | None,
    ) -> None: ...
    def __init__(
        self,
        topic: str | tuple[str, ...] | list[str] | None = None,
        timeout: timedelta | float | None = None,
    ) -> None:
        checked = _recv_topic(topic)
        # A request is taken with ReceiveUpdate, which answers to its validator too.
        for one in checked if isinstance(checked, tuple) else (checked,):
            check_not_reserved(one, "Recv: the topic")
        self.__attrs_init__(checked, as_seconds(timeout, "Recv timeout"))

    @property
    def topics(self) -> tuple[str, ...] | None:
        """The topics of a `Recv` of several (a tuple given), else None."""
        return self.topic if isinstance(self.topic, tuple) else None

    @property
    def name(self) -> str:
        topic = self.topic
        if isinstance(topic, tuple):
            return "(" + ",".join(topic) + ")"
        return topic or ""

    def describe(self) -> str:
        return f"Recv({self.topic!r})" if isinstance(self.topic, tuple) else super().describe()

    def describe_args(self) -> Any:
        return self.timeout


@attrs.frozen
class SetEvent(Yields[None]):
    """Publish `value` under `key` for this workflow; the latest value wins."""

    kind: ClassVar[str] = "set_event"
    facts: ClassVar[CommandFacts] = alone(
        f"its value is published in the same commit as its own record, {NEVER_UNDONE}"
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
