"""`check_store`'s checks of a run's life outside its log: created (`create_workflow`,
`create_workflows`, a dedup id), its status set and its recoveries counted, deleted,
and the store closed."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import attrs

from replaykit.errors import DuplicateDedupId, WorkflowNotFound
from replaykit.log import ErrorInfo, Failure, Status, Value
from replaykit.stores.base import ClaimLimits, EventWrite, Store, WorkflowFilter, WorkflowRow
from replaykit.testing.conformance._support import (
    _T0,
    _aware_utc,
    _claimed_new,
    _equal,
    _expect,
    _ids,
    _log_of,
    _Notes,
    _present,
    _queued,
    _raises,
    _run,
    _step,
    _wait_for,
)

__all__ = [
    "check_bump_recovery",
    "check_close_is_idempotent",
    "check_create_is_idempotent",
    "check_create_many_dedup",
    "check_create_many_new_rows",
    "check_create_many_notifies_once_per_queue",
    "check_create_many_round_trips_payloads",
    "check_create_many_then_claim",
    "check_create_many_with_existing",
    "check_create_returns_stored_row",
    "check_created_at_kept_when_given",
    "check_dedup_id",
    "check_delete",
    "check_set_status",
    "check_started_at_on_create",
]


def check_create_returns_stored_row(store: Store) -> None:
    row = _run(
        "c-1",
        inputs={"args": [1, "two"], "kwargs": {"x": [3.5, None]}},
        executor_id="exec-a",
        app_version="v1",
        parent_id="parent",
        queue="q",
        priority=7,
        dedup_id="d",
        error="",
    )
    stored, created = store.create_workflow(row)
    _equal("create_workflow(new row) created flag", True, created)
    _aware_utc("created_at of a new run", stored.created_at)
    _aware_utc("updated_at of a new run", stored.updated_at)
    _equal("started_at of a new PENDING run", stored.created_at, stored.started_at)
    _equal(
        "create_workflow(new row) returns the row with timestamps filled in",
        row,
        _strip_times(stored),
    )
    _equal("get_workflow after create", stored, store.get_workflow("c-1"))
    _equal("get_workflow of an unknown id", None, store.get_workflow("nope"))


def _strip_times(row: WorkflowRow | None) -> WorkflowRow | None:
    if row is None:
        return None
    # Shard keys have checks of their own (_shards.py).
    return attrs.evolve(row, created_at=None, updated_at=None, started_at=None, shard_key=None)


def check_create_is_idempotent(store: Store) -> None:
    first, _ = store.create_workflow(_run("c-2", inputs={"args": [1]}, executor_id="a"))
    store.record("c-2", _step(0, "kept"))
    again, created = store.create_workflow(
        _run("c-2", name="other", inputs={"args": [2]}, executor_id="b", status=Status.ENQUEUED),
        records=[_step(0, "replaced"), _step(1, "added")],
    )
    _equal("create_workflow(existing id) created flag", False, created)
    _equal("create_workflow(existing id) returns the existing run unmodified", first, again)
    _equal("the existing run after a second create", first, store.get_workflow("c-2"))
    _equal("the existing log after a second create", [_step(0, "kept")], _log_of(store, "c-2"))


def check_created_at_kept_when_given(store: Store) -> None:
    given = datetime(2020, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)
    stored, _ = store.create_workflow(_run("c-3", created_at=given, updated_at=given))
    _equal("created_at given to create_workflow", given, stored.created_at)
    fetched = store.get_workflow("c-3")
    _equal("created_at read back", given, fetched.created_at if fetched else None)
    _equal("updated_at read back", given, fetched.updated_at if fetched else None)


def check_started_at_on_create(store: Store) -> None:
    pending, _ = store.create_workflow(_run("c-4", created_at=_T0))
    _equal("started_at of a PENDING run created without one", _T0, pending.started_at)
    queued, _ = store.create_workflow(_run("c-5", status=Status.ENQUEUED, queue="q"))
    _equal("started_at of an ENQUEUED run", None, queued.started_at)
    given = _T0 - timedelta(days=1)
    kept, _ = store.create_workflow(_run("c-6", created_at=_T0, started_at=given))
    _equal("started_at given to create_workflow", given, kept.started_at)
    for wid, expected in (("c-4", _T0), ("c-5", None), ("c-6", given)):
        row = store.get_workflow(wid)
        _equal(f"started_at of {wid} read back", expected, row.started_at if row else "missing")


def check_dedup_id(store: Store) -> None:
    first, _ = store.create_workflow(
        _run("dd-1", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
    )
    error = _raises(
        "create_workflow reusing a live dedup_id",
        DuplicateDedupId,
        lambda: store.create_workflow(
            _run("dd-2", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
        ),
    )
    _equal("DuplicateDedupId.existing_id", "dd-1", getattr(error, "existing_id", None))
    _equal("the refused run", None, store.get_workflow("dd-2"))
    _equal(
        "create_workflow of the holder's own id",
        (first, False),
        store.create_workflow(_run("dd-1", status=Status.ENQUEUED, queue="q", dedup_id="user-7")),
    )
    for wid, queue, dedup in (
        ("dd-3", "other", "user-7"),
        ("dd-4", "q", None),
        ("dd-5", None, "user-7"),
    ):
        _, created = store.create_workflow(
            _run(wid, status=Status.ENQUEUED, queue=queue, dedup_id=dedup)
        )
        _equal(f"create_workflow with queue={queue!r} dedup_id={dedup!r}", True, created)
    store.set_status("dd-1", Status.PENDING)
    _raises(
        "create_workflow reusing the dedup_id of a PENDING run",
        DuplicateDedupId,
        lambda: store.create_workflow(
            _run("dd-6", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
        ),
    )
    store.finish_workflow("dd-1", Status.SUCCESS, Value(None))
    _, created = store.create_workflow(
        _run("dd-7", status=Status.ENQUEUED, queue="q", dedup_id="user-7")
    )
    _equal("create_workflow reusing the dedup_id of a finished run", True, created)


def _answered(answers: list[tuple[WorkflowRow, bool]]) -> list[tuple[str, bool]]:
    return [(row.workflow_id, created) for row, created in answers]


def check_create_many_new_rows(store: Store) -> None:
    _equal("create_workflows([])", [], store.create_workflows([]))
    rows = [
        _run("m-3", inputs={"args": [1, "two"], "kwargs": {}}, executor_id="a", created_at=_T0),
        _queued("m-1", priority=2, parent_id="m-3", inputs={"args": [[3.5, None]]}),
        _queued("m-2", dedup_id="d-2", created_at=_T0, wake_at=_T0 + timedelta(hours=1)),
        _run("m-0", status=Status.SUCCESS, result=Value({"done": True}), error="x"),
    ]
    answers = store.create_workflows(rows)
    _equal(
        "create_workflows(new rows): ids and created flags, in input order",
        [("m-3", True), ("m-1", True), ("m-2", True), ("m-0", True)],
        _answered(answers),
    )
    for given, (stored, _) in zip(rows, answers, strict=True):
        wid = given.workflow_id
        _aware_utc(f"created_at of {wid}", stored.created_at)
        _aware_utc(f"updated_at of {wid}", stored.updated_at)
        _equal(
            f"create_workflows returns {wid} with timestamps filled in",
            _strip_times(given),
            _strip_times(stored),
        )
        _equal(f"get_workflow({wid!r}) after create_workflows", stored, store.get_workflow(wid))
        _equal(f"the log of {wid}", [], _log_of(store, wid))
    _equal("created_at given to create_workflows", _T0, answers[0][0].created_at)
    _equal("started_at of a PENDING run created in a batch", _T0, answers[0][0].started_at)
    _equal("started_at of an ENQUEUED run created in a batch", None, answers[1][0].started_at)


def check_create_many_round_trips_payloads(store: Store) -> None:
    inputs = {
        "args": ["nul \x00 inside", 'tab\tquote"\\ \u2028 😀 工作流', 2**70, 1e300, 0.1, [[]]],
        "kwargs": {"z": 1, "a": {"m": None, "b": True}},
    }
    failure = Failure(
        ErrorInfo(
            module="myapp.errors",
            qualname="Outer.Declined",
            message="nul \x00 and ✓",
            args=["x", 402, {"retry": False}],
            traceback="Traceback (most recent call last):\n  x\n",
        )
    )
    rows = [
        _run("ünï-çødé 🚀 m-p1", name="名前 ✓", inputs=inputs, error="ошибка ✓"),
        _run("m-p2", status=Status.ERROR, result=failure, queue="тема/🙂", dedup_id="ключ 🔑"),
        _run("m-p3", status=Status.SUCCESS, result=Value({"z": [1.5, None], "a": "\x00"})),
    ]
    answers = store.create_workflows(rows)
    for given, (stored, _) in zip(rows, answers, strict=True):
        fetched = store.get_workflow(given.workflow_id)
        _equal(f"{given.workflow_id} read back after create_workflows", stored, fetched)
        _equal(
            f"{given.workflow_id} as given to create_workflows",
            _strip_times(given),
            _strip_times(fetched),
        )
    fetched = store.get_workflow(rows[0].workflow_id)
    kwargs = fetched.inputs["kwargs"] if fetched else {}
    _equal("key order of inputs created in a batch", ["z", "a"], list(kwargs))
    _equal("key order of a nested object", ["m", "b"], list(kwargs.get("a", {})))


def check_create_many_with_existing(store: Store) -> None:
    first, _ = store.create_workflow(_run("mx-1", inputs={"args": [1]}, executor_id="a"))
    store.record("mx-1", _step(0, "kept"))
    answers = store.create_workflows(
        [
            _run("mx-2"),
            _queued("mx-1", name="other", inputs={"args": [2]}),
            _queued("mx-3", priority=1),
            _run("mx-2", name="again", inputs={"args": [9]}),
        ]
    )
    _equal(
        "create_workflows(new and existing ids): ids and created flags, in input order",
        [("mx-2", True), ("mx-1", False), ("mx-3", True), ("mx-2", False)],
        _answered(answers),
    )
    _equal("create_workflows answers an existing id with the run unmodified", first, answers[1][0])
    _equal("the existing run after create_workflows", first, store.get_workflow("mx-1"))
    _equal("the existing log after create_workflows", [_step(0, "kept")], _log_of(store, "mx-1"))
    _equal(
        "an id given twice in one batch: the second answers the first's row",
        answers[0][0],
        answers[3][0],
    )
    _equal("the run created once from an id given twice", answers[0][0], store.get_workflow("mx-2"))
    mx3 = store.get_workflow("mx-3")
    _equal(
        "create_workflows of existing ids only",
        [(mx3, False), (first, False)],
        store.create_workflows([_run("mx-3", name="x"), _run("mx-1", status=Status.ENQUEUED)]),
    )


def check_create_many_dedup(store: Store) -> None:
    store.create_workflow(_queued("md-1", dedup_id="u-1"))

    def refused(what: str, rows: list[WorkflowRow], holder: str, dedup: str) -> None:
        error = _raises(what, DuplicateDedupId, lambda: store.create_workflows(rows))
        _equal(f"{what}: DuplicateDedupId.existing_id", holder, getattr(error, "existing_id", None))
        _expect(repr(dedup) in str(error), f"{what}: the message names", repr(dedup), str(error))
        _equal(
            f"{what}: the rows of the refused batch (nothing written)",
            [None] * len(rows),
            [store.get_workflow(r.workflow_id) for r in rows],
        )

    refused(
        "create_workflows reusing the dedup_id of a live run",
        [_queued("md-2", dedup_id="u-2"), _queued("md-3", dedup_id="u-1"), _run("md-4")],
        "md-1",
        "u-1",
    )
    refused(
        "create_workflows with one dedup_id on two new rows",
        [_queued("md-5", dedup_id="u-5"), _run("md-6"), _queued("md-7", dedup_id="u-5")],
        "md-5",
        "u-5",
    )
    store.set_status("md-1", Status.PENDING)
    refused(
        "create_workflows reusing the dedup_id of a PENDING run",
        [_queued("md-8", dedup_id="u-1")],
        "md-1",
        "u-1",
    )
    store.finish_workflow("md-1", Status.SUCCESS, Value(None))
    store.create_workflow(_queued("md-9", dedup_id="u-9"))
    answers = store.create_workflows(
        [
            _queued("md-10", dedup_id="u-1"),  # its holder finished
            _queued("md-11", queue="other", dedup_id="u-1"),
            _queued("md-12", queue=None, dedup_id="u-1"),
            _queued("md-9", dedup_id="u-9"),  # the holder's own id
            _queued("md-9", dedup_id="u-13"),  # an existing id takes no dedup_id
            _queued("md-13", dedup_id="u-13"),
            _queued("md-14", dedup_id="u-14"),
            _queued("md-14", dedup_id="u-14"),  # the same id again: answered, not refused
            _run("md-15", status=Status.CANCELLED, queue="q", dedup_id="u-15"),  # not live
            _queued("md-16", dedup_id="u-15"),
        ]
    )
    _equal(
        "create_workflows with dedup_ids no live run holds",
        [
            ("md-10", True),
            ("md-11", True),
            ("md-12", True),
            ("md-9", False),
            ("md-9", False),
            ("md-13", True),
            ("md-14", True),
            ("md-14", False),
            ("md-15", True),
            ("md-16", True),
        ],
        _answered(answers),
    )


def check_create_many_notifies_once_per_queue(store: Store) -> None:
    store.create_workflow(_queued("mn-0", queue="c"))
    with _Notes(store) as notes:

        def enqueued() -> list[str]:
            return sorted(key for kind, key in notes.seen() if kind == "enqueued")

        store.create_workflows(
            [
                _queued("mn-1", queue="a"),
                _queued("mn-2", queue="b"),
                _queued("mn-3", queue="a"),
                _run("mn-4", queue="c"),  # PENDING: nothing to claim
                _queued("mn-0", queue="c"),  # exists already
                _queued("mn-5", queue="a"),
            ]
        )
        _expect(
            _wait_for(lambda: enqueued() == ["a", "b"]),
            "notifications of create_workflows",
            ["a", "b"],
            enqueued(),
        )
        time.sleep(0.2)
        _equal(
            "('enqueued', queue) notifications of create_workflows, once per queue",
            ["a", "b"],
            enqueued(),
        )
        notes.clear()
        store.create_workflow(_queued("mn-6", queue="d", dedup_id="x"))
        _expect(
            _wait_for(lambda: enqueued() == ["d"]), "notification of a create", ["d"], enqueued()
        )
        notes.clear()
        _raises(
            "create_workflows reusing a live dedup_id",
            DuplicateDedupId,
            lambda: store.create_workflows(
                [_queued("mn-7", queue="e"), _queued("mn-8", queue="d", dedup_id="x")]
            ),
        )
        store.create_workflows([_queued("mn-1", queue="a"), _queued("mn-6", queue="d")])
        time.sleep(0.2)
        _equal("notifications of a refused batch and of a batch of existing ids", [], enqueued())


def check_create_many_then_claim(store: Store) -> None:
    now = datetime.now(UTC) + timedelta(hours=1)
    store.create_workflows(
        [
            _queued("cm-late", priority=3),
            _queued("cm-z"),
            _queued("cm-m"),
            _queued("cm-delayed", priority=-5, wake_at=now + timedelta(seconds=1)),
            _queued("cm-a"),
            _queued("cm-urgent", priority=-1),
            _queued("cm-other", queue="other"),
        ]
    )

    def claim(limit: int, at: datetime = now) -> list[WorkflowRow]:
        return store.claim(
            "q", executor_id="e1", app_version="v1", limits=ClaimLimits(limit), now=at
        )

    first = claim(2)
    _equal(
        "claim of a batch: priority first, then the batch's own order",
        ["cm-urgent", "cm-z"],
        _ids(first),
    )
    rest = claim(100)
    _equal("claim of the rest of the batch", ["cm-m", "cm-a", "cm-late"], _ids(rest))
    for row in [*first, *rest]:
        _claimed_new(store, row, "created in a batch")
    _equal("claim after the delay", ["cm-delayed"], _ids(claim(100, now + timedelta(seconds=1))))


def check_set_status(store: Store) -> None:
    store.create_workflow(_run("st-2", executor_id="a"))
    store.bump_recovery("st-2")
    _equal(
        "set_status when only_from does not match",
        False,
        store.set_status("st-2", Status.CANCELLED, only_from=[Status.ENQUEUED]),
    )
    row = store.get_workflow("st-2")
    _equal("status after a refused set_status", Status.PENDING, row.status if row else None)
    _equal(
        "set_status with an empty only_from",
        False,
        store.set_status("st-2", Status.CANCELLED, only_from=[]),
    )
    _equal(
        "set_status when only_from matches",
        True,
        store.set_status(
            "st-2",
            Status.PARKED,
            only_from=[Status.ENQUEUED, Status.PENDING],
            error="crashed 5 times",
        ),
    )
    row = _present("get_workflow after set_status", store.get_workflow("st-2"))
    _equal("status after set_status", Status.PARKED, row.status)
    _equal("error after set_status", "crashed 5 times", row.error)
    _equal("executor kept without executor_id", "a", row.executor_id)
    _equal("recovery attempts kept without reset_recovery", 1, row.recovery_attempts)
    _equal(
        "set_status reassigning and resetting",
        True,
        store.set_status("st-2", Status.PENDING, executor_id="b", reset_recovery=True),
    )
    row = _present("get_workflow after resume", store.get_workflow("st-2"))
    _equal("status after resume", Status.PENDING, row.status)
    _equal("executor after reassignment", "b", row.executor_id)
    _equal("recovery attempts after reset", 0, row.recovery_attempts)
    _equal("error cleared by set_status without error", "", row.error)
    _equal("set_status of an unknown run", False, store.set_status("nope", Status.CANCELLED))


def check_bump_recovery(store: Store) -> None:
    store.create_workflow(_run("st-3", recovery_attempts=2))
    _equal("first bump_recovery", 3, store.bump_recovery("st-3"))
    _equal("second bump_recovery", 4, store.bump_recovery("st-3"))
    row = store.get_workflow("st-3")
    _equal("recovery_attempts stored", 4, row.recovery_attempts if row else None)
    _raises(
        "bump_recovery of an unknown run", WorkflowNotFound, lambda: store.bump_recovery("nope")
    )


def check_delete(store: Store) -> None:
    store.create_workflow(_run("d-1"))
    store.create_workflow(_run("d-1-keep"))
    store.record("d-1", _step(0), event=EventWrite("k", 1))
    store.send_message("d-1", "t", "m", idempotency_key="key")
    store.send_message("d-1-keep", "t", "m", idempotency_key="key")
    store.record("d-1-keep", _step(0), event=EventWrite("k", 2))
    _equal("delete_workflow of an existing run", True, store.delete_workflow("d-1"))
    _equal("get_workflow after delete", None, store.get_workflow("d-1"))
    _equal("load_log after delete", [], _log_of(store, "d-1"))
    _equal("peek_message after delete", None, store.peek_message("d-1", "t"))
    _equal("get_event after delete", (False, None), store.get_event("d-1", "k"))
    _equal("delete_workflow again", False, store.delete_workflow("d-1"))
    _equal(
        "list_workflows after delete", ["d-1-keep"], _ids(store.list_workflows(WorkflowFilter()))
    )
    _raises(
        "send_message to a deleted run",
        WorkflowNotFound,
        lambda: store.send_message("d-1", "t", "m"),
    )
    _, created = store.create_workflow(_run("d-1"))
    _equal("create_workflow of a deleted id", True, created)
    _equal("log of the re-created run", [], _log_of(store, "d-1"))
    _equal(
        "a deleted run's idempotency keys are gone with it",
        True,
        store.send_message("d-1", "t", "m", idempotency_key="key"),
    )
    _equal("other run's log", [_step(0)], _log_of(store, "d-1-keep"))
    _equal("other run's event", (True, 2), store.get_event("d-1-keep", "k"))
    _expect(
        store.peek_message("d-1-keep", "t") is not None,
        "other run's inbox after delete",
        "a message",
        None,
    )
    _equal(
        "other run's key still used",
        False,
        store.send_message("d-1-keep", "t", "m", idempotency_key="key"),
    )


def check_close_is_idempotent(store: Store) -> None:
    store.create_workflow(_run("x-1"))
    store.close()
    store.close()
