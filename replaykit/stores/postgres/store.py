"""`PostgresStore`: many engines on many machines sharing one PostgreSQL database.

Everything lives in one schema of replaykit's own (default `replaykit`), which
replaykit creates and migrates: `schema_version` records the migrations that
ran, and they run under an advisory lock so engines starting together take
turns. Connections come from a `psycopg_pool.ConnectionPool` in autocommit
mode, so a one-statement write is one round trip.

The common write, completing a new position of a PENDING run, is one
statement: it locks the run's row (so a concurrent cancel or takeover waits
for it, or it for them), checks status and owner, inserts the record or
completes a pending one, and applies the side effects. Only when it writes
nothing does a second query find out why. Writes that others may wait on call
`pg_notify` in the same transaction; `subscribe` LISTENs on the schema's
channel from a thread with its own connection.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import attrs
import psycopg
from psycopg import pq, sql
from psycopg.types.json import Json, set_json_loads
from psycopg_pool import ConnectionPool, PoolTimeout

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
from replaykit.stores._held import HeldConnection
from replaykit.stores._holds import ExecutorHold
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
    decoders,
    inputs_value,
    listed,
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

__all__ = ["MIGRATIONS", "PostgresStore", "redact_url", "schema_channel"]

_log = logging.getLogger("replaykit.stores")

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_DEFAULT_SCHEMA = "replaykit"

# The ordered migrations; version N is MIGRATIONS[N - 1]. Never edit a shipped
# one: add the next file.
MIGRATIONS: tuple[str, ...] = (
    "postgres_0001_initial.sql",
    "postgres_0002_record_events.sql",
    "postgres_0003_send_calls.sql",
    "postgres_0004_schedules.sql",
    "postgres_0005_trace_context.sql",
    "postgres_0006_forks.sql",
    "postgres_0007_deadlines.sql",
    "postgres_0008_generations.sql",
    "postgres_0009_first_inputs.sql",
    "postgres_0010_registered.sql",
)

# Bounds every lock a migration waits for: the advisory lock another engine
# holds while migrating, and the table locks that running engines hold.
_MIGRATION_LOCK_TIMEOUT = "15s"
# Tries of the schema check at open when a connection drops under it (the
# migration is one transaction and looks at the version first, so a retry after
# a lost COMMIT finds nothing left to do): one dropped connection should not
# fail an engine's start. A server that is down fails the pool's open instead.
_OPEN_ATTEMPTS = 4

# pg_notify refuses payloads of 8000 bytes or more; such a notification is
# skipped (waiters poll anyway) rather than failing the write.
_NOTIFY_MAX_KEY = 7900
# What a notification can be about; an origin (12 hex digits) is never one of these.
_NOTE_KINDS = frozenset(
    {"message", "event", "finished", "enqueued", "resumed", "stream", "deleted"}
)

# An executor id's advisory-lock key, computed by the server from the row's
# executor_id as `PostgresStore._executor_key` computes it in Python. A take-over
# takes it for its transaction: a live engine holds it for its session, so its
# runs are never moved, however late its heartbeat.
_EXECUTOR_KEY_SQL = (
    "('x' || encode(substr(sha256(%(key_prefix)s::bytea || convert_to(executor_id, 'UTF8') "
    "|| %(key_separator)s::bytea || convert_to(%(version)s, 'UTF8')), 1, 8), 'hex'))"
    "::bit(64)::bigint"
)

_WORKFLOW_COLUMNS = WORKFLOW_COLUMNS
_RECORD_COLUMNS = RECORD_COLUMNS


def _statuses_matched(statuses: Sequence[Status]) -> tuple[str, list[Any]]:
    if len(statuses) == 1:
        # `=` lets the (executor_id, app_version, status) index find a sweep's
        # PENDING runs; the planner leaves `= ANY(...)` to a filter.
        return "status = %s", [statuses[0].value]
    return "status = ANY(%s::text[])", [[s.value for s in statuses]]


# LIMIT NULL is PostgreSQL for "no limit".
_DIALECT = Dialect("%s", lambda at: at, None, _statuses_matched)
_SELECT_WORKFLOW = "SELECT " + _WORKFLOW_COLUMNS + " FROM {s}.workflows WHERE workflow_id = %s"


def schema_channel(schema: str) -> str:
    """The LISTEN/NOTIFY channel a store on `schema` uses."""
    return f"replaykit_{schema}"[:63]


def _validate_schema(schema: str) -> str:
    if not isinstance(schema, str) or not _SCHEMA_NAME.match(schema):
        raise ValueError(
            f"invalid PostgreSQL schema name {schema!r}: use 1 to 63 characters of lowercase "
            f"letters, digits and underscores, not starting with a digit (e.g. {_DEFAULT_SCHEMA!r})"
        )
    if schema == "information_schema" or schema.startswith("pg_"):
        # PostgreSQL keeps these for its catalogs; a superuser may still create
        # tables there, and replaykit once did.
        raise ValueError(
            f"schema {schema!r} is PostgreSQL's own (information_schema and every pg_* name "
            f"are kept for its catalogs); replaykit needs a schema of its own: leave the "
            f"default {_DEFAULT_SCHEMA!r}, or pick another name, e.g. ?schema=replaykit_orders "
            "in the URL or PostgresStore(url, schema='replaykit_orders')"
        )
    if schema == "public":
        # Everyone's default search_path: replaykit's tables would sit among the
        # application's, where a migration or a DROP of either can hit the other.
        raise ValueError(
            f"schema 'public' is the database's shared default schema; replaykit keeps its "
            f"tables in a schema of its own, and the default is {_DEFAULT_SCHEMA!r}. Leave "
            "out ?schema= (or the schema argument), or choose another name with "
            "?schema=NAME in the URL or PostgresStore(url, schema='NAME')"
        )
    return schema


# What may succeed if tried again: the connection or the server went away
# (class 08, shutdowns, idle_session_timeout), the server ran short of something
# an operator can give it (class 53, io_error), or another transaction was in
# the way (class 40, lock_not_available, object_in_use, query_canceled by
# statement_timeout). psycopg files most of these under OperationalError, but
# also program_limit_exceeded (54000: a value too large to index), which fails
# again every time: retrying it as an outage had kept runs waiting forever.
_TRANSIENT_CLASSES = frozenset({"08", "40", "53"})
_TRANSIENT_STATES = frozenset(
    {"57P01", "57P02", "57P03", "57P05", "57014", "55P03", "55006", "58030"}
)


def _transient(exc: psycopg.Error) -> bool:
    """Whether `exc` says the store is unavailable for now, rather than refusing the call."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    if state is None:
        # Raised by libpq, not the server: the connection failed or was lost.
        return True
    return state[:2] in _TRANSIENT_CLASSES or state in _TRANSIENT_STATES


def redact_url(url: str) -> str:
    """`url` with any password replaced by `***`, for messages and logs."""
    if "://" not in url:  # a libpq "key=value" string
        return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparseable PostgreSQL URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{hostport}"
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    cleaned = [(k, "***" if k.lower() == "password" else v) for k, v in query]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, urllib.parse.urlencode(cleaned), parts.fragment)
    )


def _utc(value: datetime | None) -> datetime | None:
    # Sessions run in UTC; swap psycopg's ZoneInfo("UTC") for the stdlib one the
    # other stores return, so rows compare and print the same everywhere.
    return None if value is None else value.replace(tzinfo=UTC)


def _load_json(data: str | bytes) -> Any:
    return serde.loads(data if isinstance(data, str) else bytes(data).decode("utf-8"))


def _json(data: Any) -> Json:
    return Json(data, dumps=serde.dumps)


def _outcome_param(outcome: Outcome | None) -> Json | None:
    return None if outcome is None else _json(outcome_to_json(outcome))


# A `json` column holds any JSON, so inputs and outcomes are checked for shape.
_RECORD_DECODERS = decoders(
    _RECORD_COLUMNS,
    RECORD_FIELDS,
    {"outcome": outcome_value, "started_at": _utc, "completed_at": _utc, "wake_at": _utc},
)
_WORKFLOW_DECODERS = decoders(
    _WORKFLOW_COLUMNS,
    WORKFLOW_FIELDS,
    {
        "status": Status,
        "inputs": inputs_value,
        "result": outcome_value,
        **dict.fromkeys(("created_at", "updated_at", "wake_at", "started_at", "deadline"), _utc),
    },
)


def _record_from(row: Sequence[Any], workflow_id: str) -> Record:
    return record_from(_RECORD_DECODERS, row, workflow_id)


def _workflow_from(row: Sequence[Any], has_log: bool | None = None) -> WorkflowRow:
    """The run, or `DamagedRow` (a `StoreError`) naming it and what does not decode."""
    return workflow_from(_WORKFLOW_DECODERS, row, has_log)


def _claimed_from(row: Sequence[Any]) -> WorkflowRow:
    return _workflow_from(row, row[-1])


def _record_params(workflow_id: str, record: Record) -> dict[str, Any]:
    return {
        "wid": workflow_id,
        "pos": record.position,
        "kind": record.kind,
        "name": record.name,
        "outcome": _outcome_param(record.outcome),
        "digest": record.digest,
        "call_site": record.call_site,
        "started_at": record.started_at,
        "completed_at": record.completed_at,
        "rwake": record.wake_at,
        "attempts": record.attempts,
    }


def _batch_row(
    workflow_id: str, record: Record, executor_id: str | None, wake_at: datetime | None
) -> tuple[list[Any], str | None]:
    """One write's row of a batch statement's `rows` (`_batch_input`), and its outcome's text."""
    outcome, started, completed, rwake = (
        record.outcome,
        record.started_at,
        record.completed_at,
        record.wake_at,
    )
    row = [
        workflow_id,
        record.position,
        record.kind,
        record.name,
        record.digest,
        record.call_site,
        # Inline rather than through `_iso`: four calls a record, on every batch.
        None if started is None else started.isoformat(),
        None if completed is None else completed.isoformat(),
        None if rwake is None else rwake.isoformat(),
        record.attempts,
        executor_id,
        None if wake_at is None else wake_at.isoformat(),
    ]
    return row, None if outcome is None else serde.dumps(outcome_to_json(outcome))


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


class _PoolExhausted(StoreUnavailable):
    """No pooled connection came free within connect_timeout.

    Group commit hands this to every writer of the batch instead of letting
    each wait for a connection again on the one-write path.
    """


