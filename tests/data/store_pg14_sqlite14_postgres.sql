-- Rows of a replaykit PostgreSQL schema; made by tests/data/make_store_fixtures.py.
-- Load with load_postgres there: a fresh schema, the migration files the manifest
-- lists, then this. {schema} stands for the schema's quoted name.

CREATE TABLE IF NOT EXISTS {schema}.schema_version (version integer PRIMARY KEY, applied_at
        timestamptz NOT NULL DEFAULT now());

INSERT INTO {schema}.cancel_requests (workflow_id, reason, grace_until, requested_at) VALUES
    ('fx-cancelled-handled', 'fixture: asked to stop', '2026-12-05 00:33:23.322726+00', '2026-12-05 00:32:23.322726+00'),
    ('fx-cancelling', 'fixture: cancelled with a week''s grace', '2026-12-12 00:32:23.370675+00', '2026-12-05 00:32:23.370675+00'),
    ('fx-child-cancelled', 'cancelled with its parent ''fx-parent'': it ended SUCCESS', '2026-12-05 00:33:23.028719+00', '2026-12-05 00:32:23.028719+00');

INSERT INTO {schema}.events (workflow_id, key, value) VALUES
    ('fx-awakeable', 'token', '"0.0.d033af89302905cfb38c45fcced700ad@fx-awakeable"'),
    ('fx-cancelling', 'cleaning', 'true'),
    ('fx-child-call-7', 'progress', '{"doubled":14}'),
    ('fx-fork', 'progress', '{"doubled":6}'),
    ('fx-inbox', 'ready', '6'),
    ('fx-queue-served', 'progress', '{"doubled":16}'),
    ('fx-rewound', 'progress', '{"doubled":8}'),
    ('fx-rounds', 'generation', '1'),
    ('fx-success', 'progress', '{"doubled":6}');

INSERT INTO {schema}.heartbeats (executor_id, app_version, seen_at, registered) VALUES
    ('fixture-engine', 'fixture-v1', '2026-12-05 00:32:22.738561+00', '{"workflows":["fx.awaits","fx.beats","fx.counter","fx.fails","fx.graceful","fx.inbox","fx.parent","fx.rounds","fx.sleeper","fx.steps","fx.ticked","fx.tidy","fx.waits","replaykit.debouncer"],"queues":["fx-served"],"more_workflows":0,"more_queues":0}');

INSERT INTO {schema}.messages (message_id, workflow_id, topic, payload, created_at, trace_context) OVERRIDING SYSTEM VALUE VALUES
    ('1', 'fx-success', 'late', '{"late":1}', '2026-12-05 00:32:22.811892+00', '00-4c7dee4ba4c9969fc0e605b211dc0518-b447a391474e1931-03'),
    ('2', 'fx-success', 'late', '{"late":2}', '2026-12-05 00:32:22.821384+00', NULL),
    ('3', 'fx-child-abandoned', 'hello', '{"from":"parent"}', '2026-12-05 00:32:23.015904+00', '00-73d66ca342491a13ed1291528db886c2-62bb571b101637bc-03'),
    ('5', 'fx-rounds', 'extra', '"x-1"', '2026-12-05 00:32:23.07077+00', NULL),
    ('6', 'fx-inbox', 'items', '{"item":1}', '2026-12-05 00:32:23.532631+00', NULL),
    ('7', 'fx-inbox', 'items', '{"item":2}', '2026-12-05 00:32:23.535011+00', NULL),
    ('8', 'fx-inbox', 'note', '"kept"', '2026-12-05 00:32:23.536822+00', NULL);
SELECT setval(pg_get_serial_sequence('{schema}.messages', 'message_id'), 8, true);

INSERT INTO {schema}.parent_close_policies (workflow_id, policy) VALUES
    ('fx-child-abandoned', 'abandon'),
    ('fx-child-cancelled', 'cancel');

