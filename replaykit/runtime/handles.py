"""`WorkflowHandle`: a started run as the blocking `Engine` hands it back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Generic, Protocol, TypeVar

from replaykit.errors import UnknownWorkflowError
from replaykit.log import Status
from replaykit.registry import lookup
from replaykit.runtime import admin
from replaykit.runtime.cancels import DEFAULT_GRACE
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["RunHandle", "RunSource", "Updates", "WorkflowHandle", "result_type_of"]

R = TypeVar("R")


class Updates(Protocol):
    """What a handle asks of its face for an update of its run (`Engine`, `Client`)."""

    def update(
        self,
        workflow_id: str,
        name: str,
        /,
        *args: Any,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any: ...


class RunSource(Updates, Protocol):
    """What a handle asks of its engine (the blocking `Engine`)."""

    @property
    def store(self) -> Store: ...

    def wait_finished(self, workflow_id: str, timeout: float | None) -> WorkflowRow: ...

    def outcome_value(self, row: WorkflowRow, result_type: Any = None) -> Any: ...

    def cancel(self, workflow_id: str, *, grace: float = ..., reason: str = "") -> bool: ...

    def terminate(self, workflow_id: str, *, children: bool = True, reason: str = "") -> bool: ...


def result_type_of(row: WorkflowRow, declared: Any) -> Any:
    """The type a finished run's result is decoded as: the one its handle was made with,
    else its registered workflow's (None where this process does not know it)."""
    if declared is not None:
        return declared
    try:
        return lookup(row.name).result_type
    except UnknownWorkflowError:
        return None


class RunHandle:
    """What the sync faces' handles share (`WorkflowHandle`, `ClientHandle`): a run's id
    and the calls about it that only name the run to their face (`AsyncRunHandle` is
    the async faces' twin)."""

    workflow_id: str

    def _face(self) -> Updates:
        raise NotImplementedError

    def row(self) -> WorkflowRow:
        raise NotImplementedError

    def status(self) -> Status:
        """The run's status now."""
        return self.row().status

    def update(
        self,
        name: str,
        /,
        *args: Any,
        timeout: timedelta | float | None = None,
        update_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`update` of this run, by its face: its reply to update `name`."""
        return self._face().update(
            self.workflow_id, name, *args, timeout=timeout, update_id=update_id, **kwargs
        )


class WorkflowHandle(RunHandle, Generic[R]):
    """A started run: its id, its status, and a way to wait for its result."""

    def __init__(self, engine: RunSource, workflow_id: str, result_type: Any = None) -> None:
        self._engine = engine
        self.workflow_id = workflow_id
        self._result_type = result_type

    def __repr__(self) -> str:
        return f"<WorkflowHandle {self.workflow_id!r}>"

    def row(self) -> WorkflowRow:
        return admin.get_run(self._engine.store, self.workflow_id)

    def _face(self) -> RunSource:
        return self._engine

    def result(self, timeout: float | None = None) -> R:
        """Wait for the run to finish and return its result, or raise its failure.

        A run that failed re-raises its error (same class and message when that
        class is importable, else `StepFailed`); a cancelled run raises
        `AwaitedWorkflowCancelled`; `WorkflowTimeout` if `timeout` passes first.
        """
        row = self._engine.wait_finished(self.workflow_id, timeout)
        result_type = result_type_of(row, self._result_type)
        return self._engine.outcome_value(row, result_type)  # type: ignore[no-any-return]

    def cancel(self, *, grace: float = DEFAULT_GRACE, reason: str = "") -> bool:
        """`Engine.cancel` of this run: `Cancelled` at its current yield, `grace` to clean up."""
        return self._engine.cancel(self.workflow_id, grace=grace, reason=reason)

    def terminate(self, *, reason: str = "") -> bool:
        """`Engine.terminate` of this run: the hard stop, with no cleanup."""
        return self._engine.terminate(self.workflow_id, reason=reason)
