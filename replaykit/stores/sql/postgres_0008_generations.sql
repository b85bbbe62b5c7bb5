-- replaykit schema version 8: continue-as-new. `{schema}` is replaced by the
-- quoted schema name.
--
-- A run that continues as new keeps its id and counts its generations from 0;
-- each earlier generation becomes a row of its own (status CONTINUED, id
-- `<id>#<generation>`) holding that generation's log, and names the live run
-- in `continued_as`. The default is a constant, so adding `generation`
-- rewrites nothing; `continued_as` is NULL for every other run, which the
-- partial index leaves out.

ALTER TABLE {schema}.workflows
    ADD COLUMN generation integer NOT NULL DEFAULT 0,
    ADD COLUMN continued_as text COLLATE "C";

CREATE INDEX workflows_by_continued_as ON {schema}.workflows (continued_as, generation)
    WHERE continued_as IS NOT NULL;