INSERT INTO {schema}.records (workflow_id, position, kind, name, outcome, digest, call_site, started_at, completed_at, wake_at, attempts, event_key, event_value) VALUES
    ('fx-awakeable', '0', 'awakeable', 'approval', '{"value":"0.0.d033af89302905cfb38c45fcced700ad@fx-awakeable"}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:230', '2026-12-05 00:32:23.454546+00', '2026-12-05 00:32:23.454546+00', NULL, '1', NULL, NULL),
    ('fx-awakeable', '1', 'set_event', 'token', '{"value":null}', '9f1081584e599e5c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:231', '2026-12-05 00:32:23.472439+00', '2026-12-05 00:32:23.472439+00', NULL, '1', 'token', '"0.0.d033af89302905cfb38c45fcced700ad@fx-awakeable"'),
    ('fx-awakeable', '2', 'await', '0.0.d033af89302905cfb38c45fcced700ad', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:232', '2026-12-05 00:32:23.482853+00', NULL, NULL, '1', NULL, NULL),
    ('fx-beats', '0', 'step', 'beat', '{"value":3}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:148', '2026-12-05 00:32:22.84874+00', '2026-12-05 00:32:22.883254+00', NULL, '1', NULL, NULL),
    ('fx-cancelled-handled', '0', 'recv', 'never', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","args":["workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","fixture: asked to stop"],"traceback":""}}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:190', '2026-12-05 00:32:23.301208+00', '2026-12-05 00:32:23.324916+00', NULL, '1', NULL, NULL),
    ('fx-cancelled-handled', '1', 'step', 'cleanup', '{"value":8}', '84cfb04a9778652f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:192', '2026-12-05 00:32:23.327917+00', '2026-12-05 00:32:23.328054+00', NULL, '1', NULL, NULL),
    ('fx-cancelling', '0', 'recv', 'stop', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","args":["workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","fixture: cancelled with a week''s grace"],"traceback":""}}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:179', '2026-12-05 00:32:23.348647+00', '2026-12-05 00:32:23.37932+00', NULL, '1', NULL, NULL),
    ('fx-cancelling', '1', 'step', 'cleanup', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:181', '2026-12-05 00:32:23.383531+00', '2026-12-05 00:32:23.383677+00', NULL, '1', NULL, NULL),
    ('fx-cancelling', '2', 'set_event', 'cleaning', '{"value":null}', 'b5bea41b6c623f7c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:182', '2026-12-05 00:32:23.386786+00', '2026-12-05 00:32:23.386786+00', NULL, '1', 'cleaning', 'true'),
    ('fx-cancelling', '3', 'recv', 'cleanup-done', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:183', '2026-12-05 00:32:23.388522+00', NULL, NULL, '1', NULL, NULL),
    ('fx-child-abandoned', '0', 'recv', 'release', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:172', '2026-12-05 00:32:23.007351+00', NULL, NULL, '1', NULL, NULL),
    ('fx-child-call-7', '0', 'step', 'double', '{"value":14}', '731abed27e7a8f49', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:32:22.969009+00', '2026-12-05 00:32:22.969306+00', NULL, '1', NULL, NULL),
    ('fx-child-call-7', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:32:22.973114+00', '2026-12-05 00:32:22.983288+00', '2026-12-05 00:32:22.983114+00', '1', NULL, NULL),
    ('fx-child-call-7', '2', 'set_event', 'progress', '{"value":null}', '2e2fecd61ebb1d3c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:135', '2026-12-05 00:32:22.989001+00', '2026-12-05 00:32:22.989001+00', NULL, '1', 'progress', '{"doubled":14}'),
    ('fx-child-call-7', '3', 'set_attributes', 'doubled,stage', '{"value":null}', '613c84dfd6804cc8', '/work/wt/fixtures/tests/data/make_store_fixtures.py:136', '2026-12-05 00:32:22.99466+00', '2026-12-05 00:32:22.99466+00', NULL, '1', NULL, NULL),
    ('fx-child-cancelled', '0', 'recv', 'never', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","args":["workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:172', '2026-12-05 00:32:23.011512+00', '2026-12-05 00:32:23.04362+00', NULL, '1', NULL, NULL),
    ('fx-counter', '0', 'step', 'add', '{"value":4}', '1c54af33ee7129c4', '/work/wt/fixtures/tests/data/make_store_fixtures.py:209', '2026-12-05 00:32:23.062466+00', '2026-12-05 00:32:23.06262+00', NULL, '1', NULL, NULL),
    ('fx-counter#0', '0', 'step', 'add', '{"value":0}', 'c767f2c4951965da', '/work/wt/fixtures/tests/data/make_store_fixtures.py:209', '2026-12-05 00:32:23.052222+00', '2026-12-05 00:32:23.052414+00', NULL, '1', NULL, NULL),
    ('fx-counter#1', '0', 'step', 'add', '{"value":2}', '27b6c79168db2da0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:209', '2026-12-05 00:32:23.056211+00', '2026-12-05 00:32:23.056351+00', NULL, '1', NULL, NULL),
    ('fx-error', '0', 'step', 'double', '{"value":10}', 'b02d7c0cf97e5a46', '/work/wt/fixtures/tests/data/make_store_fixtures.py:142', '2026-12-05 00:32:22.906731+00', '2026-12-05 00:32:22.906944+00', NULL, '1', NULL, NULL),
    ('fx-error', '1', 'step', 'boom', '{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/runtime/attempts.py\", line 157, in attempts\n    value = yield Attempt(context, beat)\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/steps.py\", line 164, in run_attempts\n    reply = self.bodies.call(\n            ^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/bodies.py\", line 263, in call\n    return fn(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 121, in boom\n    raise ValueError(f\"boom {n}\")\nValueError: boom 5\n"}}', 'b02d7c0cf97e5a46', '/work/wt/fixtures/tests/data/make_store_fixtures.py:143', '2026-12-05 00:32:22.926053+00', '2026-12-05 00:32:22.943103+00', '2026-12-05 00:32:22.936779+00', '2', NULL, NULL),
    ('fx-fork', '0', 'step', 'double', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:32:22.766481+00', '2026-12-05 00:32:22.766798+00', NULL, '1', NULL, NULL),
    ('fx-fork', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:32:23.099388+00', '2026-12-05 00:32:23.109702+00', '2026-12-05 00:32:23.109388+00', '1', NULL, NULL),
    ('fx-fork', '2', 'set_event', 'progress', '{"value":null}', 'e0f69a4fbfeb5ce5', '/work/wt/fixtures/tests/data/make_store_fixtures.py:135', '2026-12-05 00:32:23.111416+00', '2026-12-05 00:32:23.111416+00', NULL, '1', 'progress', '{"doubled":6}'),
    ('fx-fork', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'fb8e2be398c1d087', '/work/wt/fixtures/tests/data/make_store_fixtures.py:136', '2026-12-05 00:32:23.113611+00', '2026-12-05 00:32:23.113611+00', NULL, '1', NULL, NULL),
    ('fx-inbox', '0', 'step', 'prepare', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:154', '2026-12-05 00:32:23.497649+00', '2026-12-05 00:32:23.49788+00', NULL, '1', NULL, NULL),
    ('fx-inbox', '1', 'set_event', 'ready', '{"value":null}', 'e7f6c011776e8db7', '/work/wt/fixtures/tests/data/make_store_fixtures.py:155', '2026-12-05 00:32:23.501237+00', '2026-12-05 00:32:23.501237+00', NULL, '1', 'ready', '6'),
    ('fx-inbox', '2', 'recv', 'go', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:156', '2026-12-05 00:32:23.505429+00', NULL, NULL, '1', NULL, NULL),
    ('fx-parent', '0', 'call', 'fx.steps', '{"value":{"n":7,"doubled":14}}', '030e246889f09454', '/work/wt/fixtures/tests/data/make_store_fixtures.py:198', '2026-12-05 00:32:22.968538+00', '2026-12-05 00:32:23.000085+00', NULL, '1', NULL, NULL),
    ('fx-parent', '1', 'start', 'fx.waits', '{"value":"fx-child-abandoned"}', '9e9e6094cadfc0ef', '/work/wt/fixtures/tests/data/make_store_fixtures.py:199', '2026-12-05 00:32:23.00602+00', '2026-12-05 00:32:23.00602+00', NULL, '1', NULL, NULL),
    ('fx-parent', '2', 'start', 'fx.waits', '{"value":"fx-child-cancelled"}', '2985a5c825b0171b', '/work/wt/fixtures/tests/data/make_store_fixtures.py:202', '2026-12-05 00:32:23.011179+00', '2026-12-05 00:32:23.011179+00', NULL, '1', NULL, NULL),
    ('fx-parent', '3', 'send', 'hello', '{"value":true}', '8e0c8c69a91fdc19', '/work/wt/fixtures/tests/data/make_store_fixtures.py:203', '2026-12-05 00:32:23.015833+00', '2026-12-05 00:32:23.015833+00', NULL, '1', NULL, NULL),
    ('fx-parked', '0', 'recv', 'unpark', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:172', '2026-12-05 00:32:23.405578+00', NULL, NULL, '1', NULL, NULL),
    ('fx-queue-served', '0', 'step', 'double', '{"value":16}', '4bb06ec9eaaaa34c', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:32:23.189+00', '2026-12-05 00:32:23.189255+00', NULL, '1', NULL, NULL),
    ('fx-queue-served', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:32:23.191319+00', '2026-12-05 00:32:23.201646+00', '2026-12-05 00:32:23.201319+00', '1', NULL, NULL),
    ('fx-queue-served', '2', 'set_event', 'progress', '{"value":null}', 'a916c1104570b127', '/work/wt/fixtures/tests/data/make_store_fixtures.py:135', '2026-12-05 00:32:23.208298+00', '2026-12-05 00:32:23.208298+00', NULL, '1', 'progress', '{"doubled":16}'),
    ('fx-queue-served', '3', 'set_attributes', 'doubled,stage', '{"value":null}', '493109fe51353115', '/work/wt/fixtures/tests/data/make_store_fixtures.py:136', '2026-12-05 00:32:23.212607+00', '2026-12-05 00:32:23.212607+00', NULL, '1', NULL, NULL),
    ('fx-rewound', '0', 'step', 'double', '{"value":8}', '84cfb04a9778652f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:32:23.120032+00', '2026-12-05 00:32:23.120267+00', NULL, '1', NULL, NULL),
    ('fx-rewound', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:32:23.154012+00', '2026-12-05 00:32:23.164346+00', '2026-12-05 00:32:23.164012+00', '1', NULL, NULL),
    ('fx-rewound', '2', 'set_event', 'progress', '{"value":null}', '7217314d6b71e344', '/work/wt/fixtures/tests/data/make_store_fixtures.py:135', '2026-12-05 00:32:23.166035+00', '2026-12-05 00:32:23.166035+00', NULL, '1', 'progress', '{"doubled":8}'),
    ('fx-rewound', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'a5c5f9f8bed01e5b', '/work/wt/fixtures/tests/data/make_store_fixtures.py:136', '2026-12-05 00:32:23.169034+00', '2026-12-05 00:32:23.169034+00', NULL, '1', NULL, NULL),
    ('fx-rewound#0', '0', 'step', 'double', '{"value":8}', '84cfb04a9778652f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:32:23.120032+00', '2026-12-05 00:32:23.120267+00', NULL, '1', NULL, NULL),
    ('fx-rewound#0', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:32:23.124135+00', '2026-12-05 00:32:23.134508+00', '2026-12-05 00:32:23.134135+00', '1', NULL, NULL),
    ('fx-rewound#0', '2', 'set_event', 'progress', '{"value":null}', '7217314d6b71e344', '/work/wt/fixtures/tests/data/make_store_fixtures.py:135', '2026-12-05 00:32:23.137258+00', '2026-12-05 00:32:23.137258+00', NULL, '1', 'progress', '{"doubled":8}'),
    ('fx-rewound#0', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'a5c5f9f8bed01e5b', '/work/wt/fixtures/tests/data/make_store_fixtures.py:136', '2026-12-05 00:32:23.143356+00', '2026-12-05 00:32:23.143356+00', NULL, '1', NULL, NULL),
    ('fx-rounds', '0', 'set_event', 'generation', '{"value":null}', '6b86b273ff34fce1', '/work/wt/fixtures/tests/data/make_store_fixtures.py:222', '2026-12-05 00:32:23.083945+00', '2026-12-05 00:32:23.083945+00', NULL, '1', 'generation', '1'),
    ('fx-rounds', '1', 'recv', 'go', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:223', '2026-12-05 00:32:23.086755+00', NULL, NULL, '1', NULL, NULL),
    ('fx-rounds#0', '0', 'recv', 'tick', '{"value":"t-1"}', '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:220', '2026-12-05 00:32:23.06536+00', '2026-12-05 00:32:23.071265+00', NULL, '1', NULL, NULL),
    ('fx-sleeper', '0', 'step', 'before', '{"value":2}', '27b6c79168db2da0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:165', '2026-12-05 00:32:23.599586+00', '2026-12-05 00:32:23.599827+00', NULL, '1', NULL, NULL),
    ('fx-sleeper', '1', 'sleep', 'sleep', NULL, 'a19a1584344c1f37', '/work/wt/fixtures/tests/data/make_store_fixtures.py:166', '2026-12-05 00:32:23.606468+00', NULL, '2026-12-05 00:32:28.606468+00', '1', NULL, NULL),
    ('fx-success', '0', 'step', 'double', '{"value":6}', '59609ab39ff8c2f0', '/work/wt/fixtures/tests/data/make_store_fixtures.py:133', '2026-12-05 00:32:22.766481+00', '2026-12-05 00:32:22.766798+00', NULL, '1', NULL, NULL),
    ('fx-success', '1', 'sleep', 'sleep', '{"value":null}', '312b95ee5a344d2f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:134', '2026-12-05 00:32:22.770235+00', '2026-12-05 00:32:22.780817+00', '2026-12-05 00:32:22.780235+00', '1', NULL, NULL),
    ('fx-success', '2', 'set_event', 'progress', '{"value":null}', 'e0f69a4fbfeb5ce5', '/work/wt/fixtures/tests/data/make_store_fixtures.py:135', '2026-12-05 00:32:22.784506+00', '2026-12-05 00:32:22.784506+00', NULL, '1', 'progress', '{"doubled":6}'),
    ('fx-success', '3', 'set_attributes', 'doubled,stage', '{"value":null}', 'fb8e2be398c1d087', '/work/wt/fixtures/tests/data/make_store_fixtures.py:136', '2026-12-05 00:32:22.801276+00', '2026-12-05 00:32:22.801276+00', NULL, '1', NULL, NULL),
    ('fx-terminated', '0', 'recv', 'never', NULL, '74234e98afe7498f', '/work/wt/fixtures/tests/data/make_store_fixtures.py:172', '2026-12-05 00:32:23.23668+00', NULL, NULL, '1', NULL, NULL),
    ('schedule:fx-yearly:manual:2026-12-05T00:32:23.552623+00:00', '0', 'step', 'tick', '{"value":"2026-12-05T00:32:23.552623+00:00"}', '427c4539605df394', '/work/wt/fixtures/tests/data/make_store_fixtures.py:237', '2026-12-05 00:32:23.57253+00', '2026-12-05 00:32:23.572772+00', NULL, '1', NULL, NULL);

INSERT INTO {schema}.schedules (name, workflow_name, cron, tz, queue, backfill, paused, updated_at, trigger_at, backfill_start, backfill_end) VALUES
    ('fx-nightly', 'fx.ticked', '30 3 * * *', 'Europe/Berlin', 'fx-served', 'false', 'true', '2026-12-05 00:32:23.848155+00', '2026-12-05 00:32:23.848155+00', NULL, NULL),
    ('fx-yearly', 'fx.ticked', '0 0 1 1 *', NULL, NULL, 'false', 'false', '2026-12-05 00:32:23.85223+00', NULL, '2020-01-01 00:00:00+00', '2022-06-01 00:00:00+00');

INSERT INTO {schema}.schema_version (version, applied_at) VALUES
    ('1', '2026-12-05 00:32:22.568911+00'),
    ('2', '2026-12-05 00:32:22.568911+00'),
    ('3', '2026-12-05 00:32:22.568911+00'),
    ('4', '2026-12-05 00:32:22.568911+00'),
    ('5', '2026-12-05 00:32:22.568911+00'),
    ('6', '2026-12-05 00:32:22.568911+00'),
    ('7', '2026-12-05 00:32:22.568911+00'),
    ('8', '2026-12-05 00:32:22.568911+00'),
    ('9', '2026-12-05 00:32:22.568911+00'),
    ('10', '2026-12-05 00:32:22.568911+00'),
    ('11', '2026-12-05 00:32:22.568911+00'),
    ('12', '2026-12-05 00:32:22.568911+00'),
    ('13', '2026-12-05 00:32:22.568911+00'),
    ('14', '2026-12-05 00:32:22.568911+00');

INSERT INTO {schema}.send_keys (workflow_id, key, call_id) VALUES
    ('fx-child-abandoned', 'parent-hello', NULL),
    ('fx-inbox', 'item-1', 'b1e4877959b14597b7a3596e879371b2'),
    ('fx-inbox', 'replaykit-send:1dd1f12d3f3e4105979f0799b28b26b6', '1dd1f12d3f3e4105979f0799b28b26b6'),
    ('fx-inbox', 'replaykit-send:f40af90a7d20419ca725df3f7d07be51', 'f40af90a7d20419ca725df3f7d07be51'),
    ('fx-rounds', 'replaykit-send:c553a0f3e09b4eb88c3f8b1e6191dc66', 'c553a0f3e09b4eb88c3f8b1e6191dc66'),
    ('fx-rounds', 'replaykit-send:f4487fba11984749bf3f3f86072d077d', 'f4487fba11984749bf3f3f86072d077d'),
    ('fx-success', 'late-1', '17f5a3eb61514c9a8568186af133aa81'),
    ('fx-success', 'replaykit-send:f33b1ca84bb242b49b787a8b1fdce903', 'f33b1ca84bb242b49b787a8b1fdce903');

INSERT INTO {schema}.step_heartbeats (workflow_id, position, child_path, generation, attempt, name, details, beat_at) VALUES
    ('fx-beats', '0', '', '0', '1', 'beat', '{"done":3,"of":3}', '2026-12-05 00:32:22.860606+00');

INSERT INTO {schema}.workflows (workflow_id, name, status, inputs, result, executor_id, app_version, created_at, updated_at, parent_id, queue, priority, dedup_id, recovery_attempts, wake_at, error, started_at, trace_context, forked_from, fork_position, deadline, timeout_seconds, generation, continued_as, first_inputs, partition_key, attributes) VALUES
    ('fx-awakeable', 'fx.awaits', 'PENDING', '{"args":[],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.434846+00', '2026-12-05 00:32:23.43502+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.434846+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-beats', 'fx.beats', 'SUCCESS', '{"args":[3],"kwargs":{}}', '{"value":3}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:22.837269+00', '2026-12-05 00:32:22.883501+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:22.837269+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-cancelled-handled', 'fx.tidy', 'CANCELLED', '{"args":[],"kwargs":{}}', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"fixture: asked to stop (a cancel it handled: the workflow raised)","args":["fixture: asked to stop (a cancel it handled: the workflow raised)","fixture: asked to stop"],"traceback":""}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.285054+00', '2026-12-05 00:32:23.328193+00', NULL, NULL, '0', NULL, '0', NULL, 'fixture: asked to stop (a cancel it handled: the workflow raised)', '2026-12-05 00:32:23.285054+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-cancelling', 'fx.graceful', 'PENDING', '{"args":["stop"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.346794+00', '2026-12-05 00:32:23.346908+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.346794+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-child-abandoned', 'fx.waits', 'PENDING', '{"args":["release"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.003822+00', '2026-12-05 00:32:23.004018+00', 'fx-parent', NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.003822+00', '00-73d66ca342491a13ed1291528db886c2-62bb571b101637bc-03', NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-child-call-7', 'fx.steps', 'SUCCESS', '{"args":[7],"kwargs":{}}', '{"value":{"n":7,"doubled":14}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:22.964129+00', '2026-12-05 00:32:22.996985+00', 'fx-parent', NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:22.964129+00', '00-0e40e294d43cd3b273dbaa728bd91904-9c79b86fc02a50f6-03', NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{"stage": "done", "doubled": 14}'),
    ('fx-child-cancelled', 'fx.waits', 'CANCELLED', '{"args":["never"],"kwargs":{}}', '{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","args":["cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.009928+00', '2026-12-05 00:32:23.045593+00', 'fx-parent', NULL, '0', NULL, '0', NULL, 'cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)', '2026-12-05 00:32:23.009928+00', '00-73d66ca342491a13ed1291528db886c2-62bb571b101637bc-03', NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-counter', 'fx.counter', 'SUCCESS', '{"args":[2,2],"kwargs":{}}', '{"value":6}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.050334+00', '2026-12-05 00:32:23.062704+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.05996+00', NULL, NULL, NULL, NULL, NULL, '2', NULL, '{"args":[0,0],"kwargs":{}}', '', '{}'),
    ('fx-counter#0', 'fx.counter', 'CONTINUED', '{"args":[0,0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.050334+00', '2026-12-05 00:32:23.053556+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.050334+00', NULL, NULL, NULL, NULL, NULL, '0', 'fx-counter', NULL, '', '{}'),
    ('fx-counter#1', 'fx.counter', 'CONTINUED', '{"args":[1,0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.053556+00', '2026-12-05 00:32:23.05996+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.053556+00', NULL, NULL, NULL, NULL, NULL, '1', 'fx-counter', NULL, '', '{}'),
    ('fx-error', 'fx.fails', 'ERROR', '{"args":[5],"kwargs":{}}', '{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/interpreter.py\", line 695, in _run\n    yielded = gen.send(value) if ok else gen.throw(value)\n                                         ^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 143, in fails\n    return (yield Step(\"boom\", boom, n, retry=Retry(max_attempts=2, interval=0.01)))\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: boom 5\n"}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:22.903983+00', '2026-12-05 00:32:22.943469+00', NULL, NULL, '0', NULL, '0', NULL, 'boom 5', '2026-12-05 00:32:22.903983+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-fork', 'fx.steps', 'SUCCESS', '{"args":[3],"kwargs":{}}', '{"value":{"n":3,"doubled":6}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.089468+00', '2026-12-05 00:32:23.114671+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.089468+00', NULL, 'fx-success', '1', NULL, NULL, '0', NULL, NULL, '', '{"tier": 2, "stage": "done", "doubled": 6, "customer": "c-1"}'),
    ('fx-inbox', 'fx.inbox', 'PENDING', '{"args":[3],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.49459+00', '2026-12-05 00:32:23.494718+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.49459+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{"customer": "c-1"}'),
    ('fx-parent', 'fx.parent', 'SUCCESS', '{"args":[7],"kwargs":{}}', '{"value":{"child":{"n":7,"doubled":14},"abandoned":"fx-child-abandoned","sent":true}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:22.962233+00', '2026-12-05 00:32:23.021909+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:22.962233+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-parked', 'fx.waits', 'PARKED', '{"args":["unpark"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.403432+00', '2026-12-05 00:32:23.426797+00', NULL, NULL, '0', NULL, '0', NULL, 'fixture: parked by hand', '2026-12-05 00:32:23.403432+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-queue-served', 'fx.steps', 'SUCCESS', '{"args":[8],"kwargs":{}}', '{"value":{"n":8,"doubled":16}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.172341+00', '2026-12-05 00:32:23.213848+00', NULL, 'fx-served', '3', NULL, '0', NULL, '', '2026-12-05 00:32:23.184392+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, 'k-1', '{"stage": "done", "doubled": 16, "customer": "c-2"}'),
    ('fx-queued-a', 'fx.steps', 'ENQUEUED', '{"args":[5],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:32:23.217298+00', '2026-12-05 00:32:23.217459+00', NULL, 'fx-waiting', '5', 'dedup-a', '0', NULL, '', NULL, NULL, NULL, NULL, NULL, '600', '0', NULL, NULL, 'tenant-a', '{"tags": ["red", "blue"], "customer": "c-3"}'),
    ('fx-queued-b', 'fx.steps', 'ENQUEUED', '{"args":[6],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:32:23.219957+00', '2026-12-05 00:32:23.220058+00', NULL, 'fx-waiting', '1', NULL, '0', NULL, '', NULL, NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, 'tenant-b', '{}'),
    ('fx-queued-cancelled', 'fx.steps', 'CANCELLED', '{"args":[10],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:32:23.223917+00', '2026-12-05 00:32:23.232853+00', NULL, 'fx-waiting', '0', NULL, '0', NULL, 'fixture: cancelled while queued', NULL, NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, 'tenant-a', '{}'),
    ('fx-queued-delayed', 'fx.steps', 'ENQUEUED', '{"args":[9],"kwargs":{}}', NULL, '', 'fixture-v1', '2026-12-05 00:32:23.221992+00', '2026-12-05 00:32:23.222083+00', NULL, 'fx-waiting', '0', NULL, '0', '2036-12-02 00:32:23.221992+00', '', NULL, NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-rewound', 'fx.steps', 'SUCCESS', '{"args":[4],"kwargs":{}}', '{"value":{"n":4,"doubled":8}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.116838+00', '2026-12-05 00:32:23.170356+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.147923+00', NULL, NULL, NULL, NULL, NULL, '1', NULL, '{"args":[4],"kwargs":{}}', '', '{"stage": "done", "doubled": 8}'),
    ('fx-rewound#0', 'fx.steps', 'CONTINUED', '{"args":[4],"kwargs":{}}', '{"value":{"n":4,"doubled":8}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.116838+00', '2026-12-05 00:32:23.147923+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.116838+00', NULL, NULL, NULL, NULL, NULL, '0', 'fx-rewound', NULL, '', '{}'),
    ('fx-rounds', 'fx.rounds', 'PENDING', '{"args":[1],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.063952+00', '2026-12-05 00:32:23.073129+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.073129+00', NULL, NULL, NULL, NULL, NULL, '1', NULL, '{"args":[0],"kwargs":{}}', '', '{}'),
    ('fx-rounds#0', 'fx.rounds', 'CONTINUED', '{"args":[0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.063952+00', '2026-12-05 00:32:23.073129+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.063952+00', NULL, NULL, NULL, NULL, NULL, '0', 'fx-rounds', NULL, '', '{}'),
    ('fx-sleeper', 'fx.sleeper', 'PENDING', '{"args":[5.0],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.597421+00', '2026-12-05 00:32:23.597546+00', NULL, NULL, '0', NULL, '0', '2026-12-05 00:32:28.606468+00', '', '2026-12-05 00:32:23.597421+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('fx-success', 'fx.steps', 'SUCCESS', '{"args":[3],"kwargs":{}}', '{"value":{"n":3,"doubled":6}}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:22.760684+00', '2026-12-05 00:32:22.803522+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:22.760684+00', '00-6465cc32d6d61d545817522cb92aa270-a39a63c89c873001-03', NULL, NULL, '2026-12-05 01:32:22.760684+00', '3600', '0', NULL, NULL, '', '{"tier": 2, "stage": "done", "doubled": 6, "customer": "c-1"}'),
    ('fx-terminated', 'fx.waits', 'CANCELLED', '{"args":["never"],"kwargs":{}}', NULL, 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.235165+00', '2026-12-05 00:32:23.273943+00', NULL, NULL, '0', NULL, '0', NULL, 'fixture: stopped hard', '2026-12-05 00:32:23.235165+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}'),
    ('schedule:fx-yearly:manual:2026-12-05T00:32:23.552623+00:00', 'fx.ticked', 'SUCCESS', '{"args":["2026-12-05T00:32:23.552623+00:00"],"kwargs":{}}', '{"value":"2026-12-05T00:32:23.552623+00:00"}', 'fixture-engine', 'fixture-v1', '2026-12-05 00:32:23.56616+00', '2026-12-05 00:32:23.572873+00', NULL, NULL, '0', NULL, '0', NULL, '', '2026-12-05 00:32:23.56616+00', NULL, NULL, NULL, NULL, NULL, '0', NULL, NULL, '', '{}');
