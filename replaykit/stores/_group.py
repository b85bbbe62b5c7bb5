"""Group commit: concurrent writers share one transaction.

Each caller hands its write to `GroupCommit.submit` and blocks until it is
durable, exactly as if it had committed alone. Whoever arrives while no batch
is being written becomes the leader: it takes every write waiting at that
moment (its own among them), writes them with `write_batch`, wakes each
owner with its own result, and hands the lead to the oldest write that
arrived meanwhile. Writes that arrive while a batch is in flight wait for it
and go together in the next one, so the batch size follows the load: a lone
writer pays no delay, a hundred concurrent ones share a round trip and a
commit.

One thread may also hand over several writes at once (`submit_many`): they
queue together, in order, and go into the same batches as everyone else's,
each answered on its own.

A store's `write_batch` must settle every slot it is given: a result, an
exception, or `FALL_BACK` (the owner then writes alone, on the store's
ordinary path, which knows how to explain a refusal).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final, Generic, TypeVar

__all__ = ["FALL_BACK", "GroupCommit", "Slot"]

_T = TypeVar("_T")

FALL_BACK: Final = object()
_UNSET: Final = object()


class Slot(Generic[_T]):
    """One caller's write and, once the batch committed, its outcome."""

    __slots__ = ("_error", "_result", "item", "wake")

    def __init__(self, item: _T) -> None:
        self.item = item
        self._result: Any = _UNSET
        self._error: BaseException | None = None
        # Held until the owner may go on: its write settled, or it leads next.
        # A bare lock per waiter wakes exactly that waiter, where a shared
        # condition would wake them all.
        self.wake = threading.Lock()
        self.wake.acquire()

    @property
    def settled(self) -> bool:
        return self._result is not _UNSET or self._error is not None

    def set_result(self, result: Any) -> None:
        self._result = result

    def set_error(self, error: BaseException) -> None:
        self._error = error

    def fall_back(self) -> None:
        """Whatever the batch said before, the owner writes alone after all."""
        self._result = FALL_BACK
        self._error = None

    def outcome(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._result

    def settlement(self) -> tuple[Any, BaseException | None]:
        """(result, None) or (None, error): the outcome, without raising."""
        if self._error is not None:
            return None, self._error
        return self._result, None


class GroupCommit(Generic[_T]):
    """Leader/follower batching of writes into shared transactions."""

    def __init__(
        self,
        write_batch: Callable[[Sequence[Slot[_T]]], None],
        *,
        max_batch: int = 256,
        write_one: Callable[[_T], Any] | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, not {max_batch}")
        self._write_batch = write_batch
        # A write that finds nobody writing goes straight to `write_one` (its result,
        # or its exception raised), with no slot, no batch and no hand-over: a lone
        # run's steps pay for the group only when there is a group.
        self._write_one = write_one
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: deque[Slot[_T]] = deque()
        self._leading = False

    def submit(self, item: _T) -> Any:
        """Write `item` (batched with whatever else is waiting); its outcome or `FALL_BACK`."""
        with self._lock:
            follow = self._leading
            if follow:
                slot = Slot(item)
                self._queue.append(slot)
            else:
                self._leading = True
        if not follow:
            if self._write_one is not None:
                # Writes arriving meanwhile queue, and go together once this one is over.
                try:
                    return self._write_one(item)
                finally:
                    self._pass_the_lead()
            slot = Slot(item)
        else:
            self._follow(slot)
            if slot.settled:
                return slot.outcome()
            # Promoted: the previous leader handed over; this thread leads now.
        self._lead(slot)
        return slot.outcome()

    def submit_many(self, items: Sequence[_T]) -> list[tuple[Any, BaseException | None]]:
        """Write several items from one thread, in the batches other threads' writes go into.

        Answers (result, None) or (None, error) per item, in input order; a
        result may be `FALL_BACK`. The items queue together, in order, as if
        as many threads had submitted them at once: the first leads if no
        batch is being written, and each promoted to lead on the way leads a
        batch of its own, so the lead never waits on a thread that is busy
        waiting for another of its items. An interrupt withdraws the items
        not yet taken into a batch (those already taken may have been
        written, as with `submit`) and hands on the lead if it held it.
        """
        slots = [Slot(item) for item in items]
        if not slots:
            return []
        with self._lock:
            lead = not self._leading
            if lead:
                self._leading = True
                self._queue.extend(slots[1:])
            else:
                self._queue.extend(slots)
        index = 0
        try:
            for index, slot in enumerate(slots):
                if index > 0 or not lead:
                    # Settled by a batch (ours or another thread's, whose
                    # leader released it), or promoted: only the wake says
                    # which, once the batch that took it is over.
                    self._follow(slot)
                    if slot.settled:
                        continue
                self._lead(slot)
        except BaseException:
            # `_follow` and `_lead` have already seen to slots[index].
            self._abandon(slots[index + 1 :])
            raise
        return [slot.settlement() for slot in slots]

    def _lead(self, slot: Slot[_T]) -> None:
        """Write a batch starting with `slot` (this thread leads), then hand on the lead."""
        batch = [slot]
        try:
            with self._lock:
                while self._queue and len(batch) < self._max_batch:
                    batch.append(self._queue.popleft())
            self._write(batch)
        finally:
            for other in batch:
                if other is not slot:
                    other.wake.release()
            self._pass_the_lead()

    def _abandon(self, slots: Sequence[Slot[_T]]) -> None:
        """Take back one thread's slots after an interrupt, never stranding the group.

        Slots still queued are withdrawn. Every other one was taken into a
        batch (wait for it to be over) or promoted to lead (hand the lead on).
        """
        with self._lock:
            taken = []
            for slot in slots:
                if slot in self._queue:
                    self._queue.remove(slot)
                else:
                    taken.append(slot)
        for slot in taken:
            while True:
                try:
                    slot.wake.acquire()
                    break
                except BaseException:
                    continue  # the interrupt being handled is re-raised by the caller
            if not slot.settled:
                self._pass_the_lead()

    def _follow(self, slot: Slot[_T]) -> None:
        """Wait until `slot` is settled or promoted to lead.

        An interrupted wait (Ctrl-C in the main thread) must not strand the
        group: a slot still queued is withdrawn; one already taken into a
        batch waits for it to finish; one already promoted hands the lead on.
        """
        try:
            slot.wake.acquire()
        except BaseException:
            with self._lock:
                queued = slot in self._queue
                if queued:
                    self._queue.remove(slot)
            if not queued:
                while True:
                    try:
                        slot.wake.acquire()
                        break
                    except BaseException:
                        continue  # the first interrupt is re-raised below
                if not slot.settled:
                    self._pass_the_lead()
            raise

    def _pass_the_lead(self) -> None:
        with self._lock:
            if self._queue:
                self._queue.popleft().wake.release()
            else:
                self._leading = False

    def _write(self, batch: Sequence[Slot[_T]]) -> None:
        try:
            self._write_batch(batch)
        except Exception as exc:
            # Handed to every owner, so no caller is left without an answer.
            for slot in batch:
                if not slot.settled:
                    slot.set_error(exc)
        except BaseException:
            # The leader was interrupted (KeyboardInterrupt, SystemExit): that is
            # its own business. Whatever the batch said, the other writers write
            # again alone; every store's one-write path adopts a write that
            # did commit.
            for slot in batch[1:]:
                slot.fall_back()
            raise
        for slot in batch:
            if not slot.settled:
                slot.set_error(
                    RuntimeError("group commit left a write unsettled; this is a replaykit bug")
                )
