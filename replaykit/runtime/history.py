"""Running a run again from a position: `fork` (into a new run) and `rewind` (under its
own id), as the blocking `Engine` offers them.

A mixin of `Engine`'s: the work is `admin.fork_run` and `admin.rewind_run`; the engine
then runs what they made ready.
"""

from __future__ import annotations

from typing import Any

from replaykit.runtime import admin
from replaykit.runtime.clock import Clock
from replaykit.runtime.handles import WorkflowHandle
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["History"]


class History:
    """The engine's methods that run a run's history again from a position."""

    # Set by `Engine.__init__`.
    store: Store
    clock: Clock
    executor_id: str
    app_version: str

    def dispatch(self, workflow_id: str, *, row: WorkflowRow | None = None) -> None:
        raise NotImplementedError

    def _handle_for(self, workflow_id: str, result_type: Any) -> WorkflowHandle[Any]:
        raise NotImplementedError

    def fork(
        self,
        source_id: str,
        from_position: int,
        /,
        *,
        workflow_id: str | None = None,
        app_version: str | None = None,
    ) -> WorkflowHandle[Any]:
        """Copy the run's records below `from_position` into a new run and run it from there.

        The way to re-run a fixed version of a failed workflow without repeating
        its completed steps. Positions from `from_position` on run again live.
        """
        stored, _kept = admin.fork_run(
            self.store,
            source_id,
            from_position,
            workflow_id=workflow_id,
            executor_id=self.executor_id,
            app_version=app_version or self.app_version,
            now=self.clock.now(),
        )
        self.dispatch(stored.workflow_id)
        return self._handle_for(stored.workflow_id, None)

    def rewind(self, workflow_id: str, position: int, /) -> WorkflowHandle[Any]:
        """Run a finished or failed run again from `position`, under its own id, here.

        The records below `position` are kept and the rest run again live on this
        engine's code; the attempt that ended stays in the run's history (`replaykit
        workflows show ID` lists it) as its previous generation, with its result or error.
        A live run is refused with `ValueError`: cancel it first.
        """
        admin.rewind_run(
            self.store,
            workflow_id,
            position,
            executor_id=self.executor_id,
            app_version=self.app_version,
            now=self.clock.now(),
        )
        self.dispatch(workflow_id)
        return self._handle_for(workflow_id, None)
