"""The memory store's generations: a run that continues as new (`continue_workflow`) and
a finished run rewound under its id (`rewind_workflow`), each archiving the run's
current generation (a mixin of `MemoryStore`, which holds the lock and the rows; the
rules every store applies alike are `_generations.py`'s)."""

from __future__ import annotations

import copy
import threading
from typing import Any, Unpack

from replaykit.log import Record
from replaykit.stores._generations import (
    ALREADY_CONTINUED,
    archived_generation,
    check_continue_args,
    check_rewind,
    check_rewind_args,
    continue_refusal,
    next_generation,
    rewound,
)
from replaykit.stores.base import WorkflowRow
from replaykit.stores.options import (
    Continuation,
    Rewind,
)

__all__ = ["MemoryGenerations"]


class MemoryGenerations:
    """`continue_workflow` and `rewind_workflow`, on the memory store's dicts."""

    _lock: threading.RLock
    _rows: dict[str, WorkflowRow]
    _order: dict[str, int]
    _logs: dict[str, list[Record]]
    _set_by: dict[str, dict[int, tuple[str, Any]]]

    def _notify(self, kind: str, key: str) -> None:
        raise NotImplementedError  # the store's: it tells its subscribers

    def continue_workflow(
        self, workflow_id: str, inputs: Any, **options: Unpack[Continuation]
    ) -> WorkflowRow:
        generation, executor_id, now = options["generation"], options["executor_id"], options["now"]
        archived_id = check_continue_args(workflow_id, generation, executor_id)
        with self._lock:
            row = self._rows.get(workflow_id)
            refusal = continue_refusal(
                row,
                workflow_id,
                inputs,
                generation,
                executor_id,
                self._rows.get(archived_id),
            )
            assert row is not None
            if refusal == ALREADY_CONTINUED:
                return row
            archived = archived_generation(row, now)
            self._rows[archived_id] = archived
            self._order[archived_id] = len(self._order)
            self._logs[archived_id] = self._logs.pop(workflow_id, [])
            self._logs[workflow_id] = []
            set_by = self._set_by.pop(workflow_id, None)
            if set_by is not None:
                self._set_by[archived_id] = set_by
            live = next_generation(row, copy.deepcopy(inputs), now)
            self._rows[workflow_id] = live
        self._notify("finished", archived_id)
        self._notify("stream", workflow_id)  # its generation's streams have ended
        return live

    def rewind_workflow(
        self, workflow_id: str, position: int, **options: Unpack[Rewind]
    ) -> WorkflowRow:
        archived_id, generation = check_rewind_args(workflow_id, options), options["generation"]
        with self._lock:
            log = self._logs.get(workflow_id, [])
            row = check_rewind(
                self._rows.get(workflow_id),
                workflow_id,
                position,
                generation,
                len(log),
                self._rows.get(archived_id),
            )
            attempt, live = rewound(row, **options)
            self._rows[archived_id] = attempt
            self._order[archived_id] = len(self._order)
            self._logs[archived_id] = log
            self._logs[workflow_id] = copy.deepcopy(log[:position])
            set_by = self._set_by.get(workflow_id)
            if set_by is not None:
                self._set_by[archived_id] = set_by
                self._set_by[workflow_id] = {
                    at: mark for at, mark in set_by.items() if at < position
                }
            self._rows[workflow_id] = live
        self._notify("finished", archived_id)
        self._notify("resumed", workflow_id)
        return live
