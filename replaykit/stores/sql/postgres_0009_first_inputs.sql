-- replaykit schema version 9: the inputs a run that continued as new was
-- created with. `{schema}` is replaced by the quoted schema name.
--
-- A start re-issued under a run's id (the way to find the run again after a
-- lost acknowledgement) carries the arguments of the run's generation 0, while
-- `inputs` holds the current generation's; the continue keeps the first ones
-- here. Runs continued before this version take them from their archived
-- generation 0 (`<id>#0`) where it is still kept. NULL for every other run.

ALTER TABLE {schema}.workflows ADD COLUMN first_inputs json;

UPDATE {schema}.workflows AS w SET first_inputs = a.inputs
FROM {schema}.workflows AS a
WHERE w.generation > 0
    AND a.workflow_id = w.workflow_id || '#0'
    AND a.continued_as = w.workflow_id;
