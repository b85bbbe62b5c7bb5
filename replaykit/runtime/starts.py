"""Starting runs: their rows built and checked, stored one by one or in batches, and
handed to the scheduler (or left on their queue for a claim).

`Starts` is what `Engine.start`, `enqueue`, `enqueue_many`, `start_batch` and the
effect runner's child runs go through. It is handed the store, the clock, the
telemetry and two callables (an activation soon; a deadline to watch), and knows
nothing of the engine around it: a test builds it with a memory store and lists.

A `Client`'s starts, which build their rows from a name rather than a `Workflow`, share
the rest with it: the keywords of a new run's row (`RunPlacement`), and a start stored
or found (`store_start`, `store_start_and_send`, `written_here`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypedDict, Unpack

import attrs

from replaykit import serde
from replaykit.commands import run_deadline
from replaykit.errors import (
    DuplicateDedupId,
    PayloadTooLarge,
    StoreUnavailable,
    WorkflowIdConflict,
)
from replaykit.otel import Telemetry
from replaykit.registry import Workflow
from replaykit.runtime import admin
from replaykit.runtime.clock import Clock
from replaykit.runtime.queues import Queue, QueueItem, check_partition_key, fill_item
from replaykit.stores.base import OutgoingMessage, Store, WorkflowRow

__all__ = [
    "Dispatch",
    "ItemDefaults",
    "RunPlacement",
    "StartRequest",
    "Starts",
    "placed",
    "store_start",
    "store_start_and_send",
    "written_here",
]

log = logging.getLogger("replaykit.engine")

#: One start of `Engine.start_batch`: the workflow, its args and kwargs, its id or None.
StartRequest = tuple[Workflow[..., Any], tuple[Any, ...], dict[str, Any], str | None]


class RunPlacement(TypedDict, total=False):
    """Where a new run waits and what bounds it, beyond its workflow, its arguments and
    its id: the keywords `Starts.new_row` (the engine's starts) and `Client`'s starts
    take alike and hand to `admin.new_run_row`, written once. None given: PENDING for
    its engine at once, unbounded."""

    #: ENQUEUED on this queue, for a claim, rather than PENDING for its engine.
    queue: str | None
    priority: int
    dedup_id: str | None
    delay: timedelta | float | None
    #: Seconds, checked (`commands.run_deadline`); a queued run's count from its claim.
    timeout: float | None
    deadline: datetime | None
    partition_key: str | None
    attributes: Mapping[str, Any] | None
    shard_key: str | None


#: What `admin.new_run_row` is given for what a start leaves out (it has no defaults of
#: its own for these: each caller says them).
_UNPLACED: RunPlacement = {
    "queue": None,
    "priority": 0,
    "dedup_id": None,
    "delay": None,
    "timeout": None,
    "deadline": None,
}


class ItemDefaults(TypedDict, total=False):
    """What `enqueue_many` gives the items that give none of their own (`fill_item`)."""

    priority: int
    delay: timedelta | float | None
    #: Unchecked yet: a timedelta or seconds, counted from each run's claim.
    timeout: timedelta | float | None
    deadline: datetime | None
    partition_key: str | None
    attributes: Mapping[str, Any] | None


_NO_ITEM_DEFAULTS: ItemDefaults = {"priority": 0, "delay": None, "timeout": None, "deadline": None}


def placed(placement: RunPlacement) -> RunPlacement:
    """`placement` with what it leaves out as a start without it means it."""
    full: RunPlacement = {**_UNPLACED, **placement}
    return full


def store_start(store: Store, row: WorkflowRow) -> tuple[WorkflowRow, bool]:
    """Store a new run's row, or find the run its id holds, which must be this same
    start (else `WorkflowIdConflict`): (the stored run, whether this call created it).
    The engine's starts and the client's alike."""
    stored, created = store.create_workflow(row)
    if not created:
        admin.check_start(stored, row)
    return stored, created


def store_start_and_send(
    store: Store,
    row: WorkflowRow,
    message: OutgoingMessage,
    *,
    call_id: str | None,
    accept: Callable[[WorkflowRow], None] | None,
) -> tuple[WorkflowRow, bool, bool]:
    """Send-with-start's store call: `row` stored unless its id is taken, by this same
    start only (then `accept` passes on the run found), and `message` delivered in the
    same transaction: (the run, created, delivered)."""

    def same_start(found: WorkflowRow) -> None:
        admin.check_start(found, row)
        if accept is not None:
            accept(found)

    return store.create_and_send(row, message, call_id=call_id, accept=same_start)


def written_here(row: WorkflowRow, stored: WorkflowRow, created: bool) -> bool:
    """Whether `stored` is the row this start wrote: created now, or found after a lost
    acknowledgement (the first attempt committed, the retry found the run): its creation
    instant, to the microsecond, from this caller's clock, says it is this call's."""
    return created or stored.created_at == row.created_at


class Dispatch(Protocol):
    """An activation of a run soon (`Scheduler.dispatch`)."""

    def __call__(
        self, workflow_id: str, *, row: WorkflowRow | None = None, fresh: bool = False
    ) -> None: ...


class Starts:
    """Builds the rows of new runs and stores them; the runs that start here at once
    go to `dispatch`, queued ones with an absolute deadline to `watch_deadline`."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        telemetry: Telemetry,
        *,
        executor_id: str,
        app_version: str,
        max_payload_bytes: int,
        dispatch: Dispatch,
        watch_deadline: Callable[[str, datetime], None],
        step_aside: Callable[[], object],
    ) -> None:
        self.store = store
        self.clock = clock
        self.telemetry = telemetry
        self.executor_id = executor_id
        self.app_version = app_version
        self.max_payload_bytes = max_payload_bytes
        self._dispatch = dispatch
        self._watch_deadline = watch_deadline
        # An application's loop shares the interpreter lock: a long batch lets it run.
        self._step_aside = step_aside

    # -- one run ---------------------------------------------------------------------------

    def create_run(
        self,
        wf: Workflow[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        workflow_id: str | None = None,
        parent_id: str | None = None,
        queue: str | None = None,
        priority: int = 0,
        dedup_id: str | None = None,
        delay: timedelta | float | None = None,
        timeout: float | None = None,
        deadline: datetime | None = None,
        partition_key: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        shard_key: str | None = None,
    ) -> tuple[WorkflowRow, bool]:
        """Store a new run (or find the existing one with that id) and schedule it.

        With a `queue` the run is ENQUEUED and waits for a claim instead.
        `timeout` (seconds, checked) and `deadline` (aware) bound the run.
        """
        # Spelled out, not `**placement`: this is `Engine.create_run`, whose signature
        # docs/api.md shows.
        row = self.new_row(
            wf,
            args,
            kwargs,
            workflow_id=workflow_id,
            parent_id=parent_id,
            now=self.clock.now(),
            queue=queue,
            priority=priority,
            dedup_id=dedup_id,
            delay=delay,
            timeout=timeout,
            deadline=deadline,
            partition_key=partition_key,
            attributes=attributes,
            shard_key=shard_key,
        )
        stored, created = store_start(self.store, row)
        self._dispatch_created(row, stored, created)
        return stored, created

    def create_and_send(
        self,
        wf: Workflow[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        workflow_id: str,
        message: OutgoingMessage,
        call_id: str | None = None,
        accept: Callable[[WorkflowRow], None] | None = None,
    ) -> tuple[WorkflowRow, bool, bool]:
        """Send-with-start: store a new run (or find the one with that id, which must be
        this start, and pass `accept`) and deliver `message` to it in the same
        transaction; schedule it. (the run, created, delivered)."""
        row = self.new_row(
            wf,
            args,
            kwargs,
            workflow_id=workflow_id,
            now=self.clock.now(),
        )

        stored, created, delivered = store_start_and_send(
            self.store, row, message, call_id=call_id, accept=accept
        )
        self._dispatch_created(row, stored, created)
        return stored, created, delivered

    def _dispatch_created(self, row: WorkflowRow, stored: WorkflowRow, created: bool) -> None:
        if created:
            self.telemetry.run_started(row.name)
        # A lost acknowledgement (the retry found the run the first attempt wrote):
        # still ours to dispatch.
        ours = written_here(row, stored, created)
        if ours and row.queue is None:
            self._dispatch(stored.workflow_id, row=stored, fresh=created)
        elif ours and stored.deadline is not None:
            # Queued with an absolute deadline: it may pass before any worker claims
            # the run, and this engine, which enqueued it, cancels it then.
            self._watch_deadline(stored.workflow_id, stored.deadline)

    def _create_one(self, row: WorkflowRow) -> WorkflowRow:
        stored, created = store_start(self.store, row)
        self._dispatch_created(row, stored, created)
        return stored

    def new_row(
        self,
        wf: Workflow[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        workflow_id: str | None,
        now: datetime,
        parent_id: str | None = None,
        **placement: Unpack[RunPlacement],
    ) -> WorkflowRow:
        """The row of a new run created `now`, its inputs encoded and their size checked."""
        if not isinstance(wf, Workflow):
            raise TypeError(
                f"expected a function decorated with @workflow, got {wf!r}; decorate it with "
                "@replaykit.workflow so the engine can find it again after a restart"
            )
        inputs = wf.encode_inputs(args, kwargs)
        size = len(serde.dumps(inputs).encode())
        if size > self.max_payload_bytes:
            raise PayloadTooLarge(
                f"the arguments of workflow {wf.workflow_name!r} are {size} bytes encoded, over "
                f"the limit of {self.max_payload_bytes}; pass a reference instead, or raise "
                "Engine(max_payload_bytes=...)"
            )
        return admin.new_run_row(
            wf.workflow_name,
            inputs,
            workflow_id=workflow_id,
            executor_id=self.executor_id,
            app_version=self.app_version,
            now=now,
            # The caller's span (a child: its parent's activation span), so that the
            # run's spans join that trace wherever and whenever it runs.
            trace_context=self.telemetry.context_for_new_run(parent_id),
            parent_id=parent_id,
            **placed(placement),
        )

    # -- many runs that start now ------------------------------------------------------------

    def start_batch(
        self,
        starts: Sequence[StartRequest],
        *,
        trace_contexts: Sequence[str | None] | None = None,
        deadlines: Sequence[tuple[float | None, datetime | None]] | None = None,
        attributes: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[WorkflowRow | Exception]:
        """`Engine.start_batch`: one statement and one commit; each answer is the
        run's row, or the error that start alone raised."""
        if deadlines is not None and len(deadlines) != len(starts):
            raise ValueError(
                f"start_batch got {len(deadlines)} deadlines for {len(starts)} starts; pass "
                "one (timeout, deadline) per start ((None, None) for none), or none at all"
            )
        if trace_contexts is not None and len(trace_contexts) != len(starts):
            raise ValueError(
                f"start_batch got {len(trace_contexts)} trace contexts for {len(starts)} "
                "starts; pass one per start (None for none), or none at all"
            )
        now = self.clock.now()
        answers: list[WorkflowRow | Exception | None] = [None] * len(starts)
        rows: list[tuple[int, WorkflowRow]] = []
        step_aside = self._step_aside
        for index, (wf, args, kwargs, workflow_id) in enumerate(starts):
            step_aside()
            try:
                row = self.new_row(
                    wf,
                    args,
                    kwargs,
                    workflow_id=workflow_id,
                    now=now + timedelta(microseconds=index),
                    timeout=None if deadlines is None else deadlines[index][0],
                    deadline=None if deadlines is None else deadlines[index][1],
                    attributes=None if attributes is None else attributes[index],
                )
                if trace_contexts is not None:
                    row = attrs.evolve(row, trace_context=trace_contexts[index])
            except Exception as exc:  # this start's own mistake: it fails alone
                answers[index] = exc
            else:
                rows.append((index, row))
        if rows:
            try:
                stored = self.store.create_workflows([row for _, row in rows])
            except StoreUnavailable:
                raise
            except Exception:
                # A row the store refuses (an id too long, say) fails the batch: each
                # start goes alone, so that the refusal reaches its own caller only.
                for index, row in rows:
                    try:
                        answers[index] = self._create_one(row)
                    except Exception as exc:
                        answers[index] = exc
            else:
                for (index, row), (kept, created) in zip(rows, stored, strict=True):
                    step_aside()
                    try:
                        if not created:
                            admin.check_start(kept, row)
                    except WorkflowIdConflict as exc:
                        answers[index] = exc
                        continue
                    self._dispatch_created(row, kept, created)
                    answers[index] = kept
        done = [answer for answer in answers if answer is not None]
        assert len(done) == len(starts)
        return done

    # -- many runs onto a queue ----------------------------------------------------------------

    def enqueue_many(
        self,
        queue: str | Queue,
        wf: Workflow[..., Any],
        items: Iterable[Sequence[Any] | QueueItem],
        *,
        if_exists: str = "raise",
        **defaults: Unpack[ItemDefaults],
    ) -> list[str]:
        """`Engine.enqueue_many`: the ids of the runs, in item order (for an item whose
        dedup id is held, with `if_exists="return"`, the holder's)."""
        name = queue.name if isinstance(queue, Queue) else queue
        if if_exists not in ("raise", "return"):
            raise ValueError(f"if_exists must be 'raise' or 'return', got {if_exists!r}")
        now = self.clock.now()
        rows: list[WorkflowRow] = []
        what = f"enqueue_many({name!r}, {wf.workflow_name!r}, ...)"
        check_partition_key(defaults.get("partition_key"), what)
        batch: ItemDefaults = {**_NO_ITEM_DEFAULTS, **defaults}
        for index, item in enumerate(items):
            filled = fill_item(item, index, what=what, **batch)
            seconds, item_deadline = run_deadline(
                filled.timeout, filled.deadline, what=f"{what}, item {index}"
            )
            rows.append(
                self.new_row(
                    wf,
                    filled.args,
                    filled.kwargs,
                    workflow_id=filled.workflow_id,
                    queue=name,
                    priority=filled.priority,
                    dedup_id=filled.dedup_id,
                    delay=filled.delay,
                    # Apart by a microsecond: equal priorities are claimed in item order.
                    now=now + timedelta(microseconds=index),
                    timeout=seconds,
                    deadline=item_deadline,
                    partition_key=filled.partition_key,
                    attributes=filled.attributes,
                )
            )
        if not rows:
            return []
        if if_exists == "return":
            return self._enqueue_many_or_found(name, wf, rows)
        answers = self.store.create_workflows(rows)
        return self._enqueued(name, wf, rows, answers)

    def _enqueue_many_or_found(
        self, queue: str, wf: Workflow[..., Any], rows: list[WorkflowRow]
    ) -> list[str]:
        """`enqueue_many(..., if_exists="return")`: the items whose dedup id is held
        answer with the holder's id, the others are enqueued together."""
        found: dict[int, str] = {}  # item index -> the run holding its dedup id
        left = list(range(len(rows)))
        while True:
            try:
                answers = self.store.create_workflows([rows[i] for i in left])
                break
            except DuplicateDedupId as exc:
                holder = exc.existing_id
                key = self._dedup_key_of(holder, [rows[i] for i in left])
                # Each round takes at least one item out, so the loop ends.
                taken = [
                    i
                    for i in left
                    if rows[i].workflow_id != holder and (rows[i].queue, rows[i].dedup_id) == key
                ]
                if not taken:
                    raise
                for i in taken:
                    found[i] = holder
                left = [i for i in left if i not in found]
                if not left:
                    return [found[i] for i in range(len(rows))]
        ids = dict(
            zip(left, self._enqueued(queue, wf, [rows[i] for i in left], answers), strict=True)
        )
        return [ids[i] if i in ids else found[i] for i in range(len(rows))]

    def _dedup_key_of(
        self, holder: str, rows: Sequence[WorkflowRow]
    ) -> tuple[str | None, str | None]:
        """(queue, dedup id) that `holder` holds: an item of the batch, or a stored run."""
        for row in rows:
            if row.workflow_id == holder:
                return row.queue, row.dedup_id
        stored = self.store.get_workflow(holder)
        return (None, None) if stored is None else (stored.queue, stored.dedup_id)

    def _enqueued(
        self,
        name: str,
        wf: Workflow[..., Any],
        rows: Sequence[WorkflowRow],
        answers: Sequence[tuple[WorkflowRow, bool]],
    ) -> list[str]:
        for index, (row, (stored, created)) in enumerate(zip(rows, answers, strict=True)):
            if created:
                self.telemetry.run_started(row.name)
                if stored.deadline is not None:
                    self._watch_deadline(stored.workflow_id, stored.deadline)
                continue
            try:
                admin.check_start(stored, row)
            except WorkflowIdConflict as exc:
                others = len(rows) - 1
                raise WorkflowIdConflict(
                    f"enqueue_many({name!r}, {wf.workflow_name!r}, ...), item {index}: {exc}; "
                    f"the batch's other {others} item(s) are enqueued (or were there already)",
                    workflow_id=exc.workflow_id,
                    existing_name=exc.existing_name,
                    new_name=exc.new_name,
                ) from None
        return [stored.workflow_id for stored, _ in answers]
