"""Random workflow programs against a plain-Python reference model.

A small generated language (steps with planned outcomes and retries, try/except
around steps, sleeps, Now/Random/Uuid, Recv with and without timeouts, branches
on recorded values, loops, helpers run with `yield from`, trees of nested
Race/All over sleeps and timed Recv) is walked by one
generic `@workflow`. The same walker, driven by a plain-Python model of time,
retries and inboxes instead of the engine, predicts every run: its commands,
its status, its result, and how often each step body runs. Then:

1. a run (with crashes at drawn commits) agrees with the model, every recorded
   step body ran exactly once and the one in flight at a crash at most twice;
2. `check_determinism` finds every stop-and-resume of a run consistent;
3. every mutation of a program (rename, reorder, insert, delete, changed
   arguments) replays against the original's log exactly as the model says:
   `NonDeterminismError` when the mutated code diverges at or before the last
   recorded position (or wants more after a finished run, or ends early),
   `ResultMismatch` when only the result differs, nothing when the mutation is
   invisible to this log (an untaken branch, a loop that ran zero times, code
   after the point a run stopped at).
"""

from __future__ import annotations

import collections
import copy
import json
import uuid
import zlib
from collections.abc import Generator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from hypothesis import event, given, settings
from hypothesis import strategies as st

from replaykit import (
    All,
    NonDeterminismError,
    Now,
    Race,
    Random,
    Recv,
    Retry,
    Sleep,
    Status,
    Step,
    Uuid,
    step_context,
    workflow,
)
from replaykit import testing as rt
from replaykit.testing import Message, ResultMismatch
from replaykit.testing import strategies as rks

START = datetime(2030, 1, 1, tzinfo=UTC)
RETRY_INTERVAL = 30  # seconds; back-off doubles: 30, 60


class ProgramError(Exception):
    """What a failing planned step raises (module level: replays find the class)."""


def program_step(key: str) -> int:
    raise AssertionError(f"step {key!r} ran its real body; every program step is faked")


# -- the language: a walker that yields real commands ------------------------------------------


def _step_command(node: dict[str, Any], path: tuple[int, ...], state: list[int]) -> Step:
    # The key is unique per call (node, loop path, how many steps ran before), so a
    # call's planned outcomes never depend on another call's attempts.
    name = f"s{node['id']}{node.get('rename', '')}"
    key = f"{node['id']}@{'.'.join(map(str, path))}#{state[1]}{node.get('salt', '')}"
    state[1] += 1
    return Step(name, program_step, key, retry=Retry(node["retry"], interval=RETRY_INTERVAL))


def walk_body(
    program: dict[str, Any],
    body: list[dict[str, Any]],
    acc: list[Any],
    state: list[int],
    path: tuple[int, ...],
) -> Generator[Any, Any, None]:
    for node in body:
        op = node["op"]
        if op == "step":
            value = yield _step_command(node, path, state)
            acc.append(["step", node["id"], value])
            state[0] += value
        elif op == "try":
            try:
                value = yield _step_command(node, path, state)
            except ProgramError as exc:
                acc.append(["caught", node["id"], str(exc)])
            else:
                acc.append(["step", node["id"], value])
                state[0] += value
        elif op == "sleep":
            yield Sleep(node["seconds"])
        elif op == "now":
            when = yield Now()
            acc.append(["now", when.isoformat()])
        elif op == "random":
            acc.append(["random", (yield Random())])
        elif op == "uuid":
            made = yield Uuid()
            # A UUID in a run; the model's stand-in as it is.
            acc.append(["uuid", str(made) if isinstance(made, uuid.UUID) else made])
        elif op == "recv":
            message = yield Recv(node["topic"], node["timeout"])
            acc.append(["recv", node["topic"], message])
        elif op == "tree":
            acc.append(["tree", plain((yield tree_command(node["tree"])))])
        elif op == "if":
            # Branch on recorded values only: the sum of the step results so far.
            branch = node["then"] if state[0] % 2 == 0 else node["else"]
            yield from walk_body(program, branch, acc, state, path)
        elif op == "loop":
            for i in range(node["count"]):
                yield from walk_body(program, node["body"], acc, state, (*path, i))
        elif op == "helper":
            yield from helper(program, node["index"], acc, state, path)
        else:  # pragma: no cover - the generator never makes one
            raise ValueError(f"unknown op {op!r}")


