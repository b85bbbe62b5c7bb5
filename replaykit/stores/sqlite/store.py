"""`SqliteStore`: the embedded default store, one SQLite file in WAL mode.

One writer connection, guarded by a lock, carries every write as a
`BEGIN IMMEDIATE` transaction: SQLite allows one writer at a time anyway, and
taking the write lock up front means a transaction never fails half-way on a
lock it could not upgrade. Writes that arrive while a transaction is under way
share the next one (group commit), each in a savepoint of its own. Reads go to
a small pool of reader connections; in WAL mode they see the last committed
state without waiting for the writer.

Datetimes are stored as integer microseconds since the Unix epoch (UTC): exact,
compact, and they sort the way the instants do. JSON values are stored as text.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import attrs

from replaykit import serde
from replaykit.errors import RecordConflict, StoreError, StoreUnavailable, WorkflowNotFound
from replaykit.log import STREAM_KINDS, Outcome, Record, Status, outcome_to_json
from replaykit.stores import _beats as beats
from replaykit.stores._checks import (
    check_filter,
    check_log_limit,
    check_names,
    check_record,
    check_schedule_specs,
    check_write,
    refused_writes,
    storable_error,
)
from replaykit.stores._families import Member, family_query, moving
from replaykit.stores._finish import checked_finish, same_record, unlike_error
from replaykit.stores._generations import (
    ALREADY_CONTINUED,
    FIRST_INPUTS_ON_CONTINUE,
    archived_generation,
    check_continue_args,
    continue_refusal,
    id_taken,
    next_generation,
    with_first_inputs,
)
from replaykit.stores._group import FALL_BACK, GroupCommit, Slot
from replaykit.stores._holds import ExecutorHold, FileHolds, LocalHolds
from replaykit.stores._late import check_late, check_late_record, late_gap
from replaykit.stores._many import (
    Answers,
    answered,
    finishes_from_the_batch,
    finishes_of,
    from_the_batch,
    write_one_by_one,
    writes_of,
)
from replaykit.stores._rows import (
    RECORD_FIELDS,
    WORKFLOW_FIELDS,
    claimed,
    decoded_json,
    decoders,
    event_value,
    inputs_value,
    listed,
    message_payload,
    outcome_value,
    record_from,
    shown,
    workflow_from,
)
from replaykit.stores._rules import (
    batch_of,
    check_batch_dedup,
    check_recordable,
    claim_room,
    duplicate_dedup,
    first_of_each_id,
    no_run_for_events,
    replaces_stored,
    stamped_for_batch,
    stamped_for_create,
    stays_pending,
)
from replaykit.stores._sql import (
    RECORD_COLUMNS,
    WORKFLOW_COLUMNS,
    Dialect,
    counting,
    listing,
    log_range,
)
from replaykit.stores._subscribers import Subscribers
from replaykit.stores.base import (
    ClaimLimits,
    EventWrite,
    FinishWrite,
    Message,
    OutgoingMessage,
    RecordWrite,
    ScheduleSpec,
    ScheduleState,
    WorkflowFilter,
    WorkflowRow,
)

__all__ = ["SqliteStore"]

_log = logging.getLogger("replaykit.stores")

_T = TypeVar("_T")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")

# Each migration is a list of statements (not a script): `executescript` would
# commit the surrounding BEGIN IMMEDIATE, and the version bump must commit with
# the schema change it describes.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """
        CREATE TABLE workflows (
            workflow_id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            inputs TEXT,
            result TEXT,
            executor_id TEXT NOT NULL,
            app_version TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            parent_id TEXT,
            queue TEXT,
            priority INTEGER NOT NULL DEFAULT 0,
            dedup_id TEXT,
            recovery_attempts INTEGER NOT NULL DEFAULT 0,
            wake_at INTEGER,
            error TEXT NOT NULL DEFAULT '',
            started_at INTEGER
        )
        """,
        "CREATE INDEX workflows_by_created ON workflows (created_at, workflow_id)",
        "CREATE INDEX workflows_by_status ON workflows (status, created_at)",
        "CREATE INDEX workflows_by_executor ON workflows (executor_id, app_version, status)",
        "CREATE INDEX workflows_by_parent ON workflows (parent_id) WHERE parent_id IS NOT NULL",
        """
        CREATE INDEX workflows_by_queue ON workflows (queue, status, priority, created_at)
        WHERE queue IS NOT NULL
        """,
        """
        CREATE INDEX workflows_by_queue_start ON workflows (queue, started_at)
        WHERE queue IS NOT NULL
        """,
        """
        CREATE INDEX workflows_by_dedup ON workflows (queue, dedup_id)
        WHERE dedup_id IS NOT NULL
        """,
        """
        CREATE TABLE heartbeats (
            executor_id TEXT PRIMARY KEY,
            app_version TEXT NOT NULL,
            seen_at INTEGER NOT NULL
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE records (
            workflow_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            outcome TEXT,
            digest TEXT NOT NULL,
            call_site TEXT NOT NULL,
            started_at INTEGER,
            completed_at INTEGER,
            wake_at INTEGER,
            attempts INTEGER NOT NULL,
            PRIMARY KEY (workflow_id, position)
        ) WITHOUT ROWID
        """,
        # AUTOINCREMENT so an id is never reused after its message is consumed:
        # a runtime holding a peeked id must not consume a newer message by it.
        """
        CREATE TABLE messages (
            message_id INTEGER PRIMARY KEY AUTOINCREMENT,
            workflow_id TEXT NOT NULL,
            topic TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at INTEGER NOT NULL
        )
        """,
        "CREATE INDEX messages_inbox ON messages (workflow_id, topic, message_id)",
        """
        CREATE TABLE send_keys (
            workflow_id TEXT NOT NULL,
            key TEXT NOT NULL,
            PRIMARY KEY (workflow_id, key)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE events (
            workflow_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (workflow_id, key)
        ) WITHOUT ROWID
        """,
    ),
    # 2: a record that set an event keeps the key and value it set, so a fork
    # that copies the record sets the event too (events hold the latest only).
    (
        "ALTER TABLE records ADD COLUMN event_key TEXT",
        "ALTER TABLE records ADD COLUMN event_value TEXT",
    ),
    # 3: a keyed send remembers the call that used its key, so a retry of that
    # call after a lost answer is told its message was delivered.
    ("ALTER TABLE send_keys ADD COLUMN call_id TEXT",),
    # 4: schedules' durable state, shared by every engine on the file: the
    # definition last registered, paused or not, and requests not yet carried out.
    (
        """
        CREATE TABLE schedules (
            name TEXT PRIMARY KEY,
            workflow_name TEXT NOT NULL,
            cron TEXT NOT NULL,
            tz TEXT,
            queue TEXT,
            backfill INTEGER NOT NULL DEFAULT 0,
            paused INTEGER NOT NULL DEFAULT 0,
            updated_at INTEGER NOT NULL,
            trigger_at INTEGER,
            backfill_start INTEGER,
            backfill_end INTEGER
        ) WITHOUT ROWID
        """,
    ),
    # 5: the W3C trace context current where a run was created, and where a
    # message was sent, so that OpenTelemetry spans join their starter's trace.
    (
        "ALTER TABLE workflows ADD COLUMN trace_context TEXT",
        "ALTER TABLE messages ADD COLUMN trace_context TEXT",
    ),
    # 6: a fork remembers its source run and the position it was forked at, so
    # a run's page can say where it came from and list its forks.
    (
        "ALTER TABLE workflows ADD COLUMN forked_from TEXT",
        "ALTER TABLE workflows ADD COLUMN fork_position INTEGER",
        "CREATE INDEX workflows_by_fork_source ON workflows (forked_from) "
        "WHERE forked_from IS NOT NULL",
    ),
    # 7: deadlines. The instant a run is cancelled as timed out, and the timeout
    # it was given (a queued run's deadline is set from it when it is claimed).
    (
        "ALTER TABLE workflows ADD COLUMN deadline INTEGER",
        "ALTER TABLE workflows ADD COLUMN timeout_seconds REAL",
    ),
    # 8: continue-as-new. The live run counts its generations, and each archived
    # generation names the run it continued as, indexed for listing a run's generations.
    (
        "ALTER TABLE workflows ADD COLUMN generation INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE workflows ADD COLUMN continued_as TEXT",
        "CREATE INDEX workflows_by_continued_as ON workflows (continued_as, generation) "
        "WHERE continued_as IS NOT NULL",
    ),
    # 9: the inputs a run that continued as new was created with, which a start
    # re-issued under its id compares with; runs continued before take them from
    # their archived generation 0 where it is still kept.
    (
        "ALTER TABLE workflows ADD COLUMN first_inputs TEXT",
        "UPDATE workflows SET first_inputs = (SELECT a.inputs FROM workflows AS a "
        "WHERE a.workflow_id = workflows.workflow_id || '#0' "
        "AND a.continued_as = workflows.workflow_id) WHERE generation > 0",
    ),
    # 10: what each engine runs, with its heartbeat: the workflows it registered
    # and the queues it drains (replaykit/stores/_beats.py); NULL from older engines.
    ("ALTER TABLE heartbeats ADD COLUMN registered TEXT",),
)

_WORKFLOW_COLUMNS = WORKFLOW_COLUMNS
_RECORD_COLUMNS = RECORD_COLUMNS

# The common case is this one statement. It inserts a new position only right
# after the last one, completes a pending one (or writes a retried step's next
# back-off over it: same kind and name, more attempts; _rules.replaces_stored),
# and leaves a completed one alone; and only into a PENDING run of the right
# executor whose deadline is already `wake_at` (changes() = 0 sends the caller
# down the slow path, which says why, or moves the deadline and tries again).
# The run's row is only read, so a commit writes one page, as a bare insert would.
_RECORD_WRITE_TEMPLATE = """
INSERT INTO records (workflow_id, position, kind, name, outcome, digest, call_site,
                     started_at, completed_at, wake_at, attempts)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
WHERE EXISTS (
        SELECT 1 FROM workflows
        WHERE workflow_id = ?1 AND status = 'PENDING'
          AND (?12 IS NULL OR executor_id = ?12){deadline})
  AND (?2 = 0 OR EXISTS (SELECT 1 FROM records WHERE workflow_id = ?1 AND position = ?2 - 1))
ON CONFLICT (workflow_id, position) DO UPDATE SET
    kind = excluded.kind, name = excluded.name, outcome = excluded.outcome,
    digest = excluded.digest, call_site = excluded.call_site,
    started_at = excluded.started_at, completed_at = excluded.completed_at,
    wake_at = excluded.wake_at, attempts = excluded.attempts
WHERE records.outcome IS NULL AND (excluded.outcome IS NOT NULL OR (
    excluded.kind = records.kind AND excluded.name = records.name
    AND excluded.attempts > records.attempts))
"""
_WRITE_RECORD = _RECORD_WRITE_TEMPLATE.format(deadline=" AND wake_at IS ?13")
# A finish's last record: the same gates but the deadline, which the finish clears.
_WRITE_LAST_RECORD = _RECORD_WRITE_TEMPLATE.format(deadline="")
_FINISH = """
UPDATE workflows SET status = ?1, result = ?2, error = ?3, updated_at = ?4, wake_at = NULL
WHERE workflow_id = ?5 AND status = 'PENDING' AND (?6 IS NULL OR executor_id = ?6)
"""
# A late record (Store.record_late): the gates are checked in Python on the locked
# run; a pending record there is completed, a completed one never written over.
_LAND_LATE = f"""
INSERT INTO records (workflow_id, {_RECORD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (workflow_id, position) DO UPDATE SET
    kind = excluded.kind, name = excluded.name, outcome = excluded.outcome,
    digest = excluded.digest, call_site = excluded.call_site,
    started_at = excluded.started_at, completed_at = excluded.completed_at,
    wake_at = excluded.wake_at, attempts = excluded.attempts
WHERE records.outcome IS NULL
"""
_INSERT_RECORD = f"""
INSERT INTO records (workflow_id, {_RECORD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_SELECT_RECORD = f"SELECT {_RECORD_COLUMNS} FROM records WHERE workflow_id = ? AND position = ?"
_SELECT_LOG = (
    f"SELECT {_RECORD_COLUMNS} FROM records WHERE workflow_id = ? AND position >= ? "
    "ORDER BY position"
)
_SELECT_WORKFLOW = f"SELECT {_WORKFLOW_COLUMNS} FROM workflows WHERE workflow_id = ?"
_INSERT_WORKFLOW = f"""
INSERT INTO workflows ({_WORKFLOW_COLUMNS})
VALUES ({", ".join("?" * len(_WORKFLOW_COLUMNS.split(",")))})
ON CONFLICT (workflow_id) DO NOTHING
"""
# The live run's row as continue_workflow leaves it: only these columns change,
# so columns other features add (and this statement does not name) are kept.
_CONTINUE_LIVE = (
    """
UPDATE workflows SET inputs = ?1, generation = generation + 1, wake_at = NULL,
    recovery_attempts = 0, error = '', started_at = ?2, updated_at = ?2,
    """
    + FIRST_INPUTS_ON_CONTINUE
    + """
WHERE workflow_id = ?3 AND status = 'PENDING' AND generation = ?4
"""
)
_SELECT_FAMILY = family_query("workflows", "?")
# One member of a family onto a version (`move_family`): a run waiting to be claimed
# keeps its empty executor, a PENDING one starts its recovery count afresh.
_MOVE_MEMBER = """
UPDATE workflows SET app_version = ?1, updated_at = ?2,
    recovery_attempts = CASE WHEN ?3 = 'PENDING' THEN 0 ELSE recovery_attempts END,
    executor_id = CASE WHEN ?4 IS NOT NULL AND ?5 != 'ENQUEUED' THEN ?4 ELSE executor_id END
WHERE workflow_id = ?6
"""
# A fork's copied records take what their originals set; then the fork gets,
# for each key, the value its last record setting that key set.
_COPY_SET_BY = """
UPDATE records AS f SET event_key = s.event_key, event_value = s.event_value
FROM records AS s
WHERE f.workflow_id = ?1 AND s.workflow_id = ?2 AND s.position = f.position
  AND s.kind = f.kind AND s.digest = f.digest AND s.event_key IS NOT NULL
"""
_SET_COPIED_EVENTS = """
INSERT INTO events (workflow_id, key, value)
SELECT workflow_id, event_key, event_value FROM records r
WHERE workflow_id = ?1 AND event_key IS NOT NULL AND position = (
    SELECT max(position) FROM records l WHERE l.workflow_id = ?1 AND l.event_key = r.event_key)
ON CONFLICT (workflow_id, key) DO UPDATE SET value = excluded.value
"""
# A claimed run's timeout starts at the claim (bound twice, in microseconds); an
# earlier deadline of its own holds.
_CLAIMED_DEADLINE = (
    "CASE WHEN timeout_seconds IS NULL THEN deadline "
    "ELSE min(coalesce(deadline, ? + CAST(timeout_seconds * 1000000 AS INTEGER)), "
    "? + CAST(timeout_seconds * 1000000 AS INTEGER)) END"
)
_SELECT_DEDUP_HOLDER = """
SELECT workflow_id FROM workflows WHERE queue = ? AND dedup_id = ?
AND status IN ('ENQUEUED', 'PENDING') ORDER BY created_at, workflow_id LIMIT 1
"""


class _BodyFailed(Exception):
    """Carries the user's exception from a Transaction body past our error mapping."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


class _Unchanged(Exception):
    """Roll the transaction back and hand `value` to the caller."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


def _first(cursor: sqlite3.Cursor) -> Any:
    """The first row, with the statement run to its end: a half-read SELECT would
    keep its connection's read snapshot open, and later reads would see old data."""
    rows = cursor.fetchall()
    return rows[0] if rows else None


def _now() -> datetime:
    return datetime.now(UTC)


def _to_micros(value: datetime | None) -> int | None:
    if value is None:
        return None
    if value.tzinfo is None:  # the protocol's datetimes are UTC; be lenient with naive ones
        value = value.replace(tzinfo=UTC)
    return (value - _EPOCH) // _MICROSECOND


def _from_micros(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + timedelta(microseconds=value)


def _dump(data: Any) -> str:
    return serde.dumps(data)


def _dump_outcome(outcome: Outcome | None) -> str | None:
    return None if outcome is None else serde.dumps(outcome_to_json(outcome))


def _load_outcome(text: str | None) -> Outcome | None:
    return None if text is None else outcome_value(decoded_json(text))


def _load_inputs(text: str | None) -> Any:
    return None if text is None else inputs_value(decoded_json(text))


def _record_params(workflow_id: str, record: Record) -> tuple[Any, ...]:
    return (
        workflow_id,
        record.position,
        record.kind,
        record.name,
        _dump_outcome(record.outcome),
        record.digest,
        record.call_site,
        _to_micros(record.started_at),
        _to_micros(record.completed_at),
        _to_micros(record.wake_at),
        record.attempts,
    )


# JSON is stored as text here: it may not even parse.
_RECORD_DECODERS = decoders(
    _RECORD_COLUMNS,
    RECORD_FIELDS,
    {
        "outcome": _load_outcome,
        **dict.fromkeys(("started_at", "completed_at", "wake_at"), _from_micros),
    },
)


def _record_from(row: Sequence[Any], workflow_id: str) -> Record:
    return record_from(_RECORD_DECODERS, row, workflow_id)


def _workflow_params(row: WorkflowRow) -> tuple[Any, ...]:
    return (
        row.workflow_id,
        row.name,
        Status(row.status).value,
        None if row.inputs is None else _dump(row.inputs),
        _dump_outcome(row.result),
        row.executor_id,
        row.app_version,
        _to_micros(row.created_at),
        _to_micros(row.updated_at),
        row.parent_id,
        row.queue,
        row.priority,
        row.dedup_id,
        row.recovery_attempts,
        _to_micros(row.wake_at),
        row.error,
        _to_micros(row.started_at),
        row.trace_context,
        row.forked_from,
        row.fork_position,
        _to_micros(row.deadline),
        row.timeout,
        row.generation,
        row.continued_as,
    )


_WORKFLOW_DECODERS = decoders(
    _WORKFLOW_COLUMNS,
    WORKFLOW_FIELDS,
    {
        "status": Status,
        "inputs": _load_inputs,
        "result": _load_outcome,
        **dict.fromkeys(
            ("created_at", "updated_at", "wake_at", "started_at", "deadline"), _from_micros
        ),
    },
)


def _workflow_from(row: Sequence[Any], has_log: bool | None = None) -> WorkflowRow:
    """The run, or `DamagedRow` (a `StoreError`) naming it and what does not decode."""
    return workflow_from(_WORKFLOW_DECODERS, row, has_log)


def _claimed_from(row: Sequence[Any]) -> WorkflowRow:
    return _workflow_from(row, bool(row[-1]))


def _gap_error(name: str, workflow_id: str, position: int, length: int) -> RecordConflict:
    return RecordConflict(
        f"workflow {name!r} (id {workflow_id!r}): cannot record position {position}; "
        f"the log ends at {length}"
    )


def _consumed_error(workflow_id: str, message_ids: Sequence[int]) -> RecordConflict:
    return RecordConflict(
        f"workflow id {workflow_id!r}: message(s) {list(message_ids)} already consumed"
    )


def _no_target_error(workflow_id: str) -> WorkflowNotFound:
    return WorkflowNotFound(
        f"cannot send to workflow id {workflow_id!r}: no such run. Start it first, or check the id"
    )


def _statuses_in(statuses: Sequence[Status]) -> tuple[str, list[Any]]:
    if not statuses:
        return "0", []
    return f"status IN ({', '.join('?' for _ in statuses)})", [s.value for s in statuses]


# LIMIT -1 is SQLite for "no limit"; OFFSET needs a LIMIT before it.
_DIALECT = Dialect("?", lambda at: _to_micros(at), -1, _statuses_in)


def _filter_sql(where: WorkflowFilter) -> tuple[str, list[Any]]:
    return listing(where, "workflows", _DIALECT)


class SqliteStore:
    """The Store protocol on one SQLite database file; safe to share between threads.

    `synchronous` is SQLite's `PRAGMA synchronous` for the writer: `NORMAL`
    (the default) survives a process crash but may lose the last commits on a
    power cut; `FULL` survives that too, at the cost of an fsync per commit.
    `busy_timeout_ms` bounds how long a write waits for another process.
    """

    #: Notes reach only the engines of this process: a run deleted from another
    #: process is not heard of, so engines ask the file (see `Engine.handle`).
    notes_reach_every_sharer = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 5000,
    ) -> None:
        level = synchronous.upper()
        if level not in _SYNCHRONOUS:
            raise ValueError(
                f"synchronous must be one of {', '.join(_SYNCHRONOUS)} (SQLite's PRAGMA "
                f"synchronous), not {synchronous!r}"
            )
        if busy_timeout_ms < 0:
            raise ValueError(f"busy_timeout_ms must be >= 0, not {busy_timeout_ms}")
        self._path = os.fspath(path)
        self._synchronous = level
        self._busy_timeout_ms = busy_timeout_ms
        # A private in-memory database exists only inside its one connection,
        # so readers cannot have connections of their own.
        self._in_memory = self._path == ":memory:" or self._path == ""
        # A database in memory or behind a URI has no file to lock beside it:
        # its executor holds exclude engines of this process only.
        self._holds: LocalHolds | FileHolds = (
            LocalHolds()
            if self._in_memory or self._path.startswith("file:")
            else FileHolds(os.path.abspath(self._path))
        )
        self._write_lock = threading.RLock()
        self._inside_body = threading.local()
        self._group: GroupCommit[Callable[[sqlite3.Connection], Any]] = GroupCommit(
            self._write_batch, write_one=self._write_alone
        )
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._all_readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._subscribers = Subscribers()
        self._closed = False
        self._writer = self._connect()
        try:
            self._configure_writer()
            self._migrate()
        except BaseException:
            self._writer.close()
            raise

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"

    @property
    def path(self) -> str:
        return self._path

    # -- connections ---------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._path,
                timeout=self._busy_timeout_ms / 1000,
                isolation_level=None,  # we issue BEGIN IMMEDIATE / COMMIT ourselves
                check_same_thread=False,  # every use is serialised by a lock or the pool
                cached_statements=256,
            )
        except sqlite3.OperationalError as exc:
            folder = os.path.dirname(self._path)
            if not self._in_memory and folder and not os.path.isdir(folder):
                raise StoreUnavailable(
                    f"cannot open SQLite database {self._path!r}: the directory {folder!r} "
                    "does not exist; create it first"
                ) from exc
            raise StoreUnavailable(f"cannot open SQLite database {self._path!r}: {exc}") from exc
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        return conn

    def _configure_writer(self) -> None:
        conn = self._writer
        if not self._in_memory:
            mode = self._switch_to_wal(conn)
            if str(mode).lower() != "wal":
                _log.warning(
                    "SQLite database %s could not switch to WAL mode (it is in %s mode); "
                    "readers will wait for writers",
                    self._path,
                    mode,
                )
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")

    def _switch_to_wal(self, conn: sqlite3.Connection) -> Any:
        """`PRAGMA journal_mode = WAL`, waiting out another process doing the same.

        Two processes opening a new database at once both switch it to WAL;
        SQLite does not call the busy handler for that switch, so the loser
        sees "database is locked" at once. Retry within `busy_timeout_ms`.
        """
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        delay = 0.005
        while True:
            try:
                return _first(conn.execute("PRAGMA journal_mode = WAL"))[0]
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise StoreUnavailable(
                        f"cannot switch SQLite database {self._path!r} to WAL mode: {exc}"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    def journal_mode(self) -> str:
        """SQLite's journal mode for this database (`wal` for a file database)."""
        with self._read() as conn:
            return str(_first(conn.execute("PRAGMA journal_mode"))[0])

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        self._check_open()
        if self._in_memory:
            with self._write_lock:
                yield self._writer
            return
        try:
            conn = self._readers.get_nowait()
        except queue.Empty:
            conn = self._connect()
            with self._readers_lock:
                self._all_readers.append(conn)
        try:
            yield conn
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(f"SQLite database {self._path!r} failed a read: {exc}") from exc
        finally:
            self._readers.put(conn)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self!r} is closed")

    def _check_not_in_body(self) -> None:
        if getattr(self._inside_body, "active", False):
            raise StoreError(
                "the store was called from inside a Transaction body on the same "
                "thread; use the connection the body was given instead"
            )

    def _write(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `body` in a BEGIN IMMEDIATE transaction; `_Unchanged` rolls back quietly.

        Concurrent writers share transactions (group commit): each body runs
        inside a savepoint of its own, so one body's failure or `_Unchanged`
        undoes only its own writes, and all of them commit together.
        """
        self._check_open()
        self._check_not_in_body()
        outcome = self._group.submit(body)
        if outcome is FALL_BACK:
            return self._write_alone(body)
        return outcome  # type: ignore[no-any-return]

    def _write_batch(self, slots: Sequence[Slot[Callable[[sqlite3.Connection], Any]]]) -> None:
        """Group commit's batch writer: every body in one transaction, a savepoint each."""
        if len(slots) == 1:
            try:
                slots[0].set_result(self._write_alone(slots[0].item))
            except Exception as exc:
                slots[0].set_error(exc)
            return
        with self._write_lock:
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                error = self._locked_error(exc)
                for slot in slots:
                    slot.set_error(error)
                return
            try:
                for slot in slots:
                    conn.execute("SAVEPOINT one_write")
                    try:
                        slot.set_result(slot.item(conn))
                    except _Unchanged as unchanged:
                        conn.execute("ROLLBACK TO one_write")
                        slot.set_result(unchanged.value)
                    except sqlite3.Error:
                        # The database itself failed (I/O, disk full): SQLite may
                        # have rolled the whole transaction back. Start over,
                        # each write alone, where its failure is its own.
                        raise
                    except Exception as exc:
                        conn.execute("ROLLBACK TO one_write")
                        slot.set_error(exc)
                    conn.execute("RELEASE one_write")
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback(conn)
                _log.debug(
                    "group commit of %d writes failed (%s); writing them alone", len(slots), exc
                )
                for slot in slots:
                    slot.fall_back()
            except BaseException:
                self._rollback(conn)
                raise

    def _locked_error(self, exc: sqlite3.OperationalError) -> StoreUnavailable:
        return StoreUnavailable(
            f"SQLite database {self._path!r} stayed locked by another writer for "
            f"{self._busy_timeout_ms} ms ({exc}); raise busy_timeout_ms or retry"
        )

    def _write_alone(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `body` in a BEGIN IMMEDIATE transaction of its own."""
        self._check_open()
        with self._write_lock:
            conn = self._writer
            if conn.in_transaction:
                raise StoreError(
                    "the store was called from inside a Transaction body on the same "
                    "thread; use the connection the body was given instead"
                )
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise self._locked_error(exc) from exc
            try:
                result = body(conn)
                conn.execute("COMMIT")
            except _Unchanged as unchanged:
                conn.execute("ROLLBACK")
                return unchanged.value  # type: ignore[no-any-return]
            except _BodyFailed as failed:
                self._rollback(conn)
                raise failed.error.with_traceback(failed.error.__traceback__) from None
            except sqlite3.OperationalError as exc:
                # Disk full, I/O error, a failed COMMIT: never leave the writer
                # inside a transaction that the next write would trip over.
                self._rollback(conn)
                raise StoreUnavailable(
                    f"SQLite database {self._path!r} failed a write: {exc}"
                ) from exc
            except BaseException:
                self._rollback(conn)
                raise
            return result

    def _rollback(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                _log.exception("SQLite database %s could not roll back", self._path)

    def _migrate(self) -> None:
        def apply(conn: sqlite3.Connection) -> None:
            version = _first(conn.execute("PRAGMA user_version"))[0]
            if version > len(_MIGRATIONS):
                raise StoreError(
                    f"SQLite database {self._path!r} has schema version {version}, but this "
                    f"replaykit knows versions up to {len(_MIGRATIONS)}; upgrade replaykit"
                )
            for number in range(version, len(_MIGRATIONS)):
                for statement in _MIGRATIONS[number]:
                    conn.execute(statement)
            if version != len(_MIGRATIONS):
                conn.execute(f"PRAGMA user_version = {len(_MIGRATIONS)}")

        self._write(apply)

    def schema_status(self) -> tuple[int, int]:
        """(the database's schema version, the latest version this replaykit knows)."""
        with self._read() as conn:
            return _first(conn.execute("PRAGMA user_version"))[0], len(_MIGRATIONS)

    # -- notifications -------------------------------------------------------

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        return self._subscribers.add(callback)

    def _notify(self, notes: Sequence[tuple[str, str]]) -> None:
        for kind, key in notes:
            self._subscribers.deliver(kind, key)

    # -- runs ----------------------------------------------------------------

    def create_workflow(
        self, row: WorkflowRow, *, records: Sequence[Record] = (), fork_of: str | None = None
    ) -> tuple[WorkflowRow, bool]:
        stored = stamped_for_create(row)
        for record in records:
            check_record(row.workflow_id, record)
        if fork_of is not None:
            check_names(fork_of)
        params = _workflow_params(stored)
        record_params = [_record_params(row.workflow_id, r) for r in records]
        deduplicated = row.queue is not None and row.dedup_id is not None

        # (the row, whether created, whether the fork got events)
        def insert(conn: sqlite3.Connection) -> tuple[WorkflowRow, bool, bool]:
            if deduplicated:
                existing = _first(conn.execute(_SELECT_WORKFLOW, (row.workflow_id,)))
                if existing is not None:
                    raise _Unchanged((shown(_workflow_from, existing), False, False))
                holder = _first(conn.execute(_SELECT_DEDUP_HOLDER, (row.queue, row.dedup_id)))
                if holder is not None:
                    raise duplicate_dedup(stored, holder[0])
            if conn.execute(_INSERT_WORKFLOW, params).rowcount == 0:
                existing = _first(conn.execute(_SELECT_WORKFLOW, (row.workflow_id,)))
                raise _Unchanged((shown(_workflow_from, existing), False, False))
            got_events = False
            if record_params:
                conn.executemany(_INSERT_RECORD, record_params)
                if fork_of is not None:
                    conn.execute(_COPY_SET_BY, (row.workflow_id, fork_of))
                    got_events = conn.execute(_SET_COPIED_EVENTS, (row.workflow_id,)).rowcount > 0
            return stored, True, got_events

        found, created, got_events = self._write(insert)
        if created and stored.status is Status.ENQUEUED and stored.queue is not None:
            self._notify([("enqueued", stored.queue)])
        if got_events:
            self._notify([("event", row.workflow_id)])
        return with_first_inputs([(found, created)], self._first_inputs)[0]

    def _first_inputs(self, workflow_ids: list[str]) -> dict[str, Any]:
        """The first inputs kept for these runs (those that continued as new)."""
        marks = ", ".join("?" * len(workflow_ids))
        with self._read() as conn:
            rows = conn.execute(
                "SELECT workflow_id, first_inputs FROM workflows WHERE first_inputs IS NOT NULL "
                f"AND workflow_id IN ({marks})",
                workflow_ids,
            ).fetchall()
        found: dict[str, Any] = {}
        for workflow_id, text in rows:
            try:
                found[workflow_id] = _load_inputs(text)
            except Exception:
                continue  # unreadable: the start is compared with the current inputs only
        return found

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        batch = stamped_for_batch(batch_of(rows))
        if not batch:
            return []
        firsts = first_of_each_id(batch)

        def insert(conn: sqlite3.Connection) -> dict[str, WorkflowRow]:
            # Inside BEGIN IMMEDIATE nobody else writes: the ids found missing
            # here are the ones the insert creates.
            existing: dict[str, WorkflowRow] = {}
            for row in firsts:
                found = _first(conn.execute(_SELECT_WORKFLOW, (row.workflow_id,)))
                if found is not None:
                    existing[row.workflow_id] = shown(_workflow_from, found)

            def live_holder(row: WorkflowRow) -> str | None:
                holder = _first(conn.execute(_SELECT_DEDUP_HOLDER, (row.queue, row.dedup_id)))
                return None if holder is None else str(holder[0])

            check_batch_dedup(
                firsts,
                is_new=lambda workflow_id: workflow_id not in existing,
                live_holder=live_holder,
            )
            new = [_workflow_params(row) for row in firsts if row.workflow_id not in existing]
            if not new:
                raise _Unchanged(existing)
            inserted = conn.executemany(_INSERT_WORKFLOW, new).rowcount
            if inserted != len(new):
                raise StoreError(
                    f"create_workflows inserted {inserted} of {len(new)} new runs inside one "
                    "write transaction; the database changed under its write lock"
                )
            return existing

        existing = self._write(insert)
        answers: list[tuple[WorkflowRow, bool]] = []
        created: dict[str, WorkflowRow] = {}
        queues: dict[str, None] = {}
        for row in batch:
            if row.workflow_id in existing:
                answers.append((existing[row.workflow_id], False))
            elif row.workflow_id in created:
                answers.append((created[row.workflow_id], False))
            else:
                created[row.workflow_id] = row
                answers.append((row, True))
                if row.status is Status.ENQUEUED and row.queue is not None:
                    queues[row.queue] = None
        self._notify([("enqueued", queue) for queue in queues])
        return with_first_inputs(answers, self._first_inputs)

    # -- queues --------------------------------------------------------------

    def claim(
        self,
        queue: str,
        *,
        executor_id: str,
        app_version: str,
        limits: ClaimLimits,
        now: datetime,
    ) -> list[WorkflowRow]:
        check_names(queue=queue, executor_id=executor_id, app_version=app_version)
        ready_params = (queue, app_version, _to_micros(now))
        ready = (
            "FROM workflows WHERE queue = ? AND status = 'ENQUEUED' AND app_version = ? "
            "AND (wake_at IS NULL OR wake_at <= ?)"
        )
        if limits.limit <= 0:
            return []
        # Engines poll for claims; an empty queue should not take the write lock.
        with self._read() as conn:
            if _first(conn.execute(f"SELECT 1 {ready} LIMIT 1", ready_params)) is None:
                return []

        def take(conn: sqlite3.Connection) -> list[WorkflowRow]:
            running = 0
            if limits.concurrency is not None:
                running = _first(
                    conn.execute(
                        "SELECT count(*) FROM workflows WHERE queue = ? AND status = 'PENDING'",
                        (queue,),
                    )
                )[0]

            def started_since(since: datetime) -> int:
                return int(
                    _first(
                        conn.execute(
                            "SELECT count(*) FROM workflows WHERE queue = ? AND started_at > ?",
                            (queue, _to_micros(since)),
                        )
                    )[0]
                )

            room = claim_room(limits, running=running, started_in_period=started_since, now=now)
            if room <= 0:
                return []
            at = _to_micros(now)
            rows = conn.execute(
                "UPDATE workflows SET status = 'PENDING', executor_id = ?, started_at = ?, "
                "wake_at = NULL, updated_at = ?, "
                f"deadline = {_CLAIMED_DEADLINE} "
                f"WHERE workflow_id IN (SELECT workflow_id {ready} "
                "ORDER BY priority, created_at, workflow_id LIMIT ?) "
                f"RETURNING {_WORKFLOW_COLUMNS}, EXISTS (SELECT 1 FROM records r "
                "WHERE r.workflow_id = workflows.workflow_id)",
                (executor_id, at, at, at, at, *ready_params, room),
            ).fetchall()
            taken = claimed(_claimed_from, rows)
            taken.sort(key=lambda r: (r.priority, r.created_at or now, r.workflow_id))
            return taken

        return self._write(take)

    def heartbeat(
        self,
        executor_id: str,
        app_version: str,
        now: datetime,
        *,
        workflows: Collection[str] | None = None,
        queues: Collection[str] | None = None,
    ) -> None:
        check_names(executor_id=executor_id, app_version=app_version)
        names = beats.encode(beats.registered(workflows, queues))
        params = (executor_id, app_version, _to_micros(now), names)
        self._write(lambda conn: conn.execute(beats.upsert_sql("heartbeats", "?"), params))

    def read_heartbeats(self, since: datetime) -> list[beats.Heartbeat]:
        """The last heartbeats of the engines heard from at `since` or later.

        Not part of the `Store` protocol: replaykit/_waiting.py asks for it where a
        store has it, to say which engines run and what (a read; nothing is locked).
        """
        with self._read() as conn:
            rows = conn.execute(beats.read_sql("heartbeats", "?"), (_to_micros(since),)).fetchall()
        return [
            beats.Heartbeat(r[0], r[1], _from_micros(r[2]) or since, beats.decode(r[3]))
            for r in rows
        ]

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        params = (
            executor_id,
            _to_micros(now),
            app_version,
            executor_id,
            _to_micros(now - timedelta(seconds=lease_seconds)),
        )

        # Each dead id stays locked until the move commits, so that an engine
        # starting under that id meanwhile waits, and then finds its runs gone.
        probes: dict[str, Callable[[], None] | None] = {}

        def move(conn: sqlite3.Connection) -> list[str]:
            stale = [
                r[0]
                for r in conn.execute(
                    "SELECT executor_id FROM heartbeats WHERE executor_id != ? AND seen_at < ?",
                    params[3:],
                )
            ]
            for stale_id in stale:
                if stale_id not in probes:
                    probes[stale_id] = self._holds.probe(stale_id, app_version)
            dead = [stale_id for stale_id in stale if probes[stale_id] is not None]
            if not dead:
                return []
            rows = conn.execute(
                "UPDATE workflows SET executor_id = ?, updated_at = ? "
                "WHERE status = 'PENDING' AND app_version = ? AND executor_id IN "
                f"({', '.join('?' * len(dead))}) RETURNING workflow_id, created_at",
                (*params[:3], *dead),
            ).fetchall()
            return [r[0] for r in sorted(rows, key=lambda r: (r[1], r[0]))]

        try:
            return self._write(move)
        finally:
            for unlock in probes.values():
                if unlock is not None:
                    unlock()

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        check_names(executor_id=executor_id, app_version=app_version)
        self._check_open()
        return self._holds.hold(executor_id, app_version)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        return self._holds.holder(executor_id, app_version)

    def release(self, executor_id: str) -> list[str]:
        check_names(executor_id=executor_id)
        params = (_to_micros(_now()), executor_id)

        def put_back(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(
                "UPDATE workflows SET status = 'ENQUEUED', executor_id = '', updated_at = ? "
                "WHERE status = 'PENDING' AND executor_id = ? AND queue IS NOT NULL "
                "RETURNING workflow_id, queue, created_at",
                params,
            ).fetchall()

        rows = sorted(self._write(put_back), key=lambda r: (r[2], r[0]))
        self._notify([("enqueued", q) for q in sorted({r[1] for r in rows})])
        return [r[0] for r in rows]

    # -- reading -------------------------------------------------------------

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        check_names(workflow_id)
        with self._read() as conn:
            row = _first(conn.execute(_SELECT_WORKFLOW, (workflow_id,)))
        return None if row is None else _workflow_from(row)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        check_filter(where)
        text, params = _filter_sql(where)
        with self._read() as conn:
            rows = conn.execute(text, params).fetchall()
        return listed(_workflow_from, rows)

    def count_workflows(self, where: WorkflowFilter) -> int:
        check_filter(where)
        text, params = counting(where, "workflows", _DIALECT)
        with self._read() as conn:
            return int(conn.execute(text, params).fetchone()[0])

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        check_names(workflow_id)
        check_log_limit(limit)
        query = _SELECT_LOG if limit is None else log_range("records", _DIALECT, limit)
        params = (workflow_id, since) if limit is None else (workflow_id, since, limit)
        with self._read() as conn:
            rows = conn.execute(query, params).fetchall()
        return [_record_from(r, workflow_id) for r in rows]

    # -- recording -----------------------------------------------------------

    def _refusal(
        self,
        conn: sqlite3.Connection,
        workflow_id: str,
        position: int,
        record: Record | None,
        executor_id: str | None,
    ) -> Record | None:
        """Why `record` cannot go to `position`: raises the protocol's error, or
        returns the stored record the caller should hand back; None if nothing
        stands in the way. `record` None: a completed record, not known yet
        (a Transaction's, which its body returns)."""
        found = _first(
            conn.execute(
                "SELECT name, status, executor_id FROM workflows WHERE workflow_id = ?",
                (workflow_id,),
            )
        )
        row = None
        if found is not None:
            row = WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
        check_recordable(row, workflow_id, executor_id)
        assert row is not None
        stored = _first(conn.execute(_SELECT_RECORD, (workflow_id, position)))
        if stored is not None:
            if stored[3] is not None:
                return _record_from(stored, workflow_id)
            if record is None or record.outcome is not None:
                return None  # completing a pending record
            pending = _record_from(stored, workflow_id)
            return None if replaces_stored(pending, record) else pending
        if (
            position > 0
            and _first(conn.execute(_SELECT_RECORD, (workflow_id, position - 1))) is None
        ):
            length = _first(
                conn.execute("SELECT count(*) FROM records WHERE workflow_id = ?", (workflow_id,))
            )[0]
            raise _gap_error(row.name, workflow_id, position, length)
        return None

    def _write_record(
        self,
        conn: sqlite3.Connection,
        workflow_id: str,
        record: Record,
        executor_id: str | None,
        wake_at: datetime | None,
    ) -> None:
        """Write `record` or raise: `_Unchanged(stored)` or the protocol's errors."""
        params = (*_record_params(workflow_id, record), executor_id, _to_micros(wake_at))
        if conn.execute(_WRITE_RECORD, params).rowcount:
            return
        stored = self._refusal(conn, workflow_id, record.position, record, executor_id)
        if stored is not None:
            raise _Unchanged(stored)
        # Only the run's deadline stood in the way.
        conn.execute(
            "UPDATE workflows SET wake_at = ? WHERE workflow_id = ?",
            (_to_micros(wake_at), workflow_id),
        )
        if not conn.execute(_WRITE_RECORD, params).rowcount:
            raise StoreError(
                f"workflow id {workflow_id!r}: position {record.position} could not be "
                "recorded although nothing stood in the way; is another program writing "
                "to this database?"
            )

    def record(
        self,
        workflow_id: str,
        record: Record,
        *,
        executor_id: str | None = None,
        consume: int | Sequence[int] | None = None,
        send: OutgoingMessage | None = None,
        event: EventWrite | None = None,
        wake_at: datetime | None = None,
    ) -> Record:
        check_write(workflow_id, record, executor_id, send, event)
        notes: list[tuple[str, str]] = []
        body = self._record_body(
            workflow_id, record, executor_id, consume, send, event, wake_at, notes
        )
        stored = self._write(body)
        self._notify(notes)
        return stored

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        """One transaction for the batch (a savepoint per write), shared by group commit."""
        batch = writes_of(writes)
        if not batch:
            return []
        self._check_open()
        self._check_not_in_body()
        notes: list[list[tuple[str, str]]] = [[] for _ in batch]
        answers: Answers = [None] * len(batch)
        for index, refusal in refused_writes(batch).items():
            answers[index] = refusal
        taken = [i for i, answer in enumerate(answers) if answer is None]
        bodies = {
            i: self._record_body(
                batch[i].workflow_id,
                batch[i].record,
                batch[i].executor_id,
                batch[i].consume,
                batch[i].send,
                batch[i].event,
                batch[i].wake_at,
                notes[i],
            )
            for i in taken
        }
        alone = from_the_batch(answers, taken, self._group.submit_many(list(bodies.values())))
        write_one_by_one(batch, answers, alone, lambda i: self._write_alone(bodies[i]))
        done = answered(answers)
        # Only a write that was answered with a record ran its body to the end.
        self._notify([note for i in taken if isinstance(done[i], Record) for note in notes[i]])
        return done

    def _record_body(
        self,
        workflow_id: str,
        record: Record,
        executor_id: str | None,
        consume: int | Sequence[int] | None,
        send: OutgoingMessage | None,
        event: EventWrite | None,
        wake_at: datetime | None,
        notes: list[tuple[str, str]],
    ) -> Callable[[sqlite3.Connection], Record]:
        """The transaction body of one record() write; `notes` gets its notifications."""

        def write(conn: sqlite3.Connection) -> Record:
            # A body that ran in a batch that then fell back runs again: what
            # it noted the first time was rolled back with it.
            notes.clear()
            written = record
            self._write_record(conn, workflow_id, record, executor_id, wake_at)
            if record.kind in STREAM_KINDS and record.outcome is not None:
                notes.append(("stream", workflow_id))
            if consume is not None:
                self._consume(conn, workflow_id, consume)
            if send is not None:
                if self._deliver(
                    conn,
                    send.workflow_id,
                    send.topic,
                    send.payload,
                    send.idempotency_key,
                    trace_context=send.trace_context,
                ):
                    notes.append(("message", send.workflow_id))
                elif send.if_duplicate is not None:
                    # Whether the key was used is known only now, inside the
                    # transaction; the record written above says so before commit.
                    conn.execute(
                        "UPDATE records SET outcome = ? WHERE workflow_id = ? AND position = ?",
                        (_dump_outcome(send.if_duplicate), workflow_id, record.position),
                    )
                    written = attrs.evolve(record, outcome=send.if_duplicate)
            if event is not None:
                value = _dump(event.value)
                conn.execute(
                    "INSERT INTO events (workflow_id, key, value) VALUES (?, ?, ?) "
                    "ON CONFLICT (workflow_id, key) DO UPDATE SET value = excluded.value",
                    (workflow_id, event.key, value),
                )
                conn.execute(
                    "UPDATE records SET event_key = ?, event_value = ? "
                    "WHERE workflow_id = ? AND position = ?",
                    (event.key, value, workflow_id, record.position),
                )
                notes.append(("event", workflow_id))
            return written

        return write

    def _consume(
        self, conn: sqlite3.Connection, workflow_id: str, consume: int | Sequence[int]
    ) -> None:
        ids = [consume] if isinstance(consume, int) else list(consume)
        if not ids:
            return
        marks = ", ".join("?" for _ in ids)
        taken = conn.execute(
            f"DELETE FROM messages WHERE workflow_id = ? AND message_id IN ({marks}) "
            "RETURNING message_id",
            (workflow_id, *ids),
        ).fetchall()
        if len(taken) != len(ids):
            gone = sorted(set(ids) - {r[0] for r in taken}) or ids
            raise _consumed_error(workflow_id, gone)

    def record_transaction(
        self,
        workflow_id: str,
        position: int,
        body: Callable[[Any], Record],
        *,
        executor_id: str | None = None,
    ) -> Record:
        check_names(workflow_id, executor_id=executor_id)

        def write(conn: sqlite3.Connection) -> Record:
            stored = self._refusal(conn, workflow_id, position, None, executor_id)
            if stored is not None:
                raise _Unchanged(stored)
            self._inside_body.active = True
            try:
                record = body(conn)
            except BaseException as exc:
                raise _BodyFailed(exc) from exc
            finally:
                self._inside_body.active = False
            if not conn.in_transaction:
                raise StoreError(
                    f"workflow id {workflow_id!r} position {position}: the Transaction body "
                    "committed or rolled back the store's transaction itself; its writes may "
                    "have committed without the record. Let replaykit commit"
                )
            if not isinstance(record, Record) or record.position != position:
                raise StoreError(
                    f"workflow id {workflow_id!r}: the Transaction body must return the "
                    f"Record for position {position}, not {record!r}"
                )
            check_record(workflow_id, record)
            self._write_record(conn, workflow_id, record, executor_id, None)
            return record

        # Alone: the body is the user's code, and it holds the connection.
        return self._write_alone(write)

    # -- status --------------------------------------------------------------

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        check_late_record(workflow_id, record, executor_id)
        params = _record_params(workflow_id, record)

        def land(conn: sqlite3.Connection) -> Record:
            found = _first(
                conn.execute(
                    "SELECT name, status, executor_id FROM workflows WHERE workflow_id = ?",
                    (workflow_id,),
                )
            )
            row = None
            if found is not None:
                row = WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
            check_late(row, workflow_id, executor_id)
            assert row is not None
            stored = _first(conn.execute(_SELECT_RECORD, (workflow_id, record.position)))
            if stored is not None and stored[3] is not None:
                return _record_from(stored, workflow_id)
            if stored is None and record.position > 0:
                length = _first(
                    conn.execute(
                        "SELECT count(*) FROM records WHERE workflow_id = ?", (workflow_id,)
                    )
                )[0]
                if length != record.position:
                    raise late_gap(row.name, workflow_id, record.position, length)
            conn.execute(_LAND_LATE, params)
            return record

        return self._write(land)

    def finish_workflow(
        self,
        workflow_id: str,
        status: Status,
        result: Outcome | None,
        *,
        error: str = "",
        executor_id: str | None = None,
        record: Record | None = None,
    ) -> bool:
        last = checked_finish(workflow_id, executor_id, record)
        changed = self._write(
            self._finish_body(workflow_id, status, result, error, executor_id, last)
        )
        if changed:
            self._notify([("finished", workflow_id)])
        return changed

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        """The finishes in the transactions concurrent writers share, a savepoint each."""
        batch = finishes_of(finishes)
        if not batch:
            return []
        self._check_open()
        self._check_not_in_body()
        answers: dict[int, bool | Exception] = {}
        bodies: dict[int, Callable[[sqlite3.Connection], bool]] = {}
        for index, f in enumerate(batch):
            try:
                last = checked_finish(f.workflow_id, f.executor_id, f.record)
            except (TypeError, ValueError) as exc:
                answers[index] = exc
                continue
            bodies[index] = self._finish_body(
                f.workflow_id, f.status, f.result, f.error, f.executor_id, last
            )
        taken = list(bodies)
        answers.update(
            finishes_from_the_batch(
                taken,
                self._group.submit_many(list(bodies.values())),
                lambda index: self._write_alone(bodies[index]),
            )
        )
        done = [answers[index] for index in range(len(batch))]
        self._notify([("finished", batch[i].workflow_id) for i in taken if done[i] is True])
        return done

    def _finish_body(
        self,
        workflow_id: str,
        status: Status,
        result: Outcome | None,
        error: str,
        executor_id: str | None,
        last: Record | None,
    ) -> Callable[[sqlite3.Connection], bool]:
        params = (
            Status(status).value,
            _dump_outcome(result),
            storable_error(error),
            _to_micros(_now()),
            workflow_id,
            executor_id,
        )
        record_params = None if last is None else (*_record_params(workflow_id, last), executor_id)

        def finish(conn: sqlite3.Connection) -> bool:
            if last is not None and record_params is not None:
                written = conn.execute(_WRITE_LAST_RECORD, record_params).rowcount
                if not written and not self._last_record_stands(
                    conn, workflow_id, last, executor_id
                ):
                    return False
            # A savepoint of its own (group commit) or a transaction: a refusal
            # raised above, or a finish that changes nothing, leaves no record.
            if not conn.execute(_FINISH, params).rowcount:
                if last is not None:
                    raise _Unchanged(False)
                return False
            return True

        return finish

    def _last_record_stands(
        self, conn: sqlite3.Connection, workflow_id: str, last: Record, executor_id: str | None
    ) -> bool:
        """Why a finish's last record was not written (in its transaction).

        False: the run is missing, not PENDING or not owned (the finish
        answers False). True: the position holds an equal completed record,
        which counts as written. Otherwise raises `RecordConflict`.
        """
        found = _first(
            conn.execute(
                "SELECT name, status, executor_id FROM workflows WHERE workflow_id = ?",
                (workflow_id,),
            )
        )
        if found is None or found[1] != Status.PENDING.value:
            return False
        if executor_id is not None and found[2] != executor_id:
            return False
        stored = _first(conn.execute(_SELECT_RECORD, (workflow_id, last.position)))
        if stored is not None:
            held = _record_from(stored, workflow_id)
            if same_record(held, last):
                return True
            if held.outcome is not None:
                raise unlike_error(found[0], workflow_id, held, last)
        elif last.position > 0:
            length = _first(
                conn.execute("SELECT count(*) FROM records WHERE workflow_id = ?", (workflow_id,))
            )[0]
            if length < last.position:
                raise _gap_error(found[0], workflow_id, last.position, length)
        raise StoreError(
            f"workflow id {workflow_id!r}: position {last.position} could not be recorded "
            "with the run's finish although nothing stood in the way; is another program "
            "writing to this database?"
        )

    def continue_workflow(
        self,
        workflow_id: str,
        inputs: Any,
        *,
        generation: int,
        executor_id: str | None,
        now: datetime,
    ) -> WorkflowRow:
        archived_id = check_continue_args(workflow_id, generation, executor_id)
        inputs_text = None if inputs is None else _dump(inputs)
        stamp = _to_micros(now)

        def move(conn: sqlite3.Connection) -> WorkflowRow:
            found = _first(conn.execute(_SELECT_WORKFLOW, (workflow_id,)))
            row = None if found is None else _workflow_from(found)
            other = _first(conn.execute(_SELECT_WORKFLOW, (archived_id,)))
            archived = None if other is None else shown(_workflow_from, other)
            refusal = continue_refusal(row, workflow_id, inputs, generation, executor_id, archived)
            assert row is not None
            if refusal == ALREADY_CONTINUED:
                raise _Unchanged(row)
            if not conn.execute(
                _INSERT_WORKFLOW, _workflow_params(archived_generation(row, now))
            ).rowcount:
                raise id_taken(row, archived_id)
            conn.execute(
                "UPDATE records SET workflow_id = ? WHERE workflow_id = ?",
                (archived_id, workflow_id),
            )
            conn.execute(_CONTINUE_LIVE, (inputs_text, stamp, workflow_id, generation))
            return next_generation(row, inputs, now)

        live = self._write(move)
        if live.generation == generation + 1:
            # The archived generation finished, and the run's streams of it ended.
            self._notify([("finished", archived_id), ("stream", workflow_id)])
        return live

    def set_status(
        self,
        workflow_id: str,
        status: Status,
        *,
        only_from: Sequence[Status] | None = None,
        error: str = "",
        executor_id: str | None = None,
        reset_recovery: bool = False,
        app_version: str | None = None,
    ) -> bool:
        check_names(workflow_id, executor_id=executor_id, app_version=app_version)
        status = Status(status)
        text = (
            "UPDATE workflows SET status = ?, error = ?, updated_at = ?, "
            "executor_id = coalesce(?, executor_id), "
            "app_version = coalesce(?, app_version), "
            "recovery_attempts = CASE WHEN ? THEN 0 ELSE recovery_attempts END "
            "WHERE workflow_id = ?"
        )
        params: list[Any] = [
            status.value,
            storable_error(error),
            _to_micros(_now()),
            executor_id,
            app_version,
            reset_recovery,
            workflow_id,
        ]
        if only_from is not None:
            allowed = [Status(s).value for s in only_from]
            if not allowed:
                return False
            text += f" AND status IN ({', '.join('?' for _ in allowed)})"
            params.extend(allowed)

        changed = self._write(lambda conn: bool(conn.execute(text, params).rowcount))
        if changed and status.is_terminal:
            self._notify([("finished", workflow_id)])
        elif changed and status is Status.PENDING and not stays_pending(only_from):
            self._notify([("resumed", workflow_id)])
        return changed

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        check_names(workflow_id, executor_id=executor_id, app_version=app_version)
        now = _to_micros(_now())

        def move(conn: sqlite3.Connection) -> list[Member]:
            found = conn.execute(_SELECT_FAMILY, (workflow_id,)).fetchall()
            if not any(r[0] == workflow_id for r in found):
                raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
            family = [Member(r[0], r[1], Status(r[2]), r[3], r[4]) for r in found]
            moved = moving(workflow_id, family, app_version)
            conn.executemany(
                _MOVE_MEMBER,
                [
                    (app_version, now, m.status.value, executor_id, m.status.value, m.workflow_id)
                    for m in moved
                ],
            )
            return moved

        moved = self._write(move)
        notes = [("resumed", m.workflow_id) for m in moved if m.status is Status.PENDING]
        queues = (m.queue for m in moved if m.status is Status.ENQUEUED and m.queue is not None)
        self._notify(notes + [("enqueued", queue) for queue in dict.fromkeys(queues)])
        return [m.workflow_id for m in moved]

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        check_names(workflow_id)
        params = (_to_micros(deadline), timeout, workflow_id)
        return self._write(
            lambda conn: bool(
                conn.execute(
                    "UPDATE workflows SET deadline = ?, timeout_seconds = ? WHERE workflow_id = ?",
                    params,
                ).rowcount
            )
        )

    def bump_recovery(self, workflow_id: str) -> int:
        check_names(workflow_id)

        def bump(conn: sqlite3.Connection) -> int:
            found = _first(
                conn.execute(
                    "UPDATE workflows SET recovery_attempts = recovery_attempts + 1 "
                    "WHERE workflow_id = ? RETURNING recovery_attempts",
                    (workflow_id,),
                )
            )
            if found is None:
                raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
            return int(found[0])

        return self._write(bump)

    # -- messages and events -------------------------------------------------

    def _deliver(
        self,
        conn: sqlite3.Connection,
        workflow_id: str,
        topic: str,
        payload: Any,
        idempotency_key: str | None,
        call_id: str | None = None,
        *,
        trace_context: str | None = None,
    ) -> bool:
        exists = _first(
            conn.execute("SELECT 1 FROM workflows WHERE workflow_id = ?", (workflow_id,))
        )
        if exists is None:
            raise _no_target_error(workflow_id)
        if idempotency_key is not None:
            fresh = conn.execute(
                "INSERT INTO send_keys (workflow_id, key, call_id) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (workflow_id, idempotency_key, call_id),
            ).rowcount
            if not fresh:
                if call_id is None:
                    return False
                # The same call again: its earlier attempt delivered the message.
                raise _Unchanged(
                    _first(
                        conn.execute(
                            "SELECT 1 FROM send_keys WHERE workflow_id = ? AND key = ? "
                            "AND call_id = ?",
                            (workflow_id, idempotency_key, call_id),
                        )
                    )
                    is not None
                )
        conn.execute(
            "INSERT INTO messages (workflow_id, topic, payload, created_at, trace_context) "
            "VALUES (?, ?, ?, ?, ?)",
            (workflow_id, topic, _dump(payload), _to_micros(_now()), trace_context),
        )
        return True

    def send_message(
        self,
        workflow_id: str,
        topic: str,
        payload: Any,
        *,
        idempotency_key: str | None = None,
        call_id: str | None = None,
        trace_context: str | None = None,
    ) -> bool:
        check_names(workflow_id, topic=topic, idempotency_key=idempotency_key)
        delivered = self._write(
            lambda conn: self._deliver(
                conn,
                workflow_id,
                topic,
                payload,
                idempotency_key,
                call_id,
                trace_context=trace_context,
            )
        )
        if delivered:
            self._notify([("message", workflow_id)])
        return delivered

    def peek_message(self, workflow_id: str, topic: str) -> Message | None:
        check_names(workflow_id, topic=topic)
        with self._read() as conn:
            found = _first(
                conn.execute(
                    "SELECT message_id, payload, created_at, trace_context FROM messages "
                    "WHERE workflow_id = ? AND topic = ? ORDER BY message_id LIMIT 1",
                    (workflow_id, topic),
                )
            )
        if found is None:
            return None
        payload = message_payload(decoded_json, found[1], workflow_id, found[0], topic)
        return Message(found[0], workflow_id, topic, payload, _from_micros(found[2]), found[3])

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        check_names(workflow_id, event_key=key)
        with self._read() as conn:
            found = _first(
                conn.execute(
                    "SELECT value FROM events WHERE workflow_id = ? AND key = ?", (workflow_id, key)
                )
            )
        if found is None:
            return False, None
        return True, event_value(decoded_json, found[0], workflow_id, key)

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        check_names(workflow_id)
        # One statement: the run's row tells "no such run" (no rows) from "no
        # events" (one row of NULLs), with no second read in between.
        with self._read() as conn:
            rows = conn.execute(
                "SELECT e.key, e.value FROM workflows w LEFT JOIN events e "
                "ON e.workflow_id = w.workflow_id WHERE w.workflow_id = ? ORDER BY e.key",
                (workflow_id,),
            ).fetchall()
        if not rows:
            raise no_run_for_events(workflow_id)
        return {
            key: event_value(decoded_json, value, workflow_id, key)
            for key, value in rows
            if key is not None
        }

    # -- lifecycle -----------------------------------------------------------

    def delete_workflow(self, workflow_id: str) -> bool:
        check_names(workflow_id)

        def delete(conn: sqlite3.Connection) -> bool:
            if not conn.execute(
                "DELETE FROM workflows WHERE workflow_id = ?", (workflow_id,)
            ).rowcount:
                return False
            for table in ("records", "messages", "events", "send_keys"):
                conn.execute(f"DELETE FROM {table} WHERE workflow_id = ?", (workflow_id,))
            # Its archived generations, and their logs (they have no inbox or events).
            conn.execute(
                "DELETE FROM records WHERE workflow_id IN "
                "(SELECT workflow_id FROM workflows WHERE continued_as = ?)",
                (workflow_id,),
            )
            conn.execute("DELETE FROM workflows WHERE continued_as = ?", (workflow_id,))
            return True

        deleted = self._write(delete)
        if deleted:
            self._notify([("deleted", workflow_id)])
        return deleted

    # -- schedule states -------------------------------------------------------

    def schedule_states(self) -> dict[str, ScheduleState]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT name, workflow_name, cron, tz, queue, backfill, paused, updated_at, "
                "trigger_at, backfill_start, backfill_end FROM schedules ORDER BY name"
            ).fetchall()
        return {
            r[0]: ScheduleState(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                bool(r[5]),
                bool(r[6]),
                _from_micros(r[7]) or _EPOCH,
                _from_micros(r[8]),
                _from_micros(r[9]),
                _from_micros(r[10]),
            )
            for r in rows
        }

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        check_schedule_specs(specs)
        if not specs:
            return
        params = [
            (s.name, s.workflow_name, s.cron, s.tz, s.queue, int(s.backfill), _to_micros(now))
            for s in specs
        ]

        def upsert(conn: sqlite3.Connection) -> None:
            # Only a changed definition is written: every engine registers its
            # schedules at each start, and most starts change nothing.
            conn.executemany(
                "INSERT INTO schedules (name, workflow_name, cron, tz, queue, backfill, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                "workflow_name = excluded.workflow_name, cron = excluded.cron, "
                "tz = excluded.tz, queue = excluded.queue, backfill = excluded.backfill, "
                "updated_at = excluded.updated_at "
                "WHERE (workflow_name, cron, tz, queue, backfill) IS NOT "
                "(excluded.workflow_name, excluded.cron, excluded.tz, excluded.queue, "
                "excluded.backfill)",
                params,
            )

        self._write(upsert)

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        check_names(schedule_name=name)
        params = (int(paused), _to_micros(now), name, int(paused))

        def update(conn: sqlite3.Connection) -> bool:
            if conn.execute(
                "UPDATE schedules SET paused = ?, updated_at = ? WHERE name = ? AND paused != ?",
                params,
            ).rowcount:
                return True
            found = _first(conn.execute("SELECT 1 FROM schedules WHERE name = ?", (name,)))
            return found is not None

        return self._write(update)

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        check_names(schedule_name=name)
        micros = _to_micros(at)

        def request(conn: sqlite3.Connection) -> datetime | None:
            conn.execute(
                "UPDATE schedules SET trigger_at = ?, updated_at = ? "
                "WHERE name = ? AND trigger_at IS NULL",
                (micros, micros, name),
            )
            found = _first(conn.execute("SELECT trigger_at FROM schedules WHERE name = ?", (name,)))
            return None if found is None else _from_micros(found[0])

        return self._write(request)

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        check_names(schedule_name=name)
        params = (_to_micros(start), _to_micros(end), _to_micros(now), name)

        def request(conn: sqlite3.Connection) -> tuple[datetime, datetime] | None:
            conn.execute(
                "UPDATE schedules SET backfill_start = ?, backfill_end = ?, updated_at = ? "
                "WHERE name = ? AND backfill_start IS NULL",
                params,
            )
            found = _first(
                conn.execute(
                    "SELECT backfill_start, backfill_end FROM schedules WHERE name = ?", (name,)
                )
            )
            if found is None:
                return None
            return _from_micros(found[0]) or _EPOCH, _from_micros(found[1]) or _EPOCH

        return self._write(request)

    def clear_schedule_request(
        self,
        name: str,
        *,
        trigger_at: datetime | None = None,
        backfill: tuple[datetime, datetime] | None = None,
    ) -> None:
        check_names(schedule_name=name)

        def clear(conn: sqlite3.Connection) -> None:
            if trigger_at is not None:
                conn.execute(
                    "UPDATE schedules SET trigger_at = NULL WHERE name = ? AND trigger_at = ?",
                    (name, _to_micros(trigger_at)),
                )
            if backfill is not None:
                conn.execute(
                    "UPDATE schedules SET backfill_start = NULL, backfill_end = NULL "
                    "WHERE name = ? AND backfill_start = ? AND backfill_end = ?",
                    (name, _to_micros(backfill[0]), _to_micros(backfill[1])),
                )

        if trigger_at is not None or backfill is not None:
            self._write(clear)

    def delete_schedule_state(self, name: str) -> bool:
        check_names(schedule_name=name)
        return self._write(
            lambda conn: conn.execute("DELETE FROM schedules WHERE name = ?", (name,)).rowcount > 0
        )

    def close(self) -> None:
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            self._writer.close()
        with self._readers_lock:
            readers, self._all_readers = self._all_readers, []
        for conn in readers:
            conn.close()
