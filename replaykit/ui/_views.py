"""What each page shows, read from a store: plain values, no HTTP and no HTML.

Every function here takes a `Store` and reads it through the protocol only, so
the pages work alike on SQLite, PostgreSQL and the memory store. The templates
get these values and escape whatever came from the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from replaykit._text import (
    compact_json,
    composite_children,
    encoded_text,
    format_duration,
    outcome_summary,
)
from replaykit._waiting import why_waiting
from replaykit.errors import ReplayKitError
from replaykit.log import AllOutcome, Failure, Outcome, RaceOutcome, Record, Status, Value
from replaykit.runtime.queues import KeyCount, partition_counts
from replaykit.serde import ErrorInfo
from replaykit.stores._attributes import encoded_attribute
from replaykit.stores.base import DamagedRow, StepHeartbeat, Store, WorkflowFilter, WorkflowRow

__all__ = [
    "LOG_PAGE",
    "PER_PAGE",
    "Bar",
    "ChildNode",
    "ErrorView",
    "EventView",
    "HeartbeatView",
    "InboxView",
    "PartView",
    "QueueView",
    "QueuesPage",
    "RunPage",
    "RunsPage",
    "RunsQuery",
    "StepView",
    "composite_parts",
    "count_runs",
    "damaged_text",
    "queues_page",
    "run_page",
    "runs_page",
    "short_json",
    "when",
]

PER_PAGE = 50
# A run's timeline shows this many records a page: a long-lived run's log (a
# poller's, tens of thousands of records) is read and rendered a page at a time.
LOG_PAGE = 200
# A payload longer than this is cut on the page; the whole of it stays in the
# store and `replaykit workflows show --json` prints it.
MAX_SHOWN_CHARS = 20_000
# A run with a large fan-out must not make its page read the whole tree.
MAX_CHILDREN = 300
MAX_CHILD_DEPTH = 6
# The queue overview reads live runs; past this many it says its counts are partial.
MAX_LIVE_RUNS = 20_000
BAR_SCALE = 1000.0  # the timeline's SVG width in user units


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def when(value: datetime | None) -> str:
    value = _utc(value)
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def pretty_json(data: Any) -> str:
    encoded = encoded_text(data)
    if encoded is not None:
        return encoded  # started without --codec: the page says what it holds
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False, default=str)
    except (TypeError, ValueError):
        text = repr(data)
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + f"\n... ({len(text) - MAX_SHOWN_CHARS} more characters)"
    return text


def short_json(data: Any, width: int = 80) -> str:
    encoded = encoded_text(data)
    if encoded is not None:
        return encoded
    text = compact_json(data)
    return text if len(text) <= width else text[: width - 3] + "..."


# -- the runs list -------------------------------------------------------------------------


@attrs.frozen
class RunsQuery:
    statuses: tuple[Status, ...] = ()
    name: str = ""
    queue: str = ""
    page: int = 0  # 0 is the newest page
    per_page: int = PER_PAGE
    partition_key: str = ""
    created_from: datetime | None = None  # UTC; runs created at or after it
    created_to: datetime | None = None  # UTC; runs created before it
    refresh: int = 0  # seconds between the page's reloads; 0: none
    id_prefix: str = ""  # runs whose id starts with it
    where_text: str = ""  # a filter of the filter language (stores/where.py)

    def filtered(self) -> bool:
        """Whether the list is narrowed at all (a bulk cancel needs it to be)."""
        return self.where() != WorkflowFilter()

    def where(self) -> WorkflowFilter:
        return WorkflowFilter(
            id_prefix=self.id_prefix or None,
            where=self.where_text or None,
            status=self.statuses or None,
            name=self.name or None,
            queue=self.queue or None,
            partition_key=self.partition_key or None,
            since=self.created_from,
            until=self.created_to,
        )


def filter_params(query: RunsQuery) -> dict[str, Any]:
    """The address parameters of the runs list's filter (no page): for links back to it."""
    return {
        "id": query.id_prefix or None,
        "where": query.where_text or None,
        "status": [s.value for s in query.statuses],
        "name": query.name or None,
        "queue": query.queue or None,
        "partition_key": query.partition_key or None,
        "from": form_time(query.created_from) or None,
        "to": form_time(query.created_to) or None,
    }


