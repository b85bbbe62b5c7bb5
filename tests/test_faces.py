"""The four faces agree: Engine, AsyncEngine, Client, AsyncClient and their handles.

`Engine` and `Client` are the sync faces; `AsyncEngine` and `AsyncClient` offer the
same operations as coroutines. Nothing but this test keeps them in step, so it
compares, for every method two faces share: the parameters' names, kinds, defaults
and annotations, and the return annotation, an `async def` returning X (or a method
returning `Awaitable[X]`) matching a sync method returning X, an `AsyncIterator[X]`
matching an `Iterator[X]`, and each async class matching its sync twin.

`SURFACE` says which public method is meant to be on which face, with the reason for
each one that is not on all four; a method added to one face and not to the table
fails here. Deliberate differences between faces are in `ALLOWED`, each with its
reason: anything else that differs fails.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Iterator,
)
from typing import Any

import pytest

from replaykit.client import (
    AsyncClient,
    AsyncClientHandle,
    AsyncResumedHandle,
    Client,
    ClientHandle,
    ResumedHandle,
)
from replaykit.runtime.aio import AsyncEngine, AsyncWorkflowHandle
from replaykit.runtime.engine import Engine, WorkflowHandle

FACES: dict[str, type] = {
    "E": Engine,
    "AE": AsyncEngine,
    "C": Client,
    "AC": AsyncClient,
}
ALL = "E AE C AC"
ENGINES = "E AE"

#: Public name -> (the faces it is on, why when not on all four).
SURFACE: dict[str, tuple[str, str]] = {
    # -- the operations every face offers ------------------------------------------------
    "backfill_schedule": (ALL, ""),
    "cancel": (ALL, ""),
    "terminate": (ALL, ""),
    "complete": (ALL, ""),
    "close": (ALL, ""),
    "closed": (ALL, ""),
    "delete_schedule": (ALL, ""),
    "enqueue": (ALL, ""),
    "fail": (ALL, ""),
    "fork": (ALL, ""),
    "rewind": (ALL, ""),
    "get_event": (ALL, ""),
    "get_events": (ALL, ""),
    "get_heartbeats": (ALL, ""),
    "handle": (ALL, ""),
    "list_workflows": (ALL, ""),
    "count_workflows": (ALL, ""),
    "pause_schedule": (ALL, ""),
    "read_stream": (ALL, ""),
    "resume": (ALL, ""),
    "resume_schedule": (ALL, ""),
    "schedules_list": (ALL, ""),
    "send": (ALL, ""),
    "start": (ALL, ""),
    "steps": (ALL, ""),
    "trigger_schedule": (ALL, ""),
    "update": (ALL, ""),
    "update_with_start": (ALL, ""),
    "send_with_start": (ALL, ""),
    "debounce": (ALL, ""),
    # The bulk actions (runtime/bulk.py, runtime/async_bulk.py): one mixin each side.
    "cancel_workflows": (ALL, ""),
    "terminate_workflows": (ALL, ""),
    "resume_workflows": (ALL, ""),
    "delete_workflows": (ALL, ""),
    "send_many": (ALL, ""),
    # -- what only an engine does: it runs workflows, a client runs nothing ---------------
    "run": (
        ENGINES,
        "start and wait on this engine's own run; a client runs nothing, so "
        "its callers say `start(...).result()` and name the queue or engine",
    ),
    "schedule": (
        ENGINES,
        "defines a schedule from workflow code, which a client does not "
        "import (a client operates the stored schedules)",
    ),
    "recover": (ENGINES, "re-dispatches this executor id's runs; a client holds no executor id"),
    "claim_now": (ENGINES, "a claim round over the listened queues; a client claims nothing"),
    "wait_idle": (ENGINES, "waits for this engine's scheduler and timers to settle"),
    "wait_finished": (
        ENGINES,
        "the wait behind the engine handles' result(), answered from "
        "the engine's finished cache; a client's handles use a private one",
    ),
    "enqueue_many": (
        ENGINES,
        "takes a Workflow object and typed items; a client names "
        "workflows by their registered name (not there yet)",
    ),
    # Known gaps: nothing stops a client doing these (the CLI does them through
    # replaykit.runtime.admin); listed so that adding them is a decision.
    "delete": (ENGINES, "not on the clients yet (the CLI deletes through runtime.admin)"),
    "garbage_collect": (ENGINES, "not on the clients yet (the CLI's `gc` uses runtime.admin)"),
    "export_log": (ENGINES, "not on the clients yet (the CLI's `export` uses runtime.admin)"),
    # -- the sync engine only: its side of the Host protocol and the runtime's rooms ------
    "cancel_child": ("E", "Host protocol: the effect runner cancels a losing Call's child"),
    "check_cancelled": ("E", "Host protocol, for the effect runner"),
    "create_run": (
        "E",
        "for the effect runner and the schedules: a run from a Workflow "
        "with its arguments as stored",
    ),
    "dispatch": ("E", "for the runtime's rooms: an activation soon"),
    "jump_to": ("E", "Host protocol: an autojumping clock's jump for a warm run"),
    "keeps_warm": ("E", "Host protocol: whether a suspending run stays warm"),
    "kept_finished": ("E", "read lock-free by AsyncEngine's waiters, on its .engine"),
    "outcome_value": ("E", "decodes a finished row for the handles of both engine faces"),
    "park": ("E", "for the scheduler's books: parks a run, saying why"),
    "scope_of": ("E", "Host protocol, for the effect runner"),
    "start_batch": ("E", "what AsyncEngine.start's batches of one loop iteration call"),
    "wait_for_change": (
        "E",
        "Host protocol: holds the calling thread, which a coroutine must not do",
    ),
    "serve": (
        "E",
        "blocks the main thread until a signal; an asyncio application runs "
        "its own loop and closes the engine from it",
    ),
    "listen": (
        "E C",
        "a callback from another thread on a notification; the async faces "
        "wait on the loop instead (their .engine / .client offer it)",
    ),
    # -- the async faces only ------------------------------------------------------------
    "open": (
        "AE AC",
        "an async face opens on the running loop (`async with` calls it); a "
        "sync face is open once built",
    ),
    "off_loop": ("AE AC", "runs a blocking call off the loop; no loop on a sync face"),
    "engine": ("AE", "the sync Engine underneath, for code on other threads"),
    "client": ("AC", "the sync Client underneath, for code on other threads"),
}

#: Methods of an async face that are plain calls (not coroutines), and why.
PLAIN_ON_ASYNC: dict[str, str] = {
    "handle": "makes a handle without a store read; the handle's own calls are awaited",
    "schedule": "registers a schedule in memory; the cron loop fires on the engine's thread",
    "read_stream": "returns an async iterator: each step of `async for` is awaited",
}

#: Deliberate differences, each with its reason: (pair, method) -> what may differ.
#: "extra" are parameters only the second face has, "absent" ones it lacks, "renamed"
#: first-face name -> second-face name, "annotations" parameters typed otherwise.
ALLOWED: dict[tuple[str, str], dict[str, Any]] = {
    ("E/AE", "__init__"): {
        "extra": {"io_workers": "the threads that carry the async face's store calls"},
        "absent": {"step_loop": "AsyncEngine passes the loop it is opened on"},
    },
    ("C/AC", "__init__"): {
        "extra": {"io_workers": "the threads that carry the async face's store calls"},
    },
    ("E/C", "start"): {
        "renamed": {"wf": "name"},
        "extra": {
            "queue": "a client's start goes to a queue or to an engine by executor id",
            "executor_id": "the engine a queue-less client start goes to",
            "app_version": "a client cannot compute the version (no workflow code)",
        },
        "return": "a ClientHandle: results come back as plain JSON values, untyped",
    },
    ("E/C", "enqueue"): {
        "renamed": {"wf": "name"},
        "annotations": {"queue": "a client names the queue; Queue objects are engine config"},
        "extra": {"app_version": "a client cannot compute the version (no workflow code)"},
        "return": "a ClientHandle: results come back as plain JSON values, untyped",
    },
    ("E/C", "resume"): {
        "extra": {
            "executor_id": "an engine resumes onto itself; a client names the engine",
            "app_version": "an engine stamps its own version; a client restamps on request",
        },
        "return": "a ClientHandle: results come back as plain JSON values, untyped",
    },
    ("E/C", "fork"): {
        "extra": {"executor_id": "an engine forks onto itself; a client names the engine"},
        "return": "a ClientHandle: results come back as plain JSON values, untyped",
    },
    ("E/C", "rewind"): {
        "extra": {
            "executor_id": "an engine rewinds onto itself; a client names the engine",
            "app_version": "an engine stamps its own version; a client restamps on request",
        },
        "return": "a ClientHandle: results come back as plain JSON values, untyped",
    },
    ("E/C", "handle"): {"return": "a ClientHandle: results come back untyped"},
    ("E/C", "update_with_start"): {
        "renamed": {"wf": "workflow"},
        "extra": {
            "start_args": "a client names the workflow; its start's arguments come apart",
            "start_kwargs": "a client names the workflow; its start's arguments come apart",
            "queue": "a client's start goes to a queue or to an engine by executor id",
            "executor_id": "the engine a queue-less client start goes to",
            "app_version": "a client cannot compute the version (no workflow code)",
        },
    },
    ("E/C", "debounce"): {
        "renamed": {"wf": "workflow"},
        "extra": {
            "queue": "a client's debouncer goes to a queue or to an engine by executor id",
            "executor_id": "the engine a queue-less client's debouncer goes to",
            "app_version": "a client cannot compute the version (no workflow code)",
        },
    },
    ("E/C", "send_with_start"): {
        "renamed": {"wf": "workflow"},
        "extra": {
            "start_args": "a client names the workflow; its start's arguments come apart",
            "start_kwargs": "a client names the workflow; its start's arguments come apart",
            "queue": "a client's start goes to a queue or to an engine by executor id",
            "executor_id": "the engine a queue-less client start goes to",
            "app_version": "a client cannot compute the version (no workflow code)",
        },
        "return": "a ClientHandle: results come back as plain JSON values, untyped",
    },
    ("E/C", "close"): {
        "absent": {
            "wait": "a client has no running steps to let finish",
            "timeout": "a client has no running steps to let finish",
        },
    },
    ("WH/CH", "result"): {"return": "a client's result is plain JSON values, untyped"},
}

#: Each async class stands for its sync twin in annotations.
SYNC_TWIN: dict[Any, Any] = {
    AsyncEngine: Engine,
    AsyncWorkflowHandle: WorkflowHandle,
    AsyncClient: Client,
    AsyncClientHandle: ClientHandle,
    AsyncResumedHandle: ResumedHandle,
    AsyncIterator: Iterator,
    AsyncIterable: Iterable,
    AsyncGenerator: Generator,
}

PAIRS: dict[str, tuple[type, type]] = {
    "E/AE": (Engine, AsyncEngine),
    "C/AC": (Client, AsyncClient),
    "WH/AWH": (WorkflowHandle, AsyncWorkflowHandle),
    "CH/ACH": (ClientHandle, AsyncClientHandle),
    # The engines' and the clients' sync faces, for what both offer.
    "E/C": (Engine, Client),
    "WH/CH": (WorkflowHandle, ClientHandle),
}


def public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def normalized(tp: Any) -> Any:
    """An annotation with awaitables unwrapped, async twins as sync, TypeVars by name."""
    if isinstance(tp, typing.TypeVar):
        return ("TypeVar", tp.__name__)
    if tp in SYNC_TWIN:
        return normalized(SYNC_TWIN[tp])
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is None:
        return tp
    if origin in (Awaitable, Coroutine):
        return normalized(args[-1])
    if origin in (typing.Union, types.UnionType):
        return ("Union", frozenset(normalized(arg) for arg in args))
    if origin is Callable:
        takes = args[0] if args[0] is Ellipsis else tuple(normalized(a) for a in args[0])
        return (Callable, takes, normalized(args[1]))
    return (normalized(origin), tuple(normalized(arg) for arg in args))


def hints(fn: Any) -> dict[str, Any]:
    return typing.get_type_hints(fn)


def describe(cls: type, name: str) -> tuple[list[inspect.Parameter], dict[str, Any]]:
    fn = getattr(cls, name)
    params = list(inspect.signature(fn).parameters.values())[1:]  # past self
    return params, hints(fn)


def differences(pair: str, name: str) -> list[str]:
    """What differs between the pair's two faces for method `name`, beyond `ALLOWED`."""
    first_cls, second_cls = PAIRS[pair]
    allowed = ALLOWED.get((pair, name), {})
    renamed: dict[str, str] = allowed.get("renamed", {})
    first_params, first_hints = describe(first_cls, name)
    second_params, second_hints = describe(second_cls, name)
    first = [p for p in first_params if p.name not in allowed.get("absent", {})]
    second = [p for p in second_params if p.name not in allowed.get("extra", {})]
    found: list[str] = []
    spell = f"{first_cls.__name__}.{name} / {second_cls.__name__}.{name}"
    if len(first) != len(second):
        found.append(f"{spell}: parameters {[p.name for p in first]} / {[p.name for p in second]}")
    for one, two in zip(first, second, strict=False):
        label = f"{spell}, parameter {one.name!r}"
        if renamed.get(one.name, one.name) != two.name:
            found.append(f"{label}: named {two.name!r} on {second_cls.__name__}")
            continue
        if one.kind is not two.kind:
            found.append(f"{label}: {one.kind.description} / {two.kind.description}")
        if one.default != two.default or type(one.default) is not type(two.default):
            found.append(f"{label}: default {one.default!r} / {two.default!r}")
        if one.name in allowed.get("annotations", {}) or one.name in renamed:
            continue
        if normalized(first_hints.get(one.name)) != normalized(second_hints.get(two.name)):
            found.append(
                f"{label}: annotated {first_hints.get(one.name)} / {second_hints.get(two.name)}"
            )
    if "return" not in allowed:
        one_return, two_return = first_hints.get("return"), second_hints.get("return")
        if normalized(one_return) != normalized(two_return):
            found.append(f"{spell}: returns {one_return} / {two_return}")
    return found


