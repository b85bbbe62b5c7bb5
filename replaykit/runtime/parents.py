"""What a run's end does to its children: their parent close policies, applied without
letting a failure to apply them undo the end itself."""

from __future__ import annotations

import logging
from collections.abc import Callable

from replaykit.runtime import admin
from replaykit.stores.base import Store, WorkflowRow

__all__ = ["close_children_after"]

log = logging.getLogger("replaykit.engine")


def close_children_after(
    store: Store,
    row: WorkflowRow,
    how: str,
    *,
    on_cancel: Callable[[str], None],
    on_ask: Callable[[str, str], None],
) -> None:
    """Apply the parent close policies of `row`'s children (`admin.close_children`) now
    that it ended (`how`: its status, or "continued as new"); a failure is logged, and
    the children it did not reach are left running."""
    try:
        admin.close_children(
            store, row.workflow_id, f"it {how}", on_cancel=on_cancel, on_ask=on_ask
        )
    except Exception as exc:  # its own end stands; a child left running is logged
        log.warning(
            "workflow %r (id %r) ended, but its children's parent close policies could "
            "not be applied: %s",
            row.name,
            row.workflow_id,
            exc,
        )