def form_time(value: datetime | None) -> str:
    """A UTC instant as the time range's inputs show it (YYYY-MM-DDTHH:MM)."""
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def parse_form_time(text: str, what: str) -> datetime | None:
    """The time range's input, read as UTC; ValueError saying what to type."""
    text = text.strip()
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{what} {text!r} is not a time; type it as 2026-12-04T09:30 (UTC)"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


@attrs.frozen
class RunRow:
    workflow_id: str
    name: str
    status: str
    queue: str
    created: str
    updated: str
    parent_id: str
    problem: str  # a failure, a parking reason or a damaged row, in one line
    duration: str  # created to finished, or to the last change of one under way
    # Its attributes as shown, each with the filter that finds the runs sharing it.
    attributes: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class RunsPage:
    query: RunsQuery
    rows: list[RunRow]
    # How many runs of each status match the filters but the status (the counts bar),
    # counted up to COUNT_CAP + 1 (`shown` prints that as "10,000+").
    counts: list[tuple[str, int]]
    total: int  # counted as the chips are

    first: int  # 1-based number of the first row shown, 0 when none
    last: int
    pages: int
    capped: bool = False  # more runs match than the pages reach

    @staticmethod
    def shown(counted: int) -> str:
        return shown_count(counted)


def count_runs(store: Store, where: WorkflowFilter) -> int:
    """How many runs match: the store counts them (one `COUNT`), reading no row."""
    return store.count_workflows(where)


def _problem(row: WorkflowRow) -> str:
    if row.damaged:
        # A row this UI's codec cannot decode says so in its error (not "damaged").
        return row.error or f"damaged row: {row.damaged}"
    if isinstance(row.result, Failure):
        return f"{row.result.error.type_name}: {row.result.error.message}"
    return row.error


def _run_row(row: WorkflowRow) -> RunRow:
    return RunRow(
        workflow_id=row.workflow_id,
        name=row.name,
        status=row.status.value,
        queue=row.queue or "",
        created=when(row.created_at),
        updated=when(row.updated_at),
        parent_id=row.parent_id or "",
        problem=" ".join(_problem(row).split())[:200],
        duration=_duration(row),
        attributes=attribute_chips(row.attributes),
    )


#: The attributes a row of the runs list shows, at most; the run's page has them all.
SHOWN_ATTRIBUTES = 6


def attribute_chips(
    attributes: Mapping[str, Any], *, at_most: int | None = SHOWN_ATTRIBUTES
) -> tuple[tuple[str, str], ...]:
    """(`name=value` as shown, the filter matching it) for each of a run's attributes, in
    name order: a click on one lists the runs that share it."""
    chips = []
    for name in sorted(attributes)[:at_most]:
        value = attributes[name]
        shown = compact_json(value) if not isinstance(value, str) else value
        chips.append((f"{name}={shown[:40]}", f"{name} = {_literal(value)}"))
    return tuple(chips)


def _literal(value: Any) -> str:
    """The filter language's literal for an attribute's value (a list: its first item,
    which `=` finds in the list; a datetime: its stored UTC text)."""
    if isinstance(value, list):
        value = value[0] if value else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(encoded_attribute(value))
    return "'" + text.replace("'", "''") + "'"


def _duration(row: WorkflowRow) -> str:
    if row.created_at is None or row.updated_at is None:
        return ""
    seconds = max((row.updated_at - row.created_at).total_seconds(), 0.0)
    if seconds < 1:
        shown = f"{seconds * 1000:.0f} ms"
    elif seconds < 120:
        shown = f"{seconds:.1f} s"
    elif seconds < 7200:
        shown = f"{seconds / 60:.0f} min"
    else:
        shown = f"{seconds / 3600:.1f} h"
    return shown if row.status.is_terminal else f"{shown} so far"