def shared_methods(pair: str) -> list[str]:
    first, second = PAIRS[pair]
    names = public_names(first) & public_names(second)
    return sorted(n for n in names if callable(inspect.getattr_static(first, n)))


def faces_of(name: str) -> set[str]:
    return set(SURFACE[name][0].split())


# -- the tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("face", FACES)
def test_each_face_has_the_methods_the_table_gives_it(face: str) -> None:
    cls = FACES[face]
    meant = {name for name in SURFACE if face in faces_of(name)}
    code = public_names(cls)
    assert sorted(code - meant) == [], (
        f"{cls.__name__} has public names SURFACE does not give it: add each to SURFACE "
        "in tests/test_faces.py (on which faces, and why if not on all four), or to the "
        "faces that lack it"
    )
    assert sorted(meant - code) == [], f"{cls.__name__} lacks what SURFACE gives it"


def test_every_one_face_method_says_why() -> None:
    unexplained = [n for n, (faces, why) in SURFACE.items() if faces != ALL and not why]
    assert unexplained == []


@pytest.mark.parametrize("pair", PAIRS)
def test_faces_agree(pair: str) -> None:
    names = shared_methods(pair)
    if pair in ("E/AE", "C/AC"):
        names.append("__init__")
    found = [line for name in names for line in differences(pair, name)]
    assert found == [], "the faces drifted apart:\n" + "\n".join(found)


