"""Continue-as-new: a run starts over under its id with new arguments and an empty log.

On every store: the arguments reach the next generation, the log starts empty,
messages sent before and during a generation carry over, `handle.result()`
follows to the last generation, `send` reaches the current one, the earlier
generations are listed and readable, `gc` and `delete` collect them, and a crash
before or after the continue commits ends like an uninterrupted run. Also the
testing kit on virtual time, the CLI's `workflows show`, and the refusals.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from conftest import wait_for
from replaykit import All, ContinueAsNew, Engine, Recv, Sleep, Step, workflow
from replaykit.cli import cli
from replaykit.errors import RecordConflict, RunContinued, SerializationError
from replaykit.interpreter import Completed, ContinuedAsNew, Effect, Interpreter
from replaykit.log import Record, Status, Value
from replaykit.stores import open_store
from replaykit.stores.base import Store, WorkflowFilter
from replaykit.testing import TooManyGenerations, check_determinism, replay, run
from replaykit.testing.replay import ResultMismatch


def bump(n: int) -> int:
    return n + 1


@workflow(name="can.counter")
def counter(i: int, until: int, every: int = 2):
    """Counts to `until`, continuing as new every `every` steps."""
    for _ in range(every):
        i = yield Step("bump", bump, i)
        if i >= until:
            return i
    yield ContinueAsNew(i, until, every=every)


@workflow(name="can.collector")
def collector(seen: list[str], want: int):
    """Takes one message per generation; done once it holds `want` of them."""
    message = yield Recv("in")
    seen = [*seen, message]
    if len(seen) >= want:
        return seen
    yield ContinueAsNew(seen, want)


@workflow(name="can.gated")
def gated(generation: int):
    """Generation 0 waits for "go" and continues; generation 1 returns at once."""
    if generation == 0:
        yield Recv("go")
        yield ContinueAsNew(1)
    value = yield Step("bump", bump, generation)
    return value


@workflow(name="can.bad_args")
def bad_args(n: int):
    yield Step("bump", bump, n)
    yield ContinueAsNew(object())


def _generations(store: Store, workflow_id: str) -> list[Any]:
    rows = store.list_workflows(WorkflowFilter(continued_as=workflow_id))
    return sorted(rows, key=lambda row: row.generation)


# -- on every store -----------------------------------------------------------------------------


def test_arguments_reach_the_next_generation_and_its_log_starts_empty(engine: Engine) -> None:
    handle = engine.start(counter, 0, 5, workflow_id="can-count")
    assert handle.result(timeout=20) == 5
    store = engine.store
    live = store.get_workflow("can-count")
    assert live is not None and live.status is Status.SUCCESS and live.generation == 2
    assert live.inputs == {"args": [4, 5], "kwargs": {"every": 2}}
    assert [r.kind for r in store.load_log("can-count")] == ["step"]
    generations = _generations(store, "can-count")
    assert [g.workflow_id for g in generations] == ["can-count#0", "can-count#1"]
    assert [g.status for g in generations] == [Status.CONTINUED] * 2
    assert [g.inputs["args"] for g in generations] == [[0, 5], [2, 5]]
    # Each earlier generation is inspectable: its own steps, positions from 0.
    for generation in generations:
        steps = engine.steps(generation.workflow_id)
        assert [(r.position, r.name) for r in steps] == [(0, "bump"), (1, "bump")]
    assert [r.outcome for r in engine.steps("can-count#1")] == [Value(3), Value(4)]


def test_messages_sent_before_and_during_carry_over(engine: Engine) -> None:
    engine.start(collector, [], 3, workflow_id="can-collect")
    # Sent before any generation took one, and two more while generations run.
    engine.send("can-collect", "a", topic="in")
    wait_for(lambda: engine.store.get_workflow("can-collect").generation >= 1, "generation 1")  # type: ignore[union-attr]
    engine.send("can-collect", "b", topic="in")
    engine.send("can-collect", "c", topic="in")
    assert engine.handle("can-collect").result(timeout=20) == ["a", "b", "c"]
    assert len(_generations(engine.store, "can-collect")) == 2


def test_send_reaches_the_current_generation_and_result_follows(engine: Engine) -> None:
    handle = engine.start(gated, 0, workflow_id="can-gated")
    wait_for(lambda: len(engine.steps("can-gated")) == 1, "generation 0 to wait")
    engine.send("can-gated", "now", topic="go")
    assert handle.result(timeout=20) == 2
    archived = engine.store.get_workflow("can-gated#0")
    assert archived is not None and archived.continued_as == "can-gated"
    assert [r.kind for r in engine.steps("can-gated#0")] == ["recv"]
    # An archived generation has no result of its own: it says where the run went.
    with pytest.raises(RunContinued, match="can-gated"):
        engine.handle("can-gated#0").result(timeout=5)


def test_gc_collects_generations_and_delete_takes_them(engine: Engine) -> None:
    engine.start(counter, 0, 7, workflow_id="can-gc").result(timeout=20)
    engine.start(collector, [], 2, workflow_id="can-gc-live")
    engine.send("can-gc-live", "x", topic="in")
    wait_for(lambda: len(_generations(engine.store, "can-gc-live")) == 1, "a live run's generation")
    later = datetime.now(UTC) + timedelta(days=1)
    # The live run stays; its earlier generation is collected by age, as finished runs
    # are. The finished run goes with its three generations, counted as one run.
    assert engine.garbage_collect(older_than=later) == 2
    assert engine.store.get_workflow("can-gc-live") is not None
    assert _generations(engine.store, "can-gc-live") == []
    assert engine.store.get_workflow("can-gc") is None
    assert engine.store.load_log("can-gc#0") == []
    engine.start(counter, 0, 5, workflow_id="can-del").result(timeout=20)
    assert engine.delete("can-del")
    assert _generations(engine.store, "can-del") == []


def test_many_runs_continue_at_once(engine: Engine) -> None:
    # Not alone on the scheduler: steps run on the pool and commit in shared batches.
    handles = [engine.start(counter, 0, 9, workflow_id=f"can-many-{i}") for i in range(20)]
    assert [h.result(timeout=30) for h in handles] == [9] * 20
    assert all(len(_generations(engine.store, h.workflow_id)) == 4 for h in handles)


def test_unencodable_arguments_fail_the_run_clearly(engine: Engine) -> None:
    handle = engine.start(bad_args, 1, workflow_id="can-bad")
    with pytest.raises(SerializationError, match=r"can-bad.*ContinueAsNew"):
        handle.result(timeout=20)
    assert _generations(engine.store, "can-bad") == []


# -- crashes -----------------------------------------------------------------------------------


class _RefusingOnce:
    """The store of a process that dies at the continue: it is refused, nothing committed."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.refused = 0

    def continue_workflow(self, *args: Any, **kwargs: Any) -> Any:
        self.refused += 1
        raise RecordConflict("simulated crash before the continue commits")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_crash_before_the_continue_commits_replays_to_it(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    store = open_store(url)
    dying = _RefusingOnce(store)
    with Engine(dying, poll_interval=0.1) as first:  # type: ignore[arg-type]
        first.start(gated, 0, workflow_id="can-crash")
        wait_for(lambda: len(first.steps("can-crash")) == 1, "generation 0 to wait")
        first.send("can-crash", "go", topic="go")
        wait_for(lambda: dying.refused >= 1, "the continue to be refused")
    store = open_store(url)
    row = store.get_workflow("can-crash")
    assert row is not None and row.status is Status.PENDING and row.generation == 0
    store.close()
    with Engine(url, poll_interval=0.1) as second:
        assert second.handle("can-crash").result(timeout=20) == 2
        assert len(_generations(second.store, "can-crash")) == 1


def test_after_the_continue_committed_recovery_starts_the_next_generation(
    store_url: str,
) -> None:
    if store_url == "memory://":
        pytest.skip("a memory store does not outlive its engine's process")
    with Engine(store_url, poll_interval=0.1) as first:
        first.start(gated, 0, workflow_id="can-after")
        wait_for(lambda: len(first.steps("can-after")) == 1, "generation 0 to wait")
    # What the dead process committed last: the continue, nothing of the next generation.
    store = open_store(store_url)
    try:
        row = store.get_workflow("can-after")
        assert row is not None
        store.continue_workflow(
            "can-after",
            {"args": [1], "kwargs": {}},
            generation=0,
            executor_id=row.executor_id,
            now=datetime.now(UTC),
        )
    finally:
        store.close()
    with Engine(store_url, poll_interval=0.1) as second:
        assert second.handle("can-after").result(timeout=20) == 2


# -- the interpreter and the testing kit ----------------------------------------------------------


def test_the_interpreter_decides_continued_as_new_and_refuses_drift() -> None:
    interp = Interpreter(counter.fn(0, 9, every=1), [], workflow_name="c", workflow_id="i")
    decision = interp.start()
    assert isinstance(decision, Effect)
    done = interp.resume(Record(0, "step", "bump", Value(1)))
    assert done == ContinuedAsNew((1, 9), {"every": 1})
    recorded = [Record(0, "step", "bump", Value(1)), Record(1, "step", "bump", Value(2))]
    drifted = Interpreter(counter.fn(0, 9, every=1), recorded, workflow_name="c", workflow_id="i")
    with pytest.raises(Exception, match="continued as new here, but the log records 1 more"):
        drifted.start()
    last = Interpreter(
        counter.fn(8, 9), [Record(0, "step", "bump", Value(9))], workflow_name="c", workflow_id="i"
    )
    assert last.start() == Completed(9)


def test_continue_as_new_is_refused_inside_a_composite() -> None:
    with pytest.raises(TypeError, match="cannot hold ContinueAsNew"):
        All(Sleep(1), ContinueAsNew(1))  # type: ignore[arg-type]


def test_the_testing_kit_follows_generations_on_virtual_time() -> None:
    @workflow(name="can.kit_poller")
    def poller(i: int):
        for _ in range(3):
            i = yield Step("bump", bump, i)
            yield Sleep(timedelta(hours=1))
        if i >= 9:
            return i
        yield ContinueAsNew(i)

    result = run(poller, 0, real_steps=True)
    assert result.unwrap() == 9
    assert [g.args["args"] for g in result.generations] == [[0], [3]]
    assert [len(g) for g in result.generations] == [6, 6]
    assert all(g.status == Status.CONTINUED.value for g in result.generations)
    assert result.elapsed == timedelta(hours=9)
    # Each generation's log replays against the code, ending in its continue.
    replayed = replay(poller, result.generations[1])
    assert replayed.status is Status.CONTINUED and replayed.result == ((6,), {})
    with pytest.raises(ResultMismatch, match="continued as new after the last recorded"):
        replay(poller, attrs.evolve(result.generations[1], status="SUCCESS"))
    with pytest.raises(TooManyGenerations, match="at most 1 generation"):
        run(poller, 0, max_generations=1, real_steps=True)


def test_check_determinism_crashes_at_the_continue() -> None:
    report = check_determinism(counter, 0, 4, real_steps=True)
    continues = [c for c in report.commits if c.kind == "continue_as_new"]
    assert [c.name for c in continues] == ["generation 1"]
    assert report.crash_runs == len(report.commits)


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_show_lists_the_earlier_generations(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with Engine(url, poll_interval=0.1) as eng:
        eng.start(counter, 0, 5, workflow_id="can-cli").result(timeout=20)
    runner = CliRunner()
    shown = runner.invoke(cli, ["workflows", "show", "can-cli", "--url", url])
    assert shown.exit_code == 0, shown.output
    assert "generation" in shown.output and "earlier generations" in shown.output
    assert "can-cli#0" in shown.output and "can-cli#1" in shown.output
    data = json.loads(
        runner.invoke(cli, ["workflows", "show", "can-cli", "--url", url, "--json"]).output
    )
    assert [(g["workflow_id"], g["steps"]) for g in data["generations"]] == [
        ("can-cli#0", 2),
        ("can-cli#1", 2),
    ]
    archived = runner.invoke(cli, ["workflows", "show", "can-cli#0", "--url", url])
    assert "0 of can-cli (continued as new)" in archived.output
    assert "CONTINUED" in archived.output
    listed = runner.invoke(cli, ["workflows", "list", "--url", url, "--status", "CONTINUED"])
    assert listed.exit_code == 0 and "can-cli#1" in listed.output
    resumed = runner.invoke(cli, ["workflows", "resume", "can-cli#0", "--url", url])
    assert resumed.exit_code != 0 and "continued as new" in resumed.output


def test_a_continued_generation_is_not_a_finished_run_in_telemetry(tmp_path: Any) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    try:
        with Engine(
            f"sqlite:///{tmp_path / 'otel.db'}",
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        ) as eng:
            assert eng.start(counter, 0, 5, workflow_id="can-otel").result(timeout=20) == 5
            # A waiter may see the run finished (the store's note) a moment before the
            # engine has counted it and ended its span: looked at until they settle.
            deadline = time.monotonic() + 5
            while True:
                data = reader.get_metrics_data()
                finished = [
                    point
                    for resource in (data.resource_metrics if data else ())
                    for scope in resource.scope_metrics
                    for metric in scope.metrics
                    if metric.name == "replaykit.runs.finished"
                    for point in metric.data.data_points
                ]
                ended = [s for s in spans.get_finished_spans() if s.name.startswith("workflow ")]
                if (finished and len(ended) >= 3) or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
        # Three generations, one run: one finish, SUCCESS; each earlier generation's
        # activation span ends "continued".
        assert [(p.attributes["replaykit.status"], p.value) for p in finished] == [("SUCCESS", 1)]
        outcomes = [
            (s.attributes or {}).get("replaykit.outcome")
            for s in spans.get_finished_spans()
            if s.name.startswith("workflow ")
        ]
        assert outcomes == ["continued", "continued", "ok"]
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()


# -- a deadline spans every generation -----------------------------------------------------


@workflow(name="can-under-a-deadline")
def hourly(n: int) -> Any:
    for _ in range(3):
        yield Sleep(timedelta(hours=1))
    yield ContinueAsNew(n + 1)


def test_a_deadline_spans_the_generations_on_virtual_time() -> None:
    result = run(hourly, 0, workflow_timeout=timedelta(hours=10))
    assert result.status is Status.CANCELLED
    assert result.elapsed == timedelta(hours=10)
    assert len(result.generations) == 3  # three of 3 hours each, the 4th cut short
    assert type(result.error).__name__ == "WorkflowDeadlineExceeded"


def test_a_deadline_spans_the_generations_on_an_engine(store_url: str) -> None:
    from replaykit import VirtualClock
    from replaykit.errors import WorkflowDeadlineExceeded

    with Engine(store_url, poll_interval=0.1, clock=VirtualClock(autojump=True)) as engine:
        handle = engine.start(hourly, 0, workflow_id="can-deadline", timeout=timedelta(hours=10))
        with pytest.raises(WorkflowDeadlineExceeded, match="timeout 36000s"):
            handle.result(timeout=30)
        row = engine.store.get_workflow("can-deadline")
    assert row is not None and row.status is Status.CANCELLED and row.generation == 3


def test_list_workflows_finds_a_runs_generations_and_forks(store_url: str) -> None:
    from replaykit import Client

    with Engine(store_url, poll_interval=0.1) as engine:
        engine.start(counter, 0, 5, workflow_id="can-list").result(timeout=20)
        generations = engine.list_workflows(continued_as="can-list")
        fork = engine.fork("can-list#0", 1)
        forks = engine.list_workflows(forked_from="can-list#0")
        if not store_url.startswith("memory"):
            with Client(store_url) as client:
                assert [r.workflow_id for r in client.list_workflows(continued_as="can-list")] == [
                    r.workflow_id for r in generations
                ]
    assert generations and all(r.status is Status.CONTINUED for r in generations)
    assert {r.continued_as for r in generations} == {"can-list"}
    assert [r.workflow_id for r in forks] == [fork.workflow_id]


# -- the start that created a run finds it after it continued ----------------------------------


def test_the_start_that_created_a_run_returns_it_after_it_continued(engine: Engine) -> None:
    from replaykit import Client, WorkflowIdConflict

    handle = engine.start(collector, [], 3, workflow_id="can-again")
    engine.send("can-again", "a", topic="in")

    def continued() -> bool:
        row = engine.store.get_workflow("can-again")
        return row is not None and row.generation >= 1

    wait_for(continued, "the first continue")
    # The documented way to find a run again after a lost acknowledgement: re-issue
    # the start that created it (generation 0's arguments), from an engine or a client.
    assert engine.start(collector, [], 3, workflow_id="can-again").workflow_id == "can-again"
    client = Client(engine.store, app_version=engine.app_version, executor_id=engine.executor_id)
    assert client.start("can.collector", [], 3, workflow_id="can-again").workflow_id == (
        "can-again"
    )
    # The current generation's arguments are the run too, as they were before.
    assert engine.start(collector, ["a"], 3, workflow_id="can-again").workflow_id == "can-again"
    # Any other arguments are another run: refused, saying what the run was created with.
    with pytest.raises(WorkflowIdConflict, match=r"created with \{.*\[\],3\]"):
        engine.start(collector, ["other"], 3, workflow_id="can-again")
    engine.send("can-again", "b", topic="in")
    engine.send("can-again", "c", topic="in")
    assert handle.result(timeout=20) == ["a", "b", "c"]
    assert engine.start(collector, [], 3, workflow_id="can-again").result(timeout=5) == [
        "a",
        "b",
        "c",
    ]
