"""Talking to runs from outside, as the blocking `Engine` offers it: an event waited
for, an update or a message with a start (messages, completions, updates, events, step
heartbeats and stream reads, which `Client` offers alike, are in `runtime/outside.py`).

A mixin of `Engine`'s, so that the engine's module keeps to building the rooms and
operating runs; each method hands its work to the room that owns it (`admin`,
`awakeables`, `updates`, `streams`, the waits).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, TypeVar

from replaykit.otel import Telemetry, current_trace_context
from replaykit.registry import BoundWorkflow, Workflow, unbind
from replaykit.runtime import admin, updates
from replaykit.runtime.handles import WorkflowHandle
from replaykit.runtime.host import Wake
from replaykit.runtime.outside import FromOutside
from replaykit.runtime.starts import Starts
from replaykit.runtime.waits import Waits

__all__ = ["Messaging"]

R = TypeVar("R")


class Messaging(FromOutside):
    """The engine's methods that deliver to a run, or read what it says, from outside
    (those a `Client` offers alike are in `FromOutside`, runtime/outside.py)."""

    # Set by `Engine.__init__`.
    poll_interval: float
    telemetry: Telemetry
    waits: Waits
    starts: Starts

    def _handle_for(self, workflow_id: str, result_type: Any) -> WorkflowHandle[Any]:
        raise NotImplementedError

    def listen(self, wakes: Iterable[Wake], callback: Callable[[], None]) -> Callable[[], None]:
        raise NotImplementedError

    # -- messages and events from outside -----------------------------------------------

    def get_event(self, workflow_id: str, key: str, timeout: float | None = None) -> Any:
        """The latest value of a run's event `key`, waiting up to `timeout` for it; else None."""
        return self.waits.wait_event(workflow_id, key, timeout)

    # -- updates: a request and its reply (docs/communication.md, "Updates") ---------------

    def update_with_start(
        self,
        wf: Workflow[..., Any] | BoundWorkflow[Any],
        name: str,
        /,
        *args: Any,
        workflow_id: str,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`update`, starting `wf` (bound to its arguments) under `workflow_id` if the id
        is free, the request delivered in the same transaction; a run under the id must
        be this start (else `WorkflowIdConflict`) and unfinished."""
        self._check_open()
        call, start, started = self._update_with_start_call(
            wf, name, args, kwargs, workflow_id=workflow_id, timeout=timeout, update_id=update_id
        )
        return self.updater.update(call, start, started)

    def _update_with_start_call(
        self,
        wf: Workflow[..., Any] | BoundWorkflow[Any],
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        workflow_id: str,
        timeout: timedelta | float | None,
        update_id: str | None,
    ) -> tuple[updates.UpdateCall, updates.StartAndSend, Workflow[..., Any]]:
        """What both engine faces' `update_with_start` hand their updater: the request
        checked and encoded, the start that delivers it, and the workflow it starts (whose
        validator runs here)."""
        wf, start_args, start_kwargs = unbind(wf, (), {})
        call = self.updater.call(
            workflow_id, name, args, kwargs, update_id=update_id, timeout=timeout
        )
        start = functools.partial(
            self.starts.create_and_send,
            wf,
            start_args,
            start_kwargs,
            workflow_id=workflow_id,
            accept=updates.refuse_finished(call),
        )
        return call, start, wf

    def send_with_start(
        self,
        wf: Workflow[..., R] | BoundWorkflow[R],
        message: Any,
        /,
        topic: str | None = None,
        *,
        workflow_id: str,
        idempotency_key: str | None = None,
    ) -> WorkflowHandle[R]:
        """Start `wf` (bound to its arguments) under `workflow_id` if the id is free, and
        deliver `message` to the run in the same transaction (as `send`: a used
        `idempotency_key` delivers nothing). A run under the id must be this start."""
        self._check_open()
        wf, args, kwargs = unbind(wf, (), {})
        outgoing, call_id = admin.outgoing_message(
            workflow_id, message, topic, idempotency_key=idempotency_key, **self._delivery()
        )
        self.starts.create_and_send(
            wf, args, kwargs, workflow_id=workflow_id, message=outgoing, call_id=call_id
        )
        return self._handle_for(workflow_id, wf.result_type)

    def _trace_context(self) -> str | None:
        return current_trace_context() if self.telemetry.tracing else None
