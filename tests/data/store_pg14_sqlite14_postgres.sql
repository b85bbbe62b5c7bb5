-- Rows of a replaykit PostgreSQL schema; made by tests/data/make_store_fixtures.py.
-- Load with load_postgres there: a fresh schema, the migration files the manifest
-- lists, then this. {schema} stands for the schema's quoted name.

CREATE TABLE IF NOT EXISTS {schema}.schema_version (version integer PRIMARY KEY, applied_at
        timestamptz NOT NULL DEFAULT now());

INSERT INTO {schema}.cancel_requests (workflow_id, reason, grace_until, requested_at) VALUES
    ('fx-cancelled-handled', 'fixture: asked to stop', '2026-12-05 00:22:42.032092+00', '2026-12-05 00:21:42.032092+00'),
    ('fx-cancelling', 'fixture: cancelled with a week''s grace', '2026-12-12 00:21:42.078963+00', '2026-12-05 00:21:42.078963+00'),
    ('fx-child-cancelled', 'cancelled with its parent ''fx-parent'': it ended SUCCESS', '2026-12-05 00:22:41.802423+00', '2026-12-05 00:21:41.802423+00');

INSERT INTO {schema}.events (workflow_id, key, value) VALUES
    ('fx-awakeable', 'token', '"0.0.65b0ef9184b80b8545e435a42bbf73d8@fx-awakeable"'),
    ('fx-cancelling', 'cleaning', 'true'),
    ('fx-child-call-7', 'progress', '{"doubled":14}'),
    ('fx-fork', 'progress', '{"doubled":6}'),
    ('fx-inbox', 'ready', '6'),
    ('fx-queue-served', 'progress', '{"doubled":16}'),
    ('fx-rewound', 'progress', '{"doubled":8}'),
    ('fx-rounds', 'generation', '1'),
    ('fx-success', 'progress', '{"doubled":6}');

INSERT INTO {schema}.heartbeats (executor_id, app_version, seen_at, registered) VALUES
    ('fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.690372+00', '{"workflows":["fx.awaits","fx.beats","fx.counter","fx.fails","fx.graceful","fx.inbox","fx.parent","fx.rounds","fx.sleeper","fx.steps","fx.ticked","fx.tidy","fx.waits","replaykit.debouncer"],"queues":["fx-served"],"more_workflows":0,"more_queues":0}');

INSERT INTO {schema}.messages (message_id, workflow_id, topic, payload, created_at, trace_context) OVERRIDING SYSTEM VALUE VALUES
    ('1', 'fx-success', 'late', '{"late":1}', '2026-12-05 00:21:41.730865+00', NULL),
    ('2', 'fx-success', 'late', '{"late":2}', '2026-12-05 00:21:41.732552+00', NULL),
    ('3', 'fx-child-abandoned', 'hello', '{"from":"parent"}', '2026-12-05 00:21:41.797197+00', NULL),
    ('5', 'fx-rounds', 'extra', '"x-1"', '2026-12-05 00:21:41.838935+00', NULL),
    ('6', 'fx-inbox', 'items', '{"item":1}', '2026-12-05 00:21:42.169865+00', NULL),
    ('7', 'fx-inbox', 'items', '{"item":2}', '2026-12-05 00:21:42.171256+00', NULL),
    ('8', 'fx-inbox', 'note', '"kept"', '2026-12-05 00:21:42.172531+00', NULL);
SELECT setval(pg_get_serial_sequence('{schema}.messages', 'message_id'), 8, true);

INSERT INTO {schema}.parent_close_policies (workflow_id, policy) VALUES
    ('fx-child-abandoned', 'abandon'),
    ('fx-child-cancelled', 'cancel');

