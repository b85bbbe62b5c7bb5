-- The SQLite store's statements, by name (read by replaykit.stores._statements).
--
-- The names are the PostgreSQL store's (stores/postgres/statements.sql) where the two
-- dialects answer the same question. Placeholders are SQLite's: `?` in order, or `?N`
-- where a value is used twice. Datetimes are integer microseconds since the epoch
-- (UTC); JSON values are text.
--
-- Every write runs inside BEGIN IMMEDIATE (sqlite/writer.py): nobody else writes until
-- it commits, so what a statement read earlier in the same body still holds, and no
-- statement here needs a row lock of its own.
--
-- A set of ids is bound as one JSON array and read with json_each(?), so that the
-- statement's text stays fixed (as PostgreSQL's `= ANY(%s)` does).
--
-- Not here: the pragmas set from the store's options (busy_timeout, synchronous,
-- user_version), which SQLite cannot bind; the writer's transaction control (BEGIN
-- IMMEDIATE, COMMIT, savepoints), in sqlite/writer.py; the schema's migrations, in
-- migrations.sql; and a listing's filter, built in Python (stores/_sql.py).


-- name: journal_mode
-- only: the journal mode (WAL) is SQLite's; PostgreSQL has none to read
-- The database's journal mode (`wal` for a file database).
PRAGMA journal_mode;

-- name: switch_to_wal
-- only: the journal mode (WAL) is SQLite's; PostgreSQL has none to set
-- Put the database in WAL mode, so readers never wait for the writer; answers the mode.
PRAGMA journal_mode = WAL;

-- name: schema_version
-- The last migration the database ran (0 for a new file).
PRAGMA user_version;


-- name: claimable_exists
-- Whether a queue has a run ready for this version now: (queue, version, now).
-- Engines poll for claims; an empty queue should not take the write lock.
SELECT 1
FROM workflows
WHERE queue = ? AND status = 'ENQUEUED' AND app_version = ?
AND (wake_at IS NULL OR wake_at <= ?)
LIMIT 1;

-- name: claim
-- Take up to ?5 ready runs of queue ?2 for executor ?1, in priority order. A queued
-- run's timeout starts at its claim; an earlier deadline of its own holds. Returns
-- each run and whether it has a log.
UPDATE workflows
SET status = 'PENDING', executor_id = ?1, started_at = ?4, wake_at = NULL, updated_at = ?4,
    deadline = CASE WHEN timeout_seconds IS NULL THEN deadline
    ELSE min(coalesce(deadline, ?4 + CAST(timeout_seconds * 1000000 AS INTEGER)),
        ?4 + CAST(timeout_seconds * 1000000 AS INTEGER)) END
WHERE workflow_id IN (SELECT workflow_id
    FROM workflows
    WHERE queue = ?2 AND status = 'ENQUEUED' AND app_version = ?3
    AND (wake_at IS NULL OR wake_at <= ?4)
    ORDER BY priority, created_at, workflow_id
    LIMIT ?5)
RETURNING workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
    updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
    started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
    generation, continued_as, partition_key, attributes, shard_key, EXISTS (SELECT 1
    FROM records r
    WHERE r.workflow_id = workflows.workflow_id);

-- name: claim_partitioned
-- A partitioned queue's claim (the rule: stores/_partitions.py): rank each key's ready
-- runs, give each key its room (?5, less its PENDING runs under ?6, less its starts
-- since ?8 under ?7; NULL: no such limit), its weight (?9, a JSON object; 1 for a key
-- it does not name) and when it was served last, and take the runs within their key's
-- room, round by round (a round: `weight` ranks), the key served longest ago first, ?5
-- at most: (executor, queue, version, now, room, concurrency, starts, since, weights).
WITH ranked AS (SELECT workflow_id, partition_key, priority, created_at, row_number() OVER
        (PARTITION BY partition_key ORDER BY priority, created_at, workflow_id) AS rank
    FROM workflows
    WHERE queue = ?2 AND status = 'ENQUEUED' AND app_version = ?3
    AND (wake_at IS NULL OR wake_at <= ?4)),
