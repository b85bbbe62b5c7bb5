"""Cancel the runs a filtered runs list shows, from the UI: the count, then the action.

The selection is the runs list's own filter (`RunsQuery.where()`), never empty: the UI
has no "every run" (the CLI's `--all` is for that). The confirmation page names how
many runs the cancel would reach and how many it leaves (finished ones); the POST then
cancels through `runtime.bulk.carry_out` as the CLI does, each run with the UI's
single-run cancel (`admin.cancel_run`, a hard stop as the run page's Cancel is), in
keyset batches of one transaction a run, keeping the reason given as its status
detail. The page is rendered by `_app`; this module holds no web code.
"""

from __future__ import annotations

import attrs

from replaykit.runtime.admin import cancel_run
from replaykit.runtime.bulk import ACTIONS, BulkResult, carry_out, selects
from replaykit.stores.base import Store, WorkflowFilter

__all__ = ["BulkPreview", "NoFilter", "cancel_selection", "preview"]

#: The status detail a run cancelled from the UI in bulk keeps when no reason is given.
DEFAULT_REASON = "cancelled in bulk from the UI"


class NoFilter(ValueError):
    """A bulk cancel of every run: refused, with what to do instead."""

    def __init__(self) -> None:
        super().__init__(
            "a bulk cancel acts on the runs a filter selects, and this selection has no "
            "filter (it would be every run of the store). Filter the runs list first (a "
            "status, a name, a queue, a run id prefix, a time range); to cancel every run, "
            "use `replaykit workflows cancel --all`"
        )


@attrs.frozen
class BulkPreview:
    """What the confirmation page says: the count, out of how many match."""

    matched: int  # runs the filter selects
    to_cancel: int  # unfinished among them: what the cancel would reach
    finished: int  # left as they are


def _checked(where: WorkflowFilter) -> WorkflowFilter:
    if not selects(where):
        raise NoFilter()
    return where


def preview(store: Store, where: WorkflowFilter) -> BulkPreview:
    """How many runs a bulk cancel of `where` would reach (one grouped count)."""
    counted = carry_out(store, ACTIONS["cancel"], _checked(where), _never, dry_run=True)
    return BulkPreview(counted.matched, counted.done, counted.skipped)


def cancel_selection(store: Store, where: WorkflowFilter, reason: str) -> BulkResult:
    """Cancel every unfinished run `where` selects (and their children), keeping `reason`."""
    said = reason.strip() or DEFAULT_REASON
    return carry_out(
        store,
        ACTIONS["cancel"],
        _checked(where),
        lambda row: cancel_run(store, row.workflow_id, children=True, reason=said),
    )


def _never(row: object) -> bool:
    raise AssertionError("a dry run acts on no run")
