"""What a heartbeat says besides "alive": the workflows an engine registered, the queues it drains.

An engine passes both at every beat (`Store.heartbeat(..., workflows=,
queues=)`), as they are at that moment: the names in the process's registry,
and the queues it claims from (with `Engine(queues=None)`, every `Queue`
declared so far; a producer, `queues=[]`, none). The stores keep them in one
column of the heartbeat's row (schema version 10: `heartbeats.registered`, a
JSON object `{"workflows": [...], "queues": [...], "more_workflows": n,
"more_queues": n}`), NULL for a beat that passed neither, as an engine of an
older replaykit does: readers then know nothing of its names.

A beat is rewritten every few seconds, so each list is bounded: the sorted
names are kept while they fit in `MAX_NAMES` names and `MAX_BYTES` bytes of
UTF-8, and `more_*` counts the rest, so a reader knows the list is partial
(and says so) instead of taking a missing name as not registered.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime
from typing import Any

import attrs

__all__ = [
    "MAX_BYTES",
    "MAX_NAMES",
    "Heartbeat",
    "Registered",
    "decode",
    "encode",
    "registered",
]

#: The most names one list of a heartbeat keeps.
MAX_NAMES = 2_000
#: The most bytes (UTF-8) of names one list of a heartbeat keeps.
MAX_BYTES = 64 * 1024


@attrs.frozen
class Registered:
    """The names a beat carried; a list is None when the engine did not say."""

    workflows: tuple[str, ...] | None = None
    queues: tuple[str, ...] | None = None
    #: How many names were left out of each list by the bounds (0: the list is whole).
    more_workflows: int = 0
    more_queues: int = 0


@attrs.frozen
class Heartbeat:
    """An engine's last heartbeat, as `read_heartbeats(since)` returns it."""

    executor_id: str
    app_version: str
    seen_at: datetime
    #: What the engine said it runs; None for an engine that said nothing (an older replaykit).
    registered: Registered | None = None


def _bounded(names: Collection[str] | None, what: str) -> tuple[tuple[str, ...] | None, int]:
    if names is None:
        return None, 0
    if isinstance(names, str):
        raise TypeError(f"heartbeat {what} must be a collection of names, not the string {names!r}")
    unique = set(names)
    for name in unique:
        if not isinstance(name, str):
            raise TypeError(f"heartbeat {what} must be names (str), got {name!r}")
    kept: list[str] = []
    size = 0
    for name in sorted(unique):
        size += len(name.encode("utf-8", "surrogatepass"))
        if len(kept) >= MAX_NAMES or size > MAX_BYTES:
            break
        kept.append(name)
    return tuple(kept), len(unique) - len(kept)


def registered(
    workflows: Collection[str] | None, queues: Collection[str] | None
) -> Registered | None:
    """The bounded names of one beat; None when neither list was given."""
    if workflows is None and queues is None:
        return None
    kept_workflows, more_workflows = _bounded(workflows, "workflows")
    kept_queues, more_queues = _bounded(queues, "queues")
    return Registered(kept_workflows, kept_queues, more_workflows, more_queues)


def encode(names: Registered | None) -> str | None:
    """The column's text for `names` (NULL for None)."""
    if names is None:
        return None
    return json.dumps(
        {
            "workflows": None if names.workflows is None else list(names.workflows),
            "queues": None if names.queues is None else list(names.queues),
            "more_workflows": names.more_workflows,
            "more_queues": names.more_queues,
        },
        separators=(",", ":"),
    )


def _names(data: dict[str, Any], key: str) -> tuple[str, ...] | None:
    value = data.get(key)
    if not isinstance(value, list):
        return None
    return tuple(name for name in value if isinstance(name, str))


def _count(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    return value if isinstance(value, int) and value > 0 else 0


def decode(stored: Any) -> Registered | None:
    """What the column holds (text, or the object PostgreSQL's json gives back); None if unknown.

    A value of another shape (written by hand, or damaged) reads as unknown:
    the names only explain why a run waits, they never decide what runs.
    """
    if stored is None:
        return None
    if isinstance(stored, str):
        try:
            stored = json.loads(stored)
        except ValueError:
            return None
    if not isinstance(stored, dict):
        return None
    return Registered(
        _names(stored, "workflows"),
        _names(stored, "queues"),
        _count(stored, "more_workflows"),
        _count(stored, "more_queues"),
    )
