"""Why an unfinished run waits, and which versions engines run: from what the store knows.

One function says why a PENDING or ENQUEUED run is not running, and every face
that shows a waiting run uses it: `replaykit workflows show`, the web UI's run
page and `WorkflowTimeout`'s message. What it knows comes from the run's row
(the note an engine writes on a run it cannot run, such as one whose workflow
is not registered in its process) and from the engines' heartbeats: which
executor ids beat lately, and of which application version.

Engines record with each heartbeat the workflows they registered and the
queues they drain (replaykit/stores/_beats.py), so "no engine of the version
has registered this workflow" and "no engine of the version listens to this
queue" are known exactly. A heartbeat of an engine from an older replaykit
carries neither list; for such engines the old inference stays: an engine's
note on an earlier run of the name, and a due run that stays on its queue
while engines of its version run.

Stores read heartbeats with `read_heartbeats(since)` (a list of
`replaykit.stores._beats.Heartbeat`), which the three stores have; a store
without it (one written against the protocol alone) gives no engine part,
never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from replaykit.errors import WorkflowTimeout
from replaykit.log import Status
from replaykit.stores._beats import Registered
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow

__all__ = [
    "LIVE_WITHIN",
    "LiveEngine",
    "VersionLoad",
    "engines_text",
    "latest_version",
    "live_engines",
    "queues_text",
    "start_warning",
    "still_running",
    "version_loads",
    "why_waiting",
    "workflows_text",
]

#: An engine heard from this many seconds ago or less counts as running. It is
#: Engine's default `lease_seconds`, and an engine beats every third of its lease.
LIVE_WITHIN = 30.0
#: A due run still on its queue this long after it became due, while engines of
#: its version run, is taken as waiting for a listener (a claim takes milliseconds).
QUEUE_IDLE = timedelta(seconds=30)
#: How many executor ids (and versions) a one-line reason names before "and N more".
_SHOWN = 5
#: The unfinished runs `version_loads` reads at most, for the counts it prints.
MAX_SCAN = 20_000
_UNFINISHED = (Status.PENDING, Status.ENQUEUED, Status.PARKED)


@attrs.frozen
class LiveEngine:
    """An engine that beat its heartbeat lately."""

    executor_id: str
    app_version: str
    seen_at: datetime
    #: The workflows and queues it said it runs; None for an engine that said nothing.
    registered: Registered | None = None

    def runs(self, name: str) -> bool | None:
        """Whether it registered workflow `name`; None if its heartbeat does not say."""
        return _member(name, self.registered.workflows if self.registered else None, self.cut(True))

    def drains(self, queue: str) -> bool | None:
        """Whether it listens to `queue`; None if its heartbeat does not say."""
        return _member(queue, self.registered.queues if self.registered else None, self.cut(False))

    def cut(self, workflows: bool) -> int:
        """How many names its heartbeat left out of the workflows (or queues) list."""
        if self.registered is None:
            return 0
        return self.registered.more_workflows if workflows else self.registered.more_queues


def _member(name: str, names: tuple[str, ...] | None, more: int) -> bool | None:
    if names is None:
        return None
    if name in names:
        return True
    return None if more else False  # a list cut short by its bounds proves no absence


def live_engines(
    store: Store, *, now: datetime | None = None, within: float = LIVE_WITHIN
) -> list[LiveEngine] | None:
    """The engines heard from in the last `within` seconds; None if the store cannot say."""
    reader = getattr(store, "read_heartbeats", None)
    if reader is None:
        return None
    since = (now or datetime.now(UTC)) - timedelta(seconds=within)
    engines = []
    for beat in reader(since):
        if isinstance(beat, tuple):  # a store written before heartbeats carried names
            engines.append(LiveEngine(beat[0], beat[1], beat[2]))
        else:
            engines.append(
                LiveEngine(beat.executor_id, beat.app_version, beat.seen_at, beat.registered)
            )
    return engines


def _more(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _ids(engines: Sequence[LiveEngine]) -> str:
    return _more([engine.executor_id for engine in engines])


def _union(engines: Sequence[LiveEngine], workflows: bool) -> str:
    """The names the engines said they run (or drain), as one short list."""
    names: set[str] = set()
    cut = 0
    for engine in engines:
        if engine.registered is None:
            continue
        listed = engine.registered.workflows if workflows else engine.registered.queues
        names.update(listed or ())
        cut += engine.cut(workflows)
    if not names:
        return "none"
    return _more(sorted(names)) + (f" (and {cut} names not recorded)" if cut else "")


def workflows_text(engines: Sequence[LiveEngine]) -> str:
    """The workflows the engines registered, e.g. "a, b, c"; "none" for none."""
    return _union(engines, True)


def queues_text(engines: Sequence[LiveEngine]) -> str:
    """The queues the engines listen to, e.g. "default, emails"; "none" for none."""
    return _union(engines, False)


def _exact(
    name: str,
    version: str,
    same: Sequence[LiveEngine],
    *,
    queue: str | None = None,
    executor_id: str | None = None,
) -> str:
    """What the live engines of `version` (`same`, not empty) say stops a run of `name`.

    From the lists their heartbeats carry: "" when they do not say (an engine
    of an older replaykit) or nothing stops it. `executor_id`: the run goes to
    that engine (it must be among `same`); `queue`: it waits on that queue.
    """
    if executor_id is not None:
        owners = [engine for engine in same if engine.executor_id == executor_id]
        if owners and owners[0].runs(name) is False:
            return (
                f"the engine with executor id {executor_id!r} (version {version!r}) has not "
                f"registered workflow {name!r} (it runs: {workflows_text(owners)}); deploy "
                "the code that defines it to that engine, or check the name"
            )
        return ""
    if all(engine.runs(name) is False for engine in same):
        return (
            f"no live engine of version {version!r} has registered workflow {name!r} "
            f"(engines running {version!r}: {_ids(same)}; they run: {workflows_text(same)}); "
            "deploy the code that defines it to an engine of that version, or check the name"
        )
    if queue is None:
        return ""
    if all(engine.drains(queue) is False for engine in same):
        return (
            f"queue {queue!r} has no live engine of version {version!r} listening (engines "
            f"of {version!r} listen to: {queues_text(same)}); start one with "
            f"Engine(queues=[{queue!r}, ...]) or queues=None (every declared queue)"
        )
    listening = [engine for engine in same if engine.drains(queue)]
    if all(engine.drains(queue) is not None for engine in same) and all(
        engine.runs(name) is False for engine in listening
    ):
        return (
            f"no live engine of version {version!r} listening to queue {queue!r} has "
            f"registered workflow {name!r} (engines listening: {_ids(listening)}; they run: "
            f"{workflows_text(listening)})"
        )
    return ""


def _said(engines: Sequence[LiveEngine]) -> bool:
    """Whether every one of `engines` said what it runs (none is of an older replaykit)."""
    return all(engine.registered is not None for engine in engines)


def engines_text(engines: Sequence[LiveEngine]) -> str:
    """ "version 'v2' (web-1, web-2), version 'v3' (worker-1)"; "none" for no engine."""
    if not engines:
        return f"none (no heartbeat in the last {LIVE_WITHIN:g}s)"
    by_version: dict[str, list[str]] = {}
    for engine in engines:
        by_version.setdefault(engine.app_version, []).append(engine.executor_id)
    parts = [f"version {version!r} ({_more(ids)})" for version, ids in sorted(by_version.items())]
    return _more(parts)


def why_waiting(
    store: Store,
    row: WorkflowRow,
    *,
    now: datetime | None = None,
    engines: Sequence[LiveEngine] | None = None,
) -> str:
    """Why the PENDING or ENQUEUED `row` is not running, in a line; "" if nothing known stops it.

    The note an engine left on the run comes first; then what the heartbeats
    say: no engine of its version runs, its engine is not running, or, for a
    run due on its queue for a while, that no engine of its version seems to
    listen to that queue. A run that waits for a message or a timer, with its
    engine running, has "" (its timeline says what it waits for).
    """
    if row.status not in (Status.PENDING, Status.ENQUEUED):
        return ""
    now = now or datetime.now(UTC)
    if engines is None:
        try:
            engines = live_engines(store, now=now)
        except Exception:  # a diagnostic: the store's own trouble shows elsewhere
            engines = None
    parts = [row.error] if row.error else []
    if engines is not None:
        parts.append(_engine_reason(row, engines, now))
    return "; ".join(part for part in parts if part)


def _engine_reason(row: WorkflowRow, engines: Sequence[LiveEngine], now: datetime) -> str:
    version = row.app_version
    same = [engine for engine in engines if engine.app_version == version]
    if not same:
        return (
            f"waits for an engine of version {version!r}; engines running: "
            f"{engines_text(engines)}. Start an engine of that version, or move the run onto "
            f"a running one (`replaykit workflows resume {row.workflow_id} --app-version V`)"
        )
    if row.status is Status.PENDING:
        owner = [engine for engine in same if engine.executor_id == row.executor_id]
        if not owner:
            return (
                f"waits for the engine with executor id {row.executor_id!r} (version "
                f"{version!r}), which is not running (no heartbeat in the last "
                f"{LIVE_WITHIN:g}s); it runs the run when it starts. Engines of that version "
                f"running: {_ids(same)}"
            )
        return _exact(row.name, version, same, executor_id=row.executor_id)
    exact = _exact(row.name, version, same, queue=row.queue or "")
    if exact:
        return exact
    due = row.wake_at or row.created_at
    if due is None or now - due < QUEUE_IDLE:
        return ""
    waited = f"due on queue {row.queue!r} for {int((now - due).total_seconds())}s, unclaimed"
    if _said(same):
        listening = [engine for engine in same if engine.drains(row.queue or "") is not False]
        return (
            f"{waited} though engines of version {version!r} listen to it and run "
            f"{row.name!r} ({_ids(listening)}): they may be at their limits (concurrency, rate)"
        )
    # Engines of an older replaykit say nothing of their queues: only a guess is left.
    return (
        f"{waited} while engines of version {version!r} run ({_ids(same)}): none of them "
        f"may listen to {row.queue!r} (Engine(queues=[...])), or they are at their limits "
        "(concurrency, rate)"
    )


def still_running(row: WorkflowRow, timeout: float | None, why: str) -> WorkflowTimeout:
    """What `handle.result(timeout=...)` raises when the run has not finished: `why` it waits."""
    return WorkflowTimeout(
        f"workflow {row.name!r} (id {row.workflow_id!r}) is still {row.status.value} after "
        f"{timeout}s" + (f": {why}" if why else "")
    )


# -- versions ---------------------------------------------------------------------------------


@attrs.define
class VersionLoad:
    """One application version: its live engines and the unfinished runs stamped with it."""

    app_version: str
    engines: list[LiveEngine] = attrs.field(factory=list)
    pending: int = 0
    enqueued: int = 0
    parked: int = 0

    @property
    def unfinished(self) -> int:
        return self.pending + self.enqueued + self.parked

    def to_json(self) -> dict[str, Any]:
        return {
            "app_version": self.app_version,
            "engines": [
                {
                    "executor_id": e.executor_id,
                    "seen_at": e.seen_at.isoformat(),
                    # None: an engine of an older replaykit, which does not say.
                    "workflows": _listed(e, True),
                    "queues": _listed(e, False),
                }
                for e in self.engines
            ],
            "pending": self.pending,
            "enqueued": self.enqueued,
            "parked": self.parked,
            "unfinished": self.unfinished,
        }


def _listed(engine: LiveEngine, workflows: bool) -> list[str] | None:
    if engine.registered is None:
        return None
    names = engine.registered.workflows if workflows else engine.registered.queues
    return None if names is None else list(names)


def version_loads(
    store: Store, *, now: datetime | None = None
) -> tuple[list[VersionLoad], bool, bool]:
    """Versions with live engines or unfinished runs: (loads, heartbeats readable, counts partial).

    Versions with live engines come first (most engines first), then the
    others by their unfinished runs. Counts read at most `MAX_SCAN` runs.
    """
    engines = live_engines(store, now=now)
    loads: dict[str, VersionLoad] = {}
    for engine in engines or []:
        loads.setdefault(engine.app_version, VersionLoad(engine.app_version)).engines.append(engine)
    rows = store.list_workflows(WorkflowFilter(status=_UNFINISHED, limit=MAX_SCAN + 1))
    for row in rows[:MAX_SCAN]:
        load = loads.setdefault(row.app_version, VersionLoad(row.app_version))
        if row.status is Status.PENDING:
            load.pending += 1
        elif row.status is Status.ENQUEUED:
            load.enqueued += 1
        else:
            load.parked += 1
    ordered = sorted(loads.values(), key=lambda v: (-len(v.engines), -v.unfinished, v.app_version))
    return ordered, engines is not None, len(rows) > MAX_SCAN


class NoLatestVersion(LookupError):
    """`latest_version` found no version, or several, among the live engines."""


def latest_version(store: Store, *, now: datetime | None = None) -> str:
    """The application version the live engines run, for `--app-version latest`.

    Heartbeats keep when each engine was last heard from, not when it started,
    and versions are names with no order: with engines of two versions running
    (a rolling deploy), which one is newer is not in the store, and this
    refuses rather than guess, naming them.
    """
    engines = live_engines(store, now=now)
    if engines is None:
        raise NoLatestVersion(
            "this store keeps no heartbeats this command can read, so 'latest' names no "
            "version; pass --app-version V (your engines' Engine(app_version=...))"
        )
    versions = sorted({engine.app_version for engine in engines})
    if len(versions) == 1:
        return versions[0]
    if not versions:
        raise NoLatestVersion(
            f"--app-version latest: no engine is running (no heartbeat in the last "
            f"{LIVE_WITHIN:g}s), so no version is live; pass --app-version V "
            "(`replaykit workflows versions` lists the versions runs are stamped with)"
        )
    raise NoLatestVersion(
        f"--app-version latest: engines of {len(versions)} versions are running "
        f"({engines_text(engines)}) and the store does not say which is newer; pass one "
        "with --app-version V"
    )


def start_warning(
    store: Store,
    name: str,
    app_version: str,
    *,
    executor_id: str | None = None,
    queue: str | None = None,
    now: datetime | None = None,
) -> str:
    """Why no live engine may run a new run of `name` stamped `app_version`; "" if none known.

    No engine of the version runs; or (a start for one executor) that engine
    is not running or has not registered `name`; or no engine of the version
    has registered `name`; or (a run enqueued on `queue`) none of them listens
    to that queue, or none that listens registered `name`. Those come from
    the names engines record with their heartbeats; for engines of an older
    replaykit, which record none, a name is known missing only from an
    engine's note on an earlier run of it.
    """
    engines = live_engines(store, now=now)
    if engines is None:
        return ""
    same = [engine for engine in engines if engine.app_version == app_version]
    if not same:
        return (
            f"no running engine has registered workflow {name!r} for version "
            f"{app_version!r}: no engine of that version runs (engines running: "
            f"{engines_text(engines)}); the run waits until one starts"
        )
    if executor_id is not None and executor_id not in {e.executor_id for e in same}:
        return (
            f"workflow {name!r} goes to the engine with executor id {executor_id!r} "
            f"(version {app_version!r}), which is not running (engines of that version "
            f"running: {_ids(same)}); the run waits until it starts"
        )
    exact = _exact(name, app_version, same, queue=queue, executor_id=executor_id)
    if exact:
        return f"{exact}; the run waits until an engine that runs it starts"
    if _said(same):
        return ""
    earlier = store.list_workflows(
        WorkflowFilter(status=Status.PENDING, name=name, app_version=app_version, limit=50)
    )
    for row in earlier:
        if row.error.startswith("engine ") and f" cannot run workflow {name!r}" in row.error:
            return (
                f"an engine of version {app_version!r} could not run an earlier run of "
                f"workflow {name!r} ({row.workflow_id!r}): {row.error}"
            )
    return ""
