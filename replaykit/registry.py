"""`@workflow`: naming workflow functions so a stored run can find its code again.

A stored run names its workflow; the engine looks that name up here and only
here. Nothing is imported because stored data names it: the module defining a
workflow must be imported (and so registered) by the application.
"""

from __future__ import annotations

import collections.abc
import functools
import hashlib
import inspect
import threading
import typing
from collections.abc import Callable, Generator
from typing import Any, Generic, ParamSpec, TypeVar, overload

from replaykit import serde
from replaykit._update_names import check_update_name
from replaykit.errors import (
    DuplicateWorkflowError,
    SerializationError,
    UnknownUpdate,
    UnknownWorkflowError,
)

__all__ = [
    "BoundWorkflow",
    "Workflow",
    "app_version_of",
    "lookup",
    "registered",
    "unbind",
    "workflow",
]

P = ParamSpec("P")
R = TypeVar("R")
V = TypeVar("V", bound=Callable[..., Any])

_registry: dict[str, Workflow[..., Any]] = {}
_lock = threading.Lock()


class Workflow(Generic[P, R]):
    """A registered workflow function. Calling it returns its generator, so one
    workflow can run another inline with `yield from other(...)`."""

    def __init__(
        self,
        fn: Callable[P, Generator[Any, Any, R]],
        name: str,
        updates: collections.abc.Iterable[str] = (),
    ) -> None:
        if not inspect.isgeneratorfunction(fn):
            hint = (
                " (async def workflows are not supported: make it a plain def that yields "
                "commands, and run async code in a Step)"
                if inspect.iscoroutinefunction(fn)
                else " (a workflow body must `yield` commands such as Step(...))"
            )
            raise TypeError(f"@workflow needs a generator function, got {fn!r}{hint}")
        self.fn = fn
        self.workflow_name = name
        functools.update_wrapper(self, fn)
        self._signature = inspect.signature(fn)
        if isinstance(updates, str):
            raise TypeError(
                f"@workflow(updates=...) takes a list of update names, got the str {updates!r}; "
                f"write updates=[{updates!r}]"
            )
        # The update names the workflow declares, each with its validator (or None).
        self._updates: dict[str, Callable[..., Any] | None] = {
            check_update_name(update): None for update in updates
        }

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Generator[Any, Any, R]:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<workflow {self.workflow_name!r}>"

    def bind(self, *args: P.args, **kwargs: P.kwargs) -> BoundWorkflow[R]:
        """This workflow with its arguments, for `engine.start(wf.bind(...), workflow_id=...)`.

        `start(wf, *args)` cannot let mypy check `args` against the workflow's
        parameters, because its own options (`workflow_id=`, ...) share the
        keyword space; a bound workflow carries the arguments already checked.
        They are checked again at run time, as every start checks them.
        """
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"workflow {self.workflow_name!r}: bad arguments: {exc}") from None
        return BoundWorkflow(self, args, dict(kwargs))

    # -- updates ----------------------------------------------------------------------

    @property
    def update_names(self) -> frozenset[str]:
        """The update names the workflow declares (`updates=`, and each validator's)."""
        return frozenset(self._updates)

    def validator(self, name: str) -> Callable[[V], V]:
        """Register a validator for update `name` (and declare the name):

            @checkout.validator("add")
            def check_add(amount: int) -> None:
                if amount <= 0:
                    raise ValueError("add a positive amount")

        It is called with the request's arguments (decoded by its own annotations)
        before the request is accepted; any exception it raises refuses the request:
        nothing reaches the run's inbox or log, and the caller gets that exception.
        It runs where the workflow's code is registered: in the caller's process when
        that has imported the workflow, else in the engine before the request is
        delivered to the workflow. Keep it quick and free of I/O.
        """
        check_update_name(name)

        def register(fn: V) -> V:
            if not callable(fn):
                raise TypeError(f"{self!r}.validator({name!r}) decorates a function, got {fn!r}")
            if self._updates.get(name) is not None and self._updates[name] is not fn:
                raise ValueError(
                    f"workflow {self.workflow_name!r} has a validator for update {name!r} "
                    f"already ({self._updates[name]!r}); one validator per update name"
                )
            self._updates[name] = fn
            return fn

        return register

    def unknown_update(self, name: str, *, workflow_id: str | None = None) -> UnknownUpdate | None:
        """The error for an update name the workflow does not declare, else None."""
        if name in self._updates:
            return None
        declared = ", ".join(repr(n) for n in sorted(self._updates)) or "none"
        run = "" if workflow_id is None else f" (id {workflow_id!r})"
        return UnknownUpdate(
            f"workflow {self.workflow_name!r}{run} has no update {name!r} (it declares: "
            f"{declared}). Declare it with @workflow(updates=[{name!r}]) or "
            f"@{self.fn.__name__}.validator({name!r}), and take it with "
            f"ReceiveUpdate({name!r}); or check the name"
        )

    def check_update(
        self, name: str, args: Any, kwargs: Any, *, workflow_id: str | None = None
    ) -> None:
        """Raise `UnknownUpdate` for a name the workflow does not declare, or whatever its
        validator raises for these arguments (their encoded data, decoded here by the
        validator's annotations, as the request would carry them)."""
        unknown = self.unknown_update(name, workflow_id=workflow_id)
        if unknown is not None:
            raise unknown
        check = self._updates[name]
        if check is None:
            return
        hints = _hints_of(check)
        try:
            bound = inspect.signature(check).bind(*(args or ()), **(kwargs or {}))
        except TypeError as exc:
            raise TypeError(
                f"update {name!r} of workflow {self.workflow_name!r}: its validator "
                f"{check.__qualname__} does not take these arguments: {exc}"
            ) from None
        except ValueError:  # no signature to read (a builtin): call it as given
            check(*(args or ()), **(kwargs or {}))
            return
        for key, data in list(bound.arguments.items()):
            bound.arguments[key] = serde.decode(
                data, hints.get(key), what=f"argument {key!r} of update {name!r}"
            )
        check(*bound.args, **bound.kwargs)

    @functools.cached_property
    def _hints(self) -> dict[str, Any]:
        try:
            return typing.get_type_hints(self.fn)
        except Exception:
            return {}

    @property
    def result_type(self) -> Any:
        """R from a `Generator[..., ..., R]` return annotation, if there is one."""
        hint = self._hints.get("return")
        origin = typing.get_origin(hint)
        if origin in (collections.abc.Generator, Generator):
            args = typing.get_args(hint)
            if len(args) == 3:
                return args[2]
        return None

    def encode_inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"workflow {self.workflow_name!r}: bad arguments: {exc}") from None
        return {
            "args": serde.encode(
                list(args), what=f"the arguments of workflow {self.workflow_name!r}"
            ),
            "kwargs": serde.encode(
                kwargs, what=f"the arguments of workflow {self.workflow_name!r}"
            ),
        }

    def decode_inputs(self, inputs: Any) -> tuple[list[Any], dict[str, Any]]:
        """Arguments back from their stored form, typed by the function's annotations."""
        inputs = inputs or {}
        raw_args = list(inputs.get("args") or [])
        raw_kwargs = dict(inputs.get("kwargs") or {})
        params = list(self._signature.parameters.values())
        hints = self._hints
        args: list[Any] = []
        for index, data in enumerate(raw_args):
            hint = None
            if index < len(params) and params[index].kind in (
                inspect.Parameter.POSITIONAL_ONLY,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
            ):
                hint = hints.get(params[index].name)
            args.append(self._decode_arg(data, hint, index))
        kwargs = {
            key: self._decode_arg(data, hints.get(key), key) for key, data in raw_kwargs.items()
        }
        return args, kwargs

    def _decode_arg(self, data: Any, hint: Any, where: object) -> Any:
        try:
            return serde.decode(data, hint, what=f"argument {where!r}")
        except SerializationError as exc:
            raise SerializationError(f"workflow {self.workflow_name!r}: {exc}") from exc


