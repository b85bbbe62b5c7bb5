"""OpenTelemetry for replaykit: spans, trace context carried with runs and messages, metrics.

Optional: `opentelemetry-api` (`pip install 'replaykit[otel]'`) is imported on
first use, and without it, or with no tracer or meter provider configured (the
API's no-op or its unset global), every hook here is a no-op behind one flag
that the engine tests before doing any work.

What is traced (docs/observability.md tells the why):

- a span `step <name>` for each attempt of a step body that really runs, never
  for a replayed position: a span is exported when it ends, and a span open at
  a crash never ends, so recovery never duplicates one;
- a span `workflow <name>` for each *activation* of a run that executes new
  work (runs a step, commits a record, finishes the run). A run lives across
  processes and crashes, and the API lets nobody choose a span's id, so no
  one span can stand for the whole run: its activations are its spans, each a
  child of the trace context stored with the run when it was created;
- the trace context current where a run is created, and where a message is
  sent, is stored with it as W3C `traceparent` text; a receiving activation's
  span links to the sender's context.

This module imports nothing of replaykit, so every layer above the stores may
use it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

import attrs

__all__ = [
    "QUEUE_DEPTH_CAP",
    "StepToken",
    "Telemetry",
    "current_trace_context",
]

#: The most ENQUEUED runs the queue-depth gauge counts per queue and collection: it
#: reads them with one bounded listing (the store protocol has no count), so a
#: reading of QUEUE_DEPTH_CAP means "at least that many".
QUEUE_DEPTH_CAP = 1000

_INSTRUMENTATION = "replaykit"

# Attribute names, shared by the spans and the metrics.
WORKFLOW_ID = "replaykit.workflow.id"
WORKFLOW_NAME = "replaykit.workflow.name"
STEP_NAME = "replaykit.step.name"
POSITION = "replaykit.position"
ATTEMPT = "replaykit.attempt"
OUTCOME = "replaykit.outcome"
FIRST_POSITION = "replaykit.position.first"
LAST_POSITION = "replaykit.position.last"
STATUS = "replaykit.status"
QUEUE = "replaykit.queue"


@attrs.frozen
class _Api:
    """The parts of `opentelemetry-api` replaykit uses, imported once."""

    trace: ModuleType
    metrics: ModuleType
    context: ModuleType
    propagator: Any  # W3C trace context, whatever global propagator is set
    status_error: Any  # Status(StatusCode.ERROR)


_api_lock = threading.Lock()
_api_loaded = False
_api_found: _Api | None = None


def _api() -> _Api | None:
    """The OpenTelemetry API, or None when it is not installed (imported on first use)."""
    global _api_loaded, _api_found
    if _api_loaded:
        return _api_found
    with _api_lock:
        if not _api_loaded:
            try:
                from opentelemetry import context, metrics, trace
                from opentelemetry.trace.propagation.tracecontext import (
                    TraceContextTextMapPropagator,
                )
            except ImportError:
                _api_found = None
            else:
                _api_found = _Api(
                    trace,
                    metrics,
                    context,
                    TraceContextTextMapPropagator(),
                    trace.Status(trace.StatusCode.ERROR),
                )
            _api_loaded = True
    return _api_found


def current_trace_context() -> str | None:
    """The W3C `traceparent` of the span current on this thread (or task), else None.

    Always the W3C format, whatever global propagator the application set:
    it is what the store's `trace_context` columns hold.
    """
    api = _api()
    if api is None:
        return None
    if not api.trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    api.propagator.inject(carrier)
    return carrier.get("traceparent")


def _parent(api: _Api, text: str | None) -> Any:
    """The context to start a span in: the stored one, else an empty one (a new trace).

    Never the thread's current context: the scheduler's threads run every run's
    work, and a span current there belongs to someone else.
    """
    if text:
        found = api.propagator.extract({"traceparent": text})
        if api.trace.get_current_span(found).get_span_context().is_valid:
            return found
    return api.context.Context()


def _traceparent_of(api: _Api, span: Any) -> str | None:
    carrier: dict[str, str] = {}
    api.propagator.inject(carrier, context=api.trace.set_span_in_context(span))
    return carrier.get("traceparent")


def _tracer_of(api: _Api, provider: Any) -> Any:
    """A tracer, or None when spans would go nowhere (checked once, not per span)."""
    if provider is None:
        provider = api.trace.get_tracer_provider()
        # The unset global: spans made through it stay no-ops until the application
        # sets a provider, which it must do before creating engines (documented).
        if isinstance(provider, api.trace.ProxyTracerProvider):
            return None
    if isinstance(provider, api.trace.NoOpTracerProvider):
        return None
    return provider.get_tracer(_INSTRUMENTATION)


def _meter_of(api: _Api, provider: Any) -> Any:
    if provider is None:
        provider = api.metrics.get_meter_provider()
        # The API's unset global is a private proxy class: told apart by name.
        if type(provider).__name__ == "_ProxyMeterProvider":
            return None
    if isinstance(provider, api.metrics.NoOpMeterProvider):
        return None
    return provider.get_meter(_INSTRUMENTATION)


@attrs.define(slots=True, eq=False)
class _RunActivation:
    """One activation of a run, as its span will tell it."""

    name: str
    trace_context: str | None
    started_ns: int
    span: Any = None  # started on the first new work (`Telemetry.span_of`)
    first: int | None = None
    last: int | None = None


@attrs.define(slots=True, eq=False)
class StepToken:
    """One step attempt under way: its span (if traced), its start, its attributes."""

    span: Any
    detach: Any  # the token that makes the span current, or None
    started: float
    attributes: dict[str, Any]


class Telemetry:
    """What one engine reports to OpenTelemetry.

    `tracing` and `metering` are decided once, when the engine is built: the
    hot path tests them and does nothing more when they are False. The
    providers default to the global ones, read then.
    """

    def __init__(
        self, *, tracer_provider: Any = None, meter_provider: Any = None, enabled: bool = True
    ) -> None:
        # Disabled: not even the API is imported (a runner with no engine around it).
        self._api = _api() if enabled else None
        self._tracer: Any = None
        self._meter: Any = None
        self._runs: dict[str, _RunActivation] = {}
        self._lock = threading.Lock()
        self._queue_depth: Callable[[], Iterable[tuple[str, int]]] | None = None
        api = self._api
        if api is not None:
            self._tracer = _tracer_of(api, tracer_provider)
            self._meter = _meter_of(api, meter_provider)
        self.tracing = self._tracer is not None
        self.metering = self._meter is not None
        self.active = self.tracing or self.metering
        if self._meter is not None:
            meter = self._meter
            self._steps = meter.create_counter(
                "replaykit.steps", unit="{attempt}", description="Step attempts run, by outcome"
            )
            self._step_duration = meter.create_histogram(
                "replaykit.step.duration", unit="s", description="How long step attempts ran"
            )
            self._runs_started = meter.create_counter(
                "replaykit.runs.started", unit="{run}", description="Runs created by this engine"
            )
            self._runs_finished = meter.create_counter(
                "replaykit.runs.finished",
                unit="{run}",
                description="Runs this engine finished, parked or cancelled, by status",
            )
            meter.create_observable_gauge(
                "replaykit.queue.depth",
                callbacks=[self._observe_depth],
                unit="{run}",
                description=f"ENQUEUED runs per queue this engine listens to (at most "
                f"{QUEUE_DEPTH_CAP} counted)",
            )

    # -- trace context -------------------------------------------------------------------

    def context_for_new_run(self, parent_id: str | None) -> str | None:
        """The trace context a new run stores: its parent activation's span for a child,
        else the caller's current span."""
        if not self.tracing:
            return None
        if parent_id is not None:
            span = self.span_of(parent_id)
            if span is not None:
                api = self._api
                assert api is not None
                return _traceparent_of(api, span)
        return current_trace_context()

    def context_of(self, workflow_id: str) -> str | None:
        """The trace context of a run's activation span (a `Send` stores it)."""
        if not self.tracing:
            return None
        span = self.span_of(workflow_id)
        if span is None:
            return None
        api = self._api
        assert api is not None
        return _traceparent_of(api, span)

    # -- activation spans ----------------------------------------------------------------

    def begin(
        self, workflow_id: str, name: str, trace_context: str | None, started_ns: int
    ) -> None:
        """An activation of the run knows its row; its span starts on its first new work."""
        # One activation per run at a time (the scheduler's rule), so this replaces
        # nothing but an entry whose activation never reached `end`.
        with self._lock:
            self._runs[workflow_id] = _RunActivation(name, trace_context, started_ns)

    def span_of(self, workflow_id: str) -> Any:
        """The run's activation span, started now if this is its first new work; None if
        no activation of it is known here."""
        with self._lock:
            run = self._runs.get(workflow_id)
            if run is None:
                return None
            if run.span is None:
                api = self._api
                assert api is not None and self._tracer is not None
                run.span = self._tracer.start_span(
                    f"workflow {run.name}",
                    context=_parent(api, run.trace_context),
                    start_time=run.started_ns,
                    attributes={WORKFLOW_ID: workflow_id, WORKFLOW_NAME: run.name},
                )
            return run.span

    def executed(self, workflow_id: str, position: int) -> None:
        """The activation carried out `position` (new work: its span starts if not yet)."""
        if self.span_of(workflow_id) is None:
            return
        with self._lock:
            run = self._runs.get(workflow_id)
            if run is not None:
                run.first = position if run.first is None else min(run.first, position)
                run.last = position if run.last is None else max(run.last, position)

    def link(self, workflow_id: str, trace_context: str | None) -> None:
        """The activation took in a message sent under `trace_context`: link its span."""
        if not trace_context:
            return
        span = self.span_of(workflow_id)
        api = self._api
        if span is None or api is None:
            return
        parent = api.propagator.extract({"traceparent": trace_context})
        sender = api.trace.get_current_span(parent).get_span_context()
        if sender.is_valid:
            span.add_link(sender)

    def end(self, workflow_id: str, outcome: str) -> None:
        """The activation is over: end its span (if it did new work) with `outcome`."""
        with self._lock:
            run = self._runs.pop(workflow_id, None)
        if run is None or run.span is None:
            return
        span = run.span
        if run.first is not None:
            span.set_attribute(FIRST_POSITION, run.first)
            span.set_attribute(LAST_POSITION, run.last)
        span.set_attribute(OUTCOME, outcome)
        if outcome == "error":
            api = self._api
            assert api is not None
            span.set_status(api.status_error)
        span.end()

    # -- step attempts -------------------------------------------------------------------

    def start_step(
        self, workflow_id: str, workflow_name: str, step_name: str, position: int, attempt: int
    ) -> StepToken:
        """A step body is about to run: its span starts, current while the body runs."""
        attributes = {STEP_NAME: step_name}
        span = detach = None
        if self.tracing:
            api = self._api
            assert api is not None
            parent = self.span_of(workflow_id)
            self.executed(workflow_id, position)
            span = self._tracer.start_span(
                f"step {step_name}",
                context=api.trace.set_span_in_context(parent)
                if parent is not None
                else api.context.Context(),
                attributes={
                    WORKFLOW_ID: workflow_id,
                    WORKFLOW_NAME: workflow_name,
                    STEP_NAME: step_name,
                    POSITION: position,
                    ATTEMPT: attempt,
                },
            )
            # Current while the body runs, so the spans the body makes are its children.
            detach = api.context.attach(api.trace.set_span_in_context(span))
        return StepToken(span, detach, time.perf_counter(), attributes)

    def end_step(self, token: StepToken, error: BaseException | None) -> None:
        """The attempt ended: with `error` (an exception it raised) or without.

        A control signal (the run cancelled, the engine closing) is no exception of
        the body's: outcome "cancelled", and nothing recorded of it as an error.
        """
        elapsed = time.perf_counter() - token.started
        if error is None:
            outcome = "ok"
        elif isinstance(error, Exception):
            outcome = "error"
        else:
            outcome, error = "cancelled", None
        span = token.span
        if span is not None:
            api = self._api
            assert api is not None
            if token.detach is not None:
                api.context.detach(token.detach)
            span.set_attribute(OUTCOME, outcome)
            if error is not None:
                span.record_exception(error)
                span.set_status(api.status_error)
            span.end()
        if self.metering:
            token.attributes[OUTCOME] = outcome
            self._steps.add(1, token.attributes)
            self._step_duration.record(elapsed, token.attributes)

    # -- runs and queues -----------------------------------------------------------------

    def run_started(self, name: str) -> None:
        if self.metering:
            self._runs_started.add(1, {WORKFLOW_NAME: name})

    def run_finished(self, name: str, status: str) -> None:
        if self.metering:
            self._runs_finished.add(1, {WORKFLOW_NAME: name, STATUS: status})

    def watch_queues(self, depths: Callable[[], Iterable[tuple[str, int]]] | None) -> None:
        """What the queue-depth gauge reads at each collection; None stops it (closed)."""
        self._queue_depth = depths

    def _observe_depth(self, _options: Any) -> Sequence[Any]:
        # Called by the metric reader's thread (or whoever collects), never the
        # scheduler's: one bounded read per queue, and nothing once closed.
        depths = self._queue_depth
        api = self._api
        if depths is None or api is None:
            return []
        try:
            found = list(depths())
        except Exception:  # the store is away: no reading this time
            return []
        return [api.metrics.Observation(count, {QUEUE: queue}) for queue, count in found]