def tree_command(spec: dict[str, Any]) -> Any:
    kind = spec["k"]
    if kind == "sleep":
        return Sleep(spec["seconds"])
    if kind == "recv":
        return Recv(spec["topic"], spec["timeout"])
    children = [tree_command(child) for child in spec["c"]]
    return Race(*children) if kind == "race" else All(*children)


def plain(value: Any) -> Any:
    """A tree's value as JSON would hold it (an inner Race's tuple is a list)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def helper(
    program: dict[str, Any], index: int, acc: list[Any], state: list[int], path: tuple[int, ...]
) -> Generator[Any, Any, None]:
    yield from walk_body(program, program["helpers"][index], acc, state, path)


def walk(program: dict[str, Any]) -> Generator[Any, Any, list[Any]]:
    acc: list[Any] = []
    yield from walk_body(program, program["body"], acc, [0, 0], ())
    return acc


@workflow(name="prop.program")
def program_wf(program: dict[str, Any]) -> Generator[Any, Any, list[Any]]:
    return (yield from walk(program))


# -- step plans and their fake -----------------------------------------------------------------

Plans = dict[int, list[list[dict[str, Any]]]]


def plan_for(plans: Plans, key: str) -> list[dict[str, Any]]:
    options = plans.get(int(key.split("@")[0])) or [[{"value": 1}]]
    return options[zlib.crc32(key.encode()) % len(options)]


class PlanFake:
    """Every program step: outcome by (call key, attempt); attempts restart per process,
    past those a step retried across a crash has recorded (`step_context().attempt`)."""

    def __init__(self, plans: Plans) -> None:
        self.plans = plans
        self.attempts: collections.Counter[str] = collections.Counter()
        self.steps_seen: set[tuple[str, int]] = set()

    def fresh(self) -> PlanFake:
        return PlanFake(self.plans)

    def __call__(self, key: str) -> int:
        ctx = step_context()
        if (ctx.workflow_id, ctx.position) not in self.steps_seen:
            self.steps_seen.add((ctx.workflow_id, ctx.position))
            self.attempts[key] += ctx.attempt - 1  # made before this process
        plan = plan_for(self.plans, key)
        outcome = plan[min(self.attempts[key], len(plan) - 1)]
        self.attempts[key] += 1
        if "fail" in outcome:
            raise ProgramError(outcome["fail"])
        return int(outcome["value"])

    def __repr__(self) -> str:
        return f"PlanFake({self.plans!r})"


def step_names(program: dict[str, Any]) -> set[str]:
    names = set()
    for node in all_nodes(program):
        if node["op"] in ("step", "try"):
            names.add(f"s{node['id']}{node.get('rename', '')}")
    return names


def fakes_for(program: dict[str, Any], plans: Plans) -> dict[str, PlanFake]:
    fake = PlanFake(plans)
    return {name: fake for name in step_names(program)}


# -- the reference model -----------------------------------------------------------------------


@attrs.frozen
class Placeholder:
    """A Random/Uuid value the model cannot know, tied to its position."""

    kind: str
    position: int


@attrs.define
class ModelRun:
    stream: list[tuple[str, str]] = attrs.field(factory=list)
    args: list[str] = attrs.field(factory=list)
    outcomes: list[tuple[bool, Any]] = attrs.field(factory=list)
    step_keys: dict[int, str] = attrs.field(factory=dict)
    attempts: collections.Counter[str] = attrs.field(factory=collections.Counter)
    status: Status = Status.PENDING
    result: Any = None
    error: str = ""
    waiting: tuple[str, str] | None = None


def _args_of(command: Any) -> str:
    return json.dumps(command.describe_args(), sort_keys=True, default=str)


# The outcome of a recorded position whose command is still under way.
WAITING: Any = (True, "<waiting>")


def run_model(program: dict[str, Any], plans: Plans, messages: list[Message]) -> ModelRun:
    """What a run must do, computed without replaykit's runtime."""
    model = ModelRun()
    now = START
    inbox = sorted(enumerate(messages), key=lambda im: (im[1].arrival(START), im[0]))
    consumed: set[int] = set()
    gen = walk(program)
    ok, value = True, None
    while True:
        try:
            command = gen.send(value) if ok else gen.throw(value)
        except StopIteration as stop:
            model.status, model.result = Status.SUCCESS, stop.value
            return model
        except ProgramError as exc:
            model.status, model.error = Status.ERROR, str(exc)
            return model
        position = len(model.stream)
        if isinstance(command, Step):
            key = command.args[0]
            plan = plan_for(plans, key)
            attempts = command.retry.max_attempts if command.retry else 1
            for attempt in range(1, attempts + 1):
                outcome = plan[min(attempt - 1, len(plan) - 1)]
                model.attempts[key] += 1
                if "fail" not in outcome:
                    ok, value = True, outcome["value"]
                    break
                ok, value = False, ProgramError(outcome["fail"])
                if attempt < attempts:
                    now += timedelta(seconds=RETRY_INTERVAL * 2 ** (attempt - 1))
            model.step_keys[position] = key
        elif isinstance(command, Sleep):
            now += timedelta(seconds=command.seconds)
            ok, value = True, None
        elif isinstance(command, Now):
            ok, value = True, now
        elif isinstance(command, (Random, Uuid)):
            ok, value = True, Placeholder(command.kind, position)
        elif isinstance(command, Recv):
            first = next(
                ((i, m) for i, m in inbox if i not in consumed and m.topic == command.topic), None
            )
            deadline = None if command.timeout is None else now + timedelta(seconds=command.timeout)
            if first is not None and (deadline is None or first[1].arrival(START) <= deadline):
                consumed.add(first[0])
                now = max(now, first[1].arrival(START))
                ok, value = True, first[1].payload
            elif deadline is None:
                # Waits for good. Suspending records the Recv's start (no outcome).
                model.waiting = (command.kind, command.name)
                model.stream.append((command.kind, command.name))
                model.args.append(_args_of(command))
                model.outcomes.append(WAITING)
                return model
            else:
                now = deadline
                ok, value = True, None
        elif isinstance(command, (Race, All)):
            now, value, taken = model_tree(command, now, inbox, consumed)
            consumed.update(taken)
            ok = True
        else:  # pragma: no cover
            raise AssertionError(f"the model does not know {command!r}")
        model.stream.append((command.kind, command.name))
        model.args.append(_args_of(command))
        model.outcomes.append((ok, value))


