"""`FromOutside`: what both sync faces (`Engine`, `Client`) deliver to a run and read of
it from outside, written once: a message, an awakeable's completion or failure, an
update, and a run's log, events, step heartbeats and streams.

A mixin of both. Where the faces differ it asks them: `_writing()` and `_reading()`
raise when the face may not do it now (a closed client; an engine delivers and reads
after its close, as it always has), and `_trace_context()` is the trace context a
delivery carries (an engine's only when it traces, a client's always).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import Any, TypedDict

from replaykit.log import Record
from replaykit.runtime import admin, awakeables, streams, updates
from replaykit.stores.base import StepHeartbeat, Store

__all__ = ["Delivery", "FromOutside"]


class Delivery(TypedDict):
    """The keywords each delivery from outside is given (`FromOutside._delivery`)."""

    max_bytes: int
    trace_context: str | None


class FromOutside:
    """The sync faces' deliveries to a run, and its events and heartbeats."""

    # Set by the face's `__init__`.
    store: Store
    max_payload_bytes: int
    poll_interval: float
    updater: updates.Updater

    def _check_open(self) -> None:
        raise NotImplementedError

    def _writing(self) -> None:
        """Raise if this face may not deliver now."""

    def _reading(self) -> None:
        """Raise if this face may not read now."""

    def _trace_context(self) -> str | None:
        raise NotImplementedError

    def listen(
        self, wakes: Iterable[tuple[str, str]], callback: Callable[[], None]
    ) -> Callable[[], None]:
        raise NotImplementedError

    def _delivery(self) -> Delivery:
        """What every delivery from this face carries: its payload limit, and its trace
        context (a send-with-start's message too)."""
        return {"max_bytes": self.max_payload_bytes, "trace_context": self._trace_context()}

    def send(
        self,
        workflow_id: str,
        message: Any,
        topic: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> bool:
        """Deliver a message to a run's inbox; False if `idempotency_key` was used already."""
        self._writing()
        return admin.send_message(
            self.store,
            workflow_id,
            message,
            topic,
            idempotency_key=idempotency_key,
            **self._delivery(),
        )

    def complete(self, token: str, value: Any = None) -> None:
        """Deliver `value` to the run's `Await(token)`, once (docs/communication.md).

        `UnknownToken`, `RunEnded` or `AlreadyCompleted` (each a `CompletionRefused`)
        say why nothing was delivered.
        """
        self._writing()
        awakeables.complete(self.store, token, value, **self._delivery())

    def fail(self, token: str, error: str | Exception) -> None:
        """Make the run's `Await(token)` raise `error` (a message: `AwakeableFailed`), once."""
        self._writing()
        awakeables.fail(self.store, token, error, **self._delivery())

    def steps(self, workflow_id: str) -> list[Record]:
        """The run's log, position by position."""
        self._reading()
        admin.get_run(self.store, workflow_id)  # an unknown id raises WorkflowNotFound
        return self.store.load_log(workflow_id)

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        """Every event of a run, each key with its latest value; `WorkflowNotFound` if no
        run has that id."""
        self._reading()
        return self.store.get_events(workflow_id)

    def get_heartbeats(self, workflow_id: str) -> list[StepHeartbeat]:
        """The latest heartbeat of each step of a run that beat (its details as JSON data,
        its time, its attempt), by position; `WorkflowNotFound` if no run has that id."""
        self._reading()
        return self.store.get_step_heartbeats(workflow_id)

    def read_stream(
        self, workflow_id: str, key: str, start: int = 0, *, timeout: float | None = None
    ) -> Iterator[Any]:
        """The values the run writes to its stream `key`, in order, each once, from the
        `start`-th; blocks until more arrive, ending at its close or the run's end.

        `WorkflowNotFound` at once for an unknown id; `StreamTimeout` (a `TimeoutError`)
        when `timeout` seconds pass without a new value. Reads only what it has not read.
        """
        streams.check_read_arguments(key, start, timeout)
        self._reading()
        admin.get_run(self.store, workflow_id)  # an unknown id raises WorkflowNotFound
        return streams.read_blocking(
            self.store,
            self.listen,
            workflow_id,
            key,
            start,
            timeout=timeout,
            poll_interval=self.poll_interval,
            monotonic=time.monotonic,
        )

    # -- updates: a request and its reply (docs/communication.md, "Updates") ---------------

    def update(
        self,
        workflow_id: str,
        name: str,
        /,
        *args: Any,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Send update `name` to a run and return its reply (or raise the error it replied
        with); again with the same `update_id`, the same reply. Refused, nothing sent:
        `UnknownUpdate`, the validator's error. `UpdateRunFinished`, `UpdateTimeout`.

        With the workflow's code imported here, its validator runs here first; without
        (a client's), the request goes unvalidated and the engine runs the validator
        before delivering it (an unknown name is then found only by the timeout)."""
        self._check_open()
        call = self.updater.call(
            workflow_id, name, args, kwargs, update_id=update_id, timeout=timeout
        )
        return self.updater.update(call)
