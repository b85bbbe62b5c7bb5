-- replaykit schema, version 11. `{schema}` is replaced by the quoted schema name.
--
-- Step heartbeats: the latest beat of each step of a run (what its body last passed
-- to step_context().heartbeat(), when, and the attempt and generation that beat),
-- one row per step, written over by each beat (replaykit/stores/_step_beats.py).
-- `child_path` is '' for a step on its own, '1.0' for one inside composites. Not
-- the engines' `heartbeats` table, which says which engines are alive. No foreign
-- key, as for the other tables of a run: a beat locks the run's row first, and
-- delete_workflow removes the run's beats in the same transaction.

CREATE TABLE {schema}.step_heartbeats (
    workflow_id text COLLATE "C" NOT NULL,
    position    integer NOT NULL,
    child_path  text COLLATE "C" NOT NULL,
    generation  integer NOT NULL,
    attempt     integer NOT NULL,
    name        text NOT NULL,
    details     json,
    beat_at     timestamptz NOT NULL,
    PRIMARY KEY (workflow_id, position, child_path)
) WITH (fillfactor = 70);  -- room on the page for HOT updates: each beat rewrites its row