keys AS (SELECT k.key, min(?5, CASE WHEN ?6 IS NULL THEN ?5 ELSE ?6 - (SELECT count(*)
                FROM workflows r
                WHERE r.queue = ?2 AND r.partition_key = k.key AND r.status = 'PENDING') END,
        CASE WHEN ?7 IS NULL THEN ?5 ELSE ?7 - (SELECT count(*)
                FROM workflows r
                WHERE r.queue = ?2 AND r.partition_key = k.key AND r.started_at > ?8) END)
        AS free, (SELECT max(r.started_at)
        FROM workflows r
        WHERE r.queue = ?2 AND r.partition_key = k.key) AS served,
        coalesce((SELECT w.value
            FROM json_each(?9) w
            WHERE w.key = k.key), 1) AS weight
    FROM (SELECT DISTINCT partition_key AS key
        FROM ranked) k)
UPDATE workflows
SET status = 'PENDING', executor_id = ?1, started_at = ?4, wake_at = NULL, updated_at = ?4,
    deadline = CASE WHEN timeout_seconds IS NULL THEN deadline
    ELSE min(coalesce(deadline, ?4 + CAST(timeout_seconds * 1000000 AS INTEGER)),
        ?4 + CAST(timeout_seconds * 1000000 AS INTEGER)) END
WHERE workflow_id IN (SELECT r.workflow_id
    FROM ranked r
    JOIN keys k ON k.key = r.partition_key
    WHERE r.rank <= k.free
    ORDER BY (r.rank + k.weight - 1) / k.weight, k.served IS NOT NULL, k.served, r.priority,
        r.created_at, r.workflow_id
    LIMIT ?5)
RETURNING workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
    updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
    started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
    generation, continued_as, partition_key, attributes, shard_key, EXISTS (SELECT 1
    FROM records r
    WHERE r.workflow_id = workflows.workflow_id);

-- name: count_running
-- A queue's PENDING runs, for its concurrency limit.
SELECT count(*)
FROM workflows
WHERE queue = ? AND status = 'PENDING';

-- name: count_started
-- A queue's runs started after a time, for its rate limit.
SELECT count(*)
FROM workflows
WHERE queue = ? AND started_at > ?;

-- name: heartbeat
-- An engine's heartbeat: when it was last seen, and what it runs.
INSERT INTO heartbeats (executor_id, app_version, seen_at, registered)
VALUES (?, ?, ?, ?)
ON CONFLICT (executor_id) DO UPDATE SET app_version = excluded.app_version,
    seen_at = excluded.seen_at, registered = excluded.registered;

-- name: read_heartbeats
-- The engines heard from since a time, in executor id order.
SELECT executor_id, app_version, seen_at, registered
FROM heartbeats
WHERE seen_at >= ?
ORDER BY executor_id;

-- name: stale_executors
-- only: PostgreSQL finds the stale executors inside take_over's statement
-- The other engines silent since a time: (this executor, cutoff). take_over asks the
-- file locks (sqlite/claims.py) which of them are dead before moving their runs.
SELECT executor_id
FROM heartbeats
WHERE executor_id != ? AND seen_at < ?;

-- name: take_over
-- Move the PENDING runs of this version owned by the dead executors (a JSON array) to
-- this executor: (executor, now, version, dead).
UPDATE workflows
SET executor_id = ?, updated_at = ?
WHERE status = 'PENDING' AND app_version = ? AND executor_id IN (SELECT value
    FROM json_each(?))
RETURNING workflow_id, created_at;

-- name: release
-- Put an executor's queued PENDING runs back on their queues: (now, executor).
UPDATE workflows
SET status = 'ENQUEUED', executor_id = '', updated_at = ?
WHERE status = 'PENDING' AND executor_id = ? AND queue IS NOT NULL
RETURNING workflow_id, queue, created_at;


-- name: create_workflow
-- Insert one run unless its id exists (rowcount 0); also the archived generation of a
-- run that continues as new.
INSERT INTO workflows (workflow_id, name, status, inputs, result, executor_id, app_version,
        created_at, updated_at, parent_id, queue, priority, dedup_id, recovery_attempts,
        wake_at, error, started_at, trace_context, forked_from, fork_position, deadline,
        timeout_seconds, generation, continued_as, partition_key, attributes, shard_key)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (workflow_id) DO NOTHING;

-- name: shard_of
-- A run's shard key (a new run's elder's: stores/_shards.py).
SELECT shard_key
FROM workflows
WHERE workflow_id = ?;

-- name: create_workflow_record
-- One of the records a new run (a fork) starts with.
INSERT INTO records (workflow_id, position, kind, name, outcome, digest, call_site,
        started_at, completed_at, wake_at, attempts)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: fork_copy_event_marks
