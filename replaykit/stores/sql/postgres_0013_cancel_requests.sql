-- replaykit schema, version 13. `{schema}` is replaced by the quoted schema name.
--
-- Cancel requests: a cancel a run was asked for (`cancel(workflow_id, grace=...)`),
-- one row per run, the first request kept (a second cancel stops the run hard
-- instead). The run's engine delivers it as `Cancelled` at the run's current yield
-- and stops the run once `grace_until` passes (replaykit/runtime/cancels.py). A
-- resume and delete_workflow drop it. No foreign key, as for the other tables of a run.

CREATE TABLE {schema}.cancel_requests (
    workflow_id  text COLLATE "C" PRIMARY KEY,
    reason       text NOT NULL,
    grace_until  timestamptz NOT NULL,
    requested_at timestamptz NOT NULL
);

-- Parent close policies: what becomes of a child run still running when its parent
-- ends (`Start(..., parent_close=...)`), one row per child whose policy is not the
-- default ("terminate"), written before the child is created.
CREATE TABLE {schema}.parent_close_policies (
    workflow_id text COLLATE "C" PRIMARY KEY,
    policy      text NOT NULL
);
