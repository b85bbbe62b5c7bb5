"""The log's value types: one `Record` per position, and the outcomes they hold.

No I/O here. Stores persist these; the interpreter reads them; the testing kit
exports them as JSON.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import attrs

from replaykit import serde
from replaykit.serde import ErrorInfo

__all__ = [
    "CLOSE_STREAM_KIND",
    "STREAM_KINDS",
    "WRITE_STREAM_KIND",
    "AllOutcome",
    "ErrorInfo",
    "Failure",
    "Log",
    "Outcome",
    "RaceOutcome",
    "Record",
    "Status",
    "StreamCursor",
    "Value",
    "archive_id",
    "outcome_from_json",
    "outcome_to_json",
    "received_data",
    "received_from_data",
]


def archive_id(workflow_id: str, generation: int) -> str:
    """The id of a run's generation `generation`: the row its log is archived under
    once it continues as new (`Store.continue_workflow`), and the generation's
    `context().run_id` while it runs."""
    return f"{workflow_id}#{generation}"


class Status(enum.StrEnum):
    ENQUEUED = "ENQUEUED"
    PENDING = "PENDING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"
    PARKED = "PARKED"
    #: An earlier generation of a run that continued as new (`ContinueAsNew`): an
    #: archived row of its own, holding that generation's log; the run's id goes on.
    CONTINUED = "CONTINUED"

    @property
    def is_terminal(self) -> bool:
        return self in (Status.SUCCESS, Status.ERROR, Status.CANCELLED, Status.CONTINUED)


@attrs.frozen
class Value:
    """A recorded return value, as JSON-safe data."""

    data: Any = None


@attrs.frozen
class Failure:
    """A recorded exception."""

    error: ErrorInfo


Outcome = Value | Failure


def outcome_to_json(outcome: Outcome | None) -> Any:
    if outcome is None:
        return None
    if isinstance(outcome, Value):
        return {"value": outcome.data}
    return {"error": serde.error_info_to_json(outcome.error)}


def outcome_from_json(data: Any) -> Outcome | None:
    if data is None:
        return None
    if "value" in data:
        return Value(data["value"])
    return Failure(serde.error_info_from_json(data["error"]))


def received_data(topic: str, payload: Any) -> dict[str, Any]:
    """What the record of a `Recv` of several topics holds: the topic the message came
    on, and the message (decoded by `received_from_data` into a `Received`)."""
    return {"topic": topic, "value": payload}


def received_from_data(data: Any) -> tuple[str, Any]:
    """(topic, message) from a `Recv` of several topics' recorded data."""
    if not isinstance(data, dict) or not isinstance(data.get("topic"), str) or "value" not in data:
        raise ValueError(
            f"a Recv of several topics recorded {data!r}, not a topic and a value: the log "
            "was written by other code at this position"
        )
    return data["topic"], data["value"]


@attrs.frozen
class RaceOutcome:
    """What a `Race`'s record holds: the winner's index and its outcome.

    Losers are not recorded at all: they leave no trace. When the winner is
    itself a `Race` or an `All`, its outcome is a `Value` holding that inner
    composite's own `to_data()`, so a tree of composites is one record.
    """

    index: int
    outcome: Outcome

    def to_data(self) -> dict[str, Any]:
        return {"index": self.index, "outcome": outcome_to_json(self.outcome)}

    @classmethod
    def from_data(cls, data: Any) -> RaceOutcome:
        outcome = outcome_from_json(data["outcome"])
        if outcome is None:
            raise ValueError("a Race record names no outcome for its winner")
        return cls(int(data["index"]), outcome)


@attrs.frozen
class AllOutcome:
    """What an `All`'s record holds: every child's outcome, in argument order.

    `first_failure` is the index of the failure that decided a fail-fast `All`;
    children still running then hold `Value(None)`, never looked at. A child that
    is itself a `Race` or an `All` holds a `Value` of that composite's `to_data()`
    (a failed inner composite too: its data says so, and `first_failure` names it).
    """

    outcomes: tuple[Outcome, ...]
    first_failure: int | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "outcomes": [outcome_to_json(outcome) for outcome in self.outcomes],
            "first_failure": self.first_failure,
        }

    @classmethod
    def from_data(cls, data: Any) -> AllOutcome:
        outcomes: list[Outcome] = []
        for child in data["outcomes"]:
            outcome = outcome_from_json(child)
            outcomes.append(Value(None) if outcome is None else outcome)
        first = data.get("first_failure")
        return cls(tuple(outcomes), None if first is None else int(first))


