-- replaykit schema, version 12. `{schema}` is replaced by the quoted schema name.
--
-- Partition keys: a queued run's key (`enqueue(..., partition_key=...)`), '' for none,
-- so that a claim of a partitioned queue can walk its waiting keys in index order (a
-- NULL would sort apart and match no key). Adding a NOT NULL column with a constant
-- default rewrites no row. The indexes answer `claim_partitioned`: the waiting keys
-- and each key's next runs, each key's PENDING runs (its concurrency), and each key's
-- starts (its rate limit and when it was served last), each by index probes.
--
-- The waiting runs' index holds only rows with `partition_key >= ''` (every row: ''
-- is the least text), which the partitioned claim says and the plain claim does not:
-- a plan of the plain claim, made while the table was small, must not take this index
-- and sort a whole queue instead of reading (queue, status, priority, created_at) in
-- order. The starts' index holds started runs only, which the counts and the latest
-- start imply (a run never started was never served), and which keeps the walk over
-- the waiting keys off it.

ALTER TABLE {schema}.workflows ADD COLUMN partition_key text COLLATE "C" NOT NULL DEFAULT '';

CREATE INDEX workflows_by_partition_waiting ON {schema}.workflows
    (queue, partition_key, app_version, priority, created_at, workflow_id)
    WHERE status = 'ENQUEUED' AND partition_key >= '';
CREATE INDEX workflows_by_partition_running ON {schema}.workflows (queue, partition_key)
    WHERE status = 'PENDING';
CREATE INDEX workflows_by_partition_start ON {schema}.workflows
    (queue, partition_key, started_at) WHERE started_at IS NOT NULL;
