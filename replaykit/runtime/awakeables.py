"""External completion from outside a run: `complete(token, value)`, `fail(token, error)`.

A completion is a message in the run's inbox, on the token's own topic, sent with that
topic (the token without its run) as its idempotency key: the store's send keys make it
once-only (a second completion finds the key used and delivers nothing), the run's
`Await(token)` consumes it in the same transaction that records it (as `Recv` does),
and the "message" notification wakes the waiting run. So external completion needs no table and no
migration of its own (docs/design.md says why).

Before it sends, a completion checks the token against the store, so that a typo, a
guess or a late caller is refused with the reason instead of leaving a message nobody
will take: the run must exist and not have ended, and the log of the token's generation
must hold, at the token's position, the `Awakeable` record that handed out this very
token (its 128 random bits included).

The Engine, the Client (both faces of each) and the testing kit share this module; it
runs no workflow code.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from replaykit import serde
from replaykit.commands import Awakeable, AwakeableToken
from replaykit.errors import (
    AlreadyCompleted,
    AwakeableFailed,
    CodecError,
    DamagedData,
    RunEnded,
    UnknownToken,
)
from replaykit.log import Failure, Outcome, Status, Value, outcome_to_json
from replaykit.runtime import admin
from replaykit.stores.base import OutgoingMessage, Store, archive_id

__all__ = [
    "Target",
    "complete",
    "completion_outcome",
    "deliver",
    "fail",
    "failure_payload",
    "target_of",
    "value_payload",
]


def _shown(token: object) -> str:
    """The token for a message: whole, unless it is far longer than any token is."""
    text = repr(token)
    return text if len(text) <= 200 else text[:200] + "…"


@attrs.frozen
class Target:
    """Where a checked token's completion goes: the run's inbox, on the token's topic."""

    token: str
    workflow_id: str
    topic: str

    @property
    def key(self) -> str:
        # The topic is the token without its run, unique in the run: the send key
        # that makes a second completion of the token deliver nothing.
        return self.topic


def value_payload(token: str, value: Any, *, max_bytes: int) -> Any:
    """The message `complete(token, value)` sends: the value, encoded."""
    what = f"the completion of awakeable token {_shown(token)}"
    return outcome_to_json(Value(serde.encode(value, what=what, max_bytes=max_bytes)))


def failure_payload(token: str, error: str | Exception, *, max_bytes: int) -> Any:
    """The message `fail(token, error)` sends: the error `Await(token)` raises, recorded."""
    if isinstance(error, str):
        info = serde.encode_error(AwakeableFailed(error), with_traceback=False)
    elif isinstance(error, Exception):
        info = serde.encode_error(error)
    else:
        raise TypeError(
            f"fail({_shown(token)}, {error!r}): the error must be a message (str) or an "
            "Exception instance, which the run's Await(token) then raises"
        )
    what = f"the failure of awakeable token {_shown(token)}"
    return serde.encode(outcome_to_json(Failure(info)), what=what, max_bytes=max_bytes)


def target_of(store: Store, token: str) -> Target:
    """Check `token` against the store: where its completion goes. Writes nothing.

    Raises `UnknownToken` (not a token, no such run, not handed out there) or
    `RunEnded` (the run ended).
    """
    parts = AwakeableToken.parse(token)
    if parts is None:
        raise UnknownToken(
            f"{_shown(token)} is not an awakeable token (a token looks like "
            f"{AwakeableToken.shape()}, as `yield Awakeable(name)` gave it); check that the "
            "whole token was passed, unchanged"
        )
    row = store.get_workflow(parts.workflow_id)
    if row is None:
        raise UnknownToken(
            f"token {_shown(token)}: no workflow run has the id {parts.workflow_id!r} it "
            "names (never started, or deleted since)"
        )
    _check_handed_out(store, token, parts, row.generation)
    if row.status.is_terminal:
        resume = (
            "; resume the run first and it waits again" if row.status is Status.CANCELLED else ""
        )
        raise RunEnded(
            f"token {_shown(token)}: workflow {row.name!r} (id {row.workflow_id!r}) that "
            f"handed it out is {row.status.value}, so nothing waits for its completion{resume}"
        )
    return Target(token, parts.workflow_id, parts.topic)


