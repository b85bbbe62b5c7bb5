"""The testing kit's sandbox: in a workflow body, the clock and randomness refuse to answer.

Code between two commands runs again on every replay, so a body that reads the
clock or draws a random number takes another path on replay than it took live.
While a sandboxed session drives its runs, the functions below are replaced by
guards. A guard answers as the original does, except when the calling thread is
inside the body of a workflow run of that session; then it raises
`NonDeterministicCall`, naming the call, the workflow and the line, and the fix.

How "inside the body" is known: the interpreter sets its context variable (the
one `replaykit.context()` reads) only while it resumes the generator, through
`send` and `throw`, on the thread that resumes it. Step bodies, the engine, the
kit and hypothesis run with it unset, on their own threads or between two
resumptions, and so see the real functions; so do other threads at all times,
and workflows run by an engine that is not the session's (the run's id must be
one of the session's).

Calls made by the standard library or by replaykit on the body's behalf are
let through: `logging` stamps every record with `time.time()`, and a log line in
a workflow body is fine. The guard judges the frame that made the call, by the
file its code is in.

Clock functions written in C are watched a second way, with a profile hook
(`threading.setprofile`) on the threads started while a session runs, which
are the threads its engines run bodies on: the hook sees every call of a C
function, however it is reached, so `datetime.now()` and `datetime.utcnow()`
(methods of a C type, which no attribute swap can guard safely: writing into a
built-in type's namespace corrupts memory under C extensions such as
time-machine) are refused, and so is a C clock function bound to a name before
the session started (`from time import time`). A refusal raised by the hook
ends that thread's profiling, as CPython does with a hook that raises; the kit
raises the first refusal at the end of the run anyway.

What it cannot see: a Python-level function bound before the session started
(`from uuid import uuid4`, `from random import randint`): the hook watches C
calls only. The linter (`replaykit lint`, RK101 to RK103) reads those imports and
reports them.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import random
import secrets
import sys
import sysconfig
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Protocol

from replaykit._text import shown_path
from replaykit.errors import NonDeterministicCall

# The variable behind `replaykit.context()`, read directly: a guard asks it on
# every call of the engine's own clock reads too, and `context()` raises outside
# a body, which would make each of those calls pay for an exception.
from replaykit.interpreter import _current

__all__ = ["Owner", "sandboxed"]

_NOW = "yield Now() instead (recorded once, replayed forever)"
_DURATION = "measure durations inside a Step, or take two `yield Now()`"
_RANDOM = "yield Random() instead (recorded once, replayed forever), or draw it inside a Step"
_UUID = "yield Uuid() instead (recorded once, replayed forever)"
_ENTROPY = "draw it inside a Step (its result is recorded), or yield Random() / Uuid()"

#: (module, attribute, fix) of every module-level function the sandbox guards.
_FUNCTIONS: tuple[tuple[Any, str, str], ...] = (
    *((time, name, _NOW) for name in ("time", "time_ns")),
    *(
        (time, name, _DURATION)
        for name in ("monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns")
    ),
    *(
        (random, name, _RANDOM)
        for name in (
            "random",
            "uniform",
            "triangular",
            "randint",
            "choice",
            "randrange",
            "sample",
            "shuffle",
            "choices",
            "normalvariate",
            "lognormvariate",
            "expovariate",
            "vonmisesvariate",
            "gammavariate",
            "gauss",
            "betavariate",
            "paretovariate",
            "weibullvariate",
            "binomialvariate",
            "getrandbits",
            "randbytes",
        )
        if hasattr(random, name)
    ),
    (uuid, "uuid1", _UUID),
    (uuid, "uuid4", _UUID),
    (os, "urandom", _ENTROPY),
    *(
        (secrets, name, _ENTROPY)
        for name in ("token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits")
    ),
)


def _directories(*keys: str) -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.join(os.path.realpath(paths[key]), "") for key in keys if key in paths})


# Callers that read the clock on a body's behalf without changing what it does (the
# standard library's logging, replaykit itself), told by where their code lives: a
# module's name would let a user's package called `calendar` through.
_STDLIB = _directories("stdlib", "platstdlib")
_SITE = _directories("purelib", "platlib")  # may lie inside the stdlib's directory
_REPLAYKIT = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "")
_trusted_files: dict[str, bool] = {}


def _trusted(filename: str) -> bool:
    verdict = _trusted_files.get(filename)
    if verdict is None:
        if filename.startswith("<frozen "):
            verdict = True  # the standard library's frozen modules (os, codecs, ...)
        else:
            path = os.path.realpath(filename)
            verdict = path.startswith(_REPLAYKIT) or (
                path.startswith(_STDLIB) and not path.startswith(_SITE)
            )
        _trusted_files[filename] = verdict
    return verdict


class Owner(Protocol):
    """A session as the sandbox sees it: which runs are its, and where refusals go."""

    def owns(self, workflow_id: str) -> bool: ...

    def refused(self, error: NonDeterministicCall) -> None: ...


_lock = threading.Lock()
_owners: list[Owner] = []
_installed: list[Callable[[], None]] = []  # how to undo each patch


# What a refusal adds about a function C code calls on the caller's behalf.
_ALSO = {"time.time()": " (date.today() and datetime.today() call it too)"}


def _check(call: str, fix: str, frame: FrameType | None) -> None:
    """Raise if `frame` (the caller) is in the body of a sandboxed session's run."""
    context = _current.get()
    if context is None or frame is None:
        return
    if _trusted(frame.f_code.co_filename):
        return
    with _lock:
        owners = list(_owners)
    owner = next((o for o in owners if o.owns(context.workflow_id)), None)
    if owner is None:
        return
    site = f"{shown_path(frame.f_code.co_filename)}:{frame.f_lineno}"
    error = NonDeterministicCall(
        f"{call}{_ALSO.get(call, '')} was called in the body of workflow {context.name!r} (id "
        f"{context.workflow_id!r}) at {site}. Code between commands runs again on every "
        f"replay and would get another answer there; {fix}. (The testing kit's sandbox "
        "refused the call; run(..., sandbox=False) or check_determinism(..., sandbox=False) "
        "turns it off.)",
        call=call,
        workflow_name=context.name,
        workflow_id=context.workflow_id,
        call_site=site,
        fix=fix,
    )
    owner.refused(error)
    raise error


