"""Group commit: the records of every step that finished since the last commit go to
the store in one batch, and each write's answer becomes the event its run resumes on.

Serving an application's loop, the batch goes in parts of `COMMIT_PART` writes, with
the courtesy called between them (runtime/courtesy.py): a round of a thousand runs
wrote hundreds of records, and preparing them held the interpreter lock for ten
milliseconds and more at a stretch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replaykit.errors import StoreUnavailable
from replaykit.log import Record
from replaykit.runtime.courtesy import Courtesy
from replaykit.runtime.events import Activation, Carried, Event, StepWrite, WrittenAhead
from replaykit.stores.base import WorkflowRow

if TYPE_CHECKING:
    from replaykit.runtime.work import Work

__all__ = ["COMMIT_PART", "commit", "rows_and_records", "write_alone"]

#: Step records per store batch while serving an application's loop.
COMMIT_PART = 64


def commit(
    writes: list[StepWrite],
    *,
    write_many: Callable[[list[StepWrite]], list[Any]],
    courtesy: Courtesy,
    write_alone: Callable[[StepWrite], None],
) -> list[Event]:
    """Write `writes` with `write_many`; the events of those that got an answer.

    A write whose part failed with `StoreUnavailable` may have committed: it goes to
    `write_alone`, whose one-write path finds out, and gets no event here.
    """
    part = COMMIT_PART if courtesy.active else max(len(writes), 1)
    answers: list[Any] = []
    for first in range(0, len(writes), part):
        chunk = writes[first : first + part]
        if first:
            courtesy()
        try:
            answers.extend(write_many(chunk))
        except Exception as exc:  # the part as a whole: each write goes its own way
            answers.extend([exc] * len(chunk))
    events: list[Event] = []
    for write, answer in zip(writes, answers, strict=True):
        if isinstance(answer, StoreUnavailable):
            write_alone(write)
        elif write.following is None:
            events.append(Carried(write.activation, write.effect, answer))
        else:
            events.append(
                WrittenAhead(
                    write.activation, write.effect, answer, write.following, write.nondeterministic
                )
            )
    return events


def rows_and_records(writes: list[StepWrite]) -> list[tuple[WorkflowRow, Record]]:
    """What the record writer's `write_many` takes of each write."""
    return [(w.activation.row_or_raise(), w.record) for w in writes]


def write_alone(
    write: StepWrite,
    on_pool: Callable[..., None],
    work: Work,
) -> None:
    """A write whose batch hit an outage, on its own: on the bookkeeping pool, never on
    the scheduler's thread (`_here`): a hand-over from inside the commit would lose the
    answers gathered so far, and the round would hand the batch on to be written twice."""
    activation: Activation = write.activation
    if write.following is None:
        on_pool(work.write_alone, activation, write.effect, write.record)
    else:
        on_pool(
            work.write_ahead,
            activation,
            write.effect,
            write.record,
            write.following,
            write.nondeterministic,
        )
