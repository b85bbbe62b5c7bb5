"""An async face's coroutine made from the sync face's method: one signature, not two.

Most coroutines of `AsyncEngine` and `AsyncClient` only hand their arguments to the
sync face's method of the same name, off the loop. Written out, each repeated the
sync method's signature and then every argument again, once per async face; a
parameter added to one copy and not the others drifted. `off_loop_twin(Sync.method)`
makes that coroutine from the sync method itself (psycopg's "the sync twin is thin",
here the other way round): the same parameters, defaults, annotations and docstring,
so `inspect.signature`, `typing.get_type_hints`, `help()` and mypy (through the
`ParamSpec`) see the public signature written once.

`room_method("starts", Starts.create_run)` is the same for a sync face's method that
only hands over to one of its rooms.

A coroutine that does more than hand over (a start batched on the loop, a wait that
holds no thread, a handle typed by its workflow's result) is written out in its face.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, overload

__all__ = ["OffLoop", "off_loop_twin", "room_method"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")


class OffLoop(Protocol):
    """What a twin asks of its async face: the sync face, and a way to call it."""

    def _sync(self) -> Any: ...

    async def off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...


@overload
def off_loop_twin(
    method: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]: ...


@overload
def off_loop_twin(
    method: Callable[Concatenate[Any, P], R],
    then: Callable[[Any, R], S],
    returns: Any,
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, S]]: ...


def off_loop_twin(
    method: Callable[..., Any],
    then: Callable[[Any, Any], Any] | None = None,
    returns: Any = None,
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """The coroutine that calls the sync face's `method` (by its name, so a face's own
    override is the one called) off the loop, with the arguments it was given.

    `then(face, answer)` turns the sync answer into the async one (a sync handle into
    the face's async handle); `returns` is then what the coroutine is annotated to
    return, since the sync method's annotation no longer says it.
    """
    name = method.__name__

    @functools.wraps(method)
    async def twin(self: OffLoop, /, *args: Any, **kwargs: Any) -> Any:
        answer = await self.off_loop(getattr(self._sync(), name), *args, **kwargs)
        return answer if then is None else then(self, answer)

    if then is not None:
        twin.__annotations__ = {**method.__annotations__, "return": returns}
        twin.__signature__ = inspect.signature(method).replace(  # type: ignore[attr-defined]
            return_annotation=returns
        )
    twin.__doc__ = (
        f"{inspect.getdoc(method) or f'`{name}`.'}\n\n"
        "On an async face, a coroutine: the call runs on the face's own threads, off the loop."
    )
    return twin


def room_method(
    room: str, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Any, P], R]:
    """A face's method that is its room's `method`: `self.<room>.<name>(...)`, with the
    room's signature, annotations and docstring."""
    name = method.__name__

    @functools.wraps(method)
    def forwarded(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return getattr(getattr(self, room), name)(*args, **kwargs)  # type: ignore[no-any-return]

    return forwarded