@pytest.mark.parametrize("pair", ["E/AE", "C/AC", "WH/AWH", "CH/ACH"])
def test_async_faces_await_what_the_sync_faces_do(pair: str) -> None:
    """Every shared method that does I/O is a coroutine on the async face."""
    sync_cls, async_cls = PAIRS[pair]
    wrong = []
    for name in shared_methods(pair):
        fn = getattr(async_cls, name)
        if isinstance(inspect.getattr_static(async_cls, name), property):
            continue
        coroutine = inspect.iscoroutinefunction(fn)
        if coroutine == (name in PLAIN_ON_ASYNC):
            wrong.append(f"{async_cls.__name__}.{name}")
        assert not inspect.iscoroutinefunction(getattr(sync_cls, name))
    assert wrong == [], "a coroutine where PLAIN_ON_ASYNC says plain, or the reverse"


def test_sync_faces_are_context_managers_and_async_faces_async_ones() -> None:
    for sync_cls, async_cls in (PAIRS["E/AE"], PAIRS["C/AC"]):
        assert callable(getattr(sync_cls, "__enter__", None))
        assert callable(getattr(sync_cls, "__exit__", None))
        assert inspect.iscoroutinefunction(getattr(async_cls, "__aenter__", None))
        assert inspect.iscoroutinefunction(getattr(async_cls, "__aexit__", None))


