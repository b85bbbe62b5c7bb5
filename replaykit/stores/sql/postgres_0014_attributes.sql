-- replaykit schema, version 14. `{schema}` is replaced by the quoted schema name.
--
-- Attributes: a run's typed, searchable key/values (`start(..., attributes=...)`,
-- `SetAttributes`), one JSON object per run, an empty object for none, kept in clear
-- (a codec encodes payloads, never attributes: they are meant to be searched). Adding
-- a NOT NULL column with a constant default rewrites no row.
--
-- The GIN index (jsonb_path_ops: one hash per path and value, smaller and faster than
-- the default opclass) serves the filter language's equality and `in` on an
-- attribute, which compile to one jsonpath match, `attributes @@` a bound jsonpath
-- such as $."customer" == "42" (stores/_where_sql.py). Building it reads the
-- whole table under a SHARE lock that holds writes back; on a large table, create it
-- beforehand with CREATE INDEX CONCURRENTLY under this name, and this migration finds
-- it there.

ALTER TABLE {schema}.workflows ADD COLUMN attributes jsonb NOT NULL DEFAULT '{{}}';

CREATE INDEX IF NOT EXISTS workflows_by_attributes ON {schema}.workflows
    USING gin (attributes jsonb_path_ops);
