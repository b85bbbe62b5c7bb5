"""Cancels, closes and evictions at every point of a run never run a step body twice.

A step's effect happens, then its record commits. Whatever stops a run in between —
a cancel, a graceful close of its engine, an eviction from the warm cache — must let
that record land, so that the resume (or the next engine's recovery, or the replay)
goes on after the step instead of running its body again. Only a crash may run a
body twice: its record was never written.

Generated programs are sequences of steps (sync, and async ones on the engine's
loop), with message gates (`Recv`) and short sleeps between some of them. For every
step one interruption point and one action are drawn:

- points: `before` (the run waits at a gate just before the step: it has suspended
  after the previous commit), `during` (the body's side effect is done, the body
  still runs), `returned` (the body returned; its record is on its way to the store,
  not yet committed), `committed` (the store has just committed it);
- actions: `cancel` (a `terminate`, the hard stop, then `resume` once the run is
  quiet), `cancel-resume` (both at once, while what the stop stopped may still be
  under way), `close` (a patient
  `Engine.close()` from another thread; a new engine on the same store recovers the
  run), `evict` (drop it from the warm cache and let its next suspension go cold, so
  that it is rebuilt by replay), or nothing.

The points after the body are reached through the real store, whose record-writing
methods call the test first (`returned`) and after (`committed`) — the same seam
`replaykit.testing`'s journal store crashes at. Each run is driven until it finishes;
then every step body has run exactly once and the result is the program's.

The contrast: a crash at the `returned` point (the record is lost with its process)
may run that body twice, and only that one, at most twice.

One path found a bug, fixed since: a cancel while an ordinary *async* body ran
cancelled its task, so nothing was recorded and the resume ran the body again. It is
in the main property now, and a second property puts it in every program it draws
(tests/test_cancel_window.py has the plain case).

Bounded in CI (the `ci` profile), deeper by hand:
`HYPOTHESIS_PROFILE=deep python -m pytest property_tests/test_cancel_points.py`.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import PG_URL, drop_schema, fresh_schema_name, require_postgres
from replaykit import Engine, MemoryStore, Recv, Sleep, Status, Step, workflow
from replaykit.errors import ControlSignal
from replaykit.log import Record
from replaykit.stores import open_store
from replaykit.stores.base import FinishWrite, RecordWrite, Store

POINTS = ("before", "during", "returned", "committed")
ACTIONS = ("nothing", "cancel", "cancel-resume", "close", "evict")
WAIT = 30.0  # seconds a run may take to settle before the example fails, saying where

# The examples each store kind runs: the loaded profile's, scaled so that a `ci` run
# of the three kinds stays within about a minute on two cores (an example restarts
# engines, and PostgreSQL's cost most).
_BUDGET = {"memory": 1.0, "sqlite": 1.0, "postgres": 0.5}


def _examples(kind: str) -> int:
    return max(10, int(settings.default.max_examples * _BUDGET[kind]))


# -- the program --------------------------------------------------------------------------


@attrs.frozen
class Plan:
    """One step of a program: how it runs and where it is interrupted."""

    is_async: bool
    gate: bool  # a Recv just before the step
    sleep: bool  # a short Sleep just after it
    point: str
    action: str


def program_ops(plans: list[Plan]) -> list[list[Any]]:
    ops: list[list[Any]] = []
    for index, plan in enumerate(plans):
        if plan.gate:
            ops.append(["gate", index])
        ops.append(["astep" if plan.is_async else "step", index])
        if plan.sleep:
            ops.append(["sleep", index])
    return ops


def expected(plans: list[Plan]) -> list[str]:
    out: list[str] = []
    for index, plan in enumerate(plans):
        if plan.gate:
            out.append(f"m{index}")
        out.append(f"v{index}")
    return out


#: The driver of each run, by workflow id: what a step body tells.
DRIVERS: dict[str, Driver] = {}
EXAMPLES = itertools.count()


def sync_body(workflow_id: str, index: int) -> str:
    driver = DRIVERS[workflow_id]
    driver.ran(index)
    driver.at(index, "during")
    # The body still runs a moment after the action (a cancel, a close) began.
    time.sleep(0.002)
    return f"v{index}"


async def async_body(workflow_id: str, index: int) -> str:
    driver = DRIVERS[workflow_id]
    driver.ran(index)
    driver.at(index, "during")
    await asyncio.sleep(0.002)
    return f"v{index}"


@workflow(name="cancel-points")
def program(workflow_id: str, ops: list[list[Any]]):
    out = []
    for kind, index in ops:
        if kind == "step":
            out.append((yield Step(f"s{index}", sync_body, workflow_id, index)))
        elif kind == "astep":
            out.append((yield Step(f"s{index}", async_body, workflow_id, index)))
        elif kind == "gate":
            out.append((yield Recv(f"g{index}")))
        else:
            yield Sleep(0.005)
    return out


# -- the store's seam: before and after a step's record commits ----------------------------


def _step_index(record: Record | None) -> int | None:
    if record is None or record.kind != "step" or record.outcome is None:
        return None
    return int(record.name[1:])


def hook_store(store: Store, tell: Callable[[str, int, str], None]) -> Store:
    """`store`, whose record-writing methods tell `tell(workflow_id, step, point)` just
    before a step's record is written and just after it committed."""
    if getattr(store, "_cancel_points_hooked", False):
        return store  # the memory store, shared by the engines that follow each other
    record, record_many = store.record, store.record_many
    finish, finish_many = store.finish_workflow, store.finish_many

    def hooked_record(workflow_id: str, rec: Record, **kwargs: Any) -> Record:
        index = _step_index(rec)
        if index is not None:
            tell(workflow_id, index, "returned")
        stored = record(workflow_id, rec, **kwargs)
        if index is not None:
            tell(workflow_id, index, "committed")
        return stored

    def hooked_record_many(writes: list[RecordWrite]) -> list[Any]:
        steps = [(w.workflow_id, _step_index(w.record)) for w in writes]
        try:
            for workflow_id, index in steps:
                if index is not None:
                    tell(workflow_id, index, "returned")
        except Crash as crash:
            return [crash] * len(writes)  # the process died before this batch committed
        answers = record_many(writes)
        for (workflow_id, index), answer in zip(steps, answers, strict=True):
            if index is not None and isinstance(answer, Record):
                tell(workflow_id, index, "committed")
        return answers

    def hooked_finish(workflow_id: str, *args: Any, **kwargs: Any) -> bool:
        index = _step_index(kwargs.get("record"))
        if index is not None:
            tell(workflow_id, index, "returned")
        done = finish(workflow_id, *args, **kwargs)
        if index is not None and done:
            tell(workflow_id, index, "committed")
        return done

    def hooked_finish_many(finishes: list[FinishWrite]) -> list[Any]:
        steps = [(f.workflow_id, _step_index(f.record)) for f in finishes]
        try:
            for workflow_id, index in steps:
                if index is not None:
                    tell(workflow_id, index, "returned")
        except Crash as crash:
            return [crash] * len(finishes)
        answers = finish_many(finishes)
        for (workflow_id, index), answer in zip(steps, answers, strict=True):
            if index is not None and answer is True:
                tell(workflow_id, index, "committed")
        return answers

    store.record = hooked_record  # type: ignore[method-assign]
    store.record_many = hooked_record_many  # type: ignore[method-assign]
    store.finish_workflow = hooked_finish  # type: ignore[method-assign]
    store.finish_many = hooked_finish_many  # type: ignore[method-assign]
    store._cancel_points_hooked = True  # type: ignore[attr-defined]
    return store


