"""`check_store`'s checks of `record_many`: many runs' records in one call, each
committed or refused alone, with their side effects and notifications."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from replaykit.log import Record, Status, Value
from replaykit.stores.base import EventWrite, OutgoingMessage, RecordWrite, Store
from replaykit.testing.conformance._support import (
    _T0,
    _answer_kinds,
    _equal,
    _expect,
    _log_of,
    _Notes,
    _pending,
    _present,
    _raises,
    _run,
    _step,
)

__all__ = [
    "check_record_many_alongside_record",
    "check_record_many_commits_each",
    "check_record_many_completed_positions",
    "check_record_many_notifications",
    "check_record_many_refusals",
    "check_record_many_refuses_one_run_twice",
    "check_record_many_side_effects",
]


def check_record_many_commits_each(store: Store) -> None:
    _equal("record_many([])", [], store.record_many([]))
    for wid in ("rm-1", "rm-2", "rm-3", "rm-4"):
        store.create_workflow(_run(wid, executor_id="engine-a"))
    store.record("rm-2", _step(0, "kept"))
    wake = _T0 + timedelta(hours=2)
    store.record("rm-3", _pending(0, wake_at=wake), wake_at=wake)
    done = Record(0, "sleep", "p0", Value(None), completed_at=wake, wake_at=wake)
    writes = [
        RecordWrite("rm-1", _step(0, {"first": [1, None]}), executor_id="engine-a"),
        RecordWrite("rm-2", _step(1, "second")),
        RecordWrite("rm-3", done),
        RecordWrite("rm-4", _pending(0, wake_at=wake), wake_at=wake),
    ]
    answers = store.record_many(writes)
    _equal("record_many answers, in input order", [w.record for w in writes], answers)
    _equal("log of rm-1 after record_many", [writes[0].record], _log_of(store, "rm-1"))
    _equal(
        "log of rm-2 after record_many",
        [_step(0, "kept"), _step(1, "second")],
        _log_of(store, "rm-2"),
    )
    _equal("log of rm-3: record_many completed the pending record", [done], _log_of(store, "rm-3"))
    _equal("log of rm-4 after record_many", [writes[3].record], _log_of(store, "rm-4"))
    wakes = [getattr(store.get_workflow(w), "wake_at", "missing") for w in ("rm-3", "rm-4")]
    _equal("wake_at of rm-3 (cleared) and rm-4 (set) after record_many", [None, wake], wakes)
    # More writes than one batch of the store may hold.
    many = [f"rm-many-{i}" for i in range(300)]
    store.create_workflows([_run(wid) for wid in many])
    answers = store.record_many([RecordWrite(wid, _step(0, wid)) for wid in many])
    _equal("record_many of 300 runs", [_step(0, wid) for wid in many], answers)
    _equal(
        "logs of 300 runs after record_many",
        [[_step(0, wid)] for wid in many],
        [_log_of(store, wid) for wid in many],
    )


def check_record_many_refusals(store: Store) -> None:
    store.create_workflow(_run("rf-ok-1"))
    store.create_workflow(_run("rf-ok-2"))
    store.create_workflow(_run("rf-ok-3"))
    store.create_workflow(_run("rf-cancelled", status=Status.CANCELLED), records=[_step(0)])
    store.create_workflow(_run("rf-enqueued", status=Status.ENQUEUED, executor_id=""))
    store.create_workflow(_run("rf-owned", executor_id="engine-a"))
    store.create_workflow(_run("rf-gap"))
    store.create_workflow(_run("rf-consumed"))
    store.create_workflow(_run("rf-send"))
    store.send_message("rf-consumed", "t", "once")
    message = _present("peek_message after send", store.peek_message("rf-consumed", "t"))
    store.record("rf-consumed", Record(0, "recv", "t", Value("once")), consume=message.message_id)
    store.send_message("rf-cancelled", "t", "kept")
    kept = _present("peek_message of the cancelled run", store.peek_message("rf-cancelled", "t"))
    writes = [
        RecordWrite("rf-ok-1", _step(0, "one")),
        RecordWrite(
            "rf-cancelled",
            _step(1),
            consume=kept.message_id,
            send=OutgoingMessage("rf-ok-2", "t", "never"),
            event=EventWrite("k", 1),
        ),
        RecordWrite("rf-enqueued", _step(0)),
        RecordWrite("rf-owned", _step(0), executor_id="engine-b"),
        RecordWrite("rf-ok-2", _step(0, "two"), event=EventWrite("k", "set")),
        RecordWrite("rf-gap", _step(3)),
        RecordWrite("rf-missing", _step(0)),
        RecordWrite(
            "rf-consumed", Record(1, "recv", "t", Value("twice")), consume=message.message_id
        ),
        RecordWrite("rf-send", _step(0), send=OutgoingMessage("nope", "t", "x")),
        RecordWrite("rf-ok-3", _step(0, "three"), executor_id=None),
    ]
    answers = store.record_many(writes)
    _equal(
        "record_many answers with refusals in between",
        [
            "record",
            # A run no longer PENDING: the conflict says so (its status, for late records).
            "RunNotPending",
            "RunNotPending",
            "RecordConflict",
            "record",
            "RecordConflict",
            "WorkflowNotFound",
            "RecordConflict",
            "WorkflowNotFound",
            "record",
        ],
        _answer_kinds(answers),
    )
    _equal(
        "records answered by record_many around the refusals",
        [_step(0, "one"), _step(0, "two"), _step(0, "three")],
        [answers[0], answers[4], answers[9]],
    )
    for index in (1, 2, 3, 5, 6, 7, 8):
        # The same exception record() raises: re-raisable, with its message.
        answer = answers[index]
        _expect(
            isinstance(answer, Exception) and bool(str(answer)),
            f"record_many answer for {writes[index].workflow_id}",
            "an exception with a message",
            answer,
        )
    _equal(
        "logs of the accepted writes",
        [[_step(0, "one")], [_step(0, "two")], [_step(0, "three")]],
        [_log_of(store, w) for w in ("rf-ok-1", "rf-ok-2", "rf-ok-3")],
    )
    _equal("event set by an accepted write", (True, "set"), store.get_event("rf-ok-2", "k"))
    _equal("log of the cancelled run", [_step(0)], _log_of(store, "rf-cancelled"))
    _equal("inbox of the cancelled run", kept, store.peek_message("rf-cancelled", "t"))
    _equal("event of the cancelled run", (False, None), store.get_event("rf-cancelled", "k"))
    _equal("message a refused write would have sent", None, store.peek_message("rf-ok-2", "t"))
    _equal(
        "logs of the other refused writes",
        [[], [], [], [], [Record(0, "recv", "t", Value("once"))], []],
        [
            _log_of(store, w)
            for w in ("rf-enqueued", "rf-owned", "rf-gap", "rf-missing", "rf-consumed", "rf-send")
        ],
    )


def check_record_many_completed_positions(store: Store) -> None:
    for wid in ("rc-1", "rc-2", "rc-3", "rc-4"):
        store.create_workflow(_run(wid))
    first = _step(0, "first writer")
    store.record("rc-1", first)
    pending = _pending(0)
    store.record("rc-2", pending)
    store.record("rc-3", _step(0))
    store.send_message("rc-3", "t", "kept")
    message = _present("peek_message after send", store.peek_message("rc-3", "t"))
    answers = store.record_many(
        [
            RecordWrite("rc-1", _step(0, "second writer", attempts=3)),
            RecordWrite("rc-2", _pending(0, name="other")),
            RecordWrite(
                "rc-3",
                _step(0, "other"),
                consume=message.message_id,
                event=EventWrite("k", 1),
                send=OutgoingMessage("rc-1", "t", "never"),
            ),
            RecordWrite("rc-4", _step(0, "new")),
        ]
    )
    _equal(
        "record_many over completed (and pending) positions answers the stored records",
        [first, pending, _step(0), _step(0, "new")],
        answers,
    )
    _equal("log after record_many over a completed position", [first], _log_of(store, "rc-1"))
    _equal("log after record_many of a pending over a pending", [pending], _log_of(store, "rc-2"))
    _equal("message after a write that wrote nothing", message, store.peek_message("rc-3", "t"))
    _equal("event after a write that wrote nothing", (False, None), store.get_event("rc-3", "k"))
    _equal(
        "inbox a write that wrote nothing would have sent to", None, store.peek_message("rc-1", "t")
    )


def check_record_many_side_effects(store: Store) -> None:
    for wid in ("rs-recv", "rs-all", "rs-send", "rs-event", "rs-plain", "rs-to"):
        store.create_workflow(_run(wid))
    store.send_message("rs-recv", "t", "for recv")
    for topic in ("a", "b"):
        store.send_message("rs-all", topic, topic)
    store.send_message("rs-recv", "t", "second")
    one = _present("message for rs-recv", store.peek_message("rs-recv", "t"))
    ids = [_present(f"message on {t}", store.peek_message("rs-all", t)).message_id for t in "ab"]
    out = OutgoingMessage("rs-to", "greet", {"hello": [1]}, idempotency_key="rs-send:0")
    writes = [
        RecordWrite("rs-recv", Record(0, "recv", "t", Value("for recv")), consume=one.message_id),
        RecordWrite("rs-all", Record(0, "all", "recv", Value(["a", "b"])), consume=ids),
        RecordWrite("rs-send", Record(0, "send", "greet", Value(None)), send=out),
        RecordWrite("rs-event", _step(0), event=EventWrite("k", {"v": [1, 2]})),
        RecordWrite("rs-plain", _step(0, "plain")),
    ]
    _equal("record_many with side effects", [w.record for w in writes], store.record_many(writes))
    second = store.peek_message("rs-recv", "t")
    _equal("inbox after a consuming write", "second", second.payload if second else None)
    _equal(
        "inbox after consuming two messages in one write",
        [None, None],
        [store.peek_message("rs-all", "a"), store.peek_message("rs-all", "b")],
    )
    received = _present("message sent by record_many", store.peek_message("rs-to", "greet"))
    _equal("payload sent by record_many", out.payload, received.payload)
    _equal("event set by record_many", (True, {"v": [1, 2]}), store.get_event("rs-event", "k"))
    # The send's idempotency key is used: sending with it again delivers nothing.
    answers = store.record_many(
        [
            RecordWrite("rs-send", Record(1, "send", "greet", Value(None)), send=out),
            RecordWrite(
                "rs-to", Record(0, "recv", "greet", Value(out.payload)), consume=received.message_id
            ),
        ]
    )
    _equal("record_many answers, second round", ["record", "record"], _answer_kinds(answers))
    _equal("inbox after a send with a used key", None, store.peek_message("rs-to", "greet"))
    _equal("log of the sender", 2, len(_log_of(store, "rs-send")))


def check_record_many_refuses_one_run_twice(store: Store) -> None:
    store.create_workflow(_run("rd-1"))
    store.create_workflow(_run("rd-2"))
    _raises(
        "record_many with two writes of one run",
        ValueError,
        lambda: store.record_many(
            [
                RecordWrite("rd-2", _step(0)),
                RecordWrite("rd-1", _step(0)),
                RecordWrite("rd-1", _step(1)),
            ]
        ),
    )
    _equal(
        "logs after a refused record_many",
        [[], []],
        [_log_of(store, "rd-1"), _log_of(store, "rd-2")],
    )


def check_record_many_alongside_record(store: Store) -> None:
    threads = 4
    positions = 6
    batch_runs = [f"ra-b{i}" for i in range(20)]
    store.create_workflows(
        [_run(f"ra-t{t}") for t in range(threads)] + [_run(w) for w in batch_runs]
    )
    store.create_workflow(_run("ra-race"))
    barrier = threading.Barrier(threads + 2)
    errors: list[BaseException] = []
    raced: list[Any] = []

    def alone(index: int) -> None:
        barrier.wait()
        try:
            for position in range(positions):
                store.record(f"ra-t{index}", _step(position, index))
        except BaseException as exc:
            errors.append(exc)

    def racer() -> None:
        barrier.wait()
        try:
            raced.append(store.record("ra-race", _step(0, "record()")))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=alone, args=(t,)) for t in range(threads)]
    workers.append(threading.Thread(target=racer))
    for worker in workers:
        worker.start()
    barrier.wait()
    answers: list[list[Record | Exception]] = []
    for position in range(positions):
        writes = [RecordWrite(w, _step(position, w)) for w in batch_runs]
        if position == 0:
            writes.append(RecordWrite("ra-race", _step(0, "record_many()")))
        answers.append(store.record_many(writes))
    for worker in workers:
        worker.join()
    _equal("exceptions from record() next to record_many", [], errors)
    _equal(
        "record_many next to record() answers every write with a record",
        [["record"] * len(a) for a in answers],
        [_answer_kinds(a) for a in answers],
    )
    for t in range(threads):
        _equal(
            f"log of ra-t{t} written by record() next to record_many",
            [_step(p, t) for p in range(positions)],
            _log_of(store, f"ra-t{t}"),
        )
    for w in batch_runs:
        _equal(
            f"log of {w} written by record_many",
            [_step(p, w) for p in range(positions)],
            _log_of(store, w),
        )
    race_log = _log_of(store, "ra-race")
    _equal("log of the position record() and record_many raced for", 1, len(race_log))
    _equal(
        "what record() and record_many got for one position",
        [race_log[0], race_log[0]],
        [raced[0] if raced else None, answers[0][-1]],
    )


def check_record_many_notifications(store: Store) -> None:
    for wid in ("rn-1", "rn-2", "rn-3", "rn-to"):
        store.create_workflow(_run(wid))
    visible: list[tuple[str, Any]] = []

    def look(kind: str, key: str) -> None:
        if kind == "message" and key == "rn-to":
            found = store.peek_message("rn-to", "t")
            visible.append((kind, found.payload if found else None))
        if kind == "event" and key == "rn-2":
            visible.append((kind, store.get_event("rn-2", "k")))

    with _Notes(store, look) as notes:
        answers = store.record_many(
            [
                RecordWrite("rn-1", _step(0), send=OutgoingMessage("rn-to", "t", "hi")),
                RecordWrite("rn-2", _step(0), event=EventWrite("k", 7)),
                RecordWrite("rn-3", _step(0)),
            ]
        )
        _equal("record_many answers", ["record"] * 3, _answer_kinds(answers))
        notes.wait_for("notifications of record_many", ("message", "rn-to"), ("event", "rn-2"))
        _equal("errors from the store called inside a subscriber", [], notes.failures)
        _expect(
            ("message", "hi") in visible and ("event", (True, 7)) in visible,
            "what record_many announced is visible in the callback",
            [("message", "hi"), ("event", (True, 7))],
            visible,
        )
