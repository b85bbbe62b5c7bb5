-- replaykit schema, version 2. `{schema}` is replaced by the quoted schema name.
--
-- A record that set an event keeps the key and the value it set: `events`
-- holds only each key's latest value, and a fork that copies the record must
-- set the event to the value the record set. Nullable and without a default,
-- so adding them rewrites nothing.

ALTER TABLE {schema}.records
    ADD COLUMN event_key   text,
    ADD COLUMN event_value json;
