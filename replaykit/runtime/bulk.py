"""Bulk actions: one operation on every run a filter selects, in batches.

`cancel_workflows`, `terminate_workflows`, `resume_workflows`, `delete_workflows` and
`send_many` are the same on `Engine` and `Client` (`BulkActions`, a mixin of both; the
async faces hand them to it off their loop). Each hands its single-run method to
`carry_out`, so a run acted on in bulk is acted on exactly as alone: a cancel keeps its
reason as the run's status detail and applies its children's parent close policies, an
engine stops what it runs of it, a send is keyed. What lives here is what a bulk
action adds:

- the selection (`selection`): a `WorkflowFilter` and keyword filters; an empty one is
  refused unless `all=True`, so a slip never acts on every run of a store;
- a dry run, which counts with one grouped count (`count_workflows_by` status);
- batches read by keyset (`WorkflowFilter.after`, on the (created_at, workflow_id)
  index): a page of ids, then one transaction per run. No transaction spans a batch,
  so other runs keep committing meanwhile, and memory stays flat;
- resumption: a run the action finds done already (a cancelled run for a cancel, a
  message key used for a send) is skipped and counted, so running the same call again
  after an interruption carries on where it stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Unpack

import attrs

from replaykit.errors import DamagedData, WorkflowNotFound
from replaykit.log import Status
from replaykit.runtime import admin
from replaykit.runtime.cancels import DEFAULT_GRACE
from replaykit.runtime.outside import FromOutside
from replaykit.runtime.run_filters import BulkFilters, check_keywords, workflow_filter
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow
from replaykit.stores.where import Where

__all__ = [
    "ACTIONS",
    "DEFAULT_BATCH",
    "Action",
    "BulkActions",
    "BulkResult",
    "carry_out",
    "selection",
    "selects",
]

log = logging.getLogger("replaykit.bulk")

#: Runs read (and acted on, one transaction each) per batch: a page of ids small
#: enough to keep memory flat and a rerun's skipped prefix cheap.
DEFAULT_BATCH = 500
#: Failures a result keeps the messages of; past this, only their count.
KEPT_FAILURES = 100

_UNFINISHED = frozenset((Status.PENDING, Status.ENQUEUED, Status.PARKED))


@attrs.frozen
class Action:
    """What a bulk action is called, and which runs of a selection it acts on."""

    name: str
    done: str  # the past tense, for what is printed and logged
    statuses: frozenset[Status]


#: Every bulk action by name. A run of the selection in another status is skipped:
#: a finished run is not cancelled, a running one not resumed, an archived
#: generation (CONTINUED) goes with its run's delete rather than alone.
ACTIONS: dict[str, Action] = {
    action.name: action
    for action in (
        Action("cancel", "cancelled", _UNFINISHED),
        Action("terminate", "terminated", _UNFINISHED),
        Action("resume", "resumed", frozenset((Status.CANCELLED, Status.PARKED))),
        Action("delete", "deleted", frozenset(Status) - {Status.CONTINUED}),
        Action("send", "sent to", _UNFINISHED),
    )
}


@attrs.frozen
class BulkResult:
    """What a bulk action did (or, in a dry run, would do)."""

    action: str
    #: Runs the selection held as it was read (in a dry run: counted).
    matched: int
    #: Runs this call acted on (in a dry run: how many it would act on).
    done: int
    #: Runs it left: done already (a rerun after an interruption counts here what the
    #: first call did), or not open to the action (a finished run for a cancel).
    skipped: int
    #: Runs whose action raised (a delete refused because the parent runs, a damaged row).
    failed: int = 0
    #: (workflow_id, why) of the first `KEPT_FAILURES` failures.
    failures: tuple[tuple[str, str], ...] = ()
    dry_run: bool = False

    def summary(self) -> str:
        """One line for a person: what was done, skipped and failed."""
        verb = ACTIONS[self.action].done
        if self.dry_run:
            text = f"would have {verb} {self.done} of {self.matched} matching run(s)"
            return text + (f"; {self.skipped} skipped (done already, or not open to it)")
        text = f"{verb} {self.done} of {self.matched} matching run(s); {self.skipped} skipped"
        return text + (f"; {self.failed} failed" if self.failed else "")


def selection(
    where: WorkflowFilter | str | Where | None,
    *,
    what: str,
    everything: bool,
    **filters: Unpack[BulkFilters],
) -> WorkflowFilter:
    """The runs a bulk action `what` (e.g. "cancel_workflows") acts on: `where` narrowed
    by the keyword filters. Refuses a selection of every run unless `everything`, and a
    limit or offset (a bulk action reads the whole selection in keyset batches)."""
    if where is not None and not isinstance(where, WorkflowFilter):
        # What list_workflows(where=...) takes: a filter's text or its tree.
        where = WorkflowFilter(where=where)
    base = where or WorkflowFilter()
    check_keywords(what, filters, BulkFilters)
    keywords = workflow_filter(**filters)
    wanted: dict[str, Any] = {
        field: getattr(keywords, field)
        for field in ("status", "name", "app_version", "queue", "since", "until", "id_prefix")
        if getattr(keywords, field) is not None
    }
    for field, value in wanted.items():
        held = getattr(base, field)
        if held is not None and held != value:
            raise ValueError(
                f"{what}: where= says {field}={held!r} and the keyword says {value!r}; give it once"
            )
    chosen = attrs.evolve(base, **wanted)
    if chosen.limit is not None or chosen.offset or chosen.count_at_most is not None:
        raise ValueError(
            f"{what} acts on every run its filter selects, read in batches of its own: "
            "the filter takes no limit, offset or count_at_most (narrow it by since=, "
            "until= or id_prefix=)"
        )
    if not selects(chosen) and not everything:
        raise ValueError(
            f"{what}() with no filter would act on every run in the store; give a filter "
            "(status=, name=, queue=, since=, until=, id_prefix= or where=), or all=True "
            "(`--all` on the command line) if every run is meant"
        )
    return chosen


def selects(where: WorkflowFilter) -> bool:
    """Whether `where` narrows the runs at all: its order, page and payloads do not."""
    unordered = attrs.evolve(where, payloads=True, newest_first=False, after=None)
    return unordered != WorkflowFilter()


def carry_out(
    store: Store,
    action: Action,
    where: WorkflowFilter,
    act: Callable[[WorkflowRow], bool],
    *,
    dry_run: bool = False,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[BulkResult], object] | None = None,
) -> BulkResult:
    """Apply `act` to each run `where` selects whose status `action` acts on, oldest first.

    `act(row)` does one run's action in transactions of its own and says whether it
    changed anything (False: done already, counted as skipped). A run gone meanwhile is
    skipped; a `ValueError` or damaged row is counted as failed (its message kept) and
    the action goes on. Anything else (the store unreachable, an interrupt) ends the
    call: what it did stays done, and the same call again carries on. `progress` is
    called with the tally after each batch.
    """
    if type(batch_size) is not int or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r}: give a whole number of runs, 1 or more")
    if dry_run:
        by_status = store.count_workflows_by(where, "status")
        matched = sum(by_status.values())
        open_to = sum(n for s, n in by_status.items() if Status(s) in action.statuses)
        return BulkResult(action.name, matched, open_to, matched - open_to, dry_run=True)
    matched = done = skipped = failed = 0
    failures: list[tuple[str, str]] = []
    page = attrs.evolve(where, limit=batch_size, offset=0, payloads=False)
    while True:
        batch = store.list_workflows(page)
        for row in batch:
            matched += 1
            if row.status not in action.statuses:
                skipped += 1
                continue
            try:
                changed = act(row)
            except WorkflowNotFound:
                changed = False  # deleted meanwhile: nothing left to act on
            except (ValueError, DamagedData) as exc:
                failed += 1
                if len(failures) < KEPT_FAILURES:
                    failures.append((row.workflow_id, str(exc)))
                continue
            done += changed
            skipped += not changed
        tally = BulkResult(action.name, matched, done, skipped, failed, tuple(failures))
        if progress is not None:
            progress(tally)
        if len(batch) < batch_size:
            return tally
        last = batch[-1]
        assert last.created_at is not None  # every store stamps a run at its creation
        page = attrs.evolve(page, after=(last.created_at, last.workflow_id))


def _reason(reason: str, action: str) -> str:
    """The status detail a run acted on in bulk keeps: the caller's reason, or the fact."""
    if not isinstance(reason, str):
        raise TypeError(f"{action}(reason={reason!r}): the reason must be a str")
    return reason or f"a bulk {action.removesuffix('_workflows')}"