def model_tree(
    tree: Any, start: datetime, inbox: list[tuple[int, Message]], consumed: set[int]
) -> tuple[datetime, Any, set[int]]:
    """(when, value, messages consumed) of a tree of Race/All over Sleep and timed Recv.

    The tree holds no step, so the run suspends and the tree is looked at afresh
    at every wake-up: when a message is delivered (one at a time) and at the next
    deadline of a leaf not yet decided. A look takes what arrived first (leaves
    in argument order, depth first, one message per leaf), then what timed out,
    and stops once the whole tree is decided.
    """
    leaves: list[tuple[tuple[int, ...], Any]] = []

    def collect(node: Any, path: tuple[int, ...]) -> None:
        if isinstance(node, (Race, All)):
            for i, child in enumerate(node.children):
                collect(child, (*path, i))
        else:
            leaves.append((path, node))

    collect(tree, ())
    deadlines: dict[tuple[int, ...], datetime | None] = {}
    for path, leaf in leaves:
        seconds = leaf.seconds if isinstance(leaf, Sleep) else leaf.timeout
        deadlines[path] = None if seconds is None else start + timedelta(seconds=seconds)

    def node_at(path: tuple[int, ...]) -> Any:
        node = tree
        for i in path:
            node = node.children[i]
        return node

    def look(now: datetime, delivered: int) -> tuple[Any, set[int], list[datetime]]:
        present = [(i, m) for n, (i, m) in enumerate(inbox) if n < delivered and i not in consumed]
        due = [m.arrival(START) for _, m in inbox[delivered:]]

        def passed(deadline: datetime) -> bool:
            # The virtual clock counts a deadline passed once every message due by
            # then was delivered.
            return deadline <= now and all(at > deadline for at in due)

        outcomes: dict[tuple[int, ...], Any] = {}
        taken: dict[int, tuple[int, ...]] = {}
        decided: dict[tuple[int, ...], Any] = {}

        def decide(path: tuple[int, ...]) -> Any:
            node = node_at(path)
            if not isinstance(node, (Race, All)):
                return outcomes.get(path, _UNSET)
            if path in decided:
                return decided[path]
            got: Any = _UNSET
            if isinstance(node, Race):
                for i in range(len(node.children)):
                    v = decide((*path, i))
                    if v is not _UNSET:
                        got = ((i, v), (*path, i))
                        break
                if got is not _UNSET:
                    decided[path] = got[0]
                    winners[path] = got[1]
                    return got[0]
                return _UNSET
            every = [decide((*path, i)) for i in range(len(node.children))]
            if all(v is not _UNSET for v in every):
                decided[path] = list(every)
                return decided[path]
            return _UNSET

        winners: dict[tuple[int, ...], tuple[int, ...]] = {}

        def is_open(path: tuple[int, ...]) -> bool:
            if path in outcomes:
                return False
            return not any(path[:k] in decided for k in range(len(path)))

        for timed_out in (False, True):
            for path, leaf in leaves:
                if not is_open(path):
                    continue
                deadline = deadlines[path]
                if timed_out and (deadline is None or not passed(deadline)):
                    continue
                if isinstance(leaf, Recv):
                    first = next(((i, m) for i, m in present if m.topic == leaf.topic), None)
                    if first is not None and first[0] in taken:
                        if not timed_out:
                            continue
                        outcomes[path] = None
                    elif first is not None:
                        taken[first[0]] = path
                        outcomes[path] = first[1].payload
                    elif timed_out:
                        outcomes[path] = None
                    else:
                        continue
                elif timed_out:
                    outcomes[path] = None
                else:
                    continue
                value = decide(())
                if value is not _UNSET:

                    def kept(p: tuple[int, ...]) -> set[tuple[int, ...]]:
                        node = node_at(p)
                        if not isinstance(node, (Race, All)):
                            return {p} if p in outcomes else set()
                        if p not in decided:
                            return set()
                        if isinstance(node, Race):
                            return kept(winners[p])
                        return set().union(*(kept((*p, i)) for i in range(len(node.children))))

                    keep = kept(())
                    return value, {m for m, p in taken.items() if p in keep}, []
        open_deadlines = [d for p, d in deadlines.items() if d is not None and is_open(p)]
        return None, set(), open_deadlines

    now = start
    delivered = sum(1 for _, m in inbox if m.arrival(START) <= start)
    while True:
        value, taken, open_deadlines = look(now, delivered)
        if value is not None:
            return now, value, taken
        arrivals = [m.arrival(START) for _, m in inbox[delivered:]]
        wake = min(open_deadlines, default=None)
        if arrivals and (wake is None or arrivals[0] <= wake):
            now = max(now, arrivals[0])
            delivered += 1
        elif wake is not None:
            now = max(now, wake)
        else:  # pragma: no cover - every leaf of a generated tree has a deadline
            raise AssertionError("a generated tree never decides")


