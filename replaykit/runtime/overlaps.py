"""Keyed starts: concurrency keys on starts, and what a start does while a run of its key
is live (`overlap=`).

`start(wf, ..., concurrency_key="report-7", concurrency_limit=1)` puts the run on a
queue replaykit keeps for that limit, `replaykit.concurrency:<limit>`, partitioned by
key with `partition_concurrency=<limit>`: the store's claim then holds the limit per
key across every engine and process, and the runs of one key start in order, exactly
as a partitioned queue's do (stores/_partitions.py). The limit is in the queue's name,
so any engine that meets the name (in a note, in the store) knows the queue without the
code that started the run.

`overlap=` says what a start or an enqueue does while a run of its key (the same
queue, the same partition key) is live, ENQUEUED or PENDING:

- `allow`: start it anyway (the key's limit still holds);
- `skip`: start nothing and return the live run (the oldest);
- `queue_one`: keep at most one run of the key waiting: return the waiting one if
  there is one, else start this one to wait behind the live one;
- `cancel_other`: cancel the live runs (with a reason naming this start), and start
  this one, which waits until they have ended.

The policy is settled by a read before the insert. Two `skip` starts racing are
settled by the store (the run a `skip` starts holds a dedup id named after the key);
other races can leave one more run waiting than the policy says, never one more
running than the key's limit, which the claim holds.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol

import attrs

from replaykit._durations import earliest_deadline
from replaykit.errors import DuplicateDedupId
from replaykit.log import Status
from replaykit.runtime.queues import Queue, queue_named
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow

__all__ = [
    "CONCURRENCY_QUEUE_PREFIX",
    "START_OVERLAPS",
    "Cancel",
    "EnqueuePlan",
    "Enqueuing",
    "KeyedStart",
    "check_one_at_a_time",
    "check_overlap",
    "check_policy",
    "concurrency_queue",
    "enqueue_planned",
    "keyed_start",
    "known_concurrency_queue",
    "plan_enqueue",
    "settle_overlap",
    "skip_dedup_id",
]

CONCURRENCY_QUEUE_PREFIX = "replaykit.concurrency:"
#: `overlap=` of a start or an enqueue (the module's docstring says what each does).
START_OVERLAPS = ("allow", "skip", "queue_one", "cancel_other")
# Policies that keep one run of a key after another: meaningful only where the key
# runs one at a time.
_ONE_AT_A_TIME = frozenset({"queue_one", "cancel_other"})
_LIVE = (Status.ENQUEUED, Status.PENDING)


def check_policy(overlap: object, policies: Sequence[str], what: str) -> None:
    """Refuse an `overlap=` that is none of `policies` (a start's, or a schedule's:
    `schedules.OVERLAP_POLICIES`), naming the nearest one; `what` names the call."""
    if overlap not in policies:
        close = difflib.get_close_matches(str(overlap), policies, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"{what}: overlap={overlap!r} is not a policy{hint}; give one of "
            + ", ".join(repr(p) for p in policies)
        )


def check_overlap(overlap: object, key: str | None, what: str) -> str:
    """`overlap` checked: a known policy, and a key to apply it to unless `allow`."""
    check_policy(overlap, START_OVERLAPS, what)
    if overlap != "allow" and key is None:
        raise ValueError(
            f"{what}: overlap={overlap!r} applies to the live runs of a key, and this call "
            "gives none: pass concurrency_key='...' to a start, or partition_key='...' to an "
            "enqueue"
        )
    assert isinstance(overlap, str)
    return overlap


def concurrency_queue(limit: object, what: str) -> Queue:
    """The queue of keyed starts with `limit` runs of a key at once (registered here)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(
            f"{what}: concurrency_limit={limit!r}; it is how many runs of one key may run "
            "at once, a whole number of 1 or more"
        )
    return Queue(f"{CONCURRENCY_QUEUE_PREFIX}{limit}", partition_concurrency=limit)


def known_concurrency_queue(name: str) -> Queue | None:
    """The queue of keyed starts `name` names (registered now), or None for any other."""
    if not name.startswith(CONCURRENCY_QUEUE_PREFIX):
        return None
    digits = name[len(CONCURRENCY_QUEUE_PREFIX) :]
    if not digits.isdigit() or digits != str(int(digits)) or int(digits) < 1:
        return None
    try:
        return queue_named(name)
    except LookupError:
        return concurrency_queue(int(digits), name)


