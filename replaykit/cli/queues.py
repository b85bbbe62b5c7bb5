"""`replaykit queues list`: each queue's depth, delayed and running runs, its partition
keys (how many wait, the busiest) and its limits."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import click

from replaykit.cli.echo import echo_json
from replaykit.cli.errors import Group
from replaykit.cli.fit import Fit
from replaykit.cli.options import UNITS, app_dir_option, json_option, url_option
from replaykit.cli.printer import Printer
from replaykit.cli.specs import import_app
from replaykit.cli.store import store_at
from replaykit.log import Status
from replaykit.runtime.queues import KeyCount, PartitionCounts, Queue
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow

__all__ = ["queues_group", "queues_list_command"]


# Counting reads the live runs themselves (the store keeps no counters); past
# this many the counts are lower bounds, and say so.
_MAX_QUEUE_SCAN = 20_000


@attrs.define
class _QueueCounts:
    depth: int = 0  # ENQUEUED, delayed ones included
    delayed: int = 0  # ENQUEUED with a start delay still running
    running: int = 0  # PENDING


def _live_runs(store: Store) -> tuple[list[WorkflowRow], bool]:
    """The store's ENQUEUED and PENDING runs (at most `_MAX_QUEUE_SCAN`); and whether partial."""
    live = store.list_workflows(
        WorkflowFilter(
            status=(Status.ENQUEUED, Status.PENDING), limit=_MAX_QUEUE_SCAN + 1, payloads=False
        )
    )
    return live[:_MAX_QUEUE_SCAN], len(live) > _MAX_QUEUE_SCAN


def _queue_counts(live: list[WorkflowRow], now: datetime) -> dict[str, _QueueCounts]:
    """Counts per queue from live runs."""
    counts: dict[str, _QueueCounts] = {}
    for row in live:
        if row.queue is None:
            continue  # started directly, not from a queue
        entry = counts.setdefault(row.queue, _QueueCounts())
        if row.status is Status.ENQUEUED:
            entry.depth += 1
            wake = row.wake_at
            if wake is not None and wake.tzinfo is None:
                wake = wake.replace(tzinfo=UTC)
            if wake is not None and wake > now:
                entry.delayed += 1
        else:
            entry.running += 1
    return counts


def _key_text(count: KeyCount) -> str:
    key = "(no key)" if count.key is None else count.key
    return f"{key} {count.waiting}/{count.running}"


def _keys_json(counts: PartitionCounts | None) -> dict[str, Any] | None:
    if counts is None:
        return None
    return {
        "keys_waiting": counts.keys_waiting,
        "busiest": [
            {"key": k.key, "waiting": k.waiting, "running": k.running} for k in counts.busiest
        ],
    }


def _per_key(queue: Queue) -> str:
    """A queue's limits per partition key: '2 running, 10/1m', 'in turn' with none, or '-'."""
    if not queue.partitioned:
        return "-"
    parts = []
    if queue.partition_concurrency is not None:
        parts.append(f"{queue.partition_concurrency} running")
    if queue.partition_rate_limit is not None:
        starts, period = queue.partition_rate_limit
        parts.append(f"{starts}/{_period(period)}")
    return ", ".join(parts) or "in turn"


def _period(seconds: float) -> str:
    """A rate limit's period in the largest unit that divides it: 60 -> '1m', 90 -> '90s'."""
    for unit, size in UNITS.items():
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _import_app(module: str, app_dir: Path) -> None:
    """Import the application module that registers queues (and workflows) by name."""
    import_app(module, app_dir)


_app_option = click.option(
    "--app",
    "app_module",
    metavar="MODULE",
    help="Your module that defines the queues (imported, to read their limits).",
)


@click.group("queues", cls=Group)
def queues_group() -> None:
    """What waits on each queue and what runs from it."""