class _BodyFailed(Exception):
    """Carries the user's exception from a Transaction body past our error mapping."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


@attrs.frozen
class _RecordShape:
    """Which optional parts a record() statement needs; one prepared statement each."""

    executor: bool
    first: bool
    consume: bool
    send: bool
    send_key: bool
    event: bool
    # A stream's value or close: notifies "stream:<workflow_id>" when written.
    stream: bool = False


# A position already holding a record is written only to complete a pending
# one, or to write a retried step's next back-off over it (a pending record of
# the same kind and name with more attempts: _rules.replaces_stored); a
# completed record is never overwritten.
_COMPLETE_PENDING = (
    "ON CONFLICT (workflow_id, position) DO UPDATE SET "
    "kind = excluded.kind, name = excluded.name, outcome = excluded.outcome, "
    "digest = excluded.digest, call_site = excluded.call_site, "
    "started_at = excluded.started_at, completed_at = excluded.completed_at, "
    "wake_at = excluded.wake_at, attempts = excluded.attempts "
    "WHERE r.outcome IS NULL AND (excluded.outcome IS NOT NULL OR ("
    "excluded.kind = r.kind AND excluded.name = r.name AND excluded.attempts > r.attempts)) "
    "RETURNING r.workflow_id"
)
# A record that sets an event keeps what it set, for forks (migration 2).
_COMPLETE_PENDING_SETTING = _COMPLETE_PENDING.replace(
    "attempts = excluded.attempts ",
    "attempts = excluded.attempts, event_key = excluded.event_key, "
    "event_value = excluded.event_value ",
)


# _BY_ID_ONLY: a statement about one run names it by primary key and nothing
# else in its scan of `workflows`; conditions on status or owner are checked on
# the row it locked. psycopg prepares a statement on its sixth execution and
# PostgreSQL keeps a generic plan made from the statistics of that moment: on
# an empty schema, `workflow_id = $1 AND status = 'PENDING'` once got a plan
# through the status index, which then read every PENDING run per checkpoint
# as the table grew (tests/test_postgres_plans.py). Locking the row first also
# leaves the check to the row's latest version, which the lock waited for.
# Statements that search runs by queue, status or executor, and run at most a
# few times per claim round or sweep, are not prepared: planned with their
# actual values and the table's current size each time, no plan made while the
# schema was small outlives it. (Statements about one run stay prepared; they
# are safe by _BY_ID_ONLY.)
_PLAN_EACH_TIME = False

# Statements that change many runs lock them in id order first, as the batch
# statements do (_lock_runs), so no two of them wait for each other crosswise.
# Locked rows that changed meanwhile are checked again and dropped if they no
# longer match.
_IN_ID_ORDER = "ORDER BY workflow_id FOR NO KEY UPDATE"

_LOCK_BY_ID = (
    "run AS (SELECT workflow_id, status, executor_id FROM {s}.workflows "
    "WHERE workflow_id = %(wid)s FOR NO KEY UPDATE)"
)


def _record_statement(s: str, shape: _RecordShape) -> str:
    """The one statement that writes a record and its side effects, for `shape`.

    Optional parts are left out of the text rather than switched off with
    `param IS NULL OR ...`, so each variant gets a plan that never needs
    re-planning, and it returns (written, messages sent, events set).
    """
    ctes: list[str] = []
    gate = ["run.status = 'PENDING'"]
    if shape.executor:
        gate.append("run.executor_id = %(executor)s")
    # Found by primary key alone, the gate checked on the locked row (_BY_ID_ONLY).
    ctes.append(_LOCK_BY_ID.replace("{s}", s))
    if shape.consume:
        # Locking the message makes a concurrent consumer of it wait, then find
        # it gone. Joined with `run`, so the run's row is locked first, in the
        # order delete_workflow takes them (the gate's subqueries are evaluated
        # before `run` is scanned; alone, this one would lock the message first).
        ctes.append(
            f"msg AS (SELECT m.message_id FROM {s}.messages m, run "
            "WHERE m.message_id = ANY(%(consume)s::bigint[]) AND m.workflow_id = %(wid)s "
            "FOR UPDATE OF m)"
        )
        gate.append("(SELECT count(*) FROM msg) = %(consume_count)s")
    if shape.send:
        # A key-share lock keeps the receiving run from being deleted under us.
        ctes.append(
            f"target AS (SELECT workflow_id FROM {s}.workflows "
            "WHERE workflow_id = %(send_to)s FOR KEY SHARE)"
        )
        gate.append("EXISTS (SELECT 1 FROM target)")
    if not shape.first:
        gate.append(
            f"EXISTS (SELECT 1 FROM {s}.records p "
            "WHERE p.workflow_id = %(wid)s AND p.position = %(pos)s - 1)"
        )
    # A record that sets an event keeps what it set, so a fork that copies it
    # can set the event too (create_workflow's fork_of).
    setting = ", event_key, event_value" if shape.event else ""
    set_values = ", %(event_key)s, %(event_value)s" if shape.event else ""
    ctes.append(
        f"ins AS (INSERT INTO {s}.records AS r (workflow_id, {_RECORD_COLUMNS}{setting}) "
        "SELECT run.workflow_id, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s, "
        f"%(call_site)s, %(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s{set_values} "
        f"FROM run WHERE {' AND '.join(gate)} "
        f"{_COMPLETE_PENDING_SETTING if shape.event else _COMPLETE_PENDING})"
    )
    # Only a changed deadline dirties the run's row.
    ctes.append(
        f"wake AS (UPDATE {s}.workflows w SET wake_at = %(wake_at)s FROM ins "
        "WHERE w.workflow_id = ins.workflow_id AND w.wake_at IS DISTINCT FROM %(wake_at)s)"
    )
    sent = "0"
    events = "0"
    if shape.consume:
        ctes.append(
            f"taken AS (DELETE FROM {s}.messages m USING msg, ins "
            "WHERE m.message_id = msg.message_id)"
        )
    if shape.send:
        key_join = ""
        if shape.send_key:
            ctes.append(
                f"used_key AS (INSERT INTO {s}.send_keys (workflow_id, key) "
                "SELECT target.workflow_id, %(send_key)s FROM target, ins "
                "ON CONFLICT DO NOTHING RETURNING workflow_id)"
            )
            key_join = ", used_key"
        ctes.append(
            f"sent AS (INSERT INTO {s}.messages (workflow_id, topic, payload, created_at, "
            "trace_context) "
            "SELECT target.workflow_id, %(send_topic)s, %(send_payload)s, %(now)s, "
            "%(send_trace)s "
            f"FROM target, ins{key_join} RETURNING workflow_id)"
        )
        sent = _notify_count("message", "sent")
    if shape.event:
        ctes.append(
            f"ev AS (INSERT INTO {s}.events (workflow_id, key, value) "
            "SELECT ins.workflow_id, %(event_key)s, %(event_value)s FROM ins "
            "ON CONFLICT (workflow_id, key) DO UPDATE SET value = excluded.value "
            "RETURNING workflow_id)"
        )
        events = _notify_count("event", "ev")
    written = _notify_count("stream", "ins") if shape.stream else "(SELECT count(*) FROM ins)"
    return f"WITH {', '.join(ctes)} SELECT {written}, {sent}, {events}"


def _lock_runs(s: str) -> str:
    """SQL locking the PENDING runs named in CTE `input` (owned by `executor` if set).

    One primary-key probe per input row, in id order, so two batches never
    wait for each other crosswise; a join would let the planner scan every
    PENDING run instead.
    """
    return (
        "SELECT w.workflow_id FROM (SELECT wid, executor FROM input ORDER BY wid) i "
        "CROSS JOIN LATERAL (SELECT w.workflow_id, w.status, w.executor_id "
        # OFFSET 0 keeps the planner from pushing the status check into the
        # scan, which would undo _BY_ID_ONLY.
        f"FROM {s}.workflows w WHERE w.workflow_id = i.wid OFFSET 0 FOR NO KEY UPDATE) w "
        "WHERE w.status = 'PENDING' AND (i.executor IS NULL OR w.executor_id = i.executor)"
    )


def _batch_input(*, finishing: bool) -> str:
    """The CTE `input` of a batch statement: one row per write, from `rows` and `outcome`.

    With `finishing`, each row also carries the run's finish: its status and
    error (elements 12 and 13) and its result (the `result` text[]).
    """
    finish_columns = ", e->>12 AS status, e->>13 AS error, o.result" if finishing else ""
    texts = (
        "unnest(%(outcome)b::text[], %(result)b::text[]) WITH ORDINALITY AS o(outcome, result, n)"
        if finishing
        else "unnest(%(outcome)b::text[]) WITH ORDINALITY AS o(outcome, n)"
    )
    return (
        # The plain columns travel as one JSON array of rows, which psycopg
        # passes as a single string; thirteen array parameters cost more to
        # adapt than the whole statement to run. Outcomes (and results) stay
        # a text[] of their own: extracting a JSON value in SQL unescapes it,
        # and "\u0000" inside a stored value must come back as written. It is
        # sent in binary (`%b`): the text form quotes each element through a
        # regular expression, 4 µs a record on the client.
        'WITH input AS (SELECT (e->>0) COLLATE "C" AS wid, (e->>1)::int AS pos, '
        "e->>2 AS kind, e->>3 AS name, o.outcome, e->>4 AS digest, e->>5 AS call_site, "
        "(e->>6)::timestamptz AS started_at, (e->>7)::timestamptz AS completed_at, "
        "(e->>8)::timestamptz AS rwake, (e->>9)::int AS attempts, e->>10 AS executor, "
        f"(e->>11)::timestamptz AS wake_at{finish_columns} "
        "FROM json_array_elements(%(rows)s::json) WITH ORDINALITY AS r(e, n) "
        f"JOIN {texts} USING (n))"
    )


def _batch_insert(s: str) -> str:
    """The CTE `ins` of a batch statement: each input row's record, through the record gate."""
    return (
        f"ins AS (INSERT INTO {s}.records AS r (workflow_id, {_RECORD_COLUMNS}) "
        "SELECT i.wid, i.pos, i.kind, i.name, i.outcome::json, i.digest, i.call_site, "
        "i.started_at, i.completed_at, i.rwake, i.attempts FROM input i "
        "JOIN run ON run.workflow_id = i.wid "
        # A lateral probe of the primary key per row: `OR EXISTS (...)` lets
        # the planner hash the whole records table instead.
        f"LEFT JOIN LATERAL (SELECT 1 AS found FROM {s}.records p "
        "WHERE p.workflow_id = i.wid AND p.position = i.pos - 1 LIMIT 1) prev ON true "
        "WHERE i.pos = 0 OR prev.found IS NOT NULL "
        f"{_COMPLETE_PENDING})"
    )


# `create_workflow`'s statements, as templates: `_q` fills in the schema.
_CREATE_WORKFLOW = (
    "WITH ins AS (INSERT INTO {s}.workflows (" + _WORKFLOW_COLUMNS + ") VALUES ("
    "%(workflow_id)s, %(name)s, %(status)s, %(inputs)s, %(result)s, %(executor_id)s, "
    "%(app_version)s, %(created_at)s, %(updated_at)s, %(parent_id)s, %(queue)s, "
    "%(priority)s, %(dedup_id)s, %(recovery_attempts)s, %(wake_at)s, %(error)s, "
    "%(started_at)s, %(trace_context)s, %(forked_from)s, %(fork_position)s, "
    "%(deadline)s, %(timeout_seconds)s, %(generation)s, %(continued_as)s) "
    "ON CONFLICT (workflow_id) DO NOTHING RETURNING queue, status) "
    "SELECT count(*) + 0 * count(pg_notify(%(channel)s, "
    "%(origin)s || 'enqueued:' || queue)) "
    "FILTER (WHERE status = 'ENQUEUED' AND queue IS NOT NULL "
    f"AND octet_length(queue) < {_NOTIFY_MAX_KEY}) FROM ins"
)
_INSERT_RECORD = (
    "INSERT INTO {s}.records (workflow_id, " + _RECORD_COLUMNS + ") VALUES ("
    "%(wid)s, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s, %(call_site)s, "
    "%(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s)"
)


def _batch_record_statement(s: str) -> str:
    """Many plain records (no side effects) of distinct runs in one statement.

    The same gate as `_record_statement` per row: the run PENDING (and owned by
    the executor named, if any), the previous position present, a completed
    position never overwritten. Returns the ids of the runs whose record was
    written; the caller sends every other one down the one-record path, which
    explains refusals. Runs are locked in id order so two batches never wait
    for each other crosswise.
    """
    return (
        f"{_batch_input(finishing=False)}, "
        f"run AS ({_lock_runs(s)}), "
        f"{_batch_insert(s)}, "
        f"wake AS (UPDATE {s}.workflows w SET wake_at = i.wake_at FROM ins "
        "JOIN input i ON i.wid = ins.workflow_id WHERE w.workflow_id = ins.workflow_id "
        "AND w.wake_at IS DISTINCT FROM i.wake_at) "
        "SELECT workflow_id FROM ins"
    )


def _batch_finish_record_statement(s: str) -> str:
    """Finish many runs, each with its last record, in one statement (one commit).

    Each row: the record statement's gate and insert, as in
    `_batch_record_statement`, and the run finished only if its record was
    written, so a run's record and finish commit together or not at all.
    Returns (and notifies) the runs finished; the caller sends every other
    one down the one-finish path, which finishes a run whose position holds
    an equal record already, answers False for a run not PENDING, or raises.
    """
    return (
        f"{_batch_input(finishing=True)}, "
        f"run AS ({_lock_runs(s)}), "
        f"{_batch_insert(s)}, "
        f"u AS (UPDATE {s}.workflows w SET status = i.status, result = i.result::json, "
        "error = i.error, updated_at = %(now)s, wake_at = NULL FROM ins "
        "JOIN input i ON i.wid = ins.workflow_id WHERE w.workflow_id = ins.workflow_id "
        "RETURNING w.workflow_id) "
        f"SELECT workflow_id, CASE WHEN octet_length(workflow_id) < {_NOTIFY_MAX_KEY} "
        "THEN pg_notify(%(channel)s, %(origin)s || 'finished:' || workflow_id) END FROM u"
    )


def _finish_record_statement(s: str, *, executor: bool, first: bool) -> str:
    """Finish one run with its last record: one statement, so one round trip and one commit.

    Locks the run's row by primary key (_BY_ID_ONLY), writes the record
    through `record()`'s gate (PENDING, owner, previous position present; a
    pending position completed, a completed one left alone) and finishes the
    run only if the record was written. Returns whether the run passed the
    finish's gate, and how many runs it finished (each one notified).
    """
    gate = ["run.status = 'PENDING'"]
    if executor:
        gate.append("run.executor_id = %(executor)s")
    record_gate = list(gate)
    if not first:
        record_gate.append(
            f"EXISTS (SELECT 1 FROM {s}.records p "
            "WHERE p.workflow_id = %(wid)s AND p.position = %(pos)s - 1)"
        )
    return (
        f"WITH {_LOCK_BY_ID.replace('{s}', s)}, "
        f"ins AS (INSERT INTO {s}.records AS r (workflow_id, {_RECORD_COLUMNS}) "
        "SELECT run.workflow_id, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s, "
        "%(call_site)s, %(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s "
        f"FROM run WHERE {' AND '.join(record_gate)} "
        f"{_COMPLETE_PENDING}), "
        f"u AS (UPDATE {s}.workflows w SET status = %(status)s, result = %(result)s, "
        "error = %(error)s, updated_at = %(now)s, wake_at = NULL FROM ins "
        "WHERE w.workflow_id = ins.workflow_id RETURNING w.workflow_id) "
        f"SELECT EXISTS (SELECT 1 FROM run WHERE {' AND '.join(gate)}), "
        f"{_notify_count('finished', 'u')}"
    )


def _create_many_statement(s: str) -> str:
    """Insert many runs in one statement; returns the ids it created.

    Ids already present are left alone (ON CONFLICT DO NOTHING) and the
    caller reads them afterwards. The rows are inserted in id order, so two
    batches naming the same ids never wait for each other crosswise. Each
    queue that got a new ENQUEUED run is notified once.
    """
    return (
        # The columns travel as one JSON array of rows (one string for psycopg
        # to pass), read as jsonb: `->>` on json parses the text again for
        # every column of every row. The JSON values (inputs, result) travel
        # as strings holding their encoded text, which `->>` gives back exactly
        # as written ("\u0000" included, which jsonb refuses as a value).
        'WITH input AS (SELECT (e->>0) COLLATE "C" AS workflow_id, e->>1 AS name, '
        "e->>2 AS status, (e->>3)::json AS inputs, (e->>4)::json AS result, "
        "e->>5 AS executor_id, e->>6 AS app_version, (e->>7)::timestamptz AS created_at, "
        '(e->>8)::timestamptz AS updated_at, (e->>9) COLLATE "C" AS parent_id, e->>10 AS queue, '
        "(e->>11)::int AS priority, e->>12 AS dedup_id, (e->>13)::int AS recovery_attempts, "
        "(e->>14)::timestamptz AS wake_at, e->>15 AS error, (e->>16)::timestamptz AS started_at, "
        'e->>17 AS trace_context, (e->>18) COLLATE "C" AS forked_from, '
        "(e->>19)::int AS fork_position, (e->>20)::timestamptz AS deadline, "
        "(e->>21)::float8 AS timeout_seconds, (e->>22)::int AS generation, "
        '(e->>23) COLLATE "C" AS continued_as '
        "FROM jsonb_array_elements(%(rows)s::jsonb) AS e), "
        f"ins AS (INSERT INTO {s}.workflows ({_WORKFLOW_COLUMNS}) "
        f"SELECT {_WORKFLOW_COLUMNS} FROM input ORDER BY workflow_id "
        "ON CONFLICT (workflow_id) DO NOTHING RETURNING workflow_id, queue, status), "
        "notified AS (SELECT count(pg_notify(%(channel)s, %(origin)s || 'enqueued:' || queue)) "
        "FROM (SELECT DISTINCT queue FROM ins WHERE status = 'ENQUEUED' AND queue IS NOT NULL) q "
        f"WHERE octet_length(queue) < {_NOTIFY_MAX_KEY}) "
        "SELECT ins.workflow_id FROM ins, notified"
    )


