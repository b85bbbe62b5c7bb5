-- The PostgreSQL store's statements, by name (read by replaykit.stores._statements).
--
-- {s} is the store's schema, filled in once per store as a quoted identifier.
-- Placeholders are psycopg's: %s, %(name)s, and %(name)b for a parameter sent in
-- binary.
--
-- Notes apart: no statement that writes a run's rows calls pg_notify. What a write
-- tells other processes goes in a statement of its own (notify_many, sent by
-- Database.notify in the write's transaction, or pipelined beside an autocommit
-- write), as a sharded database needs (docs/storage.md, "Past one server").
--
-- Shard keys: every statement about one run names its shard key as a constant
-- beside its id (postgres/shards.py keeps the keys), so that on a sharded or
-- partitioned schema it touches one shard (tests/test_shard_ready.py).
--
-- By id only: a statement about one run names it by primary key and nothing else
-- in its scan of workflows; conditions on status or owner are checked on the row it
-- locked. psycopg prepares a statement on its sixth execution and PostgreSQL keeps a
-- generic plan made from the statistics of that moment: on an empty schema,
-- `workflow_id = $1 AND status = 'PENDING'` once got a plan through the status
-- index, which then read every PENDING run per checkpoint as the table grew
-- (tests/test_postgres_plans.py). Locking the row first also leaves the check to the
-- row's latest version, which the lock waited for.
--
-- Planned each time: statements that search runs by queue, status or executor, and
-- run at most a few times per claim round or sweep, are executed unprepared
-- (PLAN_EACH_TIME in postgres/database.py): planned with their actual values and the
-- table's current size each time, no plan made while the schema was small outlives
-- it. Statements about one run stay prepared; they are safe by "by id only".
--
-- In id order: statements that change many runs lock them in id order first, as
-- the batch statements do, so no two of them wait for each other crosswise. Locked
-- rows that changed meanwhile are checked again and dropped if they no longer match.
--
-- Names are the SQLite store's for the same question; a statement SQLite has no
-- twin of says why in an `-- only:` line.
--
-- Built in Python instead (postgres/shapes.py): the one-record write and the
-- finish-with-record write, whose optional parts (owner check, previous position,
-- messages consumed, a send, an event, a stream's note) are left out of the text
-- rather than switched off with `param IS NULL OR ...`, so each of their variants
-- keeps a plan of its own; and a listing's filter (stores/_sql.py).


-- name: configure_session
-- Every pooled session runs in UTC, so timestamps read back alike.
-- only: SQLite configures its connections with PRAGMAs (sqlite/connections.py)
SET TIME ZONE 'UTC';

-- name: schema_version_table_exists
-- Whether the schema has its version table yet; the parameter is its qualified name.
-- only: SQLite's database is its schema, made and versioned by migrations.sql
SELECT to_regclass(%s) IS NOT NULL;

-- name: schema_version
-- The last migration the schema ran (NULL when none).
SELECT max(version)
FROM {s}.schema_version;

-- name: limit_migration_lock_wait
-- How long a migration waits for any lock, for the rest of its transaction.
-- only: SQLite's migrations wait on its busy timeout, not a lock timeout
SELECT set_config('lock_timeout', %s, true);

-- name: lock_transaction
-- Take turns on an advisory key until the transaction ends: migrations, a queue's
-- claims under limits, one (queue, dedup_id).
-- only: SQLite's single writer already takes turns for the whole database
SELECT pg_advisory_xact_lock(%s);

-- name: create_schema
-- The schema itself, before its first migration.
-- only: SQLite's database is its schema, made and versioned by migrations.sql
CREATE SCHEMA IF NOT EXISTS {s};

-- name: create_schema_version
-- The table recording which migrations ran.
-- only: SQLite's database is its schema, made and versioned by migrations.sql
CREATE TABLE IF NOT EXISTS {s}.schema_version (version integer PRIMARY KEY, applied_at
        timestamptz NOT NULL DEFAULT now());

-- name: mark_migrated
-- Record that migration %s ran.
-- only: SQLite's database is its schema, made and versioned by migrations.sql
INSERT INTO {s}.schema_version (version)
VALUES (%s);


-- name: listen
-- Listen on the schema's channel ({channel} is filled in as an identifier).
-- only: LISTEN/NOTIFY; SQLite's notes stay in its process
LISTEN {channel};

-- name: notify
-- One note on the channel: (channel, '<origin><kind>:<key>').
-- only: LISTEN/NOTIFY; SQLite's notes stay in its process
SELECT pg_notify(%s, %s);

-- name: notify_many
-- Notes on the channel, each '<origin><kind>:<key>', in a statement of their own: apart
-- from the writes they tell of, which a sharded database runs on the nodes holding
-- the rows, while its listeners are connected to the one that runs this.
-- only: LISTEN/NOTIFY; SQLite's notes stay in its process
SELECT count(pg_notify(%s, n))
FROM unnest(%s::text[]) AS n;

-- name: notify_continued
-- continue_workflow's notes: the archived generation finished, the run's streams
-- ended.
-- only: LISTEN/NOTIFY; SQLite's notes stay in its process
SELECT pg_notify(%(c)s, %(f)s), pg_notify(%(c)s, %(s)s);

-- name: notify_deleted
-- delete_workflow's note, so other engines forget what they keep of the run.
-- only: LISTEN/NOTIFY; SQLite's notes stay in its process
SELECT pg_notify(%s, %s || 'deleted:' || %s);


-- name: ping
-- Whether a held session is still alive.
-- only: session advisory locks; SQLite holds an executor id by a lock file (stores/_holds.py)
SELECT 1;

-- name: keepalive_session
-- Keepalives on a holding session, so a vanished engine's id comes free in about 25 s.
-- only: session advisory locks; SQLite holds an executor id by a lock file (stores/_holds.py)
SELECT set_config('tcp_keepalives_idle', '10', false), set_config('tcp_keepalives_interval',
        '5', false), set_config('tcp_keepalives_count', '3', false);

-- name: hold_executor
-- Take an executor id's session lock, if no other session holds it.
-- only: session advisory locks; SQLite holds an executor id by a lock file (stores/_holds.py)
SELECT pg_try_advisory_lock(%s);

-- name: unhold_executor
-- Give an executor id's session lock back before the session closes.
-- only: session advisory locks; SQLite holds an executor id by a lock file (stores/_holds.py)
SELECT pg_advisory_unlock(%s);

-- name: executor_holder
-- Who holds an executor id's lock: the session's name, address and start (the key
-- split into the two oids pg_locks shows).
-- only: session advisory locks; SQLite holds an executor id by a lock file (stores/_holds.py)
SELECT a.application_name, host(a.client_addr), a.backend_start
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
AND l.database = (SELECT oid
    FROM pg_database
    WHERE datname = current_database()) AND l.classid = %s::bigint::oid
AND l.objid = %s::bigint::oid;


-- name: claimable_exists
-- Whether a queue has a run ready for this version now (before taking a limited
-- claim's lock): one probe of its items.
SELECT 1
FROM {s}.queue_items
WHERE queue = %(queue)s AND app_version = %(version)s AND (wake_at IS NULL OR wake_at <=
        %(now)s)
LIMIT 1;

-- name: claim
-- Take up to %(room)s ready items of a queue, in priority order, out of the queue: SKIP
-- LOCKED keeps two claimers off one item, and the items live on the queue's shard.
-- Returns the runs' (shard key, id); start_claimed starts them, in the same
-- transaction.
DELETE FROM {s}.queue_items q
USING (SELECT workflow_id
    FROM {s}.queue_items
    WHERE queue = %(queue)s AND app_version = %(version)s AND (wake_at IS NULL OR wake_at <=
            %(now)s)
    ORDER BY priority, created_at, workflow_id
    LIMIT %(room)s
    FOR UPDATE SKIP LOCKED) AS ready
WHERE q.queue = %(queue)s AND q.workflow_id = ready.workflow_id
RETURNING q.shard_key, q.workflow_id;

-- name: start_claimed
-- Start the runs of the items a claim took under one shard key (claims.py sends one
-- statement per key, all in one round trip), each found by id (by id only: probed
-- and locked, then checked), if it is still ENQUEUED: an item whose run was cancelled
-- or deleted meanwhile starts nothing, and is gone. A queued run's timeout starts at
-- its claim; an earlier deadline of its own holds. Returns each run and whether it
-- has a log.
-- only: SQLite's claim reads and starts the runs in one statement on one file
UPDATE {s}.workflows w
SET status = 'PENDING', executor_id = %(executor)s, started_at = %(now)s, wake_at = NULL,
    updated_at = %(now)s, deadline = CASE WHEN w.timeout_seconds IS NULL THEN w.deadline
    ELSE LEAST(w.deadline, %(now)s + w.timeout_seconds * interval '1 second') END
FROM (SELECT l.shard_key, l.workflow_id
    FROM unnest(%(wid)s::text[]) AS c(wid)
    CROSS JOIN LATERAL (SELECT l.shard_key, l.workflow_id, l.status
        FROM {s}.workflows l
        WHERE l.shard_key = %(shard)s AND l.workflow_id = c.wid
        OFFSET 0
        FOR NO KEY UPDATE) l
    WHERE l.status = 'ENQUEUED') AS ready
WHERE w.shard_key = %(shard)s AND w.workflow_id = ready.workflow_id
RETURNING w.workflow_id, w.name, w.status, w.inputs, w.result, w.executor_id, w.app_version,
    w.created_at, w.updated_at, w.parent_id, w.queue, w.priority, w.dedup_id,
    w.recovery_attempts, w.wake_at, w.error, w.started_at, w.trace_context, w.forked_from,
    w.fork_position, w.deadline, w.timeout_seconds, w.generation, w.continued_as,
    w.partition_key, w.attributes, w.shard_key, EXISTS (SELECT 1
    FROM {s}.records r
    WHERE r.shard_key = %(shard)s AND r.workflow_id = w.workflow_id);

-- name: enqueue_items
-- Runs put on their queues (a JSON array of [queue, id, shard key, partition key,
-- version, priority, created_at, wake_at]), in queue and id order; an item there
-- already takes the run's values.
-- only: SQLite's claim reads the runs themselves
INSERT INTO {s}.queue_items AS q (queue, workflow_id, shard_key, partition_key, app_version,
        priority, created_at, wake_at)
SELECT e->>0, e->>1, e->>2, e->>3, e->>4, (e->>5)::int, (e->>6)::timestamptz,
    (e->>7)::timestamptz
FROM jsonb_array_elements(%s::jsonb) AS e
ORDER BY e->>0, e->>1
ON CONFLICT (queue, workflow_id) DO UPDATE SET shard_key = excluded.shard_key, partition_key =
    excluded.partition_key, app_version = excluded.app_version, priority = excluded.priority,
    created_at = excluded.created_at, wake_at = excluded.wake_at;

-- name: move_item
-- A queued run moved to another version (move_family): its item follows.
-- only: SQLite's claim reads the runs themselves
UPDATE {s}.queue_items
SET app_version = %s
WHERE queue = %s AND workflow_id = %s;

-- name: drop_item
-- A deleted run's item, if it had one.
-- only: SQLite's claim reads the runs themselves
DELETE FROM {s}.queue_items
WHERE queue = %s AND workflow_id = %s;

-- name: plan_by_index
-- For the rest of a partitioned claim's transaction, plan without sorts, hashes, bitmaps
-- or table scans: claim_partitioned's plan is index probes in index order. Without
-- column statistics (a queue just filled, before autovacuum's first ANALYZE) the
-- planner took each key walk's probe as one row and sorted the whole queue for it, a
-- thousand times a claim (40 s for 20,000 runs over 1,000 keys). The final sort of
-- the picked runs, which no index gives, still runs. JIT off: the disabled nodes'
-- costs would pass jit_above_cost, and compiling the statement took 2 s.
-- only: PostgreSQL's planner settings; SQLite's claim_partitioned reads the queue once
SELECT set_config('enable_sort', 'off', true), set_config('enable_hashjoin', 'off', true),
    set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
    set_config('enable_material', 'off', true), set_config('jit', 'off', true);

-- name: claim_partitioned
-- A partitioned queue's claim (the rule: stores/_partitions.py), in one statement:
-- `waiting` walks the distinct keys with ENQUEUED runs by index (one probe a key,
-- however many runs each holds); `keys` gives each its room (%(room)s, less its PENDING
-- runs under %(concurrency)s, less its starts since %(since)s under %(starts)s; NULL:
-- no such limit), its weight (%(weights)s, a JSON object; 1 for a key it does not
-- name) and when it was served last; `picks` takes each key's next runs up to its
-- room, round by round (a round: `weight` ranks), the key served longest ago first, and
-- keeps %(room)s of them; their items are taken out of the queue (SKIP LOCKED passes any
-- that another claimer holds) and start_claimed starts their runs. The walk and the
-- picks read the queue's items (one shard); the counts read its runs. Limits per key
-- take the queue's claim lock first (postgres/claims.py), so the counts hold across
-- claimers.
WITH RECURSIVE waiting(key) AS ((SELECT partition_key
        FROM {s}.queue_items
        WHERE queue = %(queue)s AND app_version = %(version)s
        ORDER BY partition_key
        LIMIT 1)
    UNION ALL
    SELECT (SELECT i.partition_key
        FROM {s}.queue_items i
        WHERE i.queue = %(queue)s AND i.app_version = %(version)s
        AND i.partition_key > waiting.key
        ORDER BY i.partition_key
        LIMIT 1)
    FROM waiting
    WHERE waiting.key IS NOT NULL),
keys AS (SELECT k.key, LEAST(%(room)s::int, CASE WHEN %(concurrency)s::int IS NOT NULL THEN
            %(concurrency)s::int - (SELECT count(*)
                FROM {s}.workflows r
                WHERE r.queue = %(queue)s AND r.partition_key = k.key
                AND r.status = 'PENDING') END, CASE WHEN %(starts)s::int IS NOT NULL THEN
            %(starts)s::int - (SELECT count(*)
                FROM {s}.workflows r
                WHERE r.queue = %(queue)s AND r.partition_key = k.key
                AND r.started_at > %(since)s) END) AS free, (SELECT max(r.started_at)
        FROM {s}.workflows r
        WHERE r.queue = %(queue)s AND r.partition_key = k.key) AS served,
        COALESCE((%(weights)s::jsonb ->> k.key)::int, 1) AS weight
    FROM waiting k
    WHERE k.key IS NOT NULL),
picks AS (SELECT c.workflow_id
    FROM keys k
    CROSS JOIN LATERAL (SELECT n.workflow_id, n.priority, n.created_at, row_number() OVER
            (ORDER BY n.priority, n.created_at, n.workflow_id) AS rank
        FROM (SELECT i.workflow_id, i.priority, i.created_at
            FROM {s}.queue_items i
            WHERE i.queue = %(queue)s AND i.app_version = %(version)s
            AND i.partition_key = k.key AND (i.wake_at IS NULL OR i.wake_at <= %(now)s)
            ORDER BY i.priority, i.created_at, i.workflow_id
            LIMIT GREATEST(k.free, 0)) n) c
    ORDER BY (c.rank + k.weight - 1) / k.weight, k.served NULLS FIRST, c.priority,
        c.created_at, c.workflow_id
    LIMIT %(room)s)
DELETE FROM {s}.queue_items q
USING (SELECT l.workflow_id
    FROM {s}.queue_items l
    WHERE l.queue = %(queue)s AND l.workflow_id IN (SELECT workflow_id
        FROM picks)
    FOR UPDATE OF l SKIP LOCKED) AS ready
WHERE q.queue = %(queue)s AND q.workflow_id = ready.workflow_id
RETURNING q.shard_key, q.workflow_id;

-- name: count_running
-- A queue's PENDING runs, for its concurrency limit.
SELECT count(*)
FROM {s}.workflows
WHERE queue = %s AND status = 'PENDING';

-- name: count_started
-- A queue's runs started after a time, for its rate limit.
SELECT count(*)
FROM {s}.workflows
WHERE queue = %s AND started_at > %s;

-- name: heartbeat
-- An engine's heartbeat: when it was last seen, and what it runs.
INSERT INTO {s}.heartbeats (executor_id, app_version, seen_at, registered)
VALUES (%s, %s, %s, %s::json)
ON CONFLICT (executor_id) DO UPDATE SET app_version = excluded.app_version, seen_at =
    excluded.seen_at, registered = excluded.registered;

-- name: read_heartbeats
-- The engines heard from since a time, in executor id order.
SELECT executor_id, app_version, seen_at, registered
FROM {s}.heartbeats
WHERE seen_at >= %s
ORDER BY executor_id;

-- name: take_over
-- Move the PENDING runs of engines silent since %(cutoff)s to %(executor)s, in id
-- order. Each dead engine's executor key (computed by the server as PostgresStore
-- computes it) is tried for the transaction: a live engine holds it for its session,
-- so its runs are never moved, however late its heartbeat.
-- With %(beat)s, the engine's heartbeat is upserted by the same statement, so that an
-- idle engine's beat costs one round trip (a data-modifying WITH always runs to
-- completion; the move reads the heartbeats as they were before it).
WITH seen AS (INSERT INTO {s}.heartbeats (executor_id, app_version, seen_at, registered)
    SELECT %(executor)s, %(version)s, %(now)s, %(names)s::json
    WHERE %(beat)s
    ON CONFLICT (executor_id) DO UPDATE SET app_version = excluded.app_version, seen_at =
        excluded.seen_at, registered = excluded.registered)
UPDATE {s}.workflows w
SET executor_id = %(executor)s, updated_at = %(now)s
FROM (SELECT shard_key, workflow_id
    FROM {s}.workflows
    WHERE status = 'PENDING' AND app_version = %(version)s AND executor_id IN (SELECT
            executor_id
        FROM {s}.heartbeats
        WHERE CASE WHEN executor_id <> %(executor)s AND seen_at < %(cutoff)s THEN
            pg_try_advisory_xact_lock(('x' || encode(substr(sha256(%(key_prefix)s::bytea ||
                                convert_to(executor_id, 'UTF8') || %(key_separator)s::bytea
                                || convert_to(%(version)s, 'UTF8')), 1, 8),
                        'hex'))::bit(64)::bigint) ELSE false END)
    ORDER BY workflow_id
    FOR NO KEY UPDATE) AS dead
WHERE w.shard_key = dead.shard_key AND w.workflow_id = dead.workflow_id
RETURNING w.workflow_id, w.created_at, w.shard_key;

-- name: release
-- Put an executor's queued PENDING runs back on their queues, in id order; each queue
-- is notified once (notify_many). Returns what their items need (enqueue_items, same
-- transaction).
WITH r AS (UPDATE {s}.workflows w
    SET status = 'ENQUEUED', executor_id = '', updated_at = %(now)s
    FROM (SELECT shard_key, workflow_id
        FROM {s}.workflows
        WHERE status = 'PENDING' AND executor_id = %(executor)s AND queue IS NOT NULL
        ORDER BY workflow_id
        FOR NO KEY UPDATE) AS mine
    WHERE w.shard_key = mine.shard_key AND w.workflow_id = mine.workflow_id
    RETURNING w.workflow_id, w.queue, w.created_at, w.shard_key, w.partition_key,
        w.app_version, w.priority, w.wake_at)
SELECT r.workflow_id, r.queue, r.created_at, r.shard_key, r.partition_key, r.app_version,
    r.priority, r.wake_at
FROM r;


-- name: shard_of
-- A run's shard key, from the directory of ids (placed by id: one shard).
SELECT shard_key
FROM {s}.run_shards
WHERE workflow_id = %s;

-- name: shards_of
-- Runs' shard keys, from the directory of ids.
-- only: SQLite keeps no directory
SELECT workflow_id, shard_key
FROM {s}.run_shards
WHERE workflow_id = ANY(%s);

-- name: register_run
-- A new run's id in the directory, unless the id is taken (then nothing is returned):
-- the directory keeps ids unique across shards. The run's row follows in the same
-- transaction.
-- only: SQLite keeps no directory; its workflows table keeps ids unique
INSERT INTO {s}.run_shards (workflow_id, shard_key)
VALUES (%s, %s)
ON CONFLICT (workflow_id) DO NOTHING
RETURNING shard_key;

-- name: register_runs
-- New runs' ids in the directory (a JSON array of [id, key] pairs), in id order so
-- two batches never wait for each other crosswise; returns the ids registered.
-- only: SQLite keeps no directory
INSERT INTO {s}.run_shards (workflow_id, shard_key)
SELECT e->>0, e->>1
FROM jsonb_array_elements(%s::jsonb) AS e
ORDER BY e->>0
ON CONFLICT (workflow_id) DO NOTHING
RETURNING workflow_id;

-- name: create_workflow
-- Insert one run (its id just registered in the directory, register_run); returns a
-- row if it did.
INSERT INTO {s}.workflows (workflow_id, name, status, inputs, result,
            executor_id, app_version, created_at, updated_at, parent_id, queue, priority,
            dedup_id, recovery_attempts, wake_at, error, started_at, trace_context,
            forked_from, fork_position, deadline, timeout_seconds, generation, continued_as,
            partition_key, attributes, shard_key)
    VALUES (%(workflow_id)s, %(name)s, %(status)s, %(inputs)s, %(result)s, %(executor_id)s,
            %(app_version)s, %(created_at)s, %(updated_at)s, %(parent_id)s, %(queue)s,
            %(priority)s, %(dedup_id)s, %(recovery_attempts)s, %(wake_at)s, %(error)s,
            %(started_at)s, %(trace_context)s, %(forked_from)s, %(fork_position)s,
            %(deadline)s, %(timeout_seconds)s, %(generation)s, %(continued_as)s,
            %(partition_key)s, %(attributes)s, %(shard_key)s)
ON CONFLICT (shard_key, workflow_id) DO NOTHING
RETURNING 1;

-- name: create_workflow_record
-- One of the records a new run (a fork) starts with.
INSERT INTO {s}.records (shard_key, workflow_id, position, kind, name, outcome, digest,
        call_site, started_at, completed_at, wake_at, attempts)
VALUES (%(shard)s, %(wid)s, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s,
        %(call_site)s, %(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s);

-- name: fork_copy_event_marks
-- A fork's copied records take what their originals set as events.
UPDATE {s}.records f
SET event_key = src.event_key, event_value = src.event_value
FROM {s}.records src
WHERE f.shard_key = %(fork_shard)s AND f.workflow_id = %(fork)s
AND src.shard_key = %(source_shard)s AND src.workflow_id = %(source)s AND src.position = f.position AND src.kind = f.kind AND src.digest = f.digest
AND src.event_key IS NOT NULL;

-- name: fork_set_events
-- A fork's events: for each key, what its last record setting the key set (each
-- told by the caller); returns how many.
WITH ev AS (INSERT INTO {s}.events (shard_key, workflow_id, key, value)
    SELECT DISTINCT ON (event_key) shard_key, workflow_id, event_key, event_value
    FROM {s}.records
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s AND event_key IS NOT NULL
    ORDER BY event_key, position DESC
    ON CONFLICT (shard_key, workflow_id, key) DO UPDATE SET value = excluded.value
    RETURNING workflow_id)
SELECT count(*)
FROM ev;

-- name: create_workflows
-- Insert many runs in one statement (their ids just registered in the directory,
-- register_runs); returns the ids it created. The
-- rows are inserted in id order, so two batches naming the same ids never wait for
-- each other crosswise.
-- only: one statement per batch; SQLite's writer runs a batch in one transaction
WITH input AS (SELECT (e->>0) COLLATE "C" AS workflow_id, e->>1 AS name, e->>2 AS status,
        (e->>3)::json AS inputs, (e->>4)::json AS result, e->>5 AS executor_id, e->>6 AS
        app_version, (e->>7)::timestamptz AS created_at, (e->>8)::timestamptz AS updated_at,
        (e->>9) COLLATE "C" AS parent_id, e->>10 AS queue, (e->>11)::int AS priority, e->>12
        AS dedup_id, (e->>13)::int AS recovery_attempts, (e->>14)::timestamptz AS wake_at,
        e->>15 AS error, (e->>16)::timestamptz AS started_at, e->>17 AS trace_context,
        (e->>18) COLLATE "C" AS forked_from, (e->>19)::int AS fork_position,
        (e->>20)::timestamptz AS deadline, (e->>21)::float8 AS timeout_seconds,
        (e->>22)::int AS generation, (e->>23) COLLATE "C" AS continued_as, e->>24 AS
        partition_key, e->25 AS attributes, (e->>26) COLLATE "C" AS shard_key
    FROM jsonb_array_elements(%(rows)s::jsonb) AS e),
ins AS (INSERT INTO {s}.workflows (workflow_id, name, status, inputs, result, executor_id,
            app_version, created_at, updated_at, parent_id, queue, priority, dedup_id,
            recovery_attempts, wake_at, error, started_at, trace_context, forked_from,
            fork_position, deadline, timeout_seconds, generation, continued_as, partition_key,
            attributes, shard_key)
    SELECT workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
        updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
        started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
        generation, continued_as, partition_key, attributes, shard_key
    FROM input
    ORDER BY workflow_id
    ON CONFLICT (shard_key, workflow_id) DO NOTHING
    RETURNING workflow_id)
SELECT workflow_id
FROM ins;

-- name: get_workflows
-- The runs with the ids given, one primary-key probe each (by id only).
-- only: one statement per batch; SQLite's writer runs a batch in one transaction
SELECT w.workflow_id, w.name, w.status, w.inputs, w.result, w.executor_id, w.app_version,
    w.created_at, w.updated_at, w.parent_id, w.queue, w.priority, w.dedup_id,
    w.recovery_attempts, w.wake_at, w.error, w.started_at, w.trace_context, w.forked_from,
    w.fork_position, w.deadline, w.timeout_seconds, w.generation, w.continued_as,
    w.partition_key, w.attributes, w.shard_key
FROM (SELECT shard COLLATE "C" AS shard, wid COLLATE "C" AS wid
    FROM unnest(%(shard)b::text[], %(wid)b::text[]) AS u(shard, wid)) i
CROSS JOIN LATERAL (SELECT *
    FROM {s}.workflows w
    WHERE w.shard_key = i.shard AND w.workflow_id = i.wid
    OFFSET 0) w;

-- name: lock_dedup_ids
-- Take turns on the advisory keys of a batch's (queue, dedup_id)s, in key order. JIT
-- off for the rest of the transaction: the check is index probes that JIT cannot speed
-- up, and a large batch's estimate would pass jit_above_cost and pay for compiling it.
-- only: SQLite's single writer already takes turns for the whole database
SELECT set_config('jit', 'off', true), count(pg_advisory_xact_lock(k))
FROM unnest(%s::bigint[]) AS k;

-- name: dedup_holders
-- For each (id, queue, dedup_id) given: whether the id exists, and the live holder.
-- Searches runs by queue and dedup_id, once per batch: planned each time
-- (planned each time). Each search is a lateral probe fenced with OFFSET 0: `EXISTS
-- (...)` lets the planner hash the whole table instead, and with the ORDER BY next to
-- the search it walked the created_at index for the first live run of each dedup_id
-- rather than look the id up.
-- only: one statement per batch; SQLite's writer runs a batch in one transaction
SELECT i.wid, me.found IS NOT NULL, h.workflow_id
FROM (SELECT wid COLLATE "C" AS wid, queue, dedup
    FROM unnest(%(wid)s::text[], %(queue)s::text[], %(dedup)s::text[]) AS u(wid, queue,
            dedup)) i
LEFT JOIN LATERAL (SELECT 1 AS found
    FROM {s}.run_shards me
    WHERE me.workflow_id = i.wid
    OFFSET 0) me ON true
LEFT JOIN LATERAL (SELECT d.workflow_id
    FROM (SELECT workflow_id, status, created_at
        FROM {s}.workflows w
        WHERE w.queue = i.queue AND w.dedup_id = i.dedup
        OFFSET 0) d
    WHERE d.status IN ('ENQUEUED', 'PENDING')
    ORDER BY d.created_at, d.workflow_id
    LIMIT 1) h ON true;

-- name: dedup_holder
-- The live run of a queue holding a dedup_id, unless the id being created exists
-- already (then create_workflow answers with it).
SELECT w.workflow_id
FROM {s}.workflows w
WHERE w.queue = %(queue)s AND w.dedup_id = %(dedup)s AND w.status IN ('ENQUEUED', 'PENDING')
AND NOT EXISTS (SELECT 1
    FROM {s}.run_shards me
    WHERE me.workflow_id = %(wid)s)
ORDER BY w.created_at, w.workflow_id
LIMIT 1;

-- name: get_first_inputs
-- The first inputs kept for runs that continued as new.
SELECT w.workflow_id, w.first_inputs
FROM unnest(%s::text[], %s::text[]) AS i(shard, wid)
JOIN {s}.workflows w ON w.shard_key = i.shard AND w.workflow_id = i.wid
WHERE w.first_inputs IS NOT NULL;


-- name: get_workflow
-- One run by id.
SELECT workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
    updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
    started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
    generation, continued_as, partition_key, attributes, shard_key
FROM {s}.workflows
WHERE shard_key = %s AND workflow_id = %s;

-- name: lock_workflow
-- One run by id, its row locked for the transaction.
-- only: a row lock; SQLite's writer holds the whole database
SELECT workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
    updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
    started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
    generation, continued_as, partition_key, attributes, shard_key
FROM {s}.workflows
WHERE shard_key = %s AND workflow_id = %s
FOR UPDATE;

-- name: load_log
-- A run's records from a position on.
SELECT position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at,
    attempts
FROM {s}.records
WHERE shard_key = %s AND workflow_id = %s AND position >= %s
ORDER BY position;

-- name: load_log_limited
-- A run's records from a position on, at most a number of them.
SELECT position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at,
    attempts
FROM {s}.records
WHERE shard_key = %s AND workflow_id = %s AND position >= %s
ORDER BY position
LIMIT %s;

-- name: load_runs
-- Many runs by id, for a batch of wake-ups (one read instead of one per run).
SELECT workflow_id, name, status, inputs, result, executor_id, app_version, created_at,
    updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error,
    started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds,
    generation, continued_as, partition_key, attributes, shard_key
FROM unnest(%s::text[], %s::text[]) AS i(shard, wid)
JOIN {s}.workflows w ON w.shard_key = i.shard AND w.workflow_id = i.wid;

-- name: load_runs_logs
-- The whole logs of many runs, each in order of position.
SELECT r.workflow_id, r.position, r.kind, r.name, r.outcome, r.digest, r.call_site,
    r.started_at, r.completed_at, r.wake_at, r.attempts
FROM unnest(%s::text[], %s::text[]) AS i(shard, wid)
JOIN {s}.records r ON r.shard_key = i.shard AND r.workflow_id = i.wid
ORDER BY r.workflow_id, r.position;

-- name: load_runs_cancels
-- The cancel requests of many runs (those that hold one).
SELECT c.workflow_id, c.reason, c.grace_until, c.requested_at
FROM unnest(%s::text[], %s::text[]) AS i(shard, wid)
JOIN {s}.cancel_requests c ON c.shard_key = i.shard AND c.workflow_id = i.wid;

-- name: peek_message
-- The oldest message of a run's topic.
SELECT message_id, payload, created_at, trace_context
FROM {s}.messages
WHERE shard_key = %s AND workflow_id = %s AND topic = %s
ORDER BY message_id
LIMIT 1;

-- name: peek_message_any
-- The oldest message of a run on any of several topics (`Recv(("a", "b"))`): (run,
-- topics as a text array). A run's message ids grow with every send to it, so the
-- lowest is the oldest.
SELECT message_id, payload, created_at, trace_context, topic
FROM {s}.messages
WHERE shard_key = %s AND workflow_id = %s AND topic = ANY(%s::text[])
ORDER BY message_id
LIMIT 1;

-- name: get_event
-- One event of a run.
SELECT value
FROM {s}.events
WHERE shard_key = %s AND workflow_id = %s AND key = %s;

-- name: get_events
-- A run's events; no rows if the run is missing, one row of NULLs if it has none.
SELECT e.key, e.value
FROM {s}.workflows w
LEFT JOIN {s}.events e ON e.shard_key = w.shard_key AND e.workflow_id = w.workflow_id
WHERE w.shard_key = %s AND w.workflow_id = %s
ORDER BY e.key;

-- name: record_step_heartbeat
-- A step's latest heartbeat, in one statement: the run's row locked by id (a delete
-- waits), the beat kept only for a PENDING run of the executor named (if any) at the
-- beat's generation, and written over a stored beat of no later generation or attempt
-- (stores/_step_beats.py). Returns the run's name, status and owner and whether the
-- beat was written; no row if there is no run.
WITH run AS (SELECT name, status, executor_id, generation
    FROM {s}.workflows
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s
    FOR KEY SHARE),
written AS (INSERT INTO {s}.step_heartbeats (shard_key, workflow_id, position, child_path,
        generation, attempt, name, details, beat_at)
    SELECT %(shard)s, %(wid)s, %(position)s, %(path)s, %(generation)s, %(attempt)s, %(name)s, %(details)s,
        %(at)s
    FROM run
    WHERE run.status = 'PENDING' AND (%(executor)s::text IS NULL OR run.executor_id =
            %(executor)s) AND run.generation = %(generation)s
    ON CONFLICT (shard_key, workflow_id, position, child_path) DO UPDATE SET generation =
        excluded.generation, attempt = excluded.attempt, name = excluded.name, details =
        excluded.details, beat_at = excluded.beat_at
    WHERE (step_heartbeats.generation, step_heartbeats.attempt) <= (excluded.generation,
            excluded.attempt)
    RETURNING 1)
SELECT run.name, run.status, run.executor_id, EXISTS (SELECT 1
        FROM written)
FROM run;

-- name: get_step_heartbeats
-- The latest heartbeat of each step of a run's current generation; no rows if the run
-- is missing, one row of NULLs if none of its steps beat.
SELECT b.position, b.child_path, b.attempt, b.name, b.details, b.beat_at, b.generation
FROM {s}.workflows w
LEFT JOIN {s}.step_heartbeats b ON b.shard_key = w.shard_key AND b.workflow_id =
    w.workflow_id AND b.generation = w.generation
WHERE w.shard_key = %s AND w.workflow_id = %s
ORDER BY b.position, b.child_path;


-- part: locked_pending_runs
-- The runs of a batch's `input` (shard, wid, executor) that may be written: each
-- PENDING and owned by the executor named, if any, locked in id order so two batches
-- never wait for each other crosswise. `OFFSET 0` keeps each lookup a primary-key
-- probe the planner does not flatten into a join.
run AS (SELECT w.shard_key, w.workflow_id
    FROM (SELECT shard, wid, executor
        FROM input
        ORDER BY wid) i
    CROSS JOIN LATERAL (SELECT w.shard_key, w.workflow_id, w.status, w.executor_id
        FROM {s}.workflows w
        WHERE w.shard_key = i.shard AND w.workflow_id = i.wid
        OFFSET 0
        FOR NO KEY UPDATE) w
    WHERE w.status = 'PENDING' AND (i.executor IS NULL OR w.executor_id = i.executor))

-- part: gated_records
-- The records of a batch's `input` that pass the one-record write's gate, written:
-- the run locked above, the previous position present, a completed position never
-- overwritten (a pending one only by a completion, or by the same command with more
-- attempts). Returns the runs whose record was written.
ins AS (INSERT INTO {s}.records AS r (shard_key, workflow_id, position, kind, name,
            outcome, digest, call_site, started_at, completed_at, wake_at, attempts)
    SELECT i.shard, i.wid, i.pos, i.kind, i.name, i.outcome::json, i.digest, i.call_site,
        i.started_at, i.completed_at, i.rwake, i.attempts
    FROM input i
    JOIN run ON run.workflow_id = i.wid
    LEFT JOIN LATERAL (SELECT 1 AS found
        FROM {s}.records p
        WHERE p.shard_key = i.shard AND p.workflow_id = i.wid AND p.position = i.pos - 1
        LIMIT 1) prev ON true
    WHERE i.pos = 0 OR prev.found IS NOT NULL
    ON CONFLICT (shard_key, workflow_id, position) DO UPDATE SET kind = excluded.kind, name =
        excluded.name, outcome = excluded.outcome, digest = excluded.digest, call_site =
        excluded.call_site, started_at = excluded.started_at, completed_at =
        excluded.completed_at, wake_at = excluded.wake_at, attempts = excluded.attempts
    WHERE r.outcome IS NULL AND (excluded.outcome IS NOT NULL OR (excluded.kind = r.kind
            AND excluded.name = r.name AND excluded.attempts > r.attempts))
    RETURNING r.shard_key, r.workflow_id)

-- name: record_batch
-- Many plain records (no side effects) of distinct runs in one statement. The same
-- gate as the one-record write per row: the run PENDING (and owned by the executor
-- named, if any), the previous position present, a completed position never
-- overwritten. Returns the ids of the runs whose record was written; the caller sends
-- every other one down the one-record path, which explains refusals. Runs are locked
-- in id order so two batches never wait for each other crosswise.
-- only: one statement per batch; SQLite's writer runs a batch in one transaction
WITH input AS (SELECT (e->>0) COLLATE "C" AS wid, (e->>1)::int AS pos, e->>2 AS kind, e->>3
        AS name, o.outcome, e->>4 AS digest, e->>5 AS call_site, (e->>6)::timestamptz AS
        started_at, (e->>7)::timestamptz AS completed_at, (e->>8)::timestamptz AS rwake,
        (e->>9)::int AS attempts, e->>10 AS executor, (e->>11)::timestamptz AS wake_at,
        (e->>12) COLLATE "C" AS shard
    FROM json_array_elements(%(rows)s::json) WITH ORDINALITY AS r(e, n)
    JOIN unnest(%(outcome)b::text[]) WITH ORDINALITY AS o(outcome, n) USING (n)),
{part:locked_pending_runs},
{part:gated_records},
wake AS (UPDATE {s}.workflows w
    SET wake_at = i.wake_at
    FROM ins
    JOIN input i ON i.wid = ins.workflow_id
    WHERE w.shard_key = ins.shard_key AND w.workflow_id = ins.workflow_id AND w.wake_at IS DISTINCT FROM i.wake_at)
SELECT workflow_id
FROM ins;

-- name: record_duplicate_send
-- A record whose keyed send found its key used takes the call's if_duplicate outcome
-- instead (in the record's transaction).
UPDATE {s}.records
SET outcome = %s
WHERE shard_key = %s AND workflow_id = %s AND position = %s;

-- name: explain_record
-- What stands in the way of a record, read afresh: (name, status, executor_id) of the
-- run (NULLs if missing), its log's length, the record at the position (ten columns,
-- NULLs if none), the messages to consume still there, and whether the send's target
-- exists.
-- only: one read; SQLite asks run_owner, get_record and log_length
SELECT w.name, w.status, w.executor_id, (SELECT count(*)
    FROM {s}.records
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s), r.position, r.kind, r.name,
    r.outcome, r.digest, r.call_site, r.started_at, r.completed_at, r.wake_at, r.attempts,
    ARRAY(SELECT message_id
    FROM {s}.messages
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s AND message_id =
        ANY(%(consume)s::bigint[])), EXISTS (SELECT 1
    FROM {s}.workflows
    WHERE shard_key = %(send_shard)s::text AND workflow_id = %(send_to)s::text)
FROM (SELECT 1) AS one
LEFT JOIN {s}.workflows w ON w.shard_key = %(shard)s AND w.workflow_id = %(wid)s
LEFT JOIN {s}.records r ON r.shard_key = %(shard)s AND r.workflow_id = %(wid)s AND
    r.position = %(pos)s;

-- name: lock_run_at_position
-- Lock a run for a Transaction or a late record: (name, status, executor_id), its
-- log's length, and the record at the position (ten columns, NULLs if none).
-- only: a row lock; SQLite reads run_owner, get_record, log_length under its writer
SELECT w.name, w.status, w.executor_id, (SELECT count(*)
    FROM {s}.records
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s), r.position, r.kind, r.name,
    r.outcome, r.digest, r.call_site, r.started_at, r.completed_at, r.wake_at, r.attempts
FROM {s}.workflows w
LEFT JOIN {s}.records r ON r.shard_key = %(shard)s AND r.workflow_id = %(wid)s AND
    r.position = %(pos)s
WHERE w.shard_key = %(shard)s AND w.workflow_id = %(wid)s
FOR NO KEY UPDATE OF w;

-- name: record_late
-- A late record: written at its position unless a completed record is there.
INSERT INTO {s}.records AS r (shard_key, workflow_id, position, kind, name, outcome, digest,
        call_site, started_at, completed_at, wake_at, attempts)
VALUES (%(shard)s, %(wid)s, %(pos)s, %(kind)s, %(name)s, %(outcome)s, %(digest)s,
        %(call_site)s, %(started_at)s, %(completed_at)s, %(rwake)s, %(attempts)s)
ON CONFLICT (shard_key, workflow_id, position) DO UPDATE SET kind = excluded.kind, name =
    excluded.name, outcome = excluded.outcome, digest = excluded.digest, call_site =
    excluded.call_site, started_at = excluded.started_at, completed_at =
    excluded.completed_at, wake_at = excluded.wake_at, attempts = excluded.attempts
WHERE r.outcome IS NULL;


-- name: finish_workflow
-- Finish one PENDING run (owned by %(executor)s if not NULL), found by primary key;
-- returns how many it finished.
WITH run AS (SELECT workflow_id, status, executor_id
    FROM {s}.workflows
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s
    FOR NO KEY UPDATE),
u AS (UPDATE {s}.workflows w
    SET status = %(status)s, result = %(result)s, error = %(error)s, updated_at = %(now)s,
        wake_at = NULL
    FROM run
    WHERE w.shard_key = %(shard)s AND w.workflow_id = %(wid)s AND run.status = 'PENDING' AND (%(executor)s::text IS NULL
            OR run.executor_id = %(executor)s)
    RETURNING w.workflow_id)
SELECT count(*)
FROM u;

-- name: finish_batch
-- Finish many runs (each PENDING, owned by its executor if named); returns those
-- finished. The runs are locked in id order first, as the record statement does, so
-- two batches never wait for each other crosswise.
-- only: one statement per batch; SQLite's writer runs a batch in one transaction
WITH input AS (SELECT shard COLLATE "C" AS shard, wid COLLATE "C" AS wid, status, result,
        error, executor
    FROM unnest(%(shard)b::text[], %(wid)b::text[], %(status)b::text[], %(result)b::text[],
            %(error)b::text[], %(executor)b::text[]) AS i(shard, wid, status, result, error,
            executor)),
{part:locked_pending_runs},
u AS (UPDATE {s}.workflows w
    SET status = i.status, result = i.result::json, error = i.error, updated_at = %(now)s,
        wake_at = NULL
    FROM run
    JOIN input i ON i.wid = run.workflow_id
    WHERE w.shard_key = run.shard_key AND w.workflow_id = run.workflow_id
    RETURNING w.workflow_id)
SELECT workflow_id
FROM u;

-- name: finish_with_record_batch
-- Finish many runs, each with its last record, in one statement (one commit). Each
-- row: the record statement's gate and insert, as in record_batch, and
-- the run finished only if its record was written, so a run's record and finish commit
-- together or not at all. Returns the runs finished (the caller tells of them); the caller sends
-- every other one down the one-finish path, which finishes a run whose position holds
-- an equal record already, answers False for a run not PENDING, or raises.
-- only: one statement per batch; SQLite's writer runs a batch in one transaction
WITH input AS (SELECT (e->>0) COLLATE "C" AS wid, (e->>1)::int AS pos, e->>2 AS kind, e->>3
        AS name, o.outcome, e->>4 AS digest, e->>5 AS call_site, (e->>6)::timestamptz AS
        started_at, (e->>7)::timestamptz AS completed_at, (e->>8)::timestamptz AS rwake,
        (e->>9)::int AS attempts, e->>10 AS executor, (e->>11)::timestamptz AS wake_at,
        e->>12 AS status, e->>13 AS error, o.result, (e->>14) COLLATE "C" AS shard
    FROM json_array_elements(%(rows)s::json) WITH ORDINALITY AS r(e, n)
    JOIN unnest(%(outcome)b::text[], %(result)b::text[]) WITH ORDINALITY AS o(outcome,
            result, n) USING (n)),
{part:locked_pending_runs},
{part:gated_records},
u AS (UPDATE {s}.workflows w
    SET status = i.status, result = i.result::json, error = i.error, updated_at = %(now)s,
        wake_at = NULL
    FROM ins
    JOIN input i ON i.wid = ins.workflow_id
    WHERE w.shard_key = ins.shard_key AND w.workflow_id = ins.workflow_id
    RETURNING w.workflow_id)
SELECT workflow_id
FROM u;

-- name: archive_generation
-- continue_workflow: the run's current generation kept under its archived id.
-- only: SQLite inserts the archived generation with create_workflow
INSERT INTO {s}.workflows (shard_key, workflow_id, name, status, inputs, executor_id,
        app_version, created_at, updated_at, parent_id, started_at, trace_context,
        generation, continued_as)
VALUES (%(shard)s, %(aid)s, %(name)s, %(status)s, %(inputs)s, %(executor)s, %(version)s,
        %(created)s, %(now)s, %(parent)s, %(started)s, %(trace)s, %(generation)s, %(wid)s)
ON CONFLICT (shard_key, workflow_id) DO NOTHING;

-- name: archive_log
-- continue_workflow: the run's log moved to its archived generation, on the same shard.
UPDATE {s}.records
SET workflow_id = %s
WHERE shard_key = %s AND workflow_id = %s;

-- name: continue_workflow
-- continue_workflow: the live row starts its next generation. Named columns only: what
-- other features add to the row is kept.
UPDATE {s}.workflows
SET inputs = %(inputs)s, generation = generation + 1, wake_at = NULL, recovery_attempts = 0,
    error = '', started_at = %(now)s, updated_at = %(now)s, first_inputs = CASE WHEN
    generation = 0 THEN inputs ELSE first_inputs END
WHERE shard_key = %(shard)s AND workflow_id = %(wid)s;

-- name: rewind_copy_log
-- rewind_workflow: the records below a position copied back from the archived attempt,
-- with what they set as events.
INSERT INTO {s}.records (shard_key, workflow_id, position, kind, name, outcome, digest,
        call_site, started_at, completed_at, wake_at, attempts, event_key, event_value)
SELECT shard_key, %(wid)s, position, kind, name, outcome, digest, call_site, started_at,
    completed_at, wake_at, attempts, event_key, event_value
FROM {s}.records
WHERE shard_key = %(shard)s AND workflow_id = %(aid)s AND position < %(pos)s;

-- name: rewind_keep_outcome
-- rewind_workflow: the archived attempt keeps how the run ended.
-- only: SQLite writes the archived attempt whole with create_workflow
UPDATE {s}.workflows a
SET result = w.result, error = w.error
FROM {s}.workflows w
WHERE a.shard_key = %(shard)s AND a.workflow_id = %(aid)s AND w.shard_key = %(shard)s
AND w.workflow_id = %(wid)s;

-- name: rewind_workflow
-- rewind_workflow: the run starts its next generation PENDING for an engine, with the
-- same inputs, no result and no error, if it is still at the generation rewound from.
UPDATE {s}.workflows
SET status = 'PENDING', generation = generation + 1, executor_id = %(executor)s,
    app_version = %(version)s, result = NULL, error = '', wake_at = NULL,
    recovery_attempts = 0, started_at = %(now)s, updated_at = %(now)s, first_inputs = CASE
    WHEN generation = 0 THEN inputs ELSE first_inputs END
WHERE shard_key = %(shard)s AND workflow_id = %(wid)s AND generation = %(generation)s;

-- name: set_status
-- Set a run's status (from one of %(only_from)s, if not NULL), found by primary key;
-- returns how many it changed, the run's queue and what its item needs (a run put back
-- on its queue writes one, same transaction); %(note)s says what it is told as:
-- about the run, or about its queue for the note "enqueued" (a run put back on it).
WITH run AS (SELECT workflow_id, status, executor_id
    FROM {s}.workflows
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s
    FOR NO KEY UPDATE),
