-- The SQLite store's schema, as the migrations that build it (read by
-- replaykit.stores._statements; run by sqlite/migrations.py).
--
-- A block named `vN_...` belongs to migration N; a migration's blocks run in file
-- order, in the write transaction that also sets `PRAGMA user_version = N`. One
-- statement a block: `executescript` would commit the surrounding BEGIN IMMEDIATE, and
-- the version must commit with the schema change it describes. Add a migration, never
-- edit one a released replaykit ran.


-- name: v1_workflows
-- 1: the runs.
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
);

-- name: v1_workflows_by_created
CREATE INDEX workflows_by_created ON workflows (created_at, workflow_id);

-- name: v1_workflows_by_status
CREATE INDEX workflows_by_status ON workflows (status, created_at);

-- name: v1_workflows_by_executor
CREATE INDEX workflows_by_executor ON workflows (executor_id, app_version, status);

-- name: v1_workflows_by_parent
CREATE INDEX workflows_by_parent ON workflows (parent_id) WHERE parent_id IS NOT NULL;

-- name: v1_workflows_by_queue
CREATE INDEX workflows_by_queue ON workflows (queue, status, priority, created_at)
WHERE queue IS NOT NULL;

-- name: v1_workflows_by_queue_start
CREATE INDEX workflows_by_queue_start ON workflows (queue, started_at)
WHERE queue IS NOT NULL;

-- name: v1_workflows_by_dedup
CREATE INDEX workflows_by_dedup ON workflows (queue, dedup_id)
WHERE dedup_id IS NOT NULL;

-- name: v1_heartbeats
CREATE TABLE heartbeats (
    executor_id TEXT PRIMARY KEY,
    app_version TEXT NOT NULL,
    seen_at INTEGER NOT NULL
) WITHOUT ROWID;

-- name: v1_records
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
) WITHOUT ROWID;

-- name: v1_messages
-- AUTOINCREMENT so an id is never reused after its message is consumed: a runtime
-- holding a peeked id must not consume a newer message by it.
CREATE TABLE messages (
    message_id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

-- name: v1_messages_inbox
CREATE INDEX messages_inbox ON messages (workflow_id, topic, message_id);

-- name: v1_send_keys
CREATE TABLE send_keys (
    workflow_id TEXT NOT NULL,
    key TEXT NOT NULL,
    PRIMARY KEY (workflow_id, key)
) WITHOUT ROWID;

-- name: v1_events
CREATE TABLE events (
    workflow_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (workflow_id, key)
) WITHOUT ROWID;


-- name: v2_record_event_key
-- 2: a record that set an event keeps the key and value it set, so a fork that copies
-- the record sets the event too (events hold the latest only).
ALTER TABLE records ADD COLUMN event_key TEXT;

-- name: v2_record_event_value
ALTER TABLE records ADD COLUMN event_value TEXT;


-- name: v3_send_call
-- 3: a keyed send remembers the call that used its key, so a retry of that call after
-- a lost answer is told its message was delivered.
ALTER TABLE send_keys ADD COLUMN call_id TEXT;


-- name: v4_schedules
-- 4: schedules' durable state, shared by every engine on the file: the definition
-- last registered, paused or not, and requests not yet carried out.
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
) WITHOUT ROWID;


-- name: v5_workflow_trace_context
-- 5: the W3C trace context current where a run was created, and where a message was
-- sent, so that OpenTelemetry spans join their starter's trace.
ALTER TABLE workflows ADD COLUMN trace_context TEXT;

-- name: v5_message_trace_context
ALTER TABLE messages ADD COLUMN trace_context TEXT;


-- name: v6_forked_from
-- 6: a fork remembers its source run and the position it was forked at, so a run's
-- page can say where it came from and list its forks.
ALTER TABLE workflows ADD COLUMN forked_from TEXT;

-- name: v6_fork_position
ALTER TABLE workflows ADD COLUMN fork_position INTEGER;

-- name: v6_workflows_by_fork_source
CREATE INDEX workflows_by_fork_source ON workflows (forked_from)
WHERE forked_from IS NOT NULL;


-- name: v7_deadline
-- 7: deadlines. The instant a run is cancelled as timed out, and the timeout it was
-- given (a queued run's deadline is set from it when it is claimed).
ALTER TABLE workflows ADD COLUMN deadline INTEGER;

-- name: v7_timeout_seconds
ALTER TABLE workflows ADD COLUMN timeout_seconds REAL;


-- name: v8_generation
-- 8: continue-as-new. The live run counts its generations, and each archived
-- generation names the run it continued as, indexed for listing a run's generations.
ALTER TABLE workflows ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

-- name: v8_continued_as
ALTER TABLE workflows ADD COLUMN continued_as TEXT;

-- name: v8_workflows_by_continued_as
CREATE INDEX workflows_by_continued_as ON workflows (continued_as, generation)
WHERE continued_as IS NOT NULL;


-- name: v9_first_inputs
-- 9: the inputs a run that continued as new was created with, which a start re-issued
-- under its id compares with; runs continued before take them from their archived
-- generation 0 where it is still kept.
ALTER TABLE workflows ADD COLUMN first_inputs TEXT;

-- name: v9_first_inputs_of_continued
UPDATE workflows
SET first_inputs = (SELECT a.inputs
    FROM workflows AS a
    WHERE a.workflow_id = workflows.workflow_id || '#0'
    AND a.continued_as = workflows.workflow_id)
WHERE generation > 0;


-- name: v10_registered
-- 10: what each engine runs, with its heartbeat: the workflows it registered and the
-- queues it drains (replaykit/stores/_beats.py); NULL from older engines.
ALTER TABLE heartbeats ADD COLUMN registered TEXT;


-- name: v11_step_heartbeats
-- 11: step heartbeats: the latest beat of each step of a run (its details, its time,
-- the attempt and the generation that beat), one row per step; the child path is ""
-- for a step on its own, "1.0" inside composites (replaykit/stores/_step_beats.py).
CREATE TABLE step_heartbeats (
    workflow_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    child_path TEXT NOT NULL,
    generation INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    name TEXT NOT NULL,
    details TEXT,
    beat_at INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, position, child_path)
) WITHOUT ROWID;


