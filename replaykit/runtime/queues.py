"""Queues: named limits on how many runs start, and how fast, across all engines.

A `Queue` is a value registered by name when it is created (like a workflow),
so a worker process that imports the application's module knows its queues.
Runs enqueued on it wait as ENQUEUED until an engine listening to the queue
claims them; the store enforces the limits atomically, so they hold however
many engines on however many machines claim at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from replaykit.commands import as_seconds
from replaykit.log import Status
from replaykit.stores.base import WorkflowRow

__all__ = [
    "FilledItem",
    "KeyCount",
    "PartitionCounts",
    "Queue",
    "QueueItem",
    "check_partition_key",
    "fill_item",
    "partition_counts",
    "queue_named",
    "registered_queues",
]

_queues: dict[str, Queue] = {}
_lock = threading.Lock()


def _checked_rate(
    value: tuple[int, timedelta | float] | None, option: str
) -> tuple[int, float] | None:
    if value is None:
        return None
    try:
        starts, period = value
    except (TypeError, ValueError):
        raise TypeError(
            f"{option} must be (starts, period), e.g. (100, timedelta(minutes=1)), got {value!r}"
        ) from None
    seconds = as_seconds(period, f"{option} period")
    if not isinstance(starts, int) or isinstance(starts, bool) or starts < 1 or not seconds:
        raise ValueError(f"{option} {value!r}: needs at least 1 start per positive period")
    return (starts, seconds)


def _rate(value: tuple[int, timedelta | float] | None) -> tuple[int, float] | None:
    return _checked_rate(value, "rate_limit")


def _partition_rate(value: tuple[int, timedelta | float] | None) -> tuple[int, float] | None:
    return _checked_rate(value, "partition_rate_limit")


def _weights(value: Mapping[str, int] | None) -> tuple[tuple[str, int], ...]:
    """`partition_weights` as sorted (key, weight) pairs, each checked; a bad one raises
    with what was wrong (the queue's name is added by `Queue`)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise TypeError(
            f"partition_weights must map partition keys to weights, e.g. {{'tenant-7': 3}}, "
            f"got {value!r}"
        )
    for key, weight in value.items():
        if not isinstance(key, str):
            raise TypeError(f"partition_weights: key {key!r} is not a string (a partition key)")
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 1:
            raise ValueError(
                f"partition_weights[{key!r}]={weight!r}: a weight is a whole number of runs a "
                "round, 1 or more (a key given none has 1)"
            )
    return tuple(sorted(value.items()))


def check_partition_key(key: object, what: str) -> str | None:
    """A run's `partition_key`: None, or a non-empty string; `what` names the call."""
    if key is None or (isinstance(key, str) and key):
        return key
    raise TypeError(
        f"{what}: partition_key={key!r}; a partition key is a non-empty string (a tenant's "
        "or a customer's id, say), or None for none"
    )


@attrs.frozen
class Queue:
    """A named queue with optional limits.

    - `concurrency`: runs of this queue PENDING at once, across all engines;
    - `worker_concurrency`: runs of this queue one engine holds at once;
    - `rate_limit=(n, period)`: at most n runs start per period, across all engines;
    - `partition_concurrency`: runs of one partition key PENDING at once, across all
      engines (`enqueue(..., partition_key=...)`);
    - `partition_rate_limit=(n, period)`: at most n runs of one key start per period;
    - `partitioned=True`: serve the keys in turn with no limit per key (either limit
      above implies it);
    - `partition_weights={"tenant-7": 3}`: a key's share of the turn: it takes up to 3
      runs a round where the others take 1 (implies `partitioned`).

    A partitioned queue serves its keys in turn (docs/queues.md, Partitions): a key
    with a backlog delays another key's next run by one claim at most. The queue's
    own limits hold beside the per-key ones. Creating a Queue registers it under
    its name (a later one replaces it).
    """

    name: str
    concurrency: int | None = None
    worker_concurrency: int | None = None
    rate_limit: tuple[int, float] | None = attrs.field(default=None, converter=_rate)
    partition_concurrency: int | None = attrs.field(default=None, kw_only=True)
    partition_rate_limit: tuple[int, float] | None = attrs.field(
        default=None, converter=_partition_rate, kw_only=True
    )
    partitioned: bool = attrs.field(default=False, kw_only=True)
    partition_weights: tuple[tuple[str, int], ...] = attrs.field(
        default=None, converter=_weights, kw_only=True
    )

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a Queue needs a non-empty name, got {self.name!r}")
        if not isinstance(self.partitioned, bool):
            raise TypeError(
                f"Queue({self.name!r}) partitioned={self.partitioned!r}: must be True or False"
            )
        if (
            self.partition_concurrency is not None
            or self.partition_rate_limit is not None
            or self.partition_weights
        ):
            object.__setattr__(self, "partitioned", True)
        for option in ("concurrency", "worker_concurrency", "partition_concurrency"):
            value = getattr(self, option)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ValueError(
                    f"Queue({self.name!r}) {option}={value!r}: must be a positive integer or None"
                )
        with _lock:
            _queues[self.name] = self