-- A fork's copied records take what their originals set as events: (fork, source).
UPDATE records AS f
SET event_key = s.event_key, event_value = s.event_value
FROM records AS s
WHERE f.workflow_id = ?1 AND s.workflow_id = ?2 AND s.position = f.position
AND s.kind = f.kind AND s.digest = f.digest AND s.event_key IS NOT NULL;

-- name: fork_set_events
-- A fork's events: for each key, the value its last record setting that key set.
INSERT INTO events (workflow_id, key, value)
SELECT workflow_id, event_key, event_value
FROM records r
WHERE workflow_id = ?1 AND event_key IS NOT NULL AND position = (SELECT max(position)
    FROM records l
    WHERE l.workflow_id = ?1 AND l.event_key = r.event_key)
ON CONFLICT (workflow_id, key) DO UPDATE SET value = excluded.value;

-- name: dedup_holder
-- The live run of a queue holding a dedup_id, oldest first.
SELECT workflow_id
FROM workflows
WHERE queue = ? AND dedup_id = ? AND status IN ('ENQUEUED', 'PENDING')
ORDER BY created_at, workflow_id
LIMIT 1;

-- name: get_first_inputs
-- The first inputs kept for runs (a JSON array of ids) that continued as new.
SELECT workflow_id, first_inputs
FROM workflows
WHERE first_inputs IS NOT NULL AND workflow_id IN (SELECT value
    FROM json_each(?));


-- name: get_workflow
-- One run by id.
SELECT workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
    updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
    started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
    generation, continued_as, partition_key, attributes, shard_key
FROM workflows
WHERE workflow_id = ?;

-- name: load_log
-- A run's records from a position on.
SELECT position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at,
    attempts
FROM records
WHERE workflow_id = ? AND position >= ?
ORDER BY position;

-- name: load_log_limited
-- A run's records from a position on, at most a number of them.
SELECT position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at,
    attempts
FROM records
WHERE workflow_id = ? AND position >= ?
ORDER BY position
LIMIT ?;

-- name: load_runs
-- Many runs by id (a JSON array), for a batch of wake-ups (one read instead of one per run).
SELECT workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
    updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
    started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
    generation, continued_as, partition_key, attributes, shard_key
FROM workflows
WHERE workflow_id IN (SELECT value FROM json_each(?));

-- name: load_runs_logs
-- The whole logs of many runs (a JSON array of ids), each in order of position.
SELECT workflow_id, position, kind, name, outcome, digest, call_site, started_at,
    completed_at, wake_at, attempts
FROM records
WHERE workflow_id IN (SELECT value FROM json_each(?))
ORDER BY workflow_id, position;

-- name: load_runs_cancels
-- The cancel requests of many runs (a JSON array of ids; those that hold one).
SELECT workflow_id, reason, grace_until, requested_at
FROM cancel_requests
WHERE workflow_id IN (SELECT value FROM json_each(?));

-- name: peek_message
-- The oldest message of a run's topic.
SELECT message_id, payload, created_at, trace_context
FROM messages
WHERE workflow_id = ? AND topic = ?
ORDER BY message_id
LIMIT 1;

-- name: peek_message_any
-- The oldest message of a run on any of several topics (`Recv(("a", "b"))`): (run,
-- topics as a JSON array). Message ids grow with every send, so the lowest is the oldest.
SELECT message_id, payload, created_at, trace_context, topic
FROM messages
WHERE workflow_id = ? AND topic IN (SELECT value
    FROM json_each(?))
ORDER BY message_id
LIMIT 1;

-- name: get_event
-- One event of a run.
SELECT value
FROM events
WHERE workflow_id = ? AND key = ?;

-- name: get_events
-- A run's events; no rows if the run is missing, one row of NULLs if it has none (one
-- statement, so no second read comes in between).
SELECT e.key, e.value
FROM workflows w
LEFT JOIN events e ON e.workflow_id = w.workflow_id
WHERE w.workflow_id = ?
ORDER BY e.key;


