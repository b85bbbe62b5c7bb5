"""The two statements built per call's shape: the one-record write and the finish with
its last record.

Everything else the store sends is a named statement (statements.sql). These
two stay builders because their optional parts (the owner check, the previous
position, messages consumed, a send and its key, an event, a stream's note)
are left out of the text rather than switched off with `param IS NULL OR ...`:
each variant gets a plan that never needs re-planning. There are at most a few
dozen variants; the store builds each once and keeps it.
"""

from __future__ import annotations

import attrs

from replaykit.stores._sql import RECORD_COLUMNS

__all__ = ["RecordShape", "finish_record_statement", "record_statement"]


@attrs.frozen
class RecordShape:
    """Which optional parts a record() statement needs; one prepared statement each."""

    executor: bool
    first: bool
    consume: bool
    send: bool
    send_key: bool
    event: bool
    # A stream's value or close: its writer sends "stream:<workflow_id>" (single.py).
    stream: bool = False


# A position already holding a record is written only to complete a pending
# one, or to write a retried step's next back-off over it (a pending record of
# the same kind and name with more attempts: _rules.replaces_stored); a
# completed record is never overwritten. (record_batch in statements.sql says the same.)
_COMPLETE_PENDING = (
    "ON CONFLICT (shard_key, workflow_id, position) DO UPDATE SET "
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

# Found by primary key alone, the gate checked on the locked row (statements.sql:
# "by id only").
_LOCK_BY_ID = (
    "run AS (SELECT workflow_id, status, executor_id FROM {s}.workflows "
    "WHERE shard_key = %(shard)s AND workflow_id = %(wid)s FOR NO KEY UPDATE)"
)


def record_statement(s: str, shape: RecordShape) -> str:
    """The one statement that writes a record and its side effects, for `shape`.

    It returns (written, messages sent, events set).
    """
    ctes: list[str] = []
    gate = ["run.status = 'PENDING'"]
    if shape.executor:
        gate.append("run.executor_id = %(executor)s")
    ctes.append(_LOCK_BY_ID.replace("{s}", s))
    if shape.consume:
        # Locking the message makes a concurrent consumer of it wait, then find
        # it gone. Joined with `run`, so the run's row is locked first, in the
        # order delete_workflow takes them (the gate's subqueries are evaluated
        # before `run` is scanned; alone, this one would lock the message first).
        ctes.append(
            f"msg AS (SELECT m.message_id FROM {s}.messages m, run "
            "WHERE m.shard_key = %(shard)s AND m.workflow_id = %(wid)s "
            "AND m.message_id = ANY(%(consume)s::bigint[]) "
            "FOR UPDATE OF m)"
        )
        gate.append("(SELECT count(*) FROM msg) = %(consume_count)s")
    if shape.send:
        # A key-share lock keeps the receiving run from being deleted under us.
        ctes.append(
            f"target AS (SELECT workflow_id FROM {s}.workflows "
            "WHERE shard_key = %(send_shard)s AND workflow_id = %(send_to)s FOR KEY SHARE)"
        )
        gate.append("EXISTS (SELECT 1 FROM target)")
    if not shape.first:
        gate.append(
            f"EXISTS (SELECT 1 FROM {s}.records p "
            "WHERE p.shard_key = %(shard)s AND p.workflow_id = %(wid)s "
            "AND p.position = %(pos)s - 1)"
        )
    # A record that sets an event keeps what it set, so a fork that copies it
    # can set the event too (create_workflow's fork_of).
    setting = ", event_key, event_value" if shape.event else ""
    set_values = ", %(event_key)s, %(event_value)s" if shape.event else ""
    ctes.append(
        f"ins AS (INSERT INTO {s}.records AS r (shard_key, workflow_id, {RECORD_COLUMNS}{setting}) "
        "SELECT %(shard)s, run.workflow_id, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s, "
        f"%(call_site)s, %(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s{set_values} "
        f"FROM run WHERE {' AND '.join(gate)} "
        f"{_COMPLETE_PENDING_SETTING if shape.event else _COMPLETE_PENDING})"
    )
    # Only a changed deadline dirties the run's row.
    ctes.append(
        f"wake AS (UPDATE {s}.workflows w SET wake_at = %(wake_at)s FROM ins "
        "WHERE w.shard_key = %(shard)s AND w.workflow_id = ins.workflow_id "
        "AND w.wake_at IS DISTINCT FROM %(wake_at)s)"
    )
    sent = "0"
    events = "0"
    if shape.consume:
        ctes.append(
            f"taken AS (DELETE FROM {s}.messages m USING msg, ins "
            "WHERE m.shard_key = %(shard)s AND m.workflow_id = %(wid)s "
            "AND m.message_id = msg.message_id)"
        )
    if shape.send:
        key_join = ""
        if shape.send_key:
            ctes.append(
                f"used_key AS (INSERT INTO {s}.send_keys (shard_key, workflow_id, key) "
                "SELECT %(send_shard)s, target.workflow_id, %(send_key)s FROM target, ins "
                "ON CONFLICT DO NOTHING RETURNING workflow_id)"
            )
            key_join = ", used_key"
        # The message takes the next number of the receiving run's inbox.
        ctes.append(
            f"numbered AS (INSERT INTO {s}.inboxes AS b (shard_key, workflow_id, last_message) "
            f"SELECT %(send_shard)s, target.workflow_id, 1 FROM target, ins{key_join} "
            "ON CONFLICT (shard_key, workflow_id) DO UPDATE "
            "SET last_message = b.last_message + 1 RETURNING workflow_id, last_message)"
        )
        ctes.append(
            f"sent AS (INSERT INTO {s}.messages (shard_key, workflow_id, message_id, topic, "
            "payload, created_at, trace_context) "
            "SELECT %(send_shard)s, workflow_id, last_message, %(send_topic)s, "
            "%(send_payload)s, %(now)s, %(send_trace)s "
            "FROM numbered RETURNING workflow_id)"
        )
        sent = "(SELECT count(*) FROM sent)"
    if shape.event:
        ctes.append(
            f"ev AS (INSERT INTO {s}.events (shard_key, workflow_id, key, value) "
            "SELECT %(shard)s, ins.workflow_id, %(event_key)s, %(event_value)s FROM ins "
            "ON CONFLICT (shard_key, workflow_id, key) DO UPDATE SET value = excluded.value "
            "RETURNING workflow_id)"
        )
        events = "(SELECT count(*) FROM ev)"
    written = "(SELECT count(*) FROM ins)"
    return f"WITH {', '.join(ctes)} SELECT {written}, {sent}, {events}"


def finish_record_statement(s: str, *, executor: bool, first: bool) -> str:
    """Finish one run with its last record: one statement, so one round trip and one commit.

    Locks the run's row by primary key (by id only), writes the record
    through `record()`'s gate (PENDING, owner, previous position present; a
    pending position completed, a completed one left alone) and finishes the
    run only if the record was written. Returns whether the run passed the
    finish's gate, and how many runs it finished (the caller sends the note).
    """
    gate = ["run.status = 'PENDING'"]
    if executor:
        gate.append("run.executor_id = %(executor)s")
    record_gate = list(gate)
    if not first:
        record_gate.append(
            f"EXISTS (SELECT 1 FROM {s}.records p "
            "WHERE p.shard_key = %(shard)s AND p.workflow_id = %(wid)s "
            "AND p.position = %(pos)s - 1)"
        )
    return (
        f"WITH {_LOCK_BY_ID.replace('{s}', s)}, "
        f"ins AS (INSERT INTO {s}.records AS r (shard_key, workflow_id, {RECORD_COLUMNS}) "
        "SELECT %(shard)s, run.workflow_id, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s, "
        "%(call_site)s, %(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s "
        f"FROM run WHERE {' AND '.join(record_gate)} "
        f"{_COMPLETE_PENDING}), "
        f"u AS (UPDATE {s}.workflows w SET status = %(status)s, result = %(result)s, "
        "error = %(error)s, updated_at = %(now)s, wake_at = NULL FROM ins "
        "WHERE w.shard_key = %(shard)s AND w.workflow_id = ins.workflow_id "
        "RETURNING w.workflow_id) "
        f"SELECT EXISTS (SELECT 1 FROM run WHERE {' AND '.join(gate)}), "
        "(SELECT count(*) FROM u)"
    )