def skip_dedup_id(key: str) -> str:
    """The dedup id a `skip` start's run holds: a second `skip` start of the key racing
    the first is refused by the store, and answered with the first."""
    return f"replaykit.skip:{key}"


class KeyedStart:
    """A start with a concurrency key, resolved: the queue its run goes on, its key."""

    __slots__ = ("key", "overlap", "queue")

    def __init__(self, queue: Queue, key: str, overlap: str) -> None:
        self.queue = queue
        self.key = key
        self.overlap = overlap

    def deadline(
        self, seconds: float | None, deadline: datetime | None, now: Callable[[], datetime]
    ) -> datetime | None:
        """The keyed run's deadline: its `timeout` (`seconds`, checked) counts from now, as
        any start's does, waiting for a slot included (its queue would count it from the
        claim); the earlier of the two wins. The starting face's clock tells `now`."""
        if seconds is None:
            return deadline
        return earliest_deadline(deadline, now() + timedelta(seconds=seconds))


def keyed_start(
    concurrency_key: object, concurrency_limit: object, overlap: object, what: str
) -> KeyedStart | None:
    """A start's key options checked: None without a key (and then only the defaults may
    be given), else where the run goes."""
    if concurrency_key is None:
        if concurrency_limit != 1:
            raise ValueError(
                f"{what}: concurrency_limit={concurrency_limit!r} needs a concurrency_key "
                "(the runs that share the limit)"
            )
        check_overlap(overlap, None, what)
        return None
    if not isinstance(concurrency_key, str) or not concurrency_key:
        raise TypeError(
            f"{what}: concurrency_key={concurrency_key!r}; a concurrency key is a non-empty "
            "string (a customer's id, a report's name), or None for none"
        )
    policy = check_overlap(overlap, concurrency_key, what)
    return KeyedStart(concurrency_queue(concurrency_limit, what), concurrency_key, policy)


def check_one_at_a_time(queue: Queue | None, overlap: str, what: str) -> None:
    """Refuse `queue_one` or `cancel_other` on a queue known to run more than one run of
    a key at once: the run kept waiting would start beside the live one."""
    if overlap not in _ONE_AT_A_TIME or queue is None or queue.partition_concurrency == 1:
        return
    raise ValueError(
        f"{what}: overlap={overlap!r} keeps a key's next run waiting until the live one "
        f"ends, which needs the key's runs one at a time; queue {queue.name!r} has "
        f"partition_concurrency={queue.partition_concurrency!r}: declare it with "
        "partition_concurrency=1, or use overlap='skip' or 'allow'"
    )


def settle_overlap(
    store: Store,
    queue: str,
    key: str,
    overlap: str,
    *,
    cancel: Cancel,
    what: str,
) -> str | None:
    """Before a keyed start is stored: the id of the live run to answer with instead
    (`skip`, `queue_one`), or None to go on and store it (after cancelling the live runs,
    for `cancel_other`). A concurrency key held by live runs of another limit is
    refused: the two limits could not both hold."""
    live = _live_runs(store, key, queue)
    if queue.startswith(CONCURRENCY_QUEUE_PREFIX):
        other = sorted({row.queue for row in live if row.queue and _is_keyed(row)} - {queue})
        if other:
            limits = ", ".join(name[len(CONCURRENCY_QUEUE_PREFIX) :] for name in other)
            raise ValueError(
                f"{what}: concurrency key {key!r} has live runs started with "
                f"concurrency_limit={limits}, and this start gives "
                f"{queue[len(CONCURRENCY_QUEUE_PREFIX) :]}: the starts of one key must agree "
                "on its limit while any of its runs is live"
            )
    mine = [row for row in live if row.queue == queue]
    if overlap == "skip" and mine:
        return mine[0].workflow_id
    if overlap == "queue_one":
        waiting = [row for row in mine if row.status is Status.ENQUEUED]
        if waiting:
            return waiting[0].workflow_id
    if overlap == "cancel_other":
        for row in mine:
            cancel(
                row.workflow_id,
                reason=f"{what}: replaced by a newer start (overlap='cancel_other')",
            )
    return None