@queues_group.command("list")
@url_option
@_app_option
@app_dir_option("--app")
@json_option
def queues_list_command(url: str, app_module: str | None, app_dir: Path, as_json: bool) -> None:
    """Each queue's depth (ENQUEUED runs), delayed runs, running (PENDING) runs and limits.

    A queue whose runs carry partition keys also shows how many keys have runs
    waiting (KEYS) and its busiest keys, as KEY WAITING/RUNNING.

    The counts come from the store. The limits live in your code: with --app
    MODULE, the module is imported (as `worker` does) and its queues' limits are
    shown, with the queues that have nothing waiting or running too. No
    workflow runs.
    """
    from replaykit.runtime.queues import partition_counts, registered_queues

    registered: dict[str, Queue] = {}
    if app_module is not None:
        _import_app(app_module, app_dir)
        registered = {queue.name: queue for queue in registered_queues()}
    with store_at(url) as store:
        live, partial = _live_runs(store)
    counts = _queue_counts(live, datetime.now(UTC))
    keys = partition_counts(live)
    names = sorted(set(counts) | set(registered))

    def limits(name: str) -> dict[str, Any] | None:
        queue = registered.get(name)
        if queue is None:
            return None
        rate = queue.rate_limit
        key_rate = queue.partition_rate_limit
        return {
            "concurrency": queue.concurrency,
            "worker_concurrency": queue.worker_concurrency,
            "rate_limit": None if rate is None else {"count": rate[0], "per_seconds": rate[1]},
            "partitioned": queue.partitioned,
            "partition_concurrency": queue.partition_concurrency,
            "partition_rate_limit": None
            if key_rate is None
            else {"count": key_rate[0], "per_seconds": key_rate[1]},
        }

    if as_json:
        echo_json(
            {
                "queues": [
                    {
                        "queue": name,
                        "depth": counts.get(name, _QueueCounts()).depth,
                        "delayed": counts.get(name, _QueueCounts()).delayed,
                        "running": counts.get(name, _QueueCounts()).running,
                        "registered": name in registered if app_module else None,
                        "limits": limits(name),
                        "partitions": _keys_json(keys.get(name)),
                    }
                    for name in names
                ],
                "partial": partial,
            }
        )
        return
    if not names:
        click.echo(
            "no queue has runs waiting or running"
            + ("" if app_module else " (--app MODULE also lists the queues your code defines)")
        )
        return
    at_least = "+" if partial else ""
    headers = ["QUEUE", "DEPTH", "DELAYED", "RUNNING"]
    if keys:
        headers += ["KEYS", "BUSIEST KEYS (WAITING/RUNNING)"]
    if app_module:
        headers += ["CONCURRENCY", "PER WORKER", "RATE LIMIT", "PER KEY"]
    rows: list[list[str]] = []
    for name in names:
        entry = counts.get(name, _QueueCounts())
        cells = [name, f"{entry.depth}{at_least}", f"{entry.delayed}{at_least}"]
        cells.append(f"{entry.running}{at_least}")
        if keys:
            partitions = keys.get(name)
            if partitions is None:
                cells += ["-", "-"]
            else:
                cells.append(f"{partitions.keys_waiting}{at_least}")
                cells.append(", ".join(_key_text(k) for k in partitions.busiest))
        if app_module:
            queue = registered.get(name)
            if queue is None:
                cells += ["(not in --app)", "", "", ""]
            else:
                rate = queue.rate_limit
                cells += [
                    str(queue.concurrency) if queue.concurrency else "-",
                    str(queue.worker_concurrency) if queue.worker_concurrency else "-",
                    f"{rate[0]}/{_period(rate[1])}" if rate else "-",
                    _per_key(queue),
                ]
        rows.append(cells)
    Printer().table(headers, rows, fit={0: Fit(12)})
    if partial:
        click.echo(
            f"(counted the first {_MAX_QUEUE_SCAN} live runs: the counts are lower bounds)",
            err=True,
        )
    if not app_module:
        click.echo("(limits live in your code: --app MODULE shows them)", err=True)
