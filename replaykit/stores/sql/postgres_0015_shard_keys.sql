-- replaykit schema, version 15. `{schema}` is replaced by the quoted schema name.
--
-- Shard keys (docs/storage.md, "Past one server"): every per-run table carries the
-- key that places a run's rows on one shard, so that a sharded database (Citus) can
-- route each statement about a run to one node. A run's key is given at its start,
-- else it is its parent's (a fork's: its source's; an archived generation's: its
-- live run's), else its own id: a family stays together. It never changes.
--
-- Two tables are placed by the run's id instead: the directory below, and
-- parent_close_policies, whose row is written before its run exists (its key is not
-- known yet) and read only by id.
--
-- Existing runs take their root's id: the walk below goes down from each run with no
-- stored parent. Rows of a table of a run whose row is gone (none should be) take
-- their own run's id. Every row of every per-run table is rewritten once.

ALTER TABLE {schema}.workflows ADD COLUMN shard_key text COLLATE "C";

WITH RECURSIVE family(workflow_id, shard_key) AS (
    SELECT w.workflow_id, w.workflow_id
    FROM {schema}.workflows w
    WHERE w.parent_id IS NULL OR NOT EXISTS (SELECT 1
        FROM {schema}.workflows p
        WHERE p.workflow_id = w.parent_id)
    UNION
    SELECT c.workflow_id, f.shard_key
    FROM {schema}.workflows c
    JOIN family f ON c.parent_id = f.workflow_id)
UPDATE {schema}.workflows w
SET shard_key = f.shard_key
FROM family f
WHERE w.workflow_id = f.workflow_id;

-- An archived generation lives beside its live run.
UPDATE {schema}.workflows a
SET shard_key = l.shard_key
FROM {schema}.workflows l
WHERE a.continued_as = l.workflow_id AND a.shard_key IS DISTINCT FROM l.shard_key;

-- A run the walk did not reach (a loop of parents) is a root of its own.
UPDATE {schema}.workflows
SET shard_key = workflow_id
WHERE shard_key IS NULL;

ALTER TABLE {schema}.workflows ALTER COLUMN shard_key SET NOT NULL;

-- The directory of run ids: the one per-run table placed by the run's id rather than
-- its shard key, so that a statement naming only an id finds the key on one shard.
-- It also keeps ids unique across shards (workflows' own key includes the shard key).
CREATE TABLE {schema}.run_shards (
    workflow_id text COLLATE "C" PRIMARY KEY,
    shard_key   text COLLATE "C" NOT NULL
);
INSERT INTO {schema}.run_shards (workflow_id, shard_key)
SELECT workflow_id, shard_key
FROM {schema}.workflows;

-- The other tables of a run take its key (a row of a run whose row is gone: its id).
DO $migration$
DECLARE
    part text;
BEGIN
    FOREACH part IN ARRAY ARRAY['records', 'messages', 'events', 'send_keys', 'step_heartbeats',
            'cancel_requests'] LOOP
        EXECUTE format('ALTER TABLE {schema}.%I ADD COLUMN shard_key text COLLATE "C"', part);
        EXECUTE format('UPDATE {schema}.%I t SET shard_key = COALESCE((SELECT w.shard_key '
            'FROM {schema}.workflows w WHERE w.workflow_id = t.workflow_id), t.workflow_id)',
            part);
        EXECUTE format('ALTER TABLE {schema}.%I ALTER COLUMN shard_key SET NOT NULL', part);
    END LOOP;
END
$migration$;

-- Each table's key leads with the shard key (a sharded table's unique keys must
-- hold it); the directory above keeps run ids unique.
ALTER TABLE {schema}.workflows DROP CONSTRAINT workflows_pkey;
ALTER TABLE {schema}.workflows ADD PRIMARY KEY (shard_key, workflow_id);
ALTER TABLE {schema}.records DROP CONSTRAINT records_pkey;
ALTER TABLE {schema}.records ADD PRIMARY KEY (shard_key, workflow_id, position);
ALTER TABLE {schema}.events DROP CONSTRAINT events_pkey;
ALTER TABLE {schema}.events ADD PRIMARY KEY (shard_key, workflow_id, key);
ALTER TABLE {schema}.send_keys DROP CONSTRAINT send_keys_pkey;
ALTER TABLE {schema}.send_keys ADD PRIMARY KEY (shard_key, workflow_id, key);
ALTER TABLE {schema}.step_heartbeats DROP CONSTRAINT step_heartbeats_pkey;
ALTER TABLE {schema}.step_heartbeats ADD PRIMARY KEY (shard_key, workflow_id, position,
    child_path);
ALTER TABLE {schema}.cancel_requests DROP CONSTRAINT cancel_requests_pkey;
ALTER TABLE {schema}.cancel_requests ADD PRIMARY KEY (shard_key, workflow_id);

-- Messages: numbered per run rather than by one sequence for the whole database (an
-- identity column is one counter every shard would share). `inboxes` holds each run's
-- last number given, in a row of its own so that a send never updates the run's row
-- (a record that sends to its own run updates that row already). The numbers given so
-- far were unique across runs, so each run goes on past its largest.
CREATE TABLE {schema}.inboxes (
    shard_key    text COLLATE "C" NOT NULL,
    workflow_id  text COLLATE "C" NOT NULL,
    last_message bigint NOT NULL,
    PRIMARY KEY (shard_key, workflow_id)
);
INSERT INTO {schema}.inboxes (shard_key, workflow_id, last_message)
SELECT shard_key, workflow_id, max(message_id)
FROM {schema}.messages
GROUP BY shard_key, workflow_id;
ALTER TABLE {schema}.messages ALTER COLUMN message_id DROP IDENTITY;
ALTER TABLE {schema}.messages DROP CONSTRAINT messages_pkey;
ALTER TABLE {schema}.messages ADD PRIMARY KEY (shard_key, workflow_id, message_id);
DROP INDEX {schema}.messages_inbox;
CREATE INDEX messages_inbox ON {schema}.messages (shard_key, workflow_id, topic, message_id);