-- name: record_step_heartbeat
-- A step's latest heartbeat: kept only for a PENDING run of executor ?9 (if not NULL) at
-- the beat's generation, and written over a stored beat of no later generation or
-- attempt (stores/_step_beats.py). rowcount 0: refused (run_owner says why) or stale.
INSERT INTO step_heartbeats (workflow_id, position, child_path, generation, attempt, name,
        details, beat_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
WHERE EXISTS (SELECT 1
        FROM workflows
        WHERE workflow_id = ?1 AND status = 'PENDING' AND (?9 IS NULL OR executor_id = ?9)
        AND generation = ?4)
ON CONFLICT (workflow_id, position, child_path) DO UPDATE SET generation =
    excluded.generation, attempt = excluded.attempt, name = excluded.name, details =
    excluded.details, beat_at = excluded.beat_at
WHERE (excluded.generation, excluded.attempt) >= (step_heartbeats.generation,
        step_heartbeats.attempt);

-- name: get_step_heartbeats
-- The latest heartbeat of each step of a run's current generation; no rows if the run
-- is missing, one row of NULLs if none of its steps beat.
SELECT b.position, b.child_path, b.attempt, b.name, b.details, b.beat_at, b.generation
FROM workflows w
LEFT JOIN step_heartbeats b ON b.workflow_id = w.workflow_id AND b.generation = w.generation
WHERE w.workflow_id = ?
ORDER BY b.position, b.child_path;


-- name: append_record
-- only: PostgreSQL writes a record with its side effects in one statement built from its parts (stores/postgres/shapes.py)
-- The common case of a record, in one statement. Inserts a new position only right
-- after the last one, completes a pending one (or writes a retried step's next
-- back-off over it: same kind and name, more attempts; _rules.replaces_stored), and
-- leaves a completed one alone; and only into a PENDING run of executor ?12 (if not
-- NULL) whose deadline is already ?13 (rowcount 0 sends the caller down the slow path,
-- which says why, or moves the deadline and tries again). The run's row is only read,
-- so a commit writes one page, as a bare insert would.
INSERT INTO records (workflow_id, position, kind, name, outcome, digest, call_site,
        started_at, completed_at, wake_at, attempts)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
WHERE EXISTS (SELECT 1
        FROM workflows
        WHERE workflow_id = ?1 AND status = 'PENDING' AND (?12 IS NULL OR executor_id = ?12)
        AND wake_at IS ?13)
AND (?2 = 0 OR EXISTS (SELECT 1
        FROM records
        WHERE workflow_id = ?1 AND position = ?2 - 1))
ON CONFLICT (workflow_id, position) DO UPDATE SET kind = excluded.kind, name = excluded.name,
    outcome = excluded.outcome, digest = excluded.digest, call_site = excluded.call_site,
    started_at = excluded.started_at, completed_at = excluded.completed_at,
    wake_at = excluded.wake_at, attempts = excluded.attempts
WHERE records.outcome IS NULL AND (excluded.outcome IS NOT NULL OR (excluded.kind = records.kind
        AND excluded.name = records.name AND excluded.attempts > records.attempts));

-- name: append_last_record
-- only: PostgreSQL writes a finish's last record within the finish statement built from its parts (stores/postgres/shapes.py)
-- A finish's last record: append_record's gates but the deadline, which the finish
-- clears.
INSERT INTO records (workflow_id, position, kind, name, outcome, digest, call_site,
        started_at, completed_at, wake_at, attempts)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
WHERE EXISTS (SELECT 1
        FROM workflows
        WHERE workflow_id = ?1 AND status = 'PENDING' AND (?12 IS NULL OR executor_id = ?12))
AND (?2 = 0 OR EXISTS (SELECT 1
        FROM records
        WHERE workflow_id = ?1 AND position = ?2 - 1))
ON CONFLICT (workflow_id, position) DO UPDATE SET kind = excluded.kind, name = excluded.name,
    outcome = excluded.outcome, digest = excluded.digest, call_site = excluded.call_site,
    started_at = excluded.started_at, completed_at = excluded.completed_at,
    wake_at = excluded.wake_at, attempts = excluded.attempts
WHERE records.outcome IS NULL AND (excluded.outcome IS NOT NULL OR (excluded.kind = records.kind
        AND excluded.name = records.name AND excluded.attempts > records.attempts));

-- name: run_owner
-- only: PostgreSQL says why a write was refused in one statement (explain_record)
-- What a record's refusal is judged on: the run's name, status and executor.
SELECT name, status, executor_id
FROM workflows
WHERE workflow_id = ?;

-- name: get_record
-- only: PostgreSQL says why a write was refused in one statement (explain_record)
-- The record at a position of a run's log.
SELECT position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at,
    attempts
FROM records
WHERE workflow_id = ? AND position = ?;

-- name: log_length
-- only: PostgreSQL says why a write was refused in one statement (explain_record)
-- How many records a run's log holds (a gap's error says where it ends).
SELECT count(*)
FROM records
WHERE workflow_id = ?;

