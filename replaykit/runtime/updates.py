"""Sending an update and waiting for its reply: one core, a blocking and an asyncio driver.

An update is a request delivered to the run's inbox (`commands/updates.py` says how it
is carried) and an answer the run records and keeps as its event
`reply_key(update_id)`. The caller's part:

1. the run is read (`WorkflowNotFound` if none has the id), and its reply: a caller
   that retries with the same update id after a lost answer gets the stored reply;
2. the update is checked where the workflow's code is registered in this process:
   `UnknownUpdate` for a name it does not declare, and its validator, whose error
   refuses the request with nothing written (without the code, the request goes
   unvalidated and the engine validates it before delivery);
3. a finished run takes no request (`UpdateRunFinished`); else the request is sent,
   keyed by its update id (a second send of one id delivers nothing more);
4. the caller waits for the reply, the run's end (`UpdateRunFinished`: it ended without
   answering) or its timeout (`UpdateTimeout`; the request stays accepted).

With a start (`update_with_start`), 1-3 are one store call instead: the run is created
if its id is free and the request delivered in the same transaction.

`updating()` is the core, a generator with no I/O, in the shape of `runtime/streams.py`:
it yields what it needs (`ReadRun`, `ReadReply`, `Deliver`, `StartAndDeliver`, `Pause`)
and a driver answers, or throws in the error the store call raised (the drivers of
`runtime/_cores.py`, which the stream readers share). `drive_blocking` serves `Engine`
and `Client`, `drive_async` their asyncio faces.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Generator
from typing import Any, Protocol

import attrs

from replaykit import serde
from replaykit._limits import checked_wait
from replaykit.commands.updates import (
    check_update_id,
    check_update_name,
    reply_key,
    reply_outcome,
    request_key,
    request_payload,
    request_topic,
)
from replaykit.errors import (
    UnknownUpdate,
    UnknownWorkflowError,
    UpdateRunFinished,
    UpdateTimeout,
    WorkflowNotFound,
)
from replaykit.registry import Workflow, lookup
from replaykit.runtime._cores import Emit, Pause, emitted_async, emitted_blocking, pause_before
from replaykit.runtime.admin import deliver
from replaykit.runtime.loop_waits import Listen, OffLoop
from replaykit.stores.base import OutgoingMessage, Store, WorkflowRow

__all__ = [
    "Deliver",
    "Pause",
    "ReadReply",
    "ReadRun",
    "StartAndDeliver",
    "StartAndSend",
    "UpdateCall",
    "drive_async",
    "drive_blocking",
    "perform",
    "refuse_finished",
    "registered_workflow",
    "send_update",
    "send_update_async",
    "update_call",
    "update_wakes",
    "updating",
    "validated",
]


@attrs.frozen
class UpdateCall:
    """One update as a caller sends it: checked, its arguments encoded."""

    workflow_id: str
    name: str
    update_id: str
    args: list[Any]
    kwargs: dict[str, Any]
    timeout: float | None
    trace_context: str | None = None

    def message(self, *, validated: bool) -> OutgoingMessage:
        """The request, as the run's inbox takes it."""
        return OutgoingMessage(
            self.workflow_id,
            request_topic(self.name),
            request_payload(self.update_id, self.name, self.args, self.kwargs, validated=validated),
            idempotency_key=request_key(self.update_id),
            trace_context=self.trace_context,
        )

    def describe(self) -> str:
        return f"update {self.name!r} (id {self.update_id!r})"


def update_call(
    workflow_id: str,
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    update_id: str | None,
    timeout: Any,
    max_bytes: int,
    trace_context: str | None = None,
) -> UpdateCall:
    """Check an update's arguments and encode them (their size bounded): a bad one is
    refused here, before anything is read or written."""
    if not isinstance(workflow_id, str) or not workflow_id:
        raise TypeError(f"update: the workflow id must be a non-empty str, got {workflow_id!r}")
    check_update_name(name)
    update_id = uuid.uuid4().hex if update_id is None else check_update_id(update_id)
    seconds = checked_wait(timeout, f"update {name!r}: timeout")
    data = serde.encode(
        {"args": list(args), "kwargs": kwargs},
        what=f"the arguments of update {name!r} to workflow id {workflow_id!r}",
        max_bytes=max_bytes,
    )
    return UpdateCall(
        workflow_id, name, update_id, data["args"], data["kwargs"], seconds, trace_context
    )