def _read_many_statement(s: str) -> str:
    """The runs with the ids given, one primary-key probe each (_BY_ID_ONLY)."""
    columns = ", ".join("w." + c.strip() for c in _WORKFLOW_COLUMNS.split(","))
    return (
        f'SELECT {columns} FROM (SELECT wid COLLATE "C" AS wid '
        "FROM unnest(%(wid)b::text[]) AS u(wid)) i "
        # OFFSET 0 keeps the planner from flattening the probe into a join,
        # which a plan made on a small table does with a scan of every run.
        f"CROSS JOIN LATERAL (SELECT * FROM {s}.workflows w WHERE w.workflow_id = i.wid "
        "OFFSET 0) w"
    )


def _dedup_holders_statement(s: str) -> str:
    """For each (id, queue, dedup_id) given: whether the id exists, and the live holder.

    Searches runs by queue and dedup_id, once per batch: planned each time
    (_PLAN_EACH_TIME). Each search is a lateral probe fenced with OFFSET 0:
    `EXISTS (...)` lets the planner hash the whole table instead, and with
    the ORDER BY next to the search it walked the created_at index for the
    first live run of each dedup_id rather than look the id up.
    """
    return (
        "SELECT i.wid, me.found IS NOT NULL, h.workflow_id "
        'FROM (SELECT wid COLLATE "C" AS wid, queue, dedup FROM unnest(%(wid)s::text[], '
        "%(queue)s::text[], %(dedup)s::text[]) AS u(wid, queue, dedup)) i "
        f"LEFT JOIN LATERAL (SELECT 1 AS found FROM {s}.workflows me "
        "WHERE me.workflow_id = i.wid OFFSET 0) me ON true "
        "LEFT JOIN LATERAL (SELECT d.workflow_id FROM (SELECT workflow_id, status, created_at "
        f"FROM {s}.workflows w WHERE w.queue = i.queue AND w.dedup_id = i.dedup OFFSET 0) d "
        "WHERE d.status IN ('ENQUEUED', 'PENDING') ORDER BY d.created_at, d.workflow_id "
        "LIMIT 1) h ON true"
    )


class _RacedWithDelete(Exception):
    """A run the batch found in its way was deleted before it was read: start over."""


@attrs.frozen
class _PlainRecord:
    """A record() call without side effects: what group commit batches."""

    workflow_id: str
    record: Record
    executor_id: str | None
    wake_at: datetime | None


@attrs.frozen
class _Finish:
    """A finish_workflow() call, with or without its last record: group commit batches these too."""

    workflow_id: str
    status: Status
    result: Outcome | None
    error: str
    executor_id: str | None
    record: Record | None = None


_Write = _PlainRecord | _Finish


def _batch_finish_statement(s: str) -> str:
    """Finish many runs (each PENDING, owned by its executor if named); returns those finished.

    The runs are locked in id order first, as the record statement does, so
    two batches never wait for each other crosswise.
    """
    return (
        'WITH input AS (SELECT wid COLLATE "C" AS wid, status, result, error, executor '
        "FROM unnest(%(wid)b::text[], %(status)b::text[], %(result)b::text[], "
        "%(error)b::text[], %(executor)b::text[]) AS i(wid, status, result, error, executor)), "
        f"run AS ({_lock_runs(s)}), "
        f"u AS (UPDATE {s}.workflows w SET status = i.status, result = i.result::json, "
        "error = i.error, updated_at = %(now)s, wake_at = NULL FROM run JOIN input i "
        "ON i.wid = run.workflow_id WHERE w.workflow_id = run.workflow_id "
        "RETURNING w.workflow_id) "
        f"SELECT workflow_id, CASE WHEN octet_length(workflow_id) < {_NOTIFY_MAX_KEY} "
        "THEN pg_notify(%(channel)s, %(origin)s || 'finished:' || workflow_id) END FROM u"
    )


def _layers(slots: Sequence[Slot[_Write]]) -> list[list[Slot[_Write]]]:
    """Split a batch so no run appears twice in one statement (arrival order kept)."""
    layers: list[list[Slot[_Write]]] = []
    depth: dict[str, int] = {}
    for slot in slots:
        level = depth.get(slot.item.workflow_id, 0)
        depth[slot.item.workflow_id] = level + 1
        if level == len(layers):
            layers.append([])
        layers[level].append(slot)
    return layers


def _is_stream(record: Record) -> bool:
    return record.kind in STREAM_KINDS and record.outcome is not None


def _notify_count(kind: str, source: str) -> str:
    """SQL counting the rows of `source`, notifying `kind:<workflow_id>` for each."""
    # `0 * count(pg_notify(...))` evaluates the notification for every row
    # without letting it change the count.
    return (
        "(SELECT count(*) + 0 * count(pg_notify(%(channel)s, "
        f"%(origin)s || '{kind}:' || workflow_id)) "
        f"FILTER (WHERE octet_length(workflow_id) < {_NOTIFY_MAX_KEY}) FROM {source})"
    )


class _ServerHold:
    """An executor id held by a session advisory lock, on a connection of its own.

    The server drops the lock when that session ends, so a crashed engine's
    id comes free by itself; one whose connection was lost (a server restart)
    takes the lock again at its next `keep()`, unless another engine took the
    id meanwhile.
    """

    def __init__(self, store: PostgresStore, key: int, conn: psycopg.Connection[Any]) -> None:
        self._store = store
        self._key = key
        self._conn: psycopg.Connection[Any] | None = conn
        self._released = False
        self._lock = threading.Lock()

    def keep(self) -> bool:
        with self._lock:
            if self._released:
                return False
            if self._conn is not None and not self._conn.closed:
                try:
                    self._conn.execute("SELECT 1")
                    return True
                except psycopg.Error:
                    self._conn.close()
            self._conn = None
            self._conn = self._store._lock_executor(self._key)
            return self._conn is not None

    def release(self) -> None:
        with self._lock:
            self._released = True
            conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            # Unlocked before the answer comes back: a session's end drops its locks
            # too, but only once the server has noticed, a moment after close().
            conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        except psycopg.Error:
            pass  # the session is gone already, and its lock with it
        finally:
            conn.close()


