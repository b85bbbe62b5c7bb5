"""`ReceiveUpdate` and `Reply`: a request sent to a run, and the run's recorded answer.

An update is a message with an answer. The caller's request lands in the run's inbox
on the topic `request_topic(name)`, keyed by its update id (`request_key`), so a
retried call delivers it once; `ReceiveUpdate(name)` takes it, as `Recv` takes a
message (exactly once, in the commit that records it). `Reply(request, value)` (or
`error=`) records the answer and, in the same commit, sets it as the run's event
`reply_key(update_id)`, where the caller finds it: a caller that retries with the
same update id after a lost answer reads the same reply.

The names under `UPDATE_PREFIX` are replaykit's: `Send`, `Recv`, `SetEvent` and the
faces' `send` refuse topics and keys that start with it, so nobody forges a request
or a reply by hand (nor, under `COMPLETION_TOPIC`, an external completion).
"""

from __future__ import annotations

from collections.abc import Generator
from datetime import timedelta
from typing import Any, ClassVar, TypeVar, overload

import attrs

from replaykit import serde
from replaykit._durations import as_seconds
from replaykit._update_names import UPDATE_PREFIX, check_update_id, check_update_name
from replaykit.commands.awakeables import COMPLETION_TOPIC
from replaykit.commands.base import NEVER_UNDONE, Command, CommandFacts, T_co, Yields, alone
from replaykit.errors import DamagedData

__all__ = [
    "UPDATE_PREFIX",
    "ReceiveUpdate",
    "Reply",
    "UpdateRequest",
    "check_not_reserved",
    "check_update_id",
    "check_update_name",
    "reply_data",
    "reply_key",
    "reply_outcome",
    "replying",
    "request_key",
    "request_payload",
    "request_topic",
    "taken_request",
]

T = TypeVar("T")


def request_topic(name: str) -> str:
    """The inbox topic the requests of update `name` wait on."""
    return UPDATE_PREFIX + name


def request_key(update_id: str) -> str:
    """The send idempotency key of the request with this update id."""
    return UPDATE_PREFIX + update_id


def reply_key(update_id: str) -> str:
    """The event key of the reply to the request with this update id."""
    return UPDATE_PREFIX + update_id


def check_not_reserved(name: str | None, what: str) -> None:
    """Refuse a topic or event key under `UPDATE_PREFIX` or `COMPLETION_TOPIC`:
    replaykit's own (updates, and external completions)."""
    if isinstance(name, str) and name.startswith(UPDATE_PREFIX):
        raise ValueError(
            f"{what} {name!r} starts with {UPDATE_PREFIX!r}, which replaykit keeps for "
            "updates: send a request with engine.update(...) and answer it with Reply(...); "
            "or pick another name"
        )
    if isinstance(name, str) and name.startswith(COMPLETION_TOPIC):
        raise ValueError(
            f"{what} {name!r} starts with {COMPLETION_TOPIC!r}, which replaykit keeps for "
            "external completions: complete a token with engine.complete(token, value) and "
            "wait for it with Await(token); or pick another name"
        )


def request_payload(
    update_id: str, name: str, args: list[Any], kwargs: dict[str, Any], *, validated: bool
) -> dict[str, Any]:
    """A request as its message carries it: the arguments encoded already, and whether
    the caller ran the update's validator (if not, the engine runs it before delivery)."""
    return {
        "update_id": update_id,
        "name": name,
        "args": args,
        "kwargs": kwargs,
        "validated": validated,
    }


def taken_request(payload: Any, workflow_id: str, message_id: int) -> tuple[dict[str, Any], bool]:
    """(the `UpdateRequest`'s data, whether it was validated) from a request's message;
    `DamagedData` for a message on an update topic that is not a request."""
    if (
        not isinstance(payload, dict)
        or not isinstance(payload.get("update_id"), str)
        or not isinstance(payload.get("name"), str)
        or not isinstance(payload.get("args"), list)
        or not isinstance(payload.get("kwargs"), dict)
    ):
        raise DamagedData(
            f"workflow id {workflow_id!r}: message {message_id} on an update topic is not an "
            f"update request ({str(payload)[:120]!r}); it was not sent by replaykit's update. "
            "Delete it from the inbox, or delete the run"
        )
    data = {key: payload[key] for key in ("update_id", "name", "args", "kwargs")}
    return data, payload.get("validated") is True


def reply_data(value: Any = None, error: BaseException | None = None) -> dict[str, Any]:
    """A reply as its event holds it: `{"value": data}` (encoded already), or
    `{"error": ...}`, the exception as a recorded failure describes it."""
    if error is not None:
        return {"error": serde.error_info_to_json(serde.encode_error(error))}
    return {"value": value}


