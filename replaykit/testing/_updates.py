"""Updates a test sends a run at chosen virtual times (`run(..., updates=[...])`), and the
replies `RunResult.replies` shows.

An `Update` is delivered as `engine.update` delivers one: checked against the run's
workflow (its declared names and its validator, whose refusal leaves no trace), then
put in the run's inbox keyed by its update id. The kit does not wait for the reply: the
run goes on on virtual time, and the reply (or the refusal, or nothing) is read when it
ends.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit import serde
from replaykit.commands.updates import check_update_id, check_update_name, reply_key, reply_outcome
from replaykit.errors import UpdateRunFinished, WorkflowNotFound
from replaykit.runtime.updates import registered_workflow, update_call, validated
from replaykit.stores.base import OutgoingMessage, Store
from replaykit.testing._arrivals import Arrives, checked_at

__all__ = ["Update", "UpdateReply", "replies_of", "request_of", "update_id_of"]


@attrs.frozen(init=False)
class Update(Arrives):
    """An update the test sends a run at a virtual time, as `engine.update` would:
    `Update("add", 3, at=timedelta(hours=1))`.

    `at` is when it arrives (a `timedelta` or seconds after the start, or an aware
    `datetime`); `to` a workflow id (default: the workflow under test); `update_id`
    its id (default `update-<n>`, n its index in `updates=`). Its reply is in
    `RunResult.replies[update_id]`. One due after the run ended is not delivered
    (the kit stops with the run): its reply says `answered=False`.
    """

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    at: timedelta | datetime
    update_id: str | None
    to: str | None

    def __init__(
        self,
        name: str,
        /,
        *args: Any,
        at: timedelta | datetime | float = timedelta(0),
        update_id: str | None = None,
        to: str | None = None,
        **kwargs: Any,
    ) -> None:
        check_update_name(name)
        if update_id is not None:
            check_update_id(update_id)
        self.__attrs_init__(name, args, kwargs, checked_at(at, "Update"), update_id, to)


@attrs.frozen
class UpdateReply:
    """What became of one `Update` by the end of the run."""

    update_id: str
    name: str
    #: Whether an answer exists: the run's reply, or a refusal (`error` set).
    answered: bool
    #: The reply's value (plain JSON data), when the run answered with one.
    value: Any = None
    #: The error the run replied with, or the refusal: the validator's error,
    #: `UnknownUpdate`, `UpdateRunFinished` (sent to a finished run).
    error: BaseException | None = None

    def unwrap(self) -> Any:
        """The value; or raise the error; or `AssertionError` if nothing answered it."""
        if self.error is not None:
            raise self.error
        if not self.answered:
            raise AssertionError(
                f"update {self.name!r} (id {self.update_id!r}) was not answered by the end of "
                "the run: the workflow never took it (ReceiveUpdate) or never replied"
            )
        return self.value


def update_id_of(update: Update, index: int) -> str:
    return update.update_id or f"update-{index}"


def request_of(
    store: Store, update: Update, update_id: str, target: str
) -> OutgoingMessage | BaseException:
    """The request to deliver, or why it is refused (nothing delivered). A missing run
    raises `WorkflowNotFound` (the kit lists the update as undelivered)."""
    row = store.get_workflow(target)
    call = update_call(
        target,
        update.name,
        update.args,
        update.kwargs,
        update_id=update_id,
        timeout=None,
        max_bytes=serde.DEFAULT_MAX_PAYLOAD_BYTES,
    )
    if row is None:
        raise WorkflowNotFound(f"no workflow run with id {target!r} to send {call.describe()} to")
    if row.status.is_terminal:
        return UpdateRunFinished(
            f"workflow {row.name!r} (id {target!r}) was {row.status.value} when "
            f"{call.describe()} arrived; a finished run takes no request"
        )
    try:
        checked = validated(call, registered_workflow(row.name))
    except Exception as refusal:
        return refusal
    return call.message(validated=checked)


def replies_of(
    store: Store, sent: list[tuple[str, Update, str]], refused: dict[str, BaseException]
) -> dict[str, UpdateReply]:
    """Each update's fate, by update id: `sent` holds (update id, update, target run)."""
    replies: dict[str, UpdateReply] = {}
    for update_id, update, target in sent:
        if update_id in refused:
            replies[update_id] = UpdateReply(update_id, update.name, True, error=refused[update_id])
            continue
        found, data = store.get_event(target, reply_key(update_id))
        if not found:
            replies[update_id] = UpdateReply(update_id, update.name, False)
            continue
        ok, value = reply_outcome(data)
        replies[update_id] = (
            UpdateReply(update_id, update.name, True, value=value)
            if ok
            else UpdateReply(update_id, update.name, True, error=value)
        )
    return replies