_UNSET: Any = object()


def expect_replay(program: dict[str, Any], original: ModelRun, *, strict: bool) -> str:
    """How replaying the original's log against `program` must go: ok / drift / result."""
    gen = walk(program)
    position = 0
    ok, value = True, None
    recorded = len(original.stream)
    finished = original.status in (Status.SUCCESS, Status.ERROR)
    while True:
        try:
            command = gen.send(value) if ok else gen.throw(value)
        except (StopIteration, ProgramError) as end:
            if position < recorded:
                return "drift"  # ends while recorded positions remain
            if not finished:
                return "ok"
            if isinstance(end, StopIteration):
                same = original.status is Status.SUCCESS and end.value == original.result
            else:
                same = original.status is Status.ERROR and str(end) == original.error
            return "ok" if same else "result"
        if position >= recorded:
            return "drift" if finished else "ok"
        if (command.kind, command.name) != original.stream[position]:
            return "drift"
        if strict and _args_of(command) != original.args[position]:
            return "drift"
        if original.outcomes[position] is WAITING:
            return "ok"  # the original is still waiting here; replay stops at it
        ok, value = original.outcomes[position]
        position += 1


# -- comparing a real run with the model -------------------------------------------------------


def normalise(result: Any, model: ModelRun) -> Any:
    """The run's result with Random/Uuid values checked and replaced by the model's placeholders."""
    placeholders: Iterator[Placeholder] = iter(
        v for ok, v in model.outcomes if ok and isinstance(v, Placeholder)
    )
    out = []
    for entry in result:
        if entry[0] == "random":
            assert isinstance(entry[1], float) and 0 <= entry[1] < 1, entry
            out.append(["random", next(placeholders)])
        elif entry[0] == "uuid":
            assert uuid.UUID(entry[1]).version == 4, entry
            out.append(["uuid", next(placeholders)])
        else:
            out.append(entry)
    return out