#: The most runs a page counts, in the summary and in each chip of the counts bar: a
#: selection of a million runs reads "10,000+" instead of costing a count of them all
#: (docs/ui.md). Pages go back as far as the newest this many.
COUNT_CAP = 10_000


def shown_count(counted: int) -> str:
    """A capped count as the page prints it."""
    return f"{COUNT_CAP:,}+" if counted > COUNT_CAP else str(counted)


def runs_page(store: Store, query: RunsQuery) -> RunsPage:
    """One page of the runs matching `query`, newest first: one capped count, one
    capped count per status, and one read of the page's rows (newest first, so the
    first pages read only their own rows, however many runs the store holds)."""
    where = attrs.evolve(query.where(), payloads=False, count_at_most=COUNT_CAP + 1)
    total = count_runs(store, where)
    reachable = min(total, COUNT_CAP)
    pages = max(1, -(-reachable // query.per_page))
    page = min(max(query.page, 0), pages - 1)
    rows: list[WorkflowRow] = []
    if total:
        rows = store.list_workflows(
            attrs.evolve(
                where,
                newest_first=True,
                limit=min(query.per_page, reachable - page * query.per_page),
                offset=page * query.per_page,
            )
        )
    by_status = store.count_workflows_by(attrs.evolve(where, status=None), "status")
    return RunsPage(
        query=attrs.evolve(query, page=page),
        rows=[_run_row(row) for row in rows],
        counts=[(s.value, by_status[s.value]) for s in Status if by_status.get(s.value)],
        total=total,
        first=page * query.per_page + 1 if rows else 0,
        last=page * query.per_page + len(rows),
        pages=pages,
        capped=total > COUNT_CAP,
    )


# -- one run -------------------------------------------------------------------------------


@attrs.frozen
class ErrorView:
    type_name: str
    message: str
    traceback: str

    @classmethod
    def of(cls, info: ErrorInfo) -> ErrorView:
        return cls(info.type_name, info.message, info.traceback)


@attrs.frozen
class Bar:
    """A record's place on the timeline, in SVG user units of a BAR_SCALE-wide track."""

    x: float
    width: float
    state: str  # ok, error, pending


@attrs.frozen
class PartView:
    """One child of a Race or an All, as its record holds it."""

    label: str
    outcome: str
    state: str  # ok, error, won, lost, unknown


@attrs.frozen
class StepView:
    position: int
    kind: str
    name: str
    started: str
    duration: str
    outcome: str
    state: str
    attempts: int
    call_site: str
    wake_at: str
    value: str  # the whole recorded value, pretty JSON; "" for failures and pending
    error: ErrorView | None
    bar: Bar | None
    parts: list[PartView]


@attrs.frozen
class ChildNode:
    workflow_id: str
    name: str
    status: str
    created: str
    children: list[ChildNode]


@attrs.frozen
class InboxView:
    topic: str
    message_id: int
    created: str
    payload: str


@attrs.frozen
class EventView:
    key: str
    value: str
    found: bool


@attrs.frozen
class HeartbeatView:
    """The latest heartbeat of a step under way (running, backing off, or stopped)."""

    position: str  # "3", or "3.1" for a composite's child
    step: str
    attempt: int
    state: str
    at: str
    details: str


@attrs.frozen
class RunPage:
    row: WorkflowRow
    created: str
    updated: str
    started: str
    wake_at: str
    inputs: str
    result: str  # pretty JSON of a successful run's value, else ""
    error: ErrorView | None
    problem: str  # the parking reason or the row's error text
    steps: list[StepView]
    log_error: str  # why the log could not be read, else ""
    span: str  # the timeline's time range, for its caption
    children: list[ChildNode]
    children_cut: bool
    forks: list[WorkflowRow]  # runs forked from this one, oldest first
    forks_cut: bool
    inbox: list[InboxView]
    topics: list[str]  # the topics the inbox section looked at
    inbox_error: str
    events: list[EventView]
    events_error: str
    can_cancel: bool
    can_resume: bool
    can_fork: bool
    # The run's newest earlier generations (continue-as-new), oldest first.
    generations: list[WorkflowRow] = attrs.field(factory=list)
    # Why a PENDING or ENQUEUED run is not running, when the store knows (_waiting.py).
    waiting: str = ""
    # The page of the timeline shown: its first position, and the first of the
    # next page (None: this is the last) and of the previous one (None: the first).
    log_from: int = 0
    log_next: int | None = None
    log_previous: int | None = None
    # The latest heartbeat of each step whose outcome is not recorded yet.
    heartbeats: list[HeartbeatView] = attrs.field(factory=list)
    heartbeats_error: str = ""
    # Every attribute, as shown, with the filter that lists the runs sharing it.
    attributes: tuple[tuple[str, str], ...] = ()


def _outcome_state(outcome: Outcome | None) -> str:
    if outcome is None:
        return "pending"
    return "error" if isinstance(outcome, Failure) else "ok"


# One reading of a composite record's name, shared with the CLI.
composite_parts = composite_children


def _recv_topics(kind: str, name: str) -> list[str]:
    if kind == "recv":
        if name.startswith("(") and name.endswith(")"):
            # A Recv of several topics (`Recv.name`); a topic holding "," makes this a
            # guess, and the page only looks at more topics for it.
            return [name, *name[1:-1].split(",")]
        return [name]
    if kind in ("race", "all"):
        found: list[str] = []
        for child_kind, child_name in composite_parts(name):
            found.extend(_recv_topics(child_kind, child_name))
        return found
    return []


def _part_text(outcome: Outcome) -> tuple[str, str]:
    if isinstance(outcome, Failure):
        return f"error {outcome.error.type_name}: {outcome.error.message}", "error"
    return ("ok" if outcome.data is None else "ok " + short_json(outcome.data, 60)), "ok"


def _parts(record: Record) -> list[PartView]:
    if record.kind not in ("race", "all") or not isinstance(record.outcome, Value):
        return []
    names = [f"{kind} {name}".strip() for kind, name in composite_parts(record.name)]

    def label(index: int) -> str:
        return f"[{index}] {names[index]}" if index < len(names) else f"[{index}]"

    try:
        if record.kind == "race":
            race = RaceOutcome.from_data(record.outcome.data)
            text, state = _part_text(race.outcome)
            views = [PartView(label(race.index), text, "won" if state == "ok" else "error")]
            views.extend(
                PartView(label(index), "lost: cancelled, left no trace", "lost")
                for index in range(len(names))
                if index != race.index
            )
            return views
        every = AllOutcome.from_data(record.outcome.data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return [PartView(record.name, "the record's value is not a composite outcome", "unknown")]
    views = []
    for index, outcome in enumerate(every.outcomes):
        text, state = _part_text(outcome)
        if every.first_failure is not None and index == every.first_failure:
            text += " (decided the All)"
        views.append(PartView(label(index), text, state))
    return views


def _composite_summary(kind: str, parts: list[PartView]) -> str:
    if kind == "race":
        winner = parts[0]
        return f"won by {winner.label}" if winner.state == "won" else f"{winner.label} failed"
    failed = [part for part in parts if part.state == "error"]
    if not failed:
        return f"all {len(parts)} finished"
    return f"{len(failed)} of {len(parts)} failed"


def _step_view(record: Record, start: datetime, end: datetime, open_end: datetime) -> StepView:
    began = _utc(record.started_at)
    finished = _utc(record.completed_at)
    state = _outcome_state(record.outcome)
    bar: Bar | None = None
    total = (end - start).total_seconds()
    if began is not None and total > 0:
        stop = finished or open_end
        x = (began - start).total_seconds() / total * BAR_SCALE
        width = max((stop - began).total_seconds(), 0.0) / total * BAR_SCALE
        x = min(max(x, 0.0), BAR_SCALE - 2)
        # Instant commands (Now, SetEvent) still get a visible tick.
        bar = Bar(round(x, 2), round(min(max(width, 2.0), BAR_SCALE - x), 2), state)
    duration = "-"
    if began is not None and finished is not None:
        duration = format_duration(max((finished - began).total_seconds(), 0.0))
    elif began is not None and state == "pending":
        duration = format_duration(max((open_end - began).total_seconds(), 0.0)) + " so far"
    error = ErrorView.of(record.outcome.error) if isinstance(record.outcome, Failure) else None
    parts = _parts(record)
    outcome = outcome_summary(record)
    value = ""
    if parts:
        # The parts say what the composite's raw record would, child by child.
        outcome = _composite_summary(record.kind, parts) + (
            f" ({record.attempts} attempts)" if record.attempts > 1 else ""
        )
    elif isinstance(record.outcome, Value) and record.outcome.data is not None:
        value = pretty_json(record.outcome.data)
    return StepView(
        position=record.position,
        kind=record.kind,
        name=record.name,
        started=when(began),
        duration=duration,
        outcome=outcome,
        state=state,
        attempts=record.attempts,
        call_site=record.call_site,
        wake_at=when(record.wake_at) if record.wake_at is not None and state == "pending" else "",
        value=value,
        error=error,
        bar=bar,
        parts=parts,
    )


def _timeline(
    row: WorkflowRow, records: Sequence[Record], now: datetime
) -> tuple[list[StepView], str]:
    starts = [t for t in (_utc(r.started_at) for r in records) if t is not None]
    created = _utc(row.created_at)
    if created is not None:
        starts.append(created)
    if not starts:
        return [_step_view(r, now, now, now) for r in records], ""
    start = min(starts)
    # A live run's unfinished record runs on to now; a finished run's ends with it.
    open_end = now if not row.status.is_terminal else (_utc(row.updated_at) or now)
    ends = [t for t in (_utc(r.completed_at) for r in records) if t is not None]
    ends.append(open_end if any(r.is_pending for r in records) else start)
    if row.status.is_terminal and row.updated_at is not None:
        ends.append(_utc(row.updated_at) or start)
    end = max(max(ends), start + timedelta(milliseconds=1))
    span = f"{when(start)} to {when(end)} UTC ({format_duration((end - start).total_seconds())})"
    return [_step_view(r, start, end, open_end) for r in records], span


def _children(store: Store, workflow_id: str) -> tuple[list[ChildNode], bool]:
    budget = [MAX_CHILDREN]
    cut = [False]

    def level(parent_id: str, depth: int) -> list[ChildNode]:
        if depth > MAX_CHILD_DEPTH or budget[0] <= 0:
            cut[0] = True
            return []
        rows = store.list_workflows(
            WorkflowFilter(parent_id=parent_id, limit=budget[0] + 1, payloads=False)
        )
        if len(rows) > budget[0]:
            cut[0] = True
            rows = rows[: budget[0]]
        budget[0] -= len(rows)
        return [
            ChildNode(
                child.workflow_id,
                child.name,
                child.status.value,
                when(child.created_at),
                level(child.workflow_id, depth + 1),
            )
            for child in rows
        ]

    return level(workflow_id, 1), cut[0]


def _inbox(
    store: Store, workflow_id: str, records: Sequence[Record], extra_topic: str | None
) -> tuple[list[InboxView], list[str]]:
    # The protocol peeks one topic at a time and lists no topics, so the page
    # looks at the default topic, every topic the log receives on, and the one
    # the operator asks for.
    topics: list[str] = [""]
    for record in records:
        topics.extend(_recv_topics(record.kind, record.name))
    if extra_topic is not None:
        topics.append(extra_topic)
    topics = list(dict.fromkeys(topics))
    found: list[InboxView] = []
    for topic in topics:
        message = store.peek_message(workflow_id, topic)
        if message is not None:
            found.append(
                InboxView(
                    topic,
                    message.message_id,
                    when(message.created_at),
                    pretty_json(message.payload),
                )
            )
    return found, topics


def _events(store: Store, workflow_id: str, records: Sequence[Record]) -> list[EventView]:
    keys = list(dict.fromkeys(r.name for r in records if r.kind == "set_event"))
    views = []
    for key in keys:
        found, value = store.get_event(workflow_id, key)
        views.append(EventView(key, pretty_json(value) if found else "", found))
    return views


def _heartbeats(store: Store, row: WorkflowRow) -> list[HeartbeatView]:
    """The latest heartbeat of each step whose outcome is not recorded yet."""
    views = []
    for beat in store.get_step_heartbeats(row.workflow_id):
        held = store.load_log(row.workflow_id, since=beat.position, limit=1)
        record = held[0] if held and held[0].position == beat.position else None
        if record is not None and record.outcome is not None:
            continue  # done: its beats are history
        views.append(_heartbeat_view(row, beat, record))
    return views


def _heartbeat_view(row: WorkflowRow, beat: StepHeartbeat, record: Record | None) -> HeartbeatView:
    if row.status is not Status.PENDING:
        state = "stopped"
    elif record is not None and record.kind == "step":
        state = "backing off"
    else:
        state = "running"
    path = "".join(f".{index}" for index in beat.child_path)
    return HeartbeatView(
        f"{beat.position}{path}",
        beat.name,
        beat.attempt,
        state,
        when(beat.at),
        pretty_json(beat.details),
    )


def _section_error(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if isinstance(exc, ReplayKitError) and text else f"{type(exc).__name__}: {text}"


# A run forked again and again would otherwise make its page as long as its forks.
_FORKS_SHOWN = 50
# A poller that continues as new for years has thousands of generations: the newest.
_GENERATIONS_SHOWN = 50


def _generations(store: Store, row: WorkflowRow) -> list[WorkflowRow]:
    if not row.generation:
        return []
    archived = store.list_workflows(WorkflowFilter(continued_as=row.workflow_id, payloads=False))
    archived.sort(key=lambda generation: generation.generation)
    return archived[-_GENERATIONS_SHOWN:]


def run_page(
    store: Store,
    workflow_id: str,
    *,
    topic: str | None = None,
    now: datetime | None = None,
    log_from: int = 0,
) -> RunPage | None:
    """Everything the run's page shows; None when no run has this id.

    The timeline is the page of `LOG_PAGE` records from position `log_from`
    (the inbox and events sections look at what that page receives and sets).
    A damaged row raises `DamagedRow` (the page says what is damaged); a log,
    message or event that does not decode costs only its own section.
    """
    now = now or datetime.now(UTC)
    row = store.get_workflow(workflow_id)
    if row is None:
        return None
    log_from = max(log_from, 0)
    records: list[Record] = []
    log_error = ""
    try:
        # One more than a page: whether a next page exists, without counting the log.
        records = store.load_log(workflow_id, since=log_from, limit=LOG_PAGE + 1)
    except ReplayKitError as exc:
        log_error = _section_error(exc)
    log_next = log_from + LOG_PAGE if len(records) > LOG_PAGE else None
    records = records[:LOG_PAGE]
    steps, span = _timeline(row, records, now)
    inbox: list[InboxView] = []
    topics: list[str] = []
    inbox_error = ""
    try:
        inbox, topics = _inbox(store, workflow_id, records, topic)
    except (ReplayKitError, ValueError) as exc:
        inbox_error = _section_error(exc)
    events: list[EventView] = []
    events_error = ""
    try:
        events = _events(store, workflow_id, records)
    except ReplayKitError as exc:
        events_error = _section_error(exc)
    heartbeats: list[HeartbeatView] = []
    heartbeats_error = ""
    try:
        heartbeats = _heartbeats(store, row)
    except ReplayKitError as exc:
        heartbeats_error = _section_error(exc)
    children, cut = _children(store, workflow_id)
    forks = store.list_workflows(
        WorkflowFilter(forked_from=workflow_id, limit=_FORKS_SHOWN + 1, payloads=False)
    )
    result = ""
    error = None
    if isinstance(row.result, Value):
        result = pretty_json(row.result.data)
    elif isinstance(row.result, Failure):
        error = ErrorView.of(row.result.error)
    return RunPage(
        row=row,
        attributes=attribute_chips(row.attributes, at_most=None),
        created=when(row.created_at),
        updated=when(row.updated_at),
        started=when(row.started_at),
        wake_at=when(row.wake_at) if row.wake_at is not None and not row.status.is_terminal else "",
        inputs=pretty_json(row.inputs),
        result=result,
        error=error,
        # A waiting run's note is part of why it waits (`waiting`), shown once.
        problem="" if row.status in (Status.PENDING, Status.ENQUEUED) else row.error,
        steps=steps,
        log_error=log_error,
        span=span,
        children=children,
        children_cut=cut,
        forks=forks[:_FORKS_SHOWN],
        forks_cut=len(forks) > _FORKS_SHOWN,
        inbox=inbox,
        topics=topics,
        inbox_error=inbox_error,
        events=events,
        events_error=events_error,
        can_cancel=row.status in (Status.PENDING, Status.ENQUEUED, Status.PARKED),
        can_resume=row.status in (Status.CANCELLED, Status.PARKED),
        can_fork=not log_error,
        generations=_generations(store, row),
        waiting=why_waiting(store, row, now=now),
        log_from=log_from,
        log_next=log_next,
        log_previous=max(log_from - LOG_PAGE, 0) if log_from > 0 else None,
        heartbeats=heartbeats,
        heartbeats_error=heartbeats_error,
    )


def damaged_text(exc: DamagedRow) -> str:
    return " ".join(str(exc).split())


# -- queues --------------------------------------------------------------------------------


@attrs.frozen
class QueueView:
    name: str
    ready: int  # ENQUEUED and claimable now
    delayed: int  # ENQUEUED with a start delay still running
    running: int  # PENDING
    parked: int
    oldest_waiting: str  # when the oldest ENQUEUED run was created
    # A queue whose runs carry partition keys: how many keys have runs waiting, and
    # the busiest keys (most waiting first); None for a queue whose runs have none.
    keys_waiting: int | None = None
    busiest: tuple[KeyCount, ...] = ()


@attrs.frozen
class QueuesPage:
    queues: list[QueueView]
    unqueued_running: int  # PENDING runs started directly, not from a queue
    partial: bool  # more live runs than MAX_LIVE_RUNS: the counts are lower bounds


def queues_page(store: Store, *, now: datetime | None = None) -> QueuesPage:
    """Depth and running runs per queue, from the store's live runs.

    A queue shows up while it has an ENQUEUED, PENDING or PARKED run: the
    protocol keeps no list of queues apart from their runs.
    """
    now = now or datetime.now(UTC)
    live = store.list_workflows(
        WorkflowFilter(
            status=(Status.ENQUEUED, Status.PENDING, Status.PARKED),
            limit=MAX_LIVE_RUNS + 1,
            payloads=False,  # counts and times only: no run's inputs
        )
    )
    partial = len(live) > MAX_LIVE_RUNS
    keys = partition_counts(live[:MAX_LIVE_RUNS])
    counts: dict[str, dict[str, int]] = {}
    oldest: dict[str, datetime] = {}
    unqueued = 0
    for row in live[:MAX_LIVE_RUNS]:
        if row.queue is None:
            unqueued += row.status is Status.PENDING
            continue
        entry = counts.setdefault(row.queue, {"ready": 0, "delayed": 0, "running": 0, "parked": 0})
        if row.status is Status.ENQUEUED:
            wake = _utc(row.wake_at)
            entry["delayed" if wake is not None and wake > now else "ready"] += 1
            created = _utc(row.created_at)
            if created is not None and (row.queue not in oldest or created < oldest[row.queue]):
                oldest[row.queue] = created
        elif row.status is Status.PENDING:
            entry["running"] += 1
        else:
            entry["parked"] += 1
    queues = [
        QueueView(
            name,
            entry["ready"],
            entry["delayed"],
            entry["running"],
            entry["parked"],
            when(oldest.get(name)) if name in oldest else "",
            keys[name].keys_waiting if name in keys else None,
            keys[name].busiest if name in keys else (),
        )
        for name, entry in sorted(counts.items())
    ]
    return QueuesPage(queues, unqueued, partial)