def _guard_function(module: Any, name: str, fix: str) -> Callable[[], None]:
    original = getattr(module, name)
    call = f"{module.__name__}.{name}()"

    def guard(*args: Any, **kwargs: Any) -> Any:
        if _current.get() is not None:
            _check(call, fix, sys._getframe(1))
        return original(*args, **kwargs)

    guard.__name__ = getattr(original, "__name__", name)
    guard.__qualname__ = getattr(original, "__qualname__", name)
    guard.__doc__ = getattr(original, "__doc__", None)
    guard.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(module, name, guard)

    def undo() -> None:
        # Someone who patched it after us (a test's monkeypatch) restores their own.
        if getattr(module, name) is guard:
            setattr(module, name, original)

    return undo


#: C clock functions, by identity (the originals, before any guard), for the hook.
_C_CLOCKS: dict[int, tuple[str, str]] = {
    id(getattr(time, name)): (f"time.{name}()", fix)
    for name, fix in (
        ("time", _NOW),
        ("time_ns", _NOW),
        ("monotonic", _DURATION),
        ("monotonic_ns", _DURATION),
        ("perf_counter", _DURATION),
        ("perf_counter_ns", _DURATION),
    )
}
_C_CLOCKS[id(os.urandom)] = ("os.urandom()", _ENTROPY)
# Methods of the C date types that read the clock; each access makes a new bound
# method, so they are known by their class and name, not by identity.
_DATE_CLOCKS = {"now": "datetime.now()", "utcnow": "datetime.utcnow()"}
_BUILTIN_METHOD = type(datetime.datetime.now)
_previous_profile: Any = None


def _profile(frame: FrameType, event: str, arg: Any) -> None:
    if _previous_profile is not None:
        _previous_profile(frame, event, arg)
    if event != "c_call":
        return
    found = _C_CLOCKS.get(id(arg))
    if found is None and type(arg) is _BUILTIN_METHOD:
        owner = getattr(arg, "__self__", None)
        name = _DATE_CLOCKS.get(arg.__name__)
        if name is not None and isinstance(owner, type) and issubclass(owner, datetime.date):
            found = (name, _NOW)
    if found is not None and _current.get() is not None and not _installed_package(frame):
        _check(found[0], found[1], frame)


_package_files: dict[str, bool] = {}


def _installed_package(frame: FrameType) -> bool:
    """Whether `frame` runs code of an installed package (hypothesis' GC callback, a
    library's own timing): the hook sees C calls made anywhere on the thread, and only
    the user's own code is the body's."""
    filename = frame.f_code.co_filename
    verdict = _package_files.get(filename)
    if verdict is None:
        verdict = _package_files[filename] = os.path.realpath(filename).startswith(_SITE)
    return verdict


def _install() -> None:
    global _previous_profile
    try:
        for module, name, fix in _FUNCTIONS:
            _installed.append(_guard_function(module, name, fix))
        _previous_profile = threading.getprofile()
        threading.setprofile(_profile)
    except BaseException:
        _uninstall()  # interrupted half-way (Ctrl-C): leave nothing behind
        raise


def _uninstall() -> None:
    global _previous_profile
    if threading.getprofile() is _profile:
        threading.setprofile(_previous_profile)
    _previous_profile = None
    while _installed:
        _installed.pop()()


@contextlib.contextmanager
def sandboxed(owner: Owner) -> Iterator[None]:
    """Guard the clock and randomness for the runs `owner` owns, while this block runs.

    The guards are installed by the first sandboxed session and removed when the
    last one ends, so sessions may run at once (on several threads).
    """
    with _lock:
        if not _owners:
            _install()
        _owners.append(owner)
    try:
        yield
    finally:
        with _lock:
            _owners.remove(owner)
            if not _owners:
                _uninstall()