def registered_workflow(name: str) -> Workflow[..., Any] | None:
    """The workflow registered under `name` in this process, or None (a client without
    its code: the engine then validates the request before delivering it)."""
    try:
        return lookup(name)
    except UnknownWorkflowError:
        return None


def validated(call: UpdateCall, wf: Workflow[..., Any] | None) -> bool:
    """Whether this process checked the update (`UnknownUpdate`, or the validator's own
    error, raised when it refuses it); False when it has no code to check it with."""
    if wf is None:
        return False
    try:
        wf.check_update(call.name, call.args, call.kwargs, workflow_id=call.workflow_id)
    except UnknownUpdate:
        raise
    except Exception as refusal:
        refusal.add_note(
            f"{call.describe()} to workflow {wf.workflow_name!r} (id {call.workflow_id!r}) "
            "was refused by its validator; nothing was sent"
        )
        raise
    return True


# -- what the core asks its driver ----------------------------------------------------------


@attrs.frozen
class ReadRun:
    """Answer with `store.get_workflow(workflow_id)`."""


@attrs.frozen
class ReadReply:
    """Answer with `store.get_event(workflow_id, reply_key(update_id))`."""


@attrs.frozen
class Deliver:
    """Send `message` (`store.send_message`, its key and this call id); answer the bool."""

    message: OutgoingMessage
    call_id: str


@attrs.frozen
class StartAndDeliver:
    """Start the run unless its id is taken and deliver `message` in the same transaction
    (the face builds the row); answer `(row, created, delivered)`. A run under the id
    that has finished raises `UpdateRunFinished`, nothing written."""

    message: OutgoingMessage
    call_id: str


Request = ReadRun | ReadReply | Deliver | StartAndDeliver | Pause


def update_wakes(workflow_id: str) -> list[tuple[str, str]]:
    """The notifications a caller waiting for a reply waits on."""
    return [("event", workflow_id), ("finished", workflow_id)]


def _answer(call: UpdateCall, data: Any, row: WorkflowRow | None) -> Any:
    ok, value = reply_outcome(data)
    if ok:
        return value
    run = f"workflow {row.name!r} " if row is not None else "workflow "
    value.add_note(f"{call.describe()} answered by {run}(id {call.workflow_id!r}) with this error")
    raise value


def _finished(call: UpdateCall, row: WorkflowRow, *, sent: bool) -> UpdateRunFinished:
    if sent:
        return UpdateRunFinished(
            f"workflow {row.name!r} (id {call.workflow_id!r}) ended {row.status.value} "
            f"without answering {call.describe()}; its result (or error) says why "
            f"(replaykit workflows show {call.workflow_id})"
        )
    return UpdateRunFinished(
        f"workflow {row.name!r} (id {call.workflow_id!r}) is {row.status.value} and holds no "
        f"reply to {call.describe()}: a finished run takes no request (one sent earlier under "
        "this id, it ended without answering). Start a new run, or resume this one first"
    )