class Cancel(Protocol):
    """A face's `cancel`, as an overlap policy asks it: the run, and why."""

    def __call__(self, workflow_id: str, *, reason: str) -> object: ...


class Enqueuing(Protocol):
    """What `enqueue_planned` asks of the face that enqueues (`Engine`, `Client`)."""

    @property
    def store(self) -> Store: ...

    def cancel(self, workflow_id: str, *, reason: str) -> object: ...


@attrs.frozen
class EnqueuePlan:
    """What an enqueue with `overlap=` does: answer with a live run (`existing`), or store
    its run holding `dedup_id`; `held_is_answer`: a dedup refusal answers with the holder."""

    existing: str | None
    dedup_id: str | None
    held_is_answer: bool = False


def plan_enqueue(
    store: Store,
    queue: Queue | str,
    key: str | None,
    overlap: object,
    dedup_id: str | None,
    *,
    cancel: Cancel,
    what: str,
) -> EnqueuePlan:
    """An enqueue's `overlap` settled against the live runs of its key (`settle_overlap`),
    for `Engine.enqueue` and `Client.enqueue` alike; `queue` is checked for the policy
    where this process knows it."""
    policy = check_overlap(overlap, key, what)
    name = queue.name if isinstance(queue, Queue) else queue
    keyed = name.startswith(CONCURRENCY_QUEUE_PREFIX)
    if key is None or (policy == "allow" and not keyed):
        return EnqueuePlan(None, dedup_id)
    check_one_at_a_time(queue if isinstance(queue, Queue) else _declared(name), policy, what)
    if policy == "skip":
        if dedup_id is not None:
            raise ValueError(
                f"{what}: overlap='skip' deduplicates the runs of key {key!r} itself; it takes "
                f"no dedup_id={dedup_id!r} (give one or the other)"
            )
        dedup_id = skip_dedup_id(key)
    existing = settle_overlap(store, name, key, policy, cancel=cancel, what=what)
    return EnqueuePlan(existing, dedup_id, held_is_answer=policy == "skip")


def enqueue_planned(
    face: Enqueuing,
    queue: Queue | str,
    key: str | None,
    overlap: object,
    dedup_id: str | None,
    if_exists: str,
    what: str,
    create: Callable[[str | None], str],
) -> str:
    """The run an enqueue answers with, for `Engine.enqueue` and `Client.enqueue` alike
    once each checked its arguments: `overlap` settled (`plan_enqueue`), then
    `create(dedup_id)` stores the run and gives its id. A dedup id a live run holds
    answers with that run where `if_exists="return"` (or `overlap="skip"`) says so,
    else its `DuplicateDedupId` is raised."""
    plan = plan_enqueue(face.store, queue, key, overlap, dedup_id, cancel=face.cancel, what=what)
    if plan.existing is not None:
        return plan.existing
    try:
        return create(plan.dedup_id)
    except DuplicateDedupId as exc:
        if if_exists == "return" or plan.held_is_answer:
            return exc.existing_id
        raise


def _declared(name: str) -> Queue | None:
    """The queue of that name as this process declares it; None where it does not (a
    producer may enqueue on a queue only its workers declare)."""
    try:
        return queue_named(name)
    except LookupError:
        return None


def _is_keyed(row: WorkflowRow) -> bool:
    return row.queue is not None and row.queue.startswith(CONCURRENCY_QUEUE_PREFIX)


def _live_runs(store: Store, key: str, queue: str) -> list[WorkflowRow]:
    """The key's live runs, oldest first: of every keyed queue for a concurrency key (the
    limits must agree), of `queue` alone for an enqueue's partition key."""
    keyed = queue.startswith(CONCURRENCY_QUEUE_PREFIX)
    rows = store.list_workflows(
        WorkflowFilter(
            partition_key=key,
            queue=None if keyed else queue,
            status=_LIVE,
            payloads=False,
        )
    )
    rows = [row for row in rows if _is_keyed(row)] if keyed else rows
    return sorted(rows, key=lambda row: (row.created_at is None, row.created_at, row.workflow_id))
