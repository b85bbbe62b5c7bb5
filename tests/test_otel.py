"""OpenTelemetry: step and activation spans, trace context through starts, children,
queues and messages, and metrics; checked with the SDK's in-memory exporter and reader
on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider, format_trace_id

from replaykit import (
    AsyncEngine,
    Call,
    Client,
    Engine,
    Queue,
    Recv,
    Retry,
    Send,
    Sleep,
    Step,
    workflow,
)
from replaykit.otel import current_trace_context

ROOT = Path(__file__).resolve().parent.parent
VERSION = "otel-v1"


class Telemetry:
    """An SDK tracer provider and meter provider of the test's own, with their exporters."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metrics])
        self.tracer = self.tracer_provider.get_tracer("tests")

    def engine(self, target: Any, **options: Any) -> Engine:
        options.setdefault("app_version", VERSION)
        options.setdefault("poll_interval", 0.05)
        return Engine(
            target,
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            **options,
        )

    def finished(self, prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith(prefix)]

    def of_run(self, workflow_id: str, prefix: str = "") -> list[ReadableSpan]:
        return [
            s
            for s in self.finished(prefix)
            if (s.attributes or {}).get("replaykit.workflow.id") == workflow_id
        ]

    def points(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found

    def close(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    telemetry = Telemetry()
    yield telemetry
    telemetry.close()


RAN: list[str] = []
FLAKY: dict[str, int] = {}


def note(label: str) -> str:
    RAN.append(label)
    return label


def flaky(key: str) -> str:
    FLAKY[key] = FLAKY.get(key, 0) + 1
    if FLAKY[key] == 1:
        raise ConnectionError(f"first attempt of {key} fails")
    RAN.append(key)
    return key


@workflow(name="otel-steps")
def steps_wf(key: str) -> Any:
    first = yield Step("first", note, f"{key}-first")
    second = yield Step("second", flaky, key, retry=Retry(max_attempts=3, interval=0))
    return [first, second]


@workflow(name="otel-sleepy")
def sleepy_wf(key: str) -> Any:
    a = yield Step("a", note, f"{key}-a")
    yield Sleep(0.05)
    b = yield Step("b", note, f"{key}-b")
    yield Sleep(0.05)
    c = yield Step("c", note, f"{key}-c")
    return [a, b, c]


@workflow(name="otel-child")
def child_wf(key: str) -> Any:
    return (yield Step("child-step", note, f"{key}-child"))


@workflow(name="otel-parent")
def parent_wf(key: str) -> Any:
    yield Step("before", note, f"{key}-before")
    return (yield Call(child_wf, key))


@workflow(name="otel-receiver")
def receiver_wf() -> Any:
    message = yield Recv("in")
    return (yield Step("got", note, message))


@workflow(name="otel-sender")
def sender_wf(target: str) -> Any:
    yield Step("prepare", note, "prepare")
    yield Send(target, "from-a-workflow", topic="in")
    return "sent"


def attrs_of(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_a_step_attempt_has_a_span_with_its_attributes(shared: Any, otel: Telemetry) -> None:
    FLAKY.clear()
    with otel.engine(shared) as engine:
        assert engine.run(steps_wf, "s1", workflow_id="s1", timeout=20) == ["s1-first", "s1"]
    steps = otel.of_run("s1", "step ")
    described = sorted(
        (
            s.name,
            attrs_of(s)["replaykit.position"],
            attrs_of(s)["replaykit.attempt"],
            attrs_of(s)["replaykit.outcome"],
        )
        for s in steps
    )
    assert described == [
        ("step first", 0, 1, "ok"),
        ("step second", 1, 1, "error"),
        ("step second", 1, 2, "ok"),
    ]
    failed = next(s for s in steps if attrs_of(s)["replaykit.outcome"] == "error")
    assert failed.status.status_code.name == "ERROR"
    assert [e.name for e in failed.events] == ["exception"]
    assert "ConnectionError" in str(failed.events[0].attributes)
    for span in steps:
        assert attrs_of(span)["replaykit.workflow.name"] == "otel-steps"
    (run,) = otel.of_run("s1", "workflow ")
    assert run.name == "workflow otel-steps"
    assert attrs_of(run)["replaykit.outcome"] == "ok"
    assert (
        attrs_of(run)["replaykit.position.first"],
        attrs_of(run)["replaykit.position.last"],
    ) == (
        0,
        1,
    )
    # Step spans are children of the activation's span, in its trace.
    for span in steps:
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id


def test_replayed_positions_get_no_span(shared: Any, otel: Telemetry) -> None:
    RAN.clear()
    # No warm cache: each wake-up rebuilds the run by replaying what it recorded.
    with otel.engine(shared, max_cached_runs=0) as engine:
        assert engine.run(sleepy_wf, "r1", workflow_id="r1", timeout=20) == [
            "r1-a",
            "r1-b",
            "r1-c",
        ]
    steps = otel.of_run("r1", "step ")
    assert sorted(s.name for s in steps) == ["step a", "step b", "step c"]
    assert len(steps) == len([r for r in RAN if r.startswith("r1-")]) == 3
    runs = sorted(otel.of_run("r1", "workflow "), key=lambda s: s.start_time or 0)
    # One span per activation that executed something: each wake-up is one.
    assert [attrs_of(s)["replaykit.outcome"] for s in runs] == ["suspended", "suspended", "ok"]
    # A wake-up's first work is to complete its Sleep's record.
    assert [
        (attrs_of(s)["replaykit.position.first"], attrs_of(s)["replaykit.position.last"])
        for s in runs
    ] == [(0, 1), (1, 3), (3, 4)]
    assert len({s.context.trace_id for s in runs}) == 3  # started with no span around it


def test_a_span_around_start_is_the_trace_of_the_run(shared: Any, otel: Telemetry) -> None:
    with otel.engine(shared) as engine:
        with otel.tracer.start_as_current_span("request") as request:
            handle = engine.start(parent_wf, "p1", workflow_id="p1")
            stored = handle.row().trace_context
        assert handle.result(timeout=20) == "p1-child"
    trace_id = request.get_span_context().trace_id
    assert stored is not None
    assert stored.startswith(
        f"00-{format_trace_id(trace_id)}-{request.get_span_context().span_id:016x}-"
    )
    spans = otel.of_run("p1") + otel.of_run("p1:1")
    assert spans and {s.context.trace_id for s in spans} == {trace_id}
    # The child's activation is a child of the parent's activation that started it.
    parent_runs = otel.of_run("p1", "workflow ")
    (child_run,) = otel.of_run("p1:1", "workflow ")
    assert child_run.parent is not None
    assert child_run.parent.span_id in {s.context.span_id for s in parent_runs}
    (child_step,) = otel.of_run("p1:1", "step ")
    assert child_step.parent is not None and child_step.parent.span_id == child_run.context.span_id
    first = min(parent_runs, key=lambda s: s.start_time or 0)
    assert first.parent is not None and first.parent.span_id == request.get_span_context().span_id


def test_the_trace_goes_through_a_queue_to_another_engine(shared: Any, otel: Telemetry) -> None:
    Queue("otel-q")
    with (
        otel.engine(shared, queues=[], executor_id="producer") as producer,
        otel.tracer.start_as_current_span("enqueue") as request,
    ):
        producer.enqueue("otel-q", child_wf, "q1", workflow_id="q1")
        producer.enqueue_many("otel-q", child_wf, [("q2",)])
    trace_id = request.get_span_context().trace_id
    with otel.engine(shared, queues=["otel-q"], executor_id="worker") as worker:
        assert worker.handle("q1").result(timeout=20) == "q1-child"
        others = [r for r in worker.list_workflows(queue="otel-q") if r.workflow_id != "q1"]
        assert [worker.handle(r.workflow_id).result(timeout=20) for r in others] == ["q2-child"]
    for workflow_id in ("q1", others[0].workflow_id):
        spans = otel.of_run(workflow_id)
        assert len(spans) == 2  # its activation and its step
        assert {s.context.trace_id for s in spans} == {trace_id}


def test_a_client_start_and_an_async_start_carry_the_trace(shared: Any, otel: Telemetry) -> None:
    with (
        otel.engine(shared) as engine,
        Client(shared, app_version=VERSION, executor_id="local") as client,
    ):
        with otel.tracer.start_as_current_span("client") as outer:
            client.start("otel-child", "c1", workflow_id="c1")
        assert engine.handle("c1").result(timeout=20) == "c1-child"
    assert {s.context.trace_id for s in otel.of_run("c1")} == {outer.get_span_context().trace_id}

    async def main() -> int:
        async with AsyncEngine(
            shared,
            app_version=VERSION,
            poll_interval=0.05,
            tracer_provider=otel.tracer_provider,
            meter_provider=otel.meter_provider,
        ) as aengine:
            with otel.tracer.start_as_current_span("async") as span:
                handles = await asyncio.gather(
                    aengine.start(child_wf, "a1", workflow_id="a1"),
                    aengine.start(child_wf, "a2", workflow_id="a2"),
                )
            for handle in handles:
                await handle.result(timeout=20)
            return span.get_span_context().trace_id

    trace_id = asyncio.run(main())
    for workflow_id in ("a1", "a2"):
        assert {s.context.trace_id for s in otel.of_run(workflow_id)} == {trace_id}


def _links(span: ReadableSpan) -> list[tuple[int, int]]:
    return [(link.context.trace_id, link.context.span_id) for link in span.links]


def test_a_message_links_the_receiving_activation_to_its_sender(
    shared: Any, otel: Telemetry
) -> None:
    with otel.engine(shared) as engine, Client(shared, app_version=VERSION) as client:
        engine.start(receiver_wf, workflow_id="m1")
        engine.start(receiver_wf, workflow_id="m2")
        engine.start(receiver_wf, workflow_id="m3")
        time.sleep(0.2)  # each waits in its Recv
        with otel.tracer.start_as_current_span("sender") as sender:
            engine.send("m1", "hello", topic="in")
        with otel.tracer.start_as_current_span("client-sender") as client_sender:
            client.send("m2", "hi", topic="in")
        engine.start(sender_wf, "m3", workflow_id="sender")
        for workflow_id in ("m1", "m2", "m3"):
            engine.handle(workflow_id).result(timeout=20)
    expected = {
        "m1": (sender.get_span_context().trace_id, sender.get_span_context().span_id),
        "m2": (
            client_sender.get_span_context().trace_id,
            client_sender.get_span_context().span_id,
        ),
    }
    for workflow_id, link in expected.items():
        receiving = [s for s in otel.of_run(workflow_id, "workflow ") if s.links]
        assert [_links(s) for s in receiving] == [[link]]
    # A `Send` inside a workflow: the link is to the sending activation's span.
    (sending,) = otel.of_run("sender", "workflow ")
    receiving = [s for s in otel.of_run("m3", "workflow ") if s.links]
    assert [_links(s) for s in receiving] == [[(sending.context.trace_id, sending.context.span_id)]]


def test_metrics_count_steps_runs_and_queue_depth(shared: Any, otel: Telemetry) -> None:
    Queue("otel-depth")
    with otel.engine(shared, queues=["otel-depth"]) as engine:
        for index in range(3):
            engine.run(child_wf, f"k{index}", workflow_id=f"k{index}", timeout=20)
        # Held back for a minute: they stay ENQUEUED, counted by the gauge.
        engine.enqueue_many("otel-depth", child_wf, [("d1",), ("d2",)], delay=60)
        steps = otel.points("replaykit.steps")
        assert [(p.attributes, p.value) for p in steps] == [
            ({"replaykit.step.name": "child-step", "replaykit.outcome": "ok"}, 3)
        ]
        (duration,) = otel.points("replaykit.step.duration")
        assert duration.count == 3 and duration.sum >= 0
        (started,) = otel.points("replaykit.runs.started")
        assert started.value == 5 and started.attributes == {
            "replaykit.workflow.name": "otel-child"
        }
        # A waiter may see a run finished (the store's note) a moment before the engine
        # that finished it has counted it: the count is looked at until it settles.
        deadline = time.monotonic() + 5
        while sum(p.value for p in otel.points("replaykit.runs.finished")) < 3:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        (finished,) = otel.points("replaykit.runs.finished")
        assert finished.value == 3
        assert finished.attributes == {
            "replaykit.workflow.name": "otel-child",
            "replaykit.status": "SUCCESS",
        }
        depth = {
            p.attributes["replaykit.queue"]: p.value for p in otel.points("replaykit.queue.depth")
        }
        assert depth["otel-depth"] == 2
        waiting = engine.list_workflows(queue="otel-depth")
        engine.cancel(waiting[0].workflow_id)
        cancelled = [
            p.value
            for p in otel.points("replaykit.runs.finished")
            if p.attributes["replaykit.status"] == "CANCELLED"
        ]
        assert cancelled == [1]
    # A closed engine reads no depth.
    assert otel.points("replaykit.queue.depth") == []


def test_no_op_providers_trace_nothing_and_runs_go_on(shared: Any) -> None:
    with Engine(
        shared, app_version=VERSION, poll_interval=0.05, tracer_provider=NoOpTracerProvider()
    ) as engine:
        assert not engine.telemetry.tracing
        with NoOpTracerProvider().get_tracer("t").start_as_current_span("x"):
            handle = engine.start(child_wf, "n1", workflow_id="n1")
        assert handle.result(timeout=20) == "n1-child"
        assert handle.row().trace_context is None


def test_replaykit_works_without_opentelemetry_installed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if not installed: importing it fails
        from replaykit import Engine, Step, workflow
        from replaykit.otel import current_trace_context

        @workflow(name="no-otel")
        def wf():
            return (yield Step("s", lambda: 7))

        with Engine("memory://") as engine:
            assert not engine.telemetry.active
            assert engine.run(wf, timeout=20) == 7
            engine.start(wf, workflow_id="w")
            assert engine.handle("w").row().trace_context is None
        assert current_trace_context() is None
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_current_trace_context_is_none_outside_a_span(otel: Telemetry) -> None:
    assert current_trace_context() is None
    with otel.tracer.start_as_current_span("s") as span:
        text = current_trace_context()
    assert text is not None and format_trace_id(span.get_span_context().trace_id) in text


# -- a crash mid-step, in a process of its own ---------------------------------------------

CRASH_CHILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
import test_otel

folder = Path(sys.argv[2])

class FileExporter(SpanExporter):
    # Each ended span as a line, written at once: what this process exported survives it.
    def export(self, spans):
        with open(folder / "spans.jsonl", "a") as out:
            for span in spans:
                out.write(json.dumps(test_otel.described(span)) + "\\n")
        return SpanExportResult.SUCCESS

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
with test_otel.crash_engine(sys.argv[1], folder, provider) as engine:
    engine.start(test_otel.crash_wf, str(folder), workflow_id="crash-1")
    while True:
        time.sleep(1)  # killed in step two
"""


def described(span: Any) -> dict[str, Any]:
    return {"name": span.name, "attributes": dict(span.attributes or {})}


def crash_engine(target: Any, folder: Path, provider: Any) -> Engine:
    return Engine(
        target,
        app_version=VERSION,
        executor_id="crasher",
        poll_interval=0.05,
        executor_wait=30,
        tracer_provider=provider,
    )


def crash_step(folder: str, name: str) -> str:
    where = Path(folder)
    with open(where / "ran.txt", "a") as out:
        out.write(name + "\n")
    if name == "two" and (where / "crash-here").exists():
        (where / "crash-here").unlink()
        (where / "in-two").touch()
        time.sleep(600)  # killed here
    return name


@workflow(name="otel-crash")
def crash_wf(folder: str) -> Any:
    done = []
    for name in ("one", "two", "three"):
        done.append((yield Step(name, crash_step, folder, name)))
    return done


def test_a_crash_mid_step_and_its_recovery_export_no_span_twice(
    store_url: str, tmp_path: Path, otel: Telemetry
) -> None:
    if store_url.startswith("memory"):
        pytest.skip("a memory store does not survive its process")
    (tmp_path / "crash-here").touch()
    script = CRASH_CHILD.format(tests=str(ROOT / "tests"))
    with open(tmp_path / "stderr.txt", "w") as errors:
        child = subprocess.Popen(
            [sys.executable, "-c", script, store_url, str(tmp_path)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=tmp_path,
            stderr=errors,
        )
        try:
            deadline = time.monotonic() + 60
            while not (tmp_path / "in-two").exists():
                assert child.poll() is None, (tmp_path / "stderr.txt").read_text()
                assert time.monotonic() < deadline, "the child never reached step two"
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
    before = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    # Step one ended and was exported; step two was open at the kill: never exported.
    assert [s["name"] for s in before] == ["step one"]

    with crash_engine(store_url, tmp_path, otel.tracer_provider) as engine:
        assert engine.handle("crash-1").result(timeout=30) == ["one", "two", "three"]
        records = engine.steps("crash-1")
    after = [described(s) for s in otel.of_run("crash-1", "step ")]
    exported = before + after
    positions = sorted(s["attributes"]["replaykit.position"] for s in exported)
    # One span per recorded position: the replayed position 0 got none in recovery.
    assert positions == [r.position for r in records] == [0, 1, 2]
    assert (tmp_path / "ran.txt").read_text().split() == ["one", "two", "two", "three"]