-- name: set_wake_at
-- only: PostgreSQL sets the run's wake time within the record statement built from its parts (stores/postgres/shapes.py)
-- Move a run's deadline to the one a record is written with (when only it stood in
-- append_record's way).
UPDATE workflows
SET wake_at = ?
WHERE workflow_id = ?;

-- name: consume_messages
-- only: PostgreSQL consumes messages within the record statement built from its parts (stores/postgres/shapes.py)
-- Take messages (a JSON array of ids) out of a run's inbox: (run, ids); returns the
-- ids taken.
DELETE FROM messages
WHERE workflow_id = ? AND message_id IN (SELECT value
    FROM json_each(?))
RETURNING message_id;

-- name: record_duplicate_send
-- A record whose keyed send found its key used takes the call's if_duplicate outcome
-- instead (in the record's transaction).
UPDATE records
SET outcome = ?
WHERE workflow_id = ? AND position = ?;

-- name: set_event
-- only: PostgreSQL sets an event within the record statement built from its parts (stores/postgres/shapes.py)
-- A run's event, set to its latest value.
INSERT INTO events (workflow_id, key, value)
VALUES (?, ?, ?)
ON CONFLICT (workflow_id, key) DO UPDATE SET value = excluded.value;

-- name: mark_record_event
-- only: PostgreSQL marks a record's event within the record statement built from its parts (stores/postgres/shapes.py)
-- The record that set an event keeps the key and value it set, for a fork to copy.
UPDATE records
SET event_key = ?, event_value = ?
WHERE workflow_id = ? AND position = ?;

-- name: record_late
-- A late record: written at its position unless a completed record is there (its
-- gates are checked in Python on the run, under the write lock).
INSERT INTO records (workflow_id, position, kind, name, outcome, digest, call_site,
        started_at, completed_at, wake_at, attempts)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (workflow_id, position) DO UPDATE SET kind = excluded.kind, name = excluded.name,
    outcome = excluded.outcome, digest = excluded.digest, call_site = excluded.call_site,
    started_at = excluded.started_at, completed_at = excluded.completed_at,
    wake_at = excluded.wake_at, attempts = excluded.attempts
WHERE records.outcome IS NULL;


-- name: finish_workflow
-- Finish one PENDING run (owned by executor ?6 if not NULL); rowcount 1 if it did.
UPDATE workflows
SET status = ?1, result = ?2, error = ?3, updated_at = ?4, wake_at = NULL
WHERE workflow_id = ?5 AND status = 'PENDING' AND (?6 IS NULL OR executor_id = ?6);

-- name: archive_log
-- continue_workflow: the run's log moved to its archived generation: (archived, run).
UPDATE records
SET workflow_id = ?
WHERE workflow_id = ?;

-- name: continue_workflow
-- continue_workflow: the live row starts its next generation, if it is still at the
-- one continued from. Named columns only: what other features add to the row is kept.
-- first_inputs keeps the inputs of generation 0 (read on the row before the update).
UPDATE workflows
SET inputs = ?1, generation = generation + 1, wake_at = NULL, recovery_attempts = 0,
    error = '', started_at = ?2, updated_at = ?2,
    first_inputs = CASE WHEN generation = 0 THEN inputs ELSE first_inputs END
WHERE workflow_id = ?3 AND status = 'PENDING' AND generation = ?4;

-- name: rewind_copy_log
-- rewind_workflow: the records below a position copied back from the archived attempt,
-- with what they set as events: (run, archived, position).
INSERT INTO records (workflow_id, position, kind, name, outcome, digest, call_site,
        started_at, completed_at, wake_at, attempts, event_key, event_value)
SELECT ?1, position, kind, name, outcome, digest, call_site, started_at, completed_at,
    wake_at, attempts, event_key, event_value
FROM records
WHERE workflow_id = ?2 AND position < ?3;

-- name: rewind_workflow
-- rewind_workflow: the run starts its next generation PENDING for an engine, with the
-- same inputs, no result and no error, if it is still at the generation rewound from.
UPDATE workflows
SET status = 'PENDING', generation = generation + 1, executor_id = ?1, app_version = ?2,
    result = NULL, error = '', wake_at = NULL, recovery_attempts = 0, started_at = ?3,
    updated_at = ?3, first_inputs = CASE WHEN generation = 0 THEN inputs ELSE first_inputs END
WHERE workflow_id = ?4 AND generation = ?5;

-- name: set_status
-- Set a run's status, its owner and version where given (not NULL), its recovery count
-- back to 0 if asked; only from one of ?8 (a JSON array of statuses) if not NULL.
UPDATE workflows
SET status = ?1, error = ?2, updated_at = ?3, executor_id = coalesce(?4, executor_id),
    app_version = coalesce(?5, app_version),
    recovery_attempts = CASE WHEN ?6 THEN 0 ELSE recovery_attempts END
WHERE workflow_id = ?7 AND (?8 IS NULL OR status IN (SELECT value
        FROM json_each(?8)));

-- name: lock_family
-- A run's family (it, its children, theirs...) as Member columns. The recursion
-- follows parent_id (indexed), and UNION drops a row met twice, so it ends whatever
-- the data. Read inside the write transaction, so no one changes it meanwhile.
WITH RECURSIVE family(workflow_id) AS (SELECT workflow_id
    FROM workflows
    WHERE workflow_id = ?
    UNION
    SELECT w.workflow_id
    FROM workflows AS w
    JOIN family AS f ON w.parent_id = f.workflow_id)
SELECT w.workflow_id, w.parent_id, w.status, w.app_version, w.queue
FROM workflows AS w
JOIN family AS f ON w.workflow_id = f.workflow_id;

-- name: move_family_member
-- One member of a moved family onto a version: (version, now, status, executor,
-- status, run). A run waiting to be claimed keeps its empty executor, a PENDING one
-- starts its recovery count afresh.
UPDATE workflows
SET app_version = ?1, updated_at = ?2,
    recovery_attempts = CASE WHEN ?3 = 'PENDING' THEN 0 ELSE recovery_attempts END,
    executor_id = CASE WHEN ?4 IS NOT NULL AND ?5 != 'ENQUEUED' THEN ?4 ELSE executor_id END
WHERE workflow_id = ?6;

-- name: set_deadline
-- A run's deadline and timeout; rowcount 1 if the run exists.
UPDATE workflows
SET deadline = ?, timeout_seconds = ?
WHERE workflow_id = ?;

-- name: set_attributes
-- Merge attributes into a run's (the names given take their new values; no value is
-- null, which json_patch would take for a removal); rowcount 1 if the run exists.
UPDATE workflows
SET attributes = json_patch(attributes, ?)
WHERE workflow_id = ?;

