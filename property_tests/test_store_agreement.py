"""Memory, SQLite and PostgreSQL agree: the same random operations, the same answers.

Like hypothesis's own `test_database_agreement`, a state machine applies each
operation to all three stores and asserts they return equal results or raise
the same exception type. MemoryStore is the reference the others are held to.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from conftest import PG_URL, drop_schema, fresh_schema_name
from replaykit.log import ErrorInfo, Failure, Outcome, Record, Status, Value
from replaykit.stores import MemoryStore, SqliteStore
from replaykit.stores.base import (
    ClaimLimits,
    EventWrite,
    Message,
    OutgoingMessage,
    StepHeartbeat,
    Store,
    WorkflowFilter,
    WorkflowRow,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)

IDS = ["a", "b", "c", "ü-🚀"]
TOPICS = ["t", "u"]
EXECUTORS = ["e1", "e2"]
VERSIONS = ["v1", "v2"]
QUEUES = ["q1", "q2"]
KEYS = ["k1", "k2"]
TERMINAL = [Status.SUCCESS, Status.ERROR, Status.CANCELLED]

instants = st.integers(0, 600).map(lambda minutes: T0 + timedelta(minutes=minutes))
maybe_instant = st.none() | instants
# Identifiers are text columns; PostgreSQL text cannot hold NUL, so names avoid it
# (the JSON payloads below do carry it, escaped).
names = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=8)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
error_infos = st.builds(
    ErrorInfo,
    module=st.sampled_from(["builtins", "myapp.errors"]),
    qualname=st.sampled_from(["ValueError", "Outer.Declined"]),
    message=names,
    args=st.lists(json_values, max_size=3),
    traceback=st.sampled_from(["", "Traceback (most recent call last):\n  x\n"]),
)
outcomes: st.SearchStrategy[Outcome] = st.builds(Value, json_values) | st.builds(
    Failure, error_infos
)
maybe_outcome = st.none() | outcomes
run_ids = st.sampled_from([*IDS, *IDS, "nope"])
offsets = st.sampled_from([-2, -1, 0, 0, 0, 0, 0, 1])
executors = st.sampled_from([None, None, None, *EXECUTORS])


def records_at(position: int, outcome: st.SearchStrategy[Outcome | None]) -> Any:
    return st.builds(
        Record,
        position=st.just(position),
        kind=st.sampled_from(["step", "sleep", "recv"]),
        name=names,
        outcome=outcome,
        digest=st.sampled_from(["", "abc123"]),
        call_site=st.sampled_from(["", "wf.py:10"]),
        started_at=maybe_instant,
        completed_at=maybe_instant,
        wake_at=maybe_instant,
        attempts=st.integers(1, 3),
    )


def normalize(value: Any) -> Any:
    """What must agree: drop what each store stamps from its own clock or counter."""
    if isinstance(value, WorkflowRow):
        return attrs.evolve(value, updated_at=None)
    if isinstance(value, Message):
        return ("message", value.workflow_id, value.topic, value.payload)
    if isinstance(value, tuple):
        return tuple(normalize(v) for v in value)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


class StoreAgreement(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="rk-agree-")
        self.schema = fresh_schema_name("agree")
        from replaykit.stores.postgres import PostgresStore

        self.stores: dict[str, Store] = {
            "memory": MemoryStore(),
            "sqlite": SqliteStore(f"{self.folder}/agree.db"),
            "postgres": PostgresStore(PG_URL, schema=self.schema, pool_min=1, pool_max=2),
        }
        self.created = 0  # runs get increasing created_at, so list order is fixed
        # MemoryStore keeps a deleted run's idempotency keys (a reported gap);
        # keys carry the run's incarnation so that case never arises here.
        self.incarnation: Counter[str] = Counter()
        self.consumed: dict[str, list[int]] = {name: [] for name in self.stores}

    def teardown(self) -> None:
        for store in self.stores.values():
            store.close()
        drop_schema(self.schema)
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def reference(self) -> MemoryStore:
        memory = self.stores["memory"]
        assert isinstance(memory, MemoryStore)
        return memory

    def agree(self, what: str, operation: Any) -> Any:
        """Run `operation(store, name)` on every store; all must give the same answer."""
        results: dict[str, Any] = {}
        for name, store in self.stores.items():
            try:
                results[name] = ("returned", normalize(operation(store, name)))
            except Exception as exc:
                results[name] = ("raised", type(exc).__name__)
        expected = results["memory"]
        differing = {name: r for name, r in results.items() if r != expected}
        assert not differing, f"{what}: memory gave {expected!r}, but {differing!r}"
        return expected

    def key(self, workflow_id: str, key: str | None) -> str | None:
        return None if key is None else f"{self.incarnation[workflow_id]}:{key}"

    # -- runs --------------------------------------------------------------------------

    @initialize(
        runs=st.lists(
            st.tuples(
                st.sampled_from([Status.PENDING, Status.PENDING, Status.PENDING, Status.ENQUEUED]),
                st.sampled_from(EXECUTORS),
                st.sampled_from(QUEUES),
            ),
            min_size=2,
            max_size=len(IDS),
        )
    )
    def start_with_runs(self, runs: list[tuple[Status, str, str]]) -> None:
        # Most operations need a run to act on; begin with a few.
        for workflow_id, (status, executor, queue) in zip(IDS, runs, strict=False):
            self.created += 1
            row = WorkflowRow(
                workflow_id,
                "wf",
                status,
                executor_id=executor,
                app_version="v1",
                queue=queue,
                created_at=T0 + timedelta(seconds=self.created),
            )
            self.agree("create_workflow", lambda s, _, row=row: s.create_workflow(row))
        for executor in EXECUTORS:
            # Engines that last beat at T0, so a later take_over finds them dead.
            self.agree("heartbeat", lambda s, _, e=executor: s.heartbeat(e, "v1", T0))

    @rule(
        workflow_id=st.sampled_from(IDS),
        status=st.sampled_from([Status.PENDING, Status.PENDING, *Status]),
        name=st.sampled_from(["wf", "other"]),
        executor=st.sampled_from(EXECUTORS),
        version=st.sampled_from(VERSIONS),
        queue=st.none() | st.sampled_from(QUEUES),
        dedup=st.none() | st.sampled_from(["d1", "d2"]),
        priority=st.integers(-2, 2),
        wake_at=maybe_instant,
        inputs=st.none() | st.fixed_dictionaries({"args": st.lists(json_values, max_size=2)}),
        fork=st.integers(0, 3).flatmap(
            lambda n: st.tuples(*(records_at(i, outcomes) for i in range(n)))
        ),
    )
    def create(
        self,
        workflow_id: str,
        status: Status,
        name: str,
        executor: str,
        version: str,
        queue: str | None,
        dedup: str | None,
        priority: int,
        wake_at: datetime | None,
        inputs: Any,
        fork: tuple[Record, ...],
    ) -> None:
        self.created += 1
        row = WorkflowRow(
            workflow_id,
            name,
            status,
            inputs=inputs,
            executor_id=executor,
            app_version=version,
            created_at=T0 + timedelta(seconds=self.created),
            queue=queue,
            dedup_id=dedup,
            priority=priority,
            wake_at=wake_at,
        )
        self.agree("create_workflow", lambda s, _: s.create_workflow(row, records=fork))

    @rule(workflow_id=st.sampled_from([*IDS, "nope"]))
    def get(self, workflow_id: str) -> None:
        self.agree("get_workflow", lambda s, _: s.get_workflow(workflow_id))

    @rule(workflow_id=st.sampled_from([*IDS, "nope"]))
    def load_log(self, workflow_id: str) -> None:
        self.agree("load_log", lambda s, _: s.load_log(workflow_id))

    @rule(workflow_id=st.sampled_from([*IDS, "nope"]))
    def delete(self, workflow_id: str) -> None:
        self.agree("delete_workflow", lambda s, _: s.delete_workflow(workflow_id))
        self.incarnation[workflow_id] += 1

    @rule(
        status=st.none()
        | st.sampled_from(list(Status))
        | st.lists(st.sampled_from(list(Status)), max_size=3),
        name=st.none() | st.sampled_from(["wf", "other"]),
        executor=st.none() | st.sampled_from(EXECUTORS),
        version=st.none() | st.sampled_from(VERSIONS),
        queue=st.none() | st.sampled_from(QUEUES),
        since=st.none() | st.integers(0, 40),
        until=st.none() | st.integers(0, 40),
        limit=st.none() | st.integers(0, 4),
        offset=st.integers(0, 3),
    )
    def list_workflows(
        self,
        status: Any,
        name: str | None,
        executor: str | None,
        version: str | None,
        queue: str | None,
        since: int | None,
        until: int | None,
        limit: int | None,
        offset: int,
    ) -> None:
        where = WorkflowFilter(
            status=status,
            name=name,
            executor_id=executor,
            app_version=version,
            queue=queue,
            since=None if since is None else T0 + timedelta(seconds=since),
            until=None if until is None else T0 + timedelta(seconds=until),
            limit=limit,
            offset=offset,
        )
        self.agree("list_workflows", lambda s, _: s.list_workflows(where))

    # -- recording ---------------------------------------------------------------------

    # Several record rules, so writes make up a good share of the steps, each
    # weighted towards writes that succeed so that logs, inboxes and events fill up.
    @rule(
        workflow_id=run_ids,
        offset=offsets,
        data=st.data(),
        executor=executors,
        wake_at=maybe_instant,
    )
    def record(
        self,
        workflow_id: str,
        offset: int,
        data: st.DataObject,
        executor: str | None,
        wake_at: datetime | None,
    ) -> None:
        self.write(workflow_id, offset, data, executor=executor, wake_at=wake_at)

    @rule(
        workflow_id=run_ids,
        offset=offsets,
        data=st.data(),
        consume=st.sampled_from(["oldest", "oldest", "stale", "both"]),
        topic=st.sampled_from(TOPICS),
    )
    def record_consuming(
        self, workflow_id: str, offset: int, data: st.DataObject, consume: str, topic: str
    ) -> None:
        self.write(workflow_id, offset, data, consume=consume, topic=topic)

    @rule(
        workflow_id=run_ids,
        offset=offsets,
        data=st.data(),
        to=st.sampled_from([*IDS, "nope"]),
        topic=st.sampled_from(TOPICS),
        payload=json_values,
        key=st.none() | st.sampled_from(KEYS),
        consume=st.sampled_from([None, None, "oldest"]),
    )
    def record_sending(
        self,
        workflow_id: str,
        offset: int,
        data: st.DataObject,
        to: str,
        topic: str,
        payload: Any,
        key: str | None,
        consume: str | None,
    ) -> None:
        outgoing = OutgoingMessage(to, topic, payload, self.key(to, key))
        if consume is not None and self.reference.get_workflow(to) is None:
            # MemoryStore consumes before it finds the receiver missing (a
            # reported gap): keep the two apart.
            consume = None
        self.write(workflow_id, offset, data, send=outgoing, consume=consume, topic=topic)

    @rule(
        workflow_id=run_ids,
        offset=offsets,
        data=st.data(),
        key=st.sampled_from(KEYS),
        value=json_values,
    )
    def record_setting_event(
        self, workflow_id: str, offset: int, data: st.DataObject, key: str, value: Any
    ) -> None:
        self.write(workflow_id, offset, data, event=EventWrite(key, value))

    def write(
        self,
        workflow_id: str,
        offset: int,
        data: st.DataObject,
        *,
        executor: str | None = None,
        consume: str | None = None,
        topic: str = "t",
        send: OutgoingMessage | None = None,
        event: EventWrite | None = None,
        wake_at: datetime | None = None,
    ) -> None:
        position = max(len(self.reference.load_log(workflow_id)) + offset, 0)
        record = data.draw(records_at(position, maybe_outcome), label="record")
        chosen = self.choose_messages(workflow_id, topic, consume)
        if chosen is None:
            return

        def write(store: Store, name: str) -> Record:
            ids = chosen[name]
            got = store.record(
                workflow_id,
                record,
                executor_id=executor,
                consume=ids if consume is not None else None,
                send=send,
                event=event,
                wake_at=wake_at,
            )
            if got == record and ids:
                self.consumed[name].extend(ids)
            return got

        self.agree("record", write)

    def choose_messages(
        self, workflow_id: str, topic: str, consume: str | None
    ) -> dict[str, list[int]] | None:
        """Each store's own message ids to consume (ids are per store), or None to skip."""
        chosen: dict[str, list[int]] = {name: [] for name in self.stores}
        if consume is None:
            return chosen
        for name, store in self.stores.items():
            if consume in ("oldest", "both"):
                message = store.peek_message(workflow_id, topic)
                if message is not None:
                    chosen[name].append(message.message_id)
            if consume in ("stale", "both") and self.consumed[name]:
                chosen[name].append(self.consumed[name][-1])
        if len({len(ids) for ids in chosen.values()}) != 1:
            # The stores disagree on the inbox; the peek rule will say how.
            self.agree("peek before consume", lambda s, _: s.peek_message(workflow_id, topic))
            return None
        return chosen

    @rule(
        workflow_id=st.sampled_from([*IDS, "nope"]),
        topic=st.sampled_from(TOPICS),
        payload=json_values,
        key=st.none() | st.sampled_from(KEYS),
    )
    def send_message(self, workflow_id: str, topic: str, payload: Any, key: str | None) -> None:
        idempotency_key = self.key(workflow_id, key)
        self.agree(
            "send_message",
            lambda s, _: s.send_message(
                workflow_id, topic, payload, idempotency_key=idempotency_key
            ),
        )

    @rule(workflow_id=st.sampled_from([*IDS, "nope"]), topic=st.sampled_from(TOPICS))
    def peek(self, workflow_id: str, topic: str) -> None:
        self.agree("peek_message", lambda s, _: s.peek_message(workflow_id, topic))

    @rule(workflow_id=st.sampled_from([*IDS, "nope"]), key=st.sampled_from(KEYS))
    def get_event(self, workflow_id: str, key: str) -> None:
        self.agree("get_event", lambda s, _: s.get_event(workflow_id, key))

    # -- step heartbeats ---------------------------------------------------------------

    @rule(
        workflow_id=run_ids,
        position=st.integers(0, 2),
        child_path=st.sampled_from([(), (), (0,), (1,), (1, 0)]),
        attempt=st.integers(1, 3),
        details=json_values,
        at=instants,
        executor=executors,
    )
    def beat_step(
        self,
        workflow_id: str,
        position: int,
        child_path: tuple[int, ...],
        attempt: int,
        details: Any,
        at: datetime,
        executor: str | None,
    ) -> None:
        beat = StepHeartbeat(position, f"s{position}", attempt, at, details, child_path)
        self.agree(
            "record_step_heartbeat",
            lambda s, _: s.record_step_heartbeat(workflow_id, beat, executor_id=executor),
        )

    @rule(workflow_id=st.sampled_from([*IDS, "nope"]))
    def step_heartbeats(self, workflow_id: str) -> None:
        self.agree("get_step_heartbeats", lambda s, _: s.get_step_heartbeats(workflow_id))

    # -- status ------------------------------------------------------------------------

    @rule(
        workflow_id=st.sampled_from([*IDS, "nope"]),
        status=st.sampled_from(TERMINAL),
        result=maybe_outcome,
        error=names,
        executor=st.none() | st.sampled_from(EXECUTORS),
    )
    def finish(
        self,
        workflow_id: str,
        status: Status,
        result: Outcome | None,
        error: str,
        executor: str | None,
    ) -> None:
        self.agree(
            "finish_workflow",
            lambda s, _: s.finish_workflow(
                workflow_id, status, result, error=error, executor_id=executor
            ),
        )

    @rule(
        workflow_id=st.sampled_from([*IDS, "nope"]),
        status=st.sampled_from(list(Status)),
        only_from=st.none() | st.lists(st.sampled_from(list(Status)), max_size=3),
        error=names,
        executor=st.none() | st.sampled_from(EXECUTORS),
        reset=st.booleans(),
    )
    def set_status(
        self,
        workflow_id: str,
        status: Status,
        only_from: list[Status] | None,
        error: str,
        executor: str | None,
        reset: bool,
    ) -> None:
        self.agree(
            "set_status",
            lambda s, _: s.set_status(
                workflow_id,
                status,
                only_from=only_from,
                error=error,
                executor_id=executor,
                reset_recovery=reset,
            ),
        )

    @rule(workflow_id=st.sampled_from([*IDS, "nope"]))
    def bump_recovery(self, workflow_id: str) -> None:
        self.agree("bump_recovery", lambda s, _: s.bump_recovery(workflow_id))

    # -- queues ------------------------------------------------------------------------

    @rule(
        queue=st.sampled_from(QUEUES),
        executor=st.sampled_from(EXECUTORS),
        version=st.sampled_from(VERSIONS),
        limit=st.integers(0, 3),
        concurrency=st.none() | st.integers(0, 3),
        rate=st.none() | st.tuples(st.integers(0, 3), st.sampled_from([60.0, 3600.0])),
        now=instants,
    )
    def claim(
        self,
        queue: str,
        executor: str,
        version: str,
        limit: int,
        concurrency: int | None,
        rate: tuple[int, float] | None,
        now: datetime,
    ) -> None:
        limits = ClaimLimits(limit, concurrency, rate)
        self.agree(
            "claim",
            lambda s, _: s.claim(
                queue, executor_id=executor, app_version=version, limits=limits, now=now
            ),
        )

    @rule(executor=st.sampled_from(EXECUTORS), version=st.sampled_from(VERSIONS), at=instants)
    def heartbeat(self, executor: str, version: str, at: datetime) -> None:
        self.agree("heartbeat", lambda s, _: s.heartbeat(executor, version, at))

    @rule(
        executor=st.sampled_from(EXECUTORS),
        version=st.sampled_from(VERSIONS),
        # Whole minutes apart from the heartbeats, so no lease ends exactly at `now`.
        lease=st.sampled_from([90.0, 1800.0]),
        now=instants,
    )
    def take_over(self, executor: str, version: str, lease: float, now: datetime) -> None:
        self.agree(
            "take_over",
            lambda s, _: sorted(
                s.take_over(executor_id=executor, app_version=version, lease_seconds=lease, now=now)
            ),
        )

    @rule(executor=st.sampled_from(EXECUTORS))
    def release(self, executor: str) -> None:
        self.agree("release", lambda s, _: sorted(s.release(executor)))

    @invariant()
    def same_runs_and_logs(self) -> None:
        self.agree("every run", lambda s, _: s.list_workflows(WorkflowFilter()))
        self.agree("every log", lambda s, _: [s.load_log(i) for i in IDS])


def test_stores_agree(pg_url: str) -> None:
    # The loaded profile sets max_examples (ci: 60); the step count keeps a run short.
    # Capped at 100 examples so a `dev` profile run stays under a minute too.
    run_state_machine_as_test(
        StoreAgreement,
        settings=settings(
            settings.default,
            max_examples=min(settings.default.max_examples, 100),
            stateful_step_count=25,
            deadline=None,
        ),
    )