INSERT INTO {schema}.records (workflow_id, position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at, attempts, event_key, event_value) VALUES
    ('fx-awakeable', '0', 'awakeable', 'approval', '{"value":"0.0.65b0ef9184b80b8545e435a42bbf73d8@fx-awakeable"}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:228', '2026-12-05 00:21:42.126261+00', '2026-12-05 00:21:42.126261+00', NULL, '1', NULL, NULL),
    ('fx-awakeable', '1', 'set_event', 'token', '{"value":null}', 'aab649d193ab1b6c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:229', '2026-12-05 00:21:42.127009+00', '2026-12-05 00:21:42.127009+00', NULL, '1', 'token', '"0.0.65b0ef9184b80b8545e435a42bbf73d8@fx-awakeable"'),
    ('fx-awakeable', '2', 'await', '0.0.65b0ef9184b80b8545e435a42bbf73d8', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:230', '2026-12-05 00:21:42.128223+00', NULL, NULL, '1', NULL, NULL),
    ('fx-beats', '0', 'step', 'beat', '{"value":3}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:146', '2026-12-05 00:21:41.734624+00', '2026-12-05 00:21:41.736796+00', NULL, '1', NULL, NULL),
    ('fx-cancelled-handled', '0', 'recv', 'never', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","args":["workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","fixture: asked to stop"],"traceback":""}}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:188', '2026-12-05 00:21:42.013139+00', '2026-12-05 00:21:42.034029+00', NULL, '1', NULL, NULL),
    ('fx-cancelled-handled', '1', 'step', 'cleanup', '{"value":8}', '84cfb04a9778652f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:190', '2026-12-05 00:21:42.03493+00', '2026-12-05 00:21:42.034982+00', NULL, '1', NULL, NULL),
    ('fx-cancelling', '0', 'recv', 'stop', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","args":["workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","fixture: cancelled with a week''s grace"],"traceback":""}}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:177', '2026-12-05 00:21:42.056792+00', '2026-12-05 00:21:42.080728+00', NULL, '1', NULL, NULL),
    ('fx-cancelling', '1', 'step', 'cleanup', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:179', '2026-12-05 00:21:42.081773+00', '2026-12-05 00:21:42.081822+00', NULL, '1', NULL, NULL),
    ('fx-cancelling', '2', 'set_event', 'cleaning', '{"value":null}', 'b5bea41b6c623f7c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:180', '2026-12-05 00:21:42.082511+00', '2026-12-05 00:21:42.082511+00', NULL, '1', 'cleaning', 'true'),
    ('fx-cancelling', '3', 'recv', 'cleanup-done', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:181', '2026-12-05 00:21:42.083628+00', NULL, NULL, '1', NULL, NULL),
    ('fx-child-abandoned', '0', 'recv', 'release', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:170', '2026-12-05 00:21:41.793024+00', NULL, NULL, '1', NULL, NULL),
    ('fx-child-call-7', '0', 'step', 'double', '{"value":14}', '731abed27e7a8f49', '/work/wt/fixtures/tests/data/make_store_fixtures.py:131', '2026-12-05 00:21:41.764734+00', '2026-12-05 00:21:41.765206+00', NULL, '1', NULL, NULL),
    ('fx-child-call-7', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:132', '2026-12-05 00:21:41.766806+00', '2026-12-05 00:21:41.777825+00', '2026-12-05 00:21:41.776806+00', '1', NULL, NULL),
    ('fx-child-call-7', '2', 'set_event', 'progress', '{"value":null}', '2e2fecd61ebb1d3c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:21:41.781213+00', '2026-12-05 00:21:41.781213+00', NULL, '1', 'progress', '{"doubled":14}'),
    ('fx-child-call-7', '3', 'set_attributes', 'doubled,stage', '{"value":null}', '613c84dfd6804cc8', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:21:41.78659+00', '2026-12-05 00:21:41.78659+00', NULL, '1', NULL, NULL),
    ('fx-child-cancelled', '0', 'recv', 'never', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","args":["workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:170', '2026-12-05 00:21:41.796461+00', '2026-12-05 00:21:41.805084+00', NULL, '1', NULL, NULL),
    ('fx-counter', '0', 'step', 'add', '{"value":4}', '1c54af33ee7129c4', '/work/wt/fixtures/tests/data/make_store_fixtures.py:207', '2026-12-05 00:21:41.831854+00', '2026-12-05 00:21:41.831896+00', NULL, '1', NULL, NULL),
    ('fx-counter#0', '0', 'step', 'add', '{"value":0}', 'c767f2c4951965da', '/work/wt/fixtures/tests/data/make_store_fixtures.py:207', '2026-12-05 00:21:41.824207+00', '2026-12-05 00:21:41.824264+00', NULL, '1', NULL, NULL),
    ('fx-counter#1', '0', 'step', 'add', '{"value":2}', '27b6c79168db2da0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:207', '2026-12-05 00:21:41.828214+00', '2026-12-05 00:21:41.828258+00', NULL, '1', NULL, NULL),
    ('fx-error', '0', 'step', 'double', '{"value":10}', 'b02d7c0cf97e5a46', '/work/wt/fixtures/tests/data/make_store_fixtures.py:140', '2026-12-05 00:21:41.739178+00', '2026-12-05 00:21:41.739218+00', NULL, '1', NULL, NULL),
    ('fx-error', '1', 'step', 'boom', '{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/runtime/attempts.py\", line 157, in attempts\n    value = yield Attempt(context, beat)\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/steps.py\", line 164, in run_attempts\n    reply = self.bodies.call(\n            ^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/bodies.py\", line 263, in call\n    return fn(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 119, in boom\n    raise ValueError(f\"boom {n}\")\nValueError: boom 5\n"}}', 'b02d7c0cf97e5a46', '/work/wt/fixtures/tests/data/make_store_fixtures.py:141', '2026-12-05 00:21:41.740285+00', '2026-12-05 00:21:41.751633+00', '2026-12-05 00:21:41.750324+00', '2', NULL, NULL),
    ('fx-fork', '0', 'step', 'double', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:131', '2026-12-05 00:21:41.709747+00', '2026-12-05 00:21:41.709809+00', NULL, '1', NULL, NULL),
    ('fx-fork', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:132', '2026-12-05 00:21:41.874003+00', '2026-12-05 00:21:41.884228+00', '2026-12-05 00:21:41.884003+00', '1', NULL, NULL),
    ('fx-fork', '2', 'set_event', 'progress', '{"value":null}', 'e0f69a4fbfeb5ce5', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:21:41.891097+00', '2026-12-05 00:21:41.891097+00', NULL, '1', 'progress', '{"doubled":6}'),
    ('fx-fork', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'fb8e2be398c1d087', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:21:41.896218+00', '2026-12-05 00:21:41.896218+00', NULL, '1', NULL, NULL),
    ('fx-inbox', '0', 'step', 'prepare', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:152', '2026-12-05 00:21:42.148697+00', '2026-12-05 00:21:42.148755+00', NULL, '1', NULL, NULL),
    ('fx-inbox', '1', 'set_event', 'ready', '{"value":null}', 'e7f6c011776e8db7', '/work/wt/fixtures/tests/data/make_store_fixtures.py:153', '2026-12-05 00:21:42.149348+00', '2026-12-05 00:21:42.149348+00', NULL, '1', 'ready', '6'),
    ('fx-inbox', '2', 'recv', 'go', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:154', '2026-12-05 00:21:42.150634+00', NULL, NULL, '1', NULL, NULL),
    ('fx-parent', '0', 'call', 'fx.steps', '{"value":{"n":7,"doubled":14}}', '030e246889f09454', '/work/wt/fixtures/tests/data/make_store_fixtures.py:196', '2026-12-05 00:21:41.764383+00', '2026-12-05 00:21:41.790387+00', NULL, '1', NULL, NULL),
    ('fx-parent', '1', 'start', 'fx.waits', '{"value":"fx-child-abandoned"}', '9e9e6094cadfc0ef', '/work/wt/fixtures/tests/data/make_store_fixtures.py:197', '2026-12-05 00:21:41.79279+00', '2026-12-05 00:21:41.79279+00', NULL, '1', NULL, NULL),
    ('fx-parent', '2', 'start', 'fx.waits', '{"value":"fx-child-cancelled"}', '2985a5c825b0171b', '/work/wt/fixtures/tests/data/make_store_fixtures.py:200', '2026-12-05 00:21:41.795772+00', '2026-12-05 00:21:41.795772+00', NULL, '1', NULL, NULL),
    ('fx-parent', '3', 'send', 'hello', '{"value":true}', '8e0c8c69a91fdc19', '/work/wt/fixtures/tests/data/make_store_fixtures.py:201', '2026-12-05 00:21:41.797156+00', '2026-12-05 00:21:41.797156+00', NULL, '1', NULL, NULL),
    ('fx-parked', '0', 'recv', 'unpark', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:170', '2026-12-05 00:21:42.103171+00', NULL, NULL, '1', NULL, NULL),
    ('fx-queue-served', '0', 'step', 'double', '{"value":16}', '4bb06ec9eaaaa34c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:131', '2026-12-05 00:21:41.963297+00', '2026-12-05 00:21:41.963353+00', NULL, '1', NULL, NULL),
    ('fx-queue-served', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:132', '2026-12-05 00:21:41.964629+00', '2026-12-05 00:21:41.97493+00', '2026-12-05 00:21:41.974629+00', '1', NULL, NULL),
    ('fx-queue-served', '2', 'set_event', 'progress', '{"value":null}', 'a916c1104570b127', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:21:41.976591+00', '2026-12-05 00:21:41.976591+00', NULL, '1', 'progress', '{"doubled":16}'),
    ('fx-queue-served', '3', 'set_attributes', 'doubled,stage', '{"value":null}', '493109fe51353115', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:21:41.978656+00', '2026-12-05 00:21:41.978656+00', NULL, '1', NULL, NULL),
    ('fx-rewound', '0', 'step', 'double', '{"value":8}', '84cfb04a9778652f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:131', '2026-12-05 00:21:41.904238+00', '2026-12-05 00:21:41.904297+00', NULL, '1', NULL, NULL),
    ('fx-rewound', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:132', '2026-12-05 00:21:41.936707+00', '2026-12-05 00:21:41.947292+00', '2026-12-05 00:21:41.946707+00', '1', NULL, NULL),
    ('fx-rewound', '2', 'set_event', 'progress', '{"value":null}', '7217314d6b71e344', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:21:41.951865+00', '2026-12-05 00:21:41.951865+00', NULL, '1', 'progress', '{"doubled":8}'),
    ('fx-rewound', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'a5c5f9f8bed01e5b', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:21:41.954787+00', '2026-12-05 00:21:41.954787+00', NULL, '1', NULL, NULL),
    ('fx-rewound#0', '0', 'step', 'double', '{"value":8}', '84cfb04a9778652f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:131', '2026-12-05 00:21:41.904238+00', '2026-12-05 00:21:41.904297+00', NULL, '1', NULL, NULL),
    ('fx-rewound#0', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:132', '2026-12-05 00:21:41.906975+00', '2026-12-05 00:21:41.917275+00', '2026-12-05 00:21:41.916975+00', '1', NULL, NULL),
    ('fx-rewound#0', '2', 'set_event', 'progress', '{"value":null}', '7217314d6b71e344', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:21:41.918956+00', '2026-12-05 00:21:41.918956+00', NULL, '1', 'progress', '{"doubled":8}'),
    ('fx-rewound#0', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'a5c5f9f8bed01e5b', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:21:41.921165+00', '2026-12-05 00:21:41.921165+00', NULL, '1', NULL, NULL),
    ('fx-rounds', '0', 'set_event', 'generation', '{"value":null}', '6b86b273ff34fce1', '/work/wt/fixtures/tests/data/make_store_fixtures.py:220', '2026-12-05 00:21:41.844794+00', '2026-12-05 00:21:41.844794+00', NULL, '1', 'generation', '1'),
    ('fx-rounds', '1', 'recv', 'go', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:221', '2026-12-05 00:21:41.846407+00', NULL, NULL, '1', NULL, NULL),
    ('fx-rounds#0', '0', 'recv', 'tick', '{"value":"t-1"}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:218', '2026-12-05 00:21:41.837186+00', '2026-12-05 00:21:41.839439+00', NULL, '1', NULL, NULL),
    ('fx-sleeper', '0', 'step', 'before', '{"value":2}', '27b6c79168db2da0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:163', '2026-12-05 00:21:42.204987+00', '2026-12-05 00:21:42.205051+00', NULL, '1', NULL, NULL),
    ('fx-sleeper', '1', 'sleep', 'sleep', NULL, 'a19a1584344c1f37', '/work/wt/fixtures/tests/data/make_store_fixtures.py:164', '2026-12-05 00:21:42.205792+00', NULL, '2026-12-05 00:21:47.205792+00', '1', NULL, NULL),
    ('fx-success', '0', 'step', 'double', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:131', '2026-12-05 00:21:41.709747+00', '2026-12-05 00:21:41.709809+00', NULL, '1', NULL, NULL),
    ('fx-success', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:132', '2026-12-05 00:21:41.711776+00', '2026-12-05 00:21:41.72322+00', '2026-12-05 00:21:41.721776+00', '1', NULL, NULL),
    ('fx-success', '2', 'set_event', 'progress', '{"value":null}', 'e0f69a4fbfeb5ce5', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:21:41.724595+00', '2026-12-05 00:21:41.724595+00', NULL, '1', 'progress', '{"doubled":6}'),
    ('fx-success', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'fb8e2be398c1d087', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:21:41.728419+00', '2026-12-05 00:21:41.728419+00', NULL, '1', NULL, NULL),
    ('fx-terminated', '0', 'recv', 'never', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:170', '2026-12-05 00:21:41.987339+00', NULL, NULL, '1', NULL, NULL),
    ('schedule:fx-yearly:manual:2026-12-05T00:21:42.179648+00:00', '0', 'step', 'tick', '{"value":"2026-12-05T00:21:42.179648+00:00"}', 'dd3f73d0aaf90ec5', '/work/wt/fixtures/tests/data/make_store_fixtures.py:235', '2026-12-05 00:21:42.18297+00', '2026-12-05 00:21:42.183026+00', NULL, '1', NULL, NULL);

INSERT INTO {schema}.schedules (name, workflow_name, cron, tz, queue, backfill, paused, updated_at, trigger_at, backfill_start, backfill_end) VALUES
    ('fx-nightly', 'fx.ticked', '30 3 * * *', 'Europe/Berlin', 'fx-served', 'false', 'true', '2026-12-05 00:21:42.455339+00', '2026-12-05 00:21:42.455339+00', NULL, NULL),
    ('fx-yearly', 'fx.ticked', '0 0 1 1 *', NULL, NULL, 'false', 'false', '2026-12-05 00:21:42.458338+00', NULL, '2020-01-01 00:00:00+00', '2022-06-01 00:00:00+00');

INSERT INTO {schema}.schema_version (version, applied_at) VALUES
    ('1', '2026-12-05 00:21:41.60637+00'),
    ('2', '2026-12-05 00:21:41.60637+00'),
    ('3', '2026-12-05 00:21:41.60637+00'),
    ('4', '2026-12-05 00:21:41.60637+00'),
    ('5', '2026-12-05 00:21:41.60637+00'),
    ('6', '2026-12-05 00:21:41.60637+00'),
    ('7', '2026-12-05 00:21:41.60637+00'),
    ('8', '2026-12-05 00:21:41.60637+00'),
    ('9', '2026-12-05 00:21:41.60637+00'),
    ('10', '2026-12-05 00:21:41.60637+00'),
    ('11', '2026-12-05 00:21:41.60637+00'),
    ('12', '2026-12-05 00:21:41.60637+00'),
    ('13', '2026-12-05 00:21:41.60637+00'),
    ('14', '2026-12-05 00:21:41.60637+00');

INSERT INTO {schema}.send_keys (workflow_id, key, call_id) VALUES
    ('fx-child-abandoned', 'parent-hello', NULL),
    ('fx-inbox', 'item-1', 'c6aa872292fb4023ab13a297be33a402'),
    ('fx-inbox', 'replaykit-send:0bdab9bfd91240edbee652a5fb734e79', '0bdab9bfd91240edbee652a5fb734e79'),
    ('fx-inbox', 'replaykit-send:bf26e92ea764419094b8ead64f065a22', 'bf26e92ea764419094b8ead64f065a22'),
    ('fx-rounds', 'replaykit-send:7ac143b04cab44288cfbe0824832f8bf', '7ac143b04cab44288cfbe0824832f8bf'),
    ('fx-rounds', 'replaykit-send:90f56cb0282144f6b69e58c9db7c1d0a', '90f56cb0282144f6b69e58c9db7c1d0a'),
    ('fx-success', 'late-1', '636e46a181084388873fd24999bf5c24'),
    ('fx-success', 'replaykit-send:283bbfab1c1e4125b452cfc68f263dde', '283bbfab1c1e4125b452cfc68f263dde');

INSERT INTO {schema}.step_heartbeats (workflow_id, position, child_path, generation, attempt, name, details, beat_at) VALUES
    ('fx-beats', '0', '', '0', '1', 'beat', '{"done":3,"of":3}', '2026-12-05 00:21:41.73514+00');

INSERT INTO {schema}.workflows (workflow_id, name, status, inputs, result, executor_id, app_version, created_at, updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error, started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds, generation, continued_as, first_inputs, partition_key, attributes) VALUES
    ('fx-awakeable', 'fx.awaits', 'PENDING', '{"args":[],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:42.125269+00', '2026-12-05 00:21:42.125369+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:42.125269+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-beats', 'fx.beats', 'SUCCESS', '{"args":[3],"kwargs":{}}', '{"value":3}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.733727+00', '2026-12-05 00:21:41.736904+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.733727+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-cancelled-handled', 'fx.tidy', 'CANCELLED', '{"args":[],"kwargs":{}}', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"fixture: asked to stop (a cancel it handled: the workflow raised)","args":["fixture: asked to stop (a cancel it handled: the workflow raised)","fixture: asked to stop"],"traceback":""}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:42.010065+00', '2026-12-05 00:21:42.035077+00', NULL, NULL, '0', NULL, '0', NULL, 'fixture: asked to stop (a cancel it handled: the workflow raised)', '2026-12-05 00:21:42.010065+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-cancelling', 'fx.graceful', 'PENDING', '{"args":["stop"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:42.055245+00', '2026-12-05 00:21:42.055343+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:42.055245+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-child-abandoned', 'fx.waits', 'PENDING', '{"args":["release"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.791864+00', '2026-12-05 00:21:41.79197+00', 'fx-parent', NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.791864+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-child-call-7', 'fx.steps', 'SUCCESS', '{"args":[7],"kwargs":{}}', '{"value":{"n":7,"doubled":14}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.762429+00', '2026-12-05 00:21:41.788778+00', 'fx-parent', NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.762429+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{"stage": "done", "doubled": 14}'),
    ('fx-child-cancelled', 'fx.waits', 'CANCELLED', '{"args":["never"],"kwargs":{}}', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","args":["cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.795118+00', '2026-12-05 00:21:41.806184+00', 'fx-parent', NULL, '0', NULL, '0', NULL, 'cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)', '2026-12-05 00:21:41.795118+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-counter', 'fx.counter', 'SUCCESS', '{"args":[2,2],"kwargs":{}}', '{"value":6}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.822998+00', '2026-12-05 00:21:41.832002+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.829644+00', NULL, NULL, NULL, NULL, NULL, '2', NULL, '{"args":[0,0],"kwargs":{}}', '', '{}'),
    ('fx-counter#0', 'fx.counter', 'CONTINUED', '{"args":[0,0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.822998+00', '2026-12-05 00:21:41.825353+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.822998+00', NULL, NULL, NULL, NULL, NULL, '0', 'fx-counter', NULL, '', '{}'),
    ('fx-counter#1', 'fx.counter', 'CONTINUED', '{"args":[1,0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.825353+00', '2026-12-05 00:21:41.829644+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.825353+00', NULL, NULL, NULL, NULL, NULL, '1', 'fx-counter', NULL, '', '{}'),
    ('fx-error', 'fx.fails', 'ERROR', '{"args":[5],"kwargs":{}}', '{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/interpreter.py\", line 695, in _run\n    yielded = gen.send(value) if ok else gen.throw(value)\n                                         ^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 141, in fails\n    return (yield Step(\"boom\", boom, n, retry=Retry(max_attempts=2, interval=0.01)))\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: boom 5\n"}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.738162+00', '2026-12-05 00:21:41.752024+00', NULL, NULL, '0', NULL, '0', NULL, 'boom 5', '2026-12-05 00:21:41.738162+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-fork', 'fx.steps', 'SUCCESS', '{"args":[3],"kwargs":{}}', '{"value":{"n":3,"doubled":6}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.862638+00', '2026-12-05 00:21:41.897492+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.862638+00', NULL, 'fx-success', '1', NULL, NULL, '0', NULL, NULL, '', '{"tier": 2, "stage": "done", "doubled": 6, "customer": "c-1"}'),
    ('fx-inbox', 'fx.inbox', 'PENDING', '{"args":[3],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:42.147348+00', '2026-12-05 00:21:42.147459+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:42.147348+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{"customer": "c-1"}'),
    ('fx-parent', 'fx.parent', 'SUCCESS', '{"args":[7],"kwargs":{}}', '{"value":{"child":{"n":7,"doubled":14},"abandoned":"fx-child-abandoned","sent":true}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.760307+00', '2026-12-05 00:21:41.799656+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.760307+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-parked', 'fx.waits', 'PARKED', '{"args":["unpark"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:42.101855+00', '2026-12-05 00:21:42.123966+00', NULL, NULL, '0', NULL, '0', NULL, 'fixture: parked by hand', '2026-12-05 00:21:42.101855+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-queue-served', 'fx.steps', 'SUCCESS', '{"args":[8],"kwargs":{}}', '{"value":{"n":8,"doubled":16}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.958258+00', '2026-12-05 00:21:41.979443+00', NULL, 'fx-served', '3', NULL, '0', NULL, '', '2026-12-05 00:21:41.960677+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, 'k-1', '{"stage": "done", "doubled": 16, "customer": "c-2"}'),
    ('fx-queued-a', 'fx.steps', 'ENQUEUED', '{"args":[5],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:21:41.98027+00', '2026-12-05 00:21:41.980367+00', NULL, 'fx-waiting', '5', 'dedup-a', '0', NULL, '', NULL, NULL, NULL, NULL, NULL, '600', '0', NULL, NULL, 'tenant-a', '{"tags": ["red", "blue"], "customer": "c-3"}'),
    ('fx-queued-b', 'fx.steps', 'ENQUEUED', '{"args":[6],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:21:41.981815+00', '2026-12-05 00:21:41.981874+00', NULL, 'fx-waiting', '1', NULL, '0', NULL, '', NULL, NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, 'tenant-b', '{}'),
    ('fx-queued-cancelled', 'fx.steps', 'CANCELLED', '{"args":[10],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:21:41.983708+00', '2026-12-05 00:21:41.985102+00', NULL, 'fx-waiting', '0', NULL, '0', NULL, 'fixture: cancelled while queued', NULL, NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, 'tenant-a', '{}'),
    ('fx-queued-delayed', 'fx.steps', 'ENQUEUED', '{"args":[9],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:21:41.982926+00', '2026-12-05 00:21:41.982988+00', NULL, 'fx-waiting', '0', NULL, '0', '2036-12-02 00:21:41.982926+00', '', NULL, NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-rewound', 'fx.steps', 'SUCCESS', '{"args":[4],"kwargs":{}}', '{"value":{"n":4,"doubled":8}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.901957+00', '2026-12-05 00:21:41.956207+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.924249+00', NULL, NULL, NULL, NULL, NULL, '1', NULL, '{"args":[4],"kwargs":{}}', '', '{"stage": "done", "doubled": 8}'),
    ('fx-rewound#0', 'fx.steps', 'CONTINUED', '{"args":[4],"kwargs":{}}', '{"value":{"n":4,"doubled":8}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.901957+00', '2026-12-05 00:21:41.924249+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.901957+00', NULL, NULL, NULL, NULL, NULL, '0', 'fx-rewound', NULL, '', '{}'),
    ('fx-rounds', 'fx.rounds', 'PENDING', '{"args":[1],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.835679+00', '2026-12-05 00:21:41.841529+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.841529+00', NULL, NULL, NULL, NULL, NULL, '1', NULL, '{"args":[0],"kwargs":{}}', '', '{}'),
    ('fx-rounds#0', 'fx.rounds', 'CONTINUED', '{"args":[0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.835679+00', '2026-12-05 00:21:41.841529+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.835679+00', NULL, NULL, NULL, NULL, NULL, '0', 'fx-rounds', NULL, '', '{}'),
    ('fx-sleeper', 'fx.sleeper', 'PENDING', '{"args":[5.0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:42.203217+00', '2026-12-05 00:21:42.203321+00', NULL, NULL, '0', NULL, '0', '2026-12-05 00:21:47.205792+00', '', '2026-12-05 00:21:42.203217+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-success', 'fx.steps', 'SUCCESS', '{"args":[3],"kwargs":{}}', '{"value":{"n":3,"doubled":6}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.705355+00', '2026-12-05 00:21:41.729489+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:41.705355+00', NULL, NULL, NULL, '2026-12-05 01:21:41.705355+00', '3600', '0', NULL, NULL, '', '{"tier": 2, "stage": "done", "doubled": 6, "customer": "c-1"}'),
    ('fx-terminated', 'fx.waits', 'CANCELLED', '{"args":["never"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:41.986452+00', '2026-12-05 00:21:42.00859+00', NULL, NULL, '0', NULL, '0', NULL, 'fixture: stopped hard', '2026-12-05 00:21:41.986452+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('schedule:fx-yearly:manual:2026-12-05T00:21:42.179648+00:00', 'fx.ticked', 'SUCCESS', '{"args":["2026-12-05T00:21:42.179648+00:00"],"kwargs":{}}', '{"value":"2026-12-05T00:21:42.179648+00:00"}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:21:42.181944+00', '2026-12-05 00:21:42.183104+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:21:42.181944+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}');