-- name: v12_partition_key
-- 12: partition keys: a queued run's key, '' for none (the claim of a partitioned
-- queue groups its waiting runs by key, sqlite/claims.py); indexed for that claim:
-- the waiting runs of each key in order, and each key's PENDING runs and starts.
ALTER TABLE workflows ADD COLUMN partition_key TEXT NOT NULL DEFAULT '';

-- name: v12_workflows_by_partition_waiting
CREATE INDEX workflows_by_partition_waiting
ON workflows (queue, partition_key, app_version, priority, created_at, workflow_id)
WHERE status = 'ENQUEUED';

-- name: v12_workflows_by_partition_running
CREATE INDEX workflows_by_partition_running ON workflows (queue, partition_key)
WHERE status = 'PENDING';

-- name: v12_workflows_by_partition_start
CREATE INDEX workflows_by_partition_start ON workflows (queue, partition_key, started_at)
WHERE started_at IS NOT NULL;


-- name: v13_cancel_requests
-- 13: cancel requests: a cancel a run was asked for (`cancel(workflow_id, grace=...)`),
-- the first kept (replaykit/runtime/cancels.py); a resume and a delete drop it.
CREATE TABLE cancel_requests (
    workflow_id TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    grace_until INTEGER NOT NULL,
    requested_at INTEGER NOT NULL
) WITHOUT ROWID;

-- name: v13_parent_close_policies
-- 13, too: parent close policies: what becomes of a child run still running when its
-- parent ends, for children whose policy is not the default ("terminate").
CREATE TABLE parent_close_policies (
    workflow_id TEXT PRIMARY KEY,
    policy TEXT NOT NULL
) WITHOUT ROWID;


-- name: v14_attributes
-- 14: attributes: a run's typed, searchable key/values as one JSON object (text), '{}'
-- for none, kept in clear (stores/_attributes.py). SQLite filters on them with
-- json_extract and json_each over the runs a listing reads; no index.
ALTER TABLE workflows ADD COLUMN attributes TEXT NOT NULL DEFAULT '{}';


-- name: v15_shard_keys
-- 15: a run's shard key (docs/storage.md, "Past one server"): given at its start,
-- else its parent's (a fork's: its source's; an archived generation's: its live
-- run's), else its own id. A SQLite database is never sharded; the key is kept so a
-- run reads back as it was started, and only on the run's row.
ALTER TABLE workflows ADD COLUMN shard_key TEXT NOT NULL DEFAULT '';

-- name: v15_shard_keys_of_families
-- 15, too: existing runs take their root's id (archived generations: their live run's).
WITH RECURSIVE family(workflow_id, shard_key) AS (
    SELECT w.workflow_id, w.workflow_id
    FROM workflows w
    WHERE w.parent_id IS NULL OR NOT EXISTS (SELECT 1
        FROM workflows p
        WHERE p.workflow_id = w.parent_id)
    UNION
    SELECT c.workflow_id, f.shard_key
    FROM workflows c
    JOIN family f ON c.parent_id = f.workflow_id)
UPDATE workflows
SET shard_key = (SELECT f.shard_key
    FROM family f
    WHERE f.workflow_id = workflows.workflow_id)
WHERE workflow_id IN (SELECT workflow_id
    FROM family);

-- name: v15_shard_keys_of_generations
-- 15, too.
UPDATE workflows
SET shard_key = COALESCE((SELECT l.shard_key
        FROM workflows l
        WHERE l.workflow_id = workflows.continued_as), workflow_id)
WHERE continued_as IS NOT NULL;

-- name: v15_shard_keys_of_the_rest
-- 15, too: a run the walk did not reach (a loop of parents) is a root of its own.
UPDATE workflows
SET shard_key = workflow_id
WHERE shard_key = '';

-- name: v16_workflows_by_wake
-- 16: the PENDING runs of an engine by their wake instant: its timer scan reads the
-- sleepers it left in the store (`WorkflowFilter(wakes_after=..., wakes_by=...)`),
-- and its recovery and sweeps pass over them (docs/design.md, "Parked sleepers").
CREATE INDEX workflows_by_wake ON workflows (executor_id, app_version, wake_at)
WHERE status = 'PENDING';
