-- replaykit schema version 10: what each engine runs, beside its heartbeat.
-- `{schema}` is replaced by the quoted schema name.
--
-- The workflows an engine registered and the queues it drains, as one JSON
-- object (keys workflows, queues, more_workflows, more_queues) rewritten at
-- every beat; replaykit/stores/_beats.py bounds the lists. NULL for a beat of
-- an engine from before this version: it said nothing of them.

ALTER TABLE {schema}.heartbeats ADD COLUMN registered json;
