"""What a run's end comes to, worked out apart from the store: the next generation's
arguments when it continues as new (checked as a start's are), its error column, how
its activation ended (for a span), and the one log line of a run that ended in ERROR.
"""

from __future__ import annotations

import logging
from typing import Any

from replaykit import serde
from replaykit.errors import PayloadTooLarge, SerializationError
from replaykit.interpreter import ContinuedAsNew
from replaykit.log import Failure, Outcome, Status
from replaykit.registry import lookup
from replaykit.runtime.events import Activation
from replaykit.stores.base import WorkflowRow

__all__ = ["continued_inputs", "error_text", "finished_outcome", "say_failed"]

log = logging.getLogger("replaykit.engine")


def continued_inputs(row: WorkflowRow, decision: ContinuedAsNew, max_payload_bytes: int) -> Any:
    """The next generation's arguments in their stored form, checked as a start's are."""
    where = f"workflow {row.name!r} (id {row.workflow_id!r}): ContinueAsNew"
    wf = lookup(row.name)
    try:
        inputs = wf.encode_inputs(decision.args, decision.kwargs)
    except SerializationError as exc:
        raise SerializationError(f"{where}: {exc}") from exc
    except TypeError as exc:
        raise TypeError(f"{where}: {exc}") from exc
    size = len(serde.dumps(inputs).encode())
    if size > max_payload_bytes:
        raise PayloadTooLarge(
            f"{where}: the arguments are {size} bytes encoded, over the limit of "
            f"{max_payload_bytes}; pass a reference instead, or raise "
            "max_payload_bytes=..."
        )
    return inputs


def say_failed(activation: Activation, row: WorkflowRow, result: Outcome) -> None:
    """One line in the engine's log (a worker's terminal) for a run that ended in ERROR:
    its workflow, id, the position it reached and the error."""
    if not isinstance(result, Failure):
        return
    interp = activation.interp
    at = "" if interp is None else f" at position {interp.position}"
    log.warning(
        "workflow %r (id %r) ended in ERROR%s: %s: %s",
        row.name,
        row.workflow_id,
        at,
        result.error.type_name,
        result.error.message,
    )


def error_text(result: Outcome) -> str:
    """A finished run's error column: its failure's message, cut short."""
    return result.error.message[:500] if isinstance(result, Failure) else ""


def finished_outcome(status: Status, finished: bool) -> str:
    """How the activation ended, for its span. Not finished: the run was no longer
    PENDING here (cancelled meanwhile)."""
    if not finished:
        return "cancelled"
    return "ok" if status is Status.SUCCESS else "error"