class _Listener:
    """LISTENs on one channel from its own thread and connection, reconnecting forever."""

    def __init__(
        self,
        conninfo: str,
        channel: str,
        application_name: str,
        deliver: Callable[[str, str], None],
        origin: str,
        safe_url: str,
    ) -> None:
        self._conninfo = conninfo
        self._origin = origin
        self._channel = channel
        self._application_name = application_name
        self._deliver = deliver
        self._safe_url = safe_url
        self._stop = threading.Event()
        self.ready = threading.Event()
        self.connections = 0  # how many times LISTEN was (re)established
        self._thread = threading.Thread(
            target=self._run, name=f"replaykit-listen-{channel}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        delay = 0.05
        while not self._stop.is_set():
            try:
                self._listen()
                delay = 0.05
            except Exception as exc:
                self.ready.clear()
                if self._stop.is_set():
                    return
                _log.warning(
                    "replaykit listener on %s lost its connection (%s); reconnecting in %.2fs",
                    self._safe_url,
                    exc,
                    delay,
                )
                self._stop.wait(delay)
                delay = min(delay * 2, 5.0)

    def _listen(self) -> None:
        with psycopg.connect(
            self._conninfo,
            autocommit=True,
            application_name=self._application_name,
            connect_timeout=10,
        ) as conn:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
            self.connections += 1
            self.ready.set()
            if self.connections > 1:
                # Whatever was sent while no LISTEN stood is lost. Waiters poll for
                # most of it, but nothing polls for a delete: subscribers hear
                # "relisten" and forget what a lost note might have changed.
                self._deliver("relisten", "")
            while not self._stop.is_set():
                # A short timeout so stop() is noticed without closing the socket
                # under the thread.
                for notify in conn.notifies(timeout=0.25):
                    # "<origin>:<kind>:<key>" (the key may hold colons), or
                    # "<kind>:<key>" from a sender that names no origin.
                    head, sep, rest = notify.payload.partition(":")
                    if not sep:
                        continue
                    if head in _NOTE_KINDS:
                        self._deliver(head, rest)
                        continue
                    if notify.payload.startswith(self._origin):
                        continue
                    kind, sep, key = rest.partition(":")
                    if sep:
                        self._deliver(kind, key)


class PostgresStore:
    """The Store protocol on PostgreSQL, in schema `schema`; safe to share between threads.

    Creating the store connects, then creates or migrates the schema unless
    `auto_migrate=False` (then `schema_status()` tells where it stands and
    `migrate()` brings it up to date). An unreachable server raises
    `StoreUnavailable`.
    """

    #: LISTEN/NOTIFY carries every note to every engine on the schema, whatever its
    #: process or machine (a note can be lost with a connection; waiters also poll).
    notes_reach_every_sharer = True

    def __init__(
        self,
        url: str,
        *,
        schema: str = _DEFAULT_SCHEMA,
        pool_min: int = 1,
        pool_max: int = 20,
        connect_timeout: float = 10.0,
        auto_migrate: bool = True,
    ) -> None:
        self._schema = _validate_schema(schema)
        if pool_min < 0 or pool_max < max(pool_min, 1):
            raise ValueError(
                f"need 0 <= pool_min <= pool_max and pool_max >= 1, got pool_min={pool_min}, "
                f"pool_max={pool_max}"
            )
        self._url = url
        self._safe_url = redact_url(url)
        self._connect_timeout = connect_timeout
        self._channel = schema_channel(schema)
        # Notifications carry their sender's origin, so the listener can skip
        # the ones this instance sent: it told its own subscribers at commit.
        self._origin = uuid.uuid4().hex[:12] + ":"
        self._s = sql.Identifier(schema).as_string(None)
        self._executor_prefix = f"replaykit\x00{schema}\x00executor\x00".encode()
        self._create_statement = self._q(_CREATE_WORKFLOW)
        self._statements: dict[object, str] = {}  # by _RecordShape, or its fields' tuple
        self._batch_statement = _batch_record_statement(self._s)
        self._finish_statement = _batch_finish_statement(self._s)
        self._finish_record_batch = _batch_finish_record_statement(self._s)
        self._finish_record_statements: dict[tuple[bool, bool], str] = {}
        self._create_many = _create_many_statement(self._s)
        self._read_many = _read_many_statement(self._s)
        self._dedup_holders = _dedup_holders_statement(self._s)
        self._group: GroupCommit[_Write] = GroupCommit(self._write_batch, write_one=self._write_one)
        self._subscribers = Subscribers()
        self._subscribers_lock = threading.Lock()  # guards the listener and `_closed`
        self._listener: _Listener | None = None
        self._closed = False
        self._pool = ConnectionPool(
            url,
            min_size=pool_min,
            max_size=pool_max,
            kwargs={"autocommit": True},
            configure=self._configure,
            open=False,
            timeout=connect_timeout,
            name=f"replaykit-{schema}",
        )
        self._held = HeldConnection(self._pool, connect_timeout)
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise self._unreachable(exc) from exc
        try:
            if auto_migrate:
                self._migrate_at_open()
        except BaseException:
            self._pool.close()
            raise

    def _migrate_at_open(self) -> None:
        delay = 0.05
        for attempt in range(1, _OPEN_ATTEMPTS + 1):
            try:
                self.migrate()
                return
            except _PoolExhausted as exc:
                # No connection came in connect_timeout (the server went away after
                # the pool opened): waiting again helps nobody; say why, as an open does.
                raise self._unreachable(exc) from exc
            except StoreUnavailable as exc:
                if attempt == _OPEN_ATTEMPTS:
                    raise
                _log.warning(
                    "PostgreSQL at %s: the schema check at open lost its connection (%s); "
                    "trying again",
                    self._safe_url,
                    exc,
                )
                time.sleep(delay)
                delay *= 2

    def _unreachable(self, exc: Exception) -> StoreUnavailable:
        """No connection came within connect_timeout: why, and what to check."""
        return StoreUnavailable(
            f"cannot connect to PostgreSQL at {self._safe_url} within {self._connect_timeout}s "
            f"({self._why_unreachable() or exc}); is the server running, and are the host, "
            "port and credentials right?"
        )

    def _why_unreachable(self) -> str:
        """The server's own reason for refusing a connection; the pool only says it timed out."""
        try:
            psycopg.connect(self._url, connect_timeout=max(int(self._connect_timeout), 1)).close()
        except psycopg.Error as exc:
            return str(exc).strip().replace(self._url, self._safe_url)
        return ""

    def __repr__(self) -> str:
        return f"PostgresStore({self._safe_url!r}, schema={self._schema!r})"

    @property
    def schema(self) -> str:
        return self._schema

    @property
    def channel(self) -> str:
        return self._channel

    # -- connections ---------------------------------------------------------

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        conn.execute("SET TIME ZONE 'UTC'")
        set_json_loads(_load_json, conn)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self!r} is closed")

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection.

        Connection trouble becomes `StoreUnavailable`, which callers retry; an
        error the server would raise again (`_transient` says which) becomes
        `StoreError`, raised once.
        """
        self._check_open()
        try:
            if self._held.mine():
                conn = self._held.get()
                try:
                    yield conn
                except BaseException:
                    if conn.broken or conn.info.transaction_status != pq.TransactionStatus.IDLE:
                        self._held.drop()
                    raise
            else:
                with self._pool.connection() as conn:
                    yield conn
        except PoolTimeout as exc:
            raise _PoolExhausted(
                f"no connection to PostgreSQL at {self._safe_url} within "
                f"{self._connect_timeout}s ({exc})"
            ) from exc
        except psycopg.DatabaseError as exc:
            if _transient(exc):
                raise StoreUnavailable(f"PostgreSQL at {self._safe_url} failed: {exc}") from exc
            raise StoreError(
                f"PostgreSQL at {self._safe_url} refused the operation "
                f"({type(exc).__name__}, SQLSTATE {exc.sqlstate or 'none'}): {exc}. This is "
                "not an outage, so replaykit does not retry it; the server's message says "
                "what it refused"
            ) from exc

    def _one(self, query: str, params: Any = None) -> Any:
        with self._connection() as conn:
            return conn.execute(query, params).fetchone()

    def _all(self, query: str, params: Any = None, *, prepare: bool | None = None) -> list[Any]:
        with self._connection() as conn:
            return conn.execute(query, params, prepare=prepare).fetchall()

    def _q(self, template: str) -> str:
        return template.replace("{s}", self._s)

    # -- schema --------------------------------------------------------------

    def schema_status(self) -> tuple[int, int]:
        """(the schema's migration version, the latest this replaykit knows); 0 if absent."""
        with self._connection() as conn:
            return self._current_version(conn), len(MIGRATIONS)

    def _current_version(self, conn: psycopg.Connection[Any]) -> int:
        exists = conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (f"{self._s}.schema_version",)
        ).fetchone()
        if not exists or not exists[0]:
            return 0
        found = conn.execute(self._q("SELECT max(version) FROM {s}.schema_version")).fetchone()
        return int(found[0]) if found and found[0] is not None else 0

    def migrate(self) -> int:
        """Create the schema or bring it to the latest version; return that version.

        Safe to run from many processes at once: they queue on an advisory
        lock, and all but the first find nothing left to do.
        """
        latest = len(MIGRATIONS)
        with self._connection() as conn:
            if self._current_version(conn) == latest:
                return latest
            try:
                with conn.transaction():
                    conn.execute(f"SET LOCAL lock_timeout = '{_MIGRATION_LOCK_TIMEOUT}'")
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._key("migrate"),))
                    conn.execute(self._q("CREATE SCHEMA IF NOT EXISTS {s}"))
                    conn.execute(
                        self._q(
                            "CREATE TABLE IF NOT EXISTS {s}.schema_version ("
                            "version integer PRIMARY KEY, "
                            "applied_at timestamptz NOT NULL DEFAULT now())"
                        )
                    )
                    current = self._current_version(conn)
                    if current > latest:
                        raise StoreError(
                            f"schema {self._schema!r} at {self._safe_url} is at version "
                            f"{current}, newer than this replaykit knows ({latest}); upgrade "
                            "replaykit, or use another schema"
                        )
                    for version in range(current + 1, latest + 1):
                        conn.execute(self._migration(version))
                        conn.execute(
                            self._q("INSERT INTO {s}.schema_version (version) VALUES (%s)"),
                            (version,),
                        )
            except psycopg.errors.LockNotAvailable as exc:
                raise StoreError(
                    f"could not migrate schema {self._schema!r} at {self._safe_url}: a lock "
                    f"was not granted within {_MIGRATION_LOCK_TIMEOUT} ({exc}). Another "
                    "process may be migrating it, or long transactions hold its tables; "
                    "retry, or run `replaykit migrate` when traffic is low"
                ) from exc
        return latest

    def _key(self, purpose: str) -> int:
        """An advisory-lock key for `purpose` in this schema."""
        digest = hashlib.sha256(f"replaykit\x00{self._schema}\x00{purpose}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def _migration(self, version: int) -> sql.Composed:
        name = MIGRATIONS[version - 1]
        text = resources.files("replaykit.stores").joinpath("sql", name).read_text("utf-8")
        return sql.SQL(text).format(schema=sql.Identifier(self._schema))

    # -- notifications -------------------------------------------------------

    def subscribe(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        unsubscribe = self._subscribers.add(callback)
        with self._subscribers_lock:
            listener = self._listener
            if listener is None and not self._closed:
                listener = self._listener = _Listener(
                    self._url,
                    self._channel,
                    f"replaykit-listen:{self._schema}"[:63],
                    self._subscribers.deliver,
                    self._origin,
                    self._safe_url,
                )
                listener.start()
        if listener is not None:
            # Notifications sent before LISTEN took effect are lost; a brief wait
            # makes "subscribe, then act" dependable when the server is up.
            listener.ready.wait(timeout=self._connect_timeout)
        return unsubscribe

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
        insert = self._create_statement
        params = {
            "workflow_id": stored.workflow_id,
            "name": stored.name,
            "status": Status(stored.status).value,
            "inputs": None if stored.inputs is None else _json(stored.inputs),
            "result": _outcome_param(stored.result),
            "executor_id": stored.executor_id,
            "app_version": stored.app_version,
            "created_at": stored.created_at,
            "updated_at": stored.updated_at,
            "parent_id": stored.parent_id,
            "queue": stored.queue,
            "priority": stored.priority,
            "dedup_id": stored.dedup_id,
            "recovery_attempts": stored.recovery_attempts,
            "wake_at": stored.wake_at,
            "error": stored.error,
            "started_at": stored.started_at,
            "trace_context": stored.trace_context,
            "forked_from": stored.forked_from,
            "fork_position": stored.fork_position,
            "deadline": stored.deadline,
            "timeout_seconds": stored.timeout,
            "generation": stored.generation,
            "continued_as": stored.continued_as,
            "channel": self._channel,
            "origin": self._origin,
        }
        record_params = [_record_params(row.workflow_id, r) for r in records]
        insert_record = self._q(_INSERT_RECORD) if records else ""
        deduplicated = row.queue is not None and row.dedup_id is not None
        for _ in range(5):
            got_events = False
            with self._connection() as conn:
                if record_params or deduplicated:
                    with conn.transaction():
                        if deduplicated:
                            self._check_dedup(conn, stored)
                        inserted = conn.execute(insert, params).fetchone()
                        if inserted and inserted[0] and record_params:
                            with conn.cursor() as cur:
                                cur.executemany(insert_record, record_params)
                            if fork_of is not None:
                                got_events = self._copy_events(conn, fork_of, row.workflow_id)
                else:
                    inserted = conn.execute(insert, params).fetchone()
            if inserted and inserted[0]:
                if stored.status is Status.ENQUEUED and stored.queue is not None:
                    self._notify([("enqueued", stored.queue)])
                if got_events:
                    self._notify([("event", row.workflow_id)])
                return stored, True
            found = self._one(self._q(_SELECT_WORKFLOW), (row.workflow_id,))
            if found is not None:
                return with_first_inputs(
                    [(shown(_workflow_from, found), False)], self._first_inputs
                )[0]
            # The run that stood in the way was deleted meanwhile: try again.
        raise StoreError(
            f"workflow id {row.workflow_id!r}: create_workflow kept racing with deletes"
        )

    def _copy_events(self, conn: psycopg.Connection[Any], source_id: str, fork_id: str) -> bool:
        """Set on a fork what its copied records set in the source (inside its transaction).

        The copied records take what their originals set; then the fork gets,
        for each key, the value its last record setting that key set (and a
        notification). Whether it got any.
        """
        conn.execute(
            self._q(
                "UPDATE {s}.records f SET event_key = src.event_key, "
                "event_value = src.event_value FROM {s}.records src "
                "WHERE f.workflow_id = %(fork)s AND src.workflow_id = %(source)s "
                "AND src.position = f.position AND src.kind = f.kind AND src.digest = f.digest "
                "AND src.event_key IS NOT NULL"
            ),
            {"fork": fork_id, "source": source_id},
        )
        found = conn.execute(
            self._q(
                "WITH ev AS (INSERT INTO {s}.events (workflow_id, key, value) "
                "SELECT DISTINCT ON (event_key) workflow_id, event_key, event_value "
                "FROM {s}.records WHERE workflow_id = %(wid)s AND event_key IS NOT NULL "
                "ORDER BY event_key, position DESC "
                "ON CONFLICT (workflow_id, key) DO UPDATE SET value = excluded.value "
                "RETURNING workflow_id) SELECT " + _notify_count("event", "ev")
            ),
            {"wid": fork_id, "channel": self._channel, "origin": self._origin},
        ).fetchone()
        return bool(found and found[0])

    def create_workflows(self, rows: Sequence[WorkflowRow]) -> list[tuple[WorkflowRow, bool]]:
        batch = stamped_for_batch(batch_of(rows))
        if not batch:
            return []
        firsts = first_of_each_id(batch)
        deduplicated = any(r.queue is not None and r.dedup_id is not None for r in firsts)
        created: set[str] = set()
        existing: dict[str, WorkflowRow] = {}
        todo = firsts
        for _ in range(5):
            with self._connection() as conn:
                if deduplicated:
                    # The dedup check, the insert and the read of the runs in
                    # the way in one transaction: a refusal writes nothing.
                    try:
                        with conn.transaction():
                            self._check_batch_dedup(conn, todo)
                            inserted, found = self._insert_many(conn, todo)
                            if len(inserted) + len(found) < len(todo):
                                raise _RacedWithDelete
                    except _RacedWithDelete:
                        continue
                else:
                    # One statement, one commit; the read only if some ids existed.
                    inserted, found = self._insert_many(conn, todo)
            created |= inserted
            existing.update(found)
            # A run in the way deleted before it was read: create that row again.
            todo = [r for r in todo if r.workflow_id not in inserted and r.workflow_id not in found]
            if not todo:
                break
        else:
            raise StoreError(
                f"create_workflows of {len(firsts)} runs kept racing with deletes "
                f"(e.g. workflow id {todo[0].workflow_id!r})"
            )
        answers: list[tuple[WorkflowRow, bool]] = []
        answered: dict[str, WorkflowRow] = {}
        queues: dict[str, None] = {}
        for row in batch:
            if row.workflow_id in answered:
                answers.append((answered[row.workflow_id], False))
            elif row.workflow_id in created:
                answered[row.workflow_id] = row
                answers.append((row, True))
                if row.status is Status.ENQUEUED and row.queue is not None:
                    queues[row.queue] = None
            else:
                answered[row.workflow_id] = existing[row.workflow_id]
                answers.append((existing[row.workflow_id], False))
        self._notify([("enqueued", queue) for queue in queues])
        return with_first_inputs(answers, self._first_inputs)

    def _first_inputs(self, workflow_ids: list[str]) -> dict[str, Any]:
        """The first inputs kept for these runs (those that continued as new)."""
        rows = self._all(
            self._q(
                "SELECT workflow_id, first_inputs FROM {s}.workflows "
                "WHERE workflow_id = ANY(%s) AND first_inputs IS NOT NULL"
            ),
            (workflow_ids,),
        )
        found: dict[str, Any] = {}
        for workflow_id, data in rows:
            try:
                found[workflow_id] = inputs_value(data)
            except Exception:
                continue  # unreadable: the start is compared with the current inputs only
        return found

    def _insert_many(
        self, conn: psycopg.Connection[Any], rows: Sequence[WorkflowRow]
    ) -> tuple[set[str], dict[str, WorkflowRow]]:
        """Insert `rows` (distinct ids) in one statement; (ids created, runs found in the way)."""
        plain = [
            [
                row.workflow_id,
                row.name,
                Status(row.status).value,
                None if row.inputs is None else serde.dumps(row.inputs),
                None if row.result is None else serde.dumps(outcome_to_json(row.result)),
                row.executor_id,
                row.app_version,
                _iso(row.created_at),
                _iso(row.updated_at),
                row.parent_id,
                row.queue,
                row.priority,
                row.dedup_id,
                row.recovery_attempts,
                _iso(row.wake_at),
                row.error,
                _iso(row.started_at),
                row.trace_context,
                row.forked_from,
                row.fork_position,
                _iso(row.deadline),
                row.timeout,
                row.generation,
                row.continued_as,
            ]
            for row in rows
        ]
        params = {
            "rows": serde.dumps(plain),
            "channel": self._channel,
            "origin": self._origin,
        }
        inserted = {r[0] for r in conn.execute(self._create_many, params).fetchall()}
        in_the_way = [row.workflow_id for row in rows if row.workflow_id not in inserted]
        found: dict[str, WorkflowRow] = {}
        if in_the_way:
            for r in conn.execute(self._read_many, {"wid": in_the_way}).fetchall():
                found[r[0]] = shown(_workflow_from, r)
        return inserted, found

    def _check_batch_dedup(
        self, conn: psycopg.Connection[Any], rows: Sequence[WorkflowRow]
    ) -> None:
        """`check_batch_dedup` for `rows` (inside a transaction), as `_check_dedup` for one row.

        The advisory locks of every (queue, dedup_id) of the batch are taken in
        key order, so two batches never wait for each other crosswise, and
        before the check, whose statement then sees what earlier holders
        committed.
        """
        deduplicated = [r for r in rows if r.queue is not None and r.dedup_id is not None]
        keys = sorted({self._key(f"dedup {r.queue}\x00{r.dedup_id}") for r in deduplicated})
        # JIT off for the rest of the transaction: the check is index probes
        # that JIT cannot speed up, and a large batch's estimate would pass
        # jit_above_cost and pay for compiling it.
        conn.execute(
            "SELECT set_config('jit', 'off', true), count(pg_advisory_xact_lock(k)) "
            "FROM unnest(%s::bigint[]) AS k",
            (keys,),
        )
        found = conn.execute(
            self._dedup_holders,
            {
                "wid": [r.workflow_id for r in deduplicated],
                "queue": [r.queue for r in deduplicated],
                "dedup": [r.dedup_id for r in deduplicated],
            },
            prepare=_PLAN_EACH_TIME,
        ).fetchall()
        exists = {r[0]: bool(r[1]) for r in found}
        holders = {r[0]: r[2] for r in found}
        check_batch_dedup(
            rows,
            is_new=lambda workflow_id: not exists.get(workflow_id, False),
            live_holder=lambda row: holders.get(row.workflow_id),
        )

    def _check_dedup(self, conn: psycopg.Connection[Any], row: WorkflowRow) -> None:
        """Refuse `row` if a live run of its queue holds its dedup_id (inside a transaction).

        Creators of one (queue, dedup_id) take turns on an advisory lock, so two
        engines enqueueing the same id at once cannot both get through.
        """
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s)",
            (self._key(f"dedup {row.queue}\x00{row.dedup_id}"),),
        )
        holder = conn.execute(
            self._q(
                "SELECT w.workflow_id FROM {s}.workflows w "
                "WHERE w.queue = %(queue)s AND w.dedup_id = %(dedup)s "
                "AND w.status IN ('ENQUEUED', 'PENDING') "
                "AND NOT EXISTS (SELECT 1 FROM {s}.workflows me WHERE me.workflow_id = %(wid)s) "
                "ORDER BY w.created_at, w.workflow_id LIMIT 1"
            ),
            {"queue": row.queue, "dedup": row.dedup_id, "wid": row.workflow_id},
        ).fetchone()
        if holder is not None:
            raise duplicate_dedup(row, holder[0])

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
        if limits.limit <= 0:
            return []
        params: dict[str, Any] = {
            "queue": queue,
            "version": app_version,
            "now": now,
            "executor": executor_id,
        }
        ready = self._q(
            "FROM {s}.workflows WHERE queue = %(queue)s AND status = 'ENQUEUED' "
            "AND app_version = %(version)s AND (wake_at IS NULL OR wake_at <= %(now)s)"
        )
        take = self._q(
            "UPDATE {s}.workflows w SET status = 'PENDING', executor_id = %(executor)s, "
            "started_at = %(now)s, wake_at = NULL, updated_at = %(now)s, "
            # A queued run's timeout starts at its claim; an earlier deadline of its own holds.
            "deadline = CASE WHEN w.timeout_seconds IS NULL THEN w.deadline "
            "ELSE LEAST(w.deadline, %(now)s + w.timeout_seconds * interval '1 second') END "
            f"FROM (SELECT workflow_id {ready} "
            "ORDER BY priority, created_at, workflow_id LIMIT %(room)s "
            "FOR UPDATE SKIP LOCKED) AS ready WHERE w.workflow_id = ready.workflow_id "
            f"RETURNING {', '.join('w.' + c.strip() for c in _WORKFLOW_COLUMNS.split(','))}, "
            "EXISTS (SELECT 1 FROM {s}.records r WHERE r.workflow_id = w.workflow_id)"
        )
        with self._connection() as conn:
            if limits.concurrency is None and limits.rate_limit is None:
                # SKIP LOCKED alone keeps two claimers off the same run; on an
                # empty queue this is one indexed read that writes nothing.
                params["room"] = limits.limit
                rows = conn.execute(take, params).fetchall()
            elif (
                conn.execute(
                    f"SELECT 1 {ready} LIMIT 1", params, prepare=_PLAN_EACH_TIME
                ).fetchone()
                is None
            ):
                # Engines poll for claims: an empty queue should not take the lock.
                return []
            else:
                with conn.transaction():
                    # The limits count every claimer's runs, so claimers of this
                    # queue take turns; each statement after the lock sees what
                    # the previous holder committed.
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._key(f"claim {queue}"),))
                    room = claim_room(
                        limits,
                        running=self._count_running(conn, queue, limits),
                        started_in_period=lambda since: self._count_started(conn, queue, since),
                        now=now,
                    )
                    if room <= 0:
                        return []
                    params["room"] = room
                    rows = conn.execute(take, params).fetchall()
        taken = claimed(_claimed_from, rows)
        taken.sort(key=lambda r: (r.priority, r.created_at or now, r.workflow_id))
        return taken

    def _count_running(self, conn: psycopg.Connection[Any], queue: str, limits: ClaimLimits) -> int:
        if limits.concurrency is None:
            return 0
        found = conn.execute(
            self._q("SELECT count(*) FROM {s}.workflows WHERE queue = %s AND status = 'PENDING'"),
            (queue,),
            prepare=_PLAN_EACH_TIME,
        ).fetchone()
        return int(found[0]) if found else 0

    def _count_started(self, conn: psycopg.Connection[Any], queue: str, since: datetime) -> int:
        found = conn.execute(
            self._q("SELECT count(*) FROM {s}.workflows WHERE queue = %s AND started_at > %s"),
            (queue, since),
            prepare=_PLAN_EACH_TIME,
        ).fetchone()
        return int(found[0]) if found else 0

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
        with self._connection() as conn:
            conn.execute(
                self._q(beats.upsert_sql("{s}.heartbeats", "%s", "::json")),
                (executor_id, app_version, now, names),
            )

    def read_heartbeats(self, since: datetime) -> list[beats.Heartbeat]:
        """The last heartbeats of the engines heard from at `since` or later.

        Not part of the `Store` protocol: replaykit/_waiting.py asks for it where a
        store has it, to say which engines run and what (a read; nothing is locked).
        """
        rows = self._all(self._q(beats.read_sql("{s}.heartbeats", "%s")), (since,), prepare=False)
        return [beats.Heartbeat(r[0], r[1], r[2], beats.decode(r[3])) for r in rows]

    def take_over(
        self, *, executor_id: str, app_version: str, lease_seconds: float, now: datetime
    ) -> list[str]:
        check_names(executor_id=executor_id, app_version=app_version)
        rows = self._all(
            self._q(
                "UPDATE {s}.workflows w SET executor_id = %(executor)s, updated_at = %(now)s "
                "FROM (SELECT workflow_id FROM {s}.workflows "
                "WHERE status = 'PENDING' AND app_version = %(version)s AND executor_id IN ("
                "SELECT executor_id FROM {s}.heartbeats WHERE CASE "
                "WHEN executor_id <> %(executor)s AND seen_at < %(cutoff)s "
                f"THEN pg_try_advisory_xact_lock({_EXECUTOR_KEY_SQL}) ELSE false END) "
                f"{_IN_ID_ORDER}) AS dead WHERE w.workflow_id = dead.workflow_id "
                "RETURNING w.workflow_id, w.created_at"
            ),
            {
                "executor": executor_id,
                "now": now,
                "version": app_version,
                "cutoff": now - timedelta(seconds=lease_seconds),
                "key_prefix": self._executor_prefix,
                "key_separator": b"\x00",
            },
            prepare=_PLAN_EACH_TIME,
        )
        return [r[0] for r in sorted(rows, key=lambda r: (r[1], r[0]))]

    def hold_executor(self, executor_id: str, app_version: str) -> ExecutorHold | None:
        check_names(executor_id=executor_id, app_version=app_version)
        self._check_open()
        key = self._executor_key(executor_id, app_version)
        conn = self._lock_executor(key)
        return None if conn is None else _ServerHold(self, key, conn)

    def _lock_executor(self, key: int) -> psycopg.Connection[Any] | None:
        """A new session holding the advisory lock `key`, or None if another session holds it."""
        try:
            conn = psycopg.connect(
                self._url,
                autocommit=True,
                connect_timeout=max(int(self._connect_timeout), 1),
                # Read by `executor_holder` for whoever finds the id held; the pid
                # is read now, not at import, for processes that fork.
                application_name=f"replaykit engine: host {socket.gethostname()}, "
                f"pid {os.getpid()}"[:63],
            )
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {self._safe_url} to hold an executor id: "
                f"{str(exc).strip().replace(self._url, self._safe_url)}"
            ) from exc
        try:
            # The server learns of a vanished client machine by keepalives only;
            # these bound how long a dead engine's id stays held to about 25 s.
            conn.execute(
                "SELECT set_config('tcp_keepalives_idle', '10', false), "
                "set_config('tcp_keepalives_interval', '5', false), "
                "set_config('tcp_keepalives_count', '3', false)"
            )
            got = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        except psycopg.Error as exc:
            conn.close()
            raise StoreUnavailable(
                f"PostgreSQL at {self._safe_url} failed while holding an executor id: {exc}"
            ) from exc
        if got is None or not got[0]:
            conn.close()
            return None
        return conn

    def _executor_key(self, executor_id: str, app_version: str) -> int:
        """The advisory-lock key of an executor id and version; `_EXECUTOR_KEY_SQL` agrees."""
        digest = hashlib.sha256(
            self._executor_prefix + executor_id.encode() + b"\x00" + app_version.encode()
        ).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def executor_holder(self, executor_id: str, app_version: str) -> str:
        check_names(executor_id=executor_id, app_version=app_version)
        key = self._executor_key(executor_id, app_version)
        found = self._one(
            "SELECT a.application_name, host(a.client_addr), a.backend_start "
            "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid",
            ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
        )
        if found is None:
            return ""
        name, client, since = found
        parts = [str(name or "an unnamed session")]
        if client:
            parts.append(f"client address {client}")
        if since is not None:
            parts.append(f"connected since {since.isoformat(timespec='seconds')}")
        return ", ".join(parts)

    def release(self, executor_id: str) -> list[str]:
        check_names(executor_id=executor_id)
        rows = self._all(
            self._q(
                "WITH r AS (UPDATE {s}.workflows w SET status = 'ENQUEUED', executor_id = '', "
                "updated_at = %(now)s FROM (SELECT workflow_id FROM {s}.workflows "
                "WHERE status = 'PENDING' AND executor_id = %(executor)s AND queue IS NOT NULL "
                f"{_IN_ID_ORDER}) AS mine WHERE w.workflow_id = mine.workflow_id "
                "RETURNING w.workflow_id, w.queue, w.created_at), "
                "n AS (SELECT count(pg_notify(%(channel)s, %(origin)s || 'enqueued:' || queue)) "
                "FROM (SELECT DISTINCT queue FROM r) q "
                f"WHERE octet_length(queue) < {_NOTIFY_MAX_KEY}) "
                "SELECT r.workflow_id, r.queue, r.created_at FROM r, n"
            ),
            {
                "now": _now(),
                "executor": executor_id,
                "channel": self._channel,
                "origin": self._origin,
            },
            prepare=_PLAN_EACH_TIME,
        )
        rows.sort(key=lambda r: (r[2], r[0]))
        self._notify([("enqueued", q) for q in sorted({r[1] for r in rows})])
        return [r[0] for r in rows]

    # -- reading -------------------------------------------------------------

    def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        check_names(workflow_id)
        found = self._one(self._q(_SELECT_WORKFLOW), (workflow_id,))
        return None if found is None else _workflow_from(found)

    def list_workflows(self, where: WorkflowFilter) -> list[WorkflowRow]:
        check_filter(where)
        text, params = listing(where, "{s}.workflows", _DIALECT)
        return listed(_workflow_from, self._all(self._q(text), params, prepare=_PLAN_EACH_TIME))

    def count_workflows(self, where: WorkflowFilter) -> int:
        check_filter(where)
        text, params = counting(where, "{s}.workflows", _DIALECT)
        [(count,)] = self._all(self._q(text), params, prepare=_PLAN_EACH_TIME)
        return int(count)

    def load_log(
        self, workflow_id: str, *, since: int = 0, limit: int | None = None
    ) -> list[Record]:
        check_names(workflow_id)
        check_log_limit(limit)
        params = (workflow_id, since) if limit is None else (workflow_id, since, limit)
        rows = self._all(self._q(log_range("{s}.records", _DIALECT, limit)), params)
        return [_record_from(r, workflow_id) for r in rows]

    # -- recording -----------------------------------------------------------

    def _statement(self, shape: _RecordShape) -> str:
        text = self._statements.get(shape)
        if text is None:
            text = self._statements[shape] = _record_statement(self._s, shape)
        return text

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
        # A stream's record notifies its readers, as an event's does: the one-record
        # statement does that, the batch statement notifies nothing.
        if consume is None and send is None and event is None and not _is_stream(record):
            stored = self._group.submit(_PlainRecord(workflow_id, record, executor_id, wake_at))
            if stored is not FALL_BACK:
                return stored  # type: ignore[no-any-return]
        return self._record_one(workflow_id, record, executor_id, consume, send, event, wake_at)

    def record_many(self, writes: Sequence[RecordWrite]) -> list[Record | Exception]:
        """Plain records in group commit's batch statement; the rest one at a time.

        The plain records (no `consume`, `send` or `event`) go into the batches
        concurrent `record()` callers share: written together, one statement
        and one commit per batch. What a batch did not write (a refusal, a
        completed position, a failed statement) and the records with side
        effects take `record()`'s one-record path, in input order.
        """
        batch = writes_of(writes)
        if not batch:
            return []
        self._check_open()
        answers: Answers = [None] * len(batch)
        for index, refusal in refused_writes(batch).items():
            answers[index] = refusal
        plain = [
            i
            for i, w in enumerate(batch)
            if answers[i] is None
            and w.consume is None
            and w.send is None
            and w.event is None
            and not _is_stream(w.record)
        ]
        items: list[_Write] = [
            _PlainRecord(
                batch[i].workflow_id, batch[i].record, batch[i].executor_id, batch[i].wake_at
            )
            for i in plain
        ]
        from_the_batch(answers, plain, self._group.submit_many(items))
        # What the batch fell back on, and what it never took, in input order.
        rest = [i for i, answer in enumerate(answers) if answer is None]

        def one(index: int) -> Record:
            w = batch[index]
            return self._record_one(
                w.workflow_id, w.record, w.executor_id, w.consume, w.send, w.event, w.wake_at
            )

        write_one_by_one(batch, answers, rest, one)
        return answered(answers)

    def _record_one(
        self,
        workflow_id: str,
        record: Record,
        executor_id: str | None,
        consume: int | Sequence[int] | None,
        send: OutgoingMessage | None,
        event: EventWrite | None,
        wake_at: datetime | None,
    ) -> Record:
        consumed = None
        if consume is not None:
            consumed = [consume] if isinstance(consume, int) else list(consume)
        # The shape as a plain tuple (`_RecordShape`'s fields in order): an attrs
        # instance made and hashed for every record cost more than finding its statement.
        shape = (
            executor_id is not None,
            record.position == 0,
            bool(consumed),
            send is not None,
            send is not None and send.idempotency_key is not None,
            event is not None,
            _is_stream(record),
        )
        statement = self._statements.get(shape)
        if statement is None:
            statement = self._statements[shape] = _record_statement(self._s, _RecordShape(*shape))
        stream = shape[6]
        params = _record_params(workflow_id, record)
        params["wake_at"] = wake_at
        if executor_id is not None:
            params["executor"] = executor_id
        if consumed:
            params["consume"] = consumed
            params["consume_count"] = len(consumed)
        if send is not None or event is not None or stream:
            params["channel"] = self._channel
            params["origin"] = self._origin
            params["now"] = _now()
        if send is not None:
            params["send_to"] = send.workflow_id
            params["send_topic"] = send.topic
            params["send_payload"] = _json(send.payload)
            params["send_trace"] = send.trace_context
            if send.idempotency_key is not None:
                params["send_key"] = send.idempotency_key
        if event is not None:
            params["event_key"] = event.key
            params["event_value"] = _json(event.value)
        # A retry is only needed when a concurrent writer changed the log
        # between this statement's snapshot and its row lock.
        alternative = None if send is None else send.if_duplicate
        for _ in range(5):
            with self._connection() as conn:
                if alternative is None:
                    written, sent, events = conn.execute(statement, params).fetchone() or (0, 0, 0)
                else:
                    written, sent, events = self._record_keyed_send(
                        conn, statement, params, alternative
                    )
                if not written:
                    stored = self._explain(conn, workflow_id, record, executor_id, consumed, send)
            if written:
                # Outside the pooled connection: a subscriber may call the store.
                notes = []
                if sent and send is not None:
                    notes.append(("message", send.workflow_id))
                if events:
                    notes.append(("event", workflow_id))
                if stream:
                    notes.append(("stream", workflow_id))
                self._notify(notes)
                if alternative is not None and not sent:
                    return attrs.evolve(record, outcome=alternative)
                return record
            if stored is not None:
                return stored
        raise StoreError(
            f"workflow id {workflow_id!r}: position {record.position} could not be recorded "
            "after 5 attempts although nothing stood in the way"
        )

    def _record_keyed_send(
        self,
        conn: psycopg.Connection[Any],
        statement: str,
        params: dict[str, Any],
        duplicate: Outcome,
    ) -> tuple[int, int, int]:
        """The record statement, then (if its keyed send found the key used) the record's
        outcome set to `duplicate`, in one transaction.

        Not one statement: whether the key was used is known only once the key's
        insert has waited out a concurrent sender of it, after the statement's
        snapshot was taken, and the parts of one statement cannot change the row
        another part inserted.
        """
        with conn.transaction():
            written, sent, events = conn.execute(statement, params).fetchone() or (0, 0, 0)
            if written and not sent:
                conn.execute(
                    self._q(
                        "UPDATE {s}.records SET outcome = %s "
                        "WHERE workflow_id = %s AND position = %s"
                    ),
                    (_outcome_param(duplicate), params["wid"], params["pos"]),
                )
        return written, sent, events

    def _write_batch(self, slots: Sequence[Slot[_Write]]) -> None:
        """Group commit's batch writer: records, finishes with their last record, then
        finishes, a statement each.

        Autocommit: each statement commits on its own. The writes are
        independent, so they need not share a transaction; what they share is
        the round trip and the commit (a finish and its last record are one
        write, in one statement). A lone write takes the one-write path,
        whose statement is lighter, while still leading, so that writes
        arriving meanwhile gather into the next batch.
        """
        with self._held.leading():
            self._write_kinds(slots)

    def _write_kinds(self, slots: Sequence[Slot[_Write]]) -> None:
        records = [slot for slot in slots if isinstance(slot.item, _PlainRecord)]
        closing = [
            slot
            for slot in slots
            if isinstance(slot.item, _Finish) and slot.item.record is not None
        ]
        finishes = [
            slot for slot in slots if isinstance(slot.item, _Finish) and slot.item.record is None
        ]
        try:
            if len(records) == 1:
                self._settle_alone(records[0])
            elif records:
                self._write_records(records)
            if len(closing) == 1:
                self._settle_alone(closing[0])
            elif closing:
                self._write_closing(closing)
            if len(finishes) == 1:
                self._settle_alone(finishes[0])
            elif finishes:
                self._write_finishes(finishes)
        except _PoolExhausted as exc:
            # The pool had nothing for connect_timeout: the rest would wait as long.
            for slot in slots:
                if not slot.settled:
                    slot.set_error(exc)

    def _write_one(self, item: _Write) -> Any:
        """Group commit's write when nobody else is writing: on the kept connection."""
        with self._held.leading():
            return self._write_item(item)

    def _write_item(self, item: _Write) -> Any:
        if isinstance(item, _PlainRecord):
            return self._record_one(
                item.workflow_id, item.record, item.executor_id, None, None, None, item.wake_at
            )
        return self._finish_one(item)

    def _settle_alone(self, slot: Slot[_Write]) -> None:
        try:
            slot.set_result(self._write_item(slot.item))
        except _PoolExhausted as exc:
            slot.set_error(exc)
            raise
        except Exception as exc:
            slot.set_error(exc)

    def _write_layers(
        self,
        slots: Sequence[Slot[_Write]],
        what: str,
        statement: str,
        params: Callable[[list[_Write]], dict[str, Any]],
        answer: Callable[[_Write, set[str]], Any],
    ) -> None:
        """One statement per layer; each layer's answer settles that layer's writers only.

        A run may appear in several layers, each with its own write. The
        statement returns the ids it wrote; `answer` turns that into each
        writer's result. Every write of a layer that failed or never ran falls
        back to the one-write path, which writes it or explains why not, unless
        no connection came free at all (`_PoolExhausted`, for `_write_batch`).
        """
        try:
            with self._connection() as conn:
                for layer in _layers(slots):
                    items = [slot.item for slot in layer]
                    done = {row[0] for row in conn.execute(statement, params(items)).fetchall()}
                    for slot in layer:
                        slot.set_result(answer(slot.item, done))
        except _PoolExhausted:
            raise
        except (psycopg.Error, StoreError) as exc:
            _log.debug(
                "group commit of %d %s failed (%s); writing the rest one by one",
                len(slots),
                what,
                exc,
            )
        for slot in slots:
            if not slot.settled:
                slot.set_result(FALL_BACK)

    def _write_records(self, slots: Sequence[Slot[_Write]]) -> None:
        """Many records; a record the batch did not write falls back."""

        def answer(item: _Write, written: set[str]) -> Any:
            assert isinstance(item, _PlainRecord)
            return item.record if item.workflow_id in written else FALL_BACK

        self._write_layers(slots, "records", self._batch_statement, self._batch_params, answer)

    def _write_finishes(self, slots: Sequence[Slot[_Write]]) -> None:
        """Many runs finished; each owner learns whether its run changed."""
        self._write_layers(
            slots,
            "finishes",
            self._finish_statement,
            self._finish_params,
            lambda item, finished: item.workflow_id in finished,
        )

    def _write_closing(self, slots: Sequence[Slot[_Write]]) -> None:
        """Many runs finished with their last records; what the batch did not finish falls back."""

        def answer(item: _Write, finished: set[str]) -> Any:
            return True if item.workflow_id in finished else FALL_BACK

        self._write_layers(
            slots,
            "finishes with records",
            self._finish_record_batch,
            self._closing_params,
            answer,
        )

    def _closing_params(self, items: Sequence[_Write]) -> dict[str, Any]:
        rows: list[list[Any]] = []
        outcomes: list[str | None] = []
        results: list[str | None] = []
        for item in items:
            assert isinstance(item, _Finish) and item.record is not None
            row, outcome = _batch_row(item.workflow_id, item.record, item.executor_id, None)
            row.extend((Status(item.status).value, item.error))
            rows.append(row)
            outcomes.append(outcome)
            results.append(
                None if item.result is None else serde.dumps(outcome_to_json(item.result))
            )
        return {
            "rows": serde.dumps(rows),
            "outcome": outcomes,
            "result": results,
            "now": _now(),
            "channel": self._channel,
            "origin": self._origin,
        }

    def _finish_params(self, items: Sequence[_Write]) -> dict[str, Any]:
        finishes = [item for item in items if isinstance(item, _Finish)]
        return {
            "wid": [item.workflow_id for item in finishes],
            "status": [Status(item.status).value for item in finishes],
            "result": [
                None if item.result is None else serde.dumps(outcome_to_json(item.result))
                for item in finishes
            ],
            "error": [item.error for item in finishes],
            "executor": [item.executor_id for item in finishes],
            "now": _now(),
            "channel": self._channel,
            "origin": self._origin,
        }

    @staticmethod
    def _batch_params(items: Sequence[_Write]) -> dict[str, Any]:
        rows: list[list[Any]] = []
        outcomes: list[str | None] = []
        for item in items:
            assert isinstance(item, _PlainRecord)
            row, outcome = _batch_row(item.workflow_id, item.record, item.executor_id, item.wake_at)
            rows.append(row)
            outcomes.append(outcome)
        return {"rows": serde.dumps(rows), "outcome": outcomes}

    def _explain(
        self,
        conn: psycopg.Connection[Any],
        workflow_id: str,
        record: Record,
        executor_id: str | None,
        consume: list[int] | None,
        send: OutgoingMessage | None,
    ) -> Record | None:
        """Why nothing was written: raise, return the stored record, or None to retry."""
        found = self._state(conn, workflow_id, record.position, consume, send)
        row = None
        if found[0] is not None:
            row = WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
        check_recordable(row, workflow_id, executor_id)
        assert row is not None
        length = found[3]
        if found[4] is not None:
            stored = _record_from(found[4:14], workflow_id)
            if not replaces_stored(stored, record):
                return stored
        elif record.position > length:
            raise RecordConflict(
                f"workflow {row.name!r} (id {workflow_id!r}): cannot record position "
                f"{record.position}; the log ends at {length}"
            )
        if consume:
            present = set(found[14])
            # A repeated id cannot be taken twice either.
            gone = sorted(set(consume) - present) or consume
            if len(present) != len(consume):
                raise RecordConflict(
                    f"workflow id {workflow_id!r}: message(s) {gone} already consumed"
                )
        if send is not None and not found[15]:
            raise WorkflowNotFound(
                f"cannot send to workflow id {send.workflow_id!r}: no such run. Start it "
                "first, or check the id"
            )
        return None

    def _state(
        self,
        conn: psycopg.Connection[Any],
        workflow_id: str,
        position: int,
        consume: list[int] | None,
        send: OutgoingMessage | None,
    ) -> Any:
        """What stands in the way of a record at `position`, read afresh in one query.

        (name, status, executor_id) of the run (NULLs if it is missing), its
        log's length, the record at `position` (ten columns, NULLs if none),
        the messages of `consume` still there, and whether `send`'s target exists.
        """
        found = conn.execute(
            self._q(
                "SELECT w.name, w.status, w.executor_id, "
                "(SELECT count(*) FROM {s}.records WHERE workflow_id = %(wid)s), "
                "r.position, r.kind, r.name, r.outcome, r.digest, r.call_site, r.started_at, "
                "r.completed_at, r.wake_at, r.attempts, "
                "ARRAY(SELECT message_id FROM {s}.messages "
                "WHERE message_id = ANY(%(consume)s::bigint[]) AND workflow_id = %(wid)s), "
                "EXISTS (SELECT 1 FROM {s}.workflows WHERE workflow_id = %(send_to)s::text) "
                "FROM (SELECT 1) AS one "
                "LEFT JOIN {s}.workflows w ON w.workflow_id = %(wid)s "
                "LEFT JOIN {s}.records r ON r.workflow_id = %(wid)s AND r.position = %(pos)s"
            ),
            {
                "wid": workflow_id,
                "pos": position,
                "consume": consume or [],
                "send_to": None if send is None else send.workflow_id,
            },
        ).fetchone()
        assert found is not None
        return found

    def record_transaction(
        self,
        workflow_id: str,
        position: int,
        body: Callable[[Any], Record],
        *,
        executor_id: str | None = None,
    ) -> Record:
        check_names(workflow_id, executor_id=executor_id)
        try:
            with self._connection() as conn, conn.transaction():
                stored = self._lock_for_transaction(conn, workflow_id, position, executor_id)
                if stored is not None:
                    return stored
                try:
                    record = body(conn)
                except BaseException as exc:
                    raise _BodyFailed(exc) from exc
                if not isinstance(record, Record) or record.position != position:
                    raise StoreError(
                        f"workflow id {workflow_id!r}: the Transaction body must return the "
                        f"Record for position {position}, not {record!r}"
                    )
                check_record(workflow_id, record)
                params = _record_params(workflow_id, record)
                params["wake_at"] = None
                shape = _RecordShape(
                    executor=False,
                    first=position == 0,
                    consume=False,
                    send=False,
                    send_key=False,
                    event=False,
                )
                try:
                    written = conn.execute(self._statement(shape), params).fetchone()
                except psycopg.errors.InFailedSqlTransaction as exc:
                    raise StoreError(
                        f"workflow id {workflow_id!r} position {position}: a statement in the "
                        "Transaction body failed and the body carried on, so the transaction "
                        "can only roll back. Let the exception propagate from the body"
                    ) from exc
                if not written or not written[0]:
                    raise StoreError(
                        f"workflow id {workflow_id!r}: position {position} could not be "
                        "recorded while its run was locked"
                    )
                return record
        except _BodyFailed as failed:
            raise failed.error.with_traceback(failed.error.__traceback__) from None

    def _lock_for_transaction(
        self,
        conn: psycopg.Connection[Any],
        workflow_id: str,
        position: int,
        executor_id: str | None,
    ) -> Record | None:
        """Lock the run for a Transaction; return the stored record if `position` is done."""
        found = conn.execute(
            self._q(
                "SELECT w.name, w.status, w.executor_id, "
                "(SELECT count(*) FROM {s}.records WHERE workflow_id = %(wid)s), "
                "r.position, r.kind, r.name, r.outcome, r.digest, r.call_site, r.started_at, "
                "r.completed_at, r.wake_at, r.attempts "
                "FROM {s}.workflows w "
                "LEFT JOIN {s}.records r ON r.workflow_id = w.workflow_id "
                "AND r.position = %(pos)s "
                "WHERE w.workflow_id = %(wid)s FOR NO KEY UPDATE OF w"
            ),
            {"wid": workflow_id, "pos": position},
        ).fetchone()
        row = None
        if found is not None:
            row = WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
        check_recordable(row, workflow_id, executor_id)
        assert found is not None and row is not None
        if found[4] is not None:
            stored = _record_from(found[4:14], workflow_id)
            return stored if stored.outcome is not None else None
        if position > found[3]:
            raise RecordConflict(
                f"workflow {row.name!r} (id {workflow_id!r}): cannot record position "
                f"{position}; the log ends at {found[3]}"
            )
        return None

    # -- status --------------------------------------------------------------

    def record_late(
        self, workflow_id: str, record: Record, *, executor_id: str | None = None
    ) -> Record:
        check_late_record(workflow_id, record, executor_id)
        params = _record_params(workflow_id, record)
        with self._connection() as conn, conn.transaction():
            found = conn.execute(
                self._q(
                    "SELECT w.name, w.status, w.executor_id, "
                    "(SELECT count(*) FROM {s}.records WHERE workflow_id = %(wid)s), "
                    "r.position, r.kind, r.name, r.outcome, r.digest, r.call_site, "
                    "r.started_at, r.completed_at, r.wake_at, r.attempts "
                    "FROM {s}.workflows w "
                    "LEFT JOIN {s}.records r ON r.workflow_id = w.workflow_id "
                    "AND r.position = %(pos)s "
                    "WHERE w.workflow_id = %(wid)s FOR NO KEY UPDATE OF w"
                ),
                params,
            ).fetchone()
            row = None
            if found is not None:
                row = WorkflowRow(workflow_id, found[0], Status(found[1]), executor_id=found[2])
            check_late(row, workflow_id, executor_id)
            assert found is not None and row is not None
            if found[4] is not None:
                stored = _record_from(found[4:14], workflow_id)
                if stored.outcome is not None:
                    return stored
            elif record.position != found[3]:
                raise late_gap(row.name, workflow_id, record.position, found[3])
            conn.execute(
                self._q(
                    f"INSERT INTO {{s}}.records AS r (workflow_id, {_RECORD_COLUMNS}) "
                    "VALUES (%(wid)s, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s, "
                    "%(call_site)s, %(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s) "
                    "ON CONFLICT (workflow_id, position) DO UPDATE SET "
                    "kind = excluded.kind, name = excluded.name, outcome = excluded.outcome, "
                    "digest = excluded.digest, call_site = excluded.call_site, "
                    "started_at = excluded.started_at, completed_at = excluded.completed_at, "
                    "wake_at = excluded.wake_at, attempts = excluded.attempts "
                    "WHERE r.outcome IS NULL"
                ),
                params,
            )
        return record

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
        finish = _Finish(workflow_id, status, result, storable_error(error), executor_id, last)
        changed = self._group.submit(finish)
        fell_back = changed is FALL_BACK
        if fell_back:
            changed = self._finish_one(finish)
        if changed or fell_back:
            # After a failed batch the run may have been finished by it, and
            # then the one-finish path says "not changed"; a needless wake-up
            # costs a read, a missing one a poll interval. Outside the batch:
            # a subscriber may call the store.
            self._notify([("finished", workflow_id)])
        return bool(changed)

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        """The finishes in group commit's batch statements, handed over from one thread."""
        batch = finishes_of(finishes)
        if not batch:
            return []
        self._check_open()
        answers: dict[int, bool | Exception] = {}
        items: dict[int, _Finish] = {}
        for index, f in enumerate(batch):
            try:
                last = checked_finish(f.workflow_id, f.executor_id, f.record)
            except (TypeError, ValueError) as exc:
                answers[index] = exc
                continue
            items[index] = _Finish(
                f.workflow_id, f.status, f.result, storable_error(f.error), f.executor_id, last
            )
        taken = list(items)
        fell_back: set[int] = set()

        def alone(index: int) -> bool:
            fell_back.add(index)
            return self._finish_one(items[index])

        answers.update(
            finishes_from_the_batch(taken, self._group.submit_many(list(items.values())), alone)
        )
        done = [answers[index] for index in range(len(batch))]
        # As in finish_workflow: after a failed batch, the one-finish path may say
        # "not changed" of a run the batch did finish; a needless wake-up is cheap.
        self._notify(
            [
                ("finished", batch[i].workflow_id)
                for i in taken
                if done[i] is True or (i in fell_back and not isinstance(done[i], Exception))
            ]
        )
        return done

    def _finish_one(self, finish: _Finish) -> bool:
        if finish.record is not None:
            return self._finish_with_record(finish, finish.record)
        found = self._one(
            self._q(
                "WITH " + _LOCK_BY_ID + ", "
                "u AS (UPDATE {s}.workflows w SET status = %(status)s, result = %(result)s, "
                "error = %(error)s, updated_at = %(now)s, wake_at = NULL FROM run "
                "WHERE w.workflow_id = %(wid)s AND run.status = 'PENDING' "
                "AND (%(executor)s::text IS NULL OR run.executor_id = %(executor)s) "
                "RETURNING w.workflow_id) " + "SELECT " + _notify_count("finished", "u") + " "
            ),
            {
                "status": Status(finish.status).value,
                "result": _outcome_param(finish.result),
                "error": finish.error,
                "now": _now(),
                "wid": finish.workflow_id,
                "executor": finish.executor_id,
                "channel": self._channel,
                "origin": self._origin,
            },
        )
        return bool(found and found[0])

    def _finish_with_record(self, finish: _Finish, record: Record) -> bool:
        """One statement: the last record through record()'s gate, and the finish with it."""
        shape = (finish.executor_id is not None, record.position == 0)
        statement = self._finish_record_statements.get(shape)
        if statement is None:
            statement = self._finish_record_statements[shape] = _finish_record_statement(
                self._s, executor=shape[0], first=shape[1]
            )
        params = _record_params(finish.workflow_id, record)
        params.update(
            status=Status(finish.status).value,
            result=_outcome_param(finish.result),
            error=finish.error,
            now=_now(),
            channel=self._channel,
            origin=self._origin,
        )
        if finish.executor_id is not None:
            params["executor"] = finish.executor_id
        # A retry is only needed when a concurrent writer changed the log
        # between this statement's snapshot and its row lock.
        for _ in range(5):
            verdict: bool | None = None
            with self._connection() as conn:
                passed, finished = conn.execute(statement, params).fetchone() or (False, 0)
                if passed and not finished:
                    verdict = self._explain_finish(conn, finish, record)
            if finished:
                return True
            if not passed or verdict is False:
                return False
            if verdict:
                # The position holds this very record already: finish without it.
                return self._finish_one(attrs.evolve(finish, record=None))
        raise StoreError(
            f"workflow id {finish.workflow_id!r}: position {record.position} could not be "
            "recorded with the run's finish after 5 attempts although nothing stood in the way"
        )

    def _explain_finish(
        self, conn: psycopg.Connection[Any], finish: _Finish, record: Record
    ) -> bool | None:
        """Why a finish's last record was not written, read afresh.

        False: the run is missing, not PENDING or not owned now (the finish
        answers False). True: the position holds an equal completed record,
        which counts as written. None: nothing stands in the way any more
        (a concurrent writer moved on after the statement's snapshot): retry.
        Otherwise raises `RecordConflict`.
        """
        found = self._state(conn, finish.workflow_id, record.position, None, None)
        name, status, owner, length = found[0], found[1], found[2], found[3]
        if name is None or status != Status.PENDING.value:
            return False
        if finish.executor_id is not None and owner != finish.executor_id:
            return False
        if found[4] is not None:
            stored = _record_from(found[4:14], finish.workflow_id)
            if same_record(stored, record):
                return True
            if stored.outcome is not None:
                raise unlike_error(name, finish.workflow_id, stored, record)
        elif record.position > length:
            raise RecordConflict(
                f"workflow {name!r} (id {finish.workflow_id!r}): cannot record position "
                f"{record.position}; the log ends at {length}"
            )
        return None

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
        select = self._q(_SELECT_WORKFLOW)
        with self._connection() as conn, conn.transaction():
            # The live row's lock first, as record() and finish_workflow() take it: a
            # writer that wants to record into this generation waits, then finds its
            # status or generation moved on.
            found = conn.execute(select + " FOR UPDATE", (workflow_id,)).fetchone()
            row = None if found is None else _workflow_from(found)
            other = conn.execute(select, (archived_id,)).fetchone()
            archived = None if other is None else shown(_workflow_from, other)
            refusal = continue_refusal(row, workflow_id, inputs, generation, executor_id, archived)
            assert row is not None
            if refusal == ALREADY_CONTINUED:
                return row
            old = archived_generation(row, now)
            inserted = conn.execute(
                self._q(
                    "INSERT INTO {s}.workflows (workflow_id, name, status, inputs, executor_id, "
                    "app_version, created_at, updated_at, parent_id, started_at, trace_context, "
                    "generation, continued_as) VALUES (%(aid)s, %(name)s, %(status)s, "
                    "%(inputs)s, %(executor)s, %(version)s, %(created)s, %(now)s, %(parent)s, "
                    "%(started)s, %(trace)s, %(generation)s, %(wid)s) "
                    "ON CONFLICT (workflow_id) DO NOTHING"
                ),
                {
                    "aid": archived_id,
                    "name": old.name,
                    "status": old.status.value,
                    "inputs": None if old.inputs is None else _json(old.inputs),
                    "executor": old.executor_id,
                    "version": old.app_version,
                    "created": old.created_at,
                    "now": now,
                    "parent": old.parent_id,
                    "started": old.started_at,
                    "trace": old.trace_context,
                    "generation": old.generation,
                    "wid": workflow_id,
                },
            ).rowcount
            if not inserted:
                raise id_taken(row, archived_id)
            conn.execute(
                self._q("UPDATE {s}.records SET workflow_id = %s WHERE workflow_id = %s"),
                (archived_id, workflow_id),
            )
            # Named columns only: what other features add to the row is kept.
            conn.execute(
                self._q(
                    "UPDATE {s}.workflows SET inputs = %(inputs)s, generation = generation + 1, "
                    "wake_at = NULL, recovery_attempts = 0, error = '', started_at = %(now)s, "
                    "updated_at = %(now)s, " + FIRST_INPUTS_ON_CONTINUE + " "
                    "WHERE workflow_id = %(wid)s"
                ),
                {
                    "inputs": None if inputs is None else _json(inputs),
                    "now": now,
                    "wid": workflow_id,
                },
            )
            # Names are far shorter than a notification may be (MAX_NAME_BYTES).
            # The archived generation finished, and the run's streams of it ended.
            conn.execute(
                "SELECT pg_notify(%(c)s, %(f)s), pg_notify(%(c)s, %(s)s)",
                {
                    "c": self._channel,
                    "f": f"{self._origin}finished:{archived_id}",
                    "s": f"{self._origin}stream:{workflow_id}",
                },
            )
        self._notify([("finished", archived_id), ("stream", workflow_id)])
        return next_generation(row, inputs, now)

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
        condition = ""
        params: dict[str, Any] = {
            "status": status.value,
            "error": storable_error(error),
            "now": _now(),
            "executor": executor_id,
            "version": app_version,
            "reset": reset_recovery,
            "wid": workflow_id,
            "channel": self._channel,
            "origin": self._origin,
        }
        if only_from is not None:
            condition = " AND run.status = ANY(%(only_from)s::text[])"
            params["only_from"] = [Status(s).value for s in only_from]
        resumed = status is Status.PENDING and not stays_pending(only_from)
        if status.is_terminal:
            notify = _notify_count("finished", "u")
        elif resumed:
            # Tells the owning engine, wherever it runs, to pick the run up now.
            notify = _notify_count("resumed", "u")
        else:
            notify = "(SELECT count(*) FROM u)"
        found = self._one(
            self._q(
                "WITH " + _LOCK_BY_ID + ", "
                "u AS (UPDATE {s}.workflows w SET status = %(status)s, error = %(error)s, "
                "updated_at = %(now)s, "
                "executor_id = coalesce(%(executor)s::text, w.executor_id), "
                "app_version = coalesce(%(version)s::text, w.app_version), "
                "recovery_attempts = CASE WHEN %(reset)s::boolean THEN 0 "
                "ELSE w.recovery_attempts END FROM run "
                "WHERE w.workflow_id = %(wid)s" + condition + " RETURNING w.workflow_id) "
                "SELECT " + notify
            ),
            params,
        )
        changed = bool(found and found[0])
        if changed and status.is_terminal:
            self._notify([("finished", workflow_id)])
        elif changed and resumed:
            self._notify([("resumed", workflow_id)])
        return changed

    def move_family(
        self, workflow_id: str, *, app_version: str, executor_id: str | None = None
    ) -> list[str]:
        check_names(workflow_id, executor_id=executor_id, app_version=app_version)
        now = _now()
        with self._connection() as conn, conn.transaction():
            found = conn.execute(
                self._q(family_query("{s}.workflows", "%s") + " FOR UPDATE OF w"), (workflow_id,)
            ).fetchall()
            if not any(r[0] == workflow_id for r in found):
                raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
            family = [Member(r[0], r[1], Status(r[2]), r[3], r[4]) for r in found]
            moved = moving(workflow_id, family, app_version)
            notes = [("resumed", m.workflow_id) for m in moved if m.status is Status.PENDING]
            queues = (m.queue for m in moved if m.status is Status.ENQUEUED and m.queue)
            notes += [("enqueued", queue) for queue in dict.fromkeys(queues) if queue]
            with conn.cursor() as cur:
                cur.executemany(
                    self._q(
                        "UPDATE {s}.workflows SET app_version = %(version)s, "
                        "updated_at = %(now)s, recovery_attempts = CASE WHEN "
                        "%(status)s = 'PENDING' THEN 0 ELSE recovery_attempts END, "
                        "executor_id = CASE WHEN %(executor)s::text IS NOT NULL "
                        "AND %(status)s != 'ENQUEUED' THEN %(executor)s::text "
                        "ELSE executor_id END WHERE workflow_id = %(wid)s"
                    ),
                    [
                        {
                            "version": app_version,
                            "now": now,
                            "status": m.status.value,
                            "executor": executor_id,
                            "wid": m.workflow_id,
                        }
                        for m in moved
                    ],
                )
            # Told to every process on commit, as the transaction's own notifications.
            for kind, key in notes:
                if len(key.encode()) < _NOTIFY_MAX_KEY:
                    conn.execute(
                        "SELECT pg_notify(%s, %s)", (self._channel, f"{self._origin}{kind}:{key}")
                    )
        self._notify(notes)
        return [m.workflow_id for m in moved]

    def set_deadline(
        self, workflow_id: str, deadline: datetime | None, timeout: float | None
    ) -> bool:
        check_names(workflow_id)
        found = self._one(
            self._q(
                "UPDATE {s}.workflows SET deadline = %s, timeout_seconds = %s "
                "WHERE workflow_id = %s RETURNING workflow_id"
            ),
            (deadline, timeout, workflow_id),
        )
        return found is not None

    def bump_recovery(self, workflow_id: str) -> int:
        check_names(workflow_id)
        found = self._one(
            self._q(
                "UPDATE {s}.workflows SET recovery_attempts = recovery_attempts + 1 "
                "WHERE workflow_id = %s RETURNING recovery_attempts"
            ),
            (workflow_id,),
        )
        if found is None:
            raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
        return int(found[0])

    # -- messages and events -------------------------------------------------

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
        key_cte = ""
        key_join = ""
        same_call = "false"
        if idempotency_key is not None:
            key_cte = (
                ", used_key AS (INSERT INTO {s}.send_keys (workflow_id, key, call_id) "
                "SELECT workflow_id, %(key)s, %(call)s FROM target ON CONFLICT DO NOTHING "
                "RETURNING workflow_id)"
            )
            key_join = ", used_key"
            # The statement's snapshot does not see its own insert: a row found here
            # was there before, written by an earlier attempt of this same call.
            same_call = (
                "EXISTS (SELECT 1 FROM {s}.send_keys WHERE workflow_id = %(wid)s "
                "AND key = %(key)s AND call_id = %(call)s)"
            )
        found = self._one(
            self._q(
                "WITH target AS (SELECT workflow_id FROM {s}.workflows "
                "WHERE workflow_id = %(wid)s FOR KEY SHARE)" + key_cte + ", "
                "sent AS (INSERT INTO {s}.messages (workflow_id, topic, payload, created_at, "
                "trace_context) "
                "SELECT target.workflow_id, %(topic)s, %(payload)s, %(now)s, %(trace)s "
                "FROM target" + key_join + " RETURNING workflow_id) "
                "SELECT (SELECT count(*) FROM target), "
                + _notify_count("message", "sent")
                + ", "
                + same_call
            ),
            {
                "wid": workflow_id,
                "key": idempotency_key,
                "call": call_id,
                "topic": topic,
                "payload": _json(payload),
                "trace": trace_context,
                "now": _now(),
                "channel": self._channel,
                "origin": self._origin,
            },
        )
        if not found or not found[0]:
            raise WorkflowNotFound(
                f"cannot send to workflow id {workflow_id!r}: no such run. Start it first, "
                "or check the id"
            )
        if found[1]:
            self._notify([("message", workflow_id)])
        return bool(found[1]) or bool(found[2])

    def peek_message(self, workflow_id: str, topic: str) -> Message | None:
        check_names(workflow_id, topic=topic)
        found = self._one(
            self._q(
                "SELECT message_id, payload, created_at, trace_context FROM {s}.messages "
                "WHERE workflow_id = %s AND topic = %s ORDER BY message_id LIMIT 1"
            ),
            (workflow_id, topic),
        )
        if found is None:
            return None
        return Message(found[0], workflow_id, topic, found[1], _utc(found[2]), found[3])

    def get_event(self, workflow_id: str, key: str) -> tuple[bool, Any]:
        check_names(workflow_id, event_key=key)
        found = self._one(
            self._q("SELECT value FROM {s}.events WHERE workflow_id = %s AND key = %s"),
            (workflow_id, key),
        )
        if found is None:
            return False, None
        return True, found[0]

    def get_events(self, workflow_id: str) -> dict[str, Any]:
        check_names(workflow_id)
        # One statement: the run's row tells "no such run" (no rows) from "no
        # events" (one row of NULLs), with no second read in between.
        rows = self._all(
            self._q(
                "SELECT e.key, e.value FROM {s}.workflows w LEFT JOIN {s}.events e "
                "ON e.workflow_id = w.workflow_id WHERE w.workflow_id = %s ORDER BY e.key"
            ),
            (workflow_id,),
        )
        if not rows:
            raise no_run_for_events(workflow_id)
        return {key: value for key, value in rows if key is not None}

    # -- lifecycle -----------------------------------------------------------

    def delete_workflow(self, workflow_id: str) -> bool:
        check_names(workflow_id)
        with self._connection() as conn, conn.transaction():
            # Deleting the run's row first takes its lock, so a writer that
            # wants to add to it waits, then finds it gone; each later
            # statement takes a fresh snapshot that includes what finished
            # before the lock was granted.
            deleted = conn.execute(
                self._q("DELETE FROM {s}.workflows WHERE workflow_id = %s"), (workflow_id,)
            ).rowcount
            if not deleted:
                return False
            for table in ("records", "messages", "events", "send_keys"):
                conn.execute(
                    self._q(f"DELETE FROM {{s}}.{table} WHERE workflow_id = %s"), (workflow_id,)
                )
            # Its archived generations, and their logs (they have no inbox or events).
            conn.execute(
                self._q(
                    "WITH gone AS (DELETE FROM {s}.workflows WHERE continued_as = %s "
                    "RETURNING workflow_id) "
                    "DELETE FROM {s}.records r USING gone WHERE r.workflow_id = gone.workflow_id"
                ),
                (workflow_id,),
            )
            if len(workflow_id.encode()) < _NOTIFY_MAX_KEY:
                # Other engines forget what they keep of the run (a finished row a
                # handle would answer from); sent at commit, as every note is.
                conn.execute(
                    "SELECT pg_notify(%s, %s || 'deleted:' || %s)",
                    (self._channel, self._origin, workflow_id),
                )
        self._notify([("deleted", workflow_id)])
        return True

    # -- schedule states -------------------------------------------------------

    def schedule_states(self) -> dict[str, ScheduleState]:
        rows = self._all(
            self._q(
                "SELECT name, workflow_name, cron, tz, queue, backfill, paused, updated_at, "
                "trigger_at, backfill_start, backfill_end FROM {s}.schedules ORDER BY name"
            ),
            prepare=False,
        )
        return {
            r[0]: ScheduleState(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                r[6],
                r[7].replace(tzinfo=UTC),
                _utc(r[8]),
                _utc(r[9]),
                _utc(r[10]),
            )
            for r in rows
        }

    def register_schedules(self, specs: Sequence[ScheduleSpec], now: datetime) -> None:
        check_schedule_specs(specs)
        if not specs:
            return
        with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            # Only a changed definition is written: every engine registers its
            # schedules at each start, and most starts change nothing.
            cur.executemany(
                self._q(
                    "INSERT INTO {s}.schedules (name, workflow_name, cron, tz, queue, backfill, "
                    "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET "
                    "workflow_name = excluded.workflow_name, cron = excluded.cron, "
                    "tz = excluded.tz, queue = excluded.queue, backfill = excluded.backfill, "
                    "updated_at = excluded.updated_at "
                    "WHERE (schedules.workflow_name, schedules.cron, schedules.tz, "
                    "schedules.queue, schedules.backfill) IS DISTINCT FROM "
                    "(excluded.workflow_name, excluded.cron, excluded.tz, excluded.queue, "
                    "excluded.backfill)"
                ),
                [(s.name, s.workflow_name, s.cron, s.tz, s.queue, s.backfill, now) for s in specs],
            )

    def set_schedule_paused(self, name: str, paused: bool, now: datetime) -> bool:
        check_names(schedule_name=name)
        with self._connection() as conn:
            if conn.execute(
                self._q(
                    "UPDATE {s}.schedules SET paused = %s, updated_at = %s "
                    "WHERE name = %s AND paused <> %s"
                ),
                (paused, now, name, paused),
            ).rowcount:
                return True
            found = conn.execute(
                self._q("SELECT 1 FROM {s}.schedules WHERE name = %s"), (name,)
            ).fetchone()
            return found is not None

    def request_schedule_trigger(self, name: str, at: datetime) -> datetime | None:
        check_names(schedule_name=name)
        with self._connection() as conn, conn.transaction():
            # Locked first: a concurrent request waits here and then sees this one's.
            found = conn.execute(
                self._q("SELECT trigger_at FROM {s}.schedules WHERE name = %s FOR UPDATE"),
                (name,),
            ).fetchone()
            if found is None:
                return None
            if found[0] is not None:
                return _utc(found[0])
            conn.execute(
                self._q(
                    "UPDATE {s}.schedules SET trigger_at = %s, updated_at = %s WHERE name = %s"
                ),
                (at, at, name),
            )
            return at

    def request_schedule_backfill(
        self, name: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[datetime, datetime] | None:
        check_names(schedule_name=name)
        with self._connection() as conn, conn.transaction():
            found = conn.execute(
                self._q(
                    "SELECT backfill_start, backfill_end FROM {s}.schedules "
                    "WHERE name = %s FOR UPDATE"
                ),
                (name,),
            ).fetchone()
            if found is None:
                return None
            if found[0] is not None and found[1] is not None:
                return found[0].replace(tzinfo=UTC), found[1].replace(tzinfo=UTC)
            conn.execute(
                self._q(
                    "UPDATE {s}.schedules SET backfill_start = %s, backfill_end = %s, "
                    "updated_at = %s WHERE name = %s"
                ),
                (start, end, now, name),
            )
            return start, end

    def clear_schedule_request(
        self,
        name: str,
        *,
        trigger_at: datetime | None = None,
        backfill: tuple[datetime, datetime] | None = None,
    ) -> None:
        check_names(schedule_name=name)
        if trigger_at is None and backfill is None:
            return
        with self._connection() as conn, conn.transaction():
            if trigger_at is not None:
                conn.execute(
                    self._q(
                        "UPDATE {s}.schedules SET trigger_at = NULL "
                        "WHERE name = %s AND trigger_at = %s"
                    ),
                    (name, trigger_at),
                )
            if backfill is not None:
                conn.execute(
                    self._q(
                        "UPDATE {s}.schedules SET backfill_start = NULL, backfill_end = NULL "
                        "WHERE name = %s AND backfill_start = %s AND backfill_end = %s"
                    ),
                    (name, *backfill),
                )

    def delete_schedule_state(self, name: str) -> bool:
        check_names(schedule_name=name)
        with self._connection() as conn:
            return (
                conn.execute(self._q("DELETE FROM {s}.schedules WHERE name = %s"), (name,)).rowcount
                > 0
            )

    def close(self) -> None:
        with self._subscribers_lock:
            if self._closed:
                return
            self._closed = True
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()
        self._held.drop()
        self._pool.close()
