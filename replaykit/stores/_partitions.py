"""Which waiting runs a claim of a partitioned queue takes: keys in turn, limits per key.

A queue with partitions (`Queue(partition_concurrency=..., partition_rate_limit=...)`)
holds runs enqueued with a `partition_key` (a tenant, a customer); runs enqueued
without one share the key `''`. The rule every store follows, so that they agree
(the conformance suite checks it; PostgreSQL says it in one statement,
`claim_partitioned` in postgres/statements.sql):

1. Each key with ready runs has room for `min(room, partition_concurrency -
   its PENDING runs, partition_rate_limit's starts - its starts in the period)`
   runs, where `room` is what the queue's own limits leave (`_rules.claim_room`).
2. Within a key, its ready runs are ranked by priority, then created_at, then
   id: rank 1 is the run the key would start next.
3. Across keys, the claim takes runs by round first (a key's round is its rank
   divided by its weight, rounded up: `Queue(partition_weights=...)`, 1 where none
   is given, so a key of weight 3 has three runs in each round), then the key served least
   recently first (its latest `started_at`; a key never served before goes
   first), then priority, created_at and id, until `room` runs are taken.

So every key gets its next run (its next w, for weight w) before any key gets
more, and the key
whose turn is oldest goes first: a key with 10,000 waiting runs delays a key
with one by at most one claim, and no key waits behind another's backlog.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

import attrs

from replaykit.log import Status
from replaykit.stores.base import ClaimLimits, WorkflowRow

__all__ = ["KeyState", "Waiting", "fair_pick", "key_room", "pick_rows", "stored_key"]

_NEVER = datetime.min  # naive: compared only in the sort key, after the "never" flag


def stored_key(partition_key: str | None) -> str:
    """The key a run is served under: its partition key, or `''` for none."""
    return partition_key or ""


@attrs.frozen
class Waiting:
    """A ready run of a partitioned queue, as the pick orders it."""

    workflow_id: str
    partition_key: str
    priority: int
    created_at: datetime


@attrs.frozen
class KeyState:
    """What a key's stored runs say: PENDING now, started in the rate period, last served."""

    running: int = 0
    started: int = 0
    served: datetime | None = None


def key_room(limits: ClaimLimits, state: KeyState, room: int) -> int:
    """How many runs of one key a claim may take, within the queue's `room`."""
    free = room
    if limits.partition_concurrency is not None:
        free = min(free, limits.partition_concurrency - state.running)
    if limits.partition_rate_limit is not None:
        free = min(free, limits.partition_rate_limit[0] - state.started)
    return max(free, 0)


def fair_pick(
    waiting: Iterable[Waiting],
    states: Mapping[str, KeyState],
    limits: ClaimLimits,
    room: int,
) -> list[str]:
    """The ids a claim takes, in the order it takes them (the module's rule)."""
    weights = dict(limits.partition_weights)
    by_key: dict[str, list[Waiting]] = {}
    for item in waiting:
        by_key.setdefault(item.partition_key, []).append(item)
    ranked: list[tuple[tuple[object, ...], str]] = []
    for key, items in by_key.items():
        state = states.get(key, KeyState())
        items.sort(key=lambda w: (w.priority, w.created_at, w.workflow_id))
        served = state.served
        weight = weights.get(key, 1)
        for rank, item in enumerate(items[: key_room(limits, state, room)], start=1):
            order = (
                -(-rank // weight),
                served is not None,
                served.replace(tzinfo=None) if served is not None else _NEVER,
                item.priority,
                item.created_at,
                item.workflow_id,
            )
            ranked.append((order, item.workflow_id))
    ranked.sort()
    return [workflow_id for _, workflow_id in ranked[:room]]


def pick_rows(
    rows: Iterable[WorkflowRow],
    queue: str,
    app_version: str,
    limits: ClaimLimits,
    room: int,
    now: datetime,
) -> list[WorkflowRow]:
    """A store holding its rows in memory: the ready rows of `queue` the rule takes."""
    waiting: list[Waiting] = []
    found: dict[str, WorkflowRow] = {}
    since = (
        None
        if limits.partition_rate_limit is None
        else now - timedelta(seconds=limits.partition_rate_limit[1])
    )
    running: dict[str, int] = {}
    started: dict[str, int] = {}
    served: dict[str, datetime] = {}
    for row in rows:
        if row.queue != queue:
            continue
        key = stored_key(row.partition_key)
        at = row.started_at
        if row.status is Status.PENDING:
            running[key] = running.get(key, 0) + 1
        if at is not None:
            if since is not None and at > since:
                started[key] = started.get(key, 0) + 1
            if key not in served or at > served[key]:
                served[key] = at
        if (
            row.status is Status.ENQUEUED
            and row.app_version == app_version
            and (row.wake_at is None or row.wake_at <= now)
        ):
            waiting.append(Waiting(row.workflow_id, key, row.priority, row.created_at or now))
            found[row.workflow_id] = row
    states = {
        key: KeyState(running.get(key, 0), started.get(key, 0), served.get(key))
        for key in {w.partition_key for w in waiting}
    }
    return [found[workflow_id] for workflow_id in fair_pick(waiting, states, limits, room)]


def partition_limits(
    limits: ClaimLimits, now: datetime
) -> tuple[int | None, int | None, datetime | None]:
    """(concurrency per key, starts per key, since when starts count) as a claim binds
    them; None where the queue sets no such limit."""
    if limits.partition_rate_limit is None:
        return limits.partition_concurrency, None, None
    starts, period = limits.partition_rate_limit
    return limits.partition_concurrency, starts, now - timedelta(seconds=period)
