"""`check_store`'s checks of what a store tells its subscribers (`subscribe`): a note
for each change a waiter waits on, and for each record written to a stream."""

from __future__ import annotations

import time
from typing import Any

from replaykit.log import CLOSE_STREAM_KIND, WRITE_STREAM_KIND, Record, Status, StreamCursor, Value
from replaykit.stores.base import EventWrite, OutgoingMessage, RecordWrite, Store
from replaykit.testing.conformance._support import (
    _answer_kinds,
    _equal,
    _expect,
    _Notes,
    _run,
    _step,
    _wait_for,
)

__all__ = ["check_notifications", "check_stream_records_notify"]


def check_notifications(store: Store) -> None:
    store.create_workflow(_run("n-1"))
    store.create_workflow(_run("n-2"))
    visible: list[tuple[str, bool]] = []

    def look(kind: str, key: str) -> None:
        # Runs after the commit, so what it announces can already be read, and
        # reading it must not wait for anything the write still holds.
        if kind == "message" and key == "n-1":
            visible.append(("message", store.peek_message("n-1", "t") is not None))
        if kind == "finished" and key == "n-1":
            row = store.get_workflow("n-1")
            visible.append(("finished", row is not None and row.status.is_terminal))

    with _Notes(store, look) as notes:
        store.send_message("n-1", "t", "hi")
        notes.wait_for("notification for send_message", ("message", "n-1"))
        store.record("n-2", _step(0), send=OutgoingMessage("n-1", "t", "again"))
        store.record("n-2", _step(1), event=EventWrite("k", 1))
        notes.wait_for("notification for an event set by record()", ("event", "n-2"))
        store.finish_workflow("n-1", Status.SUCCESS, Value(1))
        notes.wait_for("notification for finish_workflow", ("finished", "n-1"))
        store.set_status("n-2", Status.CANCELLED)
        notes.wait_for("notification for set_status(CANCELLED)", ("finished", "n-2"))
        # A resume says so, to the engine that owns the run; an update that only a
        # PENDING run may take (a reset of its recovery count) resumes nothing and says
        # nothing: its engine may hold the run in memory, and must keep it.
        store.create_workflow(_run("n-4"))
        store.set_status("n-4", Status.PENDING, only_from=[Status.PENDING], reset_recovery=True)
        store.set_status("n-4", Status.CANCELLED)
        store.set_status("n-4", Status.PENDING)
        notes.wait_for(
            "notification for set_status(PENDING) of a cancelled run", ("resumed", "n-4")
        )
        # Notes arrive in commit order: one for the reset would be here by now.
        resumes = [n for n in notes.seen() if n == ("resumed", "n-4")]
        _equal("notifications for resetting a PENDING run's recovery count", 1, len(resumes))
        # Engines answer handles from the finished rows they keep until this says the
        # run is gone. A delete of no run says nothing (notes arrive in commit order,
        # so one for it would come before the next delete's).
        store.delete_workflow("n-never")
        store.delete_workflow("n-2")
        notes.wait_for("notification for delete_workflow", ("deleted", "n-2"))
        _equal(
            "notifications for deleting no run",
            [],
            [n for n in notes.seen() if n[1] == "n-never"],
        )
        _equal("errors from the store called inside a subscriber", [], notes.failures)
        _expect(
            all(ok for _, ok in visible),
            "the announced change is visible in the callback",
            "all True",
            visible,
        )
    notes.unsubscribe()  # a second time: nothing happens
    store.create_workflow(_run("n-3"))
    notes.clear()
    store.send_message("n-3", "t", "unheard")
    store.finish_workflow("n-3", Status.SUCCESS, None)
    time.sleep(0.2)
    _equal("notifications after unsubscribe", [], [n for n in notes.seen() if n[1] == "n-3"])


def check_stream_records_notify(store: Store) -> None:
    """A stream's records are plain records (in the log, in order) that notify readers."""
    for wid in ("sn-1", "sn-2", "sn-3"):
        store.create_workflow(_run(wid))
    visible: list[list[Any]] = []

    def look(kind: str, key: str) -> None:
        # After the commit: a reader woken by it finds the value in the log.
        if kind == "stream" and key == "sn-1":
            visible.append(StreamCursor("tokens").take(store.load_log("sn-1")))

    def write(position: int, value: Any) -> Record:
        return Record(position, WRITE_STREAM_KIND, "tokens", Value(value))

    def close(position: int) -> Record:
        return Record(position, CLOSE_STREAM_KIND, "tokens", Value(None))

    with _Notes(store, look) as notes:
        store.record("sn-1", write(0, "Hel"))
        store.record("sn-1", _step(1))
        store.record("sn-1", write(2, "lo"))
        answers = store.record_many(
            [
                RecordWrite("sn-2", write(0, {"done": 1})),
                RecordWrite("sn-3", _step(0)),
            ]
        )
        _equal("record_many answers", ["record", "record"], _answer_kinds(answers))
        store.record("sn-2", close(1))

        def heard() -> bool:
            seen = notes.seen()
            return seen.count(("stream", "sn-1")) == 2 and seen.count(("stream", "sn-2")) >= 2

        _expect(
            _wait_for(heard),
            "a stream notification per stream record, by record() and record_many()",
            "('stream', 'sn-1') twice, ('stream', 'sn-2') twice",
            notes.seen(),
        )
        store.record("sn-1", write(2, "again"))  # a completed position: nothing written
        time.sleep(0.3)  # room for a wrong notification to arrive
        mine = notes.seen()
        _equal(
            "stream notifications of sn-1 (none for its step, none for a rewrite)",
            2,
            mine.count(("stream", "sn-1")),
        )
        _equal(
            "notifications for a run that wrote no stream record",
            [],
            [n for n in mine if n[1] == "sn-3"],
        )
        _equal("errors from the store called inside a subscriber", [], notes.failures)
        _expect(
            ["Hel"] in visible and ["Hel", "lo"] in visible,
            "what a stream notification announced is in the log",
            [["Hel"], ["Hel", "lo"]],
            visible,
        )
        cursor = StreamCursor("tokens")
        _equal("sn-2's stream", [{"done": 1}], cursor.take(store.load_log("sn-2")))
        _equal("sn-2's stream is closed", True, cursor.closed)
