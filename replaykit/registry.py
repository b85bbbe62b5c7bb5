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
from replaykit.errors import DuplicateWorkflowError, SerializationError, UnknownWorkflowError

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

_registry: dict[str, Workflow[..., Any]] = {}
_lock = threading.Lock()


class Workflow(Generic[P, R]):
    """A registered workflow function. Calling it returns its generator, so one
    workflow can run another inline with `yield from other(...)`."""

    def __init__(self, fn: Callable[P, Generator[Any, Any, R]], name: str) -> None:
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
    *, name: str | None = None, replace: bool = False
) -> Callable[[Callable[P, Generator[Any, Any, R]]], Workflow[P, R]]: ...


def workflow(fn: Any = None, /, *, name: str | None = None, replace: bool = False) -> Any:
    """Register a generator function as a workflow, under `name` or its qualified name.

    A second, different function under a registered name is refused unless
    `replace=True` (tests that swap a workflow's code, hot reloads).
    """

    def register(target: Callable[P, Generator[Any, Any, R]]) -> Workflow[P, R]:
        wf: Workflow[P, R] = Workflow(target, name or target.__qualname__)
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
