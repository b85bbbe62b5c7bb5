-- replaykit schema, version 7. `{schema}` is replaced by the quoted schema name.
--
-- Deadlines: the instant at which a run is cancelled as timed out, and the
-- timeout it was given in seconds. A queued run's deadline is set from its
-- timeout when it is claimed (its clock starts then). Nullable and without a
-- default, so adding them rewrites nothing; NULL for every run without one.

ALTER TABLE {schema}.workflows
    ADD COLUMN deadline timestamptz,
    ADD COLUMN timeout_seconds double precision;
