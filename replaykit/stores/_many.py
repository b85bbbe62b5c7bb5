"""What every store's `record_many` shares: the precondition and the one-by-one tail."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from replaykit.errors import StoreUnavailable
from replaykit.log import Record
from replaykit.stores._finish import checked_finish
from replaykit.stores._group import FALL_BACK
from replaykit.stores.base import FinishWrite, RecordWrite

__all__ = [
    "Answers",
    "answered",
    "checked_finishes",
    "finish_one_by_one",
    "finishes_from_the_batch",
    "finishes_of",
    "from_the_batch",
    "write_one_by_one",
    "writes_of",
]

_Write = TypeVar("_Write", RecordWrite, FinishWrite)
_Answer = TypeVar("_Answer")
_Prepared = TypeVar("_Prepared")

# One answer per write, in input order; None until the write is answered.
Answers = list[Record | Exception | None]


def writes_of(writes: Sequence[RecordWrite]) -> list[RecordWrite]:
    """`writes` as a list, refused (nothing written) unless each names a run of its own."""
    return _one_run_each(
        writes,
        RecordWrite,
        "record_many",
        "record",
        "writes",
        "each write must name a run of its own (record the later position after the "
        "earlier one is answered)",
    )


def finishes_of(finishes: Sequence[FinishWrite]) -> list[FinishWrite]:
    """`finishes` as a list, refused (nothing written) unless each names a run of its own."""
    return _one_run_each(
        finishes, FinishWrite, "finish_many", "finish_workflow", "finishes", "a run finishes once"
    )


def _one_run_each(
    items: Sequence[_Write], kind: type[_Write], call: str, single: str, plural: str, why: str
) -> list[_Write]:
    if isinstance(items, kind):
        raise TypeError(f"{call}() takes a sequence of {kind.__name__}; use {single}() for one")
    batch = list(items)
    seen: set[str] = set()
    for item in batch:
        if not isinstance(item, kind):
            raise TypeError(f"{call}() takes {kind.__name__} values, not {item!r}")
        if item.workflow_id in seen:
            raise ValueError(
                f"{call}() was given two {plural} of workflow id {item.workflow_id!r}; "
                f"{why}. Nothing was written"
            )
        seen.add(item.workflow_id)
    return batch


def _attempt(
    call: Callable[[], _Answer], workflow_id: str, lost: StoreUnavailable | None, what: str
) -> tuple[_Answer | Exception, StoreUnavailable | None]:
    """`call()` or what it raised, and the store's unavailability as now known. Once the
    store is unavailable, the call is answered so without being tried (`what` names
    the earlier call that found it so)."""
    if lost is not None:
        skipped = StoreUnavailable(
            f"workflow id {workflow_id!r}: not attempted, the store was unavailable "
            f"for an earlier {what} ({lost})"
        )
        skipped.__cause__ = lost
        return skipped, lost
    try:
        return call(), None
    except StoreUnavailable as exc:
        return exc, exc
    except Exception as exc:
        return exc, None


def finish_one_by_one(
    finishes: Sequence[FinishWrite], finish: Callable[[FinishWrite], bool]
) -> list[bool | Exception]:
    """Answer each finish with `finish(f)` or what it raised, in order; once the store is
    unavailable, the finishes not yet attempted are answered so without being tried."""
    answers: list[bool | Exception] = []
    lost: StoreUnavailable | None = None
    for item in finishes:
        answer, lost = _attempt(
            functools.partial(finish, item),
            item.workflow_id,
            lost,
            "finish of the same finish_many() call",
        )
        answers.append(answer)
    return answers


def checked_finishes(
    batch: Sequence[FinishWrite],
    answers: dict[int, bool | Exception],
    prepare: Callable[[FinishWrite, Record | None], _Prepared],
) -> dict[int, _Prepared]:
    """By index, what `prepare(f, last)` makes of each finish that passes `checked_finish`
    (`last`: the last record it may commit); a refused finish's error is its answer."""
    prepared: dict[int, _Prepared] = {}
    for index, f in enumerate(batch):
        try:
            last = checked_finish(f.workflow_id, f.executor_id, f.record)
        except (TypeError, ValueError) as exc:
            answers[index] = exc
            continue
        prepared[index] = prepare(f, last)
    return prepared


def finishes_from_the_batch(
    indexes: Sequence[int],
    outcomes: Sequence[tuple[Any, BaseException | None]],
    alone: Callable[[int], bool],
) -> dict[int, bool | Exception]:
    """The answers of the finishes at `indexes`, from group commit's outcomes
    (`submit_many`); a finish told to write alone (`FALL_BACK`) is written by
    `alone(index)` then, in order."""
    answers: dict[int, bool | Exception] = {}
    for index, result, error in _each_outcome(indexes, outcomes):
        if error is not None:
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
    for index, result, error in _each_outcome(indexes, outcomes):
        if error is not None:
            answers[index] = error
        elif result is FALL_BACK:
            alone.append(index)
        else:
            answers[index] = result
    return alone


def _each_outcome(
    indexes: Sequence[int], outcomes: Sequence[tuple[Any, BaseException | None]]
) -> Iterator[tuple[int, Any, Exception | None]]:
    """Each index with group commit's result or error for it, in order; an error that is
    no `Exception` (an interrupt) is raised when its turn comes."""
    for index, (result, error) in zip(indexes, outcomes, strict=True):
        if error is not None and not isinstance(error, Exception):
            raise error
        yield index, result, error


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
        answers[index], lost = _attempt(
            functools.partial(write, index),
            writes[index].workflow_id,
            lost,
            "write of the same record_many() call",
        )


def answered(answers: Answers) -> list[Record | Exception]:
    """The answers, every write having been answered."""
    done: list[Record | Exception] = []
    for answer in answers:
        assert answer is not None, "record_many left a write unanswered; this is a replaykit bug"
        done.append(answer)
    return done