def test_every_allowance_is_used() -> None:
    """An allowance for a difference that is gone is removed, not kept."""
    stale = []
    for (pair, name), allowed in ALLOWED.items():
        first_cls, second_cls = PAIRS[pair]
        first_params, first_hints = describe(first_cls, name)
        second_params, second_hints = describe(second_cls, name)
        first = {p.name for p in first_params}
        second = {p.name for p in second_params}
        renamed = allowed.get("renamed", {})
        for param in allowed.get("extra", {}):
            if param in first or param not in second:
                stale.append(f"{pair} {name}: extra {param!r}")
        for param in allowed.get("absent", {}):
            if param not in first or param in second:
                stale.append(f"{pair} {name}: absent {param!r}")
        for param, other in renamed.items():
            if param not in first or other not in second:
                stale.append(f"{pair} {name}: renamed {param!r}")
        for param in allowed.get("annotations", {}):
            one, two = first_hints.get(param), second_hints.get(renamed.get(param, param))
            if normalized(one) == normalized(two):
                stale.append(f"{pair} {name}: annotations of {param!r}")
        same_return = normalized(first_hints.get("return")) == normalized(
            second_hints.get("return")
        )
        if "return" in allowed and same_return:
            stale.append(f"{pair} {name}: return")
    assert stale == []


