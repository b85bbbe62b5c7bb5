"""Group commit's writer: concurrent writes gathered into one statement and one commit.

Records, finishes with their last record, and finishes each have a batch
statement (record_batch, finish_with_record_batch, finish_batch); a write the
batch did not settle falls back to the one-write path (single.py), which
writes it or explains why not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from replaykit import serde
from replaykit.errors import StoreError
from replaykit.log import Status
from replaykit.stores._group import FALL_BACK, GroupCommit, Slot
from replaykit.stores.postgres.database import Database, PoolExhausted
from replaykit.stores.postgres.room import Room
from replaykit.stores.postgres.rows import batch_row, outcome_text, utc_now
from replaykit.stores.postgres.single import Finish, PlainRecord, Single, Write

__all__ = ["Batches"]

_log = logging.getLogger("replaykit.stores")


def _layers(slots: Sequence[Slot[Write]]) -> list[list[Slot[Write]]]:
    """Split a batch so no run appears twice in one statement (arrival order kept)."""
    layers: list[list[Slot[Write]]] = []
    depth: dict[str, int] = {}
    for slot in slots:
        level = depth.get(slot.item.workflow_id, 0)
        depth[slot.item.workflow_id] = level + 1
        if level == len(layers):
            layers.append([])
        layers[level].append(slot)
    return layers


class Batches(Room):
    """The store's group commit, and the batch writer it leads with."""

    def __init__(self, db: Database, single: Single) -> None:
        super().__init__(db)
        self._single = single
        self.group: GroupCommit[Write] = GroupCommit(self.write_batch, write_one=self._write_one)

    def write_batch(self, slots: Sequence[Slot[Write]]) -> None:
        """Group commit's batch writer: records, finishes with their last record, then
        finishes, a statement each.

        Autocommit: each statement commits on its own. The writes are
        independent, so they need not share a transaction; what they share is
        the round trip and the commit (a finish and its last record are one
        write, in one statement). A lone write takes the one-write path,
        whose statement is lighter, while still leading, so that writes
        arriving meanwhile gather into the next batch.
        """
        with self._db.held.leading():
            self._write_kinds(slots)

    def _write_kinds(self, slots: Sequence[Slot[Write]]) -> None:
        records = [slot for slot in slots if isinstance(slot.item, PlainRecord)]
        closing = [
            slot for slot in slots if isinstance(slot.item, Finish) and slot.item.record is not None
        ]
        finishes = [
            slot for slot in slots if isinstance(slot.item, Finish) and slot.item.record is None
        ]
        try:
            if len(records) == 1:
                self._settle_alone(records[0])
            elif records:
                self._write_records(records)
            if len(closing) == 1:
                self._settle_alone(closing[0])
            elif closing:
                self._write_closing(closing)
            if len(finishes) == 1:
                self._settle_alone(finishes[0])
            elif finishes:
                self._write_finishes(finishes)
        except PoolExhausted as exc:
            # The pool had nothing for connect_timeout: the rest would wait as long.
            for slot in slots:
                if not slot.settled:
                    slot.set_error(exc)

    def _write_one(self, item: Write) -> Any:
        """Group commit's write when nobody else is writing: on the kept connection."""
        with self._db.held.leading():
            return self._write_item(item)

    def _write_item(self, item: Write) -> Any:
        if isinstance(item, PlainRecord):
            return self._single.record_one(
                item.workflow_id, item.record, item.executor_id, None, None, None, item.wake_at
            )
        return self._single.finish_one(item)

    def _settle_alone(self, slot: Slot[Write]) -> None:
        try:
            slot.set_result(self._write_item(slot.item))
        except PoolExhausted as exc:
            slot.set_error(exc)
            raise
        except Exception as exc:
            slot.set_error(exc)

    def _write_layers(
        self,
        slots: Sequence[Slot[Write]],
        what: str,
        statement: str,
        params: Callable[[list[Write]], dict[str, Any]],
        answer: Callable[[Write, set[str]], Any],
    ) -> None:
        """One statement per layer; each layer's answer settles that layer's writers only.

        A run may appear in several layers, each with its own write. The
        statement returns the ids it wrote; `answer` turns that into each
        writer's result. Every write of a layer that failed or never ran falls
        back to the one-write path, which writes it or explains why not, unless
        no connection came free at all (`PoolExhausted`, for `write_batch`).
        """
        try:
            with self._db.connection() as conn:
                for layer in _layers(slots):
                    items = [slot.item for slot in layer]
                    done = {row[0] for row in conn.execute(statement, params(items)).fetchall()}
                    if what.startswith("finishes") and done:
                        self._db.notify(conn, [("finished", key) for key in sorted(done)])
                    for slot in layer:
                        slot.set_result(answer(slot.item, done))
        except PoolExhausted:
            raise
        except (psycopg.Error, StoreError) as exc:
            _log.debug(
                "group commit of %d %s failed (%s); writing the rest one by one",
                len(slots),
                what,
                exc,
            )
        for slot in slots:
            if not slot.settled:
                slot.set_result(FALL_BACK)

    def _write_records(self, slots: Sequence[Slot[Write]]) -> None:
        """Many records; a record the batch did not write falls back."""

        def answer(item: Write, written: set[str]) -> Any:
            assert isinstance(item, PlainRecord)
            return item.record if item.workflow_id in written else FALL_BACK

        self._write_layers(slots, "records", self._sql["record_batch"], self._record_params, answer)

    def _write_finishes(self, slots: Sequence[Slot[Write]]) -> None:
        """Many runs finished; each owner learns whether its run changed."""
        self._write_layers(
            slots,
            "finishes",
            self._sql["finish_batch"],
            self._finish_params,
            lambda item, finished: item.workflow_id in finished,
        )

    def _write_closing(self, slots: Sequence[Slot[Write]]) -> None:
        """Many runs finished with their last records; what the batch did not finish falls back."""

        def answer(item: Write, finished: set[str]) -> Any:
            return True if item.workflow_id in finished else FALL_BACK

        self._write_layers(
            slots,
            "finishes with records",
            self._sql["finish_with_record_batch"],
            self._closing_params,
            answer,
        )

    def _closing_params(self, items: Sequence[Write]) -> dict[str, Any]:
        rows: list[list[Any]] = []
        outcomes: list[str | None] = []
        results: list[str | None] = []
        for item in items:
            assert isinstance(item, Finish) and item.record is not None
            row, outcome = batch_row(item.workflow_id, item.record, item.executor_id, None)
            row.extend((Status(item.status).value, item.error, self._db.shard(item.workflow_id)))
            rows.append(row)
            outcomes.append(outcome)
            results.append(outcome_text(item.result))
        return {
            "rows": serde.dumps(rows),
            "outcome": outcomes,
            "result": results,
            "now": utc_now(),
            "channel": self._db.channel,
            "origin": self._db.origin,
        }

    def _finish_params(self, items: Sequence[Write]) -> dict[str, Any]:
        finishes = [item for item in items if isinstance(item, Finish)]
        return {
            "shard": [self._db.shard(item.workflow_id) for item in finishes],
            "wid": [item.workflow_id for item in finishes],
            "status": [Status(item.status).value for item in finishes],
            "result": [outcome_text(item.result) for item in finishes],
            "error": [item.error for item in finishes],
            "executor": [item.executor_id for item in finishes],
            "now": utc_now(),
            "channel": self._db.channel,
            "origin": self._db.origin,
        }

    def _record_params(self, items: Sequence[Write]) -> dict[str, Any]:
        rows: list[list[Any]] = []
        outcomes: list[str | None] = []
        for item in items:
            assert isinstance(item, PlainRecord)
            row, outcome = batch_row(item.workflow_id, item.record, item.executor_id, item.wake_at)
            row.append(self._db.shard(item.workflow_id))
            rows.append(row)
            outcomes.append(outcome)
        return {"rows": serde.dumps(rows), "outcome": outcomes}
