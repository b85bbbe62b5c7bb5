"""replaykit/runtime/twins.py: an async face's coroutine made from the sync method.

The twin carries the sync method's public signature (parameters, annotations, overloads
for mypy), calls the sync face's method of that name off the loop, and hands back its
answer (or what `then` makes of it); `room_method` is the same for a sync face over one of
its rooms.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from replaykit.runtime.twins import off_loop_twin, room_method

T = TypeVar("T")


class Handle:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id


class Sync:
    """A sync face."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = []

    def add(self, a: int, /, b: int = 2, *, scale: float = 1.0) -> float:
        """The sum, scaled."""
        self.calls.append(("add", (a, b), {"scale": scale}, threading.current_thread().name))
        return (a + b) * scale

    def start(self, name: str) -> Handle:
        return Handle(f"run-{name}")

    def refuse(self, why: str) -> None:
        raise ValueError(why)


class Overriding(Sync):
    def add(self, a: int, /, b: int = 2, *, scale: float = 1.0) -> float:
        return -1.0


class AsyncHandle:
    def __init__(self, face: Face, run_id: str) -> None:
        self.face = face
        self.run_id = run_id


def _async_handle(face: Face, handle: Handle) -> AsyncHandle:
    return AsyncHandle(face, handle.run_id)


class Face:
    """An async face over `Sync`, its calls on a thread of its own."""

    def __init__(self, sync: Sync) -> None:
        self.sync = sync
        self.off_loop_calls = 0

    def _sync(self) -> Sync:
        return self.sync

    async def off_loop(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        self.off_loop_calls += 1
        return await asyncio.to_thread(fn, *args, **kwargs)

    add = off_loop_twin(Sync.add)
    start = off_loop_twin(Sync.start, _async_handle, AsyncHandle)
    refuse = off_loop_twin(Sync.refuse)


def test_a_twin_awaits_the_sync_method_off_the_loop() -> None:
    sync = Sync()
    face = Face(sync)
    assert asyncio.run(face.add(1, 3, scale=2.0)) == 8.0
    assert asyncio.run(face.add(1)) == 3.0  # the sync method's defaults apply
    assert face.off_loop_calls == 2
    (name, args, kwargs, thread), _ = sync.calls
    assert (name, args, kwargs) == ("add", (1, 3), {"scale": 2.0})
    assert thread != threading.main_thread().name


def test_a_twin_calls_the_faces_own_method_by_name() -> None:
    assert asyncio.run(Face(Overriding()).add(1)) == -1.0


def test_then_turns_the_answer_into_the_async_one() -> None:
    face = Face(Sync())
    handle = asyncio.run(face.start("x"))
    assert isinstance(handle, AsyncHandle)
    assert (handle.face, handle.run_id) == (face, "run-x")


def test_the_sync_methods_error_is_raised_by_the_await() -> None:
    with pytest.raises(ValueError, match="no"):
        asyncio.run(Face(Sync()).refuse("no"))


def test_a_twin_has_the_sync_signature_as_a_coroutine() -> None:
    assert inspect.iscoroutinefunction(Face.add)
    assert inspect.signature(Face.add) == inspect.signature(Sync.add)
    assert typing.get_type_hints(Face.add) == typing.get_type_hints(Sync.add)
    assert Face.add.__name__ == "add"
    assert Face.add.__doc__ is not None
    assert Face.add.__doc__.startswith("The sum, scaled.")
    assert "coroutine" in Face.add.__doc__


def test_a_converted_twin_is_annotated_with_what_it_returns() -> None:
    assert typing.get_type_hints(Face.start)["return"] is AsyncHandle
    assert inspect.signature(Face.start).return_annotation is AsyncHandle
    assert list(inspect.signature(Face.start).parameters) == ["self", "name"]
    # The sync method keeps its own annotations.
    assert typing.get_type_hints(Sync.start)["return"] is Handle


class Room:
    def grow(self, by: int, *, twice: bool = False) -> int:
        """How far it grew."""
        return by * (2 if twice else 1)


class Front:
    def __init__(self) -> None:
        self.room = Room()

    grow = room_method("room", Room.grow)


def test_a_room_method_is_the_rooms_method_on_the_face() -> None:
    assert Front().grow(3, twice=True) == 6
    assert inspect.signature(Front.grow) == inspect.signature(Room.grow)
    assert typing.get_type_hints(Front.grow) == typing.get_type_hints(Room.grow)
    assert Front.grow.__doc__ == "How far it grew."
    assert not inspect.iscoroutinefunction(Front.grow)