def assert_matches_model(result: rt.RunResult[Any], model: ModelRun) -> None:
    assert result.commands == model.stream
    assert result.status is model.status, (result, model)
    if model.status is Status.SUCCESS:
        assert normalise(result.result, model) == model.result
    elif model.status is Status.ERROR:
        assert type(result.error) is ProgramError and str(result.error) == model.error
    else:
        assert result.waiting_on() is not None
        assert model.waiting is not None and f"Recv({model.waiting[1]!r})" in result.waiting_on()


def calls_by_key(result: rt.RunResult[Any]) -> collections.Counter[str]:
    return collections.Counter(call.args[0] for calls in result.calls.values() for call in calls)


# -- generating programs -----------------------------------------------------------------------

TREE_LEAVES = st.one_of(
    st.fixed_dictionaries(
        {"k": st.just("sleep"), "seconds": st.integers(0, 4).map(lambda n: 600 * n)}
    ),
    st.fixed_dictionaries(
        {
            "k": st.just("recv"),
            "topic": st.sampled_from(["a", "b"]),
            "timeout": st.integers(1, 8).map(lambda n: 600 * n),
        }
    ),
)
TREES = st.recursive(
    TREE_LEAVES,
    lambda inner: st.fixed_dictionaries(
        {"k": st.sampled_from(["race", "all"]), "c": st.lists(inner, min_size=1, max_size=3)}
    ),
    max_leaves=5,
).filter(lambda t: "c" in t)

LEAVES = st.one_of(
    st.fixed_dictionaries({"op": st.just("tree"), "tree": TREES}),
    st.fixed_dictionaries({"op": st.just("step"), "retry": st.integers(1, 3)}),
    st.fixed_dictionaries({"op": st.just("try"), "retry": st.integers(1, 3)}),
    st.fixed_dictionaries(
        {"op": st.just("sleep"), "seconds": st.integers(0, 6).map(lambda n: 300 * n)}
    ),
    st.sampled_from([{"op": "now"}, {"op": "random"}, {"op": "uuid"}]),
    st.fixed_dictionaries(
        {
            "op": st.just("recv"),
            "topic": st.sampled_from(["a", "b"]),
            "timeout": st.one_of(st.none(), st.integers(1, 8).map(lambda n: 600 * n)),
        }
    ),
)


