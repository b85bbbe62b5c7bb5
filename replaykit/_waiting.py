"""Why an unfinished run waits, and which versions engines run: from what the store knows.

One function says why a PENDING or ENQUEUED run is not running, and every face
that shows a waiting run uses it: `replaykit workflows show`, the web UI's run
page and `WorkflowTimeout`'s message. What it knows comes from the run's row
(the note an engine writes on a run it cannot run, such as one whose workflow
is not registered in its process) and from the engines' heartbeats: which
executor ids beat lately, and of which application version.

The heartbeats say nothing of the queues an engine listens to or of the
workflows it registered, so "a queue nobody listens to" and "a name no engine
registered" can only be inferred: a due run that stays on its queue while
engines of its version run, and an engine's note on an earlier run of the name.

Stores read heartbeats with `read_heartbeats(since)`, which the three stores
have; a store without it (one written against the protocol alone) gives no
engine part, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from replaykit.errors import WorkflowTimeout
from replaykit.log import Status
from replaykit.stores.base import Store, WorkflowFilter, WorkflowRow

__all__ = [
    "LIVE_WITHIN",
    "LiveEngine",
    "VersionLoad",
    "engines_text",
    "latest_version",
    "live_engines",
    "start_warning",
    "still_running",
    "version_loads",
    "why_waiting",
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


def live_engines(
    store: Store, *, now: datetime | None = None, within: float = LIVE_WITHIN
) -> list[LiveEngine] | None:
    """The engines heard from in the last `within` seconds; None if the store cannot say."""
    reader = getattr(store, "read_heartbeats", None)
    if reader is None:
        return None
    since = (now or datetime.now(UTC)) - timedelta(seconds=within)
    return [LiveEngine(executor, version, seen) for executor, version, seen in reader(since)]


def _more(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


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
        owner = [engine for engine in engines if engine.executor_id == row.executor_id]
        if not owner:
            return (
                f"waits for the engine with executor id {row.executor_id!r} (version "
                f"{version!r}), which is not running (no heartbeat in the last "
                f"{LIVE_WITHIN:g}s); it runs the run when it starts. Engines of that version "
                f"running: {_more([engine.executor_id for engine in same])}"
            )
        if owner[0].app_version != version:
            return (
                f"waits for an engine of version {version!r} with executor id "
                f"{row.executor_id!r}; the engine with that id runs version "
                f"{owner[0].app_version!r}"
            )
        return ""
    due = row.wake_at or row.created_at
    if due is None or now - due < QUEUE_IDLE:
        return ""
    return (
        f"due on queue {row.queue!r} for {int((now - due).total_seconds())}s, unclaimed while "
        f"engines of version {version!r} run ({_more([engine.executor_id for engine in same])})"
        f": none of them may listen to {row.queue!r} (Engine(queues=[...])), or they are at "
        "their limits (concurrency, rate)"
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
                {"executor_id": e.executor_id, "seen_at": e.seen_at.isoformat()}
                for e in self.engines
            ],
            "pending": self.pending,
            "enqueued": self.enqueued,
            "parked": self.parked,
            "unfinished": self.unfinished,
        }


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
    now: datetime | None = None,
) -> str:
    """Why no live engine may run a new run of `name` stamped `app_version`; "" if none known.

    No engine of the version runs; or (a start for one executor) that engine
    is not running; or an engine of the version wrote on an earlier run of
    `name` that it cannot run it (its workflow is not registered there).
    Engines do not record the names they registered, so a name is known to be
    missing only from such a note.
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
            f"running: {_more([e.executor_id for e in same])}); the run waits until it starts"
        )
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