def updating(
    call: UpdateCall,
    *,
    check: Callable[[WorkflowRow | None], bool],
    poll_interval: float,
    monotonic: Callable[[], float],
    with_start: bool = False,
) -> Generator[Request, Any, Any]:
    """The core: yields requests for its driver, returns the reply's value or raises the
    error the run replied with (see the module's docstring for the steps).

    `check(row)` checks the update against the run's workflow (raising `UnknownUpdate`
    or the validator's error) and says whether it did. With `with_start`, the run is
    started (or found) and the request delivered in one store call, and `check(None)`
    checks it against the workflow to start.
    """
    deadline = None if call.timeout is None else monotonic() + call.timeout
    call_id = uuid.uuid4().hex
    row: WorkflowRow | None = None
    if with_start:
        found, data = yield ReadReply()
        if found:
            return _answer(call, data, None)
        checked = check(None)
        try:
            row, _created, _delivered = yield StartAndDeliver(
                call.message(validated=checked), call_id
            )
        except UpdateRunFinished:
            found, data = yield ReadReply()  # answered and finished since the first look
            if found:
                return _answer(call, data, None)
            raise
    else:
        row = yield ReadRun()
        if row is None:
            raise WorkflowNotFound(
                f"no workflow run with id {call.workflow_id!r} to send {call.describe()} to"
            )
        found, data = yield ReadReply()
        if found:
            return _answer(call, data, row)
        checked = check(row)
        if row.status.is_terminal:
            raise _finished(call, row, sent=False)
        yield Deliver(call.message(validated=checked), call_id)
    # Just delivered: the run has not answered yet, and the driver listened before the
    # first read, so the wait comes first; a notification that came meanwhile ends it
    # at once. The run is read only after a wait that did not bring the reply.
    assert row is not None
    while True:
        pause = pause_before(deadline, poll_interval, monotonic)
        if pause is None:
            raise UpdateTimeout(
                f"{call.describe()} to workflow {row.name!r} (id {call.workflow_id!r}) "
                f"was not answered within {call.timeout}s; the run is {row.status.value}. "
                f"The request stays accepted: call again with update_id={call.update_id!r} "
                "to wait for its answer, which the run gives when it reaches "
                f"ReceiveUpdate({call.name!r}) (replaykit workflows show "
                f"{call.workflow_id} says where it waits)"
            )
        yield pause
        found, data = yield ReadReply()
        if found:
            return _answer(call, data, row)
        row = yield ReadRun()
        if row is None:
            raise WorkflowNotFound(
                f"workflow id {call.workflow_id!r} was deleted before it answered {call.describe()}"
            )
        if row.status.is_terminal:
            found, data = yield ReadReply()  # replied, then finished, between the reads
            if found:
                return _answer(call, data, row)
            raise _finished(call, row, sent=True)


class StartAndSend(Protocol):
    """How a face starts the run and delivers the request together (`StartAndDeliver`)."""

    def __call__(
        self, *, message: OutgoingMessage, call_id: str
    ) -> tuple[WorkflowRow, bool, bool]: ...


def perform(
    store: Store,
    call: UpdateCall,
    request: Request,
    start_and_send: StartAndSend | None,
) -> Any:
    """Carry out one of the core's store requests (not `Pause`)."""
    if isinstance(request, ReadReply):
        return store.get_event(call.workflow_id, reply_key(call.update_id))
    if isinstance(request, ReadRun):
        return store.get_workflow(call.workflow_id)
    if isinstance(request, Deliver):
        return deliver(store, request.message, request.call_id)
    if isinstance(request, StartAndDeliver):
        assert start_and_send is not None, "a core with a start is driven with start_and_send"
        return start_and_send(message=request.message, call_id=request.call_id)
    raise AssertionError(f"not a store request: {request!r}")


def _replying(core: Generator[Request, Any, Any]) -> Generator[Request | Emit, Any, None]:
    """The core with its reply emitted, as the shared drivers hand values out."""
    yield Emit((yield from core))


def drive_blocking(
    core: Generator[Request, Any, Any],
    do: Callable[[Request], Any],
    listen: Listen,
    workflow_id: str,
) -> Any:
    """Drive `updating` on the calling thread; `do` carries out each store request."""
    replies = emitted_blocking(_replying(core), do, listen, update_wakes(workflow_id))
    with contextlib.closing(replies):
        return next(replies)


async def drive_async(
    core: Generator[Request, Any, Any],
    do: Callable[[Request], Any],
    listen: Listen,
    off_loop: OffLoop,
    workflow_id: str,
) -> Any:
    """Drive `updating` on the running loop: store calls through `off_loop`, waits on an
    asyncio event that notifications set from any thread; no thread is held."""
    replies = emitted_async(_replying(core), do, listen, update_wakes(workflow_id), off_loop)
    async with contextlib.aclosing(replies):
        return await anext(replies)