-- name: bump_recovery
-- Count one more recovery of a run; returns the new count.
UPDATE workflows
SET recovery_attempts = recovery_attempts + 1
WHERE workflow_id = ?
RETURNING recovery_attempts;


-- name: run_exists
-- only: PostgreSQL sends a keyed message in one statement (send_message_keyed)
-- Whether a run (a message's target) exists.
SELECT 1
FROM workflows
WHERE workflow_id = ?;

-- name: use_send_key
-- only: PostgreSQL sends a keyed message in one statement (send_message_keyed)
-- Use an idempotency key for a run's messages, remembering the call that used it;
-- rowcount 0 if it was used already.
INSERT INTO send_keys (workflow_id, key, call_id)
VALUES (?, ?, ?)
ON CONFLICT DO NOTHING;

-- name: send_key_used_by_call
-- only: PostgreSQL sends a keyed message in one statement (send_message_keyed)
-- Whether a used key was used by this same call (its earlier attempt delivered).
SELECT 1
FROM send_keys
WHERE workflow_id = ? AND key = ? AND call_id = ?;

-- name: send_message
-- A message into a run's inbox.
INSERT INTO messages (workflow_id, topic, payload, created_at, trace_context)
VALUES (?, ?, ?, ?, ?);


-- name: delete_workflow
-- The run's row; rowcount 0 if there was none.
DELETE FROM workflows
WHERE workflow_id = ?;

-- name: delete_workflow_records
-- A deleted run's log.
DELETE FROM records
WHERE workflow_id = ?;

-- name: delete_workflow_messages
-- A deleted run's inbox.
DELETE FROM messages
WHERE workflow_id = ?;

-- name: delete_workflow_events
-- A deleted run's events.
DELETE FROM events
WHERE workflow_id = ?;

-- name: delete_workflow_send_keys
-- A deleted run's used idempotency keys.
DELETE FROM send_keys
WHERE workflow_id = ?;

-- name: delete_workflow_step_heartbeats
-- A deleted run's step heartbeats, of every generation.
DELETE FROM step_heartbeats
WHERE workflow_id = ?;

-- name: delete_archived_logs
-- only: PostgreSQL deletes archived generations' logs within delete_archived_generations
-- A deleted run's archived generations' logs (they have no inbox or events); before
-- delete_archived_generations, which forgets which they are.
DELETE FROM records
WHERE workflow_id IN (SELECT workflow_id
    FROM workflows
    WHERE continued_as = ?);

-- name: delete_archived_generations
-- A deleted run's archived generations.
DELETE FROM workflows
WHERE continued_as = ?;


-- name: schedule_states
-- Every schedule's state, by name.
SELECT name, workflow_name, cron, tz, queue, backfill, paused, updated_at, trigger_at,
    backfill_start, backfill_end
FROM schedules
ORDER BY name;

-- name: register_schedule
-- A schedule's definition, written only if it changed: every engine registers its
-- schedules at each start, and most starts change nothing.
INSERT INTO schedules (name, workflow_name, cron, tz, queue, backfill, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET workflow_name = excluded.workflow_name, cron = excluded.cron,
    tz = excluded.tz, queue = excluded.queue, backfill = excluded.backfill,
    updated_at = excluded.updated_at
WHERE (workflow_name, cron, tz, queue, backfill) IS NOT (excluded.workflow_name,
        excluded.cron, excluded.tz, excluded.queue, excluded.backfill);

-- name: set_schedule_paused
-- Pause or resume a schedule; changes a row only if it was not so already.
UPDATE schedules
SET paused = ?, updated_at = ?
WHERE name = ? AND paused != ?;

-- name: schedule_exists
-- Whether a schedule is known.
SELECT 1
FROM schedules
WHERE name = ?;

-- name: request_schedule_trigger
-- Ask for a schedule to fire at a time, unless a request is waiting already.
UPDATE schedules
SET trigger_at = ?, updated_at = ?
WHERE name = ? AND trigger_at IS NULL;

-- name: schedule_trigger
-- A schedule's requested trigger (this request's, or the one that was waiting).
SELECT trigger_at
FROM schedules
WHERE name = ?;

-- name: request_schedule_backfill
-- Ask for a schedule's backfill over a range, unless a request is waiting already.
UPDATE schedules
SET backfill_start = ?, backfill_end = ?, updated_at = ?
WHERE name = ? AND backfill_start IS NULL;

-- name: schedule_backfill
-- A schedule's requested backfill (this request's, or the one that was waiting).
SELECT backfill_start, backfill_end
FROM schedules
WHERE name = ?;