class BulkActions(FromOutside):
    """A mixin of `Engine`'s and `Client`'s: the bulk actions over their single-run ones.

    `_delete_one` is the face's delete of one run (the engine's also forgets what it
    kept of it); everything else is the face's public single-run method (`send`
    the one both faces share, `FromOutside`).
    """

    def cancel(
        self, workflow_id: str, *, grace: float = ..., reason: str = "", children: bool = True
    ) -> bool:
        raise NotImplementedError

    def terminate(self, workflow_id: str, *, children: bool = True, reason: str = "") -> bool:
        raise NotImplementedError

    def resume(self, workflow_id: str) -> object:
        raise NotImplementedError

    def _delete_one(self, workflow_id: str, children: bool) -> bool:
        return admin.delete_run(self.store, workflow_id, children=children)

    def _select(
        self,
        what: str,
        where: WorkflowFilter | str | Where | None,
        everything: bool,
        filters: BulkFilters,
    ) -> WorkflowFilter:
        """`selection` for the bulk action `what` of this face, once it is checked open."""
        self._check_open()
        return selection(where, what=what, everything=everything, **filters)

    def _carry_out(
        self,
        chosen: WorkflowFilter,
        act: Callable[[WorkflowRow], bool],
        dry_run: bool,
        batch_size: int,
        progress: Callable[[BulkResult], object] | None,
        action: str,
    ) -> BulkResult:
        """`carry_out` on this face's store: bulk action `action` by `act`, over `chosen`."""
        return carry_out(
            self.store,
            ACTIONS[action],
            chosen,
            act,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=progress,
        )

    def cancel_workflows(
        self,
        where: WorkflowFilter | str | Where | None = None,
        *,
        all: bool = False,
        reason: str = "",
        grace: float = DEFAULT_GRACE,
        children: bool = True,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
        **filters: Unpack[BulkFilters],
    ) -> BulkResult:
        """`cancel` every unfinished run the filter selects (`where` and the keyword
        filters, all of which must match), in batches; finished runs are skipped.

        Each run keeps `reason` (default "a bulk cancel") as its status detail. No
        filter is refused unless `all=True`. `dry_run=True` only counts. Running the
        same call again after an interruption carries on: the runs cancelled already
        are skipped and counted. `progress(result)` hears the tally after each batch.
        """
        said = _reason(reason, "cancel_workflows")

        def cancel(row: WorkflowRow) -> bool:
            return self.cancel(row.workflow_id, grace=grace, reason=said, children=children)

        chosen = self._select("cancel_workflows", where, all, filters)
        return self._carry_out(chosen, cancel, dry_run, batch_size, progress, "cancel")

    def terminate_workflows(
        self,
        where: WorkflowFilter | str | Where | None = None,
        *,
        all: bool = False,
        reason: str = "",
        children: bool = True,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
        **filters: Unpack[BulkFilters],
    ) -> BulkResult:
        """`terminate` every unfinished run the filter selects, as `cancel_workflows`
        selects and reports (the default reason: "a bulk terminate")."""
        said = _reason(reason, "terminate_workflows")

        def terminate(row: WorkflowRow) -> bool:
            return self.terminate(row.workflow_id, children=children, reason=said)

        chosen = self._select("terminate_workflows", where, all, filters)
        return self._carry_out(chosen, terminate, dry_run, batch_size, progress, "terminate")

    def resume_workflows(
        self,
        where: WorkflowFilter | str | Where | None = None,
        *,
        all: bool = False,
        reason: str = "",
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
        **filters: Unpack[BulkFilters],
    ) -> BulkResult:
        """`resume` every CANCELLED or PARKED run the filter selects (with the children
        their cancels reached); other runs are skipped. An engine resumes them onto
        itself, a client leaves each with its own engine. `reason` is logged with each
        run (logger "replaykit.bulk"), as a resume keeps no status detail."""
        said = _reason(reason, "resume_workflows")

        def resume(row: WorkflowRow) -> bool:
            self.resume(row.workflow_id)
            log.info("resumed workflow %r (id %r) in bulk: %s", row.name, row.workflow_id, said)
            return True

        chosen = self._select("resume_workflows", where, all, filters)
        return self._carry_out(chosen, resume, dry_run, batch_size, progress, "resume")

    def delete_workflows(
        self,
        where: WorkflowFilter | str | Where | None = None,
        *,
        all: bool = False,
        reason: str = "",
        children: bool = False,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
        **filters: Unpack[BulkFilters],
    ) -> BulkResult:
        """Delete every run the filter selects with its log, inbox and events
        (cancelling it first if it runs), as `delete` does one. A run whose parent is
        unfinished is refused and counted as failed (delete the parent with
        `children=True`). `reason` is logged with each run (logger "replaykit.bulk")."""
        said = _reason(reason, "delete_workflows")

        def delete(row: WorkflowRow) -> bool:
            deleted = self._delete_one(row.workflow_id, children)
            if deleted:
                log.info("deleted workflow %r (id %r) in bulk: %s", row.name, row.workflow_id, said)
            return deleted

        chosen = self._select("delete_workflows", where, all, filters)
        return self._carry_out(chosen, delete, dry_run, batch_size, progress, "delete")

    def send_many(
        self,
        message: Any,
        topic: str | None = None,
        *,
        where: WorkflowFilter | str | Where | None = None,
        all: bool = False,
        idempotency_key: str | None = None,
        dry_run: bool = False,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], object] | None = None,
        **filters: Unpack[BulkFilters],
    ) -> BulkResult:
        """`send` `message` on `topic` to every unfinished run the filter selects.

        With `idempotency_key`, each run's message is keyed `<key>:<workflow id>`: the
        same call again (after an interruption) delivers to the runs it had not reached
        and counts the others as skipped. Without one, every call delivers again.
        """
        if idempotency_key is not None and not isinstance(idempotency_key, str):
            raise TypeError(f"send_many(idempotency_key={idempotency_key!r}): give a str")

        def send(row: WorkflowRow) -> bool:
            key = None if idempotency_key is None else f"{idempotency_key}:{row.workflow_id}"
            return self.send(row.workflow_id, message, topic, idempotency_key=key)

        chosen = self._select("send_many", where, all, filters)
        return self._carry_out(chosen, send, dry_run, batch_size, progress, "send")