def _prepared(
    store: Store,
    call: UpdateCall,
    poll_interval: float,
    monotonic: Callable[[], float],
    start_and_send: StartAndSend | None,
    start_workflow: Workflow[..., Any] | None,
) -> tuple[Generator[Request, Any, Any], Callable[[Request], Any]]:
    """The core of one update and how its store requests are carried out, for a driver."""

    def check(row: WorkflowRow | None) -> bool:
        if row is None:  # a start: the workflow it starts
            return validated(call, start_workflow)
        return validated(call, registered_workflow(row.name))

    core = updating(
        call,
        check=check,
        poll_interval=poll_interval,
        monotonic=monotonic,
        with_start=start_and_send is not None,
    )
    return core, lambda request: perform(store, call, request, start_and_send)


def send_update(
    store: Store,
    listen: Listen,
    call: UpdateCall,
    *,
    poll_interval: float,
    start_and_send: StartAndSend | None = None,
    start_workflow: Workflow[..., Any] | None = None,
) -> Any:
    """The blocking faces' update (`Engine`, `Client`): the reply, or its error raised.
    With `start_and_send`, an update-with-start of `start_workflow` (None: a client
    without its code, whose request the engine validates)."""
    core, do = _prepared(store, call, poll_interval, time.monotonic, start_and_send, start_workflow)
    return drive_blocking(core, do, listen, call.workflow_id)


async def send_update_async(
    store: Store,
    listen: Listen,
    off_loop: OffLoop,
    call: UpdateCall,
    *,
    poll_interval: float,
    start_and_send: StartAndSend | None = None,
    start_workflow: Workflow[..., Any] | None = None,
) -> Any:
    """The asyncio faces' update (`AsyncEngine`, `AsyncClient`), holding no thread."""
    clock = asyncio.get_running_loop().time
    core, do = _prepared(store, call, poll_interval, clock, start_and_send, start_workflow)
    return await drive_async(core, do, listen, off_loop, call.workflow_id)


def refuse_finished(call: UpdateCall) -> Callable[[WorkflowRow], None]:
    """An update-with-start's check of the run found under its id: a finished run takes
    no request (`UpdateRunFinished`, nothing written)."""

    def refuse(found: WorkflowRow) -> None:
        if found.status.is_terminal:
            raise _finished(call, found, sent=False)

    return refuse


@attrs.frozen(eq=False)
class Updater:
    """A face's updates and sends-with-start over its store: the `Engine` and the
    `Client` each hold one, and their asyncio faces use their sync face's.

    Handed the store, how to listen for notifications, the poll interval, the
    payload limit and how to read the caller's trace context; it knows nothing of
    the face around it. A start is the face's own (`StartAndSend`, given per call).
    """

    store: Store
    listen: Listen
    poll_interval: float = attrs.field(kw_only=True)
    max_payload_bytes: int = attrs.field(kw_only=True)
    trace_context: Callable[[], str | None] = attrs.field(kw_only=True)

    def call(
        self,
        workflow_id: str,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        update_id: str | None,
        timeout: Any,
    ) -> UpdateCall:
        """The update checked and encoded (`update_call`)."""
        return update_call(
            workflow_id,
            name,
            args,
            kwargs,
            update_id=update_id,
            timeout=timeout,
            max_bytes=self.max_payload_bytes,
            trace_context=self.trace_context(),
        )

    def update(
        self,
        call: UpdateCall,
        start_and_send: StartAndSend | None = None,
        start_workflow: Workflow[..., Any] | None = None,
    ) -> Any:
        """Send it and wait for the reply on the calling thread (`send_update`)."""
        return send_update(
            self.store,
            self.listen,
            call,
            poll_interval=self.poll_interval,
            start_and_send=start_and_send,
            start_workflow=start_workflow,
        )

    async def update_async(
        self,
        call: UpdateCall,
        off_loop: OffLoop,
        start_and_send: StartAndSend | None = None,
        start_workflow: Workflow[..., Any] | None = None,
    ) -> Any:
        """Send it and wait for the reply on the running loop, holding no thread."""
        return await send_update_async(
            self.store,
            self.listen,
            off_loop,
            call,
            poll_interval=self.poll_interval,
            start_and_send=start_and_send,
            start_workflow=start_workflow,
        )
