-- replaykit schema, version 4. `{schema}` is replaced by the quoted schema name.
--
-- Schedules are defined in code, but whether one is paused, and the runs asked
-- of it by hand (a trigger, a backfill) that no engine has started yet, must
-- be one state that every engine on the schema reads. The definition columns
-- hold what the last engine to start registered, so that a client or the CLI,
-- which import no workflow code, can list and check schedules by name.

CREATE TABLE {schema}.schedules (
    name           text COLLATE "C" PRIMARY KEY,
    workflow_name  text NOT NULL,
    cron           text NOT NULL,
    tz             text,
    queue          text,
    backfill       boolean NOT NULL DEFAULT false,
    paused         boolean NOT NULL DEFAULT false,
    updated_at     timestamptz NOT NULL,
    trigger_at     timestamptz,  -- a run asked for "now", not yet started
    backfill_start timestamptz,  -- ticks in [backfill_start, backfill_end) asked for
    backfill_end   timestamptz
);
