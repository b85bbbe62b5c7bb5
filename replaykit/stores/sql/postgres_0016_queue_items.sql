-- replaykit schema, version 16. `{schema}` is replaced by the quoted schema name.
--
-- Queue items (docs/storage.md, "Past one server"): a queue's waiting runs, one row
-- each, placed by the queue's name, so that a claim reads and locks the waiting runs
-- of one queue on one shard; the runs' own rows are placed by their shard keys. A run
-- going on its queue (a start, a release, a resume) writes its item in the same
-- transaction; a claim takes the items it picks out and starts their runs. An item
-- whose run left the queue some other way (a cancel, a delete) is dropped by the next
-- claim that reaches it, which checks the run's status; a claim never starts a run
-- that is not ENQUEUED.

CREATE TABLE {schema}.queue_items (
    queue         text COLLATE "C" NOT NULL,
    workflow_id   text COLLATE "C" NOT NULL,
    shard_key     text COLLATE "C" NOT NULL,
    partition_key text COLLATE "C" NOT NULL DEFAULT '',
    app_version   text NOT NULL,
    priority      integer NOT NULL,
    created_at    timestamptz NOT NULL,
    wake_at       timestamptz,
    PRIMARY KEY (queue, workflow_id)
);
-- A claim's order: the waiting runs of a queue and version, by priority and age.
CREATE INDEX queue_items_ready ON {schema}.queue_items (queue, app_version, priority,
    created_at, workflow_id);
-- A partitioned queue's claim walks the keys with waiting runs (claim_partitioned).
CREATE INDEX queue_items_by_key ON {schema}.queue_items (queue, partition_key, app_version,
    priority, created_at, workflow_id);

INSERT INTO {schema}.queue_items (queue, workflow_id, shard_key, partition_key, app_version,
    priority, created_at, wake_at)
SELECT queue, workflow_id, shard_key, partition_key, app_version, priority, created_at, wake_at
FROM {schema}.workflows
WHERE status = 'ENQUEUED' AND queue IS NOT NULL;
