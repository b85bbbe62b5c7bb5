"""The handles a `Client` gives: a run's id, its status, and a way to wait for it."""

from __future__ import annotations

from typing import Any, Protocol

from replaykit.runtime import admin
from replaykit.runtime.handles import RunHandle, Updates
from replaykit.stores.base import WorkflowRow

__all__ = ["ClientHandle", "ResumedHandle", "RunReader"]


class RunReader(Updates, Protocol):
    """What a handle asks of its client (`Client`)."""

    def _row(self, workflow_id: str) -> WorkflowRow: ...

    def _wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow: ...


class ClientHandle(RunHandle):
    """A run seen from a client: its id, its status, and a way to wait for its result.

    Results come back as their stored JSON forms decoded without type hints
    (the client has no workflow code to read them from): a dataclass result
    reads as a dict. A failure is re-raised as its own class when that class
    is imported in this process, else as `StepFailed`.
    """

    def __init__(self, client: RunReader, workflow_id: str) -> None:
        self._client = client
        self.workflow_id = workflow_id

    def __repr__(self) -> str:
        return f"<ClientHandle {self.workflow_id!r}>"

    def row(self) -> WorkflowRow:
        """The run as stored now."""
        return self._client._row(self.workflow_id)

    def _face(self) -> RunReader:
        return self._client

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the run to finish and return its result, or raise its failure.

        A cancelled run raises `AwaitedWorkflowCancelled` (with the cancel's
        reason); `WorkflowTimeout` if `timeout` passes first, saying what the
        run is doing.
        """
        return admin.run_outcome(self._client._wait_finished(self.workflow_id, timeout))


class ResumedHandle(ClientHandle):
    """What `Client.resume` returns: the run's handle, and what the resume changed."""

    def __init__(self, client: RunReader, workflow_id: str, resumed: admin.Resumed) -> None:
        super().__init__(client, workflow_id)
        #: Every run the resume changed: the run first, then the children its cancel
        #: reached, then the unfinished runs of its family moved onto `app_version`.
        self.resumed: tuple[str, ...] = tuple(resumed.ids)
        #: The unfinished runs of its family (children, grandchildren, children of
        #: earlier generations) moved onto `app_version` with it, parents first.
        self.moved: tuple[str, ...] = resumed.moved
