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
INSERT INTO "cancel_requests" VALUES('fx-cancelled-handled','fixture: asked to stop',1796430161341425,1796430101341425);
INSERT INTO "cancel_requests" VALUES('fx-cancelling','fixture: cancelled with a week''s grace',1797034901363532,1796430101363532);
INSERT INTO "cancel_requests" VALUES('fx-child-cancelled','cancelled with its parent ''fx-parent'': it ended SUCCESS',1796430161198338,1796430101198338);
CREATE TABLE events (
    workflow_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (workflow_id, key)
) WITHOUT ROWID;
INSERT INTO "events" VALUES('fx-awakeable','token','"0.0.07e4157525490f2006ba6cfdba063ab9@fx-awakeable"');
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
INSERT INTO "heartbeats" VALUES('fixture-engine','fixture-v1',1796430101097154,'{"workflows":["fx.awaits","fx.beats","fx.counter","fx.fails","fx.graceful","fx.inbox","fx.parent","fx.rounds","fx.sleeper","fx.steps","fx.ticked","fx.tidy","fx.waits","replaykit.debouncer"],"queues":["fx-served"],"more_workflows":0,"more_queues":0}');
CREATE TABLE messages (
    message_id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at INTEGER NOT NULL
, trace_context TEXT);
INSERT INTO "messages" VALUES(1,'fx-success','late','{"late":1}',1796430101114564,NULL);
INSERT INTO "messages" VALUES(2,'fx-success','late','{"late":2}',1796430101114747,NULL);
INSERT INTO "messages" VALUES(3,'fx-child-abandoned','hello','{"from":"parent"}',1796430101193246,NULL);
INSERT INTO "messages" VALUES(5,'fx-rounds','extra','"x-1"',1796430101223220,NULL);
INSERT INTO "messages" VALUES(6,'fx-inbox','items','{"item":1}',1796430101448458,NULL);
INSERT INTO "messages" VALUES(7,'fx-inbox','items','{"item":2}',1796430101448900,NULL);
INSERT INTO "messages" VALUES(8,'fx-inbox','note','"kept"',1796430101449536,NULL);
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
INSERT INTO "records" VALUES('fx-awakeable',0,'awakeable','approval','{"value":"0.0.07e4157525490f2006ba6cfdba063ab9@fx-awakeable"}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:228',1796430101407288,1796430101407288,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-awakeable',1,'set_event','token','{"value":null}','ce3580f90d662918','/work/wt/fixtures/tests/data/make_store_fixtures.py:229',1796430101407458,1796430101407458,NULL,1,'token','"0.0.07e4157525490f2006ba6cfdba063ab9@fx-awakeable"');
INSERT INTO "records" VALUES('fx-awakeable',2,'await','0.0.07e4157525490f2006ba6cfdba063ab9',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:230',1796430101407648,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-beats',0,'step','beat','{"value":3}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:146',1796430101115409,1796430101116167,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelled-handled',0,'recv','never','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","args":["workflow ''fx.tidy'' (id ''fx-cancelled-handled'') was cancelled at position 0 (Recv): fixture: asked to stop","fixture: asked to stop"],"traceback":""}}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:188',1796430101321192,1796430101341881,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelled-handled',1,'step','cleanup','{"value":8}','84cfb04a9778652f','/work/wt/fixtures/tests/data/make_store_fixtures.py:190',1796430101342167,1796430101342214,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelling',0,'recv','stop','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","args":["workflow ''fx.graceful'' (id ''fx-cancelling'') was cancelled at position 0 (Recv): fixture: cancelled with a week''s grace","fixture: cancelled with a week''s grace"],"traceback":""}}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:177',1796430101343264,1796430101364039,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelling',1,'step','cleanup','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:179',1796430101364320,1796430101364366,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-cancelling',2,'set_event','cleaning','{"value":null}','b5bea41b6c623f7c','/work/wt/fixtures/tests/data/make_store_fixtures.py:180',1796430101364533,1796430101364533,NULL,1,'cleaning','true');
INSERT INTO "records" VALUES('fx-cancelling',3,'recv','cleanup-done',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:181',1796430101365056,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-abandoned',0,'recv','release',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:170',1796430101191623,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-call-7',0,'step','double','{"value":14}','731abed27e7a8f49','/work/wt/fixtures/tests/data/make_store_fixtures.py:131',1796430101176644,1796430101176738,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-call-7',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:132',1796430101177056,1796430101187415,1796430101187056,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-call-7',2,'set_event','progress','{"value":null}','2e2fecd61ebb1d3c','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430101187891,1796430101187891,NULL,1,'progress','{"doubled":14}');
INSERT INTO "records" VALUES('fx-child-call-7',3,'set_attributes','doubled,stage','{"value":null}','613c84dfd6804cc8','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430101188254,1796430101188254,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-child-cancelled',0,'recv','never','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","args":["workflow ''fx.waits'' (id ''fx-child-cancelled'') was cancelled at position 0 (Recv): cancelled with its parent ''fx-parent'': it ended SUCCESS","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:170',1796430101193359,1796430101199048,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-counter',0,'step','add','{"value":4}','1c54af33ee7129c4','/work/wt/fixtures/tests/data/make_store_fixtures.py:207',1796430101220749,1796430101220778,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-counter#0',0,'step','add','{"value":0}','c767f2c4951965da','/work/wt/fixtures/tests/data/make_store_fixtures.py:207',1796430101219143,1796430101219215,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-counter#1',0,'step','add','{"value":2}','27b6c79168db2da0','/work/wt/fixtures/tests/data/make_store_fixtures.py:207',1796430101220112,1796430101220158,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-error',0,'step','double','{"value":10}','b02d7c0cf97e5a46','/work/wt/fixtures/tests/data/make_store_fixtures.py:140',1796430101117455,1796430101117492,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-error',1,'step','boom','{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/runtime/attempts.py\", line 157, in attempts\n    value = yield Attempt(context, beat)\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/steps.py\", line 164, in run_attempts\n    reply = self.bodies.call(\n            ^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/replaykit/runtime/bodies.py\", line 263, in call\n    return fn(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 119, in boom\n    raise ValueError(f\"boom {n}\")\nValueError: boom 5\n"}}','b02d7c0cf97e5a46','/work/wt/fixtures/tests/data/make_store_fixtures.py:141',1796430101117677,1796430101129030,1796430101127712,2,NULL,NULL);
INSERT INTO "records" VALUES('fx-fork',0,'step','double','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:131',1796430101101697,1796430101101761,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-fork',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:132',1796430101248767,1796430101259095,1796430101258767,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-fork',2,'set_event','progress','{"value":null}','e0f69a4fbfeb5ce5','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430101259520,1796430101259520,NULL,1,'progress','{"doubled":6}');
INSERT INTO "records" VALUES('fx-fork',3,'set_attributes','doubled,stage','{"value":null}','fb8e2be398c1d087','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430101259877,1796430101259877,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-inbox',0,'step','prepare','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:152',1796430101428294,1796430101428342,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-inbox',1,'set_event','ready','{"value":null}','e7f6c011776e8db7','/work/wt/fixtures/tests/data/make_store_fixtures.py:153',1796430101428504,1796430101428504,NULL,1,'ready','6');
INSERT INTO "records" VALUES('fx-inbox',2,'recv','go',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:154',1796430101428687,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',0,'call','fx.steps','{"value":{"n":7,"doubled":14}}','030e246889f09454','/work/wt/fixtures/tests/data/make_store_fixtures.py:196',1796430101139415,1796430101189308,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',1,'start','fx.waits','{"value":"fx-child-abandoned"}','9e9e6094cadfc0ef','/work/wt/fixtures/tests/data/make_store_fixtures.py:197',1796430101191302,1796430101191302,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',2,'start','fx.waits','{"value":"fx-child-cancelled"}','2985a5c825b0171b','/work/wt/fixtures/tests/data/make_store_fixtures.py:200',1796430101192616,1796430101192616,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parent',3,'send','hello','{"value":true}','8e0c8c69a91fdc19','/work/wt/fixtures/tests/data/make_store_fixtures.py:201',1796430101193151,1796430101193151,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-parked',0,'recv','unpark',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:170',1796430101386174,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-queue-served',0,'step','double','{"value":16}','4bb06ec9eaaaa34c','/work/wt/fixtures/tests/data/make_store_fixtures.py:131',1796430101286066,1796430101286111,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-queue-served',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:132',1796430101286248,1796430101296491,1796430101296248,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-queue-served',2,'set_event','progress','{"value":null}','a916c1104570b127','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430101296821,1796430101296821,NULL,1,'progress','{"doubled":16}');
INSERT INTO "records" VALUES('fx-queue-served',3,'set_attributes','doubled,stage','{"value":null}','493109fe51353115','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430101297133,1796430101297133,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound',0,'step','double','{"value":8}','84cfb04a9778652f','/work/wt/fixtures/tests/data/make_store_fixtures.py:131',1796430101260835,1796430101260880,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:132',1796430101273524,1796430101283732,1796430101283524,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound',2,'set_event','progress','{"value":null}','7217314d6b71e344','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430101284073,1796430101284073,NULL,1,'progress','{"doubled":8}');
INSERT INTO "records" VALUES('fx-rewound',3,'set_attributes','doubled,stage','{"value":null}','a5c5f9f8bed01e5b','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430101284329,1796430101284329,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound#0',0,'step','double','{"value":8}','84cfb04a9778652f','/work/wt/fixtures/tests/data/make_store_fixtures.py:131',1796430101260835,1796430101260880,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound#0',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:132',1796430101261053,1796430101271295,1796430101271053,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rewound#0',2,'set_event','progress','{"value":null}','7217314d6b71e344','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430101271612,1796430101271612,NULL,1,'progress','{"doubled":8}');
INSERT INTO "records" VALUES('fx-rewound#0',3,'set_attributes','doubled,stage','{"value":null}','a5c5f9f8bed01e5b','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430101271909,1796430101271909,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rounds',0,'set_event','generation','{"value":null}','6b86b273ff34fce1','/work/wt/fixtures/tests/data/make_store_fixtures.py:220',1796430101222850,1796430101222850,NULL,1,'generation','1');
INSERT INTO "records" VALUES('fx-rounds',1,'recv','go',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:221',1796430101223149,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-rounds#0',0,'recv','tick','{"value":"t-1"}','74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:218',1796430101221896,1796430101222055,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-sleeper',0,'step','before','{"value":2}','27b6c79168db2da0','/work/wt/fixtures/tests/data/make_store_fixtures.py:163',1796430101494188,1796430101494238,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-sleeper',1,'sleep','sleep',NULL,'a19a1584344c1f37','/work/wt/fixtures/tests/data/make_store_fixtures.py:164',1796430101494419,NULL,1796430106494419,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-success',0,'step','double','{"value":6}','59609ab39ff8c2f0','/work/wt/fixtures/tests/data/make_store_fixtures.py:131',1796430101101697,1796430101101761,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-success',1,'sleep','sleep','{"value":null}','312b95ee5a344d2f','/work/wt/fixtures/tests/data/make_store_fixtures.py:132',1796430101102213,1796430101112432,1796430101112213,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-success',2,'set_event','progress','{"value":null}','e0f69a4fbfeb5ce5','/work/wt/fixtures/tests/data/make_store_fixtures.py:133',1796430101112806,1796430101112806,NULL,1,'progress','{"doubled":6}');
INSERT INTO "records" VALUES('fx-success',3,'set_attributes','doubled,stage','{"value":null}','fb8e2be398c1d087','/work/wt/fixtures/tests/data/make_store_fixtures.py:134',1796430101113226,1796430101113226,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('fx-terminated',0,'recv','never',NULL,'74234e98afe7498f','/work/wt/fixtures/tests/data/make_store_fixtures.py:170',1796430101300013,NULL,NULL,1,NULL,NULL);
INSERT INTO "records" VALUES('schedule:fx-yearly:manual:2026-12-05T00:21:41.450228+00:00',0,'step','tick','{"value":"2026-12-05T00:21:41.450228+00:00"}','5b8fd20a8f51591f','/work/wt/fixtures/tests/data/make_store_fixtures.py:235',1796430101479421,1796430101479475,NULL,1,NULL,NULL);
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
INSERT INTO "schedules" VALUES('fx-nightly','fx.ticked','30 3 * * *','Europe/Berlin','fx-served',0,1,1796430101528381,1796430101528381,NULL,NULL);
INSERT INTO "schedules" VALUES('fx-yearly','fx.ticked','0 0 1 1 *',NULL,NULL,0,0,1796430101528540,NULL,1577836800000000,1654041600000000);
CREATE TABLE send_keys (
    workflow_id TEXT NOT NULL,
    key TEXT NOT NULL, call_id TEXT,
    PRIMARY KEY (workflow_id, key)
) WITHOUT ROWID;
INSERT INTO "send_keys" VALUES('fx-child-abandoned','parent-hello',NULL);
INSERT INTO "send_keys" VALUES('fx-inbox','item-1','dc2f915d744845fbb25a4fa71f478c72');
INSERT INTO "send_keys" VALUES('fx-inbox','replaykit-send:3f619df7d1b3430498e1a118551d3a60','3f619df7d1b3430498e1a118551d3a60');
INSERT INTO "send_keys" VALUES('fx-inbox','replaykit-send:820004a38c3346e8a9a44e0dd52205bf','820004a38c3346e8a9a44e0dd52205bf');
INSERT INTO "send_keys" VALUES('fx-rounds','replaykit-send:a2c9f712a4de4f02b279f9cc541d6d86','a2c9f712a4de4f02b279f9cc541d6d86');
INSERT INTO "send_keys" VALUES('fx-rounds','replaykit-send:e6e361f352334e37a911d35c76a463d1','e6e361f352334e37a911d35c76a463d1');
INSERT INTO "send_keys" VALUES('fx-success','late-1','bcbb7b13097342cfa5d83be5e90fa7d0');
INSERT INTO "send_keys" VALUES('fx-success','replaykit-send:23b94c1aef2742eba11a29ccd01ce5b0','23b94c1aef2742eba11a29ccd01ce5b0');
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
INSERT INTO "step_heartbeats" VALUES('fx-beats',0,'',0,1,'beat','{"done":3,"of":3}',1796430101115951);
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
INSERT INTO "workflows" VALUES('fx-success','fx.steps','SUCCESS','{"args":[3],"kwargs":{}}','{"value":{"n":3,"doubled":6}}','fixture-engine','fixture-v1',1796430101099577,1796430101113433,NULL,NULL,0,NULL,0,NULL,'',1796430101099577,NULL,NULL,NULL,1796433701099577,3600.0,0,NULL,NULL,'','{"customer":"c-1","tier":2,"doubled":6,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-beats','fx.beats','SUCCESS','{"args":[3],"kwargs":{}}','{"value":3}','fixture-engine','fixture-v1',1796430101114827,1796430101116305,NULL,NULL,0,NULL,0,NULL,'',1796430101114827,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-error','fx.fails','ERROR','{"args":[5],"kwargs":{}}','{"error":{"module":"builtins","qualname":"ValueError","message":"boom 5","args":["boom 5"],"traceback":"Traceback (most recent call last):\n  File \"/work/wt/fixtures/replaykit/interpreter.py\", line 695, in _run\n    yielded = gen.send(value) if ok else gen.throw(value)\n                                         ^^^^^^^^^^^^^^^^\n  File \"/work/wt/fixtures/tests/data/make_store_fixtures.py\", line 141, in fails\n    return (yield Step(\"boom\", boom, n, retry=Retry(max_attempts=2, interval=0.01)))\n            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: boom 5\n"}}','fixture-engine','fixture-v1',1796430101116841,1796430101130037,NULL,NULL,0,NULL,0,NULL,'boom 5',1796430101116841,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-parent','fx.parent','SUCCESS','{"args":[7],"kwargs":{}}','{"value":{"child":{"n":7,"doubled":14},"abandoned":"fx-child-abandoned","sent":true}}','fixture-engine','fixture-v1',1796430101138359,1796430101196228,NULL,NULL,0,NULL,0,NULL,'',1796430101138359,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-child-call-7','fx.steps','SUCCESS','{"args":[7],"kwargs":{}}','{"value":{"n":7,"doubled":14}}','fixture-engine','fixture-v1',1796430101139066,1796430101188433,'fx-parent',NULL,0,NULL,0,NULL,'',1796430101139066,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{"doubled":14,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-child-abandoned','fx.waits','PENDING','{"args":["release"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101189664,1796430101189747,'fx-parent',NULL,0,NULL,0,NULL,'',1796430101189664,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-child-cancelled','fx.waits','CANCELLED','{"args":["never"],"kwargs":{}}','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","args":["cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)","cancelled with its parent ''fx-parent'': it ended SUCCESS"],"traceback":""}}','fixture-engine','fixture-v1',1796430101192369,1796430101199432,'fx-parent',NULL,0,NULL,0,NULL,'cancelled with its parent ''fx-parent'': it ended SUCCESS (a cancel it handled: the workflow raised)',1796430101192369,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-counter','fx.counter','SUCCESS','{"args":[2,2],"kwargs":{}}','{"value":6}','fixture-engine','fixture-v1',1796430101218386,1796430101220839,NULL,NULL,0,NULL,0,NULL,'',1796430101220352,NULL,NULL,NULL,NULL,NULL,2,NULL,'{"args":[0,0],"kwargs":{}}','','{}');
INSERT INTO "workflows" VALUES('fx-counter#0','fx.counter','CONTINUED','{"args":[0,0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101218386,1796430101219444,NULL,NULL,0,NULL,0,NULL,'',1796430101218386,NULL,NULL,NULL,NULL,NULL,0,'fx-counter',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-counter#1','fx.counter','CONTINUED','{"args":[1,0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101219444,1796430101220352,NULL,NULL,0,NULL,0,NULL,'',1796430101219444,NULL,NULL,NULL,NULL,NULL,1,'fx-counter',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-rounds','fx.rounds','PENDING','{"args":[1],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101221284,1796430101222412,NULL,NULL,0,NULL,0,NULL,'',1796430101222412,NULL,NULL,NULL,NULL,NULL,1,NULL,'{"args":[0],"kwargs":{}}','','{}');
INSERT INTO "workflows" VALUES('fx-rounds#0','fx.rounds','CONTINUED','{"args":[0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101221284,1796430101222412,NULL,NULL,0,NULL,0,NULL,'',1796430101221284,NULL,NULL,NULL,NULL,NULL,0,'fx-rounds',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-fork','fx.steps','SUCCESS','{"args":[3],"kwargs":{}}','{"value":{"n":3,"doubled":6}}','fixture-engine','fixture-v1',1796430101243826,1796430101260079,NULL,NULL,0,NULL,0,NULL,'',1796430101243826,NULL,'fx-success',1,NULL,NULL,0,NULL,NULL,'','{"customer":"c-1","doubled":6,"stage":"done","tier":2}');
INSERT INTO "workflows" VALUES('fx-rewound','fx.steps','SUCCESS','{"args":[4],"kwargs":{}}','{"value":{"n":4,"doubled":8}}','fixture-engine','fixture-v1',1796430101260463,1796430101284487,NULL,NULL,0,NULL,0,NULL,'',1796430101272418,NULL,NULL,NULL,NULL,NULL,1,NULL,'{"args":[4],"kwargs":{}}','','{"doubled":8,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-rewound#0','fx.steps','CONTINUED','{"args":[4],"kwargs":{}}','{"value":{"n":4,"doubled":8}}','fixture-engine','fixture-v1',1796430101260463,1796430101272418,NULL,NULL,0,NULL,0,NULL,'',1796430101260463,NULL,NULL,NULL,NULL,NULL,0,'fx-rewound',NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-queue-served','fx.steps','SUCCESS','{"args":[8],"kwargs":{}}','{"value":{"n":8,"doubled":16}}','fixture-engine','fixture-v1',1796430101284849,1796430101297288,NULL,'fx-served',3,NULL,0,NULL,'',1796430101285261,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'k-1','{"customer":"c-2","doubled":16,"stage":"done"}');
INSERT INTO "workflows" VALUES('fx-queued-a','fx.steps','ENQUEUED','{"args":[5],"kwargs":{}}',NULL,'','fixture-v1',1796430101297655,1796430101297741,NULL,'fx-waiting',5,'dedup-a',0,NULL,'',NULL,NULL,NULL,NULL,NULL,600.0,0,NULL,NULL,'tenant-a','{"customer":"c-3","tags":["red","blue"]}');
INSERT INTO "workflows" VALUES('fx-queued-b','fx.steps','ENQUEUED','{"args":[6],"kwargs":{}}',NULL,'','fixture-v1',1796430101298063,1796430101298117,NULL,'fx-waiting',1,NULL,0,NULL,'',NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'tenant-b','{}');
INSERT INTO "workflows" VALUES('fx-queued-delayed','fx.steps','ENQUEUED','{"args":[9],"kwargs":{}}',NULL,'','fixture-v1',1796430101298281,1796430101298333,NULL,'fx-waiting',0,NULL,0,2111790101298281,'',NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-queued-cancelled','fx.steps','CANCELLED','{"args":[10],"kwargs":{}}',NULL,'','fixture-v1',1796430101298473,1796430101298821,NULL,'fx-waiting',0,NULL,0,NULL,'fixture: cancelled while queued',NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'tenant-a','{}');
INSERT INTO "workflows" VALUES('fx-terminated','fx.waits','CANCELLED','{"args":["never"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101299599,1796430101320300,NULL,NULL,0,NULL,0,NULL,'fixture: stopped hard',1796430101299599,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-cancelled-handled','fx.tidy','CANCELLED','{"args":[],"kwargs":{}}','{"error":{"module":"replaykit.errors","qualname":"Cancelled","message":"fixture: asked to stop (a cancel it handled: the workflow raised)","args":["fixture: asked to stop (a cancel it handled: the workflow raised)","fixture: asked to stop"],"traceback":""}}','fixture-engine','fixture-v1',1796430101320668,1796430101342300,NULL,NULL,0,NULL,0,NULL,'fixture: asked to stop (a cancel it handled: the workflow raised)',1796430101320668,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-cancelling','fx.graceful','PENDING','{"args":["stop"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101342744,1796430101342815,NULL,NULL,0,NULL,0,NULL,'',1796430101342744,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-parked','fx.waits','PARKED','{"args":["unpark"],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101385611,1796430101406254,NULL,NULL,0,NULL,0,NULL,'fixture: parked by hand',1796430101385611,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-awakeable','fx.awaits','PENDING','{"args":[],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101406582,1796430101406679,NULL,NULL,0,NULL,0,NULL,'',1796430101406582,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-inbox','fx.inbox','PENDING','{"args":[3],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101427351,1796430101427461,NULL,NULL,0,NULL,0,NULL,'',1796430101427351,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{"customer":"c-1"}');
INSERT INTO "workflows" VALUES('schedule:fx-yearly:manual:2026-12-05T00:21:41.450228+00:00','fx.ticked','SUCCESS','{"args":["2026-12-05T00:21:41.450228+00:00"],"kwargs":{}}','{"value":"2026-12-05T00:21:41.450228+00:00"}','fixture-engine','fixture-v1',1796430101478607,1796430101479548,NULL,NULL,0,NULL,0,NULL,'',1796430101478607,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
INSERT INTO "workflows" VALUES('fx-sleeper','fx.sleeper','PENDING','{"args":[5.0],"kwargs":{}}',NULL,'fixture-engine','fixture-v1',1796430101493333,1796430101493632,NULL,NULL,0,NULL,0,1796430106494419,'',1796430101493333,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,'','{}');
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
