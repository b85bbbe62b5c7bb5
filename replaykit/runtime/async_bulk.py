"""The bulk actions as coroutines, for `AsyncEngine` and `AsyncClient` (a base of
`AsyncFace`): each is the sync face's method of the same name run off the loop
(`runtime/bulk.py` does the work; `runtime/twins.py` makes the coroutine from its
signature). A `progress` callback is called on the thread that carries the call, not
on the loop.
"""

from __future__ import annotations

from replaykit.runtime.bulk import BulkActions
from replaykit.runtime.twins import off_loop_twin

__all__ = ["AsyncBulkActions"]


class AsyncBulkActions:
    """`cancel_workflows`, `terminate_workflows`, `resume_workflows`, `delete_workflows`
    and `send_many` of the sync face, as coroutines."""

    cancel_workflows = off_loop_twin(BulkActions.cancel_workflows)
    terminate_workflows = off_loop_twin(BulkActions.terminate_workflows)
    resume_workflows = off_loop_twin(BulkActions.resume_workflows)
    delete_workflows = off_loop_twin(BulkActions.delete_workflows)
    send_many = off_loop_twin(BulkActions.send_many)
