"""Finishing runs: one or many, each maybe with its last record, in the shared transactions."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Unpack

from replaykit.log import Outcome, Record, Status
from replaykit.stores._checks import storable_error
from replaykit.stores._finish import checked_finish
from replaykit.stores._many import checked_finishes, finishes_from_the_batch, finishes_of
from replaykit.stores.base import FinishWrite
from replaykit.stores.options import (
    Ending,
)
from replaykit.stores.sqlite.queries import SQL
from replaykit.stores.sqlite.refusals import last_record_stands
from replaykit.stores.sqlite.room import Room
from replaykit.stores.sqlite.values import dump_outcome, now, record_params, to_micros
from replaykit.stores.sqlite.writer import Unchanged

__all__ = ["Finishes"]


class Finishes(Room):
    """finish_workflow and finish_many."""

    def finish_workflow(
        self, workflow_id: str, status: Status, result: Outcome | None, **options: Unpack[Ending]
    ) -> bool:
        executor_id, error = options.get("executor_id"), options.get("error", "")
        record = options.get("record")
        last = checked_finish(workflow_id, executor_id, record)
        changed = self._writer.write(
            _finish_body(workflow_id, status, result, error, executor_id, last)
        )
        if changed:
            self._notify([("finished", workflow_id)])
        return changed

    def finish_many(self, finishes: Sequence[FinishWrite]) -> list[bool | Exception]:
        """The finishes in the transactions concurrent writers share, a savepoint each."""
        batch = finishes_of(finishes)
        if not batch:
            return []
        self._writer.check_writable()
        answers: dict[int, bool | Exception] = {}
        bodies = checked_finishes(
            batch,
            answers,
            lambda f, last: _finish_body(
                f.workflow_id, f.status, f.result, f.error, f.executor_id, last
            ),
        )
        taken = list(bodies)
        answers.update(
            finishes_from_the_batch(
                taken,
                self._writer.submit_many(list(bodies.values())),
                lambda index: self._writer.write_alone(bodies[index]),
            )
        )
        done = [answers[index] for index in range(len(batch))]
        self._notify([("finished", batch[i].workflow_id) for i in taken if done[i] is True])
        return done


def _finish_body(
    workflow_id: str,
    status: Status,
    result: Outcome | None,
    error: str,
    executor_id: str | None,
    last: Record | None,
) -> Callable[[sqlite3.Connection], bool]:
    params = (
        Status(status).value,
        dump_outcome(result),
        storable_error(error),
        to_micros(now()),
        workflow_id,
        executor_id,
    )
    last_params = None if last is None else (*record_params(workflow_id, last), executor_id)

    def finish(conn: sqlite3.Connection) -> bool:
        if last is not None and last_params is not None:
            written = conn.execute(SQL["append_last_record"], last_params).rowcount
            if not written and not last_record_stands(conn, workflow_id, last, executor_id):
                return False
        # A savepoint of its own (group commit) or a transaction: a refusal
        # raised above, or a finish that changes nothing, leaves no record.
        if not conn.execute(SQL["finish_workflow"], params).rowcount:
            if last is not None:
                raise Unchanged(False)
            return False
        return True

    return finish