def _check_handed_out(store: Store, token: str, parts: AwakeableToken, generation: int) -> None:
    if parts.generation > generation:
        raise UnknownToken(
            f"token {_shown(token)} names generation {parts.generation} of run "
            f"{parts.workflow_id!r}, which is at generation {generation}: it was not handed "
            "out by this run (a token from another store, or a forged one?)"
        )
    log_of = (
        parts.workflow_id
        if parts.generation == generation
        else archive_id(parts.workflow_id, parts.generation)
    )
    found = store.load_log(log_of, since=parts.position, limit=1)
    record = found[0] if found and found[0].position == parts.position else None
    if record is not None and isinstance(record.outcome, Value):
        codec = serde.encoded_by(record.outcome.data)
        if codec is not None:
            raise CodecError(
                f"token {_shown(token)}: the record that handed it out is encoded by codec "
                f"{codec!r}, so the token cannot be checked without it; give the codec "
                "(Client(codec=...), replaykit --codec ...)"
            )
    if record is None or record.kind != Awakeable.kind or record.outcome != Value(token):
        where = "" if parts.generation == generation else f" (generation {parts.generation})"
        raise UnknownToken(
            f"token {_shown(token)}: run {parts.workflow_id!r}{where} handed out no such "
            f"token at position {parts.position} (its log holds "
            f"{record.describe() if record is not None else 'nothing there'}); check that "
            "the whole token was passed, unchanged"
        )


def deliver(
    store: Store,
    target: Target,
    payload: Any,
    *,
    call_id: str | None,
    trace_context: str | None = None,
) -> None:
    """Send a checked completion, once; `AlreadyCompleted` if the token was completed before.

    `call_id` names this call across a store's retries of it: a retry after a lost
    acknowledgement is told that its own first attempt used the key, instead of being
    refused as a second completion.
    """
    message = OutgoingMessage(
        target.workflow_id,
        target.topic,
        payload,
        idempotency_key=target.key,
        trace_context=trace_context,
    )
    delivered = admin.deliver(store, message, call_id)
    if not delivered:
        raise AlreadyCompleted(
            f"token {_shown(target.token)} was completed before (each awakeable takes one "
            "completion, or one failure); nothing was sent. A caller retrying after a lost "
            "answer gets this too: the first completion was delivered"
        )


def complete(
    store: Store, token: str, value: Any, *, max_bytes: int, trace_context: str | None = None
) -> None:
    """`complete(token, value)` of every face: check, then deliver once."""
    target = target_of(store, token)
    payload = value_payload(token, value, max_bytes=max_bytes)
    deliver(store, target, payload, call_id=uuid.uuid4().hex, trace_context=trace_context)


def fail(
    store: Store,
    token: str,
    error: str | Exception,
    *,
    max_bytes: int,
    trace_context: str | None = None,
) -> None:
    """`fail(token, error)` of every face: check, then deliver once."""
    target = target_of(store, token)
    payload = failure_payload(token, error, max_bytes=max_bytes)
    deliver(store, target, payload, call_id=uuid.uuid4().hex, trace_context=trace_context)


def completion_outcome(payload: Any, workflow_id: str, topic: str) -> Outcome:
    """The outcome a completion's message carries, which `Await` records."""
    if isinstance(payload, dict) and len(payload) == 1:
        if "value" in payload:
            return Value(payload["value"])
        if "error" in payload:
            try:
                return Failure(serde.error_info_from_json(payload["error"]))
            except Exception:  # cattrs raises many kinds; all mean "not an error"
                pass
    raise DamagedData(
        f"workflow id {workflow_id!r}: the message on topic {topic!r} is not a completion "
        "(complete(token, ...) and fail(token, ...) send {'value': ...} or {'error': ...}); "
        "something else sent it. Delete the run, or fork it from before its Await"
    )
