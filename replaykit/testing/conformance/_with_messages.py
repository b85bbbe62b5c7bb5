"""`check_store`'s checks of the writes updates are made of: a run started and sent a
message in one transaction (`create_and_send`), and a message answered without a record
(`answer_message`)."""

from __future__ import annotations

from replaykit.log import Record, Status, Value
from replaykit.stores.base import EventWrite, OutgoingMessage, Store, WorkflowRow
from replaykit.testing.conformance._support import (
    _equal,
    _expect,
    _log_of,
    _Notes,
    _present,
    _raises,
    _run,
    _wait_for,
)

__all__ = [
    "check_answer_message",
    "check_create_and_send",
    "check_create_and_send_refused_leaves_nothing",
]


class _Refused(Exception):
    pass


def check_create_and_send(store: Store) -> None:
    with _Notes(store) as notes:
        row = _run("cs-1", inputs={"args": [1], "kwargs": {}})
        sent = OutgoingMessage("cs-1", "t", {"n": 1}, idempotency_key="k-1")
        stored, created, delivered = store.create_and_send(row, sent, call_id="call-1")
        _equal(
            "create_and_send of a free id: (created, delivered)", (True, True), (created, delivered)
        )
        _equal("the run it created", "cs-1", stored.workflow_id)
        _equal(
            "the run as read back",
            Status.PENDING,
            _present("get_workflow", store.get_workflow("cs-1")).status,
        )
        message = _present("the message delivered with the start", store.peek_message("cs-1", "t"))
        _equal("its payload", {"n": 1}, message.payload)
        notes.wait_for("a message notification after create_and_send", ("message", "cs-1"))

        seen: list[WorkflowRow] = []
        again = store.create_and_send(row, sent, call_id="call-1", accept=seen.append)
        _equal(
            "the same call again (a lost answer): (created, delivered)", (False, True), again[1:]
        )
        _equal("accept() was given the run in the way", ["cs-1"], [r.workflow_id for r in seen])
        _equal("the run in the way keeps its inputs", {"args": [1], "kwargs": {}}, seen[0].inputs)
        other_call = store.create_and_send(row, sent, call_id="call-2")
        _equal("another call reusing the key: (created, delivered)", (False, False), other_call[1:])
        second = OutgoingMessage("cs-1", "t", {"n": 2}, idempotency_key="k-2")
        _equal(
            "a new key to an existing run: (created, delivered)",
            (False, True),
            store.create_and_send(row, second, call_id="call-3")[1:],
        )
        store.record("cs-1", _consume_record(0), consume=message.message_id)
        latest = _present("the second message", store.peek_message("cs-1", "t"))
        _equal("one message per key, in order", {"n": 2}, latest.payload)
        queued = _run("cs-q", status=Status.ENQUEUED, queue="q", app_version="v1", executor_id="")
        store.create_and_send(queued, OutgoingMessage("cs-q", "t", 1, idempotency_key="kq"))
        notes.wait_for(
            "an enqueued notification for a queued run created with a message", ("enqueued", "q")
        )
    _raises(
        "create_and_send with a message for another run",
        ValueError,
        lambda: store.create_and_send(_run("cs-2"), OutgoingMessage("cs-x", "t", 1)),
    )
    _equal("nothing created for the refused call", None, store.get_workflow("cs-2"))
    _raises(
        "create_and_send of a row with a dedup_id",
        ValueError,
        lambda: store.create_and_send(
            _run("cs-3", queue="q", dedup_id="d", status=Status.ENQUEUED, app_version="v1"),
            OutgoingMessage("cs-3", "t", 1),
        ),
    )
    _equal("nothing created for the dedup refusal", None, store.get_workflow("cs-3"))


def _consume_record(position: int) -> Record:
    return Record(position, "recv", "t", Value({"n": 1}))


def check_create_and_send_refused_leaves_nothing(store: Store) -> None:
    store.create_workflow(_run("cr-1"))

    def refuse(found: WorkflowRow) -> None:
        raise _Refused(found.workflow_id)

    _raises(
        "create_and_send whose accept() raises",
        _Refused,
        lambda: store.create_and_send(
            _run("cr-1"), OutgoingMessage("cr-1", "t", 1, idempotency_key="k"), accept=refuse
        ),
    )
    _equal("no message after the refusal", None, store.peek_message("cr-1", "t"))
    _equal(
        "the key is unused after the refusal: a later send delivers",
        True,
        store.send_message("cr-1", "t", 2, idempotency_key="k"),
    )
    _equal("the run's log is untouched", [], _log_of(store, "cr-1"))


def check_answer_message(store: Store) -> None:
    store.create_workflow(_run("am-1"))
    store.send_message("am-1", "req", {"id": "u1"})
    store.send_message("am-1", "req", {"id": "u2"})
    first = _present("the oldest request", store.peek_message("am-1", "req"))
    heard: list[tuple[str, str]] = []
    unsubscribe = store.subscribe(lambda kind, key: heard.append((kind, key)))
    try:
        answered = store.answer_message(
            "am-1", first.message_id, EventWrite("reply:u1", {"error": "no"})
        )
        _equal("answer_message of a message in the inbox", True, answered)
        _expect(
            _wait_for(lambda: ("event", "am-1") in heard),
            "an event notification after answer_message",
            ("event", "am-1"),
            heard,
        )
    finally:
        unsubscribe()
    _equal("the answer, as an event", (True, {"error": "no"}), store.get_event("am-1", "reply:u1"))
    following = _present("the next request", store.peek_message("am-1", "req"))
    _equal("the answered message left the inbox", {"id": "u2"}, following.payload)
    _equal("no record for an answered message", [], _log_of(store, "am-1"))
    _equal(
        "answer_message of a message gone already",
        False,
        store.answer_message("am-1", first.message_id, EventWrite("reply:u1", {"error": "again"})),
    )
    _equal("the first answer stands", (True, {"error": "no"}), store.get_event("am-1", "reply:u1"))
    store.create_workflow(_run("am-2"))
    _equal(
        "answer_message of another run's message",
        False,
        store.answer_message("am-2", following.message_id, EventWrite("reply:u2", 1)),
    )
    _equal("that message stays where it was", following, store.peek_message("am-1", "req"))
    _equal("no event for the refused answer", (False, None), store.get_event("am-2", "reply:u2"))
