-- A replaykit SQLite database; made by tests/data/make_store_fixtures.py.
-- Load with load_sqlite there (sqlite3 executescript into a new file).
BEGIN TRANSACTION;
PRAGMA user_version = 14;
CREATE TABLE cancel_requests (
    workflow_id TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    grace_until INTEGER NOT NULL,
    requested_at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO "cancel_requests" VALUES('fx-cancelled-handled','fixture: asked to stop',1796430802152853,1796430742152853);
INSERT INTO "cancel_requests" VALUES('fx-cancelling','fixture: cancelled with a week''s grace',1797035542209876,1796430742209876);
INSERT INTO "cancel_requests" VALUES('fx-child-cancelled','cancelled with its parent ''fx-parent'': it ended SUCCESS',1796430801970228,1796430741970228);
CREATE TABLE events (
    workflow_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (workflow_id, key)
) WITHOUT ROWID;
INSERT INTO "events" VALUES('fx-awakeable','token','"0.0.ee9e2ebb4b1debc0c0c367278d17e7c5@fx-awakeable"');
INSERT INTO "events" VALUES('fx-cancelling','cleaning','true');
INSERT INTO "events" VALUES('fx-child-call-7','progress','{"doubled":14}');
INSERT INTO "events" VALUES('fx-fork','progress','{"doubled":6}');
INSERT INTO "events" VALUES('fx-inbox','ready','6');
INSERT INTO "events" VALUES('fx-queue-served','progress','{"doubled":16}');
INSERT INTO "events" VALUES('fx-rewound','progress','{"doubled":8}');
INSERT INTO "events" VALUES('fx-rounds','generation','1');
INSERT INTO "events" VALUES('fx-success','progress','{"doubled":6}');
CREATE TABLE heartbeats (
    executor_id TEXT PRIMARY KEY,
    app_version TEXT NOT NULL,
    seen_at INTEGER NOT NULL
, registered TEXT) WITHOUT ROWID;
INSERT INTO "heartbeats" VALUES('fixture-engine','fixture-v1',1796430741803859,'{"workflows":["fx.awaits","fx.beats","fx.counter","fx.fails","fx.graceful","fx.inbox","fx.parent","fx.rounds","fx.sleeper","fx.steps","fx.ticked","fx.tidy","fx.waits","replaykit.debouncer"],"queues":["fx-served"],"more_workflows":0,"more_queues":0}');
CREATE TABLE messages (
    message_id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL
, trace_context TEXT);
INSERT INTO "messages" VALUES(1,'fx-success','late','{"late":1}',1796430741869447,'00-afee41e2135e2ff925f651b1729f2004-1a92fc39044e0363-03');
INSERT INTO "messages" VALUES(2,'fx-success','late','{"late":2}',1796430741869648,NULL);
INSERT INTO "messages" VALUES(3,'fx-child-abandoned','hello','{"from":"parent"}',1796430741966097,'00-11e3ae33264598fba51b868f8c5b777a-07ee8ae6f14482f6-03');
INSERT INTO "messages" VALUES(5,'fx-rounds','extra','"x-1"',1796430742012612,NULL);
INSERT INTO "messages" VALUES(6,'fx-inbox','items','{"item":1}',1796430742235470,NULL);
INSERT INTO "messages" VALUES(7,'fx-inbox','items','{"item":2}',1796430742236166,NULL);
INSERT INTO "messages" VALUES(8,'fx-inbox','note','"kept"',1796430742236663,NULL);
CREATE TABLE parent_close_policies (
    workflow_id TEXT PRIMARY KEY,
    policy TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO "parent_close_policies" VALUES('fx-child-abandoned','abandon');
INSERT INTO "parent_close_policies" VALUES('fx-child-cancelled','cancel');
CREATE TABLE records (
    workflow_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    outcome TEXT,
    digest TEXT NOT NULL,
    call_site TEXT NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    wake_at INTEGER,
    attempts INTEGER NOT NULL, event_key TEXT, event_value TEXT,
    PRIMARY KEY (workflow_id, position)
) WITHOUT ROWID;
INSERT INTO "records" VALUES('fx-awakeable',0,'awakeable','approval','{"value":"0.0.ee9e2ebb4b1debc0c0c367278d17e7c5@fx-awakeable"}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:230',1796430742213765,1796430742213765,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-awakeable',1,'set_event','token','{"value":null}','e4e2927ba202b215','/work/wt/fixtures/tests/data/make_store_fixtures.py:231',1796430742213954,1796430742213954,NULL,1,'token','"0.0.ee9e2ebb4b1debc0c0c367278d17e7c5@fx-awakeable"');
INSERT INTO "records" VALUES('fx-awakeable',2,'await','0.0.ee9e2ebb4b1debc0c0c367278d17e7c5',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:232',1796430742214151,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-beats',0,'step','beat','{"value":3}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:148',1796430741885717,1796430741889234,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelled-handled',0,'recv','never','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","args":["workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","fixture: asked to stop"],"traceback":""}}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:190',1796430742152141,1796430742171726,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelled-handled',1,'step','cleanup','{"value":8}','84cfb04a9778652f','/work/wt/fixtures/tests/data/make_store_fixtures.py:192',1796430742172291,1796430742172432,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelling',0,'recv','stop','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","args":["workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","fixture: cancelled with a week''s grace"],"traceback":""}}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:179',1796430742192113,1796430742210392,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelling',1,'step','cleanup','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:181',1796430742210789,1796430742210916,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelling',2,'set_event','cleaning','{"value":null}','b5bea41b6c623f7c','/work/wt/fixtures/tests/data/make_store_fixtures.py:182',1796430742211101,1796430742211101,NULL,1,'cleaning','true');
INSERT INTO "records" VALUES('fx-cancelling',3,'recv','cleanup-done',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:183',1796430742211307,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-abandoned',0,'recv','release',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:172',1796430741965413,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-call-7',0,'step','double','{"value":14}','731abed27e7a8f49','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430741945211,1796430741945405,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-call-7',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430741947966,1796430741958166,1796430741957966,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-call-7',2,'set_event','progress','{"value":null}','2e2fecd61ebb1d3c','/work/wt/fixtures/tests/data/make_store_fixtures.py:135',1796430741958575,1796430741958575,NULL,1,'progress','{"doubled":14}');
INSERT INTO "records" VALUES('fx-child-call-7',3,'set_attributes','doubled,stage','{"value":null}','613c84dfd6804cc8','/work/wt/fixtures/tests/data/make_store_fixtures.py:136',1796430741958919,1796430741958919,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-cancelled',0,'recv','never','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","args":["workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:172',1796430741966232,1796430741972240,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-counter',0,'step','add','{"value":4}','1c54af33ee7129c4','/work/wt/fixtures/tests/data/make_store_fixtures.py:209',1796430742010319,1796430742010440,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-counter#0',0,'step','add','{"value":0}','c767f2c4951965da','/work/wt/fixtures/tests/data/make_store_fixtures.py:209',1796430742008231,1796430742008465,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-counter#1',0,'step','add','{"value":2}','27b6c79168db2da0','/work/wt/fixtures/tests/data/make_store_fixtures.py:209',1796430742009425,1796430742009565,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-error',0,'step','double','{"value":10}','b02d7c0cf97e5a46','/work/wt/fixtures/tests/data/make_store_fixtures.py:142',1796430741902158,1796430741902500,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-error',1,'step','boom','{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/runtime/attempts.py\", line 157, in attempts\n    value = yield Attempt(context, beat)\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/steps.py\", line 164, in run_attempts\n    reply = self.bodies.call(\n            ^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/bodies.py\", line 263, in call\n    return fn(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 121, in boom\n    raise ValueError(f\"boom {n}\")\nValueError: boom 5\n"}}','b02d7c0cf97e5a46','/work/wt/fixtures/tests/data/make_store_fixtures.py:143',1796430741902895,1796430741933248,1796430741929722,2,NULL,NULL);
INSERT INTO "records" VALUES('fx-fork',0,'step','double','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430741830484,1796430741830935,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-fork',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430742045984,1796430742056467,1796430742055984,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-fork',2,'set_event','progress','{"value":null}','e0f69a4fbfeb5ce5','/work/wt/fixtures/tests/data/make_store_fixtures.py:135',1796430742056863,1796430742056863,NULL,1,'progress','{"doubled":6}');
INSERT INTO "records" VALUES('fx-fork',3,'set_attributes','doubled,stage','{"value":null}','fb8e2be398c1d087','/work/wt/fixtures/tests/data/make_store_fixtures.py:136',1796430742058093,1796430742058093,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-inbox',0,'step','prepare','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:154',1796430742215045,1796430742215209,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-inbox',1,'set_event','ready','{"value":null}','e7f6c011776e8db7','/work/wt/fixtures/tests/data/make_store_fixtures.py:155',1796430742215348,1796430742215348,NULL,1,'ready','6');
INSERT INTO "records" VALUES('fx-inbox',2,'recv','go',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:156',1796430742215521,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',0,'call','fx.steps','{"value":{"n":7,"doubled":14}}','030e246889f09454','/work/wt/fixtures/tests/data/make_store_fixtures.py:198',1796430741944640,1796430741960408,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',1,'start','fx.waits','{"value":"fx-child-abandoned"}','9e9e6094cadfc0ef','/work/wt/fixtures/tests/data/make_store_fixtures.py:199',1796430741964402,1796430741964402,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',2,'start','fx.waits','{"value":"fx-child-cancelled"}','2985a5c825b0171b','/work/wt/fixtures/tests/data/make_store_fixtures.py:202',1796430741965136,1796430741965136,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',3,'send','hello','{"value":true}','8e0c8c69a91fdc19','/work/wt/fixtures/tests/data/make_store_fixtures.py:203',1796430741966003,1796430741966003,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parked',0,'recv','unpark',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:172',1796430742212568,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-queue-served',0,'step','double','{"value":16}','4bb06ec9eaaaa34c','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430742096086,1796430742096256,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-queue-served',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430742096408,1796430742106573,1796430742106408,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-queue-served',2,'set_event','progress','{"value":null}','a916c1104570b127','/work/wt/fixtures/tests/data/make_store_fixtures.py:135',1796430742106860,1796430742106860,NULL,1,'progress','{"doubled":16}');
INSERT INTO "records" VALUES('fx-queue-served',3,'set_attributes','doubled,stage','{"value":null}','493109fe51353115','/work/wt/fixtures/tests/data/make_store_fixtures.py:136',1796430742107204,1796430742107204,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound',0,'step','double','{"value":8}','84cfb04a9778652f','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430742060733,1796430742060893,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430742080288,1796430742091098,1796430742090288,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound',2,'set_event','progress','{"value":null}','7217314d6b71e344','/work/wt/fixtures/tests/data/make_store_fixtures.py:135',1796430742091434,1796430742091434,NULL,1,'progress','{"doubled":8}');
INSERT INTO "records" VALUES('fx-rewound',3,'set_attributes','doubled,stage','{"value":null}','a5c5f9f8bed01e5b','/work/wt/fixtures/tests/data/make_store_fixtures.py:136',1796430742091742,1796430742091742,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound#0',0,'step','double','{"value":8}','84cfb04a9778652f','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430742060733,1796430742060893,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound#0',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430742061052,1796430742072971,1796430742071052,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound#0',2,'set_event','progress','{"value":null}','7217314d6b71e344','/work/wt/fixtures/tests/data/make_store_fixtures.py:135',1796430742073388,1796430742073388,NULL,1,'progress','{"doubled":8}');
INSERT INTO "records" VALUES('fx-rewound#0',3,'set_attributes','doubled,stage','{"value":null}','a5c5f9f8bed01e5b','/work/wt/fixtures/tests/data/make_store_fixtures.py:136',1796430742076056,1796430742076056,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rounds',0,'set_event','generation','{"value":null}','6b86b273ff34fce1','/work/wt/fixtures/tests/data/make_store_fixtures.py:222',1796430742013783,1796430742013783,NULL,1,'generation','1');
INSERT INTO "records" VALUES('fx-rounds',1,'recv','go',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:223',1796430742016028,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rounds#0',0,'recv','tick','{"value":"t-1"}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:220',1796430742012858,1796430742012931,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-sleeper',0,'step','before','{"value":2}','27b6c79168db2da0','/work/wt/fixtures/tests/data/make_store_fixtures.py:165',1796430742259655,1796430742259842,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-sleeper',1,'sleep','sleep',NULL,'a19a1584344c1f37','/work/wt/fixtures/tests/data/make_store_fixtures.py:166',1796430742260065,NULL,1796430747260065,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-success',0,'step','double','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430741830484,1796430741830935,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-success',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430741831616,1796430741852120,1796430741841616,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-success',2,'set_event','progress','{"value":null}','e0f69a4fbfeb5ce5','/work/wt/fixtures/tests/data/make_store_fixtures.py:135',1796430741852759,1796430741852759,NULL,1,'progress','{"doubled":6}');
INSERT INTO "records" VALUES('fx-success',3,'set_attributes','doubled,stage','{"value":null}','fb8e2be398c1d087','/work/wt/fixtures/tests/data/make_store_fixtures.py:136',1796430741854932,1796430741854932,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-terminated',0,'recv','never',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:172',1796430742111735,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('schedule:fx-yearly:manual:2026-12-05T00:32:22.237850+00:00',0,'step','tick','{"value":"2026-12-05T00:32:22.237850+00:00"}','18cbc2c69d5f3fa6','/work/wt/fixtures/tests/data/make_store_fixtures.py:237',1796430742247961,1796430742248190,NULL,1,NULL,NULL);
CREATE TABLE schedules (
    name TEXT PRIMARY KEY,
    workflow_name TEXT NOT NULL,
    cron TEXT NOT NULL,
    tz TEXT,
    queue TEXT,
    backfill INTEGER NOT NULL DEFAULT 0,
    paused INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    trigger_at INTEGER,
    backfill_start INTEGER,
    backfill_end INTEGER
) WITHOUT ROWID;
INSERT INTO "schedules" VALUES('fx-nightly','fx.ticked','30 3 * * *','Europe/Berlin','fx-served',0,1,1796430742301265,1796430742301265,NULL,NULL);
INSERT INTO "schedules" VALUES('fx-yearly','fx.ticked','0 0 1 1 *',NULL,NULL,0,0,1796430742304076,NULL,1577836800000000,1654041600000000);
CREATE TABLE send_keys (
    workflow_id TEXT NOT NULL,
    key TEXT NOT NULL, call_id TEXT,
    PRIMARY KEY (workflow_id, key)
) WITHOUT ROWID;
INSERT INTO "send_keys" VALUES('fx-child-abandoned','parent-hello',NULL);
INSERT INTO "send_keys" VALUES('fx-inbox','item-1','d2ba7e830fbb4c39b741624bb143d5ee');
INSERT INTO "send_keys" VALUES('fx-inbox','replaykit-send:2f219b5e11b6415abed6503e0b4223a5','2f219b5e11b6415abed6503e0b4223a5');
INSERT INTO "send_keys" VALUES('fx-inbox','replaykit-send:a9bfde478a454a7bbfa1bb5f384be0ce','a9bfde478a454a7bbfa1bb5f384be0ce');
INSERT INTO "send_keys" VALUES('fx-rounds','replaykit-send:7b0fb176277349adb221120c3b338389','7b0fb176277349adb221120c3b338389');
INSERT INTO "send_keys" VALUES('fx-rounds','replaykit-send:be5444ea890546df983d057f4c903b85','be5444ea890546df983d057f4c903b85');
INSERT INTO "send_keys" VALUES('fx-success','late-1','cc1bed4bb1ac4b84824b9c25489d9986');
INSERT INTO "send_keys" VALUES('fx-success','replaykit-send:4bc339f245f341418a6beb034af5cfdd','4bc339f245f341418a6beb034af5cfdd');
CREATE TABLE step_heartbeats (
    workflow_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    child_path TEXT NOT NULL,
    generation INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    name TEXT NOT NULL,
    details TEXT,
    beat_at INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, position, child_path)
) WITHOUT ROWID;
INSERT INTO "step_heartbeats" VALUES('fx-beats',0,'',0,1,'beat','{"done":3,"of":3}',1796430741888818);
CREATE TABLE workflows (
    workflow_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    inputs TEXT,
    result TEXT,
    executor_id TEXT NOT NULL,
    app_version TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    parent_id TEXT,
    queue TEXT,
    priority INTEGER NOT NULL DEFAULT 0,
    dedup_id TEXT,
    recovery_attempts INTEGER NOT NULL DEFAULT 0,
    wake_at INTEGER,
    error TEXT NOT NULL DEFAULT '',
    started_at INTEGER
, trace_context TEXT, forked_from TEXT, fork_position INTEGER, deadline INTEGER, timeout_seconds REAL, generation INTEGER NOT NULL DEFAULT 0, continued_as TEXT, first_inputs TEXT, partition_key TEXT NOT NULL DEFAULT '', attributes TEXT NOT NULL DEFAULT '{}');
INSERT INTO "workflows" VALUES('fx-success','fx.steps','SUCCESS','{"args":[3],"kwargs":{}}','{"value":{"n":3,"doubled":6}}','fixture-engine','fixture-v1',1796430741808758,1796430741865106,NULL,NULL,0,NULL,0,NULL,'',1796430741808758,'00-53694f2c807e7ea5562af731c10a77e1-cf7af1be9efec30d-03',NULL,NULL,1796434341808758,3600.0,0,NULL,NULL,'','{"customer":"c-1","tier":2,"doubled":6,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-beats','fx.beats','SUCCESS','{"args":[3],"kwargs":{}}','{"value":3}','fixture-engine','fixture-v1',1796430741869725,1796430741889469,NULL,NULL,0,NULL,0,NULL,'',1796430741869725,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-error','fx.fails','ERROR','{"args":[5],"kwargs":{}}','{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/interpreter.py\", line 695, in _run\n    yielded = gen.send(value) if ok else gen.throw(value)\n                                         ^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 143, in fails\n    return (yield Step(\"boom\", boom, n, retry=Retry(max_attempts=2, interval=0.01)))\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: boom 5\n"}}','fixture-engine','fixture-v1',1796430741895927,1796430741934359,NULL,NULL,0,NULL,0,NULL,'boom 5',1796430741895927,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-parent','fx.parent','SUCCESS','{"args":[7],"kwargs":{}}','{"value":{"child":{"n":7,"doubled":14},"abandoned":"fx-child-abandoned","sent":true}}','fixture-engine','fixture-v1',1796430741941984,1796430741968112,NULL,NULL,0,NULL,0,NULL,'',1796430741941984,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-child-call-7','fx.steps','SUCCESS','{"args":[7],"kwargs":{}}','{"value":{"n":7,"doubled":14}}','fixture-engine','fixture-v1',1796430741944205,1796430741959096,'fx-parent',NULL,0,NULL,0,NULL,'',1796430741944205,'00-92452e35d1427af9dcdee550b27ae7b3-23b0375dbc329924-03',NULL,NULL,NULL,NULL,0,NULL,NULL,'','{"doubled":14,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-child-abandoned','fx.waits','PENDING','{"args":["release"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430741964052,1796430741964155,'fx-parent',NULL,0,NULL,0,NULL,'',1796430741964052,'00-11e3ae33264598fba51b868f8c5b777a-07ee8ae6f14482f6-03',NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-child-cancelled','fx.waits','CANCELLED','{"args":["never"],"kwargs":{}}','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","args":["cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}','fixture-engine','fixture-v1',1796430741964918,1796430741972567,'fx-parent',NULL,0,NULL,0,NULL,'cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)',1796430741964918,'00-11e3ae33264598fba51b868f8c5b777a-07ee8ae6f14482f6-03',NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-counter','fx.counter','SUCCESS','{"args":[2,2],"kwargs":{}}','{"value":6}','fixture-engine','fixture-v1',1796430741993972,1796430742010503,NULL,NULL,0,NULL,0,NULL,'',1796430742009896,NULL,NULL,NULL,NULL,NULL,2,NULL,'{"args":[0,0],"kwargs":{}}','','{}');
INSERT INTO "workflows" VALUES('fx-counter#0','fx.counter','CONTINUED','{"args":[0,0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430741993972,1796430742008717,NULL,NULL,0,NULL,0,NULL,'',1796430741993972,NULL,NULL,NULL,NULL,NULL,0,'fx-counter',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-counter#1','fx.counter','CONTINUED','{"args":[1,0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742008717,1796430742009896,NULL,NULL,0,NULL,0,NULL,'',1796430742008717,NULL,NULL,NULL,NULL,NULL,1,'fx-counter',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-rounds','fx.rounds','PENDING','{"args":[1],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742012084,1796430742013329,NULL,NULL,0,NULL,0,NULL,'',1796430742013329,NULL,NULL,NULL,NULL,NULL,1,NULL,'{"args":[0],"kwargs":{}}','','{}');
INSERT INTO "workflows" VALUES('fx-rounds#0','fx.rounds','CONTINUED','{"args":[0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742012084,1796430742013329,NULL,NULL,0,NULL,0,NULL,'',1796430742012084,NULL,NULL,NULL,NULL,NULL,0,'fx-rounds',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-fork','fx.steps','SUCCESS','{"args":[3],"kwargs":{}}','{"value":{"n":3,"doubled":6}}','fixture-engine','fixture-v1',1796430742044070,1796430742058345,NULL,NULL,0,NULL,0,NULL,'',1796430742044070,NULL,'fx-success',1,NULL,NULL,0,NULL,NULL,'','{"customer":"c-1","doubled":6,"stage":"done","tier":2}');
INSERT INTO "workflows" VALUES('fx-rewound','fx.steps','SUCCESS','{"args":[4],"kwargs":{}}','{"value":{"n":4,"doubled":8}}','fixture-engine','fixture-v1',1796430742059596,1796430742091931,NULL,NULL,0,NULL,0,NULL,'',1796430742076655,NULL,NULL,NULL,NULL,NULL,1,NULL,'{"args":[4],"kwargs":{}}','','{"doubled":8,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-rewound#0','fx.steps','CONTINUED','{"args":[4],"kwargs":{}}','{"value":{"n":4,"doubled":8}}','fixture-engine','fixture-v1',1796430742059596,1796430742076655,NULL,NULL,0,NULL,0,NULL,'',1796430742059596,NULL,NULL,NULL,NULL,NULL,0,'fx-rewound',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-queue-served','fx.steps','SUCCESS','{"args":[8],"kwargs":{}}','{"value":{"n":8,"doubled":16}}','fixture-engine','fixture-v1',1796430742094810,1796430742107369,NULL,'fx-served',3,NULL,0,NULL,'',1796430742095351,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'k-1','{"customer":"c-2","doubled":16,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-queued-a','fx.steps','ENQUEUED','{"args":[5],"kwargs":{}}',NULL,'','fixture-v1',1796430742107719,1796430742107812,NULL,'fx-waiting',5,'dedup-a',0,NULL,'',NULL,NULL,NULL,NULL,NULL,600.0,0,NULL,NULL,'tenant-a','{"customer":"c-3","tags":["red","blue"]}');
INSERT INTO "workflows" VALUES('fx-queued-b','fx.steps','ENQUEUED','{"args":[6],"kwargs":{}}',NULL,'','fixture-v1',1796430742108123,1796430742108200,NULL,'fx-waiting',1,NULL,0,NULL,'',NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'tenant-b','{}');
INSERT INTO "workflows" VALUES('fx-queued-delayed','fx.steps','ENQUEUED','{"args":[9],"kwargs":{}}',NULL,'','fixture-v1',1796430742110065,1796430742110134,NULL,'fx-waiting',0,NULL,0,2111790742110065,'',NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-queued-cancelled','fx.steps','CANCELLED','{"args":[10],"kwargs":{}}',NULL,'','fixture-v1',1796430742110304,1796430742110669,NULL,'fx-waiting',0,NULL,0,NULL,'fixture: cancelled while queued',NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'tenant-a','{}');
INSERT INTO "workflows" VALUES('fx-terminated','fx.waits','CANCELLED','{"args":["never"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742111284,1796430742148249,NULL,NULL,0,NULL,0,NULL,'fixture: stopped hard',1796430742111284,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-cancelled-handled','fx.tidy','CANCELLED','{"args":[],"kwargs":{}}','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"fixture: asked to stop (a cancel it handled: the workflow raised)","args":["fixture: asked to stop (a cancel it handled: the workflow raised)","fixture: asked to stop"],"traceback":""}}','fixture-engine','fixture-v1',1796430742150631,1796430742179643,NULL,NULL,0,NULL,0,NULL,'fixture: asked to stop (a cancel it handled: the workflow raised)',1796430742150631,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-cancelling','fx.graceful','PENDING','{"args":["stop"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742188818,1796430742188938,NULL,NULL,0,NULL,0,NULL,'',1796430742188818,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-parked','fx.waits','PARKED','{"args":["unpark"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742212100,1796430742212941,NULL,NULL,0,NULL,0,NULL,'fixture: parked by hand',1796430742212100,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-awakeable','fx.awaits','PENDING','{"args":[],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742213261,1796430742213326,NULL,NULL,0,NULL,0,NULL,'',1796430742213261,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-inbox','fx.inbox','PENDING','{"args":[3],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742214593,1796430742214668,NULL,NULL,0,NULL,0,NULL,'',1796430742214593,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{"customer":"c-1"}');
INSERT INTO "workflows" VALUES('schedule:fx-yearly:manual:2026-12-05T00:32:22.237850+00:00','fx.ticked','SUCCESS','{"args":["2026-12-05T00:32:22.237850+00:00"],"kwargs":{}}','{"value":"2026-12-05T00:32:22.237850+00:00"}','fixture-engine','fixture-v1',1796430742247217,1796430742248268,NULL,NULL,0,NULL,0,NULL,'',1796430742247217,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-sleeper','fx.sleeper','PENDING','{"args":[5.0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430742258897,1796430742259189,NULL,NULL,0,NULL,0,1796430747260065,'',1796430742258897,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
CREATE INDEX workflows_by_created ON workflows (created_at, workflow_id);
CREATE INDEX workflows_by_status ON workflows (status, created_at);
CREATE INDEX workflows_by_executor ON workflows (executor_id, app_version, status);
CREATE INDEX workflows_by_parent ON workflows (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX workflows_by_queue ON workflows (queue, status, priority, created_at)
WHERE queue IS NOT NULL;
CREATE INDEX workflows_by_queue_start ON workflows (queue, started_at)
WHERE queue IS NOT NULL;
CREATE INDEX workflows_by_dedup ON workflows (queue, dedup_id)
WHERE dedup_id IS NOT NULL;
CREATE INDEX messages_inbox ON messages (workflow_id, topic, message_id);
CREATE INDEX workflows_by_fork_source ON workflows (forked_from)
WHERE forked_from IS NOT NULL;
CREATE INDEX workflows_by_continued_as ON workflows (continued_as, generation)
WHERE continued_as IS NOT NULL;
CREATE INDEX workflows_by_partition_waiting
ON workflows (queue, partition_key, app_version, priority, created_at, workflow_id)
WHERE status = 'ENQUEUED';
CREATE INDEX workflows_by_partition_running ON workflows (queue, partition_key)
WHERE status = 'PENDING';
CREATE INDEX workflows_by_partition_start ON workflows (queue, partition_key, started_at)
WHERE started_at IS NOT NULL;
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('messages',8);
COMMIT;
