-- replaykit schema, version 1. `{schema}` is replaced by the quoted schema name.
--
-- Text that names runs is COLLATE "C": byte order is code point order, which
-- is how the other stores sort ties in list_workflows, and it keeps the
-- primary-key indexes cheap. JSON is `json`, not `jsonb`: `json` keeps the
-- text as written, so floats like 1e300, key order and "\u0000" in strings
-- come back exactly as the runtime stored them.

CREATE TABLE {schema}.workflows (
    workflow_id       text COLLATE "C" PRIMARY KEY,
    name              text NOT NULL,
    status            text NOT NULL,
    inputs            json,
    result            json,
    executor_id       text NOT NULL,
    app_version       text NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    parent_id         text COLLATE "C",
    queue             text,
    priority          integer NOT NULL DEFAULT 0,
    dedup_id          text,
    recovery_attempts integer NOT NULL DEFAULT 0,
    wake_at           timestamptz,
    error             text NOT NULL DEFAULT '',
    started_at        timestamptz  -- when it became PENDING; queue rate limits count these
) WITH (fillfactor = 80);  -- room on the page for HOT updates of wake_at

CREATE INDEX workflows_by_created ON {schema}.workflows (created_at, workflow_id);
CREATE INDEX workflows_by_status ON {schema}.workflows (status, created_at);
CREATE INDEX workflows_by_executor ON {schema}.workflows (executor_id, app_version, status);
CREATE INDEX workflows_by_parent ON {schema}.workflows (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX workflows_by_queue ON {schema}.workflows (queue, status, priority, created_at)
    WHERE queue IS NOT NULL;
CREATE INDEX workflows_by_queue_start ON {schema}.workflows (queue, started_at)
    WHERE queue IS NOT NULL;
CREATE INDEX workflows_by_dedup ON {schema}.workflows (queue, dedup_id)
    WHERE dedup_id IS NOT NULL;

-- No foreign keys: every writer of these tables first locks the run's row,
-- and delete_workflow removes the children in the same transaction, so the
-- per-insert cost of a foreign-key check would buy nothing.
CREATE TABLE {schema}.records (
    workflow_id  text COLLATE "C" NOT NULL,
    position     integer NOT NULL,
    kind         text NOT NULL,
    name         text NOT NULL,
    outcome      json,  -- NULL while the command is under way
    digest       text NOT NULL,
    call_site    text NOT NULL,
    started_at   timestamptz,
    completed_at timestamptz,
    wake_at      timestamptz,
    attempts     integer NOT NULL,
    PRIMARY KEY (workflow_id, position)
);

CREATE TABLE {schema}.messages (
    message_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workflow_id text COLLATE "C" NOT NULL,
    topic       text NOT NULL,
    payload     json NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX messages_inbox ON {schema}.messages (workflow_id, topic, message_id);

CREATE TABLE {schema}.send_keys (
    workflow_id text COLLATE "C" NOT NULL,
    key         text NOT NULL,
    PRIMARY KEY (workflow_id, key)
);

CREATE TABLE {schema}.events (
    workflow_id text COLLATE "C" NOT NULL,
    key         text NOT NULL,
    value       json NOT NULL,
    PRIMARY KEY (workflow_id, key)
);

CREATE TABLE {schema}.heartbeats (
    executor_id text COLLATE "C" PRIMARY KEY,
    app_version text NOT NULL,
    seen_at     timestamptz NOT NULL
);
