"""`check_store`'s checks of messages: sent (`send_message`, with a record, keyed),
consumed with a record, delivered first in, first out per topic and across several
topics (`peek_message` of a tuple), with their fields."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from replaykit.errors import RecordConflict, WorkflowNotFound
from replaykit.log import Record, Value
from replaykit.stores.base import OutgoingMessage, RecordWrite, Store
from replaykit.testing.conformance._support import (
    _T0,
    _aware_utc,
    _equal,
    _expect,
    _log_of,
    _present,
    _raises,
    _run,
    _step,
)

__all__ = [
    "check_consume_is_atomic",
    "check_consume_many",
    "check_consume_with_record",
    "check_fifo_per_topic",
    "check_keyed_send_with_record",
    "check_message_fields",
    "check_oldest_across_topics",
    "check_send_key_outlives_its_message",
    "check_send_message_idempotency",
    "check_send_message_names_its_call",
    "check_send_with_record",
]


def check_consume_with_record(store: Store) -> None:
    store.create_workflow(_run("m-1"))
    store.send_message("m-1", "t", "first")
    store.send_message("m-1", "t", "second")
    first = _present("peek_message after two sends", store.peek_message("m-1", "t"))
    _equal("payload of the oldest message", "first", first.payload)
    store.record("m-1", Record(0, "recv", "t", Value("first")), consume=first.message_id)
    second = store.peek_message("m-1", "t")
    _equal("payload after consuming the oldest", "second", second.payload if second else None)
    _raises(
        "record() consuming an already consumed message",
        RecordConflict,
        lambda: store.record("m-1", Record(1, "recv", "t", Value("x")), consume=first.message_id),
    )
    _equal("log after consuming a gone message", 1, len(_log_of(store, "m-1")))
    _equal("inbox after the refused consume", second, store.peek_message("m-1", "t"))


def check_consume_is_atomic(store: Store) -> None:
    store.create_workflow(_run("m-2"))
    store.create_workflow(_run("m-2-other"))
    store.record("m-2", _step(0, "done"))
    store.send_message("m-2", "t", "kept")
    message = _present("peek_message after send", store.peek_message("m-2", "t"))
    _equal(
        "record() at a completed position with consume returns the stored record",
        _step(0, "done"),
        store.record("m-2", _step(0, "other"), consume=message.message_id),
    )
    _equal("message after a record() that wrote nothing", message, store.peek_message("m-2", "t"))
    _raises(
        "record() at a gap with consume",
        RecordConflict,
        lambda: store.record("m-2", _step(5), consume=message.message_id),
    )
    _equal("message after a refused gap", message, store.peek_message("m-2", "t"))
    # Message ids name a message within its run's inbox (a store may number each
    # run's inbox on its own, as a sharded one does): an id this run's inbox does not
    # hold is refused, whoever else may hold a message under it.
    store.send_message("m-2-other", "t", "theirs")
    theirs = _present("peek_message of the other run", store.peek_message("m-2-other", "t"))
    _raises(
        "record() consuming an id its run's inbox does not hold",
        RecordConflict,
        lambda: store.record("m-2", _step(1), consume=message.message_id + 1000),
    )
    _equal("the other run's message", theirs, store.peek_message("m-2-other", "t"))
    _equal("this run's message", message, store.peek_message("m-2", "t"))
    _raises(
        "record() consuming a message and sending to an unknown run",
        WorkflowNotFound,
        lambda: store.record(
            "m-2", _step(1), consume=message.message_id, send=OutgoingMessage("nope", "t", "x")
        ),
    )
    _equal("message after a send to an unknown run", message, store.peek_message("m-2", "t"))
    _equal("log after refused side effects", [_step(0, "done")], _log_of(store, "m-2"))


def check_consume_many(store: Store) -> None:
    store.create_workflow(_run("m-3"))
    for payload in ("a", "b", "c"):
        store.send_message("m-3", payload, payload)
    ids = {}
    for topic in ("a", "b", "c"):
        ids[topic] = _present(f"message on {topic}", store.peek_message("m-3", topic)).message_id
    store.record("m-3", Record(0, "all", "recv", Value(["a", "b"])), consume=[ids["a"], ids["b"]])
    _equal(
        "inbox after consuming two messages at once",
        [None, None],
        [store.peek_message("m-3", "a"), store.peek_message("m-3", "b")],
    )
    _raises(
        "record() consuming a present and a consumed message",
        RecordConflict,
        lambda: store.record("m-3", _step(1), consume=[ids["c"], ids["a"]]),
    )
    _equal(
        "the present message after the refusal",
        ids["c"],
        _present("message on c", store.peek_message("m-3", "c")).message_id,
    )
    _equal("log after the refusal", 1, len(_log_of(store, "m-3")))
    store.record("m-3", _step(1), consume=[])
    _equal("record() consuming an empty list", 2, len(_log_of(store, "m-3")))


def check_send_with_record(store: Store) -> None:
    store.create_workflow(_run("s-1"))
    store.create_workflow(_run("s-1-to"))
    out = OutgoingMessage("s-1-to", "greet", {"hello": ["world", 1]}, idempotency_key="s-1:0")
    store.record("s-1", Record(0, "send", "greet", Value(None)), send=out)
    received = store.peek_message("s-1-to", "greet")
    _equal("payload sent by record()", out.payload, received.payload if received else None)
    _equal("receiver of the message", "s-1-to", received.workflow_id if received else None)
    store.record("s-1", Record(1, "send", "greet", Value(None)), send=out)
    received = _present("message sent by record()", received)
    store.record(
        "s-1-to", Record(0, "recv", "greet", Value(out.payload)), consume=received.message_id
    )
    _equal("inbox after a second send with a used key", None, store.peek_message("s-1-to", "greet"))
    _equal("log of the sender", 2, len(_log_of(store, "s-1")))
    _raises(
        "record() sending to an unknown run",
        WorkflowNotFound,
        lambda: store.record(
            "s-1", Record(2, "send", "x", Value(None)), send=OutgoingMessage("nope", "t", 1)
        ),
    )
    _equal("log after a send to an unknown run", 2, len(_log_of(store, "s-1")))
    store.record(
        "s-1",
        Record(1, "send", "greet", Value(None)),
        send=OutgoingMessage("s-1-to", "greet", "again"),
    )
    _equal("inbox after a record() that wrote nothing", None, store.peek_message("s-1-to", "greet"))


def check_send_message_idempotency(store: Store) -> None:
    store.create_workflow(_run("s-2"))
    store.create_workflow(_run("s-2-b"))
    _equal(
        "send_message with a new key", True, store.send_message("s-2", "t", 1, idempotency_key="k")
    )
    _equal(
        "send_message with a used key",
        False,
        store.send_message("s-2", "t", 2, idempotency_key="k"),
    )
    _equal(
        "send_message with the same key to another run",
        True,
        store.send_message("s-2-b", "t", 3, idempotency_key="k"),
    )
    _equal("send_message without a key", True, store.send_message("s-2", "t", 4))
    _equal("send_message without a key, again", True, store.send_message("s-2", "t", 4))
    _raises(
        "send_message to an unknown run",
        WorkflowNotFound,
        lambda: store.send_message("nope", "t", 1),
    )
    payloads = _drain(store, "s-2", "t")
    _equal("messages delivered with and without keys", [1, 4, 4], payloads)


def check_send_message_names_its_call(store: Store) -> None:
    store.create_workflow(_run("s-call"))
    _equal(
        "send_message with a key and a call id",
        True,
        store.send_message("s-call", "t", 1, idempotency_key="k", call_id="c1"),
    )
    # The retry of one call after a lost answer: told it delivered, nothing more sent.
    _equal(
        "send_message with the same key and call id again",
        True,
        store.send_message("s-call", "t", 1, idempotency_key="k", call_id="c1"),
    )
    _equal(
        "send_message with the key and another call id",
        False,
        store.send_message("s-call", "t", 2, idempotency_key="k", call_id="c2"),
    )
    _equal(
        "send_message with the key and no call id",
        False,
        store.send_message("s-call", "t", 3, idempotency_key="k"),
    )
    _equal("messages delivered for one call", [1], _drain(store, "s-call", "t"))


def check_send_key_outlives_its_message(store: Store) -> None:
    # External completion rests on this: a token's key stays used once its
    # completion was taken, and after the run continued as new, so that a second
    # completion is refused for the run's whole life.
    store.create_workflow(_run("s-life"))
    store.send_message("s-life", "t", "first", idempotency_key="k")
    _equal("messages taken", ["first"], _drain(store, "s-life", "t"))
    _equal(
        "send_message with a key whose message was consumed",
        False,
        store.send_message("s-life", "t", "again", idempotency_key="k"),
    )
    store.continue_workflow(
        "s-life", {"args": [], "kwargs": {}}, generation=0, executor_id=None, now=_T0
    )
    _equal(
        "send_message with a key used by an earlier generation",
        False,
        store.send_message("s-life", "t", "later", idempotency_key="k"),
    )
    _equal("inbox after the refused sends", None, store.peek_message("s-life", "t"))
    store.delete_workflow("s-life")
    store.create_workflow(_run("s-life"))
    _equal(
        "send_message with a key of a deleted run, to a new run of its id",
        True,
        store.send_message("s-life", "t", "new", idempotency_key="k"),
    )


def _drain(store: Store, workflow_id: str, topic: str) -> list[Any]:
    """Consume the inbox of `topic` through record(), as the runtime does: its payloads."""
    return [payload for _, payload in _drain_any(store, workflow_id, topic)]


def check_fifo_per_topic(store: Store) -> None:
    store.create_workflow(_run("q-1"))
    for topic, payload in [("a", 1), ("b", "b1"), ("a", 2), ("b", "b2"), ("a", 3)]:
        store.send_message("q-1", topic, payload)
    _equal("peek on a topic with no messages", None, store.peek_message("q-1", "c"))
    _equal("peek on another run", None, store.peek_message("nope", "a"))
    first_a = store.peek_message("q-1", "a")
    first_b = store.peek_message("q-1", "b")
    _expect(
        first_a is not None and first_b is not None and first_a.message_id < first_b.message_id,
        "message ids increase in send order",
        "first a < first b",
        (first_a, first_b),
    )
    _equal("peek does not consume", first_a, store.peek_message("q-1", "a"))
    _equal("topic a in FIFO order", [1, 2, 3], _drain(store, "q-1", "a"))
    _equal("topic b untouched by draining a", first_b, store.peek_message("q-1", "b"))
    _equal("topic b in FIFO order", ["b1", "b2"], _drain(store, "q-1", "b"))


def _drain_any(store: Store, workflow_id: str, topics: str | tuple[str, ...]) -> list[Any]:
    """Consume the oldest message of any of `topics` (or of the one topic) through
    record(), as `Recv(topics)` does: (topic, payload) of each, in the order taken."""
    taken: list[Any] = []
    position = len(store.load_log(workflow_id))
    name = topics if isinstance(topics, str) else "(" + ",".join(topics) + ")"
    while (message := store.peek_message(workflow_id, topics)) is not None:
        store.record(
            workflow_id,
            Record(position, "recv", name, Value(message.payload)),
            consume=message.message_id,
        )
        taken.append((message.topic, message.payload))
        position += 1
        _expect(
            len(taken) <= 1000,
            f"consuming the inbox of {topics!r}",
            "an end",
            f"{len(taken)} messages, the last {message!r}",
        )
    return taken


def check_oldest_across_topics(store: Store) -> None:
    """`peek_message(id, (a, b))` is the oldest message on any of the topics, with its
    topic and fields; consuming it takes it from its own topic once; other topics and
    other runs are not touched; an empty tuple is refused."""
    store.create_workflow(_run("qa-1"))
    store.create_workflow(_run("qa-other"))
    for topic, payload in [("c", "c1"), ("b", "b1"), ("a", "a1"), ("b", "b2"), ("a", "a2")]:
        store.send_message("qa-1", topic, payload)
    store.send_message("qa-other", "a", "theirs")
    _equal("peek across topics with no messages", None, store.peek_message("qa-1", ("x", "y")))
    _equal("peek across topics of another run", None, store.peek_message("nope", ("a", "b")))
    first = _present("peek across a and b", store.peek_message("qa-1", ("a", "b")))
    _equal("the oldest across a and b, with its topic", ("b", "b1"), (first.topic, first.payload))
    _equal("its fields", "qa-1", first.workflow_id)
    _aware_utc("its created_at", first.created_at)
    _equal("the same message as a peek of its topic alone", store.peek_message("qa-1", "b"), first)
    _equal("the topics' order does not matter", first, store.peek_message("qa-1", ("b", "a")))
    _equal(
        "a one-topic tuple is that topic",
        store.peek_message("qa-1", "a"),
        store.peek_message("qa-1", ("a",)),
    )
    _raises(
        "record() consuming a message twice",
        RecordConflict,
        lambda: [
            store.record("qa-1", Record(0, "recv", "(a,b)", Value("b1")), consume=first.message_id),
            store.record("qa-1", Record(1, "recv", "(a,b)", Value("b1")), consume=first.message_id),
        ],
    )
    _equal(
        "the rest of a and b, oldest first, each once",
        [("a", "a1"), ("b", "b2"), ("a", "a2")],
        _drain_any(store, "qa-1", ("a", "b")),
    )
    _equal("topic c untouched", "c1", _present("c", store.peek_message("qa-1", "c")).payload)
    _equal(
        "the other run's inbox untouched",
        [("a", "theirs")],
        _drain_any(store, "qa-other", ("a", "b")),
    )
    _raises("peek_message of no topics", ValueError, lambda: store.peek_message("qa-1", ()))


def check_message_fields(store: Store) -> None:
    store.create_workflow(_run("q-2"))
    before = datetime.now(UTC) - timedelta(minutes=5)
    store.send_message("q-2", "topic", {"k": [None, True, 1.5]})
    message = _present("peek_message after send", store.peek_message("q-2", "topic"))
    _equal("message workflow_id", "q-2", message.workflow_id)
    _equal("message topic", "topic", message.topic)
    _equal("message payload", {"k": [None, True, 1.5]}, message.payload)
    _aware_utc("message created_at", message.created_at)
    _expect(
        message.created_at is not None and message.created_at > before,
        "message created_at is about now",
        f"after {before}",
        message.created_at,
    )


def _keyed(target: str, payload: Any, key: str) -> OutgoingMessage:
    """A `Send(..., idempotency_key=key)` as the runtime writes it: True if delivered."""
    return OutgoingMessage(
        target, "invoice", payload, idempotency_key=key, if_duplicate=Value(False)
    )


def _sent(position: int, delivered: bool = True) -> Record:
    return Record(position, "send", "invoice", Value(delivered))


def check_keyed_send_with_record(store: Store) -> None:
    """A keyed send delivers once per receiving run and key, whoever uses the key first
    (another run, the same run, `send_message`); the record says which, in its commit."""
    for wid in ("ks-a", "ks-b", "ks-to", "ks-other"):
        store.create_workflow(_run(wid))

    def keyed_send(
        what: str, wid: str, position: int, to: str, payload: str, key: str, delivered: bool
    ) -> None:
        got = store.record(wid, _sent(position), send=_keyed(to, payload, key))
        _equal(f"record() of a keyed send {what}", _sent(position, delivered), got)

    def by_hand(what: str, payload: str, key: str, delivered: bool) -> None:
        got = store.send_message("ks-to", "invoice", payload, idempotency_key=key)
        _equal(f"send_message with a key {what}", delivered, got)

    keyed_send("with a new key", "ks-a", 0, "ks-to", "from a", "invoice-7", True)
    keyed_send("whose key another run used", "ks-b", 0, "ks-to", "from b", "invoice-7", False)
    _equal("log of the duplicate's sender", [_sent(0, False)], _log_of(store, "ks-b"))
    keyed_send("with the key to another run", "ks-a", 1, "ks-other", "from a", "invoice-7", True)
    keyed_send("whose key this run used before", "ks-a", 2, "ks-to", "again", "invoice-7", False)
    by_hand("first", "by hand", "by-hand", True)
    keyed_send("whose key send_message used", "ks-a", 3, "ks-to", "late", "by-hand", False)
    store.record("ks-a", _sent(4), send=_keyed("ks-to", "first", "in-workflow"))
    by_hand("a keyed send used", "by hand", "in-workflow", False)
    # At a completed position the store answers the stored record and sends nothing.
    keyed_send("at a completed position", "ks-b", 0, "ks-to", "never", "unused", False)
    by_hand("whose write wrote nothing is unused", "now", "unused", True)
    _equal(
        "messages each key delivered, once",
        ["from a", "by hand", "first", "now"],
        _drain(store, "ks-to", "invoice"),
    )
    _equal("the other run's message", ["from a"], _drain(store, "ks-other", "invoice"))

    # record_many: two runs send with one key to one run in the same call.
    answers = store.record_many(
        [
            RecordWrite("ks-a", _sent(5), send=_keyed("ks-to", "batch a", "batch-key")),
            RecordWrite("ks-b", _sent(1), send=_keyed("ks-to", "batch b", "batch-key")),
        ]
    )
    outcomes = [
        answer.outcome if isinstance(answer, Record) else repr(answer) for answer in answers
    ]
    _expect(
        sorted(map(repr, outcomes)) == sorted(map(repr, [Value(True), Value(False)])),
        "record_many of two keyed sends with one key: one delivers, one is a duplicate",
        [Value(True), Value(False)],
        outcomes,
    )
    _equal(
        "each run's log holds what record_many answered",
        answers,
        [_log_of(store, "ks-a")[5], _log_of(store, "ks-b")[1]],
    )
    delivered = _drain(store, "ks-to", "invoice")
    _expect(
        delivered in (["batch a"], ["batch b"]),
        "messages two keyed sends with one key delivered",
        "one of 'batch a', 'batch b'",
        delivered,
    )
    winner = "batch a" if outcomes[0] == Value(True) else "batch b"
    _equal("the message delivered is the sender's that recorded True", [winner], delivered)