def bodies(depth: int, helpers: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    if depth == 0:
        return st.lists(LEAVES, max_size=3)
    inner = bodies(depth - 1, helpers)
    compound = [
        st.fixed_dictionaries({"op": st.just("if"), "then": inner, "else": inner}),
        st.fixed_dictionaries({"op": st.just("loop"), "count": st.integers(0, 2), "body": inner}),
    ]
    if helpers:
        compound.append(
            st.fixed_dictionaries({"op": st.just("helper"), "index": st.integers(0, helpers - 1)})
        )
    return st.lists(st.one_of(LEAVES, *compound), max_size=4)


def all_bodies(program: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    def visit(body: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        yield body
        for node in body:
            if node["op"] == "if":
                yield from visit(node["then"])
                yield from visit(node["else"])
            elif node["op"] == "loop":
                yield from visit(node["body"])

    yield from visit(program["body"])
    for body in program["helpers"]:
        yield from visit(body)


def all_nodes(program: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for body in all_bodies(program):
        yield from body


@st.composite
def programs(draw: st.DrawFn) -> dict[str, Any]:
    helpers = draw(st.lists(bodies(0, 0), max_size=2))
    program = {"body": draw(bodies(2, len(helpers))), "helpers": helpers}
    for index, node in enumerate(n for n in all_nodes(program) if n["op"] in ("step", "try")):
        node["id"] = index
    return program


OUTCOME = st.one_of(
    st.integers(0, 9).map(lambda v: {"value": v}),
    st.sampled_from(["e1", "e2"]).map(lambda m: {"fail": m}),
)


@st.composite
def plans_for(draw: st.DrawFn, program: dict[str, Any]) -> Plans:
    ids = sorted({n["id"] for n in all_nodes(program) if n["op"] in ("step", "try")})
    return {
        i: draw(st.lists(st.lists(OUTCOME, min_size=1, max_size=3), min_size=1, max_size=2))
        for i in ids
    }


MESSAGES = rks.message_schedules(
    {"a": st.integers(0, 99), "b": st.integers(0, 99)},
    max_messages=3,
    within=timedelta(hours=2),
    resolution=timedelta(minutes=10),
)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, Any], Plans, list[Message]]:
    program = draw(programs())
    return program, draw(plans_for(program)), draw(MESSAGES)


# -- 1. runs, with crashes, against the model --------------------------------------------------


@settings(deadline=None)
@given(scenario=scenarios(), data=st.data())
def test_a_run_with_crashes_agrees_with_the_model(
    scenario: tuple[dict[str, Any], Plans, list[Message]], data: st.DataObject
) -> None:
    program, plans, messages = scenario
    model = run_model(program, plans, messages)
    # A run commits each record, the start of some, and its end: aim within that.
    crash = data.draw(rks.crash_points(max_commit=2 * len(model.stream) + 1, max_crashes=2))
    result = rt.run(
        program_wf,
        program,
        steps=fakes_for(program, plans),
        messages=messages,
        clock=START,
        crash_at=crash,
    )
    event(f"status {model.status.value}, {len(result.crashes)} crash(es)")
    event(f"{sum(k in ('race', 'all') for k, _ in model.stream)} tree(s) run")
    assert_matches_model(result, model)
    # Every recorded step body ran once per attempt; a crash before a step's
    # record (or before the pending record of its first back-off) made that step
    # run its latest attempt once more, nothing else did: back-offs are durable,
    # so the attempts made before the last one stay made.
    expected = collections.Counter(model.attempts)
    for commit in result.crashes:
        if commit.kind == "step" and commit.position is not None:
            expected[model.step_keys[commit.position]] += 1
    assert calls_by_key(result) == expected
    for record in result.log:
        if record.kind == "step":
            assert record.attempts == model.attempts[model.step_keys[record.position]]


# -- 1b. warm runs and replayed runs are indistinguishable ---------------------------------------


def _log_facts(result: rt.RunResult[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.position, r.kind, r.name, r.outcome, r.attempts, r.started_at, r.completed_at)
        for r in result.log
    ]


@settings(deadline=None)
@given(scenario=scenarios(), keep=st.lists(st.booleans(), max_size=64))
def test_warm_runs_and_replayed_runs_record_the_same(
    scenario: tuple[dict[str, Any], Plans, list[Message]], keep: list[bool]
) -> None:
    program, plans, messages = scenario
    model = run_model(program, plans, messages)
    decisions = iter(keep)

    def stays_warm(workflow_id: str, position: int) -> bool:
        # Drawn up front: the predicate runs on the engine's threads, where
        # hypothesis may not draw. Past the drawn list every run stays warm.
        return next(decisions, True)

    runs = {
        how: rt.run(
            program_wf,
            program,
            steps=fakes_for(program, plans),
            messages=messages,
            clock=START,
            warm=warm,
        )
        for how, warm in (("replayed", False), ("warm", stays_warm))
    }
    event(f"{sum(not k for k in keep)} eviction(s) drawn")
    for result in runs.values():
        assert_matches_model(result, model)
    replayed, warm = runs["replayed"], runs["warm"]
    assert _log_facts(warm) == _log_facts(replayed)
    assert warm.status is replayed.status
    assert calls_by_key(warm) == calls_by_key(replayed)


# -- 2. every stop-and-resume of a run is consistent -------------------------------------------


@settings(deadline=None, max_examples=25)
@given(scenario=scenarios())
def test_check_determinism_holds_for_every_program(
    scenario: tuple[dict[str, Any], Plans, list[Message]],
) -> None:
    program, plans, messages = scenario
    report = rt.check_determinism(
        program_wf, program, steps=fakes_for(program, plans), messages=messages, clock=START
    )
    assert_matches_model(report.reference, run_model(program, plans, messages))
    assert report.prefix_runs == report.crash_runs == len(report.commits)


# -- 3. mutations are reported on replay exactly when they show --------------------------------


def _leaf_for_insert(draw: st.DrawFn, next_id: int) -> dict[str, Any]:
    node = dict(draw(LEAVES))
    if node["op"] in ("step", "try"):
        node["id"] = next_id
    return node


@st.composite
def mutations(draw: st.DrawFn, program: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(what was done, the mutated copy of `program`)."""
    mutated = copy.deepcopy(program)
    bodies_ = list(all_bodies(mutated))
    nonempty = [b for b in bodies_ if b]
    kinds = ["insert"]
    if nonempty:
        kinds += ["delete", "rename", "args"]
    if any(len(b) >= 2 for b in bodies_):
        kinds.append("reorder")
    kind = draw(st.sampled_from(kinds))
    if kind == "insert":
        body = draw(st.sampled_from(bodies_))
        next_id = 1 + max((n.get("id", -1) for n in all_nodes(mutated)), default=-1)
        body.insert(draw(st.integers(0, len(body))), _leaf_for_insert(draw, next_id))
    elif kind == "delete":
        body = draw(st.sampled_from(nonempty))
        del body[draw(st.integers(0, len(body) - 1))]
    elif kind == "reorder":
        body = draw(st.sampled_from([b for b in bodies_ if len(b) >= 2]))
        i = draw(st.integers(0, len(body) - 2))
        body[i], body[i + 1] = body[i + 1], body[i]
    else:
        node = draw(st.sampled_from([n for b in nonempty for n in b]))
        if kind == "rename":
            if node["op"] in ("step", "try"):
                node["rename"] = "x"
            elif node["op"] == "recv":
                node["topic"] = "b" if node["topic"] == "a" else "a"
            elif node["op"] in ("now", "random", "uuid"):
                node["op"] = {"now": "random", "random": "uuid", "uuid": "now"}[node["op"]]
            else:
                kind = "args"
        if kind == "args":
            if node["op"] in ("step", "try"):
                node["salt"] = "~"
            elif node["op"] == "sleep":
                node["seconds"] += 1
            elif node["op"] == "recv":
                node["timeout"] = 61 if node["timeout"] is None else None
            elif node["op"] == "loop":
                node["count"] += 1
            else:
                kind = "args (none to change)"
    return kind, mutated


def _replay_outcome(program: dict[str, Any], log: Any, *, strict: bool) -> str:
    try:
        rt.replay(program_wf, log, program, strict=strict)
    except ResultMismatch:
        return "result"
    except NonDeterminismError:
        return "drift"
    return "ok"


@settings(deadline=None)
@given(scenario=scenarios(), data=st.data())
def test_every_mutation_is_reported_on_replay_exactly_when_it_shows(
    scenario: tuple[dict[str, Any], Plans, list[Message]], data: st.DataObject
) -> None:
    program, plans, messages = scenario
    original = run_model(program, plans, messages)
    result = rt.run(
        program_wf, program, steps=fakes_for(program, plans), messages=messages, clock=START
    )
    assert_matches_model(result, original)
    # The exported JSON is what a deploy gate would replay.
    log = result.log.to_json()
    assert _replay_outcome(program, log, strict=True) == "ok"
    for _ in range(3):
        kind, mutated = data.draw(mutations(program))
        for strict in (True, False):
            expected = expect_replay(mutated, original, strict=strict)
            event(f"{kind}: {expected}{' (strict)' if strict else ''}")
            assert _replay_outcome(mutated, log, strict=strict) == expected, (kind, strict)


def test_a_mutation_at_the_first_position_is_always_drift() -> None:
    program = {"body": [{"op": "step", "id": 0, "retry": 1}, {"op": "now"}], "helpers": []}
    plans: Plans = {0: [[{"value": 2}]]}
    log = rt.run(program_wf, program, steps=fakes_for(program, plans), clock=START).log
    renamed = copy.deepcopy(program)
    renamed["body"][0]["rename"] = "x"
    assert _replay_outcome(renamed, log, strict=False) == "drift"
    salted = copy.deepcopy(program)
    salted["body"][0]["salt"] = "~"
    assert _replay_outcome(salted, log, strict=True) == "drift"
    assert _replay_outcome(salted, log, strict=False) == "ok"
    trimmed = {"body": program["body"][:1], "helpers": []}
    assert _replay_outcome(trimmed, log, strict=True) == "drift"


def test_a_nested_tree_agrees_with_the_model() -> None:
    tree = {
        "k": "all",
        "c": [
            {
                "k": "race",
                "c": [{"k": "recv", "topic": "a", "timeout": 1800}, {"k": "sleep", "seconds": 600}],
            },
            {
                "k": "race",
                "c": [
                    {"k": "recv", "topic": "a", "timeout": 600},
                    {"k": "recv", "topic": "b", "timeout": 3000},
                ],
            },
        ],
    }
    program = {
        "body": [{"op": "tree", "tree": tree}, {"op": "recv", "topic": "a", "timeout": 60}],
        "helpers": [],
    }
    messages = [Message("a", 1, at=timedelta(minutes=5)), Message("b", 2, at=timedelta(minutes=40))]
    model = run_model(program, {}, messages)
    for crash in (None, 0, 1, 2):
        result = rt.run(program_wf, program, messages=messages, clock=START, crash_at=crash)
        assert_matches_model(result, model)
    # The second Recv("a") cannot take the message the first took: it times out.
    assert model.result == [["tree", [[0, 1], [0, None]]], ["recv", "a", None]]
