"""`check_store`'s checks of shard keys: the key each run's rows carry
(docs/storage.md, "Past one server"). A run's key is the one given at its start,
else its parent's (a fork's: its source's; an archived generation's: its live run's),
else its own id; it never changes, and a family shares one."""

from __future__ import annotations

import functools
from datetime import timedelta

from replaykit.log import Status
from replaykit.stores.base import Store, WorkflowFilter
from replaykit.testing.conformance._support import (
    _T0,
    _equal,
    _raises,
    _run,
    _step,
)

__all__ = [
    "check_shard_key_refusals",
    "check_shard_keys_given_and_inherited",
    "check_shard_keys_never_change",
]


def _key(store: Store, workflow_id: str) -> str | None:
    row = store.get_workflow(workflow_id)
    return None if row is None else row.shard_key


def check_shard_keys_given_and_inherited(store: Store) -> None:
    # Each start in turn, what its shard key must be, and why.
    for row, key, why in (
        (_run("sk-root"), "sk-root", "a root run's shard key is its own id"),
        (_run("sk-child", parent_id="sk-root"), "sk-root", "a child takes its parent's shard key"),
        (_run("sk-grandchild", parent_id="sk-child"), "sk-root", "a grandchild takes its family's"),
        (_run("sk-given", shard_key="tenant-9"), "tenant-9", "a run started with a key keeps it"),
        (_run("sk-under", parent_id="sk-given"), "tenant-9", "a child of a run with a given key"),
        (_run("sk-orphan", parent_id="sk-nobody"), "sk-orphan", "a run whose parent is not stored"),
    ):
        created_row, _ = store.create_workflow(row)
        _equal(why, key, created_row.shard_key)
        _equal(f"{why}, as get_workflow returns it", key, _key(store, row.workflow_id))
    again, created = store.create_workflow(_run("sk-given", shard_key="other"))
    _equal("a start again under a taken id creates nothing", False, created)
    _equal("the run found in the way keeps its key", "tenant-9", again.shard_key)
    answers = store.create_workflows(
        [
            _run("sk-b1"),
            _run("sk-b2", parent_id="sk-given"),
            _run("sk-b3", shard_key="tenant-3"),
            _run("sk-root", shard_key="elsewhere"),
        ]
    )
    _equal(
        "create_workflows gives each new run its key (and answers the one in the way)",
        [
            ("sk-b1", "sk-b1", True),
            ("sk-b2", "tenant-9", True),
            ("sk-b3", "tenant-3", True),
            ("sk-root", "sk-root", False),
        ],
        [(row.workflow_id, row.shard_key, created) for row, created in answers],
    )
    for workflow_id, key in (("sk-b1", "sk-b1"), ("sk-b2", "tenant-9"), ("sk-b3", "tenant-3")):
        _equal(f"get_workflow({workflow_id!r}) returns its key", key, _key(store, workflow_id))
    listed = {
        row.workflow_id: row.shard_key
        for row in store.list_workflows(WorkflowFilter(name="wf"))
        if row.workflow_id in ("sk-child", "sk-b3")
    }
    _equal("list_workflows returns the keys", {"sk-child": "sk-root", "sk-b3": "tenant-3"}, listed)


def check_shard_keys_never_change(store: Store) -> None:
    store.create_workflow(_run("skc", shard_key="family-1", executor_id="e"))
    store.record("skc", _step(0, "one"))
    store.send_message("skc", "inbox", "hello")
    store.continue_workflow(
        "skc", {"args": [2], "kwargs": {}}, generation=0, executor_id="e", now=_T0
    )
    _equal("a run that continued as new keeps its key", "family-1", _key(store, "skc"))
    _equal("its archived generation has the run's key", "family-1", _key(store, "skc#0"))
    message = store.peek_message("skc", "inbox")
    _equal("its inbox is still found", "hello", None if message is None else message.payload)
    store.record("skc", _step(0, "two"))
    fork, _ = store.create_workflow(_run("skc-fork"), records=[_step(0, "two")], fork_of="skc")
    _equal("a fork takes its source's key", "family-1", fork.shard_key)
    _equal("the fork's log is found", 1, len(store.load_log("skc-fork")))
    store.finish_workflow("skc", Status.SUCCESS, None)
    store.rewind_workflow(
        "skc", 0, generation=1, executor_id="e", app_version="", now=_T0 + timedelta(hours=1)
    )
    _equal("a rewound run keeps its key", "family-1", _key(store, "skc"))
    _equal("its archived attempt has the run's key", "family-1", _key(store, "skc#1"))
    _equal("the rewound run's log is found", 0, len(store.load_log("skc")))
    store.delete_workflow("skc")
    _equal("a deleted run is gone", None, store.get_workflow("skc"))
    _equal("its archived generations are gone", None, store.get_workflow("skc#0"))
    _, created = store.create_workflow(_run("skc", shard_key="family-2"))
    _equal("an id deleted may be started again", True, created)
    _equal("under the key it is given now", "family-2", _key(store, "skc"))
    store.send_message("skc", "inbox", "again")
    message = store.peek_message("skc", "inbox")
    _equal(
        "the new run's inbox holds only what was sent to it",
        "again",
        None if message is None else message.payload,
    )


def check_shard_key_refusals(store: Store) -> None:
    bad_keys: tuple[object, ...] = ("", 7, "k" * 1001)
    for bad in bad_keys:
        _raises(
            f"create_workflow refuses shard_key={bad!r:.20}",
            ValueError,
            functools.partial(store.create_workflow, _run("sk-bad", shard_key=bad)),
        )
    _equal("a refused start writes nothing", None, store.get_workflow("sk-bad"))