-- name: clear_schedule_trigger
-- Forget a trigger request, if it is still the one handled.
UPDATE schedules
SET trigger_at = NULL
WHERE name = ? AND trigger_at = ?;

-- name: clear_schedule_backfill
-- Forget a backfill request, if it is still the one handled.
UPDATE schedules
SET backfill_start = NULL, backfill_end = NULL
WHERE name = ? AND backfill_start = ? AND backfill_end = ?;

-- name: delete_schedule_state
-- Forget a schedule.
DELETE FROM schedules
WHERE name = ?;

-- name: request_cancel
-- Keep a run's cancel request unless it holds one (read back with get_cancel_request).
INSERT INTO cancel_requests (workflow_id, reason, grace_until, requested_at)
VALUES (?, ?, ?, ?)
ON CONFLICT (workflow_id) DO NOTHING;

-- name: get_cancel_request
-- A run's cancel request, if it holds one.
SELECT reason, grace_until, requested_at
FROM cancel_requests
WHERE workflow_id = ?;

-- name: clear_cancel_request
-- Drop a run's cancel request (a resume, a delete).
DELETE FROM cancel_requests
WHERE workflow_id = ?;

-- name: set_parent_close
-- A child run's parent close policy (written before the child is created; again: same).
INSERT INTO parent_close_policies (workflow_id, policy)
VALUES (?, ?)
ON CONFLICT (workflow_id) DO UPDATE SET policy = excluded.policy;

-- name: get_parent_close
-- A child run's parent close policy, if not the default.
SELECT policy
FROM parent_close_policies
WHERE workflow_id = ?;

-- name: clear_parent_close
-- A deleted run's parent close policy.
DELETE FROM parent_close_policies
WHERE workflow_id = ?;