@attrs.frozen
class Record:
    """What the log holds at one position.

    `outcome` is `None` while the command is under way: timed commands (a
    `Sleep`, a `Recv` with a timeout, a `Race` holding either) are recorded when
    they start so their deadline survives a crash, and completed later.
    """

    position: int
    kind: str
    name: str
    outcome: Outcome | None
    digest: str = ""
    call_site: str = ""
    started_at: datetime | None = None
    completed_at: datetime | None = None
    wake_at: datetime | None = None
    attempts: int = 1

    @property
    def is_pending(self) -> bool:
        return self.outcome is None

    def describe(self) -> str:
        return f"{self.kind} {self.name!r}"

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "kind": self.kind,
            "name": self.name,
            "outcome": outcome_to_json(self.outcome),
            "digest": self.digest,
            "call_site": self.call_site,
            "started_at": _iso(self.started_at),
            "completed_at": _iso(self.completed_at),
            "wake_at": _iso(self.wake_at),
            "attempts": self.attempts,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        return cls(
            position=int(data["position"]),
            kind=str(data["kind"]),
            name=str(data["name"]),
            outcome=outcome_from_json(data.get("outcome")),
            digest=str(data.get("digest") or ""),
            call_site=str(data.get("call_site") or ""),
            started_at=_from_iso(data.get("started_at")),
            completed_at=_from_iso(data.get("completed_at")),
            wake_at=_from_iso(data.get("wake_at")),
            attempts=int(data.get("attempts") or 1),
        )


# -- streams: values a run writes into its own log ---------------------------------------

#: The kinds of the records `WriteStream` and `CloseStream` take; the record's name is
#: the stream's key. Stores notify ("stream", workflow_id) after committing either.
WRITE_STREAM_KIND = "write_stream"
CLOSE_STREAM_KIND = "close_stream"
STREAM_KINDS = frozenset({WRITE_STREAM_KIND, CLOSE_STREAM_KIND})


@attrs.define
class StreamCursor:
    """Where a reader of one stream stands in a run's log; no I/O.

    `take(records)` is given the log's records from `next_position` on (as
    `load_log(since=next_position)` reads them) and answers the stream's values
    among them that the reader has not had yet, from the `start`-th value of the
    stream on. A reader feeds it each new read, so every value comes out once and
    in order, and no record is read twice. It stops at a pending record (a
    command under way): the next read starts there again. A failed write (a value
    that could not be encoded) is no value; `closed` is set at the key's first
    `close_stream` record, and nothing after it is taken.
    """

    key: str
    start: int = 0
    #: The first log position not read yet.
    next_position: int = 0
    #: How many values of the stream the records read so far hold.
    seen: int = 0
    closed: bool = False

    def take(self, records: Sequence[Record]) -> list[Any]:
        fresh: list[Any] = []
        for record in records:
            if self.closed:
                break
            if record.position < self.next_position:
                continue
            if record.outcome is None or record.position != self.next_position:
                break  # under way, or a gap the next read fills
            self.next_position = record.position + 1
            if record.name != self.key:
                continue
            if record.kind == CLOSE_STREAM_KIND:
                self.closed = True
            elif record.kind == WRITE_STREAM_KIND and isinstance(record.outcome, Value):
                if self.seen >= self.start:
                    fresh.append(record.outcome.data)
                self.seen += 1
        return fresh


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _from_iso(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


LOG_FORMAT = 1


@attrs.define
class Log(Sequence[Record]):
    """A workflow's records in position order, with enough metadata to replay it.

    `Log.from_json(log.to_json())` gives back an equal log; the JSON is what
    `replaykit workflows export` writes and `replaykit.testing.replay` reads.
    """

    records: list[Record] = attrs.field(factory=list)
    workflow_name: str = ""
    workflow_id: str = ""
    args: Any = None  # the encoded arguments, as stored with the run
    status: str = ""
    result: Outcome | None = None

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: Any) -> Any:
        return self.records[index]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def to_json(self, *, indent: int | None = 2) -> str:
        import json

        return json.dumps(
            {
                "format": LOG_FORMAT,
                "workflow_name": self.workflow_name,
                "workflow_id": self.workflow_id,
                "args": self.args,
                "status": self.status,
                "result": outcome_to_json(self.result),
                "records": [r.to_json() for r in self.records],
            },
            indent=indent,
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> Log:
        import json

        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a replaykit log: invalid JSON ({exc})") from exc
        if not isinstance(data, dict) or "records" not in data:
            raise ValueError("not a replaykit log: expected an object with a 'records' list")
        if data.get("format", LOG_FORMAT) != LOG_FORMAT:
            raise ValueError(
                f"log format {data.get('format')!r} is not supported by this replaykit "
                f"(it reads format {LOG_FORMAT})"
            )
        try:
            records = [Record.from_json(r) for r in data["records"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a replaykit log: bad record ({exc!r})") from exc
        for index, record in enumerate(records):
            if record.position != index:
                raise ValueError(
                    f"not a replaykit log: record {index} has position {record.position}; "
                    "positions must run 0, 1, 2, ... without gaps"
                )
        return cls(
            records=records,
            workflow_name=str(data.get("workflow_name") or ""),
            workflow_id=str(data.get("workflow_id") or ""),
            args=data.get("args"),
            status=str(data.get("status") or ""),
            result=outcome_from_json(data.get("result")),
        )

    @classmethod
    def of(cls, records: Sequence[Record], **meta: Any) -> Log:
        return cls(records=list(records), **meta)
