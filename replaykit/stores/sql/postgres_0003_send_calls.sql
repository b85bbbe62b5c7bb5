-- replaykit schema, version 3. `{schema}` is replaced by the quoted schema name.
--
-- A keyed send remembers which call used its key: a retry of that same call,
-- after its first attempt committed and the answer was lost, is told that its
-- message was delivered, while another call reusing the key is told it was a
-- duplicate. Nullable and without a default, so adding it rewrites nothing.

ALTER TABLE {schema}.send_keys
    ADD COLUMN call_id text;