u AS (UPDATE {s}.workflows w
    SET status = %(status)s, error = %(error)s, updated_at = %(now)s, executor_id =
        coalesce(%(executor)s::text, w.executor_id), app_version =
        coalesce(%(version)s::text, w.app_version), recovery_attempts = CASE WHEN
        %(reset)s::boolean THEN 0 ELSE w.recovery_attempts END
    FROM run
    WHERE w.shard_key = %(shard)s AND w.workflow_id = %(wid)s AND (%(only_from)s::text[] IS NULL OR run.status =
            ANY(%(only_from)s::text[]))
    RETURNING w.workflow_id, CASE WHEN %(note)s::text = 'enqueued' THEN w.queue ELSE
        w.workflow_id END AS about, w.queue, w.partition_key, w.app_version, w.priority,
        w.created_at, w.wake_at)
SELECT count(*), max(queue), max(partition_key), max(app_version), max(priority),
    max(created_at), max(wake_at)
FROM u;

-- name: lock_family
-- A run's family (it, its children, theirs...) as Member columns, rows locked. A
-- family shares its shard key (children take their parent's), named in every part.
WITH RECURSIVE family(workflow_id) AS (SELECT workflow_id
    FROM {s}.workflows
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s
    UNION
    SELECT w.workflow_id
    FROM {s}.workflows AS w
    JOIN family AS f ON w.parent_id = f.workflow_id
    WHERE w.shard_key = %(shard)s)
SELECT w.workflow_id, w.parent_id, w.status, w.app_version, w.queue
FROM {s}.workflows AS w
JOIN family AS f ON w.workflow_id = f.workflow_id
WHERE w.shard_key = %(shard)s
FOR UPDATE OF w;

-- name: move_family_member
-- One member of a moved family: its new version, and its new owner if PENDING.
UPDATE {s}.workflows
SET app_version = %(version)s, updated_at = %(now)s, recovery_attempts = CASE WHEN
    %(status)s = 'PENDING' THEN 0 ELSE recovery_attempts END, executor_id = CASE WHEN
    %(executor)s::text IS NOT NULL AND %(status)s != 'ENQUEUED' THEN %(executor)s::text ELSE
    executor_id END
WHERE shard_key = %(shard)s AND workflow_id = %(wid)s;

-- name: set_deadline
-- A run's deadline and timeout; returns the id if the run exists.
UPDATE {s}.workflows
SET deadline = %s, timeout_seconds = %s
WHERE shard_key = %s AND workflow_id = %s
RETURNING workflow_id;

-- name: set_attributes
-- Merge attributes into a run's (the names given take their new values); returns the id
-- if the run exists.
UPDATE {s}.workflows
SET attributes = attributes || %s::jsonb
WHERE shard_key = %s AND workflow_id = %s
RETURNING workflow_id;

-- name: bump_recovery
-- Count one more recovery of a run; returns the new count.
UPDATE {s}.workflows
SET recovery_attempts = recovery_attempts + 1
WHERE shard_key = %s AND workflow_id = %s
RETURNING recovery_attempts;


-- part: message_target
-- The run a message is sent to, locked KEY SHARE so it is not deleted meanwhile (no
-- row: no such run, and nothing is sent).
target AS (SELECT workflow_id
    FROM {s}.workflows
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s
    FOR KEY SHARE)

-- part: numbered_message
-- The message itself, under the number `numbered` took in the run's inbox.
sent AS (INSERT INTO {s}.messages (shard_key, workflow_id, message_id, topic, payload,
            created_at, trace_context)
    SELECT %(shard)s, workflow_id, last_message, %(topic)s, %(payload)s, %(now)s, %(trace)s
    FROM numbered
    RETURNING workflow_id)

-- name: send_message
-- A message to a run (locked KEY SHARE so it is not deleted meanwhile), numbered next in
-- the run's inbox; returns (runs found, messages sent, false).
WITH {part:message_target},
numbered AS (INSERT INTO {s}.inboxes AS b (shard_key, workflow_id, last_message)
    SELECT %(shard)s, workflow_id, 1
    FROM target
    ON CONFLICT (shard_key, workflow_id) DO UPDATE SET last_message = b.last_message + 1
    RETURNING workflow_id, last_message),
{part:numbered_message}
SELECT (SELECT count(*)
    FROM target), (SELECT count(*)
    FROM sent), false;

-- name: answer_message
-- only: one statement; SQLite runs consume_messages and set_event in one transaction
-- A request refused before it reached the workflow: the message taken out of the run's
-- inbox and the answer set as the run's event, with no record; returns 1 if the message
-- was still there, else 0 and nothing written.
WITH gone AS (DELETE FROM {s}.messages
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s AND message_id = %(mid)s
    RETURNING workflow_id),
ev AS (INSERT INTO {s}.events (shard_key, workflow_id, key, value)
    SELECT %(shard)s, workflow_id, %(key)s, %(value)s
    FROM gone
    ON CONFLICT (shard_key, workflow_id, key) DO UPDATE SET value = EXCLUDED.value
    RETURNING workflow_id)
SELECT count(*)
FROM ev;

-- name: send_message_keyed
-- A message with an idempotency key, sent once per key; returns (runs found, messages
-- sent, whether an earlier attempt of this same call used the key). The statement's
-- snapshot does not see its own insert of the key.
-- only: one statement; SQLite runs use_send_key, send_message, send_key_used_by_call
WITH {part:message_target},
used_key AS (INSERT INTO {s}.send_keys (shard_key, workflow_id, key, call_id)
    SELECT %(shard)s, workflow_id, %(key)s, %(call)s
    FROM target
    ON CONFLICT DO NOTHING
    RETURNING workflow_id),
numbered AS (INSERT INTO {s}.inboxes AS b (shard_key, workflow_id, last_message)
    SELECT %(shard)s, workflow_id, 1
    FROM used_key
    ON CONFLICT (shard_key, workflow_id) DO UPDATE SET last_message = b.last_message + 1
    RETURNING workflow_id, last_message),
{part:numbered_message}
SELECT (SELECT count(*)
    FROM target), (SELECT count(*)
    FROM sent), EXISTS (SELECT 1
    FROM {s}.send_keys
    WHERE shard_key = %(shard)s AND workflow_id = %(wid)s AND key = %(key)s AND call_id =
        %(call)s);


-- name: delete_workflow
-- The run's row first, which takes its lock: a writer that wants to add to it waits,
-- then finds it gone.
DELETE FROM {s}.workflows
WHERE shard_key = %s AND workflow_id = %s
RETURNING queue;

-- name: delete_workflow_records
-- A deleted run's log.
DELETE FROM {s}.records
WHERE shard_key = %s AND workflow_id = %s;

-- name: delete_workflow_messages
-- A deleted run's inbox.
DELETE FROM {s}.messages
WHERE shard_key = %s AND workflow_id = %s;

-- name: delete_workflow_events
-- A deleted run's events.
DELETE FROM {s}.events
WHERE shard_key = %s AND workflow_id = %s;

-- name: delete_workflow_send_keys
-- A deleted run's used idempotency keys.
DELETE FROM {s}.send_keys
WHERE shard_key = %s AND workflow_id = %s;

-- name: delete_workflow_step_heartbeats
-- A deleted run's step heartbeats, of every generation.
DELETE FROM {s}.step_heartbeats
WHERE shard_key = %s AND workflow_id = %s;

-- name: delete_workflow_inbox
-- A deleted run's message numbering.
-- only: SQLite numbers messages by one rowid
DELETE FROM {s}.inboxes
WHERE shard_key = %s AND workflow_id = %s;

-- name: delete_archived_generations
-- A deleted run's archived generations (on its shard), and their logs; returns their
-- ids, which leave the directory too.
WITH gone AS (DELETE
    FROM {s}.workflows
    WHERE shard_key = %(shard)s AND continued_as = %(wid)s
    RETURNING workflow_id),
logs AS (DELETE FROM {s}.records r USING gone
    WHERE r.shard_key = %(shard)s AND r.workflow_id = gone.workflow_id)
SELECT workflow_id
FROM gone;

-- name: unregister_runs
-- Deleted runs' ids out of the directory.
-- only: SQLite keeps no directory
DELETE FROM {s}.run_shards
WHERE workflow_id = ANY(%s::text[]);


-- name: schedule_states
-- Every schedule's state, by name.
SELECT name, workflow_name, cron, tz, queue, backfill, paused, updated_at, trigger_at,
    backfill_start, backfill_end
FROM {s}.schedules
ORDER BY name;

-- name: register_schedule
-- A schedule's definition, written only if it changed: every engine registers its
-- schedules at each start, and most starts change nothing.
INSERT INTO {s}.schedules (name, workflow_name, cron, tz, queue, backfill, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (name) DO UPDATE SET workflow_name = excluded.workflow_name, cron =
    excluded.cron, tz = excluded.tz, queue = excluded.queue, backfill = excluded.backfill,
    updated_at = excluded.updated_at
WHERE (schedules.workflow_name, schedules.cron, schedules.tz, schedules.queue,
        schedules.backfill) IS DISTINCT FROM (excluded.workflow_name, excluded.cron,
        excluded.tz, excluded.queue, excluded.backfill);

-- name: set_schedule_paused
-- Pause or resume a schedule; changes a row only if it was not so already.
UPDATE {s}.schedules
SET paused = %s, updated_at = %s
WHERE name = %s AND paused <> %s;

-- name: schedule_exists
-- Whether a schedule is known.
SELECT 1
FROM {s}.schedules
WHERE name = %s;

-- name: schedule_trigger
-- A schedule's requested trigger, its row locked: a concurrent request waits, then
-- sees this one's.
SELECT trigger_at
FROM {s}.schedules
WHERE name = %s
FOR UPDATE;

-- name: request_schedule_trigger
-- Ask for a schedule to fire at a time.
UPDATE {s}.schedules
SET trigger_at = %s, updated_at = %s
WHERE name = %s;

-- name: schedule_backfill
-- A schedule's requested backfill, its row locked.
SELECT backfill_start, backfill_end
FROM {s}.schedules
WHERE name = %s
FOR UPDATE;

-- name: request_schedule_backfill
-- Ask for a schedule's backfill over a range.
UPDATE {s}.schedules
SET backfill_start = %s, backfill_end = %s, updated_at = %s
WHERE name = %s;

-- name: clear_schedule_trigger
-- Forget a trigger request, if it is still the one handled.
UPDATE {s}.schedules
SET trigger_at = NULL
WHERE name = %s AND trigger_at = %s;

-- name: clear_schedule_backfill
-- Forget a backfill request, if it is still the one handled.
UPDATE {s}.schedules
SET backfill_start = NULL, backfill_end = NULL
WHERE name = %s AND backfill_start = %s AND backfill_end = %s;

-- name: delete_schedule_state
-- Forget a schedule.
DELETE FROM {s}.schedules
WHERE name = %s;

-- name: request_cancel
-- Keep a run's cancel request unless it holds one; the request it holds now. The
-- second SELECT reads the snapshot before the INSERT: a row only when one was there.
WITH kept AS (INSERT INTO {s}.cancel_requests (shard_key, workflow_id, reason, grace_until,
            requested_at)
    VALUES (%(shard)s, %(wid)s, %(reason)s, %(until)s, %(at)s)
    ON CONFLICT (shard_key, workflow_id) DO NOTHING
    RETURNING reason, grace_until, requested_at)
SELECT reason, grace_until, requested_at FROM kept
UNION ALL
SELECT reason, grace_until, requested_at FROM {s}.cancel_requests
WHERE shard_key = %(shard)s AND workflow_id = %(wid)s;

-- name: get_cancel_request
-- A run's cancel request, if it holds one.
SELECT reason, grace_until, requested_at
FROM {s}.cancel_requests
WHERE shard_key = %s AND workflow_id = %s;

-- name: clear_cancel_request
-- Drop a run's cancel request (a resume, a delete).
DELETE FROM {s}.cancel_requests
WHERE shard_key = %s AND workflow_id = %s;

-- name: set_parent_close
-- A child run's parent close policy (written before the child is created; again: same).
INSERT INTO {s}.parent_close_policies (workflow_id, policy)
VALUES (%s, %s)
ON CONFLICT (workflow_id) DO UPDATE SET policy = excluded.policy;

-- name: get_parent_close
-- A child run's parent close policy, if not the default.
SELECT policy
FROM {s}.parent_close_policies
WHERE workflow_id = %s;

-- name: clear_parent_close
-- A deleted run's parent close policy.
DELETE FROM {s}.parent_close_policies
WHERE workflow_id = %s;