def test_the_comparison_sees_a_drift() -> None:
    """The checker itself: a keyword folded into **filters, a changed default, an async
    return and an async iterator are told apart from true twins."""

    class Sync:
        def listing(self, *, status: str | None = None, limit: int = 10) -> list[int]: ...

        def stream(self, key: str) -> Iterator[int]: ...

    class Async:
        async def listing(self, **filters: Any) -> list[int]: ...

        def stream(self, key: str) -> AsyncIterator[int]: ...

    class AsyncTwin:
        async def listing(self, *, status: str | None = None, limit: int = 10) -> list[int]: ...

        def stream(self, key: str) -> AsyncIterator[int]: ...

    class AsyncDefault:
        async def listing(self, *, status: str | None = None, limit: int = 20) -> list[int]: ...

        def stream(self, key: str) -> AsyncIterator[str]: ...

    try:
        PAIRS["test"] = (Sync, Async)
        assert differences("test", "listing") != []
        assert differences("test", "stream") == []
        PAIRS["test"] = (Sync, AsyncTwin)
        assert differences("test", "listing") == []
        PAIRS["test"] = (Sync, AsyncDefault)
        assert len(differences("test", "listing")) == 1
        assert len(differences("test", "stream")) == 1
    finally:
        del PAIRS["test"]
