"""What every store's `record_many` shares: the precondition and the one-by-one tail."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from replaykit.errors import StoreUnavailable
from replaykit.log import Record
from replaykit.stores._group import FALL_BACK
from replaykit.stores.base import FinishWrite, RecordWrite

__all__ = [
    "Answers",
    "answered",
    "finish_one_by_one",
    "finishes_from_the_batch",
    "finishes_of",
    "from_the_batch",
    "write_one_by_one",
    "writes_of",
]

# One answer per write, in input order; None until the write is answered.
Answers = list[Record | Exception | None]


def writes_of(writes: Sequence[RecordWrite]) -> list[RecordWrite]:
    """`writes` as a list, refused (nothing written) unless each names a run of its own."""
    if isinstance(writes, RecordWrite):
        raise TypeError("record_many() takes a sequence of RecordWrite; use record() for one")
    batch = list(writes)
    seen: set[str] = set()
    for write in batch:
        if not isinstance(write, RecordWrite):
            raise TypeError(f"record_many() takes RecordWrite values, not {write!r}")
        if write.workflow_id in seen:
            raise ValueError(
                f"record_many() was given two writes of workflow id {write.workflow_id!r}; "
                "each write must name a run of its own (record the later position after the "
                "earlier one is answered). Nothing was written"
            )
        seen.add(write.workflow_id)
    return batch


def finishes_of(finishes: Sequence[FinishWrite]) -> list[FinishWrite]:
    """`finishes` as a list, refused (nothing written) unless each names a run of its own."""
    if isinstance(finishes, FinishWrite):
        raise TypeError(
            "finish_many() takes a sequence of FinishWrite; use finish_workflow() for one"
        )
    batch = list(finishes)
    seen: set[str] = set()
    for finish in batch:
        if not isinstance(finish, FinishWrite):
            raise TypeError(f"finish_many() takes FinishWrite values, not {finish!r}")
        if finish.workflow_id in seen:
            raise ValueError(
                f"finish_many() was given two finishes of workflow id {finish.workflow_id!r}; "
                "a run finishes once. Nothing was written"
            )
        seen.add(finish.workflow_id)
    return batch


def finish_one_by_one(
    finishes: Sequence[FinishWrite], finish: Callable[[FinishWrite], bool]
) -> list[bool | Exception]:
    """Answer each finish with `finish(f)` or what it raised, in order; once the store is
    unavailable, the finishes not yet attempted are answered so without being tried."""
    answers: list[bool | Exception] = []
    lost: StoreUnavailable | None = None
    for item in finishes:
        if lost is not None:
            skipped = StoreUnavailable(
                f"workflow id {item.workflow_id!r}: not attempted, the store was unavailable "
                f"for an earlier finish of the same finish_many() call ({lost})"
            )
            skipped.__cause__ = lost
            answers.append(skipped)
            continue
        try:
            answers.append(finish(item))
        except StoreUnavailable as exc:
            answers.append(exc)
            lost = exc
        except Exception as exc:
            answers.append(exc)
    return answers


def finishes_from_the_batch(
    indexes: Sequence[int],
    outcomes: Sequence[tuple[Any, BaseException | None]],
    alone: Callable[[int], bool],
) -> dict[int, bool | Exception]:
    """The answers of the finishes at `indexes`, from group commit's outcomes
    (`submit_many`); a finish told to write alone (`FALL_BACK`) is written by
    `alone(index)` then, in order."""
    answers: dict[int, bool | Exception] = {}
    for index, (result, error) in zip(indexes, outcomes, strict=True):
        if error is not None:
            if not isinstance(error, Exception):
                raise error
            answers[index] = error
        elif result is FALL_BACK:
            try:
                answers[index] = alone(index)
            except Exception as exc:
                answers[index] = exc
        else:
            answers[index] = bool(result)
    return answers


def from_the_batch(
    answers: Answers,
    indexes: Sequence[int],
    outcomes: Sequence[tuple[Any, BaseException | None]],
) -> list[int]:
    """Answer the writes at `indexes` with group commit's outcomes (`submit_many`).

    Returns the indexes told to write alone (`FALL_BACK`), in order.
    """
    alone = []
    for index, (result, error) in zip(indexes, outcomes, strict=True):
        if error is not None:
            if not isinstance(error, Exception):
                raise error
            answers[index] = error
        elif result is FALL_BACK:
            alone.append(index)
        else:
            answers[index] = result
    return alone


def write_one_by_one(
    writes: Sequence[RecordWrite],
    answers: Answers,
    indexes: Sequence[int],
    write: Callable[[int], Record],
) -> None:
    """Answer `answers[i]` for each index, in order, with `write(i)` or what it raised.

    Once the store is unavailable (an answer of `StoreUnavailable`, already
    given or raised here), the writes not yet attempted are answered with a
    `StoreUnavailable` of their own instead of each waiting out the store's
    timeout in turn.
    """
    lost = next((a for a in answers if isinstance(a, StoreUnavailable)), None)
    for index in indexes:
        if lost is not None:
            skipped = StoreUnavailable(
                f"workflow id {writes[index].workflow_id!r}: not attempted, the store was "
                f"unavailable for an earlier write of the same record_many() call ({lost})"
            )
            skipped.__cause__ = lost
            answers[index] = skipped
            continue
        try:
            answers[index] = write(index)
        except StoreUnavailable as exc:
            answers[index] = lost = exc
        except Exception as exc:
            answers[index] = exc


def answered(answers: Answers) -> list[Record | Exception]:
    """The answers, every write having been answered."""
    done: list[Record | Exception] = []
    for answer in answers:
        assert answer is not None, "record_many left a write unanswered; this is a replaykit bug"
        done.append(answer)
    return done
