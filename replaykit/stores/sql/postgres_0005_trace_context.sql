-- replaykit schema, version 5. `{schema}` is replaced by the quoted schema name.
--
-- The W3C trace context (a `traceparent` value) current where a run was created
-- and where a message was sent, so that a run's OpenTelemetry spans join the
-- trace of whoever started it, and a receiving run's span links to its sender.
-- Nullable and without a default, so adding them rewrites nothing.

ALTER TABLE {schema}.workflows
    ADD COLUMN trace_context text;

ALTER TABLE {schema}.messages
    ADD COLUMN trace_context text;
