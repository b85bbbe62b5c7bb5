-- replaykit schema, version 6. `{schema}` is replaced by the quoted schema name.
--
-- A fork remembers the run it was copied from and the position it was forked
-- at (the first position it runs afresh), so `replaykit workflows show` can say
-- where a run came from and list a run's forks. Nullable and without a
-- default, so adding them rewrites nothing; NULL for every run that is not a
-- fork, which the partial index leaves out.

ALTER TABLE {schema}.workflows
    ADD COLUMN forked_from text COLLATE "C",
    ADD COLUMN fork_position integer;

CREATE INDEX workflows_by_fork_source ON {schema}.workflows (forked_from)
    WHERE forked_from IS NOT NULL;
