"""replaykit/log.py: the log's value types, their JSON form, and a stream reader's cursor."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from replaykit.log import (
    CLOSE_STREAM_KIND,
    WRITE_STREAM_KIND,
    AllOutcome,
    Failure,
    Log,
    RaceOutcome,
    Record,
    Status,
    StreamCursor,
    Value,
    archive_id,
    outcome_from_json,
    outcome_to_json,
    received_data,
    received_from_data,
)
from replaykit.serde import ErrorInfo

T0 = datetime(2030, 1, 1, tzinfo=UTC)
BOOM = Failure(ErrorInfo("shop", "Declined", "no funds", ["no funds"], "Traceback..."))


def test_terminal_statuses_are_those_a_run_never_leaves_by_itself() -> None:
    assert {s for s in Status if s.is_terminal} == {
        Status.SUCCESS,
        Status.ERROR,
        Status.CANCELLED,
        Status.CONTINUED,
    }


def test_an_archived_generation_has_an_id_of_its_own() -> None:
    assert archive_id("r-1", 3) == "r-1#3"


@pytest.mark.parametrize("outcome", [None, Value(None), Value({"a": [1]}), BOOM])
def test_outcomes_round_trip_through_json(outcome: Value | Failure | None) -> None:
    data = outcome_to_json(outcome)
    assert outcome_from_json(json.loads(json.dumps(data))) == outcome


def test_composite_outcomes_round_trip_through_their_data() -> None:
    race = RaceOutcome(1, BOOM)
    assert RaceOutcome.from_data(race.to_data()) == race
    every = AllOutcome((Value(1), BOOM), first_failure=1)
    assert AllOutcome.from_data(every.to_data()) == every
    with pytest.raises(ValueError, match="names no outcome for its winner"):
        RaceOutcome.from_data({"index": 0, "outcome": None})
    # A child still running when a fail-fast All ended holds Value(None).
    assert AllOutcome.from_data({"outcomes": [None]}).outcomes == (Value(None),)


def test_a_recv_of_several_topics_records_the_topic_and_the_message() -> None:
    assert received_from_data(received_data("paid", {"card": "visa"})) == (
        "paid",
        {"card": "visa"},
    )
    with pytest.raises(ValueError, match="written by other code at this position"):
        received_from_data({"value": 1})


def test_a_record_round_trips_through_json_and_describes_itself() -> None:
    record = Record(
        2,
        "step",
        "charge",
        BOOM,
        digest="d",
        call_site="shop.py:9",
        started_at=T0,
        completed_at=T0 + timedelta(seconds=1),
        attempts=3,
    )
    assert Record.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert record.describe() == "step 'charge'" and not record.is_pending
    sparse = Record.from_json({"position": 0, "kind": "sleep", "name": "sleep"})
    assert sparse == Record(0, "sleep", "sleep", None) and sparse.is_pending


def test_a_log_round_trips_through_json() -> None:
    log = Log.of(
        [Record(0, "step", "a", Value(1)), Record(1, "recv", "go", None)],
        workflow_name="checkout",
        workflow_id="r-1",
        args={"args": [1], "kwargs": {}},
        status="PENDING",
    )
    again = Log.from_json(log.to_json())
    assert again == log and len(again) == 2 and again[1].name == "go"
    assert [r.position for r in again] == [0, 1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "invalid JSON"),
        ("[]", "expected an object with a 'records' list"),
        ('{"format": 9, "records": []}', "log format 9 is not supported"),
        ('{"records": [{"kind": "step"}]}', "bad record"),
        (
            '{"records": [{"position": 1, "kind": "step", "name": "a"}]}',
            "record 0 has position 1",
        ),
    ],
)
def test_what_is_not_a_log_is_refused_saying_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Log.from_json(text)


def _write(position: int, key: str, value: object) -> Record:
    return Record(position, WRITE_STREAM_KIND, key, Value(value))


def test_a_stream_cursor_hands_out_each_value_once_in_order() -> None:
    cursor = StreamCursor("progress")
    records = [
        _write(0, "progress", 10),
        Record(1, "step", "work", Value(None)),
        _write(2, "other", "x"),
        _write(3, "progress", 20),
        Record(4, "step", "more", None),  # under way: the next read starts here
    ]
    assert cursor.take(records) == [10, 20]
    assert cursor.next_position == 4
    assert cursor.take(records) == []  # nothing read twice
    later = [
        Record(4, "step", "more", Value(None)),
        _write(5, "progress", 30),
        Record(6, CLOSE_STREAM_KIND, "progress", Value(None)),
        _write(7, "progress", 40),
    ]
    assert cursor.take(later) == [30]
    assert cursor.closed and cursor.seen == 3


def test_a_stream_cursor_may_start_past_the_first_values_and_stops_at_a_gap() -> None:
    cursor = StreamCursor("progress", start=1)
    assert cursor.take([_write(0, "progress", "a"), _write(1, "progress", "b")]) == ["b"]
    assert cursor.take([_write(3, "progress", "d")]) == []  # position 2 not read yet
    assert cursor.next_position == 2