class BoundWorkflow(Generic[R]):
    """A workflow and the arguments of one run (`Workflow.bind`)."""

    __slots__ = ("args", "kwargs", "workflow")

    def __init__(
        self, workflow: Workflow[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.workflow = workflow
        self.args = args
        self.kwargs = kwargs

    def __repr__(self) -> str:
        return f"<workflow {self.workflow.workflow_name!r} bound to {len(self.args)} args>"


def unbind(
    wf: Workflow[..., R] | BoundWorkflow[R], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Workflow[..., R], tuple[Any, ...], dict[str, Any]]:
    """The workflow and arguments of a start given either spelling; both at once is refused."""
    if not isinstance(wf, BoundWorkflow):
        return wf, args, kwargs
    if args or kwargs:
        raise TypeError(
            f"workflow {wf.workflow.workflow_name!r} is bound to its arguments already "
            f"(wf.bind(...)); pass the others to bind(), not after it"
        )
    return wf.workflow, wf.args, wf.kwargs


@overload
def workflow(fn: Callable[P, Generator[Any, Any, R]], /) -> Workflow[P, R]: ...


@overload
def workflow(
    *,
    name: str | None = None,
    replace: bool = False,
    updates: collections.abc.Iterable[str] = (),
) -> Callable[[Callable[P, Generator[Any, Any, R]]], Workflow[P, R]]: ...


def workflow(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    replace: bool = False,
    updates: collections.abc.Iterable[str] = (),
) -> Any:
    """Register a generator function as a workflow, under `name` or its qualified name.

    A second, different function under a registered name is refused unless
    `replace=True` (tests that swap a workflow's code, hot reloads). `updates`
    declares the update names the workflow answers (`ReceiveUpdate`); a
    `@wf.validator(name)` declares its name too.
    """
    if isinstance(updates, str):
        raise TypeError(
            f"@workflow(updates=...) takes a list of update names, got the str {updates!r}; "
            f"write updates=[{updates!r}]"
        )
    declared = list(updates)

    def register(target: Callable[P, Generator[Any, Any, R]]) -> Workflow[P, R]:
        wf: Workflow[P, R] = Workflow(target, name or target.__qualname__, declared)
        with _lock:
            existing = _registry.get(wf.workflow_name)
            if not replace and existing is not None and _origin(existing.fn) != _origin(target):
                raise DuplicateWorkflowError(
                    f"workflow name {wf.workflow_name!r} is already registered by "
                    f"{_origin(existing.fn)}; give this one another name with "
                    f"@workflow(name=...) ({_origin(target)})"
                )
            _registry[wf.workflow_name] = wf
        return wf

    if fn is not None:
        return register(fn)
    return register


def _hints_of(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except Exception:
        return {}


def _origin(fn: Callable[..., Any]) -> str:
    code = getattr(fn, "__code__", None)
    where = f"{code.co_filename}:{code.co_firstlineno}" if code else "?"
    return f"{fn.__module__}.{fn.__qualname__} ({where})"


def lookup(name: str) -> Workflow[..., Any]:
    wf = _registry.get(name)
    if wf is None:
        known = ", ".join(sorted(_registry)) or "none"
        raise UnknownWorkflowError(
            f"no workflow named {name!r} is registered in this process (registered: {known}). "
            "Import the module that defines it before starting the engine"
        )
    return wf


def registered() -> dict[str, Workflow[..., Any]]:
    with _lock:
        return dict(_registry)


def app_version_of(workflows: collections.abc.Iterable[Workflow[..., Any]]) -> str:
    """A digest of the registered workflows' code: changes when their code changes."""
    digest = hashlib.sha256()
    for wf in sorted(workflows, key=lambda w: w.workflow_name):
        digest.update(wf.workflow_name.encode())
        try:
            digest.update(inspect.getsource(wf.fn).encode())
        except (OSError, TypeError):
            digest.update(wf.fn.__code__.co_code)
    return digest.hexdigest()[:12]