def reply_outcome(data: Any) -> tuple[bool, Any]:
    """(True, the value's data) or (False, the exception) from a reply's event."""
    if isinstance(data, dict) and "error" in data:
        return False, serde.decode_error(serde.error_info_from_json(data["error"]))
    if isinstance(data, dict) and "value" in data:
        return True, data["value"]
    codec = serde.encoded_by(data)
    if codec is not None:
        raise DamagedData(
            f"an update's reply is encoded by the payload codec {codec!r}; read it with that "
            "codec (Client(codec=...), replaykit --codec MODULE:ATTRIBUTE)"
        )
    raise DamagedData(f"an update's reply is not one replaykit wrote: {str(data)[:120]!r}")


@attrs.frozen
class UpdateRequest:
    """A request `ReceiveUpdate` took: its update id, its name and its arguments.

    The arguments are the JSON data the caller's values encode to (a tuple arrives
    as a list, a dataclass as a dict), as a message's payload is.
    """

    update_id: str
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(init=False)
class ReceiveUpdate(Yields[T_co]):
    """Take the next request of update `name` (FIFO), or `None` once `timeout` passes.

    The request is taken exactly once, in the commit that records it. A workflow
    receives only the update names it declares (`@workflow(updates=[...])` or a
    `@wf.validator(name)`); another name fails here with `UnknownUpdate`. Answer the
    request with `Reply` (or `replying`).
    """

    kind: ClassVar[str] = "receive_update"
    facts: ClassVar[CommandFacts] = CommandFacts(
        wakes_on="message", timeout_field="timeout", waits=True
    )
    update_name: str
    timeout: float | None

    @overload
    def __init__(self: ReceiveUpdate[UpdateRequest], name: str, timeout: None = None) -> None: ...
    @overload
    def __init__(
        self: ReceiveUpdate[UpdateRequest | None], name: str, timeout: timedelta | float
    ) -> None: ...
    def __init__(self, name: str, timeout: timedelta | float | None = None) -> None:
        self.__attrs_init__(check_update_name(name), as_seconds(timeout, "ReceiveUpdate timeout"))

    @property
    def name(self) -> str:
        return self.update_name

    def describe_args(self) -> Any:
        return self.timeout


def _error_shown(error: BaseException) -> str:
    return f"{type(error).__qualname__}: {error}"


@attrs.frozen(init=False)
class Reply(Yields[None]):
    """Answer `request` with `value`, or with `error` (an exception the caller gets raised).

    Recorded, and the answer kept for the caller in the same commit: a caller that
    retries with the same update id gets this answer again. A second reply to one
    request raises `UpdateAlreadyAnswered` at the `yield`.
    """

    kind: ClassVar[str] = "reply"
    facts: ClassVar[CommandFacts] = alone(
        f"its answer is kept for the caller in the same commit as its own record, {NEVER_UNDONE}"
    )
    update_id: str
    update_name: str
    value: Any
    error: BaseException | None

    def __init__(
        self, request: UpdateRequest, value: Any = None, *, error: BaseException | None = None
    ) -> None:
        if not isinstance(request, UpdateRequest):
            raise TypeError(
                f"Reply takes the request ReceiveUpdate gave (an UpdateRequest), got "
                f"{request!r}: `req = yield ReceiveUpdate(name)`, then `yield Reply(req, value)`"
            )
        if error is not None:
            if not isinstance(error, Exception):
                raise TypeError(f"Reply(error=...) takes an exception instance, got {error!r}")
            if value is not None:
                raise TypeError(
                    f"Reply to update {request.name!r} (id {request.update_id!r}) got both a "
                    "value and an error; an answer is one or the other"
                )
        self.__attrs_init__(request.update_id, request.name, value, error)

    @property
    def name(self) -> str:
        return self.update_name

    def describe_args(self) -> Any:
        if self.error is not None:
            return [self.update_id, {"error": _error_shown(self.error)}]
        return [self.update_id, self.value]

    def describe(self) -> str:
        return f"Reply({self.update_name!r}, id {self.update_id!r})"


def replying(
    request: UpdateRequest, body: Generator[Any, Any, T] | Yields[T]
) -> Generator[Command, Any, T | None]:
    """`value = yield from replying(req, body)`: run `body` (a generator of commands, or
    one command) and answer `req` with what it returns, or with the exception it raises.

    The reply scope of a handler: an exception from `body` becomes the caller's error
    and does not fail the run (the run goes on; the helper then gives None). Control
    signals (a cancel, a shutdown) pass through unanswered.
    """
    try:
        value = yield from body
    except Exception as exc:
        yield Reply(request, error=exc)
        return None
    yield Reply(request, value)
    return value
