-- replaykit schema, version 17. `{schema}` is replaced by the quoted schema name.
--
-- The PENDING runs of an engine by their wake instant: its timer scan reads the
-- sleepers it left in the store (`WorkflowFilter(wakes_after=..., wakes_by=...)`),
-- and its recovery and sweeps pass over them (docs/design.md, "Parked sleepers").
-- A run's wake instant changes at a `Sleep`'s start and end, and those two updates
-- of its row now write this index too (they were HOT updates before).

CREATE INDEX workflows_by_wake ON {schema}.workflows (executor_id, app_version, wake_at)
    WHERE status = 'PENDING';