def queue_named(name: str) -> Queue:
    with _lock:
        queue = _queues.get(name)
    if queue is None:
        known = ", ".join(sorted(_queues)) or "none"
        raise LookupError(
            f"no queue named {name!r} is registered (registered: {known}); create it with "
            f"replaykit.Queue({name!r}, ...) in the module that defines your workflows"
        )
    return queue


def registered_queues() -> list[Queue]:
    with _lock:
        return list(_queues.values())


@attrs.frozen(init=False)
class QueueItem:
    """One run for `Engine.enqueue_many`: its arguments, and what `enqueue` would take."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    workflow_id: str | None
    priority: int | None
    dedup_id: str | None
    delay: timedelta | float | None
    # This run's `timeout` (counted from its claim) and `deadline` (absolute), as
    # `enqueue` takes them; None: the batch's.
    timeout: timedelta | float | None = None
    deadline: datetime | None = None
    partition_key: str | None = None  # None: the batch's
    attributes: Mapping[str, Any] | None = None  # None: the batch's

    def __init__(
        self,
        *args: Any,
        workflow_id: str | None = None,
        priority: int | None = None,
        dedup_id: str | None = None,
        delay: timedelta | float | None = None,
        timeout: timedelta | float | None = None,
        deadline: datetime | None = None,
        partition_key: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.__attrs_init__(
            args,
            dict(kwargs),
            workflow_id,
            priority,
            dedup_id,
            delay,
            timeout,
            deadline,
            check_partition_key(partition_key, "QueueItem"),
            attributes,
        )


@attrs.frozen
class FilledItem:
    """An item of `enqueue_many` with the batch's options filled in where it gives none."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    workflow_id: str | None
    dedup_id: str | None
    priority: int
    delay: timedelta | float | None
    timeout: timedelta | float | None
    deadline: datetime | None
    partition_key: str | None = None
    attributes: Mapping[str, Any] | None = None


def fill_item(
    item: Sequence[Any] | QueueItem,
    index: int,
    *,
    what: str,
    priority: int,
    delay: timedelta | float | None,
    timeout: timedelta | float | None,
    deadline: datetime | None,
    partition_key: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> FilledItem:
    """What item `index` of an `enqueue_many` asks for: a `QueueItem`'s own options, else
    the batch's; a tuple or list is the workflow's positional arguments. `what` names
    the call in the error for an item that is neither."""
    if isinstance(item, QueueItem):
        return FilledItem(
            item.args,
            dict(item.kwargs),
            item.workflow_id,
            item.dedup_id,
            priority if item.priority is None else item.priority,
            delay if item.delay is None else item.delay,
            timeout if item.timeout is None else item.timeout,
            deadline if item.deadline is None else item.deadline,
            partition_key if item.partition_key is None else item.partition_key,
            attributes if item.attributes is None else item.attributes,
        )
    if isinstance(item, (tuple, list)):
        return FilledItem(
            tuple(item),
            {},
            None,
            None,
            priority,
            delay,
            timeout,
            deadline,
            partition_key,
            attributes,
        )
    raise TypeError(
        f"{what}: item {index} is {item!r}; each item is a tuple of the workflow's "
        "positional arguments (a one-argument workflow takes (value,)), or "
        "QueueItem(*args, **kwargs, workflow_id=..., priority=..., dedup_id=..., delay=..., "
        "partition_key=..., attributes=...)"
    )


@attrs.frozen
class KeyCount:
    """One partition key of a queue, as `replaykit queues list` and the UI show it."""

    key: str | None  # None: the runs enqueued with no key
    waiting: int  # ENQUEUED
    running: int  # PENDING


@attrs.frozen
class PartitionCounts:
    """A queue's partition keys: how many have runs waiting, and the busiest ones."""

    keys_waiting: int
    busiest: tuple[KeyCount, ...]  # most waiting first, then most running, then by key


def partition_counts(rows: Iterable[WorkflowRow], *, top: int = 3) -> dict[str, PartitionCounts]:
    """Per queue that holds live runs with a partition key: its keys' counts, from `rows`
    (live runs, as a listing gives them). Queues whose runs carry no key are left out."""
    counts: dict[str, dict[str | None, list[int]]] = {}
    keyed: set[str] = set()
    for row in rows:
        if row.queue is None or row.status not in (Status.ENQUEUED, Status.PENDING):
            continue
        if row.partition_key is not None:
            keyed.add(row.queue)
        entry = counts.setdefault(row.queue, {}).setdefault(row.partition_key, [0, 0])
        entry[0 if row.status is Status.ENQUEUED else 1] += 1
    found: dict[str, PartitionCounts] = {}
    for queue in keyed:
        keys = [
            KeyCount(key, waiting, running) for key, (waiting, running) in counts[queue].items()
        ]
        keys.sort(key=lambda k: (-k.waiting, -k.running, k.key or ""))
        found[queue] = PartitionCounts(sum(k.waiting > 0 for k in keys), tuple(keys[:top]))
    return found
