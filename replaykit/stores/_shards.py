"""The rule that gives a new run its shard key, shared by the stores.

A run's rows stay on one shard of a sharded database, and a family's on the same
one (docs/storage.md, "Past one server"). So a new run's key is the one given at
its start; else, for an archived generation, its live run's; for a fork, its
source's; for a child, its parent's; else its own id. It never changes.
"""

from __future__ import annotations

from collections.abc import Callable

from replaykit.stores.values import WorkflowRow

__all__ = ["check_shard_key", "new_shard_key"]

# A key names a row's place; a longer one is surely a mistake (an id is far shorter).
MAX_SHARD_KEY_CHARS = 1_000


def new_shard_key(row: WorkflowRow, key_of: Callable[[str], str | None]) -> str:
    """`row`'s key, `key_of(id)` giving a stored run's key (None: no such run)."""
    if row.shard_key is not None:
        return row.shard_key
    for elder in (row.continued_as, row.forked_from, row.parent_id):
        if elder is not None:
            key = key_of(elder)
            if key is not None:
                return key
    return row.workflow_id


def check_shard_key(shard_key: object, workflow_id: str) -> None:
    """Refuse a key that is not a non-empty string of sane length, naming the run."""
    if shard_key is None:
        return
    if not isinstance(shard_key, str) or not shard_key or len(shard_key) > MAX_SHARD_KEY_CHARS:
        raise ValueError(
            f"workflow id {workflow_id!r}: shard_key must be a non-empty string of at most "
            f"{MAX_SHARD_KEY_CHARS} characters, got {shard_key!r}; leave it out to keep the "
            "run with its family (its parent's key, or its own id)"
        )