class Crash(ControlSignal):
    """A simulated process crash: the write under way is lost, and so is the engine."""


# -- the stores -----------------------------------------------------------------------------


class Stores:
    """Where one test's runs live: a store kind, opened afresh for each engine (the
    memory store is one object, shared by the engines that follow each other)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.folder = tempfile.mkdtemp(prefix="rk-cancel-points-")
        self.schema: str | None = None
        if kind == "postgres":
            require_postgres()
            self.schema = fresh_schema_name("cancel_points")

    def open(self, example: int) -> Callable[[], Store]:
        """A factory of stores for one example: a store of its own."""
        if self.kind == "memory":
            memory = MemoryStore()
            return lambda: memory
        if self.kind == "sqlite":
            url = f"sqlite:///{self.folder}/ex{example}.db"
        else:
            url = f"{PG_URL}?schema={self.schema}"
        return lambda: open_store(url)

    def drop(self) -> None:
        if self.schema is not None:
            drop_schema(self.schema)
        shutil.rmtree(self.folder, ignore_errors=True)


# -- one run, driven through its interruptions ------------------------------------------------


class Driver:
    """Runs one program on engines over one store, acting at its drawn points."""

    def __init__(self, plans: list[Plan], new_store: Callable[[], Store]) -> None:
        self.plans = plans
        self.new_store = new_store
        self.workflow_id = f"cp-{uuid.uuid4().hex[:10]}"
        # An executor of its own: an engine recovers this run and no other example's.
        self.executor_id = f"ex-{self.workflow_id}"
        self.lock = threading.RLock()
        self.runs: collections.Counter[int] = collections.Counter()
        self.fired: set[int] = set()
        self.done: list[str] = []  # what happened, for the failure message
        self.closing: threading.Thread | None = None
        self.crashed = False
        self.close_failed: BaseException | None = None
        self.evict_next = False
        self.engines = 0
        self.engine = self._open()

    # -- engines ------------------------------------------------------------------------

    def _open(self) -> Engine:
        store = hook_store(self.new_store(), self._tell)
        # Recovered only once it is the engine a step body's action reaches.
        engine = Engine(
            store,
            executor_id=self.executor_id,
            poll_interval=0.2,
            executor_wait=15,
            recover=False,
        )
        engine.scheduler.warm.keep_if = self._keep_warm
        self.engines += 1
        return engine

    def _keep_warm(self, workflow_id: str, position: int) -> bool:
        with self.lock:
            if self.evict_next:
                self.evict_next = False
                self.done.append(f"evicted at position {position}")
                return False
        return True

    # -- what the run tells --------------------------------------------------------------

    def ran(self, index: int) -> None:
        with self.lock:
            if self.crashed:
                raise Crash("this simulated process has crashed; it runs nothing more")
            self.runs[index] += 1
            self.done.append(f"body s{index} ran (#{self.runs[index]})")

    def _tell(self, workflow_id: str, index: int, point: str) -> None:
        if workflow_id == self.workflow_id:
            self.at(index, point)

    def at(self, index: int, point: str) -> None:
        plan = self.plans[index]
        with self.lock:
            if self.crashed and point != "committed":
                raise Crash("this simulated process has crashed; it writes nothing more")
            if plan.point != point or index in self.fired:
                return
            self.fired.add(index)
        self.act(index, point, plan.action)

    def act(self, index: int, point: str, action: str) -> None:
        with self.lock:
            self.done.append(f"{action} at s{index}/{point}")
            engine = self.engine
            if action == "cancel":
                engine.terminate(self.workflow_id)
            elif action == "cancel-resume":
                # Resumed at once, while what the cancel stopped may still be under way.
                engine.terminate(self.workflow_id)
                engine.resume(self.workflow_id)
            elif action == "evict":
                engine.scheduler.drop_warm(self.workflow_id)
                self.evict_next = True
            elif action == "crash":
                self.crashed = True
                raise Crash(f"simulated crash before s{index}'s record commits")
            elif action == "close":
                # From another thread: a patient close waits for this very step.
                self.closing = threading.Thread(target=self._close, args=(engine,), name="cp-close")
                self.closing.start()
        if action == "close":
            # The close has begun before the step goes on.
            limit = time.monotonic() + WAIT
            while not engine.scheduler.closed:
                assert time.monotonic() < limit, "the engine did not begin to close"
                time.sleep(0.001)

    # -- the driver's loop -----------------------------------------------------------------

    def _state(self) -> str:
        engine = self.engine
        try:
            row = engine.store.get_workflow(self.workflow_id)
            log = engine.store.load_log(self.workflow_id)
        except Exception as exc:
            return f"{self.done}; the store did not answer ({exc!r})"
        scheduler = engine.scheduler
        return (
            f"{self.done}; status {row and row.status}, error {row and row.error!r}, "
            f"executor {row and row.executor_id}, log {[r.describe() for r in log]}, "
            f"active {self.workflow_id in scheduler._active}, "
            f"suspended {engine.wakeups.is_suspended(self.workflow_id)}, "
            f"warm {scheduler.is_warm(self.workflow_id)}"
        )

    def _at_gate(self, engine: Engine, position: int) -> bool:
        if not engine.wakeups.is_suspended(self.workflow_id):
            return False
        done = [r for r in engine.store.load_log(self.workflow_id) if r.outcome is not None]
        return len(done) == position

    def _close(self, engine: Engine) -> None:
        try:
            engine.close()
        except BaseException as exc:
            self.close_failed = exc
            raise

    def _new_process(self) -> None:
        """After a close, or a crash: the next engine on the same store recovers the run."""
        with self.lock:
            closing, self.closing = self.closing, None
            crashed, self.crashed = self.crashed, False
            engine = self.engine
        if crashed:
            # A crashed process writes nothing more; its engine's threads are left.
            engine.close(wait=False)
        if closing is not None:
            closing.join(WAIT)
            assert not closing.is_alive(), "a patient close did not end"
            assert self.close_failed is None, f"close() raised {self.close_failed!r}"
        fresh = self._open()
        with self.lock:
            self.engine = fresh
        fresh.recover()

    def drive(self) -> list[Any]:
        ops = program_ops(self.plans)
        gates = [(position, op[1]) for position, op in enumerate(ops) if op[0] == "gate"]
        self.engine.start(program, self.workflow_id, ops, workflow_id=self.workflow_id)
        to_send: list[int] = []
        limit = time.monotonic() + WAIT
        while True:
            assert time.monotonic() < limit, f"the run did not finish: {self._state()}"
            time.sleep(0.003)
            with self.lock:
                interrupted = self.closing is not None or self.crashed
            if interrupted:
                self._new_process()
                continue
            with self.lock:
                engine = self.engine
                row = engine.store.get_workflow(self.workflow_id)
                assert row is not None
                if row.status is Status.SUCCESS:
                    return engine.handle(self.workflow_id).result(timeout=WAIT)  # type: ignore[no-any-return]
                assert row.status in (Status.PENDING, Status.CANCELLED), (row, self.done)
                if row.status is Status.CANCELLED:
                    # Once the activation the cancel stopped has ended. (Not `is_tracked`:
                    # a run cancelled while an activation of it looked at its wait again
                    # stays suspended and warm here, CANCELLED as it is.)
                    if self.workflow_id not in engine.scheduler._active:
                        if engine.wakeups.is_suspended(self.workflow_id):
                            self.done.append("left suspended though cancelled")
                        self.done.append("resumed")
                        engine.resume(self.workflow_id)
                    continue
                for index in to_send:
                    self.done.append(f"sent g{index}")
                    engine.send(self.workflow_id, f"m{index}", f"g{index}")
                to_send.clear()
                gate_reached = bool(gates) and self._at_gate(engine, gates[0][0])
            if gate_reached:
                _, index = gates.pop(0)
                plan = self.plans[index]
                if plan.point == "before" and index not in self.fired:
                    self.fired.add(index)
                    self.act(index, "before", plan.action)
                to_send.append(index)

    def close(self) -> None:
        with self.lock:
            closing, engine = self.closing, self.engine
        if closing is not None:
            closing.join(WAIT)
        engine.close(wait=not self.crashed)


# -- strategies ---------------------------------------------------------------------------


def plans(actions: tuple[str, ...] = ACTIONS) -> st.SearchStrategy[list[Plan]]:
    def one(point: str) -> st.SearchStrategy[Plan]:
        return st.builds(
            Plan,
            is_async=st.booleans(),
            gate=st.just(True) if point == "before" else st.booleans(),
            sleep=st.booleans(),
            point=st.just(point),
            action=st.sampled_from(actions),
        )

    return st.lists(st.sampled_from(POINTS).flatmap(one), min_size=1, max_size=5)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    where = Stores(request.param)
    try:
        yield where
    finally:
        where.drop()


def _run(stores: Stores, steps: list[Plan]) -> Driver:
    driver = Driver(steps, stores.open(next(EXAMPLES)))
    DRIVERS[driver.workflow_id] = driver
    try:
        result = driver.drive()
    finally:
        driver.close()
        DRIVERS.pop(driver.workflow_id, None)
    for plan in steps:
        if plan.action != "nothing":
            event(f"{plan.action} at {plan.point}{' (async)' if plan.is_async else ''}")
    assert result == expected(steps), driver.done
    return driver


def test_a_step_body_runs_once_whatever_stops_its_run(stores: Stores) -> None:
    @settings(
        max_examples=_examples(stores.kind),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(steps=plans())
    def check(steps: list[Plan]) -> None:
        driver = _run(stores, steps)
        twice = {f"s{i}": n for i, n in driver.runs.items() if n != 1}
        assert not twice, f"step bodies ran more than once: {twice}; {driver.done}"
        assert sorted(driver.runs) == list(range(len(steps))), driver.done

    check()


def test_only_a_crash_runs_a_step_body_again(stores: Stores) -> None:
    # The contrast: a crash before a step's record commits loses the record with its
    # process; the next engine runs that body again (at most twice, and no other).
    @settings(
        max_examples=max(5, _examples(stores.kind) // 4),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(steps=plans((*ACTIONS, "crash")))
    def check(steps: list[Plan]) -> None:
        steps = [
            attrs.evolve(plan, point="returned") if plan.action == "crash" else plan
            for plan in steps
        ]
        driver = _run(stores, steps)
        crashed = {i for i, plan in enumerate(steps) if plan.action == "crash"}
        for index, count in driver.runs.items():
            assert count <= (2 if index in crashed else 1), (index, count, driver.done)

    check()


@st.composite
def plans_with_an_async_cancel(draw: st.DrawFn) -> list[Plan]:
    """Programs with a cancel while an async body runs somewhere among their steps."""
    steps = draw(plans())
    where = draw(st.integers(0, len(steps)))
    bug = Plan(True, draw(st.booleans()), draw(st.booleans()), "during", "cancel")
    return [*steps[:where], bug, *steps[where:]][:6]


def test_a_cancel_while_an_async_body_runs_lets_it_finish(stores: Stores) -> None:
    @settings(
        max_examples=max(5, _examples(stores.kind) // 4),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(steps=plans_with_an_async_cancel())
    def check(steps: list[Plan]) -> None:
        driver = _run(stores, steps)
        twice = {f"s{i}": n for i, n in driver.runs.items() if n != 1}
        assert not twice, f"step bodies ran more than once: {twice}; {driver.done}"

    check()
